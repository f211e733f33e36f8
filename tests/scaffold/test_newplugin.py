"""``pluggable-scheduler new-plugin``: name validation, files, refusal to overwrite."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from scheduler.api.version import PLUGIN_API_VERSION
from scheduler.cli.main import main
from scheduler.errors import UserError
from scheduler.scaffold import PluginNames, render, scaffold, validate_plugin_name


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
        "README.md",
        "pyproject.toml",
        "scheduler_plugin_zone_gate/__init__.py",
        "scheduler_plugin_zone_gate/plugin.py",
        "tests/test_plugin.py",
    ]
    project = tomllib.loads((target / "pyproject.toml").read_text())
    assert project["project"]["name"] == "scheduler-plugin-zone-gate"
    assert project["project"]["entry-points"]["scheduler.plugins"] == {
        "ZoneGate": "scheduler_plugin_zone_gate.plugin:ZoneGate"
    }
    assert any(d.startswith("pluggable-scheduler>=") for d in project["project"]["dependencies"])
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
