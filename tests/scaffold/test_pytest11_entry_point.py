"""The pytest11 entry point recommended for the core composes with ``-p`` and ``pytest_plugins``.

The core's pyproject should register the fixtures as::

    [project.entry-points.pytest11]
    "scheduler.testing.pytest_plugin" = "scheduler.testing.pytest_plugin"

Naming the entry point after the module lets pytest recognise it as the
same plugin that ``-p scheduler.testing.pytest_plugin`` (used by the
contrib and scaffolded distributions, which must also work with older
cores) and ``pytest_plugins = [...]`` load, instead of failing with
"Plugin already registered under a different name". This test installs a
probe distribution carrying exactly that entry point and checks both ways.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE_PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "pytest11-probe"
version = "0"

[project.entry-points.pytest11]
"scheduler.testing.pytest_plugin" = "scheduler.testing.pytest_plugin"

[tool.hatch.build.targets.wheel]
bypass-selection = true
"""

PROBE_TEST = """\
pytest_plugins = ["scheduler.testing.pytest_plugin"]


async def test_fixture_available(running_scheduler):
    sched = await running_scheduler()
    assert sched.placements() == {}
"""


def pytest_run(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_entry_point_named_after_the_module_composes(tmp_path: Path) -> None:
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "pyproject.toml").write_text(PROBE_PYPROJECT)
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--target", str(site), str(tmp_path / "probe")],
        check=True,
    )  # fmt: skip
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_probe.py").write_text(PROBE_TEST)
    (tests / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n")

    both = pytest_run(tests, site, "-p", "scheduler.testing.pytest_plugin")
    assert both.returncode == 0, both.stdout + both.stderr
    # The entry point alone provides the fixtures.
    (tests / "test_probe.py").write_text(PROBE_TEST.split("\n", 2)[2])
    alone = pytest_run(tests, site)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    # And -p no:<name> turns it off.
    off = pytest_run(tests, site, "-p", "no:scheduler.testing.pytest_plugin")
    assert "fixture 'running_scheduler' not found" in off.stdout
