"""Each plugins-contrib distribution passes its own tests in a fresh virtualenv.

Only what the distributions declare gets installed: the core's wheel, the
plugin's wheel with its ``test`` extra, and their dependencies from PyPI (or
pip's cache). A plugin importing something it does not declare, a package
file missing from its wheel, or a broken entry point fails here, with the
plugin's own pytest output. One venv per plugin; the core wheel is built once.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTRIB = REPO / "plugins-contrib"
DISTS = sorted(p for p in CONTRIB.iterdir() if (p / "pyproject.toml").is_file())
STEP_TIMEOUT = 300


def clean_env() -> dict[str, str]:
    """The environment without anything pointing into this checkout or its venv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV"}
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def run(args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(
            args,
            cwd=cwd,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{what}: timed out after {STEP_TIMEOUT}s\n{err.stdout}\n{err.stderr}")
    if result.returncode != 0:
        pytest.fail(
            f"{what} failed (exit {result.returncode}):\n"
            f"$ {' '.join(args)}\n{result.stdout}\n{result.stderr}"
        )
    return result


def copy_without_packages(dist: Path, workdir: Path) -> None:
    """The distribution's tests, config and data files, minus its import packages.

    The code under test must be the installed wheel: a package left beside the
    tests would shadow it (and hide files missing from the wheel).
    """
    packages = {p.name for p in dist.iterdir() if (p / "__init__.py").is_file()}
    ignore = shutil.ignore_patterns(
        "__pycache__", ".pytest_cache", "build", "dist", "*.egg-info", ".venv"
    )
    shutil.copytree(
        dist,
        workdir,
        ignore=lambda d, names: (
            set(ignore(d, names)) | (packages & set(names) if Path(d) == dist else set())
        ),
    )


def pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", *args]


@pytest.fixture(scope="module")
def core_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("core-wheel")
    run(
        pip("wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out), str(REPO)),
        out,
        "building the pluggable-scheduler wheel",
    )
    (wheel,) = out.glob("pluggable_scheduler-*.whl")
    return wheel


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pin third-party packages to this environment's versions: pip's cache has them."""
    pins = set()
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if not name or name == "pluggable-scheduler" or name.startswith("scheduler-plugin-"):
            continue
        if dist.read_text("direct_url.json"):  # editable or local: not on PyPI
            continue
        pins.add(f"{name}=={dist.version}")
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    path.write_text("\n".join(sorted(pins)) + "\n")
    return path


def test_there_are_contrib_distributions() -> None:
    names = {d.name for d in DISTS}
    assert {"scheduler-plugin-annotation-gate", "scheduler-plugin-loadaware"} <= names


@pytest.mark.parametrize("dist", DISTS, ids=[d.name for d in DISTS])
def test_plugin_tests_pass_in_a_fresh_venv(
    dist: Path, core_wheel: Path, constraints: Path, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    run(
        pip("wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(dist)),
        tmp_path,
        f"building the {dist.name} wheel",
    )
    (plugin_wheel,) = wheels.glob("*.whl")

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # The outer pip installs into the new venv (--python): no ensurepip, no pip in it.
    run(
        pip(
            "--python",
            str(python),
            "install",
            "--quiet",
            "--constraint",
            str(constraints),
            str(core_wheel),
            f"{plugin_wheel}[test]",
        ),
        tmp_path,
        f"installing {dist.name} into a fresh venv",
    )
    run(pip("--python", str(python), "check"), tmp_path, f"pip check of {dist.name}")

    workdir = tmp_path / "run"
    copy_without_packages(dist, workdir)
    result = run(
        [str(env_dir / "bin" / "pytest"), "-q", "-p", "no:cacheprovider"],
        workdir,
        f"{dist.name}'s own tests",
    )
    assert " passed" in result.stdout, result.stdout
