"""Test infrastructure for plugin authors (and the project's own suite).

- :class:`PluginTestKit` (:mod:`scheduler.testing.kit`): unit-test a plugin's
  hooks on a small cluster, called as the framework calls them.
- :mod:`scheduler.testing.objects`: ``make_node``, ``make_pod`` ... API objects.
- :mod:`scheduler.testing.pytest_plugin`: fixtures running the real scheduler
  on an emulated cluster (``emulated_cluster``, ``running_scheduler``).
- :mod:`scheduler.testing.controlplane` builds and runs a real kube-apiserver
  + etcd (and kube-scheduler as the reference peer), so the same tests can run
  against the real thing as well as against the built-in emulator.
"""

from scheduler.errors import UserError
from scheduler.testing.kit import PluginTestKit, installed_plugin
from scheduler.testing.objects import make_node, make_pod

__all__ = ["PluginTestKit", "UserError", "installed_plugin", "make_node", "make_pod"]
