"""SchedulingQueue: kube-scheduler's activeQ / backoffQ / unschedulable pool semantics."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from scheduler.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from scheduler.engine.queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    UNSCHEDULABLE_MAX_STAY,
    SchedulingQueue,
    scheduling_relevant_change,
)
from scheduler.state.pod import PodInfo
from tests.engine.helpers import FakeClock, GatesPreEnqueue, make_queue, pod, raw_pod

NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
NODE_LABEL = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL)
NODE_ALLOCATABLE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
POD_DELETE = ClusterEvent(Resource.POD, ActionType.DELETE)


def zone_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Queue only if the new node carries the zone label (like NodeAffinity's hint)."""
    labels = ((new or {}).get("metadata") or {}).get("labels") or {}
    return QueueingHint.QUEUE if "zone" in labels else QueueingHint.SKIP


def broken_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("hint bug")


EVENTS = {
    "NodeResourcesFit": [
        ClusterEventWithHint(
            ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)
        ),
        ClusterEventWithHint(POD_DELETE),
    ],
    "NodeAffinity": [
        ClusterEventWithHint(
            ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), zone_hint
        )
    ],
    "Broken": [ClusterEventWithHint(NODE_LABEL, broken_hint)],
    "Silent": [],  # registered nothing: its rejections wait for the leftover flush
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> SchedulingQueue:
    return make_queue(clock, events=EVENTS)


def reject(
    queue: SchedulingQueue, name: str, *plugins: str, clock: FakeClock | None = None
) -> PodInfo:
    """Add a pod, pop it and reject it as unschedulable by ``plugins``."""
    p = pod(name)
    queue.add(p)
    info = queue.pop_nowait()
    assert info is not None and info.pod.key == p.key
    queue.requeue_unschedulable(info, set(plugins))
    return p


def node_obj(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels}}


# -- activeQ ---------------------------------------------------------------------------


def test_active_queue_pops_by_queue_sort_key(queue: SchedulingQueue, clock: FakeClock) -> None:
    for name, prio in [("low", 0), ("high", 100), ("mid", 50), ("low2", 0)]:
        queue.add(pod(name, priority=prio))
        clock.advance(1)
    order = []
    while (info := queue.pop_nowait()) is not None:
        order.append(info.pod.name)
    assert order == ["high", "mid", "low", "low2"]  # equal priority: earlier first


def test_peek_shows_the_pop_order_without_popping(queue: SchedulingQueue, clock: FakeClock) -> None:
    for i, prio in enumerate([5, 50, 20, 90, 1, 70, 30]):
        queue.add(pod(f"p{i}", priority=prio))
        clock.advance(1)
    queue.update(pod("p1", priority=95))  # re-sorted: its old heap entry goes stale
    queue.delete("default/p3")
    assert [p.name for p in queue.peek(4)] == ["p1", "p5", "p6", "p2"]
    assert [p.name for p in queue.peek(100)] == ["p1", "p5", "p6", "p2", "p0", "p4"]
    assert queue.peek(0) == []
    popped = []
    while (info := queue.pop_nowait()) is not None:
        popped.append(info.pod.name)
    assert popped == ["p1", "p5", "p6", "p2", "p0", "p4"]
    assert queue.peek(3) == []


def test_spec_update_of_active_pod_resorts_it(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add(pod("a", priority=10))
    clock.advance(1)
    queue.add(pod("b", priority=5))
    queue.update(pod("b", priority=20))
    first = queue.pop_nowait()
    assert first is not None and first.pod.name == "b"
    assert first.pod.priority == 20


def test_pop_marks_in_flight_and_counts_attempts(queue: SchedulingQueue) -> None:
    queue.add(pod("a"))
    info = queue.pop_nowait()
    assert info is not None
    assert queue.where("default/a") == IN_FLIGHT
    assert info.attempts == 1 and info.initial_attempt_timestamp is not None
    assert queue.counts()[IN_FLIGHT] == 1
    assert queue.pop_nowait() is None


def test_add_of_known_pod_is_an_update(queue: SchedulingQueue) -> None:
    queue.add(pod("a", priority=1))
    queue.add(pod("a", priority=2))
    assert len(queue) == 1
    info = queue.pop_nowait()
    assert info is not None and info.pod.priority == 2
    assert queue.pop_nowait() is None  # the superseded heap item is skipped


# -- backoff ---------------------------------------------------------------------------


def test_backoff_doubles_from_initial_and_is_capped(clock: FakeClock) -> None:
    queue = make_queue(clock, events=EVENTS, initial_backoff=1, max_backoff=10)
    p = pod("a")
    queue.add(p)
    durations = []
    for _ in range(6):
        clock.advance(1000)
        queue.flush_unschedulable_leftover()
        info = queue.pop_nowait()
        assert info is not None
        queue.requeue_unschedulable(info, {"NodeResourcesFit"})
        durations.append(queue.backoff_duration(info))
    assert durations == [1, 2, 4, 8, 10, 10]


def test_fresh_pod_has_no_backoff(queue: SchedulingQueue) -> None:
    queue.add(pod("a"))
    info = queue.get("default/a")
    assert info is not None and queue.backoff_duration(info) == 0


def test_errors_count_separately_from_unschedulable_attempts(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    p = pod("a")
    queue.add(p)
    for _ in range(3):  # three rejections: the next backoff would be 4 s
        queue.activate([p.key])
        info = queue.pop_nowait()
        assert info is not None
        queue.requeue_unschedulable(info, {"NodeResourcesFit"})
    assert info is not None
    assert queue.backoff_duration(info) == 4
    errors = []
    for _ in range(3):
        queue.activate([p.key])
        info = queue.pop_nowait()
        assert info is not None
        queue.requeue_error(info)
        assert queue.where(p.key) == BACKOFF
        errors.append(queue.backoff_duration(info))
    # A flapping API starts again from the initial backoff, not from 4 s.
    assert errors == [1, 2, 4]
    queue.activate([p.key])
    info = queue.pop_nowait()
    assert info is not None
    queue.requeue_unschedulable(info, {"NodeResourcesFit"})
    assert info.consecutive_errors == 0
    assert queue.backoff_duration(info) == 8  # the fourth rejection
    assert queue.unschedulable_count(p.key) == 4


def test_error_pod_leaves_backoff_when_it_expires(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add(pod("a"))
    info = queue.pop_nowait()
    assert info is not None
    queue.requeue_error(info)
    assert queue.pop_nowait() is None
    clock.advance(0.999)
    assert queue.pop_nowait() is None
    clock.advance(0.001)
    again = queue.pop_nowait()
    assert again is info and info.attempts == 2


async def test_pop_wakes_up_for_backoff_expiry_and_new_pods() -> None:
    queue = SchedulingQueue(
        lambda i: i.timestamp, GatesPreEnqueue(), initial_backoff=0.05, max_backoff=0.05
    )
    queue.add(pod("a"))
    info = await asyncio.wait_for(queue.pop(), 1)
    assert info is not None
    queue.requeue_error(info)
    loop = asyncio.get_running_loop()
    started = loop.time()
    again = await asyncio.wait_for(queue.pop(), 2)
    assert again is info
    assert loop.time() - started >= 0.04
    waiter = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    queue.add(pod("b"))
    got = await asyncio.wait_for(waiter, 1)
    assert got is not None and got.pod.name == "b"
    closing = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.01)
    queue.close()
    assert await asyncio.wait_for(closing, 1) is None


# -- unschedulable pool and events ------------------------------------------------------


def test_rejected_pod_waits_in_unschedulable_pool(queue: SchedulingQueue) -> None:
    reject(queue, "a", "NodeResourcesFit")
    assert queue.where("default/a") == UNSCHEDULABLE
    assert queue.pop_nowait() is None


def test_only_events_registered_by_rejecting_plugins_move_a_pod(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    reject(queue, "a", "NodeResourcesFit")
    assert queue.move_on_event(NODE_LABEL, node_obj(), node_obj(x="y")) == 0
    assert queue.where("default/a") == UNSCHEDULABLE
    clock.advance(5)  # past its 1 s backoff
    assert queue.move_on_event(NODE_ALLOCATABLE, node_obj(), node_obj()) == 1
    assert queue.where("default/a") == ACTIVE


def test_moved_pod_still_waits_out_its_backoff(queue: SchedulingQueue, clock: FakeClock) -> None:
    reject(queue, "a", "NodeResourcesFit")
    queue.move_on_event(NODE_ADD, None, node_obj())
    assert queue.where("default/a") == BACKOFF
    clock.advance(1)
    info = queue.pop_nowait()
    assert info is not None and info.pod.name == "a"


def test_queueing_hint_decides_for_its_event(queue: SchedulingQueue, clock: FakeClock) -> None:
    reject(queue, "a", "NodeAffinity")
    clock.advance(5)
    assert queue.move_on_event(NODE_ADD, None, node_obj(other="1")) == 0
    assert queue.where("default/a") == UNSCHEDULABLE
    assert queue.move_on_event(NODE_LABEL, node_obj(), node_obj(zone="z1")) == 1
    assert queue.where("default/a") == ACTIVE


def test_any_rejecting_plugin_may_move_the_pod(queue: SchedulingQueue, clock: FakeClock) -> None:
    reject(queue, "a", "NodeAffinity", "NodeResourcesFit")
    clock.advance(5)
    # NodeAffinity's hint says no, but NodeResourcesFit registered Node/Add.
    assert queue.move_on_event(NODE_ADD, None, node_obj()) == 1


def test_failing_hint_queues_rather_than_stranding(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    reject(queue, "a", "Broken")
    clock.advance(5)
    assert queue.move_on_event(NODE_LABEL, node_obj(), node_obj()) == 1


def test_plugin_without_registration_or_no_plugin_moves_on_any_event(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    reject(queue, "a", "Unregistered")
    reject(queue, "b")
    reject(queue, "c", "Silent")
    clock.advance(5)
    assert queue.move_on_event(POD_DELETE, {}, None) == 2
    assert queue.where("default/a") == ACTIVE
    assert queue.where("default/b") == ACTIVE
    assert queue.where("default/c") == UNSCHEDULABLE


def test_leftover_unschedulable_pods_flush_after_five_minutes(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    reject(queue, "a", "Silent")
    clock.advance(UNSCHEDULABLE_MAX_STAY - 1)
    queue.flush_unschedulable_leftover()
    assert queue.where("default/a") == UNSCHEDULABLE
    clock.advance(1)
    queue.flush_unschedulable_leftover()
    assert queue.where("default/a") == ACTIVE


def test_leftover_flush_counts_from_entering_the_pool(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    reject(queue, "a", "Silent")
    clock.advance(200)
    # A status-only update keeps the pod where it is and does not reset its stay.
    updated = raw_pod("a")
    updated["metadata"]["resourceVersion"] = "2"
    updated["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    queue.update(PodInfo.from_dict(updated))
    clock.advance(UNSCHEDULABLE_MAX_STAY - 200)
    queue.flush_unschedulable_leftover()
    assert queue.where("default/a") == ACTIVE


# -- in-flight events (moveRequestCycle) -----------------------------------------------


def test_event_during_flight_that_may_help_sends_rejected_pod_to_backoff(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.add(pod("a"))
    info = queue.pop_nowait()
    assert info is not None
    queue.move_on_event(NODE_ADD, None, node_obj())  # a node arrived mid-cycle
    queue.requeue_unschedulable(info, {"NodeResourcesFit"})
    assert queue.where("default/a") == BACKOFF
    assert queue.in_flight_events == 0  # nothing in flight: history dropped


def test_irrelevant_event_during_flight_does_not_retry(queue: SchedulingQueue) -> None:
    queue.add(pod("a"))
    info = queue.pop_nowait()
    assert info is not None
    queue.move_on_event(NODE_LABEL, node_obj(), node_obj(x="1"))
    queue.requeue_unschedulable(info, {"NodeResourcesFit"})
    assert queue.where("default/a") == UNSCHEDULABLE


def test_events_before_the_pop_do_not_count(queue: SchedulingQueue) -> None:
    queue.add(pod("busy"))
    busy = queue.pop_nowait()  # keeps the in-flight history alive
    queue.move_on_event(NODE_ADD, None, node_obj())
    queue.add(pod("a"))
    info = queue.pop_nowait()
    assert info is not None and busy is not None
    queue.requeue_unschedulable(info, {"NodeResourcesFit"})
    assert queue.where("default/a") == UNSCHEDULABLE
    queue.requeue_unschedulable(busy, {"NodeResourcesFit"})
    assert queue.where("default/busy") == BACKOFF
    assert queue.in_flight_events == 0


def test_spec_update_during_flight_retries_after_rejection(queue: SchedulingQueue) -> None:
    queue.add(pod("a", cpu="8"))
    info = queue.pop_nowait()
    assert info is not None
    queue.update(pod("a", cpu="1"))
    assert queue.where("default/a") == IN_FLIGHT
    queue.requeue_unschedulable(info, {"NodeResourcesFit"})
    assert queue.where("default/a") == BACKOFF
    assert info.pod.requests["cpu"] == 1000


# -- updates -----------------------------------------------------------------------------


def test_status_only_update_does_not_requeue(queue: SchedulingQueue, clock: FakeClock) -> None:
    reject(queue, "a", "NodeResourcesFit")
    clock.advance(5)
    new = raw_pod("a")
    new["metadata"]["resourceVersion"] = "7"
    new["metadata"]["managedFields"] = [{"manager": "scheduler"}]
    new["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    ]
    queue.update(PodInfo.from_dict(new))
    assert queue.where("default/a") == UNSCHEDULABLE
    queue.update(pod("a", labels={"app": "x"}))
    assert queue.where("default/a") == ACTIVE


def test_scheduling_relevant_change() -> None:
    old = raw_pod("a")
    status_only = copy.deepcopy(old)
    status_only["status"]["phase"] = "Running"
    status_only["metadata"]["resourceVersion"] = "9"
    assert not scheduling_relevant_change(old, status_only)
    label = copy.deepcopy(old)
    label["metadata"]["labels"]["x"] = "y"
    assert scheduling_relevant_change(old, label)
    spec = copy.deepcopy(old)
    spec["spec"]["nodeSelector"] = {"zone": "a"}
    assert scheduling_relevant_change(old, spec)


# -- gated pods --------------------------------------------------------------------------


def test_gated_pod_waits_until_an_update_removes_its_gates(clock: FakeClock) -> None:
    pre = GatesPreEnqueue()
    queue = make_queue(clock, events=EVENTS, pre_enqueue=pre)
    queue.add(pod("a", gates=["example.com/wait"]))
    assert queue.where("default/a") == GATED
    assert queue.pop_nowait() is None
    calls = pre.calls
    status_only = raw_pod("a", gates=["example.com/wait"])
    status_only["metadata"]["resourceVersion"] = "2"
    status_only["status"]["phase"] = "Pending"
    status_only["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    queue.update(PodInfo.from_dict(status_only))
    assert pre.calls == calls  # not re-checked for a status change
    queue.update(pod("a", gates=["example.com/wait"], labels={"more": "labels"}))
    assert pre.calls == calls + 1 and queue.where("default/a") == GATED
    queue.update(pod("a"))
    assert queue.where("default/a") == ACTIVE
    info = queue.pop_nowait()
    assert info is not None and info.pod.scheduling_gates == []


def test_gated_pod_is_not_tried_by_events_or_leftover_flush(clock: FakeClock) -> None:
    queue = make_queue(clock, events=EVENTS)
    queue.add(pod("a", gates=["g"]))
    queue.move_on_event(NODE_ADD, None, node_obj())  # re-checked: still gated
    clock.advance(UNSCHEDULABLE_MAX_STAY * 2)
    queue.flush_unschedulable_leftover()
    assert queue.where("default/a") == GATED
    assert queue.pop_nowait() is None


# -- deletes -----------------------------------------------------------------------------


def test_delete_while_in_flight_makes_requeues_no_ops(queue: SchedulingQueue) -> None:
    queue.add(pod("a"))
    info = queue.pop_nowait()
    assert info is not None
    assert queue.delete("default/a") is info
    queue.requeue_unschedulable(info, {"NodeResourcesFit"})
    queue.requeue_error(info)
    assert len(queue) == 0
    assert queue.pop_nowait() is None


def test_recreated_pod_is_not_clobbered_by_the_old_attempt(queue: SchedulingQueue) -> None:
    queue.add(pod("a", uid="old"))
    old = queue.pop_nowait()
    assert old is not None
    queue.delete("default/a")
    queue.add(pod("a", uid="new"))
    queue.requeue_error(old)
    queue.drop(old)
    assert queue.where("default/a") == ACTIVE
    fresh = queue.pop_nowait()
    assert fresh is not None and fresh.pod.uid == "new" and fresh.attempts == 1


def test_deleted_pod_in_heaps_is_skipped(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add(pod("a"))
    queue.add(pod("b"))
    info = queue.pop_nowait()
    assert info is not None
    queue.requeue_error(info)
    queue.delete(info.pod.key)
    queue.delete("default/b")
    clock.advance(100)
    assert queue.pop_nowait() is None
    assert queue.counts() == {
        ACTIVE: 0,
        BACKOFF: 0,
        UNSCHEDULABLE: 0,
        GATED: 0,
        IN_FLIGHT: 0,
    }


def test_activate_moves_backoff_and_unschedulable_pods(queue: SchedulingQueue) -> None:
    reject(queue, "a", "Silent")
    queue.add(pod("b"))
    b = queue.pop_nowait()
    assert b is not None
    queue.requeue_error(b)
    queue.activate(["default/a", "default/b", "default/missing"])
    assert queue.where("default/a") == ACTIVE
    assert queue.where("default/b") == ACTIVE


def test_on_change_reports_every_move(queue: SchedulingQueue) -> None:
    seen: list[dict[str, int]] = []
    queue.on_change = lambda: seen.append(queue.counts())
    queue.add(pod("a"))
    info = queue.pop_nowait()
    assert info is not None
    queue.requeue_unschedulable(info, {"Silent"})
    assert seen[-1][UNSCHEDULABLE] == 1
    queue.delete("default/a")
    assert seen[-1] == dict.fromkeys(seen[-1], 0)


def test_nominations_follow_the_pod_and_end_when_it_leaves() -> None:
    queue = make_queue(FakeClock())
    nominated = raw_pod("winner", priority=100)
    nominated["status"] = {"nominatedNodeName": "n1"}
    queue.add(PodInfo.from_dict(nominated))
    queue.add(pod("other"))
    assert {n: [p.key for p in ps] for n, ps in queue.nominated_pods().items()} == {
        "n1": ["default/winner"]
    }
    queue.nominate("default/other", "n2")  # recorded at once, before the API confirms
    assert sorted(queue.nominated_pods()) == ["n1", "n2"]
    cleared = copy.deepcopy(nominated)
    cleared["status"] = {}
    queue.update(PodInfo.from_dict(cleared))
    assert sorted(queue.nominated_pods()) == ["n2"]
    queue.delete("default/other")
    assert queue.nominated_pods() == {}


def test_an_update_that_does_not_touch_nominated_node_name_keeps_the_nomination() -> None:
    """kube's UpdateNominatedPod: the preemptor's condition patch (or an older update
    arriving late) comes back before its nominatedNodeName patch; the nomination
    recorded in memory holds meanwhile, so the room its victims free stays its own."""
    queue = make_queue(FakeClock())
    preemptor = raw_pod("preemptor", priority=100)
    queue.add(PodInfo.from_dict(preemptor))
    info = queue.pop_nowait()
    assert info is not None
    queue.requeue_unschedulable(info, {"CapacityScheduling"})
    queue.nominate("default/preemptor", "n1")
    condition = copy.deepcopy(preemptor)
    condition["status"] = {
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    }
    queue.update(PodInfo.from_dict(condition))
    assert {n: [p.key for p in ps] for n, ps in queue.nominated_pods().items()} == {
        "n1": ["default/preemptor"]
    }
    # The nominated pod handed out is the newest version.
    assert queue.nominated_pods()["n1"][0].raw["status"] == condition["status"]
    # The API's nominatedNodeName arrives, then a patch clears it: kube clears too.
    confirmed = copy.deepcopy(condition)
    confirmed["status"]["nominatedNodeName"] = "n1"
    queue.update(PodInfo.from_dict(confirmed))
    assert sorted(queue.nominated_pods()) == ["n1"]
    queue.update(PodInfo.from_dict(condition))
    assert queue.nominated_pods() == {}


def test_a_pod_registration_covers_unscheduled_pod_events_and_counts_stay_exact() -> None:
    clock = FakeClock()
    gang = {"Gang": [ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.ADD))]}
    queue = make_queue(clock, events=gang)
    reject(queue, "member-1", "Gang")
    reject(queue, "fitless", "NodeResourcesFit")  # unregistered plugin: moved by any event
    assert queue.counts() == {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 2, GATED: 0, IN_FLIGHT: 0}
    arrival = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD)
    clock.advance(60)
    assert queue.move_on_event(arrival, None, raw_pod("member-2")) == 2
    assert queue.where("default/member-1") == ACTIVE
    assert queue.counts()[ACTIVE] == 2 and queue.counts()[UNSCHEDULABLE] == 0
    only_nodes = make_queue(
        clock, events={"Fit": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    )
    reject(only_nodes, "waiting-for-nodes", "Fit")
    assert only_nodes.move_on_event(arrival, None, raw_pod("x")) == 0


def test_with_activeq_empty_an_unschedulable_backoff_pod_is_taken_early() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    reject(queue, "early", "NodeResourcesFit")
    queue.move_on_event(ClusterEvent(Resource.NODE, ActionType.ADD), None, node_obj())
    assert queue.where("default/early") == BACKOFF  # still inside its 1 s backoff
    taken = queue.pop_nowait()
    assert taken is not None and taken.pod.key == "default/early"
    assert queue.where("default/early") == IN_FLIGHT


def test_error_backoff_is_served_in_full_and_activeq_goes_first() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(pod("flaky"))
    info = queue.pop_nowait()
    assert info is not None
    queue.requeue_error(info)
    assert queue.pop_nowait() is None  # errors are punished by the whole backoff
    reject(queue, "rejected", "NodeResourcesFit")
    queue.move_on_event(ClusterEvent(Resource.NODE, ActionType.ADD), None, node_obj())
    queue.add(pod("fresh-2"))
    first = queue.pop_nowait()
    assert first is not None and first.pod.key == "default/fresh-2"
    second = queue.pop_nowait()
    assert second is not None and second.pod.key == "default/rejected"
    clock.advance(60)
    third = queue.pop_nowait()
    assert third is not None and third.pod.key == "default/flaky"


def test_popping_from_backoff_can_be_turned_off() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.pop_from_backoff = False
    reject(queue, "waits", "NodeResourcesFit")
    queue.move_on_event(ClusterEvent(Resource.NODE, ActionType.ADD), None, node_obj())
    assert queue.pop_nowait() is None
    clock.advance(1.0)
    assert queue.pop_nowait() is not None


# -- scheduler_queue_incoming_pods_total ------------------------------------------------


def test_incoming_names_the_queue_and_kubes_event_for_each_entry(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    seen: list[tuple[str, str]] = []
    queue.on_incoming = lambda q, event: seen.append((q, event))
    reject(queue, "a", "NodeResourcesFit")
    assert seen == [("active", "UnschedulablePodAdd"), ("unschedulable", "ScheduleAttemptFailure")]
    seen.clear()
    queue.move_on_event(NODE_ALLOCATABLE)
    assert seen == [("backoff", "NodeUpdateNodeAllocatable")]
    seen.clear()
    clock.advance(10)
    queue.flush_backoff_completed()
    assert seen == [("active", "BackoffComplete")]
    seen.clear()
    queue.update(pod("a", labels={"changed": "yes"}))  # already active: no entry
    assert seen == []
    info = queue.pop_nowait()
    assert info is not None
    queue.requeue_error(info)
    assert seen == [("backoff", "ScheduleAttemptFailure")]


def test_incoming_counts_a_gated_pod_once_as_unschedulable(queue: SchedulingQueue) -> None:
    seen: list[tuple[str, str]] = []
    queue.on_incoming = lambda q, event: seen.append((q, event))
    gated = pod("g", gates=["wait"])
    queue.add(gated)
    queue.update(pod("g", gates=["wait", "more"]))  # still gated: not a new entry
    assert seen == [("unschedulable", "UnschedulablePodAdd")]
    queue.update(pod("g"))
    assert seen[-1] == ("active", "UnschedulablePodUpdate")
