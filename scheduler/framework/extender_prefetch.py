"""Extender filter calls issued ahead: the next pods' round trips overlap this one's.

A pod an HTTP extender filters waits for that round trip, and the loop takes
the next pod only after the decision (as kube-scheduler's does). Most of the
wait is the extender's own work and the network, not ours: while pod N's
call is in flight, the pods queued behind it are known. So during N's wait
the next few pods (:data:`DEPTH`) run PreFilter and Filter on the table as
it is, and their extender filter calls are sent. Decisions stay sequential
and exact: when such a pod's own cycle comes, Filter runs again on the table
*then* (with N and every earlier pod assumed; node-local results come from
the batch cache, so this costs little for replicas), and the early answer is
used only if every node feasible now was among the nodes sent, restricted to
those nodes (the extender's verdict on a node does not depend on the other
nodes of the list, as in kube, which sends whatever Filter left). Otherwise,
or if the pod, the node set or the extenders' answer changed or failed, the
call is made again as without prefetching.

What an extender sees differs from kube-scheduler only in timing: pod N+1's
filter call may reach it before it has answered pod N's (kube's extender
also sees pods before earlier ones are bound). An extender whose filter
verdict for a pod depends on the filter calls of the pods before it would
need the calls serialized; ``bindVerb`` extenders (which keep such state to
bind) get no calls ahead.

Calls go ahead only when the loop would otherwise wait: each costs a
PreFilter and Filter run that the pod's turn repeats, and the loop has its
own work (binding cycles, informers) to do during a pod's round trip. So
the pod's call first gets :data:`SETTLE_STEPS` loop iterations to come
back; a fast extender's answer is there by then (on a busy loop those
iterations run the bindings that were waiting), and nothing goes ahead.
With a no-op extender on the same machine, the early PreFilter and Filter
runs were about a quarter of our profiled time per pod at 5,000 nodes, for
a round trip the loop's other work filled anyway (BENCHMARKS.md,
"SchedulingBasic with one no-op HTTP extender"); with a slow extender the
early calls are what keeps the loop busy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.observability.logging import get_logger
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.cycle import Algorithm
    from scheduler.framework.extenders import (
        ExtenderFilterOutcome,
        ExtenderNodes,
        ExtenderStep,
    )

log = get_logger("scheduler.framework.extender_prefetch")

#: How many queued pods get their extender filter call ahead of their cycle.
DEPTH = 4
#: Early calls kept at most (pods deleted or re-ordered before their cycle).
MAX_KEPT = 4 * DEPTH
#: Loop iterations a pod's own filter call gets to come back before calls go ahead.
SETTLE_STEPS = 4

Lookahead = Callable[[int], Sequence[PodInfo]]
"""The next ``n`` pods the loop will take, in order (without taking them)."""


@dataclass
class _Early:
    """One pod's filter call made ahead of its cycle."""

    raw: Any  # the pod object sent (identity: a pod update replaces it)
    node_epoch: int
    sent: frozenset[str]
    task: asyncio.Task[ExtenderFilterOutcome]
    #: The sampling start after this pod's Filter (the next pod's start).
    start_after: int


class ExtenderPrefetch:
    """The early filter calls of one profile's extenders (see the module docstring)."""

    def __init__(self, step: ExtenderStep, budget: float) -> None:
        self.step = step
        self.budget = budget
        #: Set by the engine: the queue's next pods. None: no calls ahead (``explain``).
        self.lookahead: Lookahead | None = None
        self._early: dict[str, _Early] = {}
        self.hits = 0
        self.misses = 0

    def eligible(self, pod: PodInfo) -> bool:
        """A pod whose filter call may go ahead: a filter extender is interested, it
        has no nominated node, and no extender of it binds (a binding extender keeps
        per-pod state)."""
        step = self.step
        filters = getattr(step, "filters", step.interested)
        binds = getattr(step, "binds", None)
        return bool(
            filters(pod) and not pod.nominated_node_name and not (callable(binds) and binds(pod))
        )

    async def settle(self, answer: asyncio.Future[Any]) -> bool:
        """Let the loop run what is ready while ``answer`` comes; whether it is still due."""
        for _ in range(SETTLE_STEPS):
            if answer.done():
                return False
            await asyncio.sleep(0)
        return not answer.done()

    def launch(
        self, algorithm: Algorithm, pod: PodInfo, table: NodeTable, percentage: int | None
    ) -> None:
        """Send the filter calls of the pods queued after ``pod`` (whose Filter ran)."""
        if self.lookahead is None:
            return
        upcoming = self.lookahead(DEPTH)
        if not upcoming:
            return
        saved = (
            algorithm.next_start,
            algorithm.split_signature,
            algorithm.split_pod,
            algorithm.split_seconds,
        )
        start = algorithm.next_start
        try:
            for other in upcoming:
                if other.key == pod.key or not self.eligible(other):
                    break  # a pod not sent ahead takes its own sampling start: stop here
                early = self._early.get(other.key)
                if early is not None and early.raw is other.raw:
                    start = early.start_after
                    continue
                algorithm.next_start = start
                try:
                    launched = self._launch_one(algorithm, other, table, percentage)
                except Exception:  # work ahead must never cost the pod being decided
                    log.exception("extender filter call ahead failed", pod=other.key)
                    break
                if launched is None:
                    break
                start = launched.start_after
        finally:
            (
                algorithm.next_start,
                algorithm.split_signature,
                algorithm.split_pod,
                algorithm.split_seconds,
            ) = saved
        self._trim()

    def _launch_one(
        self, algorithm: Algorithm, pod: PodInfo, table: NodeTable, percentage: int | None
    ) -> _Early | None:
        from scheduler.framework.extenders import ExtenderNodes  # imports this module
        from scheduler.framework.runtime import IGNORED_KEY

        state = algorithm.framework.new_cycle_state()
        _, feasible = algorithm.find_feasible(state, pod, table, percentage)
        if algorithm.batch is not None and state.get(IGNORED_KEY):
            algorithm.batch.clear()
        if feasible is None or not len(feasible):
            return None
        nodes = ExtenderNodes.of(feasible, self.step.needs_objects(pod))
        deadline = time.monotonic() + self.budget
        task = asyncio.ensure_future(self._call(pod, nodes, deadline))
        self._cancel(pod.key)
        early = _Early(
            pod.raw, table.node_epoch, frozenset(nodes.names), task, algorithm.next_start
        )
        self._early[pod.key] = early
        return early

    async def _call(
        self, pod: PodInfo, nodes: ExtenderNodes, deadline: float
    ) -> ExtenderFilterOutcome:
        async with asyncio.timeout(self.budget):
            return await self.step.filter_nodes(pod, nodes, deadline)

    async def take(self, pod: PodInfo, feasible: NodeSet) -> ExtenderFilterOutcome | None:
        """The early answer for ``pod`` on ``feasible`` (its Filter now), or None."""
        early = self._early.pop(pod.key, None)
        if early is None:
            return None
        names = feasible.names
        if (
            early.raw is not pod.raw
            or early.node_epoch != feasible.table.node_epoch
            or not early.sent.issuperset(names)
        ):
            early.task.cancel()
            self.misses += 1
            return None
        try:
            got = await asyncio.shield(early.task)
        except Exception:  # a failed early call is made again, as without prefetching
            self.misses += 1
            return None
        if got.error or got.skipped:
            self.misses += 1  # errors are the extender's word on this pod now, not then
            return None
        self.hits += 1
        if len(early.sent) != len(names):  # a node taken since: drop it from the answer
            got = restricted(got, names)
        if got.passed == names:
            got.passed = names  # every node passed: the caller keeps its rows
        return got

    def _cancel(self, key: str) -> None:
        early = self._early.pop(key, None)
        if early is not None:
            early.task.cancel()

    def _trim(self) -> None:
        while len(self._early) > MAX_KEPT:
            self._cancel(next(iter(self._early)))

    def close(self) -> None:
        for key in list(self._early):
            self._cancel(key)


def restricted(outcome: ExtenderFilterOutcome, names: Sequence[str]) -> ExtenderFilterOutcome:
    """``outcome`` as if the extenders had been sent only ``names`` (a subset of theirs)."""
    from scheduler.framework.extenders import (  # imports this module
        ExtenderFilterOutcome,
        ExtenderFilterVerdict,
    )

    keep = set(names)
    verdicts = [
        ExtenderFilterVerdict(
            v.extender,
            [n for n in v.passed if n in keep],
            {n: r for n, r in v.failed.items() if n in keep},
            {n: r for n, r in v.unresolvable.items() if n in keep},
        )
        for v in outcome.verdicts
    ]
    passed = [n for n in outcome.passed if n in keep]
    return ExtenderFilterOutcome(verdicts, passed)
