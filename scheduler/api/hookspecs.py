"""The hook specifications: one per extension point of the scheduling framework.

A plugin is a class whose methods, marked with :data:`hookimpl`, implement any
subset of these hooks. Hook names are the extension points in snake case.
pluggy validates at start-up that each implementation's name exists here and
that its arguments are a subset of the spec's (an implementation may take
fewer arguments than the spec offers).

Scheduling-cycle hooks (PreEnqueue through Permit) are synchronous and see all
candidate nodes at once: API 2.0 plugins as a read-only
:class:`~scheduler.api.views.Nodes`, 1.x plugins as the framework's NodeSet
(rows of the live table, kept for compatibility). Either way, arrays a hook
returns are aligned with the candidates.
Binding-cycle hooks (PreBind, Bind, PostBind) may be ``async def``; the
framework awaits them with the profile's timeouts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pluggy

from scheduler.api.cyclestate import CycleState
from scheduler.api.events import ClusterEventWithHint
from scheduler.api.results import Diagnosis, FilterResult, PostFilterResult, PreFilterResult
from scheduler.api.status import Status
from scheduler.api.views import Node, Nodes, Pod, QueuedPod

PROJECT_NAME = "scheduler"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class SchedulerHookSpecs:
    """Extension points, in the order a pod meets them."""

    @hookspec
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """PreEnqueue: may the pod enter the active queue at all?

        Return a non-success Status to keep it out (it waits in the
        unschedulable pool until an event this plugin registered arrives).
        kube-scheduler's SchedulingGates works here.
        """
        ...

    @hookspec(firstresult=True)
    def queue_sort_key(self, queued: QueuedPod) -> Any:
        """QueueSort: the sort key of a queued pod; smaller keys are scheduled first.

        kube-scheduler's QueueSort is a ``Less(a, b)`` function; a key is the
        Python way to express the same ordering and lets the queue be a heap.
        Exactly one QueueSort plugin is enabled, shared by all profiles.
        """
        ...

    @hookspec
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Nodes
    ) -> PreFilterResult | Status | None:
        """PreFilter: compute per-pod data once, or reject the pod outright.

        Return a :class:`PreFilterResult` with ``node_names`` to restrict the
        candidates (results of several plugins are intersected), ``Status.skip()``
        to skip this plugin's Filter for this pod, or a rejecting Status.
        """
        ...

    @hookspec
    def pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node: Node
    ) -> Status | None:
        """PreFilter extension: update cycle state as if ``pod_to_add`` ran on ``node``.

        Used by preemption to evaluate nominated pods and removed victims.
        """
        ...

    @hookspec
    def pre_filter_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node: Node
    ) -> Status | None:
        """PreFilter extension: update cycle state as if ``pod_to_remove`` were gone."""
        ...

    @hookspec
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult | Status:
        """Filter: which candidate nodes can run the pod.

        ``nodes`` holds only the nodes every earlier Filter plugin accepted.
        Return a :class:`FilterResult` aligned with the candidates, or one
        Status for all of them.
        """
        ...

    @hookspec
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> PostFilterResult | Status | None:
        """PostFilter: called only when no node fits; e.g. preemption.

        Plugins run in order until one returns success (with a nominated node)
        or an error. Return None (or an Unschedulable status) when the plugin
        cannot help: the next PostFilter plugin then tries.
        """
        ...

    @hookspec
    def pre_score(self, state: CycleState, pod: Pod, nodes: Nodes) -> Status | None:
        """PreScore: prepare scoring over the feasible nodes; ``Status.skip()`` skips Score."""
        ...

    @hookspec
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> npt.NDArray[np.int64] | Status:
        """Score: an integer score per feasible node, aligned with the candidates."""
        ...

    @hookspec
    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Nodes, scores: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64] | Status | None:
        """NormalizeScore: map this plugin's scores into [0, 100].

        Modify ``scores`` in place (return None) or return a new array.
        """
        ...

    @hookspec
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Reserve: claim resources for the chosen node before binding."""
        ...

    @hookspec
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve: undo Reserve; called in reverse order on any later failure."""
        ...

    @hookspec
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Permit: allow, reject, or ``Status.wait(timeout)`` to hold the pod.

        A waiting pod is released by ``handle.get_waiting_pod(uid).allow(name)``.
        """
        ...

    @hookspec
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBind: work that must succeed before binding (may be async)."""
        ...

    @hookspec
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind: bind the pod; return ``Status.skip()`` to let the next Bind plugin do it."""
        ...

    @hookspec
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """PostBind: informational, after a successful bind (may be async)."""
        ...

    @hookspec
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The cluster events that may make pods this plugin rejected schedulable."""
        ...


#: Every hook's name (the framework's; not exported by ``scheduler.api`` since 2.0).
HOOK_NAMES: tuple[str, ...] = tuple(
    name for name in vars(SchedulerHookSpecs) if not name.startswith("_")
)
