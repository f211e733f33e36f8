"""``pluggable-scheduler new-plugin``: a plugin distribution that works before it is edited.

The generated distribution has the entry point in the ``scheduler.plugins``
group, a plugin class declaring this framework's ``api_version``, an args
model, a README with a config example, and tests using the pytest plugin
(:mod:`scheduler.testing.pytest_plugin`, enabled with ``-p``) that pass as
generated. It is also what an index and its users expect of a published
distribution: a LICENSE, classifiers, a CHANGELOG, ``py.typed``, a
``pluggable-scheduler`` dependency range matching the plugin API
(:func:`core_requirement`), and GitHub workflows that test and publish it.
Templates are the files in ``templates/`` beside this module
(``string.Template``).
"""

from __future__ import annotations

import keyword
import re
import string
import urllib.parse
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from scheduler import __version__
from scheduler.api.version import PLUGIN_API_VERSION, parse_api_version
from scheduler.errors import UserError

PLUGIN_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
MAX_NAME_LENGTH = 63

# template file -> path in the generated distribution ({package} is substituted)
FILES: tuple[tuple[str, str], ...] = (
    ("pyproject.toml.tmpl", "pyproject.toml"),
    ("README.md.tmpl", "README.md"),
    ("CHANGELOG.md.tmpl", "CHANGELOG.md"),
    ("LICENSE", "LICENSE"),
    ("gitignore.tmpl", ".gitignore"),
    ("ci.yml.tmpl", ".github/workflows/ci.yml"),
    ("publish.yml.tmpl", ".github/workflows/publish.yml"),
    ("__init__.py.tmpl", "{package}/__init__.py"),
    ("plugin.py.tmpl", "{package}/plugin.py"),
    ("py.typed.tmpl", "{package}/py.typed"),
    ("test_plugin.py.tmpl", "tests/test_plugin.py"),
)


def core_requirement(
    api_version: str = PLUGIN_API_VERSION, first_release: str = __version__
) -> str:
    """The ``pluggable-scheduler`` requirement of a plugin written for ``api_version``.

    pip cannot read a plugin's ``api_version``, so the distribution states it
    as the releases that run it: from ``first_release`` (the first providing
    that API minor) up to, not including, the release numbered like the API
    major, because support for plugin API N is dropped only by
    pluggable-scheduler N.0.0 or later (CHANGELOG.md). ``"1.3"`` ->
    ``pluggable-scheduler>=0.1.0,<1``.
    """
    major, _ = parse_api_version(api_version)
    return f"pluggable-scheduler>={first_release},<{major}"


def _urls(repository_url: str | None) -> str:
    """The ``[project.urls]`` table for the author's repository (none if not given)."""
    if not repository_url:
        return ""
    base = repository_url.rstrip("/")
    table = f'\n[project.urls]\nHomepage = "{base}"\nRepository = "{base}"\n'
    if urllib.parse.urlsplit(base).netloc == "github.com":
        table += f'Issues = "{base}/issues"\nChangelog = "{base}/blob/main/CHANGELOG.md"\n'
    return table


def validate_repository_url(url: str) -> str:
    """An ``https://`` URL, as index pages link it; anything else is refused."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme != "https" or not parsed.netloc or any(c in url for c in "\"' \n"):
        raise UserError(
            f"invalid --repository-url {url!r}: it must be an https:// URL",
            details=["for example: --repository-url https://github.com/me/scheduler-plugin-x"],
        )
    return url


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
    text = (
        resources.files("scheduler.tools.scaffold").joinpath("templates", name).read_text("utf-8")
    )
    return string.Template(text)


def render(names: PluginNames, repository_url: str | None = None) -> dict[str, str]:
    """Relative path -> content of every file of the distribution."""
    values = {
        "plugin": names.plugin,
        "dist": names.dist,
        "package": names.package,
        "api_version": PLUGIN_API_VERSION,
        "core_requirement": core_requirement(),
        "urls": _urls(repository_url),
    }
    return {
        target.format(package=names.package): _template(source).substitute(values)
        for source, target in FILES
    }


def scaffold(
    name: str, directory: Path | None = None, *, repository_url: str | None = None
) -> tuple[PluginNames, Path, list[Path]]:
    """Write the distribution for plugin ``name`` into ``directory`` (must not exist).

    Default directory: ``./scheduler-plugin-<name-in-kebab-case>``. Returns the
    names, the directory and the files written.
    """
    names = validate_plugin_name(name)
    if repository_url is not None:
        validate_repository_url(repository_url)
    target = directory if directory is not None else Path(names.dist)
    if target.exists() or target.is_symlink():
        raise UserError(
            f"{target} already exists; refusing to overwrite it",
            details=["choose another directory with --directory DIR, or remove it first"],
        )
    files = render(names, repository_url)
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
