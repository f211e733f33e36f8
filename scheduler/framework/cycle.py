"""One scheduling decision: PreFilter -> Filter -> PreScore -> Score -> pick.

This is kube-scheduler's ``schedulePod`` over a NodeTable. It is shared by
the daemon's scheduling cycle and by ``explain``, so what ``explain`` shows is
exactly what the daemon would decide.

``percentageOfNodesToScore`` set (at the top level or in the profile, which
wins) has kube's meaning: Filter runs from where the previous cycle stopped
and stops once it has found ``num_feasible_nodes_to_find`` feasible nodes
(0: kube's adaptive percentage), and only those are scored. Filtering is
vectorized, so "node by node until enough" becomes windows of rows: the
first window is about the sample size, the next ones sized from the
feasible ratio seen so far, and the window that completes the count is cut
at its last needed node, so what is evaluated, found and skipped is what
kube's sequential reading gives. Unset, we filter and score every node up
to :data:`ALL_NODES_UP_TO` candidates (no dependence on where a sample
starts, and it stays cheap there), and apply kube's adaptive rule above.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from scheduler.api.cyclestate import CycleState
from scheduler.api.results import Diagnosis, PreFilterResult, Rejection
from scheduler.api.status import Code, Status
from scheduler.framework.batching import BatchCache, pod_signature
from scheduler.framework.handle import Nominator
from scheduler.framework.nominated import filter_with_nominated, nominated_rows
from scheduler.framework.runtime import (
    FILTER_OVERLAY_KEY,
    IGNORED_KEY,
    PREFILTER_NARROWING_KEY,
    FilterOutcome,
    Framework,
    PluginScores,
    ScoreOutcome,
)
from scheduler.state.labels import IntArray
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.whatif import WhatIfTable

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
#: With percentageOfNodesToScore unset, clusters up to this many candidate
#: nodes (after PreFilter) are filtered and scored whole; larger ones take
#: kube's adaptive sample. Measured in BENCHMARKS.md ("Decision time").
ALL_NODES_UP_TO = 5000

RESOURCE_CLAIMS_UNSUPPORTED = (
    "pod uses ResourceClaims (spec.resourceClaims), but this profile does not enable the "
    "DynamicResources plugin; refusing rather than placing it where kubelet cannot prepare "
    "its devices"
)


@dataclass
class ScheduleResult:
    status: Status
    node: str | None = None
    tied_rows: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    filter_outcome: FilterOutcome | None = None
    score_outcome: ScoreOutcome | None = None
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    #: Where in the node order this cycle's Filter started (kube's
    #: ``nextStartNodeIndex`` before it). A shadow profile or a replay of the
    #: decision starts there too, so that a sample covers the same nodes.
    sample_start: int = 0

    @property
    def tied(self) -> list[str]:
        """Every node sharing the best score (kube picks one of them at random)."""
        names = self.diagnosis.names
        return [names[r] for r in self.tied_rows.tolist()]


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """kube-scheduler's sample size for ``percentageOfNodesToScore`` (0: adaptive)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage <= 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    if percentage >= 100:
        return num_all_nodes
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def nodes_to_find(num_nodes: int, percentage: int | None) -> int:
    """How many feasible nodes a cycle over ``num_nodes`` candidates looks for.

    ``percentage`` None (unset everywhere): every node while the cluster is
    small enough for that to stay cheap, kube's adaptive sample above it.
    """
    if percentage is None:
        if num_nodes <= ALL_NODES_UP_TO:
            return num_nodes
        percentage = 0
    return num_feasible_nodes_to_find(num_nodes, percentage)


def with_extenders(percentage: int | None) -> int | None:
    """The percentage of a cycle HTTP extenders take part in: unset means kube's adaptive one.

    Our all-nodes default pays off because Filter and Score are vectorized;
    an extender's work, and the encoding of its node list, grow with every
    node sent, as in kube-scheduler, which sends what its sample found. So a
    cycle with extenders samples as kube's does (about 500 of 5,000 nodes), and
    the extender gets the node lists kube-scheduler would send it
    (BENCHMARKS.md, "SchedulingBasic with one no-op HTTP extender").
    """
    return 0 if percentage is None else percentage


def _first_window(want: int, num_nodes: int) -> int:
    """Rows to filter first when ``want`` feasible nodes are sought: a little more than
    ``want``, so that a few rejected nodes do not cost a second pass."""
    return min(num_nodes, want + want // 8 + 32)


def _next_window(want: int, found: int, evaluated: int, left: int) -> int:
    """Rows to filter next, from the feasible ratio seen so far (all the rest if none)."""
    if found == 0:
        return left
    needed = (want - found) * evaluated // found
    return min(left, needed + needed // 4 + 32)


class SamplingStart:
    """Where the next cycle's node sample starts (kube's ``nextStartNodeIndex``).

    kube-scheduler keeps one for the whole scheduler, not one per profile: a
    cycle of any profile moves it, and the next cycle, whatever its profile,
    samples from there. The scheduling loop hands one to all its profiles'
    :class:`Algorithm` objects; an Algorithm made alone gets its own.
    """

    __slots__ = ("index",)

    def __init__(self) -> None:
        self.index = 0


class Algorithm:
    """Per-profile decision state: the tie-break RNG, and the sampling start it shares."""

    def __init__(
        self,
        framework: Framework,
        *,
        seed: int | None = None,
        nominator: Nominator | None = None,
        batching: bool = False,
        start: SamplingStart | None = None,
    ) -> None:
        self.framework = framework
        self.rng = random.Random(seed)
        self._start = start if start is not None else SamplingStart()
        self.nominator = nominator
        #: Reuse of node-local results across identical pods (see :mod:`.batching`).
        self.batch: BatchCache | None = BatchCache(framework) if batching else None
        #: Seconds the first half of the current split cycle took (see find_feasible).
        self.split_seconds = 0.0
        #: The batching key of the current split cycle's pod (None: no reuse).
        self.split_signature: bytes | None = None
        #: The current split cycle's pod as the transformers left it.
        self.split_pod: PodInfo | None = None
        #: Whether a plugin allocates ResourceClaims' devices in this profile.
        self._allocates_devices = any(
            call.plugin == "DynamicResources" for call in framework.pre_filter_calls
        )

    @property
    def next_start(self) -> int:
        return self._start.index

    @next_start.setter
    def next_start(self, value: int) -> None:
        self._start.index = value

    def _filter_with_nominated(
        self, state: CycleState, pod: PodInfo, feasible: NodeSet, diagnosis: Diagnosis
    ) -> NodeSet:
        """Re-check feasible nodes as if pods nominated there were already running.

        kube-scheduler's RunFilterPluginsWithNominatedPods: pods of equal or
        higher priority that won a preemption on a node keep the room they
        freed. Only nodes with such pods are re-checked (see
        :func:`.nominated.filter_with_nominated`); the pass without them is
        the normal Filter run that already happened.
        """
        nominations = self.nominator.nominated_pods() if self.nominator else {}
        if not nominations:
            return feasible
        table = feasible.table
        position = {int(row): i for i, row in enumerate(feasible.rows.tolist())}
        loads = {
            row: pods
            for row, pods in nominated_rows(table, nominations, pod).items()
            if row in position
        }
        if not loads:
            return feasible
        rows = np.fromiter(loads, dtype=np.int64, count=len(loads))
        rejected = filter_with_nominated(
            self.framework, state, pod, WhatIfTable(table), rows, loads, recheck_without=False
        )
        if not rejected:
            return feasible
        keep = np.ones(len(feasible), dtype=np.bool_)
        for row in rejected.rows():
            status = rejected.status(row) or Status.unschedulable()
            keep[position[row]] = False
            code = Code.UNSCHEDULABLE if status.code is Code.ERROR else status.code
            reasons = list(status.reasons) or ["node(s) had no room left by nominated pods"]
            diagnosis.add(
                Rejection(
                    status.plugin or "NominatedPods",
                    np.asarray([row], dtype=np.int64),
                    np.asarray([code], dtype=np.int8),
                    np.asarray([(1 << len(reasons)) - 1], dtype=np.uint64),
                    reasons,
                )
            )
        return feasible.subset(keep)

    def schedule(
        self, state: CycleState, pod: PodInfo, table: NodeTable, percentage: int | None = None
    ) -> ScheduleResult:
        """Decide where ``pod`` goes (``result.node`` None: nowhere, see the status).

        Results reused across identical pods are dropped when a plugin's
        failure was ignored in this cycle: they were computed without that
        plugin and must not outlive the failure.
        """
        start = time.perf_counter()
        try:
            return self._schedule(state, pod, table, percentage)
        finally:
            if self.batch is not None and state.get(IGNORED_KEY):
                self.batch.clear()
            self.framework.end_cycle(pod, time.perf_counter() - start)

    def _schedule(
        self, state: CycleState, pod: PodInfo, table: NodeTable, percentage: int | None
    ) -> ScheduleResult:
        result, feasible, signature, pod = self._until_feasible(
            state, pod, table, percentage, nominated=True
        )
        if feasible is not None:
            self._pick(state, pod, feasible, signature, result)
        return result

    def find_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        percentage: int | None,
        nominated: bool = False,
    ) -> tuple[ScheduleResult, NodeSet | None]:
        """The first half of a split cycle (a pod an HTTP extender takes part in).

        PreFilter, Filter (nominated pods' room held) and the sample. None for
        the nodes when the result is final: a failure, or (with ``nominated``)
        the pod's nominated node passing every Filter plugin, which the
        extenders must then still pass (kube's ``evaluateNominatedNode``).
        ``percentage`` unset samples as kube does (:func:`with_extenders`).
        """
        start = time.perf_counter()
        try:
            result, feasible, self.split_signature, self.split_pod = self._until_feasible(
                state, pod, table, with_extenders(percentage), nominated=nominated, extenders=True
            )
            return result, feasible
        finally:
            self.split_seconds = time.perf_counter() - start

    def pick_among(
        self,
        state: CycleState,
        pod: PodInfo,
        feasible: NodeSet,
        result: ScheduleResult,
        extra: list[ExtraScores] | None = None,
    ) -> ScheduleResult:
        """The second half of a split cycle: Score ``feasible`` (plus ``extra``), choose.

        Scored as the transformers (API 2.1) left the pod in the first half.
        """
        start = time.perf_counter()
        pod = self.split_pod or pod
        try:
            result.feasible_nodes = len(feasible)
            if result.filter_outcome is not None:
                result.filter_outcome.feasible = feasible
            if not len(feasible):
                result.status = Status(Code.UNSCHEDULABLE, (result.diagnosis.message(),))
                return result
            signature = self.split_signature
            batch = self.batch
            if signature is not None and (
                batch is None or not batch.scores_still_valid(signature, feasible.table)
            ):
                signature = None
            self._pick(state, pod, feasible, signature, result, extra)
            return result
        finally:
            if self.batch is not None and state.get(IGNORED_KEY):
                self.batch.clear()
            self.framework.end_cycle(pod, self.split_seconds + time.perf_counter() - start)

    def _until_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        percentage: int | None,
        nominated: bool,
        extenders: bool = False,
    ) -> tuple[ScheduleResult, NodeSet | None, bytes | None, PodInfo]:
        """PreFilter to the feasible nodes; also the pod as the transformers left it.

        ``extenders``: HTTP extenders take part (a split cycle), so a profile
        without Score plugins still looks for the whole sample, as kube does
        when an extender filters or prioritizes.
        """
        prepared = self._up_to_filter(state, pod, table)
        if isinstance(prepared, ScheduleResult):
            return prepared, None, None, pod
        pod, nodes, pre_result, diagnosis = prepared
        if nominated:
            on_nominated = self._try_nominated_node(state, pod, table, pre_result, diagnosis)
            if on_nominated is not None:
                return on_nominated, None, None, pod
        want = nodes_to_find(len(nodes), percentage)
        if percentage is not None and not extenders and not self.framework.score_calls:
            want = min(want, 1)  # kube: nothing scores, so the first feasible node will do
        signature: bytes | None = None
        start = self.next_start
        if want < len(nodes):
            result = self._find_sample(state, pod, nodes, diagnosis, want)
        else:
            signature = self._batch_signature(state, pod, pre_result)
            result = self._find_feasible(state, pod, nodes, diagnosis, signature)
            self._advance(len(nodes), diagnosis.total_nodes)
        result.sample_start = start
        feasible = result.filter_outcome.feasible if result.filter_outcome else None
        if not result.status.is_success() or feasible is None:
            return result, None, None, pod
        return result, feasible, signature, pod

    def _advance(self, processed: int, num_all_nodes: int) -> None:
        """Move the sampling start past the nodes this cycle processed (kube's
        ``nextStartNodeIndex``), so that every node gets its turn across pods."""
        self.next_start = (self.next_start + processed) % max(num_all_nodes, 1)

    def _up_to_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> ScheduleResult | tuple[PodInfo, NodeSet, PreFilterResult, Diagnosis]:
        """Everything before Filter: the (transformed) pod, the nodes PreFilter left, its
        result and the diagnosis so far; or the result of a cycle that ends here."""
        all_nodes = table.all_nodes()
        diagnosis = Diagnosis(names=table.names, total_nodes=len(all_nodes))
        refused = self._refuse_outright(pod, all_nodes, diagnosis)
        if refused is not None:
            return refused
        framework = self.framework
        if framework.before_pre_filter_calls:  # transformers (API 2.1): none, no cost
            pod, status = framework.run_before_pre_filter(state, pod, all_nodes)
            if not status.is_success():
                _record_pre_filter_rejection(status, diagnosis)
                return ScheduleResult(status, diagnosis=diagnosis)
        pre_result, status = framework.run_pre_filter(state, pod, all_nodes)
        if status.is_success() and framework.after_pre_filter_calls:
            status = framework.run_after_pre_filter(state, pod, all_nodes)
        if not status.is_success():
            _record_pre_filter_rejection(status, diagnosis)
            return ScheduleResult(status, diagnosis=diagnosis)
        nodes = _narrow_to_pre_filter_result(state, all_nodes, pre_result, diagnosis)
        if framework.before_filter_calls:
            status = framework.run_before_filter(state, pod, nodes)
            if not status.is_success():
                _record_pre_filter_rejection(status, diagnosis)
                return ScheduleResult(status, diagnosis=diagnosis)
        return pod, nodes, pre_result, diagnosis

    def feasibility(self, state: CycleState, pod: PodInfo, table: NodeTable) -> ScheduleResult:
        """PreFilter and Filter over every node, nothing after: where could the pod go?

        The what-if API's question (:mod:`.whatif`): the same checks as
        :meth:`schedule` up to the feasible set (transformers included), minus
        the nominated-node shortcut and the batching cache (a what-if table is
        new each time).
        """
        prepared = self._up_to_filter(state, pod, table)
        if isinstance(prepared, ScheduleResult):
            return prepared
        pod, nodes, _pre_result, diagnosis = prepared
        return self._find_feasible(state, pod, nodes, diagnosis, None)

    def _refuse_outright(
        self, pod: PodInfo, all_nodes: NodeSet, diagnosis: Diagnosis
    ) -> ScheduleResult | None:
        """No node at all, or a pod this profile cannot place correctly anywhere."""
        if not len(all_nodes):
            return ScheduleResult(
                Status.unschedulable("no nodes available to schedule pods"), diagnosis=diagnosis
            )
        if pod.resource_claims and not self._allocates_devices:
            # Placing it as if it asked for nothing misplaces it: kubelet then
            # fails it, its devices never allocated.
            diagnosis.pre_filter_message = RESOURCE_CLAIMS_UNSUPPORTED
            diagnosis.pre_filter_code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            return ScheduleResult(
                Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (RESOURCE_CLAIMS_UNSUPPORTED,)),
                diagnosis=diagnosis,
            )
        return None

    def _try_nominated_node(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        pre_result: PreFilterResult,
        diagnosis: Diagnosis,
    ) -> ScheduleResult | None:
        """A pod that already won a preemption tries its nominated node first (kube's
        ``evaluateNominatedNode``); None when it has none or the node does not fit."""
        nominated = pod.nominated_node_name
        if not nominated:
            return None
        if pre_result.node_names is not None and nominated not in pre_result.node_names:
            return None
        row = table.row_of(nominated)
        if row is None:
            return None
        one = NodeSet(table, np.asarray([row], dtype=np.int64))
        outcome = self.framework.run_filter(state, pod, one)
        if outcome.status.is_success() and len(outcome.feasible) and self.nominator:
            # Room other equal- or higher-priority nominees hold counts here too.
            outcome.feasible = self._filter_with_nominated(
                state, pod, outcome.feasible, outcome.diagnosis
            )
        if not outcome.status.is_success() or not len(outcome.feasible):
            return None
        return ScheduleResult(
            Status.success(),
            nominated,
            one.rows,
            evaluated_nodes=1,
            feasible_nodes=1,
            filter_outcome=outcome,
            diagnosis=diagnosis,
        )

    def _find_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeSet,
        diagnosis: Diagnosis,
        signature: bytes | None,
    ) -> ScheduleResult:
        """Filter (with nominated pods' room held); unschedulable when nothing is left."""
        outcome = self._filter(state, pod, nodes, diagnosis, signature)
        if outcome.status.is_success() and self.nominator is not None:
            outcome.feasible = self._filter_with_nominated(state, pod, outcome.feasible, diagnosis)
        diagnosis.unschedulable_plugins = {r.plugin for r in diagnosis.rejections}
        result = ScheduleResult(
            outcome.status,
            evaluated_nodes=len(nodes),
            feasible_nodes=len(outcome.feasible),
            filter_outcome=outcome,
            diagnosis=diagnosis,
        )
        if outcome.status.is_success() and not len(outcome.feasible):
            result.status = Status(Code.UNSCHEDULABLE, (diagnosis.message(),))
        return result

    def _pick(
        self,
        state: CycleState,
        pod: PodInfo,
        feasible: NodeSet,
        signature: bytes | None,
        result: ScheduleResult,
        extra: list[ExtraScores] | None = None,
    ) -> None:
        """Score ``feasible`` and set ``result``'s node (a random one of the best), or its
        status when PreScore or Score fails. A single feasible node is not scored.

        ``extra``: scores added to the plugins' total (the HTTP extenders', already
        weighted as kube adds them), recorded per extender for ``explain``."""
        names = feasible.table.names
        if len(feasible) == 1:
            result.node = names[int(feasible.rows[0])]
            result.tied_rows = feasible.rows
            return
        scored = feasible
        if self.framework.before_score_calls:  # transformers (API 2.1)
            scored, adjusted, status = self.framework.run_before_score(state, pod, feasible)
            if not status.is_success():
                result.status = status
                return
            if adjusted:
                signature = None  # scores of this view are not those of identical pods
        status = self.framework.run_pre_score(state, pod, scored)
        if not status.is_success():
            result.status = status
            return
        raw_scores: dict[str, npt.NDArray[np.int64]] | None = None
        batch = self.batch
        if signature is not None and batch is not None and batch.scores_are_local(state):
            got = batch.raw_scores(signature, state, pod, scored)
            if isinstance(got, Status):
                batch.forget(signature)
                result.status = got
                return
            raw_scores = got
        scores = self.framework.run_score(state, pod, scored, raw_scores)
        result.score_outcome = scores
        if not scores.status.is_success():
            result.status = scores.status
            return
        if extra:
            add_extra_scores(scores, feasible, extra)
        total = scores.total
        tied_rows = feasible.rows[total == total.max()]
        result.tied_rows = tied_rows
        result.node = names[int(tied_rows[self.rng.randrange(len(tied_rows))])]

    def _batch_signature(
        self, state: CycleState, pod: PodInfo, pre_result: PreFilterResult
    ) -> bytes | None:
        """The pod's batching key, or None when this cycle must take the full path."""
        batch = self.batch
        if (
            batch is None
            or pre_result.node_names is not None
            or pod.nominated_node_name
            or FILTER_OVERLAY_KEY in state  # this pod's view of some nodes is its own
            or (self.nominator is not None and self.nominator.nominated_pods())
            or not batch.filters_are_local(state)
        ):
            return None
        signature = pod_signature(pod)
        if signature is None or not batch.admit(signature):
            return None
        return signature

    def _filter(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeSet,
        diagnosis: Diagnosis,
        signature: bytes | None,
    ) -> FilterOutcome:
        """Filter every node, or only the changed ones when the batching cache has the rest.

        A cached pass that leaves no feasible node (or fails) is redone in
        full, so the diagnosis of an unschedulable pod is always complete.
        """
        batch = self.batch
        if signature is None or batch is None:
            return self.framework.run_filter(state, pod, nodes, diagnosis)
        got = batch.feasible(signature, state, pod, nodes.table)
        if isinstance(got, NodeSet) and len(got):
            return FilterOutcome(got, diagnosis, Status.success())
        outcome = self.framework.run_filter(state, pod, nodes, diagnosis)
        if outcome.status.is_success():
            batch.store_filter(signature, state, nodes.table, outcome.feasible)
        else:
            batch.forget(signature)
        return outcome

    def _find_sample(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet, diagnosis: Diagnosis, want: int
    ) -> ScheduleResult:
        """kube's ``findNodesThatPassFilters``: Filter from the rotating start until
        ``want`` nodes passed (nominated pods' room held), then stop.

        kube checks node by node (on 16 goroutines); here windows of rows are
        filtered at once, and the window that completes the count is cut just
        after the ``want``-th feasible node: nodes past it count as not
        evaluated (their rejections are dropped from the diagnosis), and the
        start moves on by the nodes evaluated, as kube's does. Reuse across
        identical pods does not apply (each cycle sees another window).
        """
        table = nodes.table
        # Every node: kube's node list order (zones interleaved). A PreFilter
        # result's nodes: their row order (kube's is that of a Go map there).
        order = table.sampling_order() if len(nodes) == len(table) else nodes.rows
        n = len(order)
        start = self.next_start % n
        found: list[IntArray] = []
        count = 0
        evaluated = 0
        status = Status.success()
        size = _first_window(want, n)
        began = time.perf_counter()
        while evaluated < n:
            rows = _rotated_window(order, start + evaluated, size)
            part = Diagnosis(names=diagnosis.names, total_nodes=diagnosis.total_nodes)
            outcome = self.framework.run_filter(
                state, pod, NodeSet(table, rows), part, observe=False
            )
            status = outcome.status
            feasible = outcome.feasible.rows
            if status.is_success() and self.nominator is not None and len(feasible):
                feasible = self._filter_with_nominated(state, pod, outcome.feasible, part).rows
            cut = len(rows)
            need = want - count
            if status.is_success() and len(feasible) >= need:
                feasible = feasible[:need]
                cut = int(np.flatnonzero(rows == feasible[-1])[0]) + 1
            _add_evaluated(diagnosis, part, table, rows[cut:])
            found.append(feasible)
            count += len(feasible)
            evaluated += cut
            if not status.is_success() or count >= want:
                break
            size = _next_window(want, count, evaluated, n - evaluated)
        # One Filter observation per cycle, as kube makes (its search is one loop).
        code = Code.SUCCESS if status.is_success() else Code.ERROR
        self.framework.recorder.point_duration("Filter", code, time.perf_counter() - began)
        self._advance(evaluated, diagnosis.total_nodes)
        diagnosis.unschedulable_plugins = {r.plugin for r in diagnosis.rejections}
        chosen = NodeSet(table, np.concatenate(found) if len(found) > 1 else found[0])
        result = ScheduleResult(
            status,
            evaluated_nodes=evaluated,
            feasible_nodes=len(chosen),
            filter_outcome=FilterOutcome(chosen, diagnosis, status),
            diagnosis=diagnosis,
        )
        if status.is_success() and not len(chosen):
            result.status = Status(Code.UNSCHEDULABLE, (diagnosis.message(),))
        return result


def _rotated_window(order: IntArray, begin: int, size: int) -> IntArray:
    """``size`` entries of ``order`` from position ``begin``, wrapping around its end."""
    n = len(order)
    begin %= n
    end = begin + size
    if end <= n:
        return order[begin:end]
    return np.concatenate((order[begin:], order[: end - n]))


def _add_evaluated(
    diagnosis: Diagnosis, part: Diagnosis, table: NodeTable, not_evaluated: IntArray
) -> None:
    """Add ``part``'s rejections to ``diagnosis``, minus those of nodes past the cut."""
    if not len(not_evaluated):
        for rejection in part.rejections:
            diagnosis.add(rejection)
        return
    skipped = np.zeros(table.size, dtype=np.bool_)
    skipped[not_evaluated] = True
    for rejection in part.rejections:
        keep = ~skipped[rejection.rows]
        if keep.all():
            diagnosis.add(rejection)
        elif keep.any():
            diagnosis.add(
                Rejection(
                    rejection.plugin,
                    rejection.rows[keep],
                    rejection.codes[keep],
                    rejection.reason_bits[keep],
                    rejection.reasons,
                )
            )


class ExtraScores(Protocol):
    """Scores from outside the Score plugins (an HTTP extender's), by node name."""

    extender: str
    weight: int
    raw: dict[str, int]

    def final(self, node: str) -> int:
        """What it adds to ``node``'s total."""


def add_extra_scores(scores: ScoreOutcome, feasible: NodeSet, extra: list[ExtraScores]) -> None:
    """Add each extra source's final scores to the total, kept per source for ``explain``."""
    names = feasible.names
    total = scores.total.astype(np.int64, copy=True)
    for source in extra:
        raw = np.fromiter((source.raw.get(n, 0) for n in names), dtype=np.int64, count=len(names))
        final = np.fromiter((source.final(n) for n in names), dtype=np.int64, count=len(names))
        scores.by_plugin[source.extender] = PluginScores(raw, raw, final)
        total += final
    scores.total = total


def _record_pre_filter_rejection(status: Status, diagnosis: Diagnosis) -> None:
    """What a failed PreFilter tells the diagnosis (and, through it, the queue)."""
    if not status.is_rejected():
        return
    diagnosis.pre_filter_message = status.message()
    diagnosis.pre_filter_code = status.code
    if status.plugin:
        target = (
            diagnosis.pending_plugins
            if status.code is Code.PENDING
            else diagnosis.unschedulable_plugins
        )
        target.add(status.plugin)


def _narrow_to_pre_filter_result(
    state: CycleState, all_nodes: NodeSet, pre_result: PreFilterResult, diagnosis: Diagnosis
) -> NodeSet:
    """The nodes a PreFilter result names; the others are rejected as unresolvable."""
    if pre_result.node_names is None:
        return all_nodes
    keep = np.fromiter(
        (n in pre_result.node_names for n in all_nodes.names),
        dtype=np.bool_,
        count=len(all_nodes),
    )
    narrowing = state.get(PREFILTER_NARROWING_KEY, [])
    reason = f"node(s) didn't satisfy plugin(s) [{', '.join(narrowing)}]"
    dropped = all_nodes.rows[~keep]
    diagnosis.add(
        Rejection(
            narrowing[0] if narrowing else "PreFilter",
            dropped,
            np.full(len(dropped), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, dtype=np.int8),
            np.ones(len(dropped), dtype=np.uint64),
            [reason],
        )
    )
    return all_nodes.subset(keep)
