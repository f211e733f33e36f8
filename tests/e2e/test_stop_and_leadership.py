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

from scheduler.kube.leaderelection import micro_time
from scheduler.simulation.emulator import EmulatorServer
from tests.e2e.conftest import Cluster, StartDaemon, scheduler_config, wait_until

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


def lease_path(cluster: Cluster) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/test-lease"


async def take_lease(cluster: Cluster) -> None:
    """Another party writes itself onto the Lease (as a partitioned leader would see it)."""
    lease: dict[str, Any] = await cluster.client.get(lease_path(cluster))
    now = micro_time()
    lease["spec"].update(
        holderIdentity="intruder", renewTime=now, acquireTime=now, leaseDurationSeconds=60
    )
    await cluster.client.request("PUT", lease_path(cluster), body=lease)


def fail_renewals(cluster: Cluster) -> None:
    """Every lease write fails from now on: the leader cannot renew past renewDeadline."""
    cluster.emulator.faults.fail(500, verb="update", resource="leases", count=None)


async def _leader_with_pods_held_in_prebind(
    cluster: Cluster, start_daemon: StartDaemon
) -> tuple[Any, Any, list[str]]:
    """A leading daemon whose four pods are decided and held in PreBind.

    Each pod's binding would follow the release of its hold, so a test can
    change the lease first and then see what the old leader still sends.
    """
    await cluster.create_node("n1")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"preBind": {"enabled": [{"name": "ControlledPreBind"}]}},
    }
    config = scheduler_config(
        [profile], leader_elect=True, namespace=cluster.namespace, lease="test-lease"
    )
    leader = await start_daemon(config, identity="replica-a")
    plugin = leader.plugin(cluster.scheduler_name, "ControlledPreBind")
    names = [f"p-{i}" for i in range(4)]
    plugin.hold.update({name: asyncio.Event() for name in names})
    await asyncio.gather(*(cluster.create_pod(name) for name in names))
    await wait_until(
        lambda: all(plugin.entered.get(n) for n in names), message="every pod in PreBind"
    )
    return leader, plugin, names


@pytest.mark.parametrize("loss", ["another-holder", "renew-deadline"])
async def test_leader_that_lost_the_lease_sends_no_binding(
    cluster: Cluster, emulator: EmulatorServer, start_daemon: StartDaemon, loss: str
) -> None:
    leader, plugin, _ = await _leader_with_pods_held_in_prebind(cluster, start_daemon)
    mark = len(emulator.request_log)
    if loss == "another-holder":
        await take_lease(cluster)
    else:
        fail_renewals(cluster)
    await wait_until(
        lambda: not leader.daemon.scheduler.may_bind(),
        within=5,
        message="the leader to know it lost the lease",
    )
    knew_at = len(emulator.request_log)
    # Right after it knew: without the gate these bindings go out (before the
    # fix a leader that saw another holder kept acting until renewDeadline).
    for gate in plugin.hold.values():
        gate.set()
    code = await asyncio.wait_for(asyncio.shield(leader.task), 10)
    assert code == 1
    log = list(emulator.request_log)
    bindings_after = [
        (i, r.name, r.status)
        for i, r in enumerate(log)
        if i >= knew_at and r.verb == "create" and r.resource == "pods/binding"
    ]
    assert bindings_after == []
    assert all(not node for node in (await cluster.placements()).values())
    # Nor did it write the lease again once another holder had it.
    if loss == "another-holder":
        lease_writes = [r for r in log[mark:] if r.resource == "leases" and r.verb == "update"]
        # The one accepted write is the intruder's own.
        assert [r.status for r in lease_writes if r.status == 200] == [200], lease_writes


async def test_leader_whose_loop_stalled_past_renew_deadline_sends_no_binding(
    cluster: Cluster, emulator: EmulatorServer, start_daemon: StartDaemon
) -> None:
    """A plugin blocks the event loop longer than renewDeadline: on resuming, the
    binding tasks run before the elector notices; none may bind until it renewed."""
    _, plugin, names = await _leader_with_pods_held_in_prebind(cluster, start_daemon)
    stalled: list[str] = []

    async def stall(pod: Any) -> None:
        if not stalled:
            stalled.append(pod.name)
            time.sleep(2.0)  # noqa: ASYNC251 - the stall under test: renewDeadline is 1.5s

    plugin.before_return = stall
    mark = len(emulator.request_log)
    for gate in plugin.hold.values():
        gate.set()
    await wait_until(lambda: bool(stalled), message="the stall")
    # The lease stayed ours (no standby): once renewed, the pods bind after all.
    await cluster.wait_bound(names, within=15)
    await cluster.assert_bound_exactly_once(names)
    after = list(emulator.request_log)[mark:]
    renewed = next(i for i, r in enumerate(after) if r.resource == "leases" and r.status == 200)
    early = [r.name for r in after[:renewed] if r.resource == "pods/binding"]
    assert early == [], "bound on a lease not renewed for longer than renewDeadline"
