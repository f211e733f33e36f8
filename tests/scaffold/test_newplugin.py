"""``pluggable-scheduler new-plugin``: name validation, files, refusal to overwrite."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from scheduler import __version__
from scheduler.api.version import PLUGIN_API_VERSION
from scheduler.cli.main import main
from scheduler.errors import UserError
from scheduler.tools.scaffold import (
    PluginNames,
    core_requirement,
    render,
    scaffold,
    validate_plugin_name,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "kebab"),
    [
        ("ZoneGate", "zone-gate"),
        ("GPUBinPack", "gpu-bin-pack"),
        ("Coscheduling", "coscheduling"),
        ("NodeV2Filter", "node-v2-filter"),
    ],
)
def test_valid_names_derive_distribution_and_package(name: str, kebab: str) -> None:
    names = validate_plugin_name(name)
    assert names == PluginNames(name, kebab)
    assert names.dist == f"scheduler-plugin-{kebab}"
    assert names.package == "scheduler_plugin_" + kebab.replace("-", "_")
    assert names.package.isidentifier()


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "it is empty"),
        ("zoneGate", "CamelCase identifier"),
        ("zone-gate", "CamelCase identifier"),
        ("Zone_Gate", "CamelCase identifier"),
        ("1Zone", "CamelCase identifier"),
        ("Zone Gate", "CamelCase identifier"),
        ("Z" * 64, "longer than 63 characters"),
        ("None", "Python keyword"),
    ],
)
def test_invalid_names_are_refused_clearly(name: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=problem):
        scaffold(name, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_generated_files(tmp_path: Path) -> None:
    names, target, written = scaffold("ZoneGate", tmp_path / "zg")
    assert target == tmp_path / "zg"
    assert sorted(p.relative_to(target).as_posix() for p in written) == [
        ".github/workflows/ci.yml",
        ".github/workflows/publish.yml",
        ".gitignore",
        "CHANGELOG.md",
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "scheduler_plugin_zone_gate/__init__.py",
        "scheduler_plugin_zone_gate/plugin.py",
        "scheduler_plugin_zone_gate/py.typed",
        "tests/test_plugin.py",
    ]
    project = tomllib.loads((target / "pyproject.toml").read_text())
    assert project["project"]["name"] == "scheduler-plugin-zone-gate"
    assert project["project"]["entry-points"]["scheduler.plugins"] == {
        "ZoneGate": "scheduler_plugin_zone_gate.plugin:ZoneGate"
    }
    assert core_requirement() in project["project"]["dependencies"]
    assert project["project"]["license"] == "Apache-2.0"
    assert project["project"]["license-files"] == ["LICENSE"]
    assert "Typing :: Typed" in project["project"]["classifiers"]
    assert "urls" not in project["project"]  # no repository given: no made-up links
    assert (target / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    changelog = (target / "CHANGELOG.md").read_text()
    assert f"| 0.1.0 (unreleased) | {PLUGIN_API_VERSION} | `{core_requirement()}` |" in changelog
    assert "pytest-asyncio>=0.24" in project["project"]["optional-dependencies"]["test"]
    plugin = (target / "scheduler_plugin_zone_gate/plugin.py").read_text()
    assert f'api_version = "{PLUGIN_API_VERSION}"' in plugin
    for path in written:
        if path.suffix == ".py":
            ast.parse(path.read_text(), str(path))
    assert "$" not in "".join(render(names).values()).replace("$ ", "")


def test_generated_code_is_lint_clean(tmp_path: Path) -> None:
    _, target, _ = scaffold("ZoneGate", tmp_path / "zg")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "E,F,W,B,UP,I", "."],
        cwd=target,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_refuses_to_overwrite_an_existing_directory(tmp_path: Path) -> None:
    existing = tmp_path / "mine"
    existing.mkdir()
    (existing / "keep.txt").write_text("precious")
    with pytest.raises(UserError, match="already exists; refusing to overwrite it"):
        scaffold("ZoneGate", existing)
    assert [p.name for p in existing.iterdir()] == ["keep.txt"]


def test_cli_default_directory_and_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new-plugin", "ZoneGate"]) == 0
    out = capsys.readouterr().out
    assert "created scheduler-plugin-zone-gate in scheduler-plugin-zone-gate" in out
    assert "pip install -e '.[test]'" in out
    assert (tmp_path / "scheduler-plugin-zone-gate/pyproject.toml").is_file()

    assert main(["new-plugin", "ZoneGate"]) == 1
    assert "already exists; refusing to overwrite it" in capsys.readouterr().err
    assert main(["new-plugin", "zone_gate", "--directory", "x"]) == 1
    assert "invalid plugin name 'zone_gate'" in capsys.readouterr().err
    assert main(["new-plugin", "NodeResourcesFit", "--directory", "y"]) == 1
    err = capsys.readouterr().err
    assert "a plugin named 'NodeResourcesFit' is already installed" in err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.mark.parametrize(
    ("api_version", "first", "expected"),
    [
        ("1.3", "0.1.0", "pluggable-scheduler>=0.1.0,<1"),
        ("1.0", "0.1.0", "pluggable-scheduler>=0.1.0,<1"),
        ("2.0", "0.2.0", "pluggable-scheduler>=0.2.0,<2"),
    ],
)
def test_core_requirement_spans_the_releases_of_one_api_major(
    api_version: str, first: str, expected: str
) -> None:
    assert core_requirement(api_version, first) == expected


def test_core_requirement_admits_this_release() -> None:
    spec = SpecifierSet(core_requirement().removeprefix("pluggable-scheduler"))
    assert Version(__version__) in spec


def test_repository_url_gives_project_links(tmp_path: Path) -> None:
    url = "https://github.com/me/scheduler-plugin-zone-gate"
    _, target, _ = scaffold("ZoneGate", tmp_path / "zg", repository_url=url)
    urls = tomllib.loads((target / "pyproject.toml").read_text())["project"]["urls"]
    assert urls == {
        "Homepage": url,
        "Repository": url,
        "Issues": f"{url}/issues",
        "Changelog": f"{url}/blob/main/CHANGELOG.md",
    }
    with pytest.raises(UserError, match=r"invalid --repository-url 'git@github\.com:me/x'"):
        scaffold("ZoneGate", tmp_path / "other", repository_url="git@github.com:me/x")
    assert not (tmp_path / "other").exists()


def test_workflows_test_build_and_publish(tmp_path: Path) -> None:
    _, target, _ = scaffold("ZoneGate", tmp_path / "zg")
    ci = yaml.safe_load((target / ".github/workflows/ci.yml").read_text())
    ci_steps = " ".join(str(step.get("run", "")) for step in ci["jobs"]["test"]["steps"])
    for command in ("pip install -e '.[test]'", "pytest", "python -m build", "twine check"):
        assert command in ci_steps
    publish = yaml.safe_load((target / ".github/workflows/publish.yml").read_text())
    assert publish[True] == {"release": {"types": ["published"]}}  # YAML 1.1: `on` is True
    job = publish["jobs"]["publish"]
    assert job["permissions"] == {"id-token": "write"}  # PyPI trusted publishing
    assert job["environment"]["url"] == "https://pypi.org/project/scheduler-plugin-zone-gate/"
    assert any(
        step.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for step in job["steps"]
    )
