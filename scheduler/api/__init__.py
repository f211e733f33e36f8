"""The plugin API: everything a plugin author imports, and nothing else.

Versioned by :data:`PLUGIN_API_VERSION` (see :mod:`scheduler.api.version` for
the compatibility rule). A minimal plugin::

    from scheduler.api import FilterResult, Plugin, hookimpl

    class OnlyLinux(Plugin):
        api_version = "1.0"

        @hookimpl
        def filter(self, state, pod, nodes):
            os_ids = nodes.label_values("kubernetes.io/os")
            linux = nodes.table.labels.value_id("kubernetes.io/os", "linux")
            return FilterResult.from_mask(os_ids == linux, "node(s) are not linux")

registered in the plugin distribution's ``pyproject.toml``::

    [project.entry-points."scheduler.plugins"]
    OnlyLinux = "my_package.plugin:OnlyLinux"
"""

from scheduler.api.binding import BindOutcome, BindResult, bind_pod, binding_body
from scheduler.api.cyclestate import CycleState
from scheduler.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from scheduler.api.handle import Handle, KubeClient, ObjectStore, WaitingPod
from scheduler.api.hookspecs import HOOK_NAMES, SchedulerHookSpecs, hookimpl, hookspec
from scheduler.api.plugin import NodePlugin, Plugin
from scheduler.api.results import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Diagnosis,
    FilterResult,
    NodeVerdict,
    PostFilterResult,
    PreFilterResult,
    Rejection,
)
from scheduler.api.status import Code, Status
from scheduler.api.version import PLUGIN_API_VERSION
from scheduler.model.quantity import QuantityError, parse_quantity
from scheduler.model.selectors import LabelSelector, NodeSelector
from scheduler.model.taints import Taint, Toleration
from scheduler.state.nodetable import NodeInfo, NodeSet, NodeTable
from scheduler.state.pod import InvalidPodError, PodInfo, QueuedPodInfo

__all__ = [
    "HOOK_NAMES",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "PLUGIN_API_VERSION",
    "ActionType",
    "BindOutcome",
    "BindResult",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "Diagnosis",
    "FilterResult",
    "Handle",
    "InvalidPodError",
    "KubeClient",
    "LabelSelector",
    "NodeInfo",
    "NodePlugin",
    "NodeSelector",
    "NodeSet",
    "NodeTable",
    "NodeVerdict",
    "ObjectStore",
    "Plugin",
    "PodInfo",
    "PostFilterResult",
    "PreFilterResult",
    "QuantityError",
    "QueuedPodInfo",
    "QueueingHint",
    "Rejection",
    "Resource",
    "SchedulerHookSpecs",
    "Status",
    "Taint",
    "Toleration",
    "WaitingPod",
    "bind_pod",
    "binding_body",
    "hookimpl",
    "hookspec",
    "parse_quantity",
]
