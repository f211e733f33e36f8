"""What an index page and pip show of our distributions: license, classifiers, links, ranges.

The built files are the ones the session's ``package_index`` released
(sdist and wheel of the core and of every plugins-contrib distribution);
the other checks read the sources those files are built from.
"""

from __future__ import annotations

import email.parser
import re
import tarfile
import tomllib
import zipfile
from email.message import Message
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from scheduler import __version__
from scheduler.api.version import (
    LEGACY_MAJORS,
    PLUGIN_API_VERSION,
    is_compatible,
    parse_api_version,
)
from scheduler.cli.needs_cmd import referenced_plugins
from scheduler.config import load_config
from scheduler.distributions import KNOWN_DISTRIBUTIONS, conventional_distribution
from scheduler.tools.packageindex import PackageIndex

REPO = Path(__file__).resolve().parents[2]
REPO_URL = "https://github.com/pluggable-scheduler/pluggable-scheduler"
CONTRIB = sorted(p.parent for p in (REPO / "plugins-contrib").glob("*/pyproject.toml"))
PROJECTS = [REPO, *CONTRIB]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def pyproject(project: Path) -> dict[str, object]:
    with open(project / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]  # type: ignore[no-any-return]


def wheel_metadata(wheel: Path) -> tuple[Message, list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode()), names


def test_version_is_written_once() -> None:
    core = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in core["project"] and core["project"]["dynamic"] == ["version"]
    assert core["tool"]["hatch"]["version"]["path"] == "scheduler/__init__.py"
    # No other file of the package states it.
    for path in (REPO / "scheduler").rglob("*.py"):
        if path != REPO / "scheduler" / "__init__.py" and "_vendor" not in path.parts:
            assert f'"{__version__}"' not in path.read_text(), path
            assert f"/{__version__} " not in path.read_text(), path


# Files that cannot import the version (image labels, image tags of the manifests):
# each states it in one place, checked against scheduler/__init__.py here.
VERSION_STATEMENTS = [
    ("Dockerfile", re.compile(r"^ARG VERSION=(\S+)$", re.M)),
    ("deploy/base/kustomization.yaml", re.compile(r"^\s+newTag: (\S+)$", re.M)),
    ("deploy/base/deployment.yaml", re.compile(r"image: \S+/pluggable-scheduler:(\S+)$", re.M)),
    ("deploy/overlays/coscheduling/kustomization.yaml", re.compile(r"^\s+newTag: (\S+)$", re.M)),
    (
        "deploy/overlays/coscheduling/Dockerfile",
        re.compile(r"^ARG BASE_IMAGE=\S+/pluggable-scheduler:(\S+)$", re.M),
    ),
]


@pytest.mark.parametrize(
    ("path", "pattern"), VERSION_STATEMENTS, ids=[p for p, _ in VERSION_STATEMENTS]
)
def test_files_that_cannot_import_the_version_state_this_one(
    path: str, pattern: re.Pattern[str]
) -> None:
    found = pattern.findall((REPO / path).read_text())
    assert found, f"{path}: no version statement matching {pattern.pattern}"
    assert set(found) == {__version__}, f"{path} states {found}, the release is {__version__}"


def test_changelog_table_has_this_release() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    row = next(line for line in changelog.splitlines() if line.startswith(f"| {__version__} "))
    _, provided, runs = (cell.strip() for cell in row.strip("|").split("|"))
    assert provided == PLUGIN_API_VERSION
    major, minor = parse_api_version(PLUGIN_API_VERSION)
    served = [(m, last) for m, last in sorted(LEGACY_MAJORS.items())] + [(major, minor)]
    assert runs == ", ".join(f"{m}.{n}" for m, last in served for n in range(last + 1))
    assert all(is_compatible(v) for v in runs.split(", "))
    assert f"## {__version__}" in changelog


@pytest.mark.parametrize("project", CONTRIB, ids=[p.name for p in CONTRIB])
def test_contrib_range_matches_its_plugin_api(project: Path) -> None:
    """The pluggable-scheduler range is the API major's releases, and admits this one."""
    (core,) = [
        Requirement(d)
        for d in pyproject(project)["dependencies"]  # type: ignore[attr-defined]
        if Requirement(d).name == "pluggable-scheduler"
    ]
    declared = {
        m.group(1)
        for path in project.glob("scheduler_plugin_*/*.py")
        for m in re.finditer(r'api_version(?:: ClassVar\[str\])? = "([\d.]+)"', path.read_text())
    }
    (api_version,) = declared
    major, _ = parse_api_version(api_version)
    assert any(s.operator == "<" and s.version == str(major) for s in core.specifier), core
    assert Version(__version__) in core.specifier


def test_known_distributions_are_the_contrib_ones() -> None:
    provided = {}
    for project in CONTRIB:
        meta = pyproject(project)
        for plugin in meta["entry-points"]["scheduler.plugins"]:  # type: ignore[index]
            provided[plugin] = meta["name"]
    assert provided == KNOWN_DISTRIBUTIONS
    # Why the map exists: not every name follows the convention.
    assert conventional_distribution("LoadAware") != KNOWN_DISTRIBUTIONS["LoadAware"]


@pytest.mark.parametrize(
    ("plugin", "distribution"),
    [
        ("ZoneGate", "scheduler-plugin-zone-gate"),
        ("GPUBinPack", "scheduler-plugin-gpu-bin-pack"),
        ("zone_gate", None),
        ("", None),
    ],
)
def test_naming_convention(plugin: str, distribution: str | None) -> None:
    assert conventional_distribution(plugin) == distribution


def test_referenced_plugins_name_their_fields() -> None:
    config = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "a",
                    "plugins": {
                        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                        "score": {
                            "enabled": [{"name": "LoadAware"}],
                            "disabled": [{"name": "ImageLocality"}],
                        },
                    },
                    "pluginConfig": [{"name": "ZoneGate", "args": {}}],
                }
            ],
        }
    )
    assert referenced_plugins(config) == {
        "LoadAware": "profiles[0].plugins.score.enabled[0]",
        "Coscheduling": "profiles[0].plugins.multiPoint.enabled[0]",
        "ZoneGate": "profiles[0].pluginConfig[0]",
    }


@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
def test_readme_links_work_on_an_index_page(project: Path) -> None:
    """No relative links (the index page has no repository beside it); ours must exist."""
    for target in LINK.findall((project / "README.md").read_text()):
        assert target.startswith(("https://", "#")), f"{project.name}/README.md: {target}"
        for kind in ("blob", "tree"):
            prefix = f"{REPO_URL}/{kind}/main/"
            if target.startswith(prefix):
                path = REPO / target.removeprefix(prefix).split("#")[0]
                assert path.is_file() if kind == "blob" else path.is_dir(), target


@pytest.mark.parametrize("project", CONTRIB, ids=[p.name for p in CONTRIB])
def test_license_copies_are_the_license(project: Path) -> None:
    assert (project / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()


def test_scaffold_license_is_the_license() -> None:
    template = REPO / "scheduler" / "tools" / "scaffold" / "templates" / "LICENSE"
    assert template.read_bytes() == (REPO / "LICENSE").read_bytes()


def test_released_files_carry_what_users_expect(package_index: PackageIndex) -> None:
    wheels = [p for p in package_index.uploaded if p.suffix == ".whl"]
    sdists = [p for p in package_index.uploaded if p.name.endswith(".tar.gz")]
    expected = {pyproject(p)["name"] for p in PROJECTS}
    assert {wheel_metadata(w)[0]["Name"] for w in wheels} >= expected
    for wheel in wheels:
        meta, names = wheel_metadata(wheel)
        name = meta["Name"]
        if name not in expected:
            continue  # a scaffolded test plugin uploaded by another test
        assert meta["License-Expression"] == "Apache-2.0", name
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), name
        assert any(n.endswith("/py.typed") for n in names), name
        classifiers = meta.get_all("Classifier") or []
        assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.11" in (
            classifiers
        ), name
        urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
        assert urls["Repository"] == REPO_URL, name
        assert meta["Description-Content-Type"] == "text/markdown", name
        assert "](../" not in meta.get_payload(), name
        if name == "pluggable-scheduler":
            assert meta["Version"] == __version__
            entry_points = zipfile.ZipFile(wheel).read(
                f"pluggable_scheduler-{__version__}.dist-info/entry_points.txt"
            )
            assert b"pytest11" not in entry_points  # the pytest plugin is opt-in
    for sdist in sdists:
        with tarfile.open(sdist) as archive:
            members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
        if sdist.name.startswith(("pluggable_scheduler-", "scheduler_plugin_zone_gate")):
            assert {"LICENSE", "README.md", "PKG-INFO"} <= members, sdist.name
        else:
            assert "LICENSE" in members, sdist.name
        if sdist.name.startswith("pluggable_scheduler-"):
            assert "CHANGELOG.md" in members
            # Not the repository: tests, deployment files and contrib plugins stay out.
            assert not any(m.startswith(("tests/", "plugins-contrib/", "deploy/")) for m in members)
