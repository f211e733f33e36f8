"""``pluggable-scheduler emulator``: serve the emulated Kubernetes API for any client."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from scheduler.errors import UserError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "emulator",
        help="serve an emulated Kubernetes API server (for kubectl, kube-scheduler, tests)",
        description="Serve the built-in Kubernetes API emulator on loopback over plain HTTP "
        "and write a kubeconfig for it. Runs until interrupted.",
    )
    parser.add_argument(
        "--cluster",
        metavar="FILE",
        type=Path,
        help="cluster file to load: a List (kubectl get -o yaml) or multi-document YAML",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port to listen on (default: any free port)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--kubeconfig-out",
        metavar="FILE",
        type=Path,
        default=None,
        help="where to write the kubeconfig, kept after exit (default: "
        "$XDG_STATE_HOME/pluggable-scheduler/emulator-PORT.kubeconfig, i.e. under "
        "~/.local/state, removed on exit)",
    )
    parser.add_argument(
        "--fake-kubelet",
        action="store_true",
        help="bound pods become Running and deleted pods terminate, as if kubelets ran",
    )
    parser.add_argument(
        "--volume-controller",
        action="store_true",
        help="bind claims to volumes, provision volumes (node-local CSI) and create "
        "ephemeral volume claims, as kube-controller-manager and a provisioner would",
    )
    parser.add_argument(
        "--claim-controller",
        action="store_true",
        help="create ResourceClaims from pods' templates, release reservations of pods "
        "that are gone or done and deallocate unused claims, as kube-controller-manager would",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from scheduler.processgc import freeze_what_is_held, hold_a_cluster
    from scheduler.simulation.emulator import EmulatorServer
    from scheduler.simulation.emulator.clusterfile import load_cluster_file

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, got {args.port}")
    hold_a_cluster()
    objects = load_cluster_file(args.cluster) if args.cluster else None
    server = EmulatorServer(
        objects,
        host=args.host,
        port=args.port,
        fake_kubelet=args.fake_kubelet,
        volume_controller=args.volume_controller,
        claim_controller=args.claim_controller,
    )
    freeze_what_is_held()  # the cluster file's objects, loaded by the constructor
    return asyncio.run(_serve(server, args.kubeconfig_out))


def state_dir() -> Path:
    """This user's state directory for the command (XDG base directories)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pluggable-scheduler"


async def _serve(server: Any, kubeconfig_out: Path | None) -> int:
    """Serve until SIGINT/SIGTERM.

    Without ``--kubeconfig-out`` the kubeconfig goes to the user's state
    directory, one file per port so that several emulators can run, and is
    removed on exit: it points at a port nothing serves any more, and the
    current directory (often a checkout) stays clean.
    """
    import asyncio

    try:
        await server.start()
    except OSError as exc:
        raise UserError(
            f"cannot listen on {server.host}:{server.port}: {exc.strerror or exc}"
        ) from exc
    # Handlers first: whoever reads the lines below may signal at once, and
    # the kubeconfig must still be cleaned up then.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    target = kubeconfig_out or state_dir() / f"emulator-{server.port}.kubeconfig"
    written: Path | None = None
    try:
        try:
            written = path = server.write_kubeconfig(target)
        except OSError as exc:
            raise UserError(
                f"cannot write kubeconfig {target}: {exc.strerror or exc}"
                + ("" if kubeconfig_out else " (choose another place with --kubeconfig-out)")
            ) from exc
        print(f"Kubernetes API emulator serving at {server.url}", flush=True)
        kept = "" if kubeconfig_out else " (removed on exit)"
        print(f"kubeconfig written to {path.resolve()}{kept}", flush=True)
        print(f"try: kubectl --kubeconfig {path} get nodes,pods -A -o wide", flush=True)
        await stop.wait()
        print("stopping", file=sys.stderr, flush=True)
    finally:
        await server.stop()
        if written is not None and kubeconfig_out is None:
            written.unlink(missing_ok=True)
    return 0
