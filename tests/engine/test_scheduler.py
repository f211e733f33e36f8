"""The scheduling loop over real profiles, with a scripted Bind plugin and a recording IO.

Everything but the API server is real: default plugins, the Framework, the
queue and the cache. The Bind and PreBind plugins below stand in for the API
so each failure of the binding cycle can be produced exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pytest

from scheduler.api import BindOutcome, BindResult, CycleState, Plugin, Status, hookimpl
from scheduler.api.results import FilterResult
from scheduler.api.status import Code
from scheduler.config.loading import load_config
from scheduler.engine.cache import SchedulerCache
from scheduler.engine.clusterevents import NODE_DELETE
from scheduler.engine.queue import BACKOFF, UNSCHEDULABLE, SchedulingQueue
from scheduler.engine.scheduler import Scheduler
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import Profile, build_profiles
from scheduler.framework.waiting import WaitingPods
from scheduler.kube.apierrors import Conflict, NotFound, ServerError
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo
from tests.engine.helpers import pod, raw_node
from tests.kube.helpers import eventually

Outcome = Status | BaseException


class ScriptedBinder(Plugin):
    """Records every Bind call; answers from a per-pod script (default: success)."""

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.calls: list[tuple[str, str]] = []
        self.script: dict[str, list[Outcome]] = {}

    @hookimpl
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.calls.append((pod.name, node_name))
        outcomes = self.script.get(pod.name)
        outcome = outcomes.pop(0) if outcomes else Status.success()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class HoldingPreBind(Plugin):
    """PreBind that waits, for pods named in ``hold``, until the test releases them."""

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.hold: dict[str, asyncio.Event] = {}
        self.entered: set[str] = set()
        #: Called when the named pod's PreBind starts.
        self.on_enter: dict[str, Callable[[], object]] = {}

    @hookimpl
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.entered.add(pod.name)
        hook = self.on_enter.get(pod.name)
        if hook is not None:
            hook()
        gate = self.hold.get(pod.name)
        if gate is not None:
            await gate.wait()


class ExplodingFilter(Plugin):
    """Filter that raises for pods labelled ``explode``."""

    api_version: ClassVar[str] = "1.0"

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        if pod.labels.get("explode"):
            raise RuntimeError("kaboom")
        return FilterResult(len(nodes))


CATALOG = PluginCatalog.discover().merged(
    PluginCatalog.from_classes(
        {
            "ScriptedBinder": ScriptedBinder,
            "HoldingPreBind": HoldingPreBind,
            "ExplodingFilter": ExplodingFilter,
        }
    )
)


@dataclass
class RecordingIO:
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    patches: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def record_event(
        self, pod: PodInfo, event_type: str, reason: str, note: str, action: str
    ) -> None:
        self.events.append((pod.name, event_type, reason, note))

    async def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.patches.append((name, patch))

    def reasons(self, name: str) -> list[str]:
        return [reason for pod_name, _, reason, _ in self.events if pod_name == name]

    def notes(self, name: str, reason: str) -> list[str]:
        return [n for p, _, r, n in self.events if p == name and r == reason]


@dataclass
class Harness:
    scheduler: Scheduler
    queue: SchedulingQueue
    cache: SchedulerCache
    io: RecordingIO
    profile: Profile

    @property
    def binder(self) -> ScriptedBinder:
        plugin = self.profile.framework.plugins["ScriptedBinder"]
        assert isinstance(plugin, ScriptedBinder)
        return plugin

    @property
    def prebind(self) -> HoldingPreBind:
        plugin = self.profile.framework.plugins["HoldingPreBind"]
        assert isinstance(plugin, HoldingPreBind)
        return plugin

    async def wait(self, predicate: Callable[[], bool], message: str) -> None:
        await eventually(predicate, within=5, message=message)


def build_harness() -> Harness:
    """The scheduler over two 2-CPU nodes, its loop not started."""
    config = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "podInitialBackoffSeconds": 1,
            "podMaxBackoffSeconds": 1,
            "profiles": [
                {
                    "schedulerName": "pluggable-scheduler",
                    "plugins": {
                        "filter": {"enabled": [{"name": "ExplodingFilter"}]},
                        "preBind": {"enabled": [{"name": "HoldingPreBind"}]},
                        "bind": {
                            "enabled": [{"name": "ScriptedBinder"}],
                            "disabled": [{"name": "*"}],
                        },
                    },
                }
            ],
        }
    )
    cache = SchedulerCache()
    waiting = WaitingPods()
    profiles = build_profiles(
        config,
        CATALOG,
        lambda name: FrameworkHandle(name, cache.table, waiting_pods=waiting),
    )
    profile = profiles["pluggable-scheduler"]
    queue = SchedulingQueue(
        profile.framework.queue_sort_key,
        profile.framework.run_pre_enqueue,
        initial_backoff=0.05,
        max_backoff=0.05,
        events={},
    )
    io = RecordingIO()
    scheduler = Scheduler(profiles, cache, queue, io, waiting_pods=waiting, seed=1)
    for name in ("n1", "n2"):
        cache.upsert_node(raw_node(name, cpu="2"))
    return Harness(scheduler, queue, cache, io, profile)


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    built = build_harness()
    scheduler = built.scheduler
    task = asyncio.create_task(scheduler.run())
    try:
        yield built
    finally:
        await scheduler.drain(grace=1)
        await asyncio.wait_for(task, 5)


def kube_messages(nodes: int, reason: str) -> tuple[str, str, str]:
    """kube-scheduler's FailedScheduling text: alone, with DefaultPreemption's part, and
    with DynamicResources' PostFilter verdict before it (kube 1.36's default profile),
    for a pod asking more than any node has at all (kube 1.36: unresolvable)."""
    base = f"0/{nodes} nodes are available: {nodes} {reason}."
    preemption = (
        f"preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful "
        "for scheduling."
    )
    return base, f"{base} {preemption}", f"{base} no new claims to deallocate, {preemption}"


def conflict(node: str) -> Status:
    err = Conflict(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to '
        f'node "{node}"',
        method="POST",
        path="/api/v1/namespaces/default/pods/p/binding",
    )
    return Status(Code.ERROR, (f"binding pod default/p: {err}",), error=err)


# -- binding outcome -------------------------------------------------------------------


def test_binding_outcome_classifies_api_answers() -> None:
    def result(status: Status) -> BindResult:
        return BindOutcome.from_status(status, "n1").result

    assert result(conflict("n1")) is BindResult.BOUND
    assert BindOutcome.from_status(conflict("n1"), "n1").by_earlier_attempt
    assert result(conflict("n2")) is BindResult.ASSIGNED_ELSEWHERE
    assert BindOutcome.from_status(conflict("n2"), "n1").assigned_to == "n2"
    gone = NotFound(404, "NotFound", 'pods "p" not found', method="POST", path="/x")
    assert result(Status(Code.ERROR, ("x",), error=gone)) is BindResult.POD_GONE
    deleting = Conflict(
        409, "Conflict", "pod p is being deleted, cannot be assigned to a host", path="/x"
    )
    assert result(Status(Code.ERROR, ("x",), error=deleting)) is BindResult.POD_GONE
    boom = ServerError(500, "InternalError", "etcd", path="/x")
    assert result(Status(Code.ERROR, ("x",), error=boom)) is BindResult.FAILED
    # A Bind plugin that reports only a message (no exception) is understood too.
    text_only = Status(Code.ERROR, ('pod p is already assigned to node "n9"',))
    assert result(text_only) is BindResult.ASSIGNED_ELSEWHERE
    assert result(Status(Code.ERROR, ("timeout",))) is BindResult.FAILED
    assert result(Status.success()) is BindResult.BOUND


# -- the loop ----------------------------------------------------------------------------


async def test_pod_is_bound_and_gets_a_scheduled_event(harness: Harness) -> None:
    harness.queue.add(pod("p", cpu="1"))
    await harness.wait(lambda: harness.scheduler.scheduled == 1, "the pod to be bound")
    assert len(harness.binder.calls) == 1
    node = harness.binder.calls[0][1]
    assert harness.io.notes("p", "Scheduled") == [f"Successfully assigned default/p to {node}"]
    assert "default/p" not in harness.queue
    assert harness.cache.table.node_of_pod("default/p") == node


async def test_the_binding_cycle_starts_within_the_decision() -> None:
    # kube-scheduler starts the binding goroutine at once; ours must not wait
    # behind everything else the event loop has ready: PreBind and Bind (here
    # neither waits for anything) run before the scheduling cycle returns.
    built = build_harness()
    built.queue.add(pod("p", cpu="1"))
    info = built.queue.pop_nowait()
    assert info is not None
    turned = [False]
    asyncio.get_running_loop().call_soon(turned.__setitem__, 0, True)
    built.scheduler.schedule_one(info)
    assert built.prebind.entered == {"p"}
    assert len(built.binder.calls) == 1
    assert built.scheduler.scheduled == 1 and not built.scheduler.busy
    assert built.io.reasons("p") == ["Scheduled"]
    assert turned == [False]
    # A PreBind that waits leaves the binding cycle running as a task.
    gate = asyncio.Event()
    built.prebind.hold["q"] = gate
    built.queue.add(pod("q", cpu="1"))
    held = built.queue.pop_nowait()
    assert held is not None
    built.scheduler.schedule_one(held)
    assert "q" in built.prebind.entered and built.scheduler.busy
    gate.set()
    await built.wait(lambda: built.scheduler.scheduled == 2, "the held pod to be bound")
    assert not built.scheduler.busy
    await built.scheduler.drain(grace=1)


async def test_an_answer_that_arrives_during_a_decision_is_dealt_with_before_the_next(
    harness: Harness,
) -> None:
    # The answer to pod a's binding arrives while pod b is being decided (its
    # binding cycle starts within the decision): a's binding cycle must end
    # before pod c is decided, not wait behind one more decision per step.
    answer = asyncio.Event()
    harness.prebind.hold["a"] = answer
    harness.prebind.on_enter["b"] = answer.set
    seen_by_c: list[list[str]] = []
    harness.prebind.on_enter["c"] = lambda: seen_by_c.append(harness.io.reasons("a"))
    harness.queue.add(pod("a", cpu="1"))
    await harness.wait(lambda: "a" in harness.prebind.entered, "a to wait for its answer")
    harness.queue.add(pod("b", cpu="1"))
    harness.queue.add(pod("c", cpu="1"))
    await harness.wait(lambda: harness.scheduler.scheduled == 3, "three bindings")
    assert seen_by_c == [["Scheduled"]]


async def test_unschedulable_pod_gets_kube_message_and_condition(harness: Harness) -> None:
    harness.queue.add(pod("big", cpu="3"))
    await harness.wait(lambda: harness.queue.where("default/big") == UNSCHEDULABLE, "rejection")
    notes = harness.io.notes("big", "FailedScheduling")
    assert len(notes) == 1 and notes[0] in kube_messages(2, "Insufficient cpu")
    await harness.wait(lambda: bool(harness.io.patches), "the condition patch")
    name, patch = harness.io.patches[0]
    condition = patch["status"]["conditions"][0]
    assert name == "big"
    assert condition["type"] == "PodScheduled" and condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == notes[0]
    assert harness.binder.calls == []


async def test_pod_bound_by_someone_else_is_dropped_without_retry(harness: Harness) -> None:
    harness.binder.script["p"] = [conflict("n-other")]
    harness.queue.add(pod("p", cpu="1"))
    await harness.wait(lambda: len(harness.binder.calls) == 1, "the bind attempt")
    await harness.wait(lambda: "default/p" not in harness.queue, "the pod to leave the queue")
    await asyncio.sleep(0.2)  # several backoff periods: nothing may retry
    assert len(harness.binder.calls) == 1
    assert "FailedScheduling" not in harness.io.reasons("p")
    assert not harness.cache.is_assumed("default/p")
    assert not harness.cache.table.has_pod("default/p")
    assert harness.scheduler.scheduled == 0


async def test_lost_answer_of_our_own_binding_counts_as_success(harness: Harness) -> None:
    harness.queue.add(pod("p", cpu="1"))
    harness.binder.script["p"] = [conflict("n1"), conflict("n2")]  # whichever node it picks
    await harness.wait(lambda: harness.scheduler.scheduled == 1, "success")
    assert harness.io.reasons("p") == ["Scheduled"]
    assert len(harness.binder.calls) == 1


async def test_server_error_on_bind_backs_off_and_retries(harness: Harness) -> None:
    harness.binder.script["p"] = [Status.error_status(ServerError(500, "InternalError", "etcd"))]
    harness.queue.add(pod("p", cpu="1"))
    await harness.wait(lambda: harness.scheduler.scheduled == 1, "the retry to bind")
    assert len(harness.binder.calls) == 2
    failed = harness.io.notes("p", "FailedScheduling")
    assert len(failed) == 1 and failed[0].startswith('running Bind plugin "ScriptedBinder": ')
    info_attempts = [r for r in harness.io.reasons("p") if r == "Scheduled"]
    assert info_attempts == ["Scheduled"]


async def test_node_deleted_during_prebind_sends_the_pod_elsewhere(harness: Harness) -> None:
    gate = asyncio.Event()
    harness.prebind.hold["p"] = gate
    harness.queue.add(pod("p", cpu="1"))
    await harness.wait(lambda: "p" in harness.prebind.entered, "PreBind to start")
    first = harness.cache.assumed["default/p"].node_name
    other = "n2" if first == "n1" else "n1"
    # What the daemon does on a node delete event.
    harness.cache.remove_node(first)
    harness.queue.move_on_event(NODE_DELETE, raw_node(first), None)
    gate.set()
    await harness.wait(lambda: harness.scheduler.scheduled == 1, "the pod to be bound")
    assert harness.binder.calls == [("p", other)]
    assert harness.io.notes("p", "FailedScheduling") == [f'node "{first}" was deleted']


async def test_pod_placed_by_someone_else_during_prebind_is_not_bound(harness: Harness) -> None:
    gate = asyncio.Event()
    harness.prebind.hold["p"] = gate
    harness.queue.add(pod("p", cpu="1"))
    await harness.wait(lambda: "p" in harness.prebind.entered, "PreBind to start")
    harness.cache.add_pod(pod("p", cpu="1", node="n2"))  # what the informer would do
    harness.queue.delete("default/p")
    gate.set()
    await harness.wait(lambda: not harness.scheduler.busy, "the binding cycle to end")
    assert harness.binder.calls == []
    assert harness.io.events == []
    assert harness.cache.table.node_of_pod("default/p") == "n2"


async def test_pod_deleted_during_binding_gets_no_events(harness: Harness) -> None:
    gate = asyncio.Event()
    harness.prebind.hold["p"] = gate
    harness.binder.script["p"] = [
        Status.error_status(NotFound(404, "NotFound", 'pods "p" not found', path="/x"))
    ]
    harness.queue.add(pod("p", cpu="1"))
    await harness.wait(lambda: "p" in harness.prebind.entered, "PreBind to start")
    harness.queue.delete("default/p")
    harness.cache.remove_pod("default/p")
    gate.set()
    await harness.wait(lambda: not harness.scheduler.busy, "the binding cycle to end")
    assert harness.io.events == []
    assert not harness.cache.table.has_pod("default/p")
    assert len(harness.queue) == 0


async def test_plugin_error_costs_only_that_pod(harness: Harness) -> None:
    harness.queue.add(pod("bad", cpu="1", labels={"explode": "yes"}))
    harness.queue.add(pod("good", cpu="1"))
    await harness.wait(lambda: harness.scheduler.scheduled == 1, "the good pod")
    await harness.wait(lambda: bool(harness.io.notes("bad", "FailedScheduling")), "the error")
    note = harness.io.notes("bad", "FailedScheduling")[0]
    assert "ExplodingFilter" in note and "kaboom" in note
    assert harness.queue.where("default/bad") in (BACKOFF, "in_flight", "active")
    assert not harness.cache.table.has_pod("default/bad")
    reasons = [p for p, *_ in harness.io.events if p == "good"]
    assert reasons == ["good"]


async def test_free_room_is_never_given_twice(harness: Harness) -> None:
    # Two nodes of 2 CPUs: exactly four 1-CPU pods fit, whatever the binding speed.
    gate = asyncio.Event()
    for i in range(6):
        harness.prebind.hold[f"p{i}"] = gate
        harness.queue.add(pod(f"p{i}", cpu="1"))
    await harness.wait(lambda: len(harness.prebind.entered) == 4, "four assumptions")
    await harness.wait(lambda: harness.queue.counts()[UNSCHEDULABLE] == 2, "two rejections")
    gate.set()
    await harness.wait(lambda: harness.scheduler.scheduled == 4, "four bindings")
    used = np.asarray([n for _, n in harness.binder.calls])
    assert sorted(np.unique(used, return_counts=True)[1].tolist()) == [2, 2]
