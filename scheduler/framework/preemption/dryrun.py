"""Preemption's dry run: kube's ``DryRunPreemption`` and ``SelectVictimsOnNode``.

For each potential node, from a random offset, until enough candidates are
found: every pod of lower priority is taken off; if the pod then passes
Filter (with the room nominated pods hold, see :mod:`..nominated`), the
removed pods are put back one by one, budget-violating ones first and each
group from the most important (higher priority, then earlier start), and
each that still leaves room stays. The rest are the node's victims.

All of it happens in a :class:`WhatIfTable`, a copy of the rows it changes:
the live table is never edited, so nothing can leak into later cycles.

There is one algorithm. It runs over a *group* of nodes at once: where the
framework says a what-if may edit ``requested`` rows alone (no AddPod/
RemovePod extension runs and every Filter declares ``pods_via_requested``),
a group is a chunk of nodes, pods are moved as request vectors and one
Filter run judges the whole chunk per step; otherwise a group is one node,
its pods are moved in full (pods, ports, requests) and reported to the
PreFilter extensions on a clone of the cycle state. Both give kube's
node-by-node answer; the chunked form is much the faster (``bench perf``
PreemptionBasic at small scale: 32 CPU seconds node by node, 6 to 9 chunked).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from scheduler.api.cyclestate import CycleState
from scheduler.api.handle import Handle
from scheduler.api.status import Code, Status
from scheduler.framework.nominated import Failures, extension_failure, filter_with_nominated
from scheduler.framework.preemption.candidates import (
    MSG_NO_VICTIMS,
    NEVER,
    Candidate,
    DisruptionBudget,
    VictimsResult,
    filter_pods_with_pdb_violation,
    importance_key,
    start_time_ns,
)
from scheduler.framework.preemption.whatif import PluginWhatIf, SelectVictimsOnNode
from scheduler.framework.runtime import Framework
from scheduler.state.nodetable import NodeInfo, NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.whatif import WhatIfTable

IntArray = npt.NDArray[np.int64]

# Nodes evaluated beyond those still needed, per chunk.
BATCH_MARGIN = 16

_NO_VECTORS: IntArray = np.zeros((0, 0), dtype=np.int64)

# A pod to put back in a reprieve round: the pod, its request vector, 1 if it violates a budget.
_Plan = list[tuple[PodInfo, IntArray, int]]


@dataclass(slots=True)
class _RowPods:
    """A node's pods as the dry run needs them, valid for one row generation."""

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


class DryRunResult(NamedTuple):
    """Candidates (those violating no budget first), why each other visited node is
    not one, and the errors met."""

    candidates: list[Candidate]
    statuses: dict[str, Status]
    errors: list[Status]


class _GroupFailed(Exception):
    """A Filter run over a chunk failed: the chunk is judged again node by node."""


class DryRun:
    """Runs the dry run for one framework's table; keeps per-row pod memos across runs."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        #: Judge chunks of nodes where that is exact; off: every group is one node.
        self.batching = True
        #: A plugin's own ``select_victims_on_node`` (plugin API 2.1), called node by
        #: node in place of the framework's selection; None: the framework's.
        self.select_victims_on_node: SelectVictimsOnNode | None = None
        self._rows: dict[int, _RowPods] = {}

    @property
    def framework(self) -> Framework:
        """The profile's framework (set on the handle once every plugin is built)."""
        return cast("Framework", self.handle.framework)

    @property
    def table(self) -> NodeTable:
        table: NodeTable = self.handle.table  # the live table (API 1.x's handle.table)
        return table

    def chunked(self, state: CycleState) -> bool:
        """Whether nodes are judged in chunks for this pod's cycle (see the module docstring)."""
        return (
            self.batching
            and self.select_victims_on_node is None
            and self.framework.filters_read_requested_only(state)
        )

    def run(
        self,
        state: CycleState,
        pod: PodInfo,
        rows: IntArray,
        budgets: Sequence[DisruptionBudget],
        offset: int,
        num_candidates: int,
        now_ns: int,
        nominated: Mapping[int, Sequence[PodInfo]],
    ) -> DryRunResult:
        """Visit ``rows`` from ``offset`` until ``num_candidates`` are found (at least one
        violating no budget); results past the node where the walk stops are discarded, so
        chunks give the outcome of the node-by-node walk."""
        whatif = WhatIfTable(self.table)
        names = self.table.names
        limit = max(num_candidates, 1)
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[Status] = []
        n = len(rows)
        order = np.concatenate((rows[offset:], rows[:offset])) if n else rows
        chunked = self.chunked(state)
        start = 0
        found = 0  # nodes visited that became candidates
        while start < n:
            size = 1
            if chunked:  # enough nodes for the candidates still needed at the rate seen
                need = max(limit - len(non_violating) - len(violating), 1)
                size = int(need * 1.25 / ((found + 1) / (start + 1))) + BATCH_MARGIN
            chunk = order[start : start + size]
            start += len(chunk)
            for row, (victims, violations, status) in zip(
                chunk.tolist(),
                self._judge_chunk(whatif, state, pod, chunk, budgets, now_ns, nominated),
                strict=True,
            ):
                node_name = names[row]
                if status.is_success() and victims:
                    found += 1
                    group = violating if violations else non_violating
                    if len(group) < limit:
                        group.append(Candidate(node_name, tuple(victims), violations))
                    if non_violating and len(non_violating) + len(violating) >= limit:
                        return DryRunResult(non_violating + violating, statuses, errors)
                    continue
                if status.is_success():
                    status = Status.error_status(
                        f'expected at least one victim pod on node "{node_name}"'
                    )
                if status.code is Code.ERROR:
                    errors.append(status)
                statuses[node_name] = status
        return DryRunResult(non_violating + violating, statuses, errors)

    def _judge_chunk(
        self,
        whatif: WhatIfTable,
        state: CycleState,
        pod: PodInfo,
        chunk: IntArray,
        budgets: Sequence[DisruptionBudget],
        now_ns: int,
        nominated: Mapping[int, Sequence[PodInfo]],
    ) -> Iterable[VictimsResult]:
        """The chunk's results; a chunk whose Filter run failed, node by node (which tells
        which node erred)."""
        custom = self.select_victims_on_node
        if custom is not None:
            return (
                self.plugin_victims(custom, whatif, state, pod, row, budgets, now_ns, nominated)
                for row in chunk.tolist()
            )
        if len(chunk) > 1:
            # A failed group run falls through to the node-by-node walk below.
            with contextlib.suppress(_GroupFailed):
                return self.select_victims(whatif, state, pod, chunk, budgets, now_ns, nominated)
        return (  # lazily: the walk may stop early
            self.select_victims(whatif, state, pod, chunk[i : i + 1], budgets, now_ns, nominated)[0]
            for i in range(len(chunk))
        )

    def plugin_victims(
        self,
        custom: SelectVictimsOnNode,
        whatif: WhatIfTable,
        state: CycleState,
        pod: PodInfo,
        row: int,
        budgets: Sequence[DisruptionBudget],
        now_ns: int,
        nominated: Mapping[int, Sequence[PodInfo]],
    ) -> VictimsResult:
        """A plugin's ``select_victims_on_node`` on one row, on ``whatif`` (reverted after).

        Its victims are put in kube's order (most important first), which the
        choice of a candidate reads.
        """
        view = PluginWhatIf(self.framework, whatif, state.clone(), pod, nominated)
        try:
            node = view.node(self.table.names[row])
            victims, violations, status = custom(view.state, pod, node, view, budgets)
        finally:
            whatif.revert()
        ordered = sorted((cast(PodInfo, v) for v in victims), key=importance_key(now_ns))
        return ordered, int(violations), status

    def select_victims(
        self,
        whatif: WhatIfTable,
        state: CycleState,
        pod: PodInfo,
        rows: IntArray,
        budgets: Sequence[DisruptionBudget],
        now_ns: int,
        nominated: Mapping[int, Sequence[PodInfo]],
    ) -> list[VictimsResult]:
        """kube's ``SelectVictimsOnNode`` for each of ``rows`` (one, unless chunked).

        Each result: the victims (most important first), how many violate a
        budget, the status. ``whatif`` is reverted before returning; ``state``
        is not changed. Raises :class:`_GroupFailed` when a Filter run over
        several rows fails.
        """
        results: list[VictimsResult | None] = [None] * len(rows)
        moves: _Moves = (
            _RequestVectors(whatif, state)
            if len(rows) > 1 or self.chunked(state)
            else _WholePods(whatif, state, self.framework, pod)
        )
        positions: list[int] = []  # of the rows with potential victims
        memos: list[_RowPods] = []
        generations = self.table.generation[rows].tolist()
        for position, row in enumerate(rows.tolist()):
            memo = self._row_pods(row, generations[position])
            if memo.min_priority >= pod.priority:
                results[position] = ([], 0, Status.unresolvable(MSG_NO_VICTIMS))
            else:
                positions.append(position)
                memos.append(memo)
        try:
            if positions:
                target = rows[positions]
                outcome = self._select(moves, state, pod, target, memos, budgets, now_ns, nominated)
                for position, result in zip(positions, outcome, strict=True):
                    results[position] = result
        finally:
            whatif.revert()
        return [r for r in results if r is not None]

    def _select(
        self,
        moves: _Moves,
        state: CycleState,
        pod: PodInfo,
        target: IntArray,
        memos: Sequence[_RowPods],
        budgets: Sequence[DisruptionBudget],
        now_ns: int,
        nominated: Mapping[int, Sequence[PodInfo]],
    ) -> list[VictimsResult]:
        count = len(target)
        rows = target.tolist()
        failures = moves.take_off_lower(target, memos, pod.priority)
        if not failures:
            failures = self._filter(moves, pod, target, nominated)
        plans: dict[int, _Plan] = {}
        mixed: set[int] = set()
        for j in range(count):
            if rows[j] not in failures:
                plans[j] = self._plan(memos[j], pod.priority, budgets, now_ns, j, mixed)
        victims: list[list[PodInfo]] = [[] for _ in range(count)]
        violations = [0] * count
        broken: set[int] = set()  # rows whose extensions or Filter broke in a round
        k = 0
        active = list(plans)
        while active:
            active = [j for j in active if len(plans[j]) > k and rows[j] not in broken]
            if active:
                kept, errors = self._reprieve_round(
                    moves, pod, target[active], [plans[j][k] for j in active], nominated
                )
                for a, victim, violates in kept:
                    victims[active[a]].append(victim)
                    violations[active[a]] += violates
                for row, error in errors.items():
                    broken.add(row)
                    failures.fail(row, error)
            k += 1
        key = importance_key(now_ns)
        results: list[VictimsResult] = []
        for j in range(count):
            failure = failures.status(rows[j])
            if failure is not None:
                results.append(([], 0, failure))
                continue
            chosen = victims[j]
            if j in mixed:
                chosen.sort(key=key)
            results.append((chosen, violations[j], Status.success()))
        return results

    def _reprieve_round(
        self,
        moves: _Moves,
        pod: PodInfo,
        rows: IntArray,
        items: Sequence[tuple[PodInfo, IntArray, int]],
        nominated: Mapping[int, Sequence[PodInfo]],
    ) -> tuple[list[tuple[int, PodInfo, int]], dict[int, Status]]:
        """Put one pod back on each of ``rows``; those that then leave no room go again.

        Returns (index in ``rows``, victim, 1 if it violates a budget) for each
        pod that stays a victim, and the Error of each row whose extensions or
        Filter broke.
        """
        pods = [victim for victim, _, _ in items]
        vectors = (
            _stack([vector for _, vector, _ in items], len(moves.whatif.resources))
            if moves.by_vectors
            else _NO_VECTORS
        )
        failed = moves.put_back(rows, pods, vectors)
        if not failed:
            failed = self._filter(moves, pod, rows, nominated)
        errors, rejected_rows = failed.split()
        if not rejected_rows:
            return [], errors
        if len(rejected_rows) == len(rows):
            rejected = list(range(len(rows)))
        else:
            marked = set(rejected_rows)
            rejected = [a for a, row in enumerate(rows.tolist()) if row in marked]
        back = vectors[rejected] if moves.by_vectors else _NO_VECTORS
        gone = moves.take_off(rows[rejected], [pods[a] for a in rejected], back)
        if gone:  # only one row is moved in full at a time
            errors.update(gone.split()[0])
            return [], errors
        return [(a, items[a][0], items[a][2]) for a in rejected], errors

    def _filter(
        self,
        moves: _Moves,
        pod: PodInfo,
        rows: IntArray,
        nominated: Mapping[int, Sequence[PodInfo]],
    ) -> Failures:
        """Filter with nominated pods; a failed run over many rows raises :class:`_GroupFailed`."""
        failures = filter_with_nominated(
            self.framework, moves.state, pod, moves.whatif, rows, nominated
        )
        if len(rows) > 1 and failures.has_error():
            raise _GroupFailed
        return failures

    @staticmethod
    def _plan(
        memo: _RowPods,
        priority: int,
        budgets: Sequence[DisruptionBudget],
        now_ns: int,
        j: int,
        mixed: set[int],
    ) -> _Plan:
        """The reprieve order: budget-violating pods first, each group most important first."""
        if memo.latest_start < now_ns:
            pairs = memo.in_order
        else:
            key = importance_key(now_ns)
            pairs = sorted(zip(memo.pods, memo.vectors, strict=True), key=lambda x: key(x[0]))
        if memo.max_priority >= priority:
            pairs = [pair for pair in pairs if pair[0].priority < priority]
        if not budgets:
            return [(p, v, 0) for p, v in pairs]
        violating, non_violating = filter_pods_with_pdb_violation([p for p, _ in pairs], budgets)
        if violating and non_violating:
            mixed.add(j)
        bad = {id(p) for p in violating}
        return [(p, v, 1) for p, v in pairs if id(p) in bad] + [
            (p, v, 0) for p, v in pairs if id(p) not in bad
        ]

    def _row_pods(self, row: int, generation: int) -> _RowPods:
        """The pods on a live row with their priorities and vectors (memoised per row).

        Valid while the row holds the same pod objects in the same order,
        whatever its generation says.
        """
        table = self.table
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
        # The reprieve order, with pods not started yet last among their priority:
        # what sorting with any "now" later than every known start time gives.
        starts = [start_time_ns(p, NEVER) for p in pods]
        order = sorted(range(len(pods)), key=lambda i: (-pods[i].priority, starts[i]))
        memo = _RowPods(
            generation=generation,
            resources=table.resources,
            width=width,
            pods=pods,
            vectors=matrix,
            priorities=np.asarray([p.priority for p in pods], dtype=np.int64),
            total=matrix.sum(axis=0),
            min_priority=min((p.priority for p in pods), default=2**63 - 1),
            max_priority=max((p.priority for p in pods), default=-(2**63)),
            in_order=[(pods[i], matrix[i]) for i in order],
            latest_start=max((t for t in starts if t != NEVER), default=-NEVER),
        )
        self._rows[row] = memo
        return memo


def _stack(vectors: Sequence[IntArray], width: int) -> IntArray:
    """Vectors as the rows of a ``width``-column matrix; those made before a column was
    added are padded."""
    try:
        matrix = np.stack(vectors)
    except ValueError:  # of different lengths
        matrix = np.stack([np.pad(v, (0, width - len(v))) for v in vectors])
    if matrix.shape[1] < width:
        matrix = np.pad(matrix, ((0, 0), (0, width - matrix.shape[1])))
    return matrix


# -- how pods leave and come back in the what-if ---------------------------------------------


class _Moves(ABC):
    """Takes pods off and puts them back on rows of the what-if table.

    Each returns the rows where a PreFilter extension failed, with the
    Error status that aborts their evaluation.
    """

    #: Whether the moves read the pods' request vectors (else they get ``_NO_VECTORS``).
    by_vectors: ClassVar[bool] = True

    def __init__(self, whatif: WhatIfTable, state: CycleState) -> None:
        self.whatif = whatif
        self.state = state  # what Filter runs with

    @abstractmethod
    def take_off_lower(self, rows: IntArray, memos: Sequence[_RowPods], priority: int) -> Failures:
        """Every pod of lower priority than ``priority`` off each row."""

    @abstractmethod
    def take_off(self, rows: IntArray, pods: Sequence[PodInfo], vectors: IntArray) -> Failures:
        """One pod off each row (``vectors``: their requests, one row each)."""

    @abstractmethod
    def put_back(self, rows: IntArray, pods: Sequence[PodInfo], vectors: IntArray) -> Failures:
        """One pod back on each row."""


class _RequestVectors(_Moves):
    """Pods as their request vectors: exact where Filter sees pods only through ``requested``."""

    def take_off_lower(self, rows: IntArray, memos: Sequence[_RowPods], priority: int) -> Failures:
        lower = [
            m.total if m.max_priority < priority else m.vectors[m.priorities < priority].sum(axis=0)
            for m in memos
        ]
        self.whatif.shift_requested(rows, -_stack(lower, len(self.whatif.resources)))
        return Failures()

    def take_off(self, rows: IntArray, pods: Sequence[PodInfo], vectors: IntArray) -> Failures:
        self.whatif.shift_requested(rows, -vectors)
        return Failures()

    def put_back(self, rows: IntArray, pods: Sequence[PodInfo], vectors: IntArray) -> Failures:
        self.whatif.shift_requested(rows, vectors)
        return Failures()


class _WholePods(_Moves):
    """Pods moved in full (pods, ports, requests) and reported to the PreFilter
    AddPod/RemovePod extensions on the node's own clone of the cycle state."""

    by_vectors: ClassVar[bool] = False

    def __init__(
        self, whatif: WhatIfTable, state: CycleState, framework: Framework, pod: PodInfo
    ) -> None:
        super().__init__(whatif, state.clone())
        self.framework = framework
        self.pod = pod

    def take_off_lower(self, rows: IntArray, memos: Sequence[_RowPods], priority: int) -> Failures:
        for i, memo in enumerate(memos):
            for j, victim in enumerate(memo.pods):
                if victim.priority >= priority:
                    continue
                failures = self.take_off(rows[i : i + 1], [victim], memo.vectors[j : j + 1])
                if failures:
                    return failures
        return Failures()

    def take_off(self, rows: IntArray, pods: Sequence[PodInfo], vectors: IntArray) -> Failures:
        for row, victim in zip(rows.tolist(), pods, strict=True):
            self.whatif.remove_pod(victim.key)
            node = NodeInfo(self.whatif, row)
            status = self.framework.run_pre_filter_remove_pod(self.state, self.pod, victim, node)
            if not status.is_success():
                return _failed(row, extension_failure(status))
        return Failures()

    def put_back(self, rows: IntArray, pods: Sequence[PodInfo], vectors: IntArray) -> Failures:
        for row, victim in zip(rows.tolist(), pods, strict=True):
            node = NodeInfo(self.whatif, row)
            self.whatif.add_pod(victim, node.name)
            status = self.framework.run_pre_filter_add_pod(self.state, self.pod, victim, node)
            if not status.is_success():
                return _failed(row, extension_failure(status))
        return Failures()


def _failed(row: int, status: Status) -> Failures:
    failures = Failures()
    failures.fail(row, status)
    return failures
