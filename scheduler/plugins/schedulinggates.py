"""SchedulingGates: keep a pod out of the active queue while it has scheduling gates.

A gated pod is not even tried (PreEnqueue), and it comes back only when an
update of that very pod removed its last gate, as in kube-scheduler.
"""

from __future__ import annotations

from typing import Any, ClassVar

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Plugin,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.plugins._helpers import object_uid
from scheduler.state.pod import PodInfo


def _gates_eliminated_for_this_pod(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Only the gated pod's own update can ungate it; other pods' updates are irrelevant."""
    return QueueingHint.QUEUE if object_uid(new) == pod.uid else QueueingHint.SKIP


class SchedulingGates(Plugin):
    api_version: ClassVar[str] = "1.0"
    name: ClassVar[str] = "SchedulingGates"

    @hookimpl
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.scheduling_gates:
            return None
        # kube prints the gate names with Go's %v of a []string: "[a b]".
        gates = " ".join(pod.scheduling_gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{gates}]")

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
                ),
                _gates_eliminated_for_this_pod,
            )
        ]
