"""Cluster events a plugin registers to get the pods it rejected retried.

kube-scheduler parks a rejected pod in the unschedulable pool and moves it
back to the active queue only when an event that could make it schedulable
happens — an event registered by one of the plugins that rejected it. A
plugin may add a hint function that looks at the change and decides.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class ActionType(enum.IntFlag):
    """What happened to an object; flags, so one registration can cover several.

    ``UPDATE`` is every update kind and ``ALL`` adds ``ADD`` and ``DELETE``;
    register the narrowest flags that can make your rejected pods
    schedulable, so fewer events requeue them.

    Examples:
        >>> bool(ActionType.UPDATE & ActionType.UPDATE_NODE_LABEL)
        True
        >>> bool((ActionType.ADD | ActionType.UPDATE_NODE_TAINT) & ActionType.DELETE)
        False
    """

    #: An object was created.
    ADD = enum.auto()
    #: An object was deleted.
    DELETE = enum.auto()
    #: A node's ``status.allocatable`` changed.
    UPDATE_NODE_ALLOCATABLE = enum.auto()
    #: A node's labels changed.
    UPDATE_NODE_LABEL = enum.auto()
    #: A node's taints (or ``spec.unschedulable``) changed.
    UPDATE_NODE_TAINT = enum.auto()
    #: A node's conditions changed.
    UPDATE_NODE_CONDITION = enum.auto()
    #: A node's annotations changed.
    UPDATE_NODE_ANNOTATION = enum.auto()
    #: A pod's labels changed.
    UPDATE_POD_LABEL = enum.auto()
    #: A running pod's containers changed (an in-place resize may free room).
    UPDATE_POD_SCALE_DOWN = enum.auto()
    #: A pod's tolerations changed.
    UPDATE_POD_TOLERATION = enum.auto()
    #: A pod's last scheduling gate was removed.
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = enum.auto()
    #: Any other relevant update (e.g. a node's images).
    UPDATE_OTHER = enum.auto()
    #: A node's ``status.declaredFeatures`` changed (kube 1.36's UpdateNodeDeclaredFeature).
    UPDATE_NODE_DECLARED_FEATURE = enum.auto()
    #: Any update.
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_OTHER
        | UPDATE_NODE_DECLARED_FEATURE
    )
    #: Anything.
    ALL = ADD | DELETE | UPDATE


class Resource(enum.StrEnum):
    """Well-known resources; plugins may use any other string (e.g. a CRD's kind)."""

    POD = "Pod"  # an assigned pod (running on a node)
    UNSCHEDULED_POD = "UnscheduledPod"
    NODE = "Node"
    NAMESPACE = "Namespace"
    PDB = "PodDisruptionBudget"
    WILDCARD = "*"


class QueueingHint(enum.Enum):
    """A hint function's verdict: requeue the pod (``QUEUE``) or leave it parked (``SKIP``)."""

    #: The change may make the pod schedulable: move it to the active (or backoff) queue.
    QUEUE = "Queue"
    #: The change cannot help this pod: leave it in the unschedulable pool.
    SKIP = "QueueSkip"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of change to the cluster: a resource, what happened to it, and a label for logs.

    Examples:
        >>> node_labels = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL)
        >>> node_labels.matches(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL))
        True
        >>> node_labels.matches(ClusterEvent(Resource.NODE, ActionType.ADD))
        False
        >>> ClusterEvent(Resource.POD, ActionType.ADD).matches(
        ...     ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD))
        True
    """

    resource: str
    action: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        """Whether this registered event covers the event ``other`` that happened.

        A registration for ``Pod`` covers changes of unscheduled pods too, as
        in kube-scheduler (e.g. a gang member arriving); ``UnscheduledPod``
        covers only those.
        """
        resource_ok = self.resource in (Resource.WILDCARD, other.resource) or (
            self.resource == Resource.POD and other.resource == Resource.UNSCHEDULED_POD
        )
        return resource_ok and bool(self.action & other.action)


HintFn = Callable[[Any, Any, Any], QueueingHint]
"""``hint(pod, old, new)``: may the change help the rejected ``pod`` (a :class:`Pod`)?

``pod`` is typed loosely so that 1.x hints annotated with the framework's
``PodInfo`` (which is what they are given) still type-check.

``old`` and ``new`` are the changed object's raw API JSON (dicts) before and
after the change; ``old`` is None for an add and ``new`` is None for a
delete. A hint that raises counts as QUEUE, so a buggy hint can delay a pod
but never strand it.
"""


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """One entry of ``events_to_register``: an event and, optionally, a hint deciding per change.

    Examples:
        >>> def zone_label_changed(pod, old, new):
        ...     def zone(node):
        ...         return ((node or {}).get("metadata", {}).get("labels") or {}).get("zone")
        ...     return QueueingHint.QUEUE if zone(old) != zone(new) else QueueingHint.SKIP
        >>> event = ClusterEventWithHint(
        ...     ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        ...     zone_label_changed,
        ... )
        >>> event.hint(None, None, {"metadata": {"labels": {"zone": "a"}}})
        <QueueingHint.QUEUE: 'Queue'>
    """

    event: ClusterEvent
    hint: HintFn | None = None
