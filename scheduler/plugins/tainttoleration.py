"""TaintToleration: keep pods off nodes whose taints they do not tolerate.

Filter rejects a node with a NoSchedule or NoExecute taint the pod does not
tolerate.
Score counts the PreferNoSchedule taints the pod does not tolerate (only
tolerations with an empty or PreferNoSchedule effect count there) and
NormalizeScore reverses it: fewest intolerable taints scores 100.

Taints are columns of ``table.taint_matrix``; the pod's verdict on each
distinct taint is computed once and cached in ``pod.cache``, extended only
when new distinct taints appear in the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    Plugin,
    Resource,
    hookimpl,
)
from scheduler.model.taints import (
    EFFECT_NO_EXECUTE,
    EFFECT_NO_SCHEDULE,
    EFFECT_PREFER_NO_SCHEDULE,
    Taint,
    Toleration,
)
from scheduler.plugins._helpers import default_normalize_score
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

NAME = "TaintToleration"
NO_SCHEDULE = EFFECT_NO_SCHEDULE
NO_EXECUTE = EFFECT_NO_EXECUTE
PREFER_NO_SCHEDULE = EFFECT_PREFER_NO_SCHEDULE

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


# kube-scheduler 1.36 reports one generic reason (the taint itself is only logged),
# so "0/N nodes are available" counts all such nodes under one line.
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


@dataclass(slots=True)
class _Verdicts:
    """Per distinct taint of the table (by column): does it block / repel this pod."""

    blocking: list[bool] = field(default_factory=list)  # untolerated NoSchedule/NoExecute
    repelling: list[bool] = field(default_factory=list)  # untolerated PreferNoSchedule

    def extend(self, taints: list[Taint], tolerations: list[Toleration]) -> None:
        prefer_tolerations = [t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
        for taint in taints[len(self.blocking) :]:
            hard = taint.effect in (NO_SCHEDULE, NO_EXECUTE)
            self.blocking.append(hard and not any(t.tolerates(taint) for t in tolerations))
            soft = taint.effect == PREFER_NO_SCHEDULE
            self.repelling.append(soft and not any(t.tolerates(taint) for t in prefer_tolerations))


def verdicts(pod: PodInfo, table: NodeTable) -> _Verdicts:
    """The pod's verdicts on ``table``'s taint columns (columns are per table)."""
    per_table: dict[int, _Verdicts] = pod.cache.setdefault(NAME, {})
    cached = per_table.get(id(table))
    if cached is None:
        cached = per_table[id(table)] = _Verdicts()
    if len(cached.blocking) < len(table.taint_list):
        cached.extend(table.taint_list, pod.tolerations)
    return cached


def _columns(flags: list[bool]) -> npt.NDArray[np.int64]:
    return np.flatnonzero(np.asarray(flags, dtype=np.bool_)).astype(np.int64)


class TaintToleration(Plugin):
    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # results per node depend on that node only
    pods_via_requested: ClassVar[bool] = True  # Filter sees pods only via `requested`

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        table = nodes.table
        result = FilterResult(len(nodes))
        cols = _columns(verdicts(pod, table).blocking)
        if cols.size == 0 or len(nodes) == 0:
            return result
        blocked: BoolArray = np.asarray(
            table.taint_matrix[np.ix_(nodes.rows, cols)].any(axis=1), dtype=np.bool_
        )
        return result.reject_unresolvable(blocked, ERR_REASON_UNTOLERATED)

    @hookimpl
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> None:
        # The verdicts live in pod.cache; computing them here keeps Score lean.
        verdicts(pod, nodes.table)

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> IntArray:
        table = nodes.table
        cols = _columns(verdicts(pod, table).repelling)
        if cols.size == 0:
            return np.zeros(len(nodes), dtype=np.int64)
        matrix = table.taint_matrix[np.ix_(nodes.rows, cols)]
        counts: IntArray = matrix.sum(axis=1).astype(np.int64)
        return counts

    @hookimpl
    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet, scores: IntArray
    ) -> IntArray:
        return default_normalize_score(scores, reverse=True)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATION)
            ),
        ]


__all__ = ["ERR_REASON_UNTOLERATED", "TaintToleration"]
