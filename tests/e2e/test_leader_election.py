"""Two daemons, one Lease: only the leader binds, the standby takes over, nothing twice.

Backend-agnostic; on the emulator the request log also proves every pod got
exactly one accepted binding.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.kube.leaderelection import micro_time
from tests.e2e.conftest import Cluster, RunningDaemon, StartDaemon, scheduler_config, wait_until

LEASE_DURATION = 2.0
RETRY_PERIOD = 0.3
# A candidate retries every retry_period * [1, 2.2): allow one full retry after expiry.
TAKEOVER_SLACK = RETRY_PERIOD * 2.2 + 0.5


def lease_path(cluster: Cluster) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/test-lease"


def lease_config(cluster: Cluster, **extra: Any) -> dict[str, Any]:
    """One profile for the cluster's scheduler name, leader election on test-lease."""
    return scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        leader_elect=True,
        namespace=cluster.namespace,
        lease="test-lease",
        **extra,
    )


async def holder(cluster: Cluster) -> str:
    lease = await cluster.client.get(lease_path(cluster))
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def start_pair(
    cluster: Cluster, start_daemon: StartDaemon
) -> tuple[RunningDaemon, RunningDaemon]:
    config = lease_config(cluster)
    first = await start_daemon(config, identity="replica-a")
    second = await start_daemon(config, identity="replica-b", wait_leading=False)
    await wait_until(second.daemon.synced, message="the standby's informers to sync")
    return first, second


async def create_and_bind(cluster: Cluster, prefix: str, n: int) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(n)]
    await asyncio.gather(*(cluster.create_pod(name) for name in names))
    await cluster.wait_bound(names)
    return names


async def test_only_the_leader_binds_and_graceful_stop_hands_over(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("n1")
    leader, standby = await start_pair(cluster, start_daemon)
    assert await holder(cluster) == "replica-a"
    first = await create_and_bind(cluster, "first", 6)
    assert leader.daemon.scheduler.scheduled == 6
    assert standby.daemon.scheduler.scheduled == 0
    assert not standby.daemon.leading.is_set()
    # The standby's warm cache saw every binding of the leader.
    await wait_until(
        lambda: all(standby.daemon.cache.table.has_pod(f"{cluster.namespace}/{n}") for n in first),
        message="the standby to see the leader's pods",
    )

    loop = asyncio.get_running_loop()
    stopped_at = loop.time()
    assert await leader.stop() == 0
    # Released on a graceful stop: the standby does not wait for expiry.
    await asyncio.wait_for(standby.daemon.leading.wait(), LEASE_DURATION)
    assert loop.time() - stopped_at < LEASE_DURATION
    assert await holder(cluster) == "replica-b"

    second = await create_and_bind(cluster, "second", 6)
    assert standby.daemon.scheduler.scheduled == 6
    await cluster.assert_bound_exactly_once(first + second)


async def test_abrupt_leader_death_standby_takes_over_after_expiry(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("n1")
    leader, standby = await start_pair(cluster, start_daemon)
    first = await create_and_bind(cluster, "first", 4)
    loop = asyncio.get_running_loop()
    killed_at = loop.time()
    await leader.kill()
    assert await holder(cluster) == "replica-a"  # not released: it "crashed"
    # Pods created while nobody leads wait in the standby's queue.
    gap = [f"gap-{i}" for i in range(4)]
    await asyncio.gather(*(cluster.create_pod(name) for name in gap))
    await asyncio.wait_for(standby.daemon.leading.wait(), LEASE_DURATION + TAKEOVER_SLACK + 1)
    took = loop.time() - killed_at
    assert took < LEASE_DURATION + TAKEOVER_SLACK
    await cluster.wait_bound(gap)
    assert standby.daemon.scheduler.scheduled == len(gap)
    await cluster.assert_bound_exactly_once(first + gap)


async def test_leader_that_loses_its_lease_exits_non_zero(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("n1")
    config = lease_config(cluster)
    leader = await start_daemon(config, identity="replica-a")
    await create_and_bind(cluster, "p", 2)
    # Another party takes the lease over (as a partitioned leader would see it).
    lease: dict[str, Any] = await cluster.client.get(lease_path(cluster))
    now = micro_time()
    lease["spec"].update(holderIdentity="intruder", renewTime=now, acquireTime=now)
    lease["spec"]["leaseDurationSeconds"] = 60
    await cluster.client.request("PUT", lease_path(cluster), body=lease)
    code = await asyncio.wait_for(asyncio.shield(leader.task), 10)
    assert code == 1
    assert await holder(cluster) == "intruder"  # a leader that lost the lease never writes it
    # Nothing binds any more.
    await cluster.create_pod("after")
    await asyncio.sleep(0.5)
    assert (await cluster.placements())["after"] == ""


async def test_delay_cache_until_active_keeps_the_standby_cold_until_it_leads(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("n1")
    config = lease_config(cluster, delayCacheUntilActive=True)
    leader = await start_daemon(config, identity="replica-a")
    standby = await start_daemon(config, identity="replica-b", wait_leading=False)
    await create_and_bind(cluster, "warm", 2)
    assert leader.daemon.synced()
    assert standby.daemon.pod_informer.lists == 0, "a delayed standby must not list"
    assert not standby.daemon.synced()
    assert await leader.stop() == 0
    await asyncio.wait_for(standby.daemon.leading.wait(), LEASE_DURATION + TAKEOVER_SLACK)
    assert standby.daemon.synced()
    await create_and_bind(cluster, "after", 2)
    assert standby.daemon.scheduler.scheduled == 2
