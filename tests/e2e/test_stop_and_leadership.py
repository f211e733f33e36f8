"""A daemon can always be stopped, and a leader that lost its lease binds nothing more.

The first tests run ``pluggable-scheduler run`` as a real process against a
loopback "API server" that accepts connections and never answers: a SIGTERM
(or SIGINT) must end it promptly, with the graceful-stop exit code, whatever
phase it is stuck in (informer sync, campaigning for the lease).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import scheduler_config, wait_until

#: How long a stop may take: the daemon's bounded shutdown steps plus interpreter exit.
STOP_WITHIN = 5.0


class SilentApiServer:
    """A loopback TCP server that accepts and reads requests and never answers."""

    def __init__(self) -> None:
        self.connections: list[asyncio.StreamWriter] = []
        self.requests = 0
        self.port = 0

    async def _swallow(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections.append(writer)
        with contextlib.suppress(Exception):
            while chunk := await reader.read(65536):
                self.requests += chunk.count(b"HTTP/1.1\r\n")


@contextlib.asynccontextmanager
async def silent_api_server() -> AsyncIterator[SilentApiServer]:
    silent = SilentApiServer()
    server = await asyncio.start_server(silent._swallow, "127.0.0.1", 0)
    silent.port = server.sockets[0].getsockname()[1]
    try:
        yield silent
    finally:
        server.close()
        for writer in silent.connections:
            writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)


def write_kubeconfig(path: Path, port: int) -> None:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )


PHASES: dict[str, dict[str, Any]] = {
    # No leader election: stuck in the first informer lists.
    "informer-sync": {"leader_elect": False},
    # Leader election, warm standby: stuck syncing before campaigning.
    "sync-before-campaign": {"leader_elect": True},
    # delayCacheUntilActive: stuck reading the Lease, waiting to lead.
    "waiting-to-lead": {"leader_elect": True, "delayCacheUntilActive": True},
}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("phase", list(PHASES))
async def test_signal_stops_a_daemon_whose_api_never_answers(
    tmp_path: Path, phase: str, sig: signal.Signals
) -> None:
    async with silent_api_server() as api:
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, api.port)
        config = scheduler_config(
            [{"schedulerName": "silent"}], namespace="kube-system", **PHASES[phase]
        )
        config_file = tmp_path / "config.json"
        config_file.write_text(json.dumps(config))
        log_file = tmp_path / "daemon.log"
        with log_file.open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "scheduler",
                "run",
                "--config",
                str(config_file),
                "--kubeconfig",
                str(kubeconfig),
                stdout=log,
                stderr=log,
            )
            try:
                # Until it waits on the API: its first requests went unanswered.
                await wait_until(
                    lambda: api.requests > 0 or proc.returncode is not None,
                    within=20,
                    message="the daemon's first API request",
                )
                await asyncio.sleep(0.5)
                assert proc.returncode is None, log_file.read_text()[-3000:]
                sent = time.monotonic()
                os.kill(proc.pid, sig)
                try:
                    code = await asyncio.wait_for(proc.wait(), STOP_WITHIN)
                except TimeoutError:
                    pytest.fail(
                        f"still running {STOP_WITHIN}s after {sig.name}:\n"
                        + log_file.read_text()[-3000:]
                    )
                took = time.monotonic() - sent
            finally:
                if proc.returncode is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    await proc.wait()
    assert code == 0, log_file.read_text()[-3000:]
    assert took < STOP_WITHIN
