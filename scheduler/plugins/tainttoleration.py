"""TaintToleration: keep pods off nodes whose taints they do not tolerate.

Filter rejects a node with a NoSchedule or NoExecute taint the pod does not
tolerate.
Score counts the PreferNoSchedule taints the pod does not tolerate (only
tolerations with an empty or PreferNoSchedule effect count there) and
NormalizeScore reverses it: fewest intolerable taints scores 100.

Taints are columns of ``nodes.taint_matrix``; the pod's verdict on each
distinct taint is computed once and cached in ``pod.cache``, extended only
when new distinct taints appear in the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    Nodes,
    Plugin,
    Pod,
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
    """Per distinct taint of the cluster (by column): does it block / repel this pod."""

    taints: Sequence[Taint] = ()  # the columns the verdicts are for
    blocking: list[bool] = field(default_factory=list)  # untolerated NoSchedule/NoExecute
    repelling: list[bool] = field(default_factory=list)  # untolerated PreferNoSchedule

    def extend(self, taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> None:
        prefer_tolerations = [t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
        for taint in taints[len(self.blocking) :]:
            hard = taint.effect in (NO_SCHEDULE, NO_EXECUTE)
            self.blocking.append(hard and not any(t.tolerates(taint) for t in tolerations))
            soft = taint.effect == PREFER_NO_SCHEDULE
            self.repelling.append(soft and not any(t.tolerates(taint) for t in prefer_tolerations))
        self.taints = taints


def verdicts(pod: Pod, nodes: Nodes) -> _Verdicts:
    """The pod's verdicts on the taint columns of ``nodes``.

    Columns are only ever appended, so verdicts made for a prefix of them
    are extended; the same sequence object (the usual case: it changes only
    when a new distinct taint appears) needs no check at all.
    """
    taints = nodes.taints
    cached = pod.cache.get(NAME)
    if not isinstance(cached, _Verdicts):
        cached = pod.cache[NAME] = _Verdicts()
    if cached.taints is taints:
        return cached
    known = len(cached.blocking)
    if len(taints) < known or tuple(taints[:known]) != tuple(cached.taints):
        cached = pod.cache[NAME] = _Verdicts()  # another cluster's columns
    cached.extend(taints, pod.tolerations)
    return cached


def _columns(flags: list[bool]) -> npt.NDArray[np.int64]:
    return np.flatnonzero(np.asarray(flags, dtype=np.bool_)).astype(np.int64)


class TaintToleration(Plugin):
    api_version: ClassVar[str] = "2.0"
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # results per node depend on that node only
    pods_via_requested: ClassVar[bool] = True  # Filter sees pods only via `requested`

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        result = FilterResult(len(nodes))
        cols = _columns(verdicts(pod, nodes).blocking)
        if cols.size == 0 or len(nodes) == 0:
            return result
        blocked: BoolArray = np.asarray(nodes.taint_matrix[:, cols].any(axis=1), dtype=np.bool_)
        return result.reject_unresolvable(blocked, ERR_REASON_UNTOLERATED)

    @hookimpl
    def pre_score(self, state: CycleState, pod: Pod, nodes: Nodes) -> None:
        # The verdicts live in pod.cache; computing them here keeps Score lean.
        verdicts(pod, nodes)

    @hookimpl
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> IntArray:
        cols = _columns(verdicts(pod, nodes).repelling)
        if cols.size == 0:
            return np.zeros(len(nodes), dtype=np.int64)
        matrix = nodes.taint_matrix[:, cols]
        counts: IntArray = matrix.sum(axis=1).astype(np.int64)
        return counts

    @hookimpl
    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Nodes, scores: IntArray
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
