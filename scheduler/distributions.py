"""Which Python distributions provide the plugins a configuration names.

A platform engineer building the scheduler's image for a given config needs
the list of distributions to ``pip install`` (``pluggable-scheduler plugins
needs CONFIG``), and a scheduler started with a config naming a plugin that
is not installed should say what to install. The answers come from:

1. installed metadata: the distribution whose ``scheduler.plugins`` entry
   point has the plugin's name;
2. :data:`KNOWN_DISTRIBUTIONS`: the plugins this project publishes itself
   (``plugins-contrib/``), known even when not installed;
3. a package index, by the naming convention ``scheduler-plugin-<name in
   kebab case>`` (what ``new-plugin`` generates): the index's simple API
   (PEP 503 HTML or PEP 691 JSON) lists the files, and a wheel's
   ``entry_points.txt`` must confirm it really provides the plugin. Of its
   releases, the newest whose ``pluggable-scheduler`` range admits this
   scheduler is chosen, as pip would.

An index cannot map an arbitrary plugin name to an arbitrary distribution
name; a plugin published under another name is found once it is installed.
"""

from __future__ import annotations

import configparser
import email.parser
import io
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from scheduler import __version__
from scheduler.errors import UserError

__all__ = [
    "CORE_DISTRIBUTION",
    "DEFAULT_INDEX_URL",
    "ENTRY_POINT_GROUP",
    "KNOWN_DISTRIBUTIONS",
    "IndexRelease",
    "conventional_distribution",
    "find_on_index",
    "install_hint",
]

CORE_DISTRIBUTION = "pluggable-scheduler"
ENTRY_POINT_GROUP = "scheduler.plugins"
DEFAULT_INDEX_URL = "https://pypi.org/simple/"
# Plugins published from plugins-contrib/ (tests check this against their pyproject.toml).
KNOWN_DISTRIBUTIONS: dict[str, str] = {
    "AnnotationGate": "scheduler-plugin-annotation-gate",
    "CapacityScheduling": "scheduler-plugin-capacityscheduling",
    "Coscheduling": "scheduler-plugin-coscheduling",
    "GangPreemption": "scheduler-plugin-gangpreemption",
    "Reservation": "scheduler-plugin-reservation",
    "LoadAware": "scheduler-plugin-loadaware",
}
# Wheels of one distribution downloaded at most, newest first, looking for a compatible one.
MAX_WHEELS_TRIED = 5
TIMEOUT = 30.0
_CAMEL = re.compile(r"[A-Z][A-Za-z0-9]*")


def conventional_distribution(plugin: str) -> str | None:
    """``ZoneGate`` -> ``scheduler-plugin-zone-gate`` (``new-plugin``'s rule); None if no rule."""
    if not _CAMEL.fullmatch(plugin):
        return None
    kebab = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", plugin).lower()
    return f"scheduler-plugin-{kebab}"


def install_hint(plugin: str) -> str | None:
    """What to tell a user whose config names ``plugin`` that is not installed, if anything."""
    known = KNOWN_DISTRIBUTIONS.get(plugin)
    if known is not None:
        return f"it is provided by the distribution {known}: pip install {known}"
    return None


@dataclass(frozen=True)
class IndexRelease:
    """A release of a distribution on an index that provides a plugin."""

    distribution: str
    version: str
    requires_core: str | None  # its pluggable-scheduler specifier, e.g. ">=0.1.0,<1"
    compatible: bool  # whether that specifier admits this scheduler's version


class _Links(HTMLParser):
    """The ``<a href>`` links of a PEP 503 project page, with their text (the file name)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None and data.strip():
            self.links.append((data.strip(), self._href))
            self._href = None


def _get(url: str, accept: str) -> tuple[bytes, str] | None:
    """GET ``url``: (body, content type), None on 404; a UserError on anything else."""
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise UserError(f"package index {url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise UserError(f"cannot reach the package index at {url}: {reason}") from None


def _project_files(index_url: str, distribution: str) -> list[tuple[str, str]] | None:
    """(file name, absolute URL) of every file the index lists for ``distribution``."""
    base = index_url if index_url.endswith("/") else index_url + "/"
    page = urllib.parse.urljoin(base, f"{canonicalize_name(distribution)}/")
    fetched = _get(page, "application/vnd.pypi.simple.v1+json, text/html;q=0.1")
    if fetched is None:
        return None
    body, content_type = fetched
    if "json" in content_type:
        files = json.loads(body)["files"]
        links = [(f["filename"], f["url"]) for f in files]
    else:
        parser = _Links()
        parser.feed(body.decode("utf-8", "replace"))
        links = parser.links
    return [(name, urllib.parse.urljoin(page, href).split("#")[0]) for name, href in links]


def _wheel_metadata(url: str) -> tuple[str, str] | None:
    """(entry_points.txt, METADATA) of the wheel at ``url``."""
    fetched = _get(url, "*/*")
    if fetched is None:
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(fetched[0])) as wheel:
            names = wheel.namelist()
            info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
            entry_points = (
                wheel.read(f"{info}/entry_points.txt").decode()
                if f"{info}/entry_points.txt" in names
                else ""
            )
            return entry_points, wheel.read(f"{info}/METADATA").decode()
    except (zipfile.BadZipFile, StopIteration, KeyError):
        return None


def _provides(entry_points: str, plugin: str) -> bool:
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keep the case
    try:
        parser.read_string(entry_points)
    except configparser.Error:
        return False
    return parser.has_option(ENTRY_POINT_GROUP, plugin)


def _core_specifier(metadata: str) -> str | None:
    message = email.parser.Parser().parsestr(metadata)
    for line in message.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) == CORE_DISTRIBUTION and (
            requirement.marker is None or requirement.marker.evaluate({"extra": ""})
        ):
            return str(requirement.specifier)
    return None


def _wheels_newest_first(files: Iterable[tuple[str, str]]) -> list[tuple[Version, str]]:
    wheels: dict[Version, str] = {}
    for name, url in files:
        if not name.endswith(".whl"):
            continue
        try:
            _, version, _, _ = parse_wheel_filename(name)
        except (ValueError, InvalidVersion):
            continue
        if not version.is_prerelease:
            wheels.setdefault(version, url)
    return sorted(wheels.items(), reverse=True)


def find_on_index(
    plugin: str, index_url: str, core_version: str = __version__
) -> IndexRelease | None:
    """The release on ``index_url`` providing ``plugin`` by the naming convention, if any.

    Newest first, the first release whose ``pluggable-scheduler`` requirement
    admits ``core_version``; when none does, the newest one (``compatible``
    false). None when the conventional distribution is not on the index or
    does not provide the plugin. Network failures raise :class:`UserError`.
    """
    distribution = KNOWN_DISTRIBUTIONS.get(plugin) or conventional_distribution(plugin)
    if distribution is None:
        return None
    files = _project_files(index_url, distribution)
    if not files:
        return None
    newest: IndexRelease | None = None
    for version, url in _wheels_newest_first(files)[:MAX_WHEELS_TRIED]:
        metadata = _wheel_metadata(url)
        if metadata is None or not _provides(metadata[0], plugin):
            continue
        specifier = _core_specifier(metadata[1])
        compatible = specifier is None or Requirement(
            f"{CORE_DISTRIBUTION}{specifier}"
        ).specifier.contains(core_version, prereleases=True)
        release = IndexRelease(distribution, str(version), specifier, compatible)
        if compatible:
            return release
        newest = newest or release
    return newest
