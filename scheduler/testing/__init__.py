"""The plugin author's test kit (also used by the project's own suite).

- :class:`PluginTestKit` (:mod:`scheduler.testing.kit`): unit-test a plugin's
  hooks on a small cluster, called as the framework calls them;
  :func:`installed_plugin` loads one from its entry point.
- :mod:`scheduler.testing.objects`: ``make_node``, ``make_pod`` ... API objects.
- :mod:`scheduler.testing.pytest_plugin`: fixtures running the real scheduler
  on an emulated cluster (``emulated_cluster``, ``running_scheduler``).

Opt-in for pytest (``-p scheduler.testing.pytest_plugin``); nothing here is
loaded by the daemon. The real control plane the suite also runs against is
built by :mod:`scheduler.tools.controlplane`.

The names below are imported on first use: the pytest plugin lives in this
package, and a pytest session that never asks for the kit does not load the
framework for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.errors import UserError
    from scheduler.testing.kit import (
        PluginTestKit,
        PostFilterOutcome,
        RecordingClient,
        installed_plugin,
    )
    from scheduler.testing.objects import make_node, make_pod

__all__ = [
    "PluginTestKit",
    "PostFilterOutcome",
    "RecordingClient",
    "UserError",
    "installed_plugin",
    "make_node",
    "make_pod",
]

_HOMES = {
    "PluginTestKit": "scheduler.testing.kit",
    "PostFilterOutcome": "scheduler.testing.kit",
    "RecordingClient": "scheduler.testing.kit",
    "installed_plugin": "scheduler.testing.kit",
    "UserError": "scheduler.errors",
    "make_node": "scheduler.testing.objects",
    "make_pod": "scheduler.testing.objects",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'scheduler.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
