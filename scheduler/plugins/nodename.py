"""NodeName: a pod that names its node (``spec.nodeName``) fits only that node."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterResult,
    Nodes,
    Plugin,
    Pod,
    QueueingHint,
    Resource,
    hookimpl,
)

ERR_REASON = "node(s) didn't match the requested node name"
_UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _node_name(obj: Any) -> str:
    if isinstance(obj, dict):
        return str((obj.get("metadata") or {}).get("name") or "")
    return str(getattr(obj, "name", "") or "")


def _node_added_with_requested_name(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only the arrival of the named node can help a pod that names one."""
    if not pod.node_name or _node_name(new) == pod.node_name:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


class NodeName(Plugin):
    api_version: ClassVar[str] = "2.0"
    name: ClassVar[str] = "NodeName"
    node_local: ClassVar[bool] = True  # results per node depend on that node only
    pods_via_requested: ClassVar[bool] = True  # Filter sees pods only via `requested`

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        if not pod.node_name:
            return FilterResult(len(nodes))
        # One lookup instead of comparing every candidate's name.
        feasible = np.zeros(len(nodes), dtype=np.bool_)
        i = nodes.index_of(pod.node_name)
        if i is not None:
            feasible[i] = True
        return FilterResult.from_mask(feasible, ERR_REASON, _UNRESOLVABLE)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD), _node_added_with_requested_name
            )
        ]
