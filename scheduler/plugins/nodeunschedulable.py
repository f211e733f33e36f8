"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) take no new pods.

A pod that tolerates the ``node.kubernetes.io/unschedulable:NoSchedule``
taint (DaemonSet pods do) may still go there, as in kube-scheduler.
"""

from __future__ import annotations

from typing import ClassVar

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
from scheduler.model.taints import Taint

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", value="", effect="NoSchedule")


def tolerates_unschedulable(pod: Pod) -> bool:
    cached = pod.cache.get(NAME)
    if not isinstance(cached, bool):
        cached = any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations)
        pod.cache[NAME] = cached
    return cached


class NodeUnschedulable(Plugin):
    api_version: ClassVar[str] = "2.0"
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # results per node depend on that node only
    pods_via_requested: ClassVar[bool] = True  # Filter sees pods only via `requested`

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        result = FilterResult(len(nodes))
        if tolerates_unschedulable(pod):
            return result
        cordoned = nodes.unschedulable
        return result.reject_unresolvable(cordoned, ERR_REASON_UNSCHEDULABLE)

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
