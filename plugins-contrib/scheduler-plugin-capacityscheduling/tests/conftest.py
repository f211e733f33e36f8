"""pluggable-scheduler's fixtures for plugin authors (``emulated_cluster`` ...)."""

pytest_plugins = ["scheduler.testing.pytest_plugin"]
