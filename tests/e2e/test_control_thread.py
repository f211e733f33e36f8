"""End to end: a hook that never returns cannot take health, the lease or SIGTERM with it.

A real ``pluggable-scheduler run`` process (the CLI's own wiring, signal
handling included; only the plugin catalog has the test plugins added), whose
Filter blocks for good on one pod, by sleeping or by spinning in pure Python.
"""

from __future__ import annotations

import asyncio
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from scheduler.daemon.control import EXIT_LOST_LEASE, EXIT_STUCK
from scheduler.kube.leaderelection import micro_time
from tests.e2e.conftest import Cluster, scheduler_config, wait_until
from tests.e2e.processes import PLAIN, free_port, start_run

ROOT = Path(__file__).resolve().parents[2]


GRACE = 4.0


def renew_time(lease: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(lease["spec"]["renewTime"]).replace("Z", "+00:00"))


@pytest.mark.parametrize("how", ["sleep", "spin"])
async def test_a_filter_that_never_returns_leaves_health_lease_and_sigterm_working(
    cluster: Cluster, tmp_path: Path, how: str
) -> None:
    await cluster.create_node("n1")
    port = free_port()
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"filter": {"enabled": [{"name": "BlockingFilter"}]}},
    }
    config = scheduler_config(
        [profile],
        leader_elect=True,
        namespace=cluster.namespace,
        lease="control-lease",
        pluggableScheduler={
            "serverAddress": f"127.0.0.1:{port}",
            "shutdownGracePeriod": f"{GRACE}s",
        },
    )
    log_file = tmp_path / "daemon.log"
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/control-lease"
    base = f"http://127.0.0.1:{port}"
    timeout = aiohttp.ClientTimeout(total=1.0)
    proc = await start_run(cluster, config, tmp_path, "daemon", args=PLAIN)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as http:
            await cluster.create_pod("fine")
            await cluster.wait_bound(["fine"], within=30)
            # The scheduling loop is held from here on.
            await cluster.create_pod("blocked", labels={"block": how})
            await asyncio.sleep(1.0)  # it reached the Filter
            first = renew_time(await cluster.client.get(lease_path))
            # Three lease durations (2 s each) with the loop held.
            until = time.monotonic() + 6.0
            slowest = 0.0
            while time.monotonic() < until:
                for path in ("/healthz", "/metrics"):
                    started = time.monotonic()
                    async with http.get(base + path) as response:
                        await response.read()
                        assert response.status == 200, path
                    slowest = max(slowest, time.monotonic() - started)
                await asyncio.sleep(0.2)
            assert slowest < 1.0
            lease = await cluster.client.get(lease_path)
            assert renew_time(lease) > first, "the lease was not renewed"
            assert str(lease["spec"]["holderIdentity"]).endswith(f"_{proc.pid}")
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), GRACE + 5)
            took = time.monotonic() - started
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    output = log_file.read_text()
    assert code == EXIT_STUCK, output[-3000:]
    assert took < GRACE + 1.5, took
    assert "did not stop within the grace period" in output
    # Nothing was released: a stuck leader must let the lease expire.
    assert (await cluster.client.get(lease_path))["spec"]["holderIdentity"]


async def test_sigterm_stops_a_healthy_run_process_cleanly_and_releases_the_lease(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The ordinary stop, through the control thread: exit 0, lease handed over at once."""
    await cluster.create_node("n1")
    port = free_port()
    profile = {"schedulerName": cluster.scheduler_name}
    config = scheduler_config(
        [profile],
        leader_elect=True,
        namespace=cluster.namespace,
        lease="control-lease",
        pluggableScheduler={"serverAddress": f"127.0.0.1:{port}"},
    )
    log_file = tmp_path / "daemon.log"
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/control-lease"
    proc = await start_run(cluster, config, tmp_path, "daemon", args=PLAIN)
    try:
        await cluster.create_pod("p1")
        await cluster.wait_bound(["p1"], within=30)
        async with aiohttp.ClientSession() as http:

            async def live() -> bool:
                async with http.get(f"http://127.0.0.1:{port}/livez?verbose") as response:
                    body = await response.text()
                    return response.status == 200 and "[+]scheduling-loop ok" in body

            await wait_until(live, message="/livez with the scheduling-loop check")
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 20)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    output = log_file.read_text()
    assert code == 0, output[-3000:]
    assert (await cluster.client.get(lease_path))["spec"].get("holderIdentity", "") == ""


async def test_a_held_leader_that_loses_its_lease_exits_with_the_lost_lease_code(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Lost while held: nothing more is written to the lease, the process exits 1 in time."""
    await cluster.create_node("n1")
    port = free_port()
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"filter": {"enabled": [{"name": "BlockingFilter"}]}},
    }
    config = scheduler_config(
        [profile],
        leader_elect=True,
        namespace=cluster.namespace,
        lease="control-lease",
        pluggableScheduler={
            "serverAddress": f"127.0.0.1:{port}",
            "shutdownGracePeriod": f"{GRACE}s",
        },
    )
    log_file = tmp_path / "daemon.log"
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/control-lease"
    proc = await start_run(cluster, config, tmp_path, "daemon", args=PLAIN)
    try:
        await cluster.create_pod("fine")
        await cluster.wait_bound(["fine"], within=30)
        await cluster.create_pod("blocked", labels={"block": "spin"})
        await asyncio.sleep(1.0)
        lease: dict[str, Any] = await cluster.client.get(lease_path)
        now = micro_time()
        lease["spec"].update(holderIdentity="intruder", renewTime=now, acquireTime=now)
        lease["spec"]["leaseDurationSeconds"] = 60
        await cluster.client.request("PUT", lease_path, body=lease)
        code = await asyncio.wait_for(proc.wait(), GRACE + 10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    output = log_file.read_text()
    assert code == EXIT_LOST_LEASE, output[-3000:]
    assert "lease taken by another holder" in output
    assert (await cluster.client.get(lease_path))["spec"]["holderIdentity"] == "intruder"


async def test_a_held_leader_keeps_its_lease_until_sigterm_then_the_standby_takes_over(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Two replicas: no failover churn while the leader is held, a takeover after SIGTERM.

    The held leader exits 3 without releasing the lease; the standby leads
    once the lease has expired.
    """
    await cluster.create_node("n1")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"filter": {"enabled": [{"name": "BlockingFilter"}]}},
    }
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/control-lease"

    def config() -> dict[str, Any]:
        return scheduler_config(
            [profile],
            leader_elect=True,
            namespace=cluster.namespace,
            lease="control-lease",
            pluggableScheduler={
                "serverAddress": f"127.0.0.1:{free_port()}",
                "shutdownGracePeriod": f"{GRACE}s",
            },
        )

    async def holder() -> str:
        return str((await cluster.client.get(lease_path))["spec"].get("holderIdentity") or "")

    procs = []
    try:
        leader = await start_run(cluster, config(), tmp_path, "leader", args=PLAIN)
        procs.append(leader)
        await cluster.create_pod("fine")
        await cluster.wait_bound(["fine"], within=30)
        standby = await start_run(cluster, config(), tmp_path, "standby", args=PLAIN)
        procs.append(standby)
        await cluster.create_pod("blocked", labels={"block": "spin"})
        await asyncio.sleep(1.0)
        assert (await holder()).endswith(f"_{leader.pid}")
        first = renew_time(await cluster.client.get(lease_path))
        await asyncio.sleep(5.0)  # 2.5 lease durations with the leader held
        assert (await holder()).endswith(f"_{leader.pid}")
        assert renew_time(await cluster.client.get(lease_path)) > first
        leader.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(leader.wait(), GRACE + 5)
        assert code == EXIT_STUCK, (tmp_path / "leader.log").read_text()[-3000:]

        async def standby_leads() -> bool:
            return (await holder()).endswith(f"_{standby.pid}")

        await wait_until(standby_leads, within=10, message="the standby to take the lease")
        assert standby.returncode is None
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    await cluster.assert_bound_exactly_once(["fine"])
