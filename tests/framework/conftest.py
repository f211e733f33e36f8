"""Real plugin distributions, built and pip-installed for the discovery tests.

Each test distribution under ``dists/`` is installed with pip into its own
target directory (no hand registration: the entry point metadata pip writes
is what discovery reads). A test composes the directories it wants on
``PYTHONPATH`` or ``sys.path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

DISTS = Path(__file__).parent / "dists"


@pytest.fixture(scope="session")
def dist_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Distribution name -> the site directory pip installed it into."""
    root = tmp_path_factory.mktemp("plugin-sites")
    sites = {}
    for dist in sorted(DISTS.iterdir()):
        target = root / dist.name
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--no-input",
                "--target",
                str(target),
                str(dist),
            ],
            check=True,
            cwd=root,
        )
        sites[dist.name] = target
    return sites


@pytest.fixture
def with_dists(dist_sites: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Call with distribution names to make them importable and discoverable in-process."""
    added: list[str] = []
    modules_before = set(sys.modules)

    def install(*names: str) -> None:
        for name in names:
            path = str(dist_sites[name])
            monkeypatch.syspath_prepend(path)
            added.append(path)

    yield install
    for name in set(sys.modules) - modules_before:
        if name.split(".")[0] in {"zonegate", "zonegate_fork", "oldapi", "badhook", "brokenimport"}:
            del sys.modules[name]


def run_cli(sites: list[Path], *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m scheduler`` with ``sites`` visible, as a user's environment would be."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(s) for s in sites)
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
