"""The container image's HEALTHCHECK: probe the running daemon where its config says it listens.

A HEALTHCHECK with a fixed ``http://127.0.0.1:10259/livez`` reports a healthy
scheduler as unhealthy as soon as ``pluggableScheduler.serverAddress`` moves
the health server to another port. This probe instead reads the config the
daemon itself was started with: the ``--config`` of the container's main
process (PID 1, or any process given with ``--pid``), falling back to the
default configuration like ``pluggable-scheduler run`` does without one, and
asks that address's ``/livez``. A wildcard host (``0.0.0.0``, ``::``, empty) is
probed on loopback.

``python -m scheduler.daemon.healthcheck`` exits 0 when the daemon
answers 200 and 1 otherwise, with one line saying why (Docker keeps the last
few in ``docker inspect``'s ``State.Health.Log``).
"""

from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from scheduler.errors import UserError

#: What the probe asks for: liveness, as the Deployment's livenessProbe does.
DEFAULT_PATH = "/livez"


def config_path_of(command_line: Sequence[str]) -> Path | None:
    """The ``--config`` of a ``pluggable-scheduler run`` command line, if it has one."""
    for index, argument in enumerate(command_line):
        if argument == "--config" and index + 1 < len(command_line):
            return Path(command_line[index + 1])
        if argument.startswith("--config="):
            return Path(argument.removeprefix("--config="))
    return None


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


def probe_url(address: str, path: str = DEFAULT_PATH) -> str:
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
    return f"http://{shown}:{port}{path}"


def probe(url: str, timeout: float) -> str | None:
    """None when ``url`` answers 200, else why not."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
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
    parser.add_argument("--timeout", type=float, default=4.0, help="seconds (default: 4)")
    args = parser.parse_args(argv)
    try:
        if args.config is not None:
            config: Path | None = Path(args.config)
        else:
            try:
                config = config_path_of(process_command_line(args.pid))
            except OSError as error:
                raise UserError(
                    f"cannot read the command line of process {args.pid}: "
                    f"{error.strerror or error}; pass --config"
                ) from None
        url = probe_url(server_address(config), args.path)
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
