"""CapacityScheduling in the real daemon, on the emulated API server over HTTP.

What unit tests of single hooks cannot show: pods in flight (assumed, their
binding still under way) hold their quota, a failed binding gives it back,
and ``status.used`` follows the pods that are bound, deleted or fail.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from scheduler.testing.objects import make_node, make_pod

from scheduler_plugin_capacityscheduling import CapacityScheduling

API = "scheduling.x-k8s.io/v1alpha1"
PROFILE = "pluggable-scheduler"
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 1,
    "profiles": [
        {
            "schedulerName": PROFILE,
            "plugins": {
                "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
                "postFilter": {
                    "enabled": [{"name": "CapacityScheduling"}],
                    "disabled": [{"name": "*"}],
                },
            },
        }
    ],
}


def quota(namespace: str, cpu: str) -> dict[str, Any]:
    limits = {"cpu": cpu, "memory": "8Gi"}
    return {
        "apiVersion": API,
        "kind": "ElasticQuota",
        "metadata": {"name": "quota", "namespace": namespace},
        "spec": {"min": dict(limits), "max": dict(limits)},
    }


def pod(name: str) -> dict[str, Any]:
    return dict(make_pod(name, namespace="team", cpu="1", memory="1Gi"))


async def until(check: Callable[[], bool | Awaitable[bool]], what: str, within: float = 15) -> None:
    deadline = time.monotonic() + within
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.02)


async def test_pods_in_flight_hold_the_quota_and_a_failed_binding_gives_it_back(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    cluster = await emulated_cluster(
        [make_node("n1", cpu="8", memory="32Gi"), make_node("n2", cpu="8", memory="32Gi")]
    )
    cluster.create(quota("team", "2"))
    faults = cluster.server.faults
    # Bindings take a second: p-0 and p-1 stay assumed, not bound, meanwhile.
    faults.delay(1.0, verb="create", path=r"/pods/p-[0-3]/binding$", count=2)
    # p-1's binding then fails: its charge must be released for another pod.
    failed = faults.fail(500, verb="create", path=r"/pods/p-1/binding$", count=1)
    sched = await running_scheduler(cluster, config=CONFIG)
    plugin = sched.plugin("CapacityScheduling")
    assert isinstance(plugin, CapacityScheduling)

    peaks: list[int] = []

    def used_cpu() -> int:
        info = plugin.book.live.get("team")
        cpu = info.used.get("cpu", 0) if info is not None else 0
        peaks.append(cpu)
        return cpu

    cluster.create(pod("p-0"), pod("p-1"))
    await until(lambda: len(plugin.book.in_flight()) == 2, "two pods in flight")
    assert sched.placements() == {"team/p-0": None, "team/p-1": None}
    cluster.create(pod("p-2"), pod("p-3"))
    message = await sched.wait_for_failure("team/p-2")
    assert "Pod team/p-2 is rejected in PreFilter because ElasticQuota team is more than Max" in (
        message
    )
    assert used_cpu() == 2000  # the two in flight, not yet bound

    # p-0 binds, p-1's binding fails and is released; one of the waiting pods
    # (or p-1 again) takes its place: two bound in the end, never more.
    async def two_bound() -> bool:
        used_cpu()
        return sum(1 for node in sched.placements().values() if node) == 2

    await until(two_bound, "two pods bound", within=20)
    await sched.settle()
    assert failed.hits == 1
    assert max(peaks) == 2000
    assert sum(1 for node in sched.placements().values() if node) == 2

    def status_cpu() -> str | None:
        obj = cluster.get(API, "ElasticQuota", "quota", "team") or {}
        return ((obj.get("status") or {}).get("used") or {}).get("cpu")

    await until(lambda: status_cpu() == "2", "status.used to report the two bound pods")
    obj = cluster.get(API, "ElasticQuota", "quota", "team")
    assert obj["status"]["used"] == {"cpu": "2", "memory": str(2 * 2**30)}

    # A bound pod is deleted: its quota goes to a pending one, status follows.
    bound = sorted(k for k, node in sched.placements().items() if node)
    cluster.delete("v1", "Pod", bound[0].split("/")[1], "team")
    await until(two_bound, "a pending pod to take the freed quota")
    await sched.settle()
    await until(lambda: status_cpu() == "2", "status.used after the replacement bound")
    assert sum(1 for node in sched.placements().values() if node) == 2
    # Both bound pods go: the last pending one binds, status reports it alone.
    last = sorted(k for k, node in sched.placements().items() if not node)
    assert len(last) == 1
    for name in [k.split("/")[1] for k, node in sched.placements().items() if node]:
        cluster.delete("v1", "Pod", name, "team")
    await sched.wait_for_placements(last)
    await until(lambda: status_cpu() == "1", "status.used with the last pod bound")
    cluster.delete("v1", "Pod", last[0].split("/")[1], "team")
    await until(lambda: status_cpu() == "0", "status.used once every pod is gone")
    assert max(peaks) == 2000


async def test_a_binding_whose_answer_was_lost_keeps_its_charge(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    """The API bound the pod but the scheduler saw an error: the pod stays charged
    (the informer shows it bound), so no other pod takes the quota twice."""
    cluster = await emulated_cluster([make_node("n1", cpu="8", memory="32Gi")])
    cluster.create(quota("team", "1"))
    lost = cluster.server.faults.fail(
        500, verb="create", path=r"/pods/p-0/binding$", count=1, after=True
    )
    sched = await running_scheduler(cluster, config=CONFIG)
    plugin = sched.plugin("CapacityScheduling")
    cluster.create(pod("p-0"))
    await until(lambda: lost.hits == 1, "p-0's binding answer to be lost")
    cluster.create(pod("p-1"))
    await sched.settle()
    await asyncio.sleep(1.5)  # a retry of p-1 after its backoff must not bind it either
    await sched.settle()
    assert sched.placements() == {"team/p-0": "n1", "team/p-1": None}
    assert plugin.book.live["team"].used["cpu"] == 1000
    message = sched.failure("team/p-1") or ""
    assert "is more than Max" in message


def tenant_quota(namespace: str) -> dict[str, Any]:
    """min 1 cpu, max 2: two such quotas on a 2-cpu node lend each other their min."""
    return {
        "apiVersion": API,
        "kind": "ElasticQuota",
        "metadata": {"name": "quota", "namespace": namespace},
        "spec": {"min": {"cpu": "1", "memory": "8Gi"}, "max": {"cpu": "2", "memory": "8Gi"}},
    }


async def test_a_reclaiming_preemptor_keeps_its_room_until_its_nomination_is_written(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    """The preemptor's PodScheduled condition comes back from the API before its
    nominatedNodeName does. The nomination held in memory must survive that update
    (kube's UpdateNominatedPod): otherwise the borrowing quota's pod rejected over
    max takes the room the victim frees, and the preemptor evicts a second pod."""
    cluster = await emulated_cluster([make_node("n1", cpu="2", memory="32Gi")])
    cluster.create(tenant_quota("lender"), tenant_quota("owner"))
    sched = await running_scheduler(cluster, config=CONFIG)
    lender = [dict(make_pod(f"l{i}", namespace="lender", cpu="1", memory="64Mi")) for i in range(3)]
    for obj in lender:  # no kubelet: a victim goes at once, as the e2e test's do
        obj["spec"] = {**obj["spec"], "terminationGracePeriodSeconds": 0}
    cluster.create(lender[0], lender[1])
    await sched.wait_for_placements(["lender/l0", "lender/l1"])  # borrowing owner's min
    cluster.create(lender[2])
    assert "more than Max" in await sched.wait_for_failure("lender/l2")

    # The preemptor's first status patch is its nominatedNodeName: it lands late.
    late = cluster.server.faults.delay(3.0, verb="patch", path=r"/pods/o0/status$", count=1)
    cluster.create(dict(make_pod("o0", namespace="owner", cpu="1", memory="64Mi")))
    await sched.wait_for_placements(["owner/o0"], within=20)
    await sched.settle()
    assert late.hits == 1
    placements = sched.placements()
    lender_left = sorted(k for k in placements if k.startswith("lender/"))
    assert len(lender_left) == 2, placements  # one victim, not two
    assert "lender/l2" in lender_left and placements["lender/l2"] is None, placements
