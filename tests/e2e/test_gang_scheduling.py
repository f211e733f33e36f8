"""GangScheduling end to end on both backends: kube 1.36's Workload API, two gangs.

A Workload with two PodGroups (gang policies) and their pods (``spec.schedulingGroup``):
gang ``fits`` (4 x 500m, minCount 4) can be placed whole; gang ``too-big``
(3 x 3 CPU, minCount 3) cannot on two 4-CPU nodes (two members fit, never the
third). Watched throughout: ``fits`` ends bound whole, ``too-big`` is never bound
at all, not even for a moment, and every pod is bound at most once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.plugins.gangscheduling import GangScheduling
from scheduler.testing.harness import build_catalog
from tests.e2e.conftest import Cluster, StartDaemon, pod_body, scheduler_config, wait_until

API = "/apis/scheduling.k8s.io/v1alpha2"
CATALOG = build_catalog({"GangScheduling": GangScheduling})
GATES = {"GenericWorkload": True, "GangScheduling": True}


def workload() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "train"},
        "spec": {
            "podGroupTemplates": [
                {"name": "fits", "schedulingPolicy": {"gang": {"minCount": 4}}},
                {"name": "too-big", "schedulingPolicy": {"gang": {"minCount": 3}}},
            ]
        },
    }


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": "train", "podGroupTemplateName": name}
            },
            "schedulingPolicy": {"gang": {"minCount": min_count}},
        },
    }


async def test_the_gang_that_fits_is_bound_whole_and_the_other_not_at_all(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    ns = cluster.namespace
    for short in ("a", "b"):
        await cluster.create_node(short, cpu="4", memory="8Gi")
    await cluster.client.request("POST", f"{API}/namespaces/{ns}/workloads", body=workload())
    for name, count in (("fits", 4), ("too-big", 3)):
        await cluster.client.request(
            "POST", f"{API}/namespaces/{ns}/podgroups", body=pod_group(name, count)
        )
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        pluggableScheduler={"serverAddress": "127.0.0.1:0", "featureGates": GATES},
    )
    running = await start_daemon(config, catalog=CATALOG)
    assert "GangScheduling" in running.daemon.profiles[cluster.scheduler_name].framework.plugins

    big = [f"big-{i}" for i in range(3)]
    small = [f"small-{i}" for i in range(4)]
    # The big gang first: two of its members take room before the third fails.
    for name in big:
        body = pod_body(name, cluster.scheduler_name, cpu="3", memory="64Mi")
        body["spec"]["schedulingGroup"] = {"podGroupName": "too-big"}
        await cluster.create_raw_pod(body)
    for name in small:
        body = pod_body(name, cluster.scheduler_name, cpu="500m", memory="64Mi")
        body["spec"]["schedulingGroup"] = {"podGroupName": "fits"}
        await cluster.create_raw_pod(body)

    seen_big_bound: set[str] = set()
    stop = asyncio.Event()

    async def watch_big() -> None:
        while not stop.is_set():
            placed = await cluster.placements()
            seen_big_bound.update(n for n in big if placed.get(n))
            await asyncio.sleep(0.05)

    watcher = asyncio.create_task(watch_big())
    try:
        await cluster.wait_bound(small, within=60)
        # Each big member has been tried and refused at least once since.
        for name in big:
            await cluster.wait_event(name, "FailedScheduling", within=30)
        # And nothing of the big gang stays reserved: no member waits at Permit.
        plugin = running.plugin(cluster.scheduler_name, "GangScheduling")
        await wait_until(
            lambda: (
                not any(
                    w.pod.name in big for w in plugin.handle.iterate_waiting_pods() if not w.done
                )
            ),
            within=30,
            message="no member of the big gang waiting at Permit",
        )
        await asyncio.sleep(1.0)  # a few more retries of the big gang, still watched
    finally:
        stop.set()
        await watcher
    placed = await cluster.placements()
    assert seen_big_bound == set() and not any(placed.get(n) for n in big), placed
    await cluster.assert_bound_exactly_once(small)
    if cluster.emulator is not None:
        counts = cluster.successful_bindings()
        assert all(counts.get(n, 0) == 0 for n in big), counts

    # kube-scheduler's PodGroupScheduled condition on both PodGroups.
    async def conditions() -> dict[str, str]:
        found = {}
        for name in ("fits", "too-big"):
            obj = await cluster.client.request("GET", f"{API}/namespaces/{ns}/podgroups/{name}")
            for c in (obj.get("status") or {}).get("conditions") or []:
                if c["type"] == "PodGroupScheduled":
                    found[name] = f"{c['status']}/{c['reason']}"
        return found

    async def both() -> bool:
        return len(await conditions()) == 2

    await wait_until(both, within=10, message="PodGroupScheduled on both PodGroups")
    assert await conditions() == {"fits": "True/Scheduled", "too-big": "False/Unschedulable"}
    notes = [
        str(e.get("note") or e.get("message") or "")
        for name in big
        for e in await cluster.events_for(name, "FailedScheduling")
    ]
    assert any("Insufficient cpu" in n for n in notes), notes
    assert any(n.startswith("pod group is unschedulable, waiting for minCount") for n in notes)
