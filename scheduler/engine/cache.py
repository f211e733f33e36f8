"""The scheduler's view of placed pods: the NodeTable plus pods it assumed.

When the scheduling cycle picks a node, the pod is *assumed* there at once
(its resources count against the node) so the next pod does not take the same
room while the binding is still in flight. The informer later confirms the
binding (the pod arrives with ``spec.nodeName``), or the binding fails and
the pod is *forgotten*. This is kube-scheduler's assume/confirm/forget cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo


@dataclass(slots=True)
class AssumedPod:
    pod: PodInfo
    node_name: str
    binding_finished: bool = False
    deleted: bool = False  # the pod was deleted while its binding was in flight


class SchedulerCache:
    def __init__(self, table: NodeTable | None = None) -> None:
        self.table = table if table is not None else NodeTable()
        self.assumed: dict[str, AssumedPod] = {}

    # -- nodes --------------------------------------------------------------------

    def upsert_node(self, raw: dict[str, Any]) -> None:
        self.table.upsert_node(raw)

    def remove_node(self, name: str) -> list[PodInfo]:
        """Remove a node; returns the pods assumed on it, which must be rescheduled."""
        self.table.remove_node(name)
        lost = [a.pod for a in self.assumed.values() if a.node_name == name]
        for pod in lost:
            self.forget(pod.key)
        return lost

    # -- assigned pods (from the informer) ------------------------------------------

    def add_pod(self, pod: PodInfo) -> None:
        """An assigned pod seen by the informer; confirms an assumed one."""
        assumed = self.assumed.pop(pod.key, None)
        if assumed is not None and assumed.node_name != pod.node_name:
            # Bound elsewhere (by another scheduler): our assumption was wrong.
            self.table.remove_pod(pod.key)
        self.table.add_pod(pod)

    def remove_pod(self, key: str) -> bool:
        """The pod was deleted; returns whether its resources were released now.

        An assumed pod whose binding cycle is still running stays accounted:
        that cycle owns it and forgets it when it fails, or, since the pod is
        gone, when the binding finishes (see :meth:`finish_binding`). Once the
        binding finished, a delete must release the pod even though the
        informer never confirmed it: after a 410 re-list the informer reports
        a pod that was bound and deleted while it was disconnected only as a
        delete of the unbound copy it had, and an assumed pod nobody confirms
        would hold its node's resources forever.
        """
        assumed = self.assumed.get(key)
        if assumed is not None and not assumed.binding_finished:
            assumed.deleted = True
            return False
        self.assumed.pop(key, None)
        return self.table.remove_pod(key) is not None

    # -- assume / forget --------------------------------------------------------------

    def assume(self, pod: PodInfo, node_name: str) -> None:
        if self.table.has_pod(pod.key):
            raise ValueError(f"pod {pod.key} is already in the cache; refusing to assume it")
        self.table.add_pod(pod, node_name)
        self.assumed[pod.key] = AssumedPod(pod, node_name)

    def finish_binding(self, key: str) -> None:
        """The binding call succeeded; the informer will confirm the pod later."""
        assumed = self.assumed.get(key)
        if assumed is not None:
            assumed.binding_finished = True
            if assumed.deleted:
                self.forget(key)  # deleted while binding: nothing left to confirm

    def forget(self, key: str) -> None:
        """Drop an assumed pod (binding failed or was rolled back)."""
        if self.assumed.pop(key, None) is not None:
            self.table.remove_pod(key)

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed
