"""The plugin authors' pytest fixtures: emulated cluster, running scheduler, assertions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scheduler.api import FilterResult, Plugin, Status, hookimpl
from scheduler.api.cyclestate import CycleState
from scheduler.errors import UserError
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo
from scheduler.testing.objects import make_node, make_pod


class OnlyZoneB(Plugin):
    """Filter for the tests: only nodes labelled zone=b."""

    api_version = "1.0"

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        labels = nodes.table.labels
        ok = nodes.label_values("zone") == labels.value_id("zone", "b")
        return FilterResult.from_mask(np.asarray(ok), "node(s) are not in zone b")


NODES = [make_node("a1", labels={"zone": "a"}), make_node("b1", labels={"zone": "b"})]


async def test_default_profile_places_pods(emulated_cluster: Any, running_scheduler: Any) -> None:
    cluster = await emulated_cluster(NODES)
    sched = await running_scheduler(cluster)
    cluster.create(make_pod("p1"), make_pod("p2", namespace="shop"))
    placed = await sched.wait_for_placements(["p1", "shop/p2"])
    assert set(placed) == {"default/p1", "shop/p2"}
    assert set(placed.values()) <= {"a1", "b1"}
    assert sched.placements() == placed


async def test_extra_plugin_classes_and_expected_placements(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    cluster = await emulated_cluster(NODES)
    sched = await running_scheduler(cluster, plugins={"OnlyZoneB": OnlyZoneB}, enable=["OnlyZoneB"])
    cluster.create(*(make_pod(f"p{i}") for i in range(3)))
    await sched.wait_for_placements({"p0": "b1", "p1": "b1", "p2": "b1"})


async def test_mismatch_and_timeout_explain_themselves(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    cluster = await emulated_cluster(NODES)
    sched = await running_scheduler(cluster, plugins={"OnlyZoneB": OnlyZoneB}, enable=["OnlyZoneB"])
    cluster.create(make_pod("p"), make_pod("huge", cpu="64"))
    with pytest.raises(AssertionError, match=r"default/p: expected a1, got b1"):
        await sched.wait_for_placements({"p": "a1"})
    with pytest.raises(AssertionError, match=r"huge: not bound; last failure: 0/2 nodes"):
        await sched.wait_for_placements(["huge"], within=0.5)


async def test_failures_events_and_explain(emulated_cluster: Any, running_scheduler: Any) -> None:
    cluster = await emulated_cluster(NODES)
    sched = await running_scheduler(cluster, plugins={"OnlyZoneB": OnlyZoneB}, enable=["OnlyZoneB"])
    cluster.create(make_pod("running", cpu="2", node_name="b1"), make_pod("big", cpu="3"))
    message = await sched.wait_for_failure("big")
    assert message.startswith("0/2 nodes are available:")
    assert "1 node(s) are not in zone b" in message
    assert "1 Insufficient cpu" in message
    event = await sched.wait_for_event("big", "FailedScheduling")
    assert event["note"] == message
    await sched.wait_for_placements({"big": None})

    report = sched.explain("big")
    assert report.node is None
    assert report.nodes["a1"].rejected_by == "OnlyZoneB"
    assert report.nodes["b1"].rejected_by == "NodeResourcesFit"
    assert report.nodes["b1"].filter["NodeResourcesFit"].reasons == ["Insufficient cpu"]

    # Explaining a pod that is not in the cluster: what would happen to it.
    report = sched.explain(make_pod("small"))
    assert report.node == "b1"
    assert report.feasible == ["b1"]
    assert report.to_json()["nodes"]["a1"]["rejected_by"] == "OnlyZoneB"


async def test_cluster_file_and_objects_helpers(
    tmp_path: Path, emulated_cluster: Any, running_scheduler: Any
) -> None:
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n"
        "  status: {allocatable: {cpu: '2', memory: 4Gi, pods: '10'}}\n"
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: web, namespace: shop}\n"
        "  spec: {schedulerName: pluggable-scheduler, containers: [{name: c, image: nginx}]}\n"
    )
    cluster = await emulated_cluster(cluster_file=cluster_file)
    sched = await running_scheduler(cluster)
    await sched.wait_for_placements({"shop/web": "n1"})
    assert cluster.node_of("shop/web") == "n1"
    cluster.patch("v1", "Node", "n1", {"metadata": {"labels": {"zone": "b"}}})
    assert cluster.get("v1", "Node", "n1")["metadata"]["labels"]["zone"] == "b"
    cluster.delete("v1", "Pod", "web", "shop")
    assert cluster.pod("shop/web") is None
    await sched.settle()


async def test_configuration_problems_fail_start_up(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    with pytest.raises(UserError) as raised:
        await running_scheduler(enable=["NoSuchPlugin"])
    assert "plugin 'NoSuchPlugin' is not installed" in raised.value.render()
    with pytest.raises(ValueError, match="either config or"):
        await running_scheduler(config={}, enable=["OnlyZoneB"])


class HoldAtPermit(Plugin):
    """Permit for the tests: every pod waits until the test allows it."""

    api_version = "2.0"

    @hookimpl
    def permit(self, state: CycleState, pod: Any, node_name: str) -> Status:
        return Status.wait(30.0)

    def release_all(self) -> None:
        for waiting in self.handle.iterate_waiting_pods():
            waiting.allow("HoldAtPermit")


async def test_the_scheduler_state_a_plugin_test_can_read(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    cluster = await emulated_cluster([make_node("n1", cpu="4")])
    sched = await running_scheduler(
        cluster, plugins={"HoldAtPermit": HoldAtPermit}, enable=["HoldAtPermit"]
    )
    idle = sched.requested()
    cluster.create(make_pod("held", cpu="1500m"))

    async def waits() -> bool:
        return sched.waiting_pods() == ["default/held"]

    deadline = asyncio.get_running_loop().time() + 10
    while not await waits():
        assert asyncio.get_running_loop().time() < deadline, sched.queue_counts()
        await asyncio.sleep(0.02)
    assert sched.assumed_pods() == ["default/held"]
    assert sched.requested()["n1"]["cpu"] == idle["n1"]["cpu"] + 1500
    assert sched.queue_counts()["active"] == 0
    assert cluster.node_of("default/held") is None

    plugin = sched.plugin("HoldAtPermit")
    assert isinstance(plugin, HoldAtPermit)
    plugin.release_all()
    await sched.wait_for_placements({"held": "n1"})
    await sched.settle()
    assert sched.waiting_pods() == [] and sched.assumed_pods() == []
    with pytest.raises(LookupError, match="runs no plugin 'Nope'"):
        sched.plugin("Nope")


async def test_a_cluster_without_the_published_crds(emulated_cluster: Any) -> None:
    bare = await emulated_cluster(builtin_crds=False)
    with pytest.raises(LookupError, match="does not serve kind 'PodGroup'"):
        bare.list("scheduling.x-k8s.io/v1alpha1", "PodGroup")
    served = await emulated_cluster()
    assert served.list("scheduling.x-k8s.io/v1alpha1", "PodGroup") == []
