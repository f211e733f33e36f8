"""A PyPI-compatible package index on loopback, for testing how distributions install.

Users get pluggable-scheduler and its plugins by name from an index
(``pip install scheduler-plugin-foo``), so the path a release takes is tested
the same way: ``pypiserver`` (a real index server, run as its own process)
serves a directory; distributions are uploaded with ``twine`` under a
password, exactly as a release uploads to PyPI; third-party wheels a release
depends on are *mirrored* (copied into the served directory, as an
organisation's internal mirror holds them), so that ``pip install
--index-url <index>`` needs nothing but this index. The fallback redirect to
PyPI that pypiserver does by default is off: a name the index lacks is an
error, as it would be for users.

``pypiserver`` and ``twine`` are test tools, not dependencies of the
scheduler (``requirements-dev.txt`` installs them); they run as
``python -m`` of the interpreter running this module.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from scheduler.tools.controlplane import _die_with_parent, _free_port, _tail

__all__ = [
    "UPLOAD_USER",
    "PackageIndex",
    "PackageIndexError",
    "clean_pip_env",
    "pip_download",
    "run_package_index",
]

UPLOAD_USER = "release"
START_TIMEOUT = 30.0
# Variables that would point pip (or Python) at anything but the index under test.
_PIP_LEAKS = frozenset(
    {
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_FIND_LINKS",
        "PIP_NO_INDEX",
        "PIP_CONFIG_FILE",
        "PIP_REQUIRE_VIRTUALENV",
        "PYTHONPATH",
        "PYTHONHOME",
        "VIRTUAL_ENV",
    }
)


class PackageIndexError(RuntimeError):
    """The index did not start, or an upload or a tool run against it failed."""


def clean_pip_env(index_url: str | None = None, **extra: str) -> dict[str, str]:
    """This process's environment with pip pointed at ``index_url`` and nowhere else.

    Without an ``index_url`` pip has no index at all (``PIP_NO_INDEX``). pip's
    configuration files are ignored (``PIP_CONFIG_FILE=/dev/null``): a
    machine-wide ``find-links`` or mirror would otherwise make an install pass
    that fails for users.
    """
    env = {k: v for k, v in os.environ.items() if k not in _PIP_LEAKS}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    if index_url is None:
        env["PIP_NO_INDEX"] = "1"
    else:
        env["PIP_INDEX_URL"] = index_url
    env.update(extra)
    return env


@dataclass
class PackageIndex:
    """A running pypiserver: ``url`` (its root) and ``simple_url`` (PEP 503, for pip)."""

    url: str
    directory: Path
    password: str
    log_path: Path
    process: subprocess.Popen[bytes]
    uploaded: list[Path] = field(default_factory=list)

    @property
    def simple_url(self) -> str:
        return f"{self.url}/simple/"

    def pip_args(self) -> list[str]:
        """pip options that use this index only: ``pip install *index.pip_args() NAME``."""
        return ["--index-url", self.simple_url]

    def upload(self, files: Iterable[Path], *, password: str | None = None) -> None:
        """``twine upload`` the given sdists and wheels, authenticated as a release would."""
        paths = [str(p) for p in files]
        command = [
            sys.executable,
            "-m",
            "twine",
            "upload",
            "--non-interactive",
            "--disable-progress-bar",
            "--repository-url",
            f"{self.url}/",
            "--username",
            UPLOAD_USER,
            "--password",
            self.password if password is None else password,
            *paths,
        ]
        result = subprocess.run(
            command, env=clean_pip_env(NO_COLOR="1"), capture_output=True, text=True, timeout=300
        )
        if result.returncode != 0:
            raise PackageIndexError(
                f"twine upload to {self.url} failed (exit {result.returncode}):\n"
                f"{result.stdout}{result.stderr}"
            )
        self.uploaded.extend(Path(p) for p in paths)

    def release(self, project: Path, outdir: Path) -> list[Path]:
        """Build ``project`` as a release does, check it, and upload it; return the files.

        ``python -m build`` makes the sdist and then the wheel *from the sdist*
        (so a file missing from the sdist breaks the wheel), each in an
        isolated environment whose build backend pip takes from this index;
        ``twine check --strict`` refuses metadata or a README the index page
        could not render.
        """
        outdir.mkdir(parents=True, exist_ok=True)
        before = set(outdir.iterdir())
        _run_tool(
            [sys.executable, "-m", "build", "--outdir", str(outdir), str(project)],
            f"python -m build {project}",
            clean_pip_env(self.simple_url),
        )
        files = sorted(set(outdir.iterdir()) - before)
        _run_tool(
            [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)],
            f"twine check --strict of {project.name}",
            clean_pip_env(NO_COLOR="1"),
        )
        self.upload(files)
        return files

    def mirror(self, files: Iterable[Path]) -> None:
        """Serve third-party distributions as a mirror does: copied in, not uploaded by us."""
        for path in files:
            shutil.copy2(path, self.directory / path.name)

    def versions(self, project: str) -> list[str]:
        """The file names the simple API lists for ``project`` (empty when unknown)."""
        try:
            with urllib.request.urlopen(f"{self.simple_url}{project}/", timeout=10) as response:
                body = response.read().decode()
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return []
            raise
        return [line.split(">")[1].split("<")[0] for line in body.split("<a ")[1:]]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _run_tool(command: list[str], what: str, env: dict[str, str]) -> str:
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise PackageIndexError(
            f"{what} failed (exit {result.returncode}):\n$ {' '.join(command)}\n"
            f"{result.stdout}{result.stderr}"
        )
    return result.stdout


def _write_htpasswd(path: Path, user: str, password: str) -> None:
    """An Apache htpasswd file with one user, in its ``{SHA}`` scheme.

    pypiserver checks it with passlib (``pypiserver[passlib]``); a random
    password per index makes the scheme's weakness irrelevant here.
    """
    digest = base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()
    path.write_text(f"{user}:{{SHA}}{digest}\n")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def run_package_index(
    workdir: Path, *, host: str = "127.0.0.1", port: int | None = None
) -> Iterator[PackageIndex]:
    """Start pypiserver serving ``workdir/packages`` on ``host``; stop it on exit.

    Uploads need the password of :data:`UPLOAD_USER` (``PackageIndex.password``);
    downloads and listings need none, like PyPI.
    """
    packages = workdir / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    password = os.urandom(12).hex()
    htpasswd = workdir / "htpasswd"
    _write_htpasswd(htpasswd, UPLOAD_USER, password)
    chosen = port if port is not None else _free_port()
    url = f"http://{host}:{chosen}"
    log_path = workdir / "pypiserver.log"
    command = [
        sys.executable, "-m", "pypiserver", "run",
        "--host", host, "--port", str(chosen),
        "--passwords", str(htpasswd), "--authenticate", "update",
        "--disable-fallback", "--hash-algo", "sha256",
        "--server", "wsgiref", "--log-file", str(log_path), "--log-stream", "none",
        str(packages),
    ]  # fmt: skip
    process = subprocess.Popen(
        [*_die_with_parent(), *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    index = PackageIndex(url, packages, password, log_path, process)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(url):
            if process.poll() is not None:
                stderr = process.stderr.read().decode() if process.stderr else ""
                raise PackageIndexError(
                    f"pypiserver exited (code {process.returncode}) before serving {url}:\n"
                    f"{stderr}{_tail(log_path, 20)}"
                )
            if time.monotonic() > deadline:
                raise PackageIndexError(
                    f"pypiserver did not answer {url}/health within {START_TIMEOUT:.0f} s:\n"
                    f"{_tail(log_path, 20)}"
                )
            time.sleep(0.1)
        yield index
    finally:
        index.stop()


def pip_download(requirements: Iterable[Path], into: Path) -> list[Path]:
    """Download the binary wheels pinned in requirements files (with ``--hash``: checked).

    From the machine's configured index (PyPI), through pip's cache: this is
    how a mirror is filled, and the only step that needs PyPI. ``--no-deps``:
    the files pin the whole tree.
    """
    into.mkdir(parents=True, exist_ok=True)
    before = set(into.iterdir())
    args = [arg for path in requirements for arg in ("-r", str(path))]
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
        "--no-deps", "--dest", str(into), *args,
    ]  # fmt: skip
    _run_tool(command, f"pip download {' '.join(args)}", dict(os.environ))
    return sorted(set(into.iterdir()) - before)
