"""pluggable-scheduler: a Kubernetes scheduler whose logic comes from pip-installed plugins."""

__version__ = "0.1.0"
