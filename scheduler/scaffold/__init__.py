"""``pluggable-scheduler new-plugin``: a plugin distribution that works before it is edited.

The generated distribution has the entry point in the ``scheduler.plugins``
group, a plugin class declaring this framework's ``api_version``, an args
model, a README with a config example, and tests using the pytest plugin
(:mod:`scheduler.testing.pytest_plugin`) that pass as generated. Templates
are the ``templates/*.tmpl`` files beside this module (``string.Template``).
"""

from __future__ import annotations

import keyword
import re
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from scheduler import __version__
from scheduler.api.version import PLUGIN_API_VERSION
from scheduler.errors import UserError

PLUGIN_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
MAX_NAME_LENGTH = 63

# template file -> path in the generated distribution ({package} is substituted)
FILES: tuple[tuple[str, str], ...] = (
    ("pyproject.toml.tmpl", "pyproject.toml"),
    ("README.md.tmpl", "README.md"),
    ("__init__.py.tmpl", "{package}/__init__.py"),
    ("plugin.py.tmpl", "{package}/plugin.py"),
    ("test_plugin.py.tmpl", "tests/test_plugin.py"),
)


@dataclass(frozen=True)
class PluginNames:
    """Every name derived from the plugin name: ``ZoneGate`` -> ``scheduler-plugin-zone-gate``."""

    plugin: str
    kebab: str

    @property
    def dist(self) -> str:
        return f"scheduler-plugin-{self.kebab}"

    @property
    def package(self) -> str:
        return "scheduler_plugin_" + self.kebab.replace("-", "_")


def validate_plugin_name(name: str) -> PluginNames:
    """Check ``name`` is a plugin name like kube-scheduler's (``NodeResourcesFit``)."""
    problem = None
    if not name:
        problem = "it is empty"
    elif len(name) > MAX_NAME_LENGTH:
        problem = f"it is longer than {MAX_NAME_LENGTH} characters"
    elif not PLUGIN_NAME.fullmatch(name):
        problem = (
            "a plugin name is a CamelCase identifier: an upper-case letter, then letters "
            "and digits only"
        )
    elif keyword.iskeyword(name):
        problem = "it is a Python keyword"
    if problem:
        raise UserError(
            f"invalid plugin name {name!r}: {problem}",
            details=["for example: pluggable-scheduler new-plugin ZoneGate"],
        )
    kebab = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", name).lower()
    return PluginNames(name, kebab)


def _template(name: str) -> string.Template:
    text = resources.files("scheduler.scaffold").joinpath("templates", name).read_text("utf-8")
    return string.Template(text)


def render(names: PluginNames) -> dict[str, str]:
    """Relative path -> content of every file of the distribution."""
    values = {
        "plugin": names.plugin,
        "dist": names.dist,
        "package": names.package,
        "api_version": PLUGIN_API_VERSION,
        "core_version": __version__,
    }
    return {
        target.format(package=names.package): _template(source).substitute(values)
        for source, target in FILES
    }


def scaffold(name: str, directory: Path | None = None) -> tuple[PluginNames, Path, list[Path]]:
    """Write the distribution for plugin ``name`` into ``directory`` (must not exist).

    Default directory: ``./scheduler-plugin-<name-in-kebab-case>``. Returns the
    names, the directory and the files written.
    """
    names = validate_plugin_name(name)
    target = directory if directory is not None else Path(names.dist)
    if target.exists() or target.is_symlink():
        raise UserError(
            f"{target} already exists; refusing to overwrite it",
            details=["choose another directory with --directory DIR, or remove it first"],
        )
    files = render(names)
    written: list[Path] = []
    try:
        target.mkdir(parents=True)
    except OSError as err:
        raise UserError(f"cannot create {target}: {err.strerror or err}") from err
    for relative, content in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return names, target, written
