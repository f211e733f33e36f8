"""scheduler-plugins' own kube-scheduler, built from Go modules: the batch workloads' peer.

``bench perf``'s gang and quota workloads compare our Coscheduling and
CapacityScheduling with the implementations users switch from:
kubernetes-sigs/scheduler-plugins' ``cmd/scheduler``, which is kube-scheduler
with those plugins compiled in. It is built like the control plane
(:mod:`scheduler.tools.controlplane`): from the Go module pinned in
``tools/controlplane/scheduler-plugins/`` (go.mod and go.sum; no binary
downloads, only the Go module proxy), cached outside the repository under
``~/.cache/pluggable-scheduler/scheduler-plugins/<version>-<pin digest>/``,
with a progress line every half minute while the compiler runs, and a file lock
so that concurrent callers build once.

The pin is the scheduler-plugins release whose Kubernetes dependencies are
nearest our control plane's 1.36 (read it with :func:`pinned_versions`); the
binary stamps itself with that Kubernetes version, as kube's own build does.

``python -m scheduler.tools.schedulerplugins build`` builds it ahead of a run.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from scheduler.tools.controlplane import (
    TOOLS_DIR,
    ControlPlaneError,
    _find_go,
    _go_build,
    _kubernetes_ldflags,
    _require_version,
    _tail,
)

__all__ = [
    "BINARY",
    "BIN_ENV",
    "MODULE",
    "SchedulerPluginsBuildError",
    "cache_root",
    "ensure_binary",
    "pinned_versions",
]

log = logging.getLogger(__name__)

MODULE: Final = "sigs.k8s.io/scheduler-plugins"
MODULE_DIR: Final = TOOLS_DIR / "scheduler-plugins"
PACKAGE: Final = f"{MODULE}/cmd/scheduler"
#: The built binary's name (scheduler-plugins' Makefile calls it kube-scheduler too;
#: another name keeps it apart from the control plane's kube-scheduler in logs).
BINARY: Final = "kube-scheduler-plugins"
#: Use this binary instead of building one.
BIN_ENV: Final = "SCHEDULER_PLUGINS_BINARY"


class SchedulerPluginsBuildError(ControlPlaneError):
    """scheduler-plugins' kube-scheduler could not be built (no Go, no proxy, a failed build)."""


def pinned_versions() -> tuple[str, str]:
    """``(scheduler-plugins, k8s.io/kubernetes)`` versions of the pin, e.g.
    ``("v0.35.4-devel", "v1.35.4")``. The Kubernetes version is the one the
    pin's replace block selects, which is what gets compiled in."""
    go_mod = MODULE_DIR / "go.mod"
    plugins = _require_version(go_mod, MODULE)
    text = go_mod.read_text()
    marker = "k8s.io/kubernetes => k8s.io/kubernetes "
    start = text.find(marker)
    if start < 0:
        raise SchedulerPluginsBuildError(f"{go_mod} does not replace k8s.io/kubernetes")
    kubernetes = text[start + len(marker) :].split()[0]
    return plugins, kubernetes


def cache_root() -> Path:
    """Where the binary is cached: beside the control plane's, shared by checkouts."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pluggable-scheduler" / "scheduler-plugins"


def _pin_digest() -> str:
    digest = hashlib.sha256(PACKAGE.encode())
    for name in ("go.mod", "go.sum"):
        digest.update(name.encode())
        digest.update((MODULE_DIR / name).read_bytes())
    return digest.hexdigest()


def binary_path() -> Path:
    """Where the binary for the current pin is (or will be) cached."""
    plugins, _ = pinned_versions()
    return cache_root() / f"{plugins}-{_pin_digest()[:12]}" / "bin" / BINARY


def ensure_binary() -> Path:
    """Return scheduler-plugins' kube-scheduler, building it on first use.

    A cold build compiles kube-scheduler and scheduler-plugins' dependencies
    (10-20 minutes on two cores, less when the control plane's build already
    filled Go's build cache); later calls reuse it until the pin changes.
    Raises :class:`SchedulerPluginsBuildError` with the reason (and the end of
    the build log) when it cannot be built.
    """
    override = os.environ.get(BIN_ENV)
    if override:
        if not os.access(override, os.X_OK):
            raise SchedulerPluginsBuildError(f"{BIN_ENV}={override} is not an executable file")
        return Path(override)
    plugins, kubernetes = pinned_versions()
    target = binary_path()
    key_dir = target.parent.parent
    if os.access(target, os.X_OK):
        return target
    try:
        go = _find_go()
    except ControlPlaneError as error:
        raise SchedulerPluginsBuildError(
            f"cannot build scheduler-plugins {plugins}: {error} (or set {BIN_ENV})"
        ) from None
    key_dir.mkdir(parents=True, exist_ok=True)
    with open(key_dir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(target, os.X_OK):  # another process built it while we waited
            return target
        build_log = key_dir / "build.log"
        staging = Path(tempfile.mkdtemp(prefix="bin.", dir=key_dir))
        log.warning(
            "building scheduler-plugins %s (kube-scheduler %s with Coscheduling and "
            "CapacityScheduling) into %s (a cold build takes 10-20 minutes on two cores; log: %s)",
            plugins,
            kubernetes,
            target,
            build_log,
        )
        try:
            with open(build_log, "w") as log_file:
                _go_build(
                    go,
                    MODULE_DIR,
                    [PACKAGE],
                    str(staging / BINARY),
                    _kubernetes_ldflags(kubernetes),
                    log_file,
                    f"scheduler-plugins {plugins}",
                )
            staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared
            shutil.rmtree(target.parent, ignore_errors=True)
            staging.rename(target.parent)
        except ControlPlaneError as error:
            raise SchedulerPluginsBuildError(
                f"cannot build scheduler-plugins {plugins}: {error}; build log:\n"
                f"{_tail(build_log, 40)}"
            ) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """``build``: build (or reuse) the binary and print its path."""
    parser = argparse.ArgumentParser(prog="python -m scheduler.tools.schedulerplugins")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help=f"build (or reuse) scheduler-plugins' {PACKAGE}")
    parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    started = time.monotonic()
    try:
        path = ensure_binary()
    except SchedulerPluginsBuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{path} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
