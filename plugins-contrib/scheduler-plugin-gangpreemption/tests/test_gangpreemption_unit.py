"""GangPreemption's decisions, on the test kit's cluster with the default Filter plugins.

Each test schedules a pod in a profile of kube's default Filter plugins and
GangPreemption (``PluginTestKit.post_filter``), and reads what it nominated
and which pods it deleted (``RecordingClient``). Gangs come from both APIs:
every gang test runs with Coscheduling's PodGroups and the native ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from scheduler.api import Code
from scheduler.model.gangs import POD_GROUP_LABEL
from scheduler.testing import PluginTestKit, RecordingClient, make_node, make_pod

from scheduler_plugin_gangpreemption import GangPreemption, GangPreemptionArgs

API = ["coscheduling", "native"]
LOW, MID, HIGH = 0, 5, 1000


def podgroup(api: str, name: str, min_count: int, **spec: Any) -> dict[str, Any]:
    if api == "coscheduling":
        return {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_count, **spec},
        }
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec},
    }


def pod(
    name: str,
    *,
    node: str | None = None,
    priority: int = LOW,
    cpu: str = "1",
    gang: tuple[str, str] | None = None,
    start: int = 0,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod; ``gang`` is (api, group name); ``start`` orders start times (seconds)."""
    all_labels = dict(labels or {})
    extra: dict[str, Any] = dict(spec)
    if gang is not None:
        api, group = gang
        if api == "coscheduling":
            all_labels[POD_GROUP_LABEL] = group
        else:
            extra["schedulingGroup"] = {"podGroupName": group}
    raw = dict(
        make_pod(name, cpu=cpu, node_name=node, priority=priority, labels=all_labels, spec=extra)
    )
    raw["metadata"] = {**raw["metadata"], "uid": f"uid-{name}"}
    if node is not None:
        raw["status"] = {
            **raw.get("status", {}),
            "phase": "Running",
            "startTime": f"2026-01-01T00:00:{start:02d}Z",
        }
    return raw


def cluster(
    nodes: Sequence[str],
    pods: Sequence[dict[str, Any]],
    objects: Sequence[dict[str, Any]] = (),
    *,
    cpu: str = "2",
) -> tuple[PluginTestKit, GangPreemption, RecordingClient]:
    client = RecordingClient()
    kit = PluginTestKit(
        nodes=[make_node(n, cpu=cpu, memory="8Gi") for n in nodes],
        pods=[p for p in pods if p["spec"].get("nodeName")],
        objects=[*pods, *objects],
        client=client,
    )
    plugin = kit.build(GangPreemption)
    plugin.offset_rand = lambda n: 0
    return kit, plugin, client


async def deleted(client: RecordingClient, count: int) -> list[str]:
    for _ in range(200):
        if len(client.deleted()) >= count:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.02)  # nothing more may come
    return sorted(name.split("/")[1] for name in client.deleted())


@pytest.mark.parametrize("api", API)
async def test_a_single_pod_takes_a_whole_gang_or_none_of_it(api: str) -> None:
    # Gang L runs on both nodes; the single pods there are more important than L.
    gang = (api, "l")
    pods = [
        pod("l0", node="a", gang=gang, start=1),
        pod("l1", node="b", gang=gang, start=1),
        pod("x", node="a", priority=MID, start=2),
        pod("y", node="b", priority=MID, start=2),
    ]
    kit, plugin, client = cluster(["a", "b"], pods, [podgroup(api, "l", 2)])
    out = kit.post_filter(plugin, pod("p", priority=HIGH))
    assert out.result is not None and out.result.status.is_success(), out.result
    assert out.result.nominated_node_name == "a"
    # DefaultPreemption would evict l0 alone (the least important pod on a).
    assert await deleted(client, 2) == ["l0", "l1"]


@pytest.mark.parametrize("api", API)
async def test_a_gang_is_kept_when_a_single_pod_suffices(api: str) -> None:
    gang = (api, "l")
    pods = [
        pod("l0", node="a", gang=gang, start=1),
        pod("l1", node="b", gang=gang, start=1),
        pod("x", node="a", start=2),
        pod("y", node="b", priority=MID, start=2),
    ]
    kit, plugin, client = cluster(["a", "b"], pods, [podgroup(api, "l", 2)])
    out = kit.post_filter(plugin, pod("p", priority=HIGH))
    assert out.result is not None and out.result.nominated_node_name == "a"
    assert await deleted(client, 1) == ["x"]


@pytest.mark.parametrize("api", API)
async def test_a_gang_of_higher_priority_than_the_pod_is_no_victim(api: str) -> None:
    # l0's own priority is low, but its gang holds a member above the preemptor.
    gang = (api, "l")
    pods = [
        pod("l0", node="a", gang=gang, priority=LOW),
        pod("l1", node="b", gang=gang, priority=HIGH + 1),
        pod("x", node="a", cpu="1"),
        pod("y", node="b", cpu="1", priority=HIGH + 1),
    ]
    kit, plugin, client = cluster(["a", "b"], pods, [podgroup(api, "l", 2)])
    out = kit.post_filter(plugin, pod("p", priority=HIGH, cpu="2"))
    assert out.result is not None
    assert out.result.status.code is Code.UNSCHEDULABLE
    assert out.result.nominated_node_name is None
    assert await deleted(client, 0) == []


async def test_a_native_group_priority_is_the_gangs() -> None:
    gang = ("native", "l")
    pods = [pod("l0", node="a", gang=gang, priority=HIGH + 1)]
    kit, plugin, client = cluster(["a"], pods, [podgroup("native", "l", 1, priority=LOW)], cpu="1")
    # minCount 1: no gang, each pod is its own unit with its own priority.
    out = kit.post_filter(plugin, pod("p", priority=HIGH))
    assert out.result is not None and out.result.status.code is Code.UNSCHEDULABLE
    pods = [
        pod("l0", node="a", gang=gang, priority=HIGH + 1),
        pod("l1", node="a", gang=gang, priority=HIGH + 1, cpu="0"),
    ]
    kit, plugin, client = cluster(["a"], pods, [podgroup("native", "l", 2, priority=LOW)], cpu="1")
    out = kit.post_filter(plugin, pod("p", priority=HIGH))
    assert out.result is not None and out.result.status.is_success(), out.result
    assert await deleted(client, 2) == ["l0", "l1"]


@pytest.mark.parametrize("api", API)
async def test_a_gang_preempts_for_all_its_members(api: str) -> None:
    # Two low gangs fill two nodes; gang b started later, so it is the one to go.
    pods = [
        pod("a0", node="n1", gang=(api, "a"), start=1),
        pod("a1", node="n2", gang=(api, "a"), start=1),
        pod("b0", node="n1", gang=(api, "b"), start=3),
        pod("b1", node="n2", gang=(api, "b"), start=3),
    ]
    high = [pod(f"h{i}", priority=HIGH, gang=(api, "h")) for i in range(2)]
    groups = [podgroup(api, g, 2) for g in ("a", "b", "h")]
    kit, plugin, client = cluster(["n1", "n2"], [*pods, *high], groups)
    out = kit.post_filter(plugin, high[0])
    assert out.result is not None and out.result.status.is_success(), out.result
    assert out.result.nominated_node_name == "n1"
    assert await deleted(client, 2) == ["b0", "b1"]
    # The other member waits for the victims instead of preempting again.
    assert plugin.pre_enqueue(kit.pod(high[1])) is not None
    again = kit.post_filter(plugin, high[1])
    assert again.result is not None
    assert "waiting for the preemption for this pod group" in again.result.status.message()
    assert await deleted(client, 2) == ["b0", "b1"]
    # Once the hold ends, the member may be scheduled (and preempt) again.
    plugin.clock = lambda: 1e12
    assert plugin.pre_enqueue(kit.pod(high[1])) is None


@pytest.mark.parametrize("api", API)
async def test_a_gang_that_cannot_fit_whole_preempts_nothing(api: str) -> None:
    pods = [
        pod("a0", node="n1", gang=(api, "a")),
        pod("a1", node="n2", gang=(api, "a")),
    ]
    high = [pod(f"h{i}", priority=HIGH, cpu="2", gang=(api, "h")) for i in range(3)]
    groups = [podgroup(api, "a", 2), podgroup(api, "h", 3)]
    kit, plugin, client = cluster(["n1", "n2"], [*pods, *high], groups, cpu="2")
    out = kit.post_filter(plugin, high[0])
    assert out.result is not None and out.result.status.code is Code.UNSCHEDULABLE
    message = out.result.status.message()
    assert message.startswith("preemption: PodGroup (")
    assert "its 3 pending pod(s) do not all fit" in message
    assert await deleted(client, 0) == []


@pytest.mark.parametrize("api", API)
async def test_a_gang_short_of_its_minimum_does_not_preempt(api: str) -> None:
    pods = [pod("a0", node="n1"), pod("a1", node="n2")]
    high = [pod("h0", priority=HIGH, gang=(api, "h"))]
    kit, plugin, client = cluster(["n1", "n2"], [*pods, *high], [podgroup(api, "h", 2)], cpu="1")
    out = kit.post_filter(plugin, high[0])
    assert out.result is not None
    assert "has 1 of its minimum 2 pods" in out.result.status.message()
    assert await deleted(client, 0) == []


async def test_members_waiting_at_permit_are_placed_again() -> None:
    # h0 is assumed on n1 (waiting at Permit, not bound): the gang needs room for both.
    pods = [pod("a0", node="n2", gang=("coscheduling", "a")), pod("s", node="n1", cpu="1")]
    pods.append(pod("a1", node="n2", gang=("coscheduling", "a")))
    h0 = pod("h0", priority=HIGH, gang=("coscheduling", "h"), cpu="1")
    h1 = pod("h1", priority=HIGH, gang=("coscheduling", "h"), cpu="2")
    groups = [podgroup("coscheduling", g, 2) for g in ("a", "h")]
    kit, plugin, client = cluster(["n1", "n2"], [*pods, h0, h1], groups)
    kit.add_pod(h0, "n1")  # assumed, as at Permit; its API object has no nodeName
    out = kit.post_filter(plugin, h1)
    assert out.result is not None and out.result.status.is_success(), out.result
    assert await deleted(client, 2) == ["a0", "a1"]


async def test_pdb_protected_gang_goes_last() -> None:
    pods = [
        pod("a0", node="n1", gang=("coscheduling", "a"), start=5, labels={"app": "a"}),
        pod("a1", node="n2", gang=("coscheduling", "a"), start=5, labels={"app": "a"}),
        pod("b0", node="n1", gang=("coscheduling", "b"), start=1),
        pod("b1", node="n2", gang=("coscheduling", "b"), start=1),
    ]
    high = [pod(f"h{i}", priority=HIGH, gang=("coscheduling", "h")) for i in range(2)]
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}},
        "status": {"disruptionsAllowed": 0},
    }
    groups = [podgroup("coscheduling", g, 2) for g in ("a", "b", "h")]
    kit, plugin, client = cluster(["n1", "n2"], [*pods, *high], [*groups, pdb])
    out = kit.post_filter(plugin, high[0])
    assert out.result is not None and out.result.status.is_success()
    # Without the budget gang a (started later) would go; with it, b goes.
    assert await deleted(client, 2) == ["b0", "b1"]


async def test_preemption_policy_never() -> None:
    pods = [pod("a0", node="n1", gang=("coscheduling", "a"))]
    pods.append(pod("a1", node="n1", gang=("coscheduling", "a")))
    high = [
        pod("h0", priority=HIGH, gang=("coscheduling", "h")),
        pod("h1", priority=HIGH, gang=("coscheduling", "h"), preemptionPolicy="Never"),
    ]
    groups = [podgroup("coscheduling", g, 2) for g in ("a", "h")]
    kit, plugin, _ = cluster(["n1"], [*pods, *high], groups)
    out = kit.post_filter(plugin, high[0])
    assert out.result is not None
    assert out.result.status.message() == "preemption: not eligible due to preemptionPolicy=Never."
    single = kit.post_filter(plugin, pod("s", priority=HIGH, preemptionPolicy="Never"))
    assert single.result is not None
    assert single.result.status.message() == (
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_a_missing_or_broken_group_is_named() -> None:
    kit, plugin, _ = cluster(["n1"], [pod("a", node="n1", cpu="2")])
    out = kit.post_filter(plugin, pod("h", priority=HIGH, gang=("native", "gone")))
    assert out.result is not None
    assert out.result.status.message() == (
        "preemption: PodGroup (scheduling.k8s.io) default/gone not found"
    )
    broken = podgroup("coscheduling", "bad", 2)
    broken["spec"]["minMember"] = "two"
    kit, plugin, _ = cluster(["n1"], [pod("a", node="n1", cpu="2")], [broken])
    out = kit.post_filter(plugin, pod("h", priority=HIGH, gang=("coscheduling", "bad")))
    assert out.result is not None
    assert "default/bad: spec.minMember must be an integer >= 0, got 'two'" in (
        out.result.status.message()
    )


def test_args() -> None:
    assert GangPreemptionArgs().min_candidate_nodes_absolute == 100
    args = GangPreemptionArgs.model_validate({"respectDisruptionMode": True})
    assert args.respect_disruption_mode
    with pytest.raises(ValueError, match="minCandidateNodesPercentage cannot be zero"):
        GangPreemptionArgs.model_validate(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
        )


@pytest.mark.parametrize("respect", [False, True])
async def test_respect_disruption_mode(respect: bool) -> None:
    gang = ("native", "l")
    pods = [
        pod("l0", node="a", gang=gang, start=1),
        pod("l1", node="b", gang=gang, start=9),
    ]
    group = podgroup("native", "l", 2, disruptionMode="Pod")
    client = RecordingClient()
    kit = PluginTestKit(
        nodes=[make_node(n, cpu="1", memory="8Gi") for n in ("a", "b")],
        pods=pods,
        objects=[*pods, group],
        client=client,
    )
    plugin = kit.build(GangPreemption, {"respectDisruptionMode": respect})
    plugin.offset_rand = lambda n: 0
    out = kit.post_filter(plugin, pod("p", priority=HIGH))
    assert out.result is not None and out.result.status.is_success()
    assert await deleted(client, 1 if respect else 2) == (["l1"] if respect else ["l0", "l1"])
