"""The container image's HEALTHCHECK: probe the running daemon where its config says it listens.

A HEALTHCHECK with a fixed ``https://127.0.0.1:10259/livez`` reports a healthy
scheduler as unhealthy as soon as ``pluggableScheduler.serverAddress`` moves
the health server to another port. This probe instead reads how the daemon
itself was started: the command line of the container's main process (PID 1,
or any process given with ``--pid``) - its ``--config`` (else the default
configuration, like ``pluggable-scheduler run`` without one) and its serving
flags (``--bind-address``, ``--secure-port``, ``--plain-http``) - and asks that
address's ``/livez``, over HTTPS unless the daemon serves plain HTTP. A
wildcard host (``0.0.0.0``, ``::``, empty) is probed on loopback. The serving
certificate is not verified: it is the daemon's own, reached on loopback, and
self-signed by default. ``/livez`` needs no token (it is one of
``--authorization-always-allow-paths``).

With ``--config`` given to the probe itself, no command line is read and the
probe's own serving flags describe the daemon.

``python -m scheduler.daemon.healthcheck`` exits 0 when the daemon
answers 200 and 1 otherwise, with one line saying why (Docker keeps the last
few in ``docker inspect``'s ``State.Health.Log``).
"""

from __future__ import annotations

import argparse
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from scheduler.errors import UserError

#: What the probe asks for: liveness, as the Deployment's livenessProbe does.
DEFAULT_PATH = "/livez"


def flag_of(command_line: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` (``--flag V`` or ``--flag=V``; the last one wins, as in argparse)."""
    value: str | None = None
    for index, argument in enumerate(command_line):
        if argument == flag and index + 1 < len(command_line):
            value = command_line[index + 1]
        elif argument.startswith(flag + "="):
            value = argument.removeprefix(flag + "=")
    return value


def config_path_of(command_line: Sequence[str]) -> Path | None:
    """The ``--config`` of a ``pluggable-scheduler run`` command line, if it has one."""
    value = flag_of(command_line, "--config")
    return None if value is None else Path(value)


def serving_of(command_line: Sequence[str]) -> tuple[bool, str | None, int | None]:
    """``(plain HTTP?, --bind-address, --secure-port)`` of a ``run`` command line."""
    port = flag_of(command_line, "--secure-port")
    try:
        secure_port = None if port is None else int(port)
    except ValueError:
        raise UserError(f"the daemon's --secure-port {port!r} is not a number") from None
    return "--plain-http" in command_line, flag_of(command_line, "--bind-address"), secure_port


def served_address(address: str, bind_address: str | None, secure_port: int | None) -> str:
    """``address`` with ``run``'s ``--bind-address`` and ``--secure-port`` applied."""
    from scheduler.observability.server import override_address

    if secure_port == 0:
        raise UserError("the daemon runs with --secure-port 0: it serves no health endpoint")
    return override_address(address, bind_address, secure_port)


def process_command_line(pid: int) -> list[str]:
    """The arguments of process ``pid`` (``/proc/PID/cmdline``, NUL-separated)."""
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def server_address(config: Path | None) -> str:
    """``pluggableScheduler.serverAddress`` of ``config`` (the default one without a file)."""
    from scheduler.config.loading import load_config
    from scheduler.config.models import SchedulerExtensions

    if config is None:
        return SchedulerExtensions().server_address
    return load_config(config).pluggable_scheduler.server_address


def probe_url(address: str, path: str = DEFAULT_PATH, scheme: str = "https") -> str:
    """The URL that reaches the health server listening on ``address`` from the same host."""
    from scheduler.observability.server import parse_address

    host, port = parse_address(address)
    if port == 0:
        raise UserError(
            f"pluggableScheduler.serverAddress {address!r} asks for any free port: "
            "there is no fixed port to probe"
        )
    if host in (None, "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}{path}"


def probe(url: str, timeout: float) -> str | None:
    """None when ``url`` answers 200, else why not."""
    context = None
    if url.startswith("https:"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as reply:
            status: int = reply.status
    except urllib.error.HTTPError as error:
        return f"{url}: HTTP {error.code}: {error.read(2000).decode(errors='replace').strip()}"
    except OSError as error:
        return f"{url}: {getattr(error, 'reason', None) or error}"
    return None if status == 200 else f"{url}: HTTP {status}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scheduler.daemon.healthcheck",
        description="Exit 0 when the daemon's health server answers 200 at the address "
        "of its config (pluggableScheduler.serverAddress).",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the daemon's config file (default: the --config of process --pid)",
    )
    parser.add_argument(
        "--pid", type=int, default=1, help="the daemon's process (default: 1, the container's)"
    )
    parser.add_argument("--path", default=DEFAULT_PATH, help="what to ask for (default: /livez)")
    parser.add_argument(
        "--plain-http",
        action="store_true",
        help="with --config: the daemon serves plain HTTP (run --plain-http)",
    )
    parser.add_argument(
        "--bind-address", metavar="IP", help="with --config: the daemon's --bind-address"
    )
    parser.add_argument(
        "--secure-port", metavar="PORT", type=int, help="with --config: the daemon's --secure-port"
    )
    parser.add_argument("--timeout", type=float, default=4.0, help="seconds (default: 4)")
    args = parser.parse_args(argv)
    try:
        if args.config is not None:
            config: Path | None = Path(args.config)
            plain, bind_address, secure_port = args.plain_http, args.bind_address, args.secure_port
        else:
            try:
                command_line = process_command_line(args.pid)
            except OSError as error:
                raise UserError(
                    f"cannot read the command line of process {args.pid}: "
                    f"{error.strerror or error}; pass --config"
                ) from None
            config = config_path_of(command_line)
            plain, bind_address, secure_port = serving_of(command_line)
        address = server_address(config)
        if not plain:
            address = served_address(address, bind_address, secure_port)
        url = probe_url(address, args.path, "http" if plain else "https")
    except UserError as error:
        print(f"unhealthy: {error.render()}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"unhealthy: {error}", file=sys.stderr)
        return 1
    problem = probe(url, args.timeout)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    print(f"healthy: {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
