"""The queue and preemption metrics move in a real daemon run, where kube-scheduler's do.

docs/observability.md documents ``scheduler_queue_incoming_pods_total``,
``scheduler_preemption_attempts_total`` and ``scheduler_preemption_victims``;
this checks each against what the daemon actually did to the pods.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Cluster, StartDaemon, scheduler_config, wait_until

INCOMING = "scheduler_queue_incoming_pods_total"


def incoming(running: Any, queue: str, event: str) -> float:
    return running.daemon.metrics.sample(INCOMING, {"queue": queue, "event": event}) or 0.0


def all_incoming(running: Any) -> dict[tuple[str, str], float]:
    """Every (queue, event) sample of the counter."""
    out = {}
    for family in running.daemon.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == INCOMING:
                out[(sample.labels["queue"], sample.labels["event"])] = sample.value
    return out


async def test_queue_incoming_counts_each_move_with_kubes_event_label(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("small", cpu="1")
    running = await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    metrics = running.daemon.metrics
    await cluster.create_pod("fits", cpu="500m")
    await cluster.create_pod("big", cpu="2")
    await cluster.wait_event("big", "FailedScheduling")
    await cluster.wait_bound(["fits"])
    assert incoming(running, "active", "UnschedulablePodAdd") == 2
    await wait_until(
        lambda: incoming(running, "unschedulable", "ScheduleAttemptFailure") == 1,
        message="the rejected pod counted into the unschedulable pool",
    )

    # A node big enough arrives (its create and its status are two events):
    # each rejection parks the pod, and each node event that may help moves it.
    await cluster.create_node("big", cpu="4")
    await cluster.wait_bound(["big"])
    counts = all_incoming(running)
    rejections = metrics.sample(
        "scheduler_schedule_attempts_total",
        {"result": "unschedulable", "profile": cluster.scheduler_name},
    )
    assert rejections is not None and rejections >= 1
    assert counts[("unschedulable", "ScheduleAttemptFailure")] == rejections
    moved_by_nodes = {k: v for k, v in counts.items() if k[1].startswith("Node")}
    assert ("active", "NodeAdd") in moved_by_nodes or ("backoff", "NodeAdd") in moved_by_nodes
    assert all(queue in ("active", "backoff") for queue, _ in moved_by_nodes)
    assert sum(moved_by_nodes.values()) == rejections  # each parked pod left once
    # Nothing else entered a queue: bound pods' own updates do not count, and
    # a pod taken early from backoff counts under kube's PopFromBackoffQ.
    others = (
        set(counts)
        - set(moved_by_nodes)
        - {
            ("active", "UnschedulablePodAdd"),
            ("unschedulable", "ScheduleAttemptFailure"),
            ("active", "PopFromBackoffQ"),
            ("active", "BackoffComplete"),
        }
    )
    assert not others, counts


async def test_preemption_counts_attempts_and_victims(
    cluster: Cluster, start_daemon: StartDaemon, priorities: dict[str, str]
) -> None:
    await cluster.create_node("n1", cpu="1")
    running = await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    metrics = running.daemon.metrics
    await cluster.create_pod("low", cpu="800m", priorityClassName=priorities["low"])
    await cluster.wait_bound(["low"])
    assert metrics.sample("scheduler_preemption_attempts_total") == 0

    await cluster.create_pod("high", cpu="800m", priorityClassName=priorities["high"])

    async def nominated() -> bool:
        status = (await cluster.pod("high")).get("status") or {}
        return status.get("nominatedNodeName") == cluster.node_name("n1")

    await wait_until(nominated, message="the high-priority pod nominated after preemption")
    assert (metrics.sample("scheduler_preemption_attempts_total") or 0) >= 1
    assert metrics.sample("scheduler_preemption_victims_count") == 1
    assert metrics.sample("scheduler_preemption_victims_sum") == 1
