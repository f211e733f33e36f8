"""The image's Python base, made locally: no registry is reachable from the test machines.

``debootstrap`` installs a minimal Debian bookworm with python3 and its venv
module (what the official ``python:3.11-slim-bookworm`` provides, from Debian's
packages), trimmed as the slim images are (no documentation, locales or apt
caches), and the tree is packed into a tarball that ``docker import`` turns into
an image. The tarball is cached under ``~/.cache/pluggable-scheduler/baseimage/``
keyed by a digest of :data:`RECIPE`, like the control plane's Go binaries: made
once (about a minute), reused until the recipe changes.

``PLUGGABLE_SCHEDULER_TEST_BASE_IMAGE=python:3.11-slim-bookworm`` (or any image
the engine has or can pull) skips all of this.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Final

from tests.image.engine import PROGRESS_INTERVAL, DockerEngine, Progress

#: Use this image as the base instead of making one.
BASE_IMAGE_ENV: Final = "PLUGGABLE_SCHEDULER_TEST_BASE_IMAGE"
#: The Debian mirror debootstrap downloads from (not part of the cache key).
MIRROR_ENV: Final = "DEBOOTSTRAP_MIRROR"
DEFAULT_MIRROR: Final = "http://deb.debian.org/debian"

#: What the base holds; any change makes a new tarball.
RECIPE: Final = {
    "suite": "bookworm",
    "variant": "minbase",
    "include": ["python3", "python3-venv", "ca-certificates"],
    # Removed after debootstrap, as the slim images do.
    "prune": [
        "var/cache/apt/archives",
        "var/lib/apt/lists",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/info",
        "usr/share/locale",
    ],
    # `docker import --change` lines: an imported image has no environment at
    # all, and a Dockerfile's `ENV PATH=...:$PATH` needs one.
    "changes": [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LANG=C.UTF-8",
        'CMD ["python3"]',
    ],
}


class BaseImageUnavailable(RuntimeError):
    """The base image cannot be made here; the message says what is missing."""


def recipe_digest() -> str:
    return hashlib.sha256(json.dumps(RECIPE, sort_keys=True).encode()).hexdigest()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pluggable-scheduler" / "baseimage"


def _debootstrap(target: Path, log: Path, progress: Progress) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise BaseImageUnavailable(
            "`debootstrap` is needed to make the base image without a registry "
            f"(Debian: apt-get install debootstrap), or set {BASE_IMAGE_ENV} to an image to use"
        )
    if os.geteuid() != 0:
        raise BaseImageUnavailable(f"debootstrap needs root (or set {BASE_IMAGE_ENV})")
    mirror = os.environ.get(MIRROR_ENV, DEFAULT_MIRROR)
    command = [
        debootstrap,
        f"--variant={RECIPE['variant']}",
        f"--include={','.join(RECIPE['include'])}",
        str(RECIPE["suite"]),
        str(target),
        mirror,
    ]
    started = time.monotonic()
    progress(f"making the base image: {' '.join(command)} (about a minute; log {log})")
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            while True:
                try:
                    returncode = process.wait(PROGRESS_INTERVAL)
                    break
                except subprocess.TimeoutExpired:
                    lines = log.read_text(errors="replace").splitlines()
                    progress(
                        f"still running debootstrap: {time.monotonic() - started:.0f} s, "
                        f"at: {lines[-1] if lines else '(no output yet)'}"
                    )
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    if returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise AssertionError(f"debootstrap failed (exit {returncode}):\n{tail}")
    for relative in RECIPE["prune"]:
        shutil.rmtree(target / relative, ignore_errors=True)
    progress(f"debootstrap done in {time.monotonic() - started:.0f} s")


def ensure_rootfs_tarball(progress: Progress) -> Path:
    """The cached root filesystem tarball of :data:`RECIPE`, made on first use."""
    digest = recipe_digest()
    key_dir = cache_dir() / f"{RECIPE['suite']}-{digest[:12]}"
    tarball = key_dir / "rootfs.tar"
    stamp = key_dir / "stamp"

    def ready() -> bool:
        return stamp.is_file() and stamp.read_text().strip() == digest and tarball.is_file()

    if ready():
        return tarball
    key_dir.mkdir(parents=True, exist_ok=True)
    with open(key_dir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready():
            return tarball
        staging = Path(tempfile.mkdtemp(prefix="rootfs.", dir=key_dir))
        try:
            _debootstrap(staging / "root", key_dir / "debootstrap.log", progress)
            partial = staging / "rootfs.tar"
            subprocess.run(
                ["tar", "--numeric-owner", "--xattrs", "-C", str(staging / "root"), "-cf",
                 str(partial), "."],
                check=True,
            )  # fmt: skip
            partial.rename(tarball)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        stamp.write_text(digest + "\n")
    return tarball


def import_base_image(engine: DockerEngine, progress: Progress) -> str:
    """An image with python3 and venv: ``$PLUGGABLE_SCHEDULER_TEST_BASE_IMAGE``, or imported."""
    given = os.environ.get(BASE_IMAGE_ENV)
    if given:
        return given
    tarball = ensure_rootfs_tarball(progress)
    tag = f"pluggable-scheduler-test-base:{RECIPE['suite']}-{recipe_digest()[:12]}"
    if engine.run("image", "inspect", tag, check=False).returncode == 0:
        return tag
    changes = [arg for change in RECIPE["changes"] for arg in ("--change", change)]
    started = time.monotonic()
    engine.run("import", *changes, str(tarball), tag, timeout=600)
    progress(f"imported {tag} from {tarball} in {time.monotonic() - started:.0f} s")
    return tag
