"""A preemptor is held back (PreEnqueue) while its victims are being deleted.

kube's DefaultPreemption rejects a pod at PreEnqueue while its preemption
runs, and the scheduling queue runs PreEnqueue whenever a pod moves towards
activeQ (an event, the end of its backoff, an activation). The pod stops
counting as preempting before its last victim is deleted, so that victim's
deletion event retries it once every victim is gone.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.api import Code, Status
from scheduler.api.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from scheduler.engine.queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    UNSCHEDULABLE,
    UNSCHEDULABLE_MAX_STAY,
    SchedulingQueue,
)
from scheduler.framework.preemption import Candidate
from scheduler.framework.preemption.executor import MSG_IN_PROGRESS
from scheduler.state.pod import PodInfo
from tests.engine.helpers import FakeClock, make_queue, pod
from tests.plugins.preemption_kit import HIGH, build_cluster, knode, kpod

POD_DELETE = ClusterEvent(Resource.POD, ActionType.DELETE)
EVENTS = {"NodeResourcesFit": [ClusterEventWithHint(POD_DELETE)]}


class Preempting:
    """PreEnqueue as DefaultPreemption's: holds back the pods in ``keys``."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.calls = 0

    def __call__(self, p: PodInfo) -> Status:
        self.calls += 1
        if p.key in self.keys:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (MSG_IN_PROGRESS,), "Preemption")
        return Status.success()


def rejected(clock: FakeClock) -> tuple[SchedulingQueue, Preempting]:
    """A queue holding default/p in the unschedulable pool after a failed attempt."""
    gate = Preempting()
    queue = make_queue(clock, events=EVENTS, pre_enqueue=gate)  # type: ignore[arg-type]
    queue.add(pod("p"))
    info = queue.pop_nowait()
    assert info is not None
    queue.requeue_unschedulable(info, {"NodeResourcesFit"})
    assert queue.where("default/p") == UNSCHEDULABLE
    return queue, gate


def test_an_event_moving_a_preempting_pod_gates_it_until_a_later_event() -> None:
    clock = FakeClock()
    queue, gate = rejected(clock)
    gate.keys.add("default/p")
    queue.move_on_event(POD_DELETE, {"spec": {"nodeName": "n"}}, None)
    assert queue.where("default/p") == GATED
    assert queue.pop_nowait() is None
    gate.keys.clear()
    clock.advance(60)  # its backoff is over
    queue.move_on_event(POD_DELETE, {"spec": {"nodeName": "n"}}, None)
    assert queue.where("default/p") == ACTIVE


def test_the_end_of_backoff_and_pop_from_backoff_check_again() -> None:
    clock = FakeClock()
    queue, gate = rejected(clock)
    queue.move_on_event(POD_DELETE, {}, None)
    assert queue.where("default/p") == BACKOFF
    gate.keys.add("default/p")
    assert queue.pop_nowait() is None, "not popped early from backoff while preempting"
    assert queue.where("default/p") == GATED
    gate.keys.clear()
    queue.activate(["default/p"])
    assert queue.where("default/p") == ACTIVE

    queue, gate = rejected(clock)
    queue.move_on_event(POD_DELETE, {}, None)
    gate.keys.add("default/p")
    clock.advance(60)
    queue.flush_backoff_completed()
    assert queue.where("default/p") == GATED


def test_activating_a_still_preempting_pod_keeps_it_gated() -> None:
    clock = FakeClock()
    queue, gate = rejected(clock)
    gate.keys.add("default/p")
    queue.activate(["default/p"])
    assert queue.where("default/p") == GATED


def test_the_plugin_gates_only_while_preempting() -> None:
    cluster = build_cluster([knode("node1")], [])
    plugin = cluster.plugin
    p: Any = cluster.pod(kpod("p", priority=HIGH))
    assert plugin.pre_enqueue(p) is None
    plugin.executor._preempting.add(p.uid)
    status = plugin.pre_enqueue(p)
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == MSG_IN_PROGRESS


def test_a_gated_pod_is_released_into_backoff_while_its_backoff_lasts() -> None:
    """As kube's gated pods moved by an event: backoffQ if still backing off."""
    clock = FakeClock()
    queue, gate = rejected(clock)
    gate.keys.add("default/p")
    queue.move_on_event(POD_DELETE, {}, None)
    assert queue.where("default/p") == GATED
    gate.keys.clear()
    queue.move_on_event(POD_DELETE, {}, None)
    assert queue.where("default/p") == BACKOFF


def test_a_pod_gated_by_a_plugin_is_checked_again_by_the_leftover_flush() -> None:
    """No event may come for a gated pod: the periodic leftover flush re-runs PreEnqueue."""
    clock = FakeClock()
    queue, gate = rejected(clock)
    gate.keys.add("default/p")
    queue.activate(["default/p"])
    assert queue.where("default/p") == GATED
    clock.advance(UNSCHEDULABLE_MAX_STAY + 1)
    queue.flush_unschedulable_leftover()
    assert queue.where("default/p") == GATED, "still held: stays gated"
    gate.keys.clear()
    queue.flush_unschedulable_leftover()
    assert queue.where("default/p") == ACTIVE


async def test_with_every_victim_already_terminating_the_pod_is_not_held() -> None:
    """Nothing of ours to delete, so no deletion event would release it: no hold."""
    cluster = build_cluster([knode("node1")], [])
    plugin = cluster.plugin
    p: Any = cluster.pod(kpod("p", priority=HIGH))
    raw = kpod("v", node="node1")
    raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    victim = PodInfo.from_dict(raw)
    assert victim.deleting
    plugin.executor.prepare_candidate(Candidate("node1", (victim,), 0), p)
    assert not plugin.executor.is_preempting(p.uid)
    assert plugin.pre_enqueue(p) is None
    await asyncio.gather(*plugin.executor.background_tasks)


def _held_cluster() -> tuple[Any, Any, PodInfo]:
    cluster = build_cluster([knode("node1")], [kpod("v", node="node1")])
    p = cluster.pod(kpod("p", priority=HIGH))
    victim = cluster.table.pods[cluster.table.row_of("node1")]["default/v"]
    return cluster, p, victim


async def test_the_pod_is_held_until_its_last_victim_is_gone_from_the_cache() -> None:
    """Earlier victims' deletion events must not retry it while the room is not free."""
    cluster, p, victim = _held_cluster()
    plugin = cluster.plugin
    plugin.executor._await_last_victim(p, victim)
    status = plugin.pre_enqueue(p)
    assert status is not None and status.message() == MSG_IN_PROGRESS
    cluster.table.remove_pod("default/v")
    assert plugin.pre_enqueue(p) is None
    assert plugin.pre_enqueue(p) is None  # and no longer awaited


async def test_another_pod_under_the_victims_name_does_not_hold_the_pod() -> None:
    cluster, p, victim = _held_cluster()
    plugin = cluster.plugin
    plugin.executor._await_last_victim(p, victim)
    cluster.table.remove_pod("default/v")
    raw = kpod("v", node="node1")
    raw["metadata"]["uid"] = "someone-else"  # deleted and made again under the same name
    cluster.table.add_pod(PodInfo.from_dict(raw))
    assert plugin.pre_enqueue(p) is None


async def test_the_hold_is_bounded_and_then_the_pod_is_retried() -> None:
    """A victim that takes long to go (a long grace period) does not strand the pod."""
    cluster, p, victim = _held_cluster()
    plugin = cluster.plugin
    plugin.executor.last_victim_hold = 0.01
    plugin.executor._await_last_victim(p, victim)
    assert plugin.pre_enqueue(p) is not None
    await asyncio.sleep(0.05)
    assert cluster.activated == ["default/p"]
    assert plugin.pre_enqueue(p) is None
