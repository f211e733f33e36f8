"""pluggable-scheduler: a Kubernetes scheduler whose logic comes from pip-installed plugins."""

# The one place the version is written: pyproject.toml reads it from here
# ([tool.hatch.version]), and the CLI, the scaffold and the API client's
# User-Agent import it. CHANGELOG.md says what each release changed.
__version__ = "0.1.0"
