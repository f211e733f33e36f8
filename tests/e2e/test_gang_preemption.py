"""GangPreemption end to end: gangs of 8 and 16 preempt lower-priority gangs, whole.

The real daemon, with GangPreemption in place of DefaultPreemption, on both
backends. A cluster of 6 nodes x 4 cpu is filled with three low-priority
gangs of 8 one-cpu pods; then a high-priority gang of 16 arrives (two low
gangs must go, whole), a high-priority gang of 8 (the last low gang goes),
and one more high-priority gang of 8 that nothing can make room for (it
must evict nothing and place nothing).

A watch on the namespace's pods follows every change and checks, at every
observed point, that no pod ever moves or is bound twice; it also plays the
kubelet's part in deletion (a terminating pod is removed once "stopped",
here at once), which a real kube-apiserver without kubelets never does. At
the end of each phase, no gang is partly running and every pod that runs
was bound exactly once (on the emulator also: one accepted Binding each).

Gangs come from Coscheduling's PodGroups (with Coscheduling placing them
all-or-nothing) and, where the backend serves them, the native Workload API's
PodGroups (``spec.schedulingGroup``), placed all-or-nothing by kube's
GangScheduling with its gates (``GenericWorkload``, ``GangScheduling``) on.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from scheduler_plugin_gangpreemption.plugin import MSG_NO_GANG_VICTIMS

from scheduler.kube.apierrors import ApiError
from scheduler.model.gangs import POD_GROUP_LABEL, gang_of
from tests.e2e.conftest import Cluster, StartDaemon, scheduler_config, wait_until

NODES, NODE_CPU = 6, "4"
PHASE_TIMEOUT = 60.0


@dataclass
class Gang:
    name: str
    size: int
    priority: str  # "low" | "high"

    def pods(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.size)]


@dataclass
class PodWatch:
    """Every observed state of the namespace's pods; the kubelet's deletion step."""

    cluster: Cluster
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)  # current, by name
    bound_to: dict[str, str] = field(default_factory=dict)  # uid -> node, first seen
    bindings: dict[str, int] = field(default_factory=dict)  # uid -> times seen going bound
    deleted: set[str] = field(default_factory=set)  # names
    violations: list[str] = field(default_factory=list)
    _finishing: set[str] = field(default_factory=set)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self) -> None:
        path = f"/api/v1/namespaces/{self.cluster.namespace}/pods"
        items, rv = await self.cluster.client.list(path)
        for obj in items:
            self._observe("ADDED", obj)
        while True:
            query = {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "60"}
            with contextlib.suppress(ApiError):
                async with contextlib.aclosing(self.cluster.client.watch(path, query)) as events:
                    async for kind, obj in events:
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        if kind != "BOOKMARK":
                            self._observe(kind, obj)

    def _observe(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        name, uid = meta["name"], meta.get("uid", "")
        node = (obj.get("spec") or {}).get("nodeName") or ""
        before = self.pods.get(name)
        was = ((before or {}).get("spec") or {}).get("nodeName") or ""
        same = before is not None and before["metadata"].get("uid") == uid
        if kind == "DELETED":
            self.pods.pop(name, None)
            self.deleted.add(name)
            return
        if node:
            first = self.bound_to.setdefault(uid, node)
            if first != node:
                self.violations.append(f"{name} moved from {first} to {node}")
            if not (same and was):
                self.bindings[uid] = self.bindings.get(uid, 0) + 1
                if self.bindings[uid] > 1:
                    self.violations.append(f"{name} bound {self.bindings[uid]} times")
        elif same and was:
            self.violations.append(f"{name} lost its node {was}")
        self.pods[name] = obj
        if meta.get("deletionTimestamp") and uid not in self._finishing:
            self._finishing.add(uid)
            task = asyncio.create_task(self._finish(name, uid))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _finish(self, name: str, uid: str) -> None:
        """The kubelet's last step for a terminating pod: delete it for good."""
        path = f"/api/v1/namespaces/{self.cluster.namespace}/pods/{name}"
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        with contextlib.suppress(ApiError):
            await self.cluster.client.request("DELETE", path, body=body)

    def running(self, name: str) -> bool:
        obj = self.pods.get(name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return False
        return bool((obj.get("spec") or {}).get("nodeName"))

    def count_running(self, gang: Gang) -> int:
        return sum(self.running(p) for p in gang.pods())

    def partial(self, gangs: list[Gang]) -> dict[str, int]:
        """Gangs with some but not all members running."""
        counts = {g.name: self.count_running(g) for g in gangs}
        return {g.name: counts[g.name] for g in gangs if 0 < counts[g.name] < g.size}


async def serves(cluster: Cluster, group_version: str, plural: str) -> bool:
    try:
        found = await cluster.client.get(f"/apis/{group_version}")
    except ApiError:
        return False
    return any(r.get("name") == plural for r in (found or {}).get("resources") or ())


async def ensure_podgroup_crd(cluster: Cluster) -> None:
    """Coscheduling's PodGroup CRD (scheduler-plugins' manifest), installed once."""
    if await serves(cluster, "scheduling.x-k8s.io/v1alpha1", "podgroups"):
        return
    from scheduler_plugin_coscheduling import crd_manifest

    crd = yaml.safe_load(crd_manifest())
    with contextlib.suppress(ApiError):  # another test may have created it meanwhile
        await cluster.client.request(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd
        )

    async def established() -> bool:
        return await serves(cluster, "scheduling.x-k8s.io/v1alpha1", "podgroups")

    await wait_until(established, within=30, message="the PodGroup CRD to be served")


def podgroup(api: str, gang: Gang) -> tuple[str, dict[str, Any]]:
    if api == "coscheduling":
        return "/apis/scheduling.x-k8s.io/v1alpha1", {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": gang.name},
            "spec": {"minMember": gang.size, "scheduleTimeoutSeconds": 30},
        }
    return "/apis/scheduling.k8s.io/v1alpha2", {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": gang.name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": gang.size}}},
    }


async def create_gang(cluster: Cluster, api: str, gang: Gang, priorities: dict[str, str]) -> None:
    prefix, body = podgroup(api, gang)
    await cluster.client.request(
        "POST", f"{prefix}/namespaces/{cluster.namespace}/podgroups", body=body
    )
    for name in gang.pods():
        if api == "coscheduling":
            extra: dict[str, Any] = {"labels": {POD_GROUP_LABEL: gang.name}}
        else:
            extra = {"schedulingGroup": {"podGroupName": gang.name}}
        created = await cluster.create_pod(
            name, cpu="1", memory="32Mi", priorityClassName=priorities[gang.priority], **extra
        )
        assert gang_of(created) is not None, f"the API server dropped {name}'s group"


def profile(cluster: Cluster, api: str) -> dict[str, Any]:
    enabled = [{"name": "GangPreemption"}]
    disabled = [{"name": "DefaultPreemption"}]
    config: list[dict[str, Any]] = [
        {"name": "GangPreemption", "args": {"preemptionHoldSeconds": 15}}
    ]
    if api == "coscheduling":
        enabled.insert(0, {"name": "Coscheduling"})
        disabled.append({"name": "PrioritySort"})
        config.append({"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}})
    return {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"multiPoint": {"enabled": enabled, "disabled": disabled}},
        "pluginConfig": config,
    }


def settings(api: str) -> dict[str, Any]:
    """The daemon's ``pluggableScheduler`` settings: native gangs are kube's GangScheduling's.

    As in kube-scheduler 1.36, native PodGroups are gangs only with the alpha
    gates ``GenericWorkload`` and ``GangScheduling`` on; GangScheduling then
    joins the default plugins and places each gang all-or-nothing (its
    PreEnqueue holds members until ``minCount`` exist, Permit until that many
    are placed). Without it, members would be scheduled one by one as they
    arrive, each finding its gang short of its minimum.
    """
    if api != "native":
        return {}
    gates = {"GenericWorkload": True, "GangScheduling": True}
    return {"pluggableScheduler": {"serverAddress": "127.0.0.1:0", "featureGates": gates}}


@pytest.mark.parametrize("api", ["coscheduling", "native"])
async def test_gangs_of_8_and_16_preempt_lower_priority_gangs_whole(
    api: str, cluster: Cluster, start_daemon: StartDaemon, priorities: dict[str, str]
) -> None:
    if api == "coscheduling":
        await ensure_podgroup_crd(cluster)
    elif not await serves(cluster, "scheduling.k8s.io/v1alpha2", "podgroups"):
        pytest.skip(
            f"the {cluster.backend.kind} backend serves no scheduling.k8s.io/v1alpha2 "
            "PodGroups (the native Workload API)"
        )
    for i in range(NODES):
        await cluster.create_node(f"n{i}", cpu=NODE_CPU, memory="16Gi")
    running = await start_daemon(scheduler_config([profile(cluster, api)], **settings(api)))
    plugins = running.daemon.profiles[cluster.scheduler_name].framework.plugins
    assert ("GangScheduling" in plugins) == (api == "native"), sorted(plugins)
    watch = PodWatch(cluster)
    watcher = asyncio.create_task(watch.run())
    low = [Gang(f"low{i}", 8, "low") for i in range(3)]
    high16, high8, extra8 = (
        Gang("high16", 16, "high"),
        Gang("high8", 8, "high"),
        Gang("extra8", 8, "high"),
    )
    everyone = [*low, high16, high8, extra8]
    try:
        # Phase 1: the cluster fills with low-priority gangs.
        for gang in low:
            await create_gang(cluster, api, gang, priorities)
        await wait_until(
            lambda: all(watch.count_running(g) == g.size for g in low),
            within=PHASE_TIMEOUT,
            message="the low-priority gangs to run",
        )
        assert not watch.violations and not watch.partial(everyone)

        # Phase 2: a high gang of 16 needs two low gangs gone, whole.
        await create_gang(cluster, api, high16, priorities)
        await wait_until(
            lambda: watch.count_running(high16) == high16.size and not watch.partial(everyone),
            within=PHASE_TIMEOUT,
            message=f"{high16.name} to run: {watch.partial(everyone)}",
        )
        gone = [g.name for g in low if all(p in watch.deleted for p in g.pods())]
        assert len(gone) == 2, {g.name: watch.count_running(g) for g in low}
        assert not watch.violations, watch.violations

        # Phase 3: a high gang of 8 takes the last low gang's room.
        await create_gang(cluster, api, high8, priorities)
        await wait_until(
            lambda: watch.count_running(high8) == high8.size and not watch.partial(everyone),
            within=PHASE_TIMEOUT,
            message=f"{high8.name} to run: {watch.partial(everyone)}",
        )
        assert all(p in watch.deleted for g in low for p in g.pods())

        # Phase 4: nothing lower is left: the next high gang evicts and places nothing.
        await create_gang(cluster, api, extra8, priorities)
        await cluster.wait_event(extra8.pods()[0], "FailedScheduling", within=PHASE_TIMEOUT)

        async def tried_to_preempt() -> bool:
            events = await cluster.events_for(extra8.pods()[0], "FailedScheduling")
            # Nothing of lower priority is left to evict for it.
            return any(MSG_NO_GANG_VICTIMS in (e.get("note") or "") for e in events)

        await wait_until(tried_to_preempt, within=PHASE_TIMEOUT, message="extra8 to try")
        assert watch.count_running(extra8) == 0
        running = [p for g in (high16, high8) for p in g.pods()]
        assert all(watch.running(p) for p in running)
        assert not (watch.deleted & set(running + extra8.pods()))
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher

    assert not watch.violations, watch.violations
    assert not watch.partial(everyone), watch.partial(everyone)
    await cluster.assert_bound_exactly_once(running)
    bound = {watch.pods[p]["metadata"]["uid"] for p in running}
    assert all(watch.bindings.get(uid) == 1 for uid in bound)
