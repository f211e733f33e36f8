"""The plugin API: everything a plugin author imports, and nothing else.

Versioned by :data:`PLUGIN_API_VERSION` (see :mod:`scheduler.api.version` for
the compatibility rule). A minimal plugin::

    from scheduler.api import FilterResult, Plugin, hookimpl

    class OnlyLinux(Plugin):
        api_version = "2.0"

        @hookimpl
        def filter(self, state, pod, nodes):
            linux = nodes.label_values("kubernetes.io/os") == nodes.label_id(
                "kubernetes.io/os", "linux"
            )
            return FilterResult.from_mask(linux, "node(s) are not linux")

registered in the plugin distribution's ``pyproject.toml``::

    [project.entry-points."scheduler.plugins"]
    OnlyLinux = "my_package.plugin:OnlyLinux"

A PostFilter plugin that preempts gets kube's evaluator from
``handle.preemption(policy)``; its types are in :mod:`scheduler.api.preemption`.

Hooks get read-only views (:class:`Pod`, :class:`Nodes`, :class:`Node`) and a
:class:`CycleState`, and answer with results (:class:`FilterResult`, score
arrays, :class:`Status`). Unit-test a plugin with :mod:`scheduler.testing`
(``PluginTestKit``). Names the API exported before 2.0 that are the
framework's internals (``NodeTable``, ``NodeSet``, ``PodInfo`` ...) still
import, with a DeprecationWarning naming the replacement.
"""

from __future__ import annotations

from typing import Any

from scheduler.api.args import PluginArgs, coerce_args
from scheduler.api.binding import BindOutcome, BindResult, bind_pod, binding_body
from scheduler.api.cyclestate import CycleState
from scheduler.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from scheduler.api.handle import ApiClient, Handle, ObjectStore, WaitingPod
from scheduler.api.hookspecs import hookimpl
from scheduler.api.plugin import NodePlugin, Plugin
from scheduler.api.results import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Diagnosis,
    FilterResult,
    NodeVerdict,
    PostFilterResult,
    PreFilterResult,
)
from scheduler.api.status import Code, Status
from scheduler.api.transform import NodeAdjustment
from scheduler.api.version import PLUGIN_API_VERSION
from scheduler.api.views import (
    CPU,
    EPHEMERAL_STORAGE,
    LABEL_ABSENT,
    LABEL_UNKNOWN,
    MEMORY,
    PODS,
    Node,
    Nodes,
    Pod,
    QueuedPod,
)
from scheduler.model.featuregates import FeatureSpec
from scheduler.model.quantity import QuantityError, parse_quantity
from scheduler.model.selectors import LabelSelector, NodeSelector
from scheduler.model.taints import Taint, Toleration

__all__ = [  # noqa: RUF022 - grouped by what an author does with them
    # writing a plugin
    "PLUGIN_API_VERSION",
    "NodePlugin",
    "Plugin",
    "PluginArgs",
    "coerce_args",
    "hookimpl",
    "FeatureSpec",
    # what hooks are given
    "CycleState",
    "ApiClient",
    "Handle",
    "Node",
    "Nodes",
    "ObjectStore",
    "Pod",
    "QueuedPod",
    "WaitingPod",
    "CPU",
    "EPHEMERAL_STORAGE",
    "LABEL_ABSENT",
    "LABEL_UNKNOWN",
    "MEMORY",
    "PODS",
    # what hooks return
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "Code",
    "Diagnosis",
    "FilterResult",
    "NodeVerdict",
    "PostFilterResult",
    "PreFilterResult",
    "Status",
    # transformers (API 2.1): an adjusted view of the pod or of nodes
    "NodeAdjustment",
    # requeueing on cluster events
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "QueueingHint",
    "Resource",
    # binding (a Bind plugin that wants kube's behaviour)
    "BindOutcome",
    "BindResult",
    "bind_pod",
    "binding_body",
    # Kubernetes values (scheduler.model)
    "LabelSelector",
    "NodeSelector",
    "QuantityError",
    "Taint",
    "Toleration",
    "parse_quantity",
]


def __getattr__(name: str) -> Any:
    """Names exported before API 2.0: still importable, with a DeprecationWarning."""
    if name.startswith("__"):  # dunder probes (copy, pickle, doctest ...): not ours
        raise AttributeError(f"module 'scheduler.api' has no attribute {name!r}")
    import scheduler.api._compat  # only loaded when a 1.x name is asked for

    return scheduler.api._compat.deprecated(name)
