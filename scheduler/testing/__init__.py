"""The plugin author's test kit: call hooks directly, or run a whole daemon on a cluster file.

Opt-in for pytest (``-p scheduler.testing.pytest_plugin``); nothing here is
loaded by the daemon. The real control plane the suite also runs against is
built by :mod:`scheduler.tools.controlplane`.
"""
