"""Filter with the room nominated pods hold: kube's ``RunFilterPluginsWithNominatedPods``.

A pod that won a preemption is nominated to a node until it is bound there;
pods of equal or higher priority must leave it that room. Both the
scheduling cycle and preemption's dry run ask, for some nodes, "does the pod
pass Filter with the pods nominated there counted as running, and without
them?" (both must pass: a nominee that never comes must not make room
appear). This is the one implementation of that check.

The nominated pods are added to a :class:`WhatIfTable`, never to the live
table. Where the framework says a what-if may be judged by Filter alone
(:meth:`Framework.filters_read_requested_only`: no AddPod extension runs and
every Filter sees pods only through ``requested``) their requests go on the
``requested`` rows and one Filter run judges all nodes; otherwise each node
is judged on its own, its nominated pods added in full and, through the
AddPod extensions, to a clone of the cycle state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from scheduler.api.cyclestate import CycleState
from scheduler.api.results import Diagnosis, NodeVerdict
from scheduler.api.status import Code, Status
from scheduler.framework.runtime import Framework
from scheduler.state.labels import IntArray
from scheduler.state.nodetable import NodeInfo, NodeSet, NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.whatif import WhatIfTable


class Failures:
    """The rows that fail a check, and why.

    A Filter rejection's reasons are read from its run's diagnosis only when
    asked: callers deciding only *whether* rows pass (preemption's reprieve
    rounds) must not pay for rendering every rejected node's reasons.
    """

    __slots__ = ("_rejected", "_statuses", "_verdicts")

    def __init__(self) -> None:
        self._statuses: dict[int, Status] = {}  # failed with this status
        self._rejected: dict[int, Diagnosis] = {}  # rejected; the reasons are in this diagnosis
        self._verdicts: dict[int, dict[str, NodeVerdict]] = {}  # by id(diagnosis)

    def __contains__(self, row: object) -> bool:
        return row in self._statuses or row in self._rejected

    def __bool__(self) -> bool:
        return bool(self._statuses) or bool(self._rejected)

    def rows(self) -> list[int]:
        return [*self._statuses, *self._rejected]

    def fail(self, row: int, status: Status) -> None:
        self._rejected.pop(row, None)
        self._statuses[row] = status

    def reject(self, rows: Iterable[int], diagnosis: Diagnosis) -> None:
        rejected = dict.fromkeys(rows, diagnosis)
        if self._statuses:
            for row in rejected:
                self._statuses.pop(row, None)
        self._rejected.update(rejected)

    def update(self, other: Failures) -> None:
        for row, status in other._statuses.items():
            self.fail(row, status)
        for row, diagnosis in other._rejected.items():
            self.reject((row,), diagnosis)

    def has_error(self) -> bool:
        return any(s.code is Code.ERROR for s in self._statuses.values())

    def split(self) -> tuple[dict[int, Status], list[int]]:
        """The rows where an extension or a Filter run failed (with their Error) and
        the rows Filter rejected."""
        errors: dict[int, Status] = {}
        rejected = list(self._rejected)
        for row, status in self._statuses.items():
            if status.code is Code.ERROR:
                errors[row] = status
            else:
                rejected.append(row)
        return errors, rejected

    def status(self, row: int) -> Status | None:
        """Why ``row`` fails (its first rejection, as a node-by-node run gives); None: passes."""
        status = self._statuses.get(row)
        if status is not None:
            return status
        diagnosis = self._rejected.get(row)
        if diagnosis is None:
            return None
        verdicts = self._verdicts.get(id(diagnosis))
        if verdicts is None:
            verdicts = self._verdicts[id(diagnosis)] = diagnosis.node_verdicts
        verdict = verdicts.get(diagnosis.names[row])
        if verdict is None:
            return Status.unschedulable()
        return Status(verdict.code, tuple(verdict.reasons), verdict.plugin)


def extension_failure(status: Status) -> Status:
    """A failed PreFilter AddPod/RemovePod extension aborts the node's check as an Error (kube)."""
    if status.code is Code.ERROR:
        return status
    reasons = status.reasons or (f"PreFilter extension of {status.plugin} failed",)
    return Status(Code.ERROR, reasons, status.plugin, status.error)


def filter_with_nominated(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: WhatIfTable,
    rows: IntArray,
    nominated: Mapping[int, Sequence[PodInfo]],
    *,
    recheck_without: bool = True,
) -> Failures:
    """Which of ``rows`` fail Filter with their ``nominated`` pods (non-empty lists by
    row) counted (pass 1) or, where there were some and ``recheck_without``, without
    them (pass 2).

    ``table`` is the what-if copy the rows are judged in (it is left as it
    was given); ``state`` is not changed. The scheduling cycle passes
    ``recheck_without=False``: its normal Filter run is pass 2. A Filter
    run that fails charges its status to every row it judged.
    """
    loaded = [row for row in rows.tolist() if row in nominated] if nominated else []
    if not loaded:  # nothing to add: one plain Filter run, whatever the extensions
        return _judge(framework, state, pod, NodeSet(table, rows))
    if framework.filters_read_requested_only(state):
        failures = _first_pass(framework, state, pod, table, rows, nominated, extensions=False)
    else:
        failures = Failures()
        for i in range(len(rows)):
            one = rows[i : i + 1]
            failures.update(
                _first_pass(framework, state, pod, table, one, nominated, extensions=True)
            )
    if recheck_without:
        again = [r for r in loaded if r not in failures]
        if again:
            failures.update(
                _judge(framework, state, pod, NodeSet(table, np.asarray(again, dtype=np.int64)))
            )
    return failures


def _first_pass(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: WhatIfTable,
    rows: IntArray,
    nominated: Mapping[int, Sequence[PodInfo]],
    *,
    extensions: bool,
) -> Failures:
    """Filter ``rows`` with their nominated pods added to ``table``; they go again after.

    With ``extensions`` (one row) the pods are added in full and, through
    AddPod, to a clone of ``state``; without, Filter sees pods only through
    ``requested`` and the pods' requests are added to those rows alone.
    """
    loaded = [row for row in rows.tolist() if row in nominated]
    if not extensions:
        vectors = [[table.occupancy(p) for p in nominated[row]] for row in loaded]
        width = len(table.resources)  # final: occupancy() adds any missing column
        extra = np.zeros((len(loaded), width), dtype=np.int64)
        for i, row_vectors in enumerate(vectors):
            for vector in row_vectors:
                extra[i, : len(vector)] += vector
        at = np.asarray(loaded, dtype=np.int64)
        table.shift_requested(at, extra)
        try:
            return _judge(framework, state, pod, NodeSet(table, rows))
        finally:
            table.shift_requested(at, -extra)
    trial = state.clone()
    added: list[str] = []
    try:
        for row in loaded:
            node = NodeInfo(table, row)
            for other in nominated[row]:
                table.add_pod(other, node.name)
                added.append(other.key)
                status = framework.run_pre_filter_add_pod(trial, pod, other, node)
                if not status.is_success():
                    failed = Failures()
                    failed.fail(row, extension_failure(status))
                    return failed
        return _judge(framework, trial, pod, NodeSet(table, rows))
    finally:
        for key in added:
            table.remove_pod(key)


def _judge(framework: Framework, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Failures:
    """One Filter run; a run that fails charges its status to every row."""
    outcome = framework.run_filter(state, pod, nodes)
    failures = Failures()
    if not outcome.status.is_success():
        for row in nodes.rows.tolist():
            failures.fail(row, outcome.status)
        return failures
    failures.reject(_left_out(nodes.rows, outcome.feasible.rows), outcome.diagnosis)
    return failures


def _left_out(rows: IntArray, kept: IntArray) -> list[int]:
    """``rows`` not in ``kept`` (a Filter run's feasible rows: a subsequence of them)."""
    if len(kept) == len(rows):
        return []
    if not len(kept):
        everything: list[int] = rows.tolist()
        return everything
    keep = set(kept.tolist())
    return [row for row in rows.tolist() if row not in keep]


def nominated_rows(
    table: NodeTable,
    nominations: Mapping[str, Sequence[PodInfo]],
    pod: PodInfo,
) -> dict[int, list[PodInfo]]:
    """The pods nominated to each node (by row) whose room ``pod`` must leave alone.

    kube's ``addGENominatedPods``: nominated pods of equal or higher
    priority, other than the pod itself, that are not assumed or bound yet
    (those are in the table already). Lower-priority ones are ignored: a
    pod may take room freed for a less important one.
    """
    out: dict[int, list[PodInfo]] = {}
    if not nominations:
        return out
    for node_name, pods in nominations.items():
        row = table.row_of(node_name)
        if row is None:
            continue
        keep = [
            p
            for p in pods
            if p.priority >= pod.priority and not _same_pod(p, pod) and not table.has_pod(p.key)
        ]
        if keep:
            out[row] = keep
    return out


def _same_pod(a: PodInfo, b: PodInfo) -> bool:
    return a.key == b.key or (bool(a.uid) and a.uid == b.uid)
