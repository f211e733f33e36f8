"""Which cluster event a watch change is, in the vocabulary plugins register.

kube-scheduler requeues unschedulable pods only on events a rejecting
plugin registered, and node updates are classified finely (labels, taints,
allocatable, conditions) so that, say, a label change does not retry pods
that were rejected for lack of CPU.
"""

from __future__ import annotations

import functools
from typing import Any

from scheduler.api.events import ActionType, ClusterEvent, Resource


def node_update_event(old: dict[str, Any], new: dict[str, Any]) -> ClusterEvent | None:
    """The event of a node update, or None when nothing scheduling-relevant changed."""
    action = ActionType(0)
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    if old_meta.get("labels") != new_meta.get("labels"):
        action |= ActionType.UPDATE_NODE_LABEL
    if old_spec.get("taints") != new_spec.get("taints") or old_spec.get(
        "unschedulable"
    ) != new_spec.get("unschedulable"):
        action |= ActionType.UPDATE_NODE_TAINT
    if old_status.get("allocatable") != new_status.get("allocatable"):
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old_status.get("conditions") != new_status.get("conditions"):
        action |= ActionType.UPDATE_NODE_CONDITION
    if old_meta.get("annotations") != new_meta.get("annotations"):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if old_status.get("images") != new_status.get("images"):
        action |= ActionType.UPDATE_OTHER
    if old_status.get("declaredFeatures") != new_status.get("declaredFeatures"):
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    if not action:
        return None
    return ClusterEvent(Resource.NODE, action)


def assigned_pod_update_event(old: dict[str, Any], new: dict[str, Any]) -> ClusterEvent | None:
    action = ActionType(0)
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if old_meta.get("labels") != new_meta.get("labels"):
        action |= ActionType.UPDATE_POD_LABEL
    if (old.get("spec") or {}).get("containers") != (new.get("spec") or {}).get("containers"):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    if not action:
        return None
    return ClusterEvent(Resource.POD, action)


NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
NODE_DELETE = ClusterEvent(Resource.NODE, ActionType.DELETE)
POD_ADD = ClusterEvent(Resource.POD, ActionType.ADD)
POD_DELETE = ClusterEvent(Resource.POD, ActionType.DELETE)
UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD)
UNSCHEDULED_POD_UPDATE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE)
UNSCHEDULED_POD_DELETE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.DELETE)


# kube's names of the resources whose Resource value here differs.
_KUBE_RESOURCE: dict[str, str] = {
    Resource.POD: "AssignedPod",
    Resource.UNSCHEDULED_POD: "UnschedulablePod",
}


@functools.lru_cache(maxsize=256)
def event_label(event: ClusterEvent) -> str:
    """kube-scheduler's label of ``event`` (``ClusterEvent.Label()``), e.g. ``NodeAdd``.

    The ``event`` label of ``scheduler_queue_incoming_pods_total``: resource
    then action, as ``AssignedPodDelete`` or ``NodeUpdateNodeLabel``. An
    update that changed several things at once (kube sends one event per
    kind of change) is labelled ``Update``.
    """
    if event.label:
        return event.label
    resource = _KUBE_RESOURCE.get(event.resource, str(event.resource))
    action = event.action
    if action == ActionType.ALL:
        name = "All"
    elif action.name is not None and "|" not in action.name and action != ActionType.UPDATE:
        name = "".join(part.capitalize() for part in action.name.split("_"))
    elif action & ~ActionType.UPDATE:
        name = "All"
    else:
        name = "Update"
    return f"{resource}{name}"
