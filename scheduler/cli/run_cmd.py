"""``pluggable-scheduler run``: the daemon, against a real cluster."""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scheduler.cli.common import (
    add_config_option,
    add_feature_gates_option,
    add_logging_options,
    load_config_option,
    setup_logging,
)
from scheduler.cli.serving import add_serving_options, address_field, serving_from_args
from scheduler.errors import UserError

if TYPE_CHECKING:
    from scheduler.config.models import SchedulerConfiguration
    from scheduler.observability.server import Serving


async def run_daemon(
    config: SchedulerConfiguration,
    kubeconfig: str | None,
    config_path: Path | None = None,
    serving: Serving | None = None,
    *,
    serve: bool = True,
    record: Path | None = None,
    record_max_bytes: int = 0,
) -> int:
    """Run the daemon; ``serving`` says how health and metrics are served.

    Without ``serving``, plain HTTP at ``pluggableScheduler.serverAddress``;
    ``serve=False`` serves nothing (``--secure-port 0``).
    """
    from kubernetes_asyncio.config import ConfigException

    from scheduler.config import resolve_profiles
    from scheduler.daemon.allocator import keep_freed_memory
    from scheduler.daemon.daemon import Daemon
    from scheduler.framework.loader import PluginCatalog
    from scheduler.kube.client import KubeClient
    from scheduler.processgc import hold_a_cluster

    # The daemon keeps every pod of the cluster (see scheduler.processgc); it
    # also freezes what it holds after the first sync (Daemon.start_informers).
    hold_a_cluster()
    # Decisions allocate and free arrays of one value per node: keep freed
    # memory for the next one instead of faulting it in again (see the module).
    keep_freed_memory()
    # Plugin names and args are the config's: refuse them before connecting,
    # so a typo is reported as such, not hidden behind a kubeconfig error.
    catalog = PluginCatalog.discover()
    try:
        resolve_profiles(config, catalog)
    except UserError as err:
        if config_path is None:
            raise
        raise UserError(
            f"invalid scheduler configuration in {config_path}", details=err.details
        ) from None
    conn = config.client_connection
    path = kubeconfig or conn.kubeconfig or None
    for file in _kubeconfig_files(path):
        _check_kubeconfig_file(file)
    try:
        client = await KubeClient.from_kubeconfig(
            path, qps=conn.qps, burst=conn.burst, content_type=conn.content_type
        )
    except Exception as exc:
        # The kubeconfig loader answers a malformed file with whatever its
        # code trips on (TypeError, KeyError, ConfigException): all of them
        # mean "this kubeconfig cannot be used", so say that, with the cause.
        cause = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ConfigException) else exc
        if path is None:
            raise UserError(
                f"no usable kubeconfig: {cause} (pass --kubeconfig, set "
                "clientConnection.kubeconfig or KUBECONFIG, or run in a pod)"
            ) from exc
        raise UserError(f"cannot use kubeconfig {path}: {cause}") from exc
    try:

        def control_client() -> Awaitable[KubeClient]:
            # The control thread's own client: lease renewals never wait behind
            # the scheduler's requests or its rate limiter.
            return KubeClient.from_kubeconfig(
                path, qps=conn.qps, burst=conn.burst, content_type=conn.content_type
            )

        daemon = Daemon(
            config,
            catalog,
            client,
            serve_health=serve,
            serving=serving,
            freeze_gc_after_sync=True,
            control_client=control_client,
            config_path=config_path,
            rediscover=PluginCatalog.discover,  # distributions installed since start-up too
        )
        if record is not None:
            daemon.scheduler.recorder = _recorder(record, record_max_bytes, config_path)
        return await daemon.run()
    finally:
        await client.close()


def _recorder(path: Path, max_bytes: int, config_path: Path | None) -> Any:
    """``--record``: the recorder, with the config document a replay loads again."""
    from scheduler.config.loading import DEFAULT_CONFIG
    from scheduler.config.yamlfiles import load_yaml_documents, read_text
    from scheduler.engine.recording import DEFAULT_MAX_BYTES, DecisionRecorder

    document: Any = DEFAULT_CONFIG
    if config_path is not None:
        documents = load_yaml_documents(read_text(config_path, "config file"), str(config_path))
        document = documents[0] if documents else DEFAULT_CONFIG
    if path.parent and not path.parent.is_dir():
        raise UserError(f"--record {path}: no directory {path.parent}")
    return DecisionRecorder(path, document, max_bytes=max_bytes or DEFAULT_MAX_BYTES)


def _kubeconfig_files(path: str | None) -> list[Path]:
    """The kubeconfig files the client will read: ``path``, else those of ``KUBECONFIG``.

    An explicit path must exist; the files of ``KUBECONFIG`` (or the default
    ``~/.kube/config``) are merged by the client, which skips missing ones.
    """
    if path is not None:
        return [Path(path)]
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return []  # in-cluster config comes first
    listed = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    return [Path(p) for p in listed.split(os.pathsep) if p and Path(p).exists()]


def _check_kubeconfig_file(file: Path, what: str = "kubeconfig") -> None:
    """Read ``file`` as the client would, but with one-line errors naming it.

    The client's own loader reads it with PyYAML directly: a non-UTF-8 or
    deeply nested file would end in a traceback from inside that library.
    """
    from scheduler.config.yamlfiles import load_yaml_documents, read_text

    documents = [d for d in load_yaml_documents(read_text(file, what), f"{what} {file}") if d]
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise UserError(f"{what} {file} must hold one mapping (apiVersion: v1, kind: Config)")


def check_listen_address(address: str, field: str) -> None:
    """Fail now, naming ``field``, if ``address`` cannot be bound.

    The health server binds only once the daemon starts, where a port in use
    surfaces as an ``OSError`` from deep inside asyncio. Binding (with
    ``SO_REUSEADDR``, as the server does) and releasing a socket first turns
    the common case, another process on the port, into a one-line error.
    """
    from scheduler.observability.server import parse_address

    try:
        host, port = parse_address(address)
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (ValueError, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UserError(f"{field}: cannot listen on {address}: {reason}") from exc
    for family, kind, proto, _name, sockaddr in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                # asyncio binds v4 and v6 separately for a wildcard host.
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(sockaddr)
            except OSError as exc:
                raise UserError(
                    f"{field}: cannot listen on {address}: {exc.strerror or exc}"
                ) from exc


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    setup_logging(args)
    config = load_config_option(args)
    serving = serving_from_args(args, config)
    if serving is not None:
        check_listen_address(serving.address, address_field(args))
        if serving.auth is not None:
            for flag, file in (
                ("--authentication-kubeconfig", serving.auth.authentication_kubeconfig),
                ("--authorization-kubeconfig", serving.auth.authorization_kubeconfig),
            ):
                if file is not None:
                    _check_kubeconfig_file(Path(file), f"{flag}")
    config_path = Path(args.config) if args.config else None
    return asyncio.run(
        run_daemon(
            config,
            args.kubeconfig,
            config_path,
            serving,
            serve=serving is not None,
            record=Path(args.record) if args.record else None,
            record_max_bytes=args.record_max_bytes,
        )
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the scheduler daemon against a cluster",
        description="Run the scheduler against the cluster of --kubeconfig (or "
        "clientConnection.kubeconfig, or in-cluster config). Exits non-zero when "
        "it loses its leader lease, as kube-scheduler does (1), and with 3 when a "
        "plugin hook held it past pluggableScheduler.shutdownGracePeriod after "
        "SIGTERM. Changes to the --config file are applied while it runs (see "
        "pluggableScheduler.configReloadPeriod). Health and metrics are served as "
        "kube-scheduler serves them: HTTPS, /metrics for callers the API server "
        "authenticates and authorizes; --plain-http for local use.",
    )
    add_config_option(parser)
    add_feature_gates_option(parser)
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig to use")
    add_serving_options(parser)
    add_logging_options(parser)
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="record the inputs of every decision to FILE (JSON lines, rotated to FILE.1.."
        "FILE.3); 'pluggable-scheduler replay FILE' re-runs them",
    )
    parser.add_argument(
        "--record-max-bytes",
        type=int,
        default=0,
        metavar="N",
        help="rotate the recording past N bytes (default 256 MiB)",
    )
    parser.set_defaults(func=_cmd_run)
