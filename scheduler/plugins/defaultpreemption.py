"""DefaultPreemption: kube-scheduler's PostFilter that makes room by evicting pods.

Called only when no node fits the pod. Semantics follow kube-scheduler's
``defaultpreemption`` plugin and its ``preemption.Evaluator``:

1. **Eligibility.** A pod with ``preemptionPolicy: Never`` never preempts. A
   pod that already has a nominated node does not preempt again while a
   lower-priority pod on that node is terminating *because of a preemption*
   (deletion started and condition ``DisruptionTarget=True`` with reason
   ``PreemptionByScheduler``), unless the filters now call that node
   UnschedulableAndUnresolvable. A pod whose previous preemption is still
   being carried out (its API calls are in flight) does not preempt either.
2. **Candidates.** Only nodes the Filter plugins rejected as Unschedulable
   (not UnschedulableAndUnresolvable) are tried. They are visited from a
   random offset, and the search stops once at least one candidate violates
   no PodDisruptionBudget and ``max(n * minCandidateNodesPercentage / 100,
   minCandidateNodesAbsolute)`` (at most ``n``) candidates were found.
3. **Victims on one node.** Every pod of lower priority is removed (from the
   live NodeTable and, through the PreFilter RemovePod extensions, from a
   copy of the cycle state); if the pod then passes every Filter plugin, the
   removed pods are re-added one by one, PDB-violating ones first and each
   group from the most important (higher priority, then earlier start), and
   each that still leaves room stays. The rest are the victims. Every check
   counts the pods nominated to the node with at least the pod's priority
   (kube's ``RunFilterPluginsWithNominatedPods``: Filter runs with them, then
   without them; both must pass). The table is restored before the next node
   is tried: the scheduling cycle is synchronous, so nobody else sees the
   what-if state. Where the Filter plugins that run only read a node's
   ``requested`` row of what pods change, and no AddPod/RemovePod extension
   runs, many nodes are evaluated at once, with the same outcome.
4. **Choice of node.** Fewest PDB violations, then the lowest highest-victim
   priority, the smallest sum of victim priorities, the fewest victims, the
   latest start time among the highest-priority victims, then the first.
5. **Action.** The victims are deleted in a background task (a waiting pod
   at Permit is rejected instead): first the ``DisruptionTarget`` condition
   is added to the victim's status, then ``DELETE`` with a UID precondition,
   then a ``Preempted`` event. Lower-priority pods nominated to the chosen
   node lose their nomination. The pod itself is nominated to the node by
   the framework from the returned :class:`PostFilterResult`. All victims
   but the last go in parallel; meanwhile PreEnqueue holds the pod back, and
   it is let through once the last victim is seen gone, so that victim's
   deletion event retries it (kube's order, which never strands the pod).

When no candidate exists, the status explains why per node, in kube's words
("preemption: 0/N nodes are available: ...").
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Protocol, Self, cast

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field, model_validator

from scheduler.api import (
    Code,
    CycleState,
    Diagnosis,
    Handle,
    ObjectStore,
    Plugin,
    PostFilterResult,
    Status,
    hookimpl,
)
from scheduler.model.selectors import LabelSelector, SelectorError
from scheduler.plugins._helpers import PluginArgs, coerce_args
from scheduler.state.nodetable import NodeInfo, NodeSet, NodeTable
from scheduler.state.pod import PodInfo

NAME = "DefaultPreemption"
PDB_RESOURCE = ("policy", "v1", "poddisruptionbudgets")

MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_IN_PROGRESS = "waiting for the preemption for this pod to be finished"
MESSAGE_PREFIX = "preemption: "

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

# kube adds MaxInt32 + 1 to every victim priority before summing, so that
# negative priorities do not make more victims look cheaper.
_PRIORITY_OFFSET = 2**31
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NEVER = 2**63 - 1  # a start time later than any

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
# What selecting victims on one node gives: victims, how many violate a budget, status.
VictimsResult = tuple[list[PodInfo], int, Status]

# Per-pod memo in ``PodInfo.cache``: the parsed start time.
_START_KEY = NAME + "/startTime"

# How long, at most, a preemptor waits to see its last victim gone before it may be
# retried anyway (kube's maximum backoff): long graceful deletions must not strand it.
LAST_VICTIM_HOLD_SECONDS = 10.0

# Nodes evaluated beyond those still needed, per chunk of the batched dry run.
BATCH_MARGIN = 16


class DefaultPreemptionArgs(PluginArgs):
    """``pluginConfig`` args, as kube-scheduler's ``DefaultPreemptionArgs``."""

    min_candidate_nodes_percentage: int = Field(default=10, ge=0, le=100)
    min_candidate_nodes_absolute: int = Field(default=100, ge=0)

    @model_validator(mode="after")
    def _not_both_zero(self) -> Self:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage cannot be zero at the same time as "
                "minCandidateNodesAbsolute"
            )
        return self


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where the pod fits once ``victims`` (most important first) are gone."""

    node: str
    victims: tuple[PodInfo, ...]
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """The parts of a policy/v1 PodDisruptionBudget that preemption reads."""

    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DisruptionBudget:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        try:
            selector = LabelSelector.from_dict(spec.get("selector"), "spec.selector")
        except SelectorError:
            # An invalid selector matches no pod (kube skips the budget).
            selector = LabelSelector.nothing()
        allowed = status.get("disruptionsAllowed")
        return cls(
            namespace=str(meta.get("namespace") or ""),
            selector=selector,
            disruptions_allowed=allowed if isinstance(allowed, int) else 0,
            disrupted_pods=frozenset(status.get("disruptedPods") or {}),
        )

    def selects(self, pod: PodInfo) -> bool:
        """Same namespace and a selector that matches; nil or empty selectors match nothing."""
        if self.namespace != pod.namespace or self.selector.is_everything:
            return False
        return self.selector.matches(pod.labels)


# -- pure helpers (kube's util functions) -------------------------------------------------


def start_time_ns(pod: PodInfo, now_ns: int) -> int:
    """``status.startTime`` in ns since the epoch; pods not started yet count as ``now``."""
    cache = pod.cache
    if _START_KEY in cache:
        parsed: int | None = cache[_START_KEY]
    else:
        parsed = cache[_START_KEY] = _parse_start_time(pod)
    return now_ns if parsed is None else parsed


def _parse_start_time(pod: PodInfo) -> int | None:
    value = (pod.raw.get("status") or {}).get("startTime")
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return (parsed - _EPOCH) // timedelta(microseconds=1) * 1000


def importance_key(now_ns: int) -> Callable[[PodInfo], tuple[int, int]]:
    """Sort key putting more important pods first: higher priority, then earlier start."""

    def key(pod: PodInfo) -> tuple[int, int]:
        return (-pod.priority, start_time_ns(pod, now_ns))

    return key


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], budgets: Sequence[DisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` (order kept) into those whose eviction would violate a budget and the rest.

    Each budget's ``disruptionsAllowed`` is spent by the pods it selects, in
    order; a pod already listed in the budget's ``disruptedPods`` is not
    counted again (the API server has processed its eviction).
    """
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:  # a pod without labels matches no budget
            for i, budget in enumerate(budgets):
                if not budget.selects(pod) or pod.name in budget.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """How many candidates the dry run looks for (kube's ``calculateNumCandidates``)."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


def earliest_start_of_most_important(victims: Sequence[PodInfo], now_ns: int) -> int:
    """The earliest start time among the highest-priority victims (kube's helper)."""
    top = max(p.priority for p in victims)
    return min(start_time_ns(p, now_ns) for p in victims if p.priority == top)


def pick_one_node(candidates: Sequence[Candidate], now_ns: int) -> Candidate:
    """kube's ``pickOneNodeForPreemption``: each criterion only breaks the previous one's ties."""
    criteria: tuple[Callable[[Candidate], int], ...] = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + _PRIORITY_OFFSET for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_most_important(c.victims, now_ns),
    )
    remaining = list(candidates)
    for score in criteria:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def terminating_by_preemption(pod: PodInfo) -> bool:
    """Deletion started and the first DisruptionTarget condition says a scheduler preempted it."""
    if not pod.deleting:
        return False
    for condition in (pod.raw.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
            )
    return False


def fit_error_message(total_nodes: int, statuses: Mapping[str, Status]) -> str:
    """kube's FitError text over the dry run's per-node statuses.

    Nodes without a status (never tried: preemption cannot help there) count
    as "Preemption is not helpful for scheduling".
    """
    counts: dict[str, int] = {}
    for status in statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent = total_nodes - len(statuses)
    if absent > 0:
        counts[MSG_NOT_HELPFUL] = counts.get(MSG_NOT_HELPFUL, 0) + absent
    text = f"0/{total_nodes} nodes are available:"
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    if parts:
        text += f" {', '.join(parts)}."
    return text


def _as_error(status: Status) -> Status:
    """Any failure of a PreFilter extension aborts the node's evaluation as an Error."""
    if status.code is Code.ERROR:
        return status
    reasons = status.reasons or (f"PreFilter extension of {status.plugin} failed",)
    return Status(Code.ERROR, reasons, status.plugin, status.error)


def _aggregate(errors: Sequence[Status]) -> Status:
    """One Error status for several (Go's ``utilerrors.NewAggregate`` rendering)."""
    if len(errors) == 1:
        return errors[0]
    messages = [e.message() for e in errors]
    return Status(Code.ERROR, (f"[{', '.join(messages)}]",), None, errors[0].error)


def _is_gone(err: BaseException) -> bool:
    """A 404 (victim already deleted) or 409 (UID precondition: a different pod now)."""
    return getattr(err, "status", None) in (404, 409)


def _stack(vectors: Sequence[IntArray], width: int) -> IntArray:
    """Vectors as the rows of a matrix; those made before a column was added are padded."""
    if any(len(v) != width for v in vectors):
        vectors = [np.pad(v, (0, width - len(v))) for v in vectors]
    return np.stack(vectors)


@dataclass(slots=True)
class _RowPods:
    """A node's pods as the batched dry run needs them, valid for one row generation."""

    generation: int
    resources: list[str]  # the table's column list: identifies the table
    width: int
    pods: list[PodInfo]
    vectors: IntArray  # what each pod adds to ``requested``
    priorities: IntArray
    total: IntArray
    min_priority: int
    max_priority: int
    # (pod, vector) most important first, as sorted at any "now" after ``latest_start``.
    in_order: list[tuple[PodInfo, IntArray]]
    latest_start: int


def _same_pod(a: PodInfo, b: PodInfo) -> bool:
    return a.key == b.key or (bool(a.uid) and a.uid == b.uid)


class _BatchFramework(Protocol):
    def run_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Any: ...


class _ExtensionFailed(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


# -- the plugin ------------------------------------------------------------------------------


class DefaultPreemption(Plugin):
    """kube-scheduler's default PostFilter: preempt lower-priority pods."""

    api_version = "1.0"
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel] | None] = DefaultPreemptionArgs
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (PDB_RESOURCE,)

    def __init__(self, args: Any, handle: Handle) -> None:
        parsed = coerce_args(DefaultPreemptionArgs, args)
        super().__init__(parsed, handle)
        self.min_candidate_nodes_percentage = parsed.min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = parsed.min_candidate_nodes_absolute
        #: Random offset into the candidate nodes (kube's ``rand.Int31n``); replaceable in tests.
        self.offset_rand: Callable[[int], int] = random.Random().randrange
        #: Clock for pods without a start time (they count as started now).
        self.clock_ns: Callable[[], int] = time.time_ns
        #: Evaluate nodes in chunks where that is exact (see ``batchable``); off: node by node.
        self.batching = True
        self._rows: dict[int, _RowPods] = {}
        self._preempting: set[str] = set()
        #: Preemptor uid -> (key, uid) of its last victim, until that victim is gone
        #: from the table or ``last_victim_hold`` seconds have passed.
        self._awaiting: dict[str, tuple[str, str]] = {}
        self._held: set[str] = set()
        self.last_victim_hold = LAST_VICTIM_HOLD_SECONDS
        self._tasks: set[asyncio.Task[None]] = set()
        # Ask for the PDB store now, not at the first preemption: the daemon
        # starts (and waits for) the informers of stores requested before it
        # runs. Handles without stores (minimal test fakes) get it lazily.
        self._pdb_store: ObjectStore | None = None
        if callable(getattr(handle, "store", None)):
            self._pdb_store = handle.store(*PDB_RESOURCE)

    @property
    def background_tasks(self) -> frozenset[asyncio.Task[None]]:
        """Preemptions still deleting their victims."""
        return frozenset(self._tasks)

    def is_preempting(self, uid: str) -> bool:
        """Whether the victims of this preemptor are still being deleted."""
        return uid in self._preempting

    # -- PreEnqueue -------------------------------------------------------------------------

    @hookimpl
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """Hold the pod back while its victims are being deleted (kube's async preemption).

        It stops counting as preempting before its last victim is deleted,
        so that victim's deletion event retries it once every victim is gone.
        Until that event, other events (the earlier victims' deletions) would
        retry it on a node that is not free yet, for a wasted attempt each:
        it stays held until its last victim (that very pod, by uid) is gone
        from the cache, for ``last_victim_hold`` seconds at most.
        """
        uid = pod.uid or pod.key
        if self.is_preempting(uid):
            return Status.unresolvable(MSG_IN_PROGRESS)
        awaited = self._awaiting.get(uid)
        if awaited is not None:
            key, victim_uid = awaited
            if self._cached_uid(key) == victim_uid:
                self._held.add(uid)
                return Status.unresolvable(MSG_IN_PROGRESS)
            self._stop_awaiting(uid)
        return None

    def _cached_uid(self, key: str) -> str | None:
        """The uid of the pod the cache holds under ``key`` on a node, if any."""
        table = self.handle.table
        node = table.node_of_pod(key)
        row = table.row_of(node) if node is not None else None
        cached = table.pods[row].get(key) if row is not None else None
        return (cached.uid or cached.key) if cached is not None else None

    def _await_last_victim(self, pod: PodInfo, victim: PodInfo) -> None:
        uid = pod.uid or pod.key
        victim_uid = victim.uid or victim.key
        self._awaiting[uid] = (victim.key, victim_uid)
        loop = asyncio.get_running_loop()
        loop.call_later(self.last_victim_hold, self._hold_expired, pod, victim_uid)

    def _hold_expired(self, pod: PodInfo, victim_uid: str) -> None:
        """The bound on the hold: a pod still held is retried now."""
        uid = pod.uid or pod.key
        awaited = self._awaiting.get(uid)
        if awaited is None or awaited[1] != victim_uid:
            return
        held = uid in self._held
        self._stop_awaiting(uid)
        if held:
            self.handle.activate_pods([pod])

    def _stop_awaiting(self, uid: str) -> None:
        self._awaiting.pop(uid, None)
        self._held.discard(uid)

    # -- PostFilter -------------------------------------------------------------------------

    @hookimpl
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> PostFilterResult:
        self.handle.record_preemption_attempt()  # kube counts every call, helpful or not
        result, status = self.preempt(state, pod, diagnosis)
        message = status.message()
        if message:
            status = Status(status.code, (MESSAGE_PREFIX + message,), status.plugin, status.error)
        return PostFilterResult(status, result)

    def preempt(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[str | None, Status]:
        """kube's ``Evaluator.Preempt``: the nominated node (or None) and the status."""
        if self.is_preempting(pod.uid or pod.key):
            return None, Status.unschedulable(MSG_IN_PROGRESS)
        table = self.handle.table
        eligible, why = self.pod_eligible_to_preempt_others(pod, diagnosis)
        if not eligible:
            return None, Status.unschedulable(why)
        total = len(table)
        if total == 0:
            return None, Status.error_status("no nodes available")
        now_ns = self.clock_ns()
        rows = self.potential_rows(diagnosis)
        candidates: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[Status] = []
        if len(rows):
            budgets = self.disruption_budgets()
            offset, num_candidates = self.get_offset_and_num_candidates(len(rows))
            candidates, statuses, errors = self.dry_run_preemption(
                state, pod, rows, budgets, offset, num_candidates, now_ns
            )
        if errors and not candidates:
            return None, _aggregate(errors)
        if not candidates:
            if pod.nominated_node_name:
                # kube clears the pod's own nomination when preemption cannot help.
                self._spawn(self._unnominate(pod), pod)
            return None, Status.unschedulable(fit_error_message(total, statuses))
        best = self.select_candidate(candidates, now_ns)
        self.prepare_candidate(best, pod)
        return best.node, Status.success()

    # -- eligibility ------------------------------------------------------------------------

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[bool, str]:
        """kube's ``PodEligibleToPreemptOthers``: (eligible, reason if not)."""
        if (pod.raw.get("spec") or {}).get("preemptionPolicy") == "Never":
            return False, MSG_PREEMPT_NEVER
        nominated = pod.nominated_node_name
        if not nominated:
            return True, ""
        table = self.handle.table
        if self.node_code(diagnosis, nominated) is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        row = table.row_of(nominated)
        if row is not None:
            for other in table.pods[row].values():
                if other.priority < pod.priority and terminating_by_preemption(other):
                    return False, MSG_TERMINATING
        return True, ""

    # -- candidates -------------------------------------------------------------------------

    @staticmethod
    def _absent_code(diagnosis: Diagnosis) -> Code:
        """The code of nodes the diagnosis has no verdict for.

        A PreFilter rejection leaves no per-node verdicts: kube gives its code
        to every node. Otherwise an absent node is one preemption cannot help
        (kube's default).
        """
        if not diagnosis.rejections and diagnosis.pre_filter_message:
            return diagnosis.pre_filter_code or Code.UNSCHEDULABLE
        return Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def node_code(self, diagnosis: Diagnosis, node_name: str) -> Code:
        """The Filter verdict's code for one node (absent nodes as kube treats them)."""
        row = self.handle.table.row_of(node_name)
        if row is not None:
            for rejection in diagnosis.rejections:
                hits = np.flatnonzero(rejection.rows == row)
                if len(hits):
                    return Code(int(rejection.codes[hits[0]]))
        return self._absent_code(diagnosis)

    def potential_rows(self, diagnosis: Diagnosis) -> IntArray:
        """NodeTable rows rejected only as Unschedulable, in row order."""
        table: NodeTable = self.handle.table
        if self._absent_code(diagnosis) is Code.UNSCHEDULABLE:
            return table.rows()
        rows = np.unique(diagnosis.resolvable_rows()).astype(np.int64)
        rows = rows[rows < table.size]
        return rows[table.alive[rows]]

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random start in the potential nodes and how many candidates to look for."""
        return self.offset_rand(num_nodes), calculate_num_candidates(
            num_nodes, self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        )

    def disruption_budgets(self) -> list[DisruptionBudget]:
        if self._pdb_store is None:
            self._pdb_store = self.handle.store(*PDB_RESOURCE)
        return [DisruptionBudget.from_dict(o) for o in self._pdb_store.list(None)]

    def nominated_by_node(self, pod: PodInfo) -> dict[str, list[PodInfo]]:
        """The pods nominated to each node whose room ``pod`` must leave alone.

        kube's ``addGENominatedPods``: nominated pods of equal or higher
        priority, other than the pod itself, that are not assumed or bound yet
        (those are in the table already). Lower-priority ones are ignored: a
        pod may take room freed for a less important one.
        """
        source = getattr(self.handle, "nominated_pods", None)
        if not callable(source):
            return {}
        nominations = cast("Mapping[str, Sequence[PodInfo]]", source())
        if not nominations:
            return {}
        table = self.handle.table
        out: dict[str, list[PodInfo]] = {}
        for node_name, pods in nominations.items():
            keep = [
                p
                for p in pods
                if p.priority >= pod.priority and not _same_pod(p, pod) and not table.has_pod(p.key)
            ]
            if keep:
                out[node_name] = keep
        return out

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        rows: IntArray,
        budgets: Sequence[DisruptionBudget],
        offset: int,
        num_candidates: int,
        now_ns: int,
        nominated: Mapping[str, Sequence[PodInfo]] | None = None,
    ) -> tuple[list[Candidate], dict[str, Status], list[Status]]:
        """Select victims node by node from ``offset`` until enough candidates are found.

        Returns the candidates (those violating no budget first), the status
        of every node visited that cannot become one, and the errors met.
        ``nominated`` defaults to :meth:`nominated_by_node`.

        Where :meth:`batchable` holds, nodes are evaluated in chunks (see
        :meth:`select_victims_batch`) in the same visiting order; results past
        the node where the search stops are discarded, so the outcome is the
        one of the node-by-node walk.
        """
        table = self.handle.table
        if nominated is None:
            nominated = self.nominated_by_node(pod)
        limit = max(num_candidates, 1)
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[Status] = []
        n = len(rows)
        order = np.concatenate((rows[offset:], rows[:offset])) if n else rows
        batch = self.batching and self.batchable(state)
        start = 0
        found = 0  # nodes visited that became candidates
        while start < n:
            results: Iterable[VictimsResult] | None = None
            if batch:
                # Enough nodes for the candidates still needed at the rate seen so far.
                need = max(limit - len(non_violating) - len(violating), 1)
                rate = (found + 1) / (start + 1)
                size = int(need * 1.25 / rate) + BATCH_MARGIN
                chunk = order[start : start + size]
                results = self.select_victims_batch(state, pod, chunk, budgets, now_ns, nominated)
            else:
                chunk = order[start : start + 1]
            if results is None:  # node by node (lazily: the walk may stop early)
                results = (
                    self.select_victims_on_node(
                        state.clone(),
                        pod,
                        row,
                        budgets,
                        now_ns,
                        nominated.get(table.names[row], ()),
                    )
                    for row in chunk.tolist()
                )
            start += len(chunk)
            for row, (victims, violations, status) in zip(chunk.tolist(), results, strict=False):
                node_name = table.names[row]
                if status.is_success() and victims:
                    found += 1
                    group = violating if violations else non_violating
                    if len(group) < limit:
                        group.append(Candidate(node_name, tuple(victims), violations))
                    if non_violating and len(non_violating) + len(violating) >= limit:
                        return non_violating + violating, statuses, errors
                    continue
                if status.is_success():
                    status = Status.error_status(
                        f'expected at least one victim pod on node "{node_name}"'
                    )
                if status.code is Code.ERROR:
                    errors.append(status)
                statuses[node_name] = status
        return non_violating + violating, statuses, errors

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        row: int,
        budgets: Sequence[DisruptionBudget],
        now_ns: int,
        nominated: Sequence[PodInfo] = (),
    ) -> VictimsResult:
        """kube's ``SelectVictimsOnNode``: the fewest pods whose removal lets ``pod`` fit.

        Returns the victims (most important first), how many of them violate
        a budget, and the status. Every check counts ``nominated`` (the pods
        nominated to this node that ``pod`` must make room for) as kube's
        ``RunFilterPluginsWithNominatedPods`` does. ``state`` is mutated (pass
        a clone); the table is restored before returning.
        """
        table = self.handle.table
        framework = self.handle.framework
        node = NodeInfo(table, row)
        node_name = table.names[row]
        potential = [p for p in table.pods[row].values() if p.priority < pod.priority]
        if not potential:
            return [], 0, Status.unresolvable(MSG_NO_VICTIMS)
        removed: dict[str, PodInfo] = {}

        def remove(victim: PodInfo) -> None:
            table.remove_pod(victim.key)
            removed[victim.key] = victim
            status = framework.run_pre_filter_remove_pod(state, pod, victim, node)
            if not status.is_success():
                raise _ExtensionFailed(_as_error(status))

        def add(victim: PodInfo) -> None:
            table.add_pod(victim, node_name)
            del removed[victim.key]
            status = framework.run_pre_filter_add_pod(state, pod, victim, node)
            if not status.is_success():
                raise _ExtensionFailed(_as_error(status))

        try:
            for victim in potential:
                remove(victim)
            status = self.filter_with_nominated(state, pod, node, nominated)
            if not status.is_success():
                return [], 0, status
            potential.sort(key=importance_key(now_ns))
            violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
            victims: list[PodInfo] = []
            num_violating = 0
            for group, violates in ((violating, 1), (non_violating, 0)):
                for victim in group:
                    add(victim)
                    if self.filter_with_nominated(state, pod, node, nominated).is_success():
                        continue
                    remove(victim)
                    victims.append(victim)
                    num_violating += violates
            if violating and non_violating:
                victims.sort(key=importance_key(now_ns))
            return victims, num_violating, Status.success()
        except _ExtensionFailed as failed:
            return [], 0, failed.status
        finally:
            _restore(table, removed.values(), node_name)

    def filter_with_nominated(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, nominated: Sequence[PodInfo]
    ) -> Status:
        """kube's ``RunFilterPluginsWithNominatedPods`` on one node.

        With ``nominated`` pods, Filter runs first as if they were on the node
        (added to the table and, through the PreFilter AddPod extensions, to a
        copy of ``state``), then, if that passed, without them: both must pass.
        """
        framework = self.handle.framework
        if nominated:
            table = node.table
            trial = state.clone()
            added: list[str] = []
            try:
                for other in nominated:
                    table.add_pod(other, node.name)
                    added.append(other.key)
                    extension = framework.run_pre_filter_add_pod(trial, pod, other, node)
                    if not extension.is_success():
                        return _as_error(extension)
                status = framework.run_filter_with_nominated(trial, pod, node)
            finally:
                for key in added:
                    table.remove_pod(key)
            if not status.is_success():
                return status
        return framework.run_filter_with_nominated(state, pod, node)

    # -- the same, for many nodes at once ---------------------------------------------------

    def batchable(self, state: CycleState) -> bool:
        """Whether :meth:`select_victims_batch` is exact for this pod's cycle.

        It is when the framework says a what-if may edit ``requested`` rows
        alone (no AddPod/RemovePod extension runs and every Filter that runs
        declares ``pods_via_requested``): a node's what-if state is then its
        ``requested`` row, and one Filter run judges many nodes.
        """
        check = getattr(self.handle.framework, "filters_read_requested_only", None)
        return bool(check(state)) if callable(check) else False

    def select_victims_batch(
        self,
        state: CycleState,
        pod: PodInfo,
        rows: IntArray,
        budgets: Sequence[DisruptionBudget],
        now_ns: int,
        nominated: Mapping[str, Sequence[PodInfo]],
    ) -> list[VictimsResult] | None:
        """:meth:`select_victims_on_node` for each of ``rows``, all at once.

        Only valid where :meth:`batchable` holds. Every lower-priority pod is
        taken off its node's ``requested`` row, one Filter run (two with
        nominated pods) tells which nodes can become candidates, then the
        reprieves go in rounds: round *k* puts back each candidate's *k*-th
        pod in reprieve order and one Filter run decides for all of them. The
        rows are restored before returning. None if a Filter plugin failed
        (the caller then goes node by node, which tells which node erred).
        """
        table = self.handle.table
        priority = pod.priority
        results: list[VictimsResult | None] = [None] * len(rows)
        row_list = rows.tolist()
        generations = table.generation[rows].tolist()
        positions: list[int] = []  # of the nodes with potential victims
        memos: list[_RowPods] = []
        lower_rows: list[IntArray] = []
        nominated_vectors: list[IntArray] = []
        nominated_owners: list[int] = []
        for position, row in enumerate(row_list):
            memo = self._row_pods(table, row, generations[position])
            if memo.min_priority >= priority:
                results[position] = ([], 0, Status.unresolvable(MSG_NO_VICTIMS))
                continue
            j = len(positions)
            positions.append(position)
            memos.append(memo)
            if memo.max_priority < priority:
                lower_rows.append(memo.total)
            else:
                lower_rows.append(memo.vectors[memo.priorities < priority].sum(axis=0))
            for other in nominated.get(table.names[row], ()):
                nominated_vectors.append(table.occupancy(other))
                nominated_owners.append(j)
        if not positions:
            return cast("list[VictimsResult]", results)
        width = len(table.resources)  # final: the vectors above added any new column
        count = len(positions)
        lower = _stack(lower_rows, width)
        extra = np.zeros((count, width), dtype=np.int64)
        has_extra = np.zeros(count, dtype=np.bool_)
        if nominated_vectors:
            np.add.at(extra, nominated_owners, _stack(nominated_vectors, width))
            has_extra[nominated_owners] = True
        target = rows[positions]
        requested = table.requested
        saved = requested[target]
        victims: list[list[PodInfo]] = [[] for _ in range(count)]
        violations = [0] * count
        mixed: set[int] = set()
        key = importance_key(now_ns)
        try:
            requested[target] -= lower
            first = self._filter_batch(state, pod, target, extra, has_extra)
            if first is None:
                return None
            fits, diagnoses = first
            plans: dict[int, list[tuple[PodInfo, IntArray, int]]] = {}
            for j in np.flatnonzero(fits).tolist():
                memo = memos[j]
                if memo.latest_start < now_ns:
                    pairs = memo.in_order
                else:
                    pairs = sorted(
                        zip(memo.pods, memo.vectors, strict=True), key=lambda x: key(x[0])
                    )
                if memo.max_priority >= priority:
                    pairs = [pair for pair in pairs if pair[0].priority < priority]
                if not budgets:
                    plans[j] = [(p, v, 0) for p, v in pairs]
                    continue
                violating, non_violating = filter_pods_with_pdb_violation(
                    [p for p, _ in pairs], budgets
                )
                bad = {id(p) for p in violating}
                plans[j] = [(p, v, 1) for p, v in pairs if id(p) in bad] + [
                    (p, v, 0) for p, v in pairs if id(p) not in bad
                ]
                if violating and non_violating:
                    mixed.add(j)
            active = list(plans)
            k = 0
            while active:
                active = [j for j in active if len(plans[j]) > k]
                if not active:
                    break
                index = np.asarray(active, dtype=np.int64)
                some = target[index]
                back = np.stack([plans[j][k][1] for j in active])
                requested[some] += back
                got = self._filter_batch(state, pod, some, extra[index], has_extra[index])
                if got is None:
                    return None
                failed = ~got[0]
                if failed.any():
                    requested[some[failed]] -= back[failed]
                    for a in np.flatnonzero(failed).tolist():
                        j = active[a]
                        victim, _, violates = plans[j][k]
                        victims[j].append(victim)
                        violations[j] += violates
                k += 1
        finally:
            if table.requested is requested:
                requested[target] = saved
            else:  # a column was added meanwhile (the table copied the arrays)
                table.requested[target, : saved.shape[1]] = saved
        verdicts: dict[str, Any] = {}
        for diagnosis in diagnoses:
            verdicts.update(diagnosis.node_verdicts)
        for j, position in enumerate(positions):
            if fits[j]:
                chosen = victims[j]
                if j in mixed:
                    chosen.sort(key=key)
                results[position] = (chosen, violations[j], Status.success())
                continue
            verdict = verdicts.get(table.names[row_list[position]])
            status = (
                Status(verdict.code, tuple(verdict.reasons), verdict.plugin)
                if verdict is not None
                else Status.unschedulable()
            )
            results[position] = ([], 0, status)
        return cast("list[VictimsResult]", results)

    def _row_pods(self, table: NodeTable, row: int, generation: int) -> _RowPods:
        """The pods on a row with their priorities and vectors (memoised per row).

        Valid while the row holds the same pod objects in the same order: a
        what-if that adds and removes a pod (the cycle's nominated-pods check)
        moves the row's generation but leaves the memo good.
        """
        memo = self._rows.get(row)
        on_row = table.pods[row]
        if (
            memo is not None
            and memo.resources is table.resources
            and memo.width == len(table.resources)
        ):
            if memo.generation == generation:
                return memo
            if len(memo.pods) == len(on_row) and all(
                a is b for a, b in zip(memo.pods, on_row.values(), strict=True)
            ):
                memo.generation = generation
                return memo
        pods = list(on_row.values())
        vectors = [table.occupancy(p) for p in pods]
        width = len(table.resources)
        matrix = _stack(vectors, width) if pods else np.zeros((0, width), dtype=np.int64)
        priorities = np.asarray([p.priority for p in pods], dtype=np.int64)
        # The reprieve order, with pods not started yet last among their priority:
        # what sorting with any "now" later than every known start time gives.
        starts = [start_time_ns(p, _NEVER) for p in pods]
        latest_start = max((t for t in starts if t != _NEVER), default=-_NEVER)
        order = sorted(range(len(pods)), key=lambda i: (-pods[i].priority, starts[i]))
        in_order = [(pods[i], matrix[i]) for i in order]
        memo = _RowPods(
            generation=generation,
            resources=table.resources,
            width=width,
            pods=pods,
            vectors=matrix,
            priorities=priorities,
            total=matrix.sum(axis=0),
            min_priority=min((p.priority for p in pods), default=2**63 - 1),
            max_priority=max((p.priority for p in pods), default=-(2**63)),
            in_order=in_order,
            latest_start=latest_start,
        )
        self._rows[row] = memo
        return memo

    def _filter_batch(
        self,
        state: CycleState,
        pod: PodInfo,
        rows: IntArray,
        extra: IntArray,
        has_extra: BoolArray,
    ) -> tuple[BoolArray, list[Diagnosis]] | None:
        """Filter ``rows`` with nominated pods (``extra`` requests) counted, then without.

        Returns which rows pass both and the diagnoses of the runs (each
        failing row is in exactly one); None if a Filter plugin failed.
        """
        table = self.handle.table
        run_filter = cast("_BatchFramework", self.handle.framework).run_filter
        requested = table.requested
        with_extra = np.flatnonzero(has_extra)
        if len(with_extra):
            loaded = rows[with_extra]
            requested[loaded] += extra[with_extra]
            try:
                outcome = run_filter(state, pod, NodeSet(table, rows))
            finally:
                requested[loaded] -= extra[with_extra]
        else:
            outcome = run_filter(state, pod, NodeSet(table, rows))
        if not outcome.status.is_success():
            return None
        fits = np.isin(rows, outcome.feasible.rows)
        diagnoses = [outcome.diagnosis]
        again = np.flatnonzero(has_extra & fits)
        if len(again):
            second = run_filter(state, pod, NodeSet(table, rows[again]))
            if not second.status.is_success():
                return None
            fits[again] = np.isin(rows[again], second.feasible.rows)
            diagnoses.append(second.diagnosis)
        return fits, diagnoses

    def select_candidate(self, candidates: Sequence[Candidate], now_ns: int) -> Candidate:
        """The best candidate by kube's criteria (see :func:`pick_one_node`)."""
        if len(candidates) == 1:
            return candidates[0]
        return pick_one_node(candidates, now_ns)

    # -- acting on the choice -----------------------------------------------------------------

    def prepare_candidate(self, candidate: Candidate, pod: PodInfo) -> None:
        """Start evicting the victims and clearing lower-priority nominations, in the background.

        Where no event loop runs (``explain``), nothing is evicted: the
        nomination is the answer.
        """
        victims = [v for v in candidate.victims if not v.deleting]
        if victims:  # kube's async preemption observes only when it has pods to evict
            self.handle.record_preemption_victims(len(candidate.victims))
        if self._spawn(self._evict(candidate.node, pod, victims), pod) and victims:
            # Marked now, not when the task first runs: a retry of the pod
            # in between must already see the preemption in progress. With
            # every victim already terminating there is nothing to wait for
            # (and no deletion of ours whose event would release the pod).
            self._preempting.add(pod.uid or pod.key)

    def _spawn(self, coro: Any, pod: PodInfo) -> bool:
        """Run ``coro`` as a background task (kept referenced); False without a loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            coro.close()
            self.handle.logger.info("preemption not carried out: no event loop", pod=pod.key)
            return False
        task: asyncio.Task[None] = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _evict(self, node: str, pod: PodInfo, victims: list[PodInfo]) -> None:
        uid = pod.uid or pod.key
        failed = silent = False
        try:
            try:
                await self._clear_lower_priority_nominations(pod, node)
            except Exception as err:  # not critical, as in kube
                failed = True
                self.handle.logger.warning(
                    "cannot clear nominatedNodeName of lower-priority pods",
                    node=node,
                    error=str(err),
                )
            # Every victim but the last in parallel; the pod stops counting as
            # preempting before the last one goes (kube's order). Otherwise all
            # the deletion events could be handled while it still counts, its
            # retry would be turned away ("waiting for the preemption ...") and
            # no further event would come to retry it.
            failed |= await self._preempt_victims(pod, node, victims[:-1])
            last = victims[-1:]
            # A waiting victim is rejected at Permit, not deleted: no event follows.
            silent = (
                bool(last) and self.handle.get_waiting_pod(last[0].uid or last[0].key) is not None
            )
            if last and not silent:
                self._await_last_victim(pod, last[0])
            self._preempting.discard(uid)
            failed |= await self._preempt_victims(pod, node, last)
        finally:
            self._preempting.discard(uid)
        if failed or silent:
            self._stop_awaiting(uid)
            # The pod may wait in the unschedulable pool for events that will
            # not come; retry it now, as kube does.
            self.handle.activate_pods([pod])

    async def _preempt_victims(self, pod: PodInfo, node: str, victims: list[PodInfo]) -> bool:
        """Preempt ``victims`` concurrently; True if any failed (each failure is logged)."""
        results = await asyncio.gather(
            *(self._preempt_victim(pod, node, v) for v in victims), return_exceptions=True
        )
        failed = False
        for victim, outcome in zip(victims, results, strict=True):
            if isinstance(outcome, BaseException):
                failed = True
                self.handle.logger.warning(
                    "preempting victim failed",
                    pod=pod.key,
                    victim=victim.key,
                    node=node,
                    error=str(outcome),
                )
        return failed

    async def _preempt_victim(self, pod: PodInfo, node: str, victim: PodInfo) -> None:
        waiting = self.handle.get_waiting_pod(victim.uid or victim.key)
        if waiting is not None:
            waiting.reject(NAME, "preempted")
        else:
            client = self.handle.client
            base = f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}"
            condition = {
                "type": DISRUPTION_TARGET,
                "status": "True",
                "reason": REASON_PREEMPTION_BY_SCHEDULER,
                "message": f"{pod.scheduler_name}: preempting to accommodate a higher priority pod",
            }
            if not _has_condition(victim, condition):
                patch = {
                    "metadata": {"uid": victim.uid},
                    "status": {
                        "conditions": [
                            {**condition, "lastTransitionTime": _now_rfc3339(self.clock_ns())}
                        ]
                    },
                }
                try:
                    await client.request(
                        "PATCH", base + "/status", body=patch, content_type=STRATEGIC_MERGE_PATCH
                    )
                except Exception as err:
                    if _is_gone(err):
                        return
                    raise
            options = {
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "preconditions": {"uid": victim.uid},
            }
            try:
                await client.request("DELETE", base, body=options)
            except Exception as err:
                if _is_gone(err):
                    return
                raise
        self.handle.record_event(
            victim,
            "Normal",
            "Preempted",
            f"Preempted by pod {pod.uid} on node {node}",
            "Preempting",
        )

    async def _unnominate(self, pod: PodInfo) -> None:
        try:
            await self._clear_nominations([pod.raw])
        except Exception as err:  # best effort: the next attempt tries again
            self.handle.logger.info(
                "cannot clear the pod's nominatedNodeName", pod=pod.key, error=str(err)
            )

    async def _clear_lower_priority_nominations(self, pod: PodInfo, node: str) -> None:
        """Lower-priority pods nominated to ``node`` may not fit any more: un-nominate them.

        The nominations come from the scheduling queue (as kube's nominator
        answers them), not from listing pods: no API read per preemption.
        """
        table = self.handle.table
        lower = [
            other.raw
            for other in self.handle.nominated_pods().get(node, ())
            if other.priority < pod.priority
            and other.uid != pod.uid
            and not table.has_pod(other.key)
        ]
        await self._clear_nominations(lower)

    async def _clear_nominations(self, pods: Iterable[Mapping[str, Any]]) -> None:
        client = self.handle.client
        for raw in pods:
            meta = raw.get("metadata") or {}
            path = (
                f"/api/v1/namespaces/{meta.get('namespace') or 'default'}"
                f"/pods/{meta.get('name') or ''}/status"
            )
            patch = {"metadata": {"uid": meta.get("uid")}, "status": {"nominatedNodeName": None}}
            try:
                await client.request("PATCH", path, body=patch, content_type=STRATEGIC_MERGE_PATCH)
            except Exception as err:
                if not _is_gone(err):
                    raise


def _restore(table: NodeTable, pods: Iterable[PodInfo], node_name: str) -> None:
    for pod in list(pods):
        table.add_pod(pod, node_name)


def _has_condition(pod: PodInfo, condition: Mapping[str, str]) -> bool:
    for existing in (pod.raw.get("status") or {}).get("conditions") or ():
        if isinstance(existing, Mapping) and all(
            existing.get(k) == v for k, v in condition.items()
        ):
            return True
    return False


def _now_rfc3339(now_ns: int) -> str:
    return datetime.fromtimestamp(now_ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
