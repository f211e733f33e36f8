"""The extender step of a scheduling cycle: HTTP extenders between Filter and Score.

kube-scheduler calls its extenders inside the scheduling cycle
(``findNodesThatPassExtenders`` after the Filter plugins, then the
extenders' Prioritize in ``prioritizeNodes``). Our cycle never awaits, so a
pod that an extender is interested in takes a split cycle instead (see
``engine/scheduler.py``): the synchronous part up to the feasible nodes,
then this step's awaits, then Score and the choice on the nodes still
there. Pods no extender is interested in never come here.

The step is one plugin (the built-in ``Extender``, named by
:data:`~scheduler.config.extenders.EXTENDER_PLUGIN`) called through the
framework's async invocation: its budget, circuit breaker, failure policy
and the watchdog apply as to any plugin. Each extender's own rules (kube's
``ignorable``, ``httpTimeout``) are the plugin's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from scheduler.api.cyclestate import CycleState
from scheduler.api.preemption import Candidate
from scheduler.api.results import Diagnosis, Rejection
from scheduler.api.status import Code, Status
from scheduler.api.views import Pod
from scheduler.config.extenders import EXTENDER_PLUGIN, MAX_EXTENDER_PRIORITY
from scheduler.framework.extender_prefetch import ExtenderPrefetch
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.cycle import Algorithm, ScheduleResult
    from scheduler.framework.runtime import Framework, PluginCall
    from scheduler.state.nodetable import NodeTable

MAX_NODE_SCORE = 100


@dataclass(frozen=True, slots=True)
class ExtenderNodes:
    """Nodes as sent to extenders: names and API objects (aligned), taken before any await.

    Node objects are replaced, never changed, when a node is updated, so the
    references stay what they were when the cycle took them.
    """

    names: list[str]
    raws: list[Mapping[str, Any]]

    @classmethod
    def of(cls, nodes: NodeSet, objects: bool = True) -> ExtenderNodes:
        """``nodes``; without ``objects`` (every extender takes names only) no node objects."""
        if not objects:
            return cls(nodes.names, [])
        table_nodes = nodes.table.nodes
        rows = nodes.rows.tolist()
        return cls(nodes.names, [table_nodes[r].raw for r in rows])

    def __len__(self) -> int:
        return len(self.names)

    def only(self, names: Sequence[str]) -> ExtenderNodes:
        """These nodes narrowed to ``names`` (in that order; unknown names dropped)."""
        position = dict(zip(self.names, range(len(self.names)), strict=True))
        kept = [i for i in map(position.get, names) if i is not None]
        raws = [self.raws[i] for i in kept] if self.raws else []
        return ExtenderNodes([self.names[i] for i in kept], raws)


@dataclass(slots=True)
class ExtenderFilterVerdict:
    """One extender's answer to a filter call (kube's ``Filter`` return values)."""

    extender: str
    #: Nodes it let through (in its order).
    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ExtenderFilterOutcome:
    """All interested extenders' filter calls, in order, each on what the last left."""

    verdicts: list[ExtenderFilterVerdict] = field(default_factory=list)
    #: What passed the last extender called.
    passed: list[str] = field(default_factory=list)
    #: Non-empty: a non-ignorable extender failed; kube's error text (fails the pod).
    error: str = ""
    #: Ignorable extenders that failed and were skipped: (extender, error).
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class ExtenderScores:
    """One extender's priorities, as kube adds them: ``score * weight * 10``."""

    extender: str
    weight: int
    raw: dict[str, int]

    def final(self, node: str) -> int:
        return self.raw.get(node, 0) * self.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)


@dataclass(frozen=True, slots=True)
class ExtenderVictims:
    """The victims on one node as extenders see them (kube's ``extenderv1.Victims``)."""

    pods: list[Pod]
    num_pdb_violations: int


#: A node's pods by UID (None: no such node), to resolve the UIDs an extender answers with.
PodsOn = Callable[[str], Mapping[str, Pod] | None]


@dataclass(slots=True)
class ExtenderPreemptOutcome:
    """All interested extenders' preempt calls, in order, each on what the last left."""

    #: The candidates' victims after the last extender called (kube's ``victimsMap``).
    victims: dict[str, ExtenderVictims] = field(default_factory=dict)
    #: Non-empty: a non-ignorable extender failed; kube's error text (fails the preemption).
    error: str = ""
    #: Ignorable extenders that failed and were skipped: (extender, error).
    skipped: list[tuple[str, str]] = field(default_factory=list)


@runtime_checkable
class ExtenderStep(Protocol):
    """What the framework needs of the ``Extender`` plugin."""

    def interested(self, pod: Pod) -> bool:
        """Whether any extender takes part in this pod's cycle (kube's ``IsInterested``)."""

    def prioritizes(self, pod: Pod) -> bool:
        """Whether any extender with a ``prioritizeVerb`` is interested in the pod."""

    def needs_objects(self, pod: Pod) -> bool:
        """Whether an extender interested in the pod takes node objects (not nodeCacheCapable)."""

    def step_budget(self) -> float:
        """Seconds the filter and prioritize calls of one pod may take in all."""

    def preempts(self, pod: Pod) -> bool:
        """Whether an extender with a ``preemptVerb`` is interested in the pod."""

    def preempt_budget(self) -> float:
        """Seconds the preempt calls of one pod may take in all."""

    async def process_preemption(
        self,
        pod: Pod,
        victims: dict[str, ExtenderVictims],
        pods_on: PodsOn,
        deadline: float,
    ) -> ExtenderPreemptOutcome:
        """kube's ``callExtenders`` loop over ``ProcessPreemption``."""

    async def filter_nodes(
        self, pod: Pod, nodes: ExtenderNodes, deadline: float
    ) -> ExtenderFilterOutcome:
        """kube's ``findNodesThatPassExtenders``."""

    async def prioritize_nodes(
        self, pod: Pod, nodes: ExtenderNodes, deadline: float
    ) -> list[ExtenderScores]:
        """Every interested prioritizer's scores (failures give no score, as in kube)."""

    async def close(self) -> None:
        """Close the extenders' connection pools."""


#: Cycle-state key of the extenders' filter outcome (read by ``explain``).
FILTER_KEY = "pluggable-scheduler/extender-filter"
#: Cycle-state key of the extenders' scores.
SCORES_KEY = "pluggable-scheduler/extender-scores"
#: Cycle-state key of the extenders' preemption outcome.
PREEMPT_KEY = "pluggable-scheduler/extender-preempt"


class ExtenderRunner:
    """The framework's side of the step: calls under the plugin's guards."""

    def __init__(
        self,
        framework: Framework,
        step: ExtenderStep,
        filter_call: PluginCall,
        score_call: PluginCall,
        preempt_call: PluginCall,
    ) -> None:
        self.framework = framework
        self.step = step
        self.filter_call = filter_call
        self.score_call = score_call
        self.preempt_call = preempt_call
        #: Filter calls of the next pods, made during this one's (the engine enables it).
        self.prefetch = ExtenderPrefetch(step, step.step_budget())

    def interested(self, pod: PodInfo) -> bool:
        """Whether the pod's cycle awaits an extender (filter, prioritize or preempt)."""
        return self.step.interested(pod) or self.step.preempts(pod)

    def preempts(self, pod: PodInfo) -> bool:
        return self.step.preempts(pod)

    def deadline(self) -> float:
        """The pod's scheduling deadline for this step (a monotonic instant)."""
        return time.monotonic() + self.step.step_budget()

    async def filter(
        self,
        state: CycleState,
        pod: PodInfo,
        feasible: NodeSet,
        diagnosis: Diagnosis,
        deadline: float,
    ) -> tuple[list[str], Status]:
        """Names still feasible after the extenders, and Success or the pod's Error.

        Rejected nodes go into ``diagnosis`` under the extender's name, with
        the extender's reasons and code, as kube's ``NodeToStatus``.
        """
        from scheduler.framework.runtime import PluginFailure  # runtime imports this module

        framework = self.framework
        call = self.filter_call
        got: Any = await self.prefetch.take(pod, feasible)
        if got is None:
            nodes = ExtenderNodes.of(feasible, self.step.needs_objects(pod))
            try:
                got = await framework._invoke_async(call, (pod, nodes, deadline), pod)
            except PluginFailure as failure:
                if call.ignore:
                    framework._ignored(state, call, pod, failure)
                    return nodes.names, Status.success()
                return [], failure.status
        if not isinstance(got, ExtenderFilterOutcome):
            return [], framework._garbage(call, pod, got, "ExtenderFilterOutcome").status
        state.write(FILTER_KEY, got)
        record_rejections(got, feasible, diagnosis)
        if got.error:
            return [], Status(Code.ERROR, (got.error,), EXTENDER_PLUGIN)
        return got.passed, Status.success()

    async def prioritize(
        self, state: CycleState, pod: PodInfo, feasible: NodeSet, deadline: float
    ) -> list[ExtenderScores]:
        """The extenders' scores; a failed call gives none (kube logs and goes on)."""
        from scheduler.framework.runtime import PluginFailure  # runtime imports this module

        if not self.step.prioritizes(pod):
            return []
        nodes = ExtenderNodes.of(feasible, self.step.needs_objects(pod))
        framework = self.framework
        call = self.score_call
        try:
            got = await framework._invoke_async(call, (pod, nodes, deadline), pod)
        except PluginFailure as failure:
            framework._ignored(state, call, pod, failure)
            return []
        if not isinstance(got, list):
            framework._ignored(
                state, call, pod, framework._garbage(call, pod, got, "list of ExtenderScores")
            )
            return []
        state.write(SCORES_KEY, got)
        return got

    async def preempt(
        self,
        state: CycleState,
        pod: PodInfo,
        candidates: Sequence[Candidate],
        table: NodeTable,
    ) -> tuple[list[Candidate], Status]:
        """kube's ``callExtenders``: the candidates the preempt extenders leave, or an Error.

        Called between the dry run and the choice of a candidate. The
        extenders may drop candidates or narrow their victims; the UIDs they
        answer with are resolved against the pods on the node now.
        """
        from scheduler.framework.runtime import PluginFailure  # runtime imports this module

        victims: dict[str, ExtenderVictims] = {}
        for candidate in candidates:  # kube's CandidatesToVictimsMap: one entry per node
            victims[candidate.node] = ExtenderVictims(
                list(candidate.victims), candidate.num_pdb_violations
            )
        if not victims:
            return list(candidates), Status.success()
        deadline = time.monotonic() + self.step.preempt_budget()
        call = self.preempt_call
        framework = self.framework
        try:
            got = await framework._invoke_async(call, (pod, victims, pods_on(table), deadline), pod)
        except PluginFailure as failure:
            if call.ignore:
                framework._ignored(state, call, pod, failure)
                return list(candidates), Status.success()
            return [], failure.status
        if not isinstance(got, ExtenderPreemptOutcome):
            return [], framework._garbage(call, pod, got, "ExtenderPreemptOutcome").status
        state.write(PREEMPT_KEY, got)
        if got.error:
            return [], Status(Code.ERROR, (got.error,), EXTENDER_PLUGIN)
        out = [
            Candidate(node, tuple(v.pods), v.num_pdb_violations) for node, v in got.victims.items()
        ]
        return out, Status.success()


def pods_on(table: NodeTable) -> PodsOn:
    """What kube's ``convertPodUIDToPod`` searches: the pods on a node (assumed ones too)."""

    def lookup(node: str) -> Mapping[str, Pod] | None:
        row = table.row_of(node)
        if row is None:
            return None
        return {p.uid: p for p in table.pods[row].values() if p.uid}

    return lookup


def rows_of(table: NodeTable, names: list[str]) -> NodeSet:
    """``names`` as rows of ``table`` now (nodes deleted during an await drop out).

    Needed only when the names are not the very nodes sent (an extender
    dropped some) or the node set changed (``node_epoch``) during the await.
    """
    rows = [row for row in map(table.index.get, names) if row is not None]
    return NodeSet(table, np.asarray(rows, dtype=np.int64))


async def schedule_with_extenders(
    algorithm: Algorithm,
    runner: ExtenderRunner,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    percentage: int | None,
) -> ScheduleResult:
    """A whole split cycle: Filter, the extenders' filter and prioritize, Score, choice.

    kube's ``schedulePod`` with extenders, shared by the daemon and ``explain``.
    As in kube, a pod's nominated node is tried first (through the extenders
    too), and a single feasible node is chosen without scores, so the
    prioritizers are not called then.
    """
    if not runner.step.interested(pod):
        # Only a preemptVerb extender takes part: PostFilter awaits, the cycle does not.
        return algorithm.schedule(state, pod, table, percentage)
    deadline = runner.deadline()
    result, feasible = algorithm.find_feasible(state, pod, table, percentage, nominated=True)
    spent = algorithm.split_seconds
    if feasible is None and result.node is not None:
        # The nominated node passed the plugins: it is chosen if the extenders
        # pass it too; otherwise (or on their error, which kube only logs) the
        # full cycle follows.
        one = rows_of(table, [result.node])
        names, status = await runner.filter(state, pod, one, Diagnosis(), deadline)
        if status.is_success() and names:
            algorithm.framework.end_cycle(pod, spent)
            return result
        result, feasible = algorithm.find_feasible(state, pod, table, percentage)
        spent += algorithm.split_seconds
    algorithm.split_seconds = spent
    if feasible is None:
        algorithm.framework.end_cycle(pod, algorithm.split_seconds)
        return result
    epoch = table.node_epoch
    filtering = asyncio.ensure_future(
        runner.filter(state, pod, feasible, result.diagnosis, deadline)
    )
    if runner.prefetch.lookahead is not None and await runner.prefetch.settle(filtering):
        runner.prefetch.launch(algorithm, pod, table, percentage)
    names, status = await filtering
    if not status.is_success():
        result.status = status
        algorithm.framework.end_cycle(pod, algorithm.split_seconds)
        return result
    if names is not feasible.names or table.node_epoch != epoch:
        feasible = rows_of(table, names)
    extra: list[ExtenderScores] = []
    if len(feasible) > 1:
        epoch = table.node_epoch
        extra = await runner.prioritize(state, pod, feasible, deadline)
        if table.node_epoch != epoch:
            feasible = rows_of(table, feasible.names)
    return algorithm.pick_among(state, pod, feasible, result, list(extra))


def record_rejections(
    outcome: ExtenderFilterOutcome, feasible: NodeSet, diagnosis: Diagnosis
) -> None:
    """Each extender's failed nodes as a Rejection under its name (unresolvable first)."""
    table = feasible.table
    for verdict in outcome.verdicts:
        entries: dict[str, tuple[int, str]] = {}
        for name, reason in verdict.failed.items():
            entries[name] = (int(Code.UNSCHEDULABLE), reason)
        for name, reason in verdict.unresolvable.items():
            entries[name] = (int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), reason)
        rows, codes, bits, reasons = [], [], [], []
        index: dict[str, int] = {}
        for name, (code, reason) in entries.items():
            row = table.row_of(name)
            if row is None:
                continue
            bit = index.setdefault(reason, len(index))
            if bit >= 63:
                bit = 62
            rows.append(row)
            codes.append(code)
            bits.append(1 << bit)
        reasons = list(index)[:63]
        if rows:
            diagnosis.add(
                Rejection(
                    verdict.extender,
                    np.asarray(rows, dtype=np.int64),
                    np.asarray(codes, dtype=np.int8),
                    np.asarray(bits, dtype=np.uint64),
                    reasons,
                )
            )
