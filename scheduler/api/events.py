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
    ADD = enum.auto()
    DELETE = enum.auto()
    UPDATE_NODE_ALLOCATABLE = enum.auto()
    UPDATE_NODE_LABEL = enum.auto()
    UPDATE_NODE_TAINT = enum.auto()
    UPDATE_NODE_CONDITION = enum.auto()
    UPDATE_NODE_ANNOTATION = enum.auto()
    UPDATE_POD_LABEL = enum.auto()
    UPDATE_POD_SCALE_DOWN = enum.auto()
    UPDATE_POD_TOLERATION = enum.auto()
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = enum.auto()
    UPDATE_OTHER = enum.auto()
    #: A node's ``status.declaredFeatures`` changed (kube 1.36's UpdateNodeDeclaredFeature).
    UPDATE_NODE_DECLARED_FEATURE = enum.auto()
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
    QUEUE = "Queue"
    SKIP = "QueueSkip"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
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
    event: ClusterEvent
    hint: HintFn | None = None
