"""Where pip inside an image build gets packages, with no registry and no trusted TLS.

PyPI answers this machine only through a TLS-intercepting egress proxy whose CA
a fresh image does not trust (checked: a container on the host network gets
``CERTIFICATE_VERIFY_FAILED`` from pypi.org). So builds get everything from
loopback, with ``docker build --network host``:

- the locked dependencies (``requirements.lock`` and the build backend's
  ``deploy/docker/requirements-build.lock``) are downloaded once on the host
  into a wheelhouse cached under ``~/.cache/pluggable-scheduler/wheelhouse/``,
  keyed by a digest of the two locks; the image build still checks their hashes;
- our distributions (the scheduler and the contrib plugins) are built fresh
  into a session directory, as a release would build them;
- both directories are served over HTTP on 127.0.0.1 as pip "find-links" pages.

A build gets them as pip's own variables, passed as build arguments
(:meth:`PipSource.build_args`): the Dockerfiles declare ``ARG PIP_INDEX_URL``,
``PIP_FIND_LINKS``, ``PIP_NO_INDEX`` and the like, exactly as a user with a
private index or mirror would pass them.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tests.image.engine import Progress

REPO: Final = Path(__file__).resolve().parents[2]
LOCKS: Final = (REPO / "requirements.lock", REPO / "deploy" / "docker" / "requirements-build.lock")
#: The images' Python: the wheelhouse holds wheels for it, whatever runs the tests.
IMAGE_PYTHON: Final = "3.11"


@dataclass(frozen=True)
class PipSource:
    """Where pip looks: an index (``/simple/`` URL) and/or find-links pages."""

    find_links: tuple[str, ...] = ()
    index_url: str | None = None

    def build_args(self) -> list[str]:
        """``--build-arg`` options setting pip's variables for a Dockerfile that declares them."""
        values = {"PIP_FIND_LINKS": " ".join(self.find_links)}
        if self.index_url is None:
            values["PIP_NO_INDEX"] = "1"
        else:
            values["PIP_INDEX_URL"] = self.index_url
        return [arg for key, value in values.items() for arg in ("--build-arg", f"{key}={value}")]


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pluggable-scheduler" / "wheelhouse"


def _pip_env() -> dict[str, str]:
    # The machine-wide PIP_FIND_LINKS must not leak in: only the index counts here.
    return {k: v for k, v in os.environ.items() if k != "PIP_FIND_LINKS"}


def ensure_dependency_wheelhouse(progress: Progress) -> Path:
    """The locked dependencies' wheels for the image's Python, downloaded once."""
    digest = hashlib.sha256(IMAGE_PYTHON.encode())
    for lock in LOCKS:
        digest.update(lock.read_bytes())
    key = digest.hexdigest()
    directory = _cache_dir() / key[:16]
    stamp = directory / "complete"
    if stamp.is_file():
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f"{key[:16]}.lock", "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        if stamp.is_file():
            return directory
        progress(f"downloading the locked dependencies' wheels into {directory}")
        staging = Path(tempfile.mkdtemp(prefix="wheels.", dir=directory.parent))
        try:
            command = [
                sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--require-hashes", "--only-binary=:all:", "--implementation=cp",
                f"--python-version={IMAGE_PYTHON}", "--dest", str(staging),
            ]  # fmt: skip
            for lock in LOCKS:
                command += ["-r", str(lock)]
            result = subprocess.run(
                command, capture_output=True, text=True, check=False, env=_pip_env()
            )
            if result.returncode != 0:
                raise AssertionError(f"pip download failed:\n{result.stdout}{result.stderr}")
            shutil.rmtree(directory, ignore_errors=True)
            staging.rename(directory)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        stamp.write_text(key + "\n")
    return directory


def build_distributions(projects: Sequence[Path], out: Path, progress: Progress) -> list[Path]:
    """Wheels of ``projects`` (paths of pyproject.toml directories), built as for a release."""
    out.mkdir(parents=True, exist_ok=True)
    for project in projects:
        result = subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
             str(project)],
            capture_output=True, text=True, check=False, env=_pip_env(),
        )  # fmt: skip
        if result.returncode != 0:
            raise AssertionError(f"building {project} failed:\n{result.stdout}{result.stderr}")
    wheels = sorted(out.glob("*.whl"))
    progress("built " + ", ".join(wheel.name for wheel in wheels))
    return wheels


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve_directory(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free loopback port; its listing is a pip find-links page."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="wheel-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
