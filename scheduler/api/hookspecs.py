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
from scheduler.api.transform import NodeAdjustment
from scheduler.api.views import Node, Nodes, Pod, QueuedPod

PROJECT_NAME = "scheduler"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
#: Marks a plugin method as the implementation of the hook of the same name
#: (pluggy's marker; ``specname=`` names the hook when the method is named otherwise).
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class SchedulerHookSpecs:
    """Extension points, in the order a pod meets them."""

    @hookspec
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """PreEnqueue: may the pod enter the active queue at all?

        Called when a pod is added to the queue or updated, before it may
        enter the active queue; there are no nodes and no cycle state yet.
        Return a non-success Status to keep it out (it waits in the
        unschedulable pool until an event this plugin registered arrives),
        None or ``Status.success()`` to let it in. kube-scheduler's
        SchedulingGates works here. Keep it cheap: it runs on informer events.
        """
        ...

    @hookspec(firstresult=True)
    def queue_sort_key(self, queued: QueuedPod) -> Any:
        """QueueSort: the sort key of a queued pod; smaller keys are scheduled first.

        kube-scheduler's QueueSort is a ``Less(a, b)`` function; a key is the
        Python way to express the same ordering and lets the queue be a heap.
        Keys of all pods must compare with each other (tuples of numbers and
        strings do); a key that raises or does not compare puts that pod after
        every well-keyed one. Exactly one QueueSort plugin is enabled, shared by
        all profiles. kube's PrioritySort is, in effect::

            def queue_sort_key(self, queued):
                return (-queued.pod.priority, queued.timestamp)
        """
        ...

    @hookspec
    def before_pre_filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> Pod | Status | None:
        """Transformer (API 2.1), before PreFilter: give this cycle an adjusted pod.

        Koordinator's ``BeforePreFilter``. Return None to leave the pod as it
        is, or a pod built with ``self.handle.framework.pod_from_object``
        (same namespace, name and uid) that PreFilter, Filter, PreScore and
        Score then see in its place; the next transformer gets the adjusted
        one. Reserve, Permit and the binding cycle still get the pod as it is
        in the cluster. Also the place to compute, once per cycle, what the
        other transformers need (store it in ``state``). A rejecting status
        rejects the pod as a PreFilter plugin would; Error fails the attempt.
        """
        ...

    @hookspec
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Nodes
    ) -> PreFilterResult | Status | None:
        """PreFilter: compute per-pod data once, or reject the pod outright.

        ``nodes`` is every node of the cluster. Store what Filter (and the
        PreFilter extensions) will need in ``state``, under a key prefixed with
        the plugin's name. Return:

        - None or ``Status.success()``: go on with every node;
        - a :class:`PreFilterResult` with ``node_names``: only those nodes are
          candidates (the results of several plugins are intersected);
        - ``Status.skip()``: this plugin has nothing to check for this pod;
          its Filter (and PreFilter extensions) are not called for it;
        - ``Status.unschedulable(...)``/``unresolvable(...)``: the pod fits no
          node; the code is given to every node (``Diagnosis.pre_filter_code``)
          and PostFilter still runs;
        - ``Status.error_status(...)`` (or raise): the attempt fails, the pod is
          retried after a backoff.
        """
        ...

    @hookspec
    def after_pre_filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> Status | None:
        """Transformer (API 2.1), after every PreFilter succeeded.

        Koordinator's ``AfterPreFilter``: a chance to correct what PreFilter
        plugins stored in ``state``. Status semantics as :meth:`before_pre_filter`.
        """
        ...

    @hookspec
    def pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node: Node
    ) -> Status | None:
        """PreFilter extension: update cycle state as if ``pod_to_add`` ran on ``node``.

        Used by what-if evaluations: the room nominated pods hold, and
        preemption putting victims back. It is called on a clone of the cycle
        state (:meth:`CycleState.clone`), so values it changes must implement
        ``clone()``. Needed only by plugins whose PreFilter state depends on
        other pods (inter-pod affinity, topology spread); a Filter that reads
        pods only through ``nodes.requested`` needs none.
        """
        ...

    @hookspec
    def pre_filter_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node: Node
    ) -> Status | None:
        """PreFilter extension: update cycle state as if ``pod_to_remove`` were gone.

        Preemption calls it for each candidate victim, on a cloned state; the
        counterpart of :meth:`pre_filter_add_pod`.
        """
        ...

    @hookspec
    def before_filter(
        self, state: CycleState, pod: Pod, nodes: Nodes
    ) -> NodeAdjustment | Status | None:
        """Transformer (API 2.1), before Filter: adjust some nodes' resources in use for this pod.

        Koordinator's ``BeforeFilter``, over every candidate at once. Return
        a :class:`~scheduler.api.transform.NodeAdjustment` (indexes into
        ``nodes``), e.g. a reservation's resources released on its node for
        the pod allowed to use it and held for every other pod. Every Filter
        run of this cycle sees the adjusted rows, preemption's what-if checks
        included; the live table is never written. Adjustments of several
        transformers add up. Called once per cycle, after PreFilter. Return
        None when nothing changes: a cycle without adjustments costs nothing
        and keeps reusing results across identical pods.
        """
        ...

    @hookspec
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult | Status:
        """Filter: which candidate nodes can run the pod.

        ``nodes`` holds only the nodes every earlier Filter plugin accepted
        (and PreFilter let through). Return a :class:`FilterResult` of
        ``len(nodes)`` verdicts, aligned with ``nodes``, or one Status for all
        of them. Reject a node as Unschedulable when preemption or a cluster
        change could make it fit, as UnschedulableAndUnresolvable when nothing
        could; each reason is counted across nodes in the FailedScheduling
        message ("0/5 nodes are available: 2 Insufficient cpu, ..."), so keep
        reasons short and node-independent. Error (or raising) fails the
        attempt. A Filter may also be called on one node at a time, or with
        pods added or removed, by preemption's what-if checks.
        """
        ...

    @hookspec
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> PostFilterResult | Status | None:
        """PostFilter: called only when no node fits; e.g. preemption.

        Runs after every rejection, a PreFilter one included, as
        kube-scheduler's does. ``diagnosis`` says which plugin rejected which
        node and why (``node_verdicts``; none after a PreFilter rejection).
        Plugins run in order until one returns success (with a nominated node)
        or an error. Return ``PostFilterResult(Status.success(), node_name)``
        to nominate a node (the pod is retried and the node's room held for
        it), None (or an Unschedulable status) when the plugin cannot help:
        the next PostFilter plugin then tries.
        """
        ...

    @hookspec
    def before_score(
        self, state: CycleState, pod: Pod, nodes: Nodes
    ) -> NodeAdjustment | Status | None:
        """Transformer (API 2.1), before PreScore: adjust the feasible nodes' view for scoring.

        Koordinator's ``BeforeScore``. ``nodes`` are the feasible nodes (not
        called when only one is feasible); PreScore and Score see the
        adjustment. Semantics as :meth:`before_filter`.
        """
        ...

    @hookspec
    def pre_score(self, state: CycleState, pod: Pod, nodes: Nodes) -> Status | None:
        """PreScore: prepare scoring over the feasible nodes; ``Status.skip()`` skips Score.

        ``nodes`` are the nodes that passed Filter. Not called when only one
        node is feasible (nothing to rank). A rejecting or Error status fails
        the attempt.
        """
        ...

    @hookspec
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> npt.NDArray[np.int64] | Status:
        """Score: an integer score per feasible node, aligned with the candidates.

        Return an ``int64`` array of ``len(nodes)`` scores, higher is better.
        Without a NormalizeScore they must lie in [``MIN_NODE_SCORE``,
        ``MAX_NODE_SCORE``] (0..100), or the call counts as failed; with one,
        any range. The profile's weight multiplies the normalised score and
        the plugins' weighted scores are summed per node.
        """
        ...

    @hookspec
    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Nodes, scores: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64] | Status | None:
        """NormalizeScore: map this plugin's scores into [0, 100].

        Runs right after this plugin's Score, over every feasible node (also
        when Score results were reused for an identical pod), so normalising
        against the other nodes is fine. Modify ``scores`` (a copy of the raw
        scores) in place and return None, or return a new array.
        """
        ...

    @hookspec
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Reserve: claim resources for the chosen node before binding.

        For state kept outside the node table (a plugin's own bookkeeping of
        claimed devices, volumes ...), so that the next pods' cycles see it
        before this pod is bound. A non-success status fails the attempt, and
        every Reserve plugin's Unreserve runs.
        """
        ...

    @hookspec
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve: undo Reserve; called in reverse order on any later failure.

        Called for every plugin implementing it when Reserve, Permit or the
        binding cycle fails, also for plugins whose Reserve did not run (so it
        must be idempotent). Errors are logged; they never stop the rollback.
        """
        ...

    @hookspec
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Permit: allow, reject, or ``Status.wait(timeout)`` to hold the pod.

        The last step of the scheduling cycle. A waiting pod holds its
        reservation until every waiting plugin allowed it
        (``handle.get_waiting_pod(uid).allow(plugin_name)``, typically from
        another pod's Permit: gang scheduling), one rejects it, or the
        timeout passes (capped by the configured longest Permit wait);
        rejection and timeout unreserve it and send it back to the queue.
        """
        ...

    @hookspec
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBind: work that must succeed before binding (may be async).

        Runs in the binding cycle, off the scheduling loop, under the PreBind
        budget (see the plugin's ``pre_bind_timeout``). A non-success status
        unreserves the pod and retries it after a backoff.
        """
        ...

    @hookspec
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind: bind the pod; return ``Status.skip()`` to let the next Bind plugin do it.

        The first Bind plugin that does not skip decides. To bind as
        kube-scheduler does, call :func:`~scheduler.api.binding.bind_pod` with
        ``self.handle.client`` and return its outcome's ``status(pod)``; the
        engine reads what happened (bound, placed elsewhere, pod gone) from it.
        """
        ...

    @hookspec
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """PostBind: informational, after a successful bind (may be async).

        Its outcome changes nothing: failures are logged.
        """
        ...

    @hookspec
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The cluster events that may make pods this plugin rejected schedulable.

        Called once, at start-up. A pod this plugin rejected waits in the
        unschedulable pool until one of these events (and its hint, if any,
        says ``QUEUE``) or the pool's timeout moves it back. A plugin that
        does not implement this hook is assumed to care about every event.
        """
        ...


#: Every hook's name (the framework's; not exported by ``scheduler.api`` since 2.0).
HOOK_NAMES: tuple[str, ...] = tuple(
    name for name in vars(SchedulerHookSpecs) if not name.startswith("_")
)
