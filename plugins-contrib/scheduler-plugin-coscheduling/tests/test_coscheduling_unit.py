"""Coscheduling's decisions one hook at a time, with scheduler.testing.PluginTestKit."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from coscheduling_harness import make_node, make_pod, make_podgroup
from pydantic import ValidationError
from scheduler.api import Code, CycleState, Diagnosis, Pod, Status
from scheduler.testing import PluginTestKit

from scheduler_plugin_coscheduling import Coscheduling, CoschedulingArgs, PodGroupInfo


def _pod(
    name: str,
    *,
    group: str | None = None,
    cpu: str = "1",
    priority: int | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    obj = make_pod(name, group=group, cpu=cpu, priority=priority)
    obj["metadata"]["uid"] = f"uid-{name}"
    if created:
        obj["metadata"]["creationTimestamp"] = created
    return obj


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _plugin(
    objects: Sequence[Mapping[str, Any]],
    *,
    nodes: Sequence[Mapping[str, Any]] = (),
    args: CoschedulingArgs | None = None,
) -> tuple[Coscheduling, PluginTestKit]:
    kit = PluginTestKit(nodes=nodes, objects=objects, profile="pluggable-scheduler")
    plugin = kit.build(Coscheduling, args)
    plugin.clock = FakeClock()
    return plugin, kit


def _info(obj: Mapping[str, Any]) -> Pod:
    return PluginTestKit().pod(obj)


def _pre_filter(plugin: Coscheduling, kit: PluginTestKit, obj: Mapping[str, Any]) -> Status:
    status = kit.call(plugin, "pre_filter", obj)
    return status if status is not None else Status.success()


# -- QueueSort ------------------------------------------------------------------------------


def test_queue_sort_keeps_groups_together_by_priority_then_group_creation() -> None:
    t = "2024-01-01T00:00:{:02d}Z"
    groups = [
        make_podgroup("alpha", 3, created=t.format(0)),
        make_podgroup("beta", 2, created=t.format(10)),
        make_podgroup("gamma", 2, created=t.format(10)),  # same second as beta
    ]
    pods = [
        _pod("urgent", priority=10, created=t.format(30)),
        # members are created after other work: the group's time counts, not theirs
        _pod("a-2", group="alpha", created=t.format(50)),
        _pod("a-0", group="alpha", created=t.format(40)),
        _pod("a-1", group="alpha", created=t.format(45)),
        _pod("solo", created=t.format(5)),
        _pod("orphan", group="ghost", created=t.format(7)),  # its PodGroup does not exist
        _pod("g-0", group="gamma", created=t.format(11)),
        _pod("b-1", group="beta", created=t.format(20)),
        _pod("g-1", group="gamma", created=t.format(11)),
        _pod("b-0", group="beta", created=t.format(20)),
    ]
    plugin, _ = _plugin([*groups, *pods])
    kit = PluginTestKit()
    queued = [kit.queued(p, timestamp=float(i)) for i, p in enumerate(pods)]
    random.Random(7).shuffle(queued)
    order = [q.pod.name for q in sorted(queued, key=plugin.queue_sort_key)]
    assert order == [
        "urgent",
        "a-0",
        "a-1",
        "a-2",
        "solo",
        "orphan",
        "b-0",
        "b-1",
        "g-0",
        "g-1",
    ]


def test_queue_sort_priority_beats_group_age() -> None:
    groups = [make_podgroup("old", 2, created="2024-01-01T00:00:00Z")]
    pods = [
        _pod("old-0", group="old", created="2024-01-01T00:00:01Z"),
        _pod("new-vip", priority=100, created="2024-06-01T00:00:00Z"),
    ]
    plugin, _ = _plugin([*groups, *pods])
    keys = {p["metadata"]["name"]: plugin.queue_sort_key(PluginTestKit().queued(p)) for p in pods}
    assert keys["new-vip"] < keys["old-0"]


# -- PreFilter --------------------------------------------------------------------------------


def test_prefilter_rejects_a_group_below_its_quorum() -> None:
    pods = [_pod(f"w-{i}", group="workers") for i in range(2)]
    plugin, kit = _plugin([make_podgroup("workers", 3), *pods], nodes=[make_node("n")])
    status = _pre_filter(plugin, kit, pods[0])
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "PodGroup default/workers has 2 pod(s), fewer than its minMember 3: "
        "waiting for more members before scheduling any"
    )


def test_prefilter_passes_pods_without_group_and_groups_at_quorum() -> None:
    pods = [_pod(f"w-{i}", group="workers") for i in range(3)]
    solo = _pod("solo")
    plugin, kit = _plugin([make_podgroup("workers", 3), *pods, solo], nodes=[make_node("n")])
    assert _pre_filter(plugin, kit, pods[0]).is_success()
    assert _pre_filter(plugin, kit, solo).is_success()


def test_prefilter_rejects_a_pod_whose_podgroup_is_missing() -> None:
    pod = _pod("lost", group="nowhere")
    plugin, kit = _plugin([pod], nodes=[make_node("n")])
    status = _pre_filter(plugin, kit, pod)
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "PodGroup default/nowhere not found"


def test_prefilter_checks_min_resources_against_free_capacity() -> None:
    nodes = [make_node("n-0", cpu="2"), make_node("n-1", cpu="2")]
    members = [_pod(f"m-{i}", group="big", cpu="1") for i in range(2)]
    other = _pod("other", cpu="1500m")
    group = make_podgroup("big", 2, min_resources={"cpu": "3", "nvidia.com/gpu": "1"})
    plugin, kit = _plugin([group, *members, other], nodes=nodes)
    kit.add_pod(other, "n-0")
    status = _pre_filter(plugin, kit, members[0])
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "PodGroup default/big: the cluster's free capacity cannot hold its minResources "
        "(short of cpu 500m, nvidia.com/gpu 1)"
    )


def test_prefilter_counts_the_groups_own_placed_pods_as_free() -> None:
    nodes = [make_node("n-0", cpu="2")]
    members = [_pod(f"m-{i}", group="big", cpu="1") for i in range(2)]
    plugin, kit = _plugin(
        [make_podgroup("big", 2, min_resources={"cpu": "2"}), *members], nodes=nodes
    )
    kit.add_pod(members[0], "n-0")  # assumed earlier in this attempt
    assert _pre_filter(plugin, kit, members[1]).is_success()


def test_failed_group_is_denied_for_the_backoff_window() -> None:
    members = [_pod(f"m-{i}", group="team") for i in range(3)]
    plugin, kit = _plugin(
        [make_podgroup("team", 3), *members],
        nodes=[make_node("n")],
        args=CoschedulingArgs.model_validate({"podGroupBackoffSeconds": 30}),
    )
    clock = plugin.clock
    assert isinstance(clock, FakeClock)
    status = plugin.post_filter(CycleState(), _info(members[2]), Diagnosis())
    assert status.code is Code.UNSCHEDULABLE
    assert "PodGroup default/team rejected: member default/m-2 cannot be scheduled" in (
        status.message()
    )
    denied = _pre_filter(plugin, kit, members[0])
    assert denied.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert (
        denied.message()
        == "PodGroup default/team failed recently and is backing off for another 30s"
    )
    clock.now += 31
    assert _pre_filter(plugin, kit, members[0]).is_success()


def test_without_backoff_a_failed_group_is_retried_at_once() -> None:
    members = [_pod(f"m-{i}", group="team") for i in range(3)]
    plugin, kit = _plugin([make_podgroup("team", 3), *members], nodes=[make_node("n")])
    plugin.post_filter(CycleState(), _info(members[2]), Diagnosis())
    assert _pre_filter(plugin, kit, members[0]).is_success()


def test_post_filter_has_no_opinion_on_pods_outside_groups() -> None:
    solo = _pod("solo")
    plugin, _ = _plugin([solo])
    status = plugin.post_filter(CycleState(), _info(solo), Diagnosis())
    assert status.code is Code.UNSCHEDULABLE
    assert status.message() == ""  # lets later PostFilter plugins (preemption) decide


# -- Permit, PostFilter and Unreserve ---------------------------------------------------------


def _assume(kit: PluginTestKit, obj: Mapping[str, Any], node: str) -> Pod:
    return kit.add_pod(obj, node)


def _hold(plugin: Coscheduling, kit: PluginTestKit, info: Pod, node: str) -> Status:
    """What the engine does at Permit: run the hook, park the pod if it waits."""
    return kit.permit(plugin, info, node)


async def test_permit_waits_for_quorum_then_allows_every_member() -> None:
    members = [_pod(f"m-{i}", group="trio") for i in range(3)]
    plugin, kit = _plugin(
        [make_podgroup("trio", 3, timeout=30), *members],
        nodes=[make_node(f"n-{i}") for i in range(3)],
    )
    entries = []
    for i, obj in enumerate(members[:2]):
        status = _hold(plugin, kit, _assume(kit, obj, f"n-{i}"), f"n-{i}")
        assert status.is_wait()
        assert status.timeout == 30
        assert status.message() == (f"waiting for {2 - i} more member(s) of PodGroup default/trio")
        entry = kit.handle.get_waiting_pod(f"uid-m-{i}")
        assert entry is not None
        entries.append(entry)
    assert not any(e.done for e in entries)
    last = _hold(plugin, kit, _assume(kit, members[2], "n-2"), "n-2")
    assert last.is_success()
    outcomes = [await kit.permit_outcome(e.pod.uid) for e in entries]
    assert [o.is_success() for o in outcomes] == [True, True]


async def test_permit_timeout_defaults_to_the_args() -> None:
    members = [_pod(f"m-{i}", group="duo") for i in range(2)]
    plugin, kit = _plugin(
        [make_podgroup("duo", 2), *members],
        nodes=[make_node("n")],
        args=CoschedulingArgs.model_validate({"permitWaitingTimeSeconds": 12}),
    )
    status = _hold(plugin, kit, _assume(kit, members[0], "n"), "n")
    assert status.is_wait()
    assert status.timeout == 12


async def test_unreserve_of_one_member_rejects_its_waiting_siblings() -> None:
    members = [_pod(f"m-{i}", group="trio") for i in range(3)]
    stranger = _pod("x-0", group="other")
    plugin, kit = _plugin(
        [make_podgroup("trio", 3), make_podgroup("other", 2), *members, stranger],
        nodes=[make_node(f"n-{i}", cpu="4") for i in range(3)],
    )
    infos = [_assume(kit, obj, f"n-{i}") for i, obj in enumerate(members[:2])]
    for i, info in enumerate(infos):
        assert _hold(plugin, kit, info, f"n-{i}").is_wait()
    other = _assume(kit, stranger, "n-2")
    assert _hold(plugin, kit, other, "n-2").is_wait()

    # m-0 times out (the engine finishes its entry, then unreserves it).
    plugin.unreserve(CycleState(), infos[0], "n-0")
    result = await kit.permit_outcome("uid-m-1")
    assert result.code is Code.UNSCHEDULABLE
    assert result.plugin == "Coscheduling"
    assert result.message() == (
        "PodGroup default/trio rejected: member default/m-0 was unreserved "
        "(it timed out, was rejected or failed to bind)"
    )
    unrelated = kit.handle.get_waiting_pod("uid-x-0")
    assert unrelated is not None and not unrelated.done


async def test_rejected_members_do_not_complete_a_quorum() -> None:
    """Members released by PostFilter stay in the table until their binding cycle
    unreserves them; a member scheduled meanwhile must not see a quorum."""
    members = [_pod(f"m-{i}", group="four") for i in range(4)]
    plugin, kit = _plugin(
        [make_podgroup("four", 3), *members],
        nodes=[make_node(f"n-{i}", cpu="4") for i in range(2)],
    )
    for i in range(2):
        assert _hold(plugin, kit, _assume(kit, members[i], "n-0"), "n-0").is_wait()
    status = plugin.post_filter(CycleState(), _info(members[2]), Diagnosis())
    assert status.message().endswith("released 2 waiting member(s)")
    late = _hold(plugin, kit, _assume(kit, members[3], "n-1"), "n-1")
    assert late.is_wait()


async def test_post_filter_keeps_a_nearly_complete_group() -> None:
    members = [_pod(f"m-{i}", group="big") for i in range(11)]
    plugin, kit = _plugin([make_podgroup("big", 10), *members], nodes=[make_node("n", cpu="100")])
    for obj in members[:9]:
        assert _hold(plugin, kit, _assume(kit, obj, "n"), "n").is_wait()
    status = plugin.post_filter(CycleState(), _info(members[9]), Diagnosis())
    assert status.message() == (
        "PodGroup default/big is 1 member(s) short of its minMember 10; "
        "keeping its 9 placed member(s) for now"
    )
    assert not any(entry.done for entry in kit.handle.iterate_waiting_pods())


# -- PodGroup and args parsing ----------------------------------------------------------------


def test_podgroup_parsing() -> None:
    obj = make_podgroup("g", 4, timeout=90, min_resources={"cpu": "1500m", "memory": "1Gi"})
    obj["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    group = PodGroupInfo.from_object(obj)
    assert group.full_name == "default/g"
    assert group.min_member == 4
    assert group.schedule_timeout_seconds == 90
    assert group.min_resources == {"cpu": 1500, "memory": 1024**3}
    assert group.creation_time == 1704067200.0


def test_args_use_scheduler_plugins_names_and_defaults() -> None:
    assert CoschedulingArgs() == CoschedulingArgs.model_validate(
        {"permitWaitingTimeSeconds": 60, "podGroupBackoffSeconds": 0}
    )
    assert CoschedulingArgs.model_validate({"permitWaitingTimeSeconds": 5}) == CoschedulingArgs(
        permit_waiting_time_seconds=5
    )
    with pytest.raises(ValidationError):
        CoschedulingArgs.model_validate({"kubeConfigPath": "/etc/kubernetes/scheduler.conf"})
    with pytest.raises(ValidationError):
        CoschedulingArgs.model_validate({"podGroupBackoffSeconds": -1})
