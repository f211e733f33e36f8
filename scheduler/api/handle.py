"""What a plugin may use of the framework: the handle given to its constructor.

The handle is a Protocol so plugins depend on the interface only; the daemon,
``simulate``, ``explain`` and the test kit each provide an implementation.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Protocol

import structlog

from scheduler.api.cyclestate import CycleState
from scheduler.api.preemption import Preemption, PreemptionPolicy
from scheduler.api.status import Status
from scheduler.api.views import Node, Nodes, Pod


class WaitingPod(Protocol):
    """A pod held at Permit; any plugin may allow or reject it."""

    @property
    def pod(self) -> Pod:
        """The pod held at Permit."""

    @property
    def node_name(self) -> str:
        """The node the pod was reserved on."""

    def pending_plugins(self) -> list[str]:
        """The plugins whose wait has not been lifted yet."""

    @property
    def done(self) -> bool:
        """Allowed, rejected or timed out: no longer waiting."""

    def allow(self, plugin: str) -> None:
        """Lift ``plugin``'s wait; the pod proceeds once no plugin is waiting."""

    def reject(self, plugin: str, message: str) -> None:
        """Fail the pod's Permit: it is unreserved and goes back to the queue."""


class ObjectStore(Protocol):
    """A read-only, informer-fed view of one resource (e.g. a CRD's objects)."""

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object ``namespace/name`` (``namespace`` empty for cluster-scoped ones), or None."""

    def list(
        self, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> list[Mapping[str, Any]]:
        """Every object, or those of one namespace; read-only, without ``managedFields``.

        ``labels`` keeps the objects carrying every one of these labels with
        these values (an equality selector, API 2.1). The daemon answers it
        from an index kept up to date as events arrive, so a plugin that finds
        its objects by label (a gang's members) pays for the matches, not for
        every object of the namespace.
        """

    def revision(self) -> int:
        """A number that changes whenever the objects do (API 1.2): keep what you
        derive from the store until it moves, instead of re-reading every object."""

    def changed_since(self, revision: int) -> Collection[tuple[str, str]] | None:
        """The ``(namespace, name)`` of every object added, changed or deleted
        after ``revision`` (a value :meth:`revision` returned), or None (API 2.3).

        What lets a plugin keep an index of many objects current at the cost
        of what changed: read each named object with :meth:`get` (None: it was
        deleted). None means the store no longer knows (it re-listed, or more
        changed than it remembers): rebuild from :meth:`list` then.
        """


class ApiClient(Protocol):
    """Raw-JSON access to the API server for binding-cycle hooks (async)."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> Any:
        """Send ``method`` to ``path`` (``/api/v1/...``) and return the decoded JSON answer.

        Raises on an error answer; the error carries the HTTP ``status`` and the
        API's ``message`` (what :meth:`BindOutcome.from_error` reads). For
        binding-cycle hooks: a scheduling-cycle hook must not wait on the network.
        """


class FrameworkRunner(Protocol):
    """The parts of the profile's framework a plugin may drive (preemption does)."""

    def run_filter_with_nominated(self, state: CycleState, pod: Pod, node: Node) -> Status:
        """Run every Filter plugin on one node; the first rejection is returned."""

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node: Node
    ) -> Status: ...

    def pod_from_object(self, raw: Mapping[str, Any]) -> Pod:
        """Parse a pod object (API 2.1): a copy with changed requests, a reservation's template.

        What a ``before_pre_filter`` transformer returns to adjust the pod,
        and how a plugin builds a pod that is not in the cluster to ask
        :meth:`find_node` where it would go. Raises ValueError naming the
        pod and what is wrong with it.
        """

    def find_node(self, pod: Pod, nodes: Nodes) -> tuple[str | None, Status]:
        """Where a pod that is not in the queue would go (API 2.1): ``(node, status)``.

        Runs this profile's transformers, PreFilter, Filter, PreScore and
        Score for ``pod`` (built with :meth:`pod_from_object`)
        over ``nodes`` (``handle.nodes()``), exactly as a scheduling cycle
        would, and picks a best-scored node; ``node`` is None when none
        fits (``status`` says why). Nothing is reserved or bound: a plugin
        placing a pseudo-pod (a reservation's template) accounts for the
        placement itself. Call it outside a hook (from a plugin's own task),
        never from inside another pod's cycle.
        """

    def run_pre_filter_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node: Node
    ) -> Status: ...


class Nominator(Protocol):
    """Who holds a nomination where (the scheduling queue)."""

    def nominated_pods(self) -> Mapping[str, Sequence[Pod]]: ...


class Handle(Protocol):
    """What a plugin may use of the scheduler: given to its constructor, kept as ``self.handle``.

    One handle per plugin and profile; its ``logger`` is bound to both. Call
    :meth:`store` in ``__init__``, so the informers start and sync before the
    first pod is scheduled.
    """

    @property
    def profile_name(self) -> str:
        """The ``schedulerName`` of the profile the plugin runs in."""

    def nodes(self) -> Nodes:
        """Every node of the cluster, read-only, as of now (API 2.0).

        Consistent for the duration of a scheduling cycle; take a new one in
        the next (it is cheap: the arrays are shared views).
        """

    @property
    def table(self) -> Any:
        """API 1.x only: the scheduler's live node table. Deprecated.

        Kept so 1.x plugins run unchanged; its layout may change in any
        release and writing to it corrupts the scheduler's state. 2.0 plugins
        use :meth:`nodes` and the ``nodes`` their hooks are given.
        """

    @property
    def client(self) -> ApiClient:
        """The API client (async), for binding-cycle hooks."""

    @property
    def framework(self) -> FrameworkRunner:
        """The profile's framework (available once every plugin is constructed)."""

    @property
    def logger(self) -> structlog.typing.FilteringBoundLogger:
        """A structlog logger bound to the plugin and profile names."""

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        """The pod with ``uid`` waiting at Permit, or None (how a gang releases its members)."""

    def iterate_waiting_pods(self) -> Iterator[WaitingPod]:
        """Every pod waiting at Permit in this profile."""

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        """Reject the waiting pod ``uid`` as ``plugin``; False if no such pod waits."""

    def record_event(
        self, pod: Pod, event_type: str, reason: str, message: str, action: str = ""
    ) -> None:
        """Emit a Kubernetes Event about ``pod`` (``event_type`` Normal or Warning)."""

    def store(self, group: str, version: str, plural: str) -> ObjectStore:
        """Objects of a resource the plugin declared in its ``watches`` attribute."""

    def is_leader(self) -> bool:
        """Whether this replica acts for the cluster now (API 2.1).

        Hooks run only on the leader; work a plugin does on its own (a
        background task writing objects) checks this first, so a standby
        replica of a leader-elected deployment never writes. True where
        there is no election.
        """

    def activate_pods(self, pods: Sequence[Pod]) -> None:
        """Move these pods from backoff/unschedulable to the active queue."""

    def record_preemption_attempt(self) -> None:
        """Count one preemption attempt (kube's ``scheduler_preemption_attempts_total``).

        A preemption PostFilter calls it every time it runs, as kube's
        DefaultPreemption does.
        """

    def record_preemption_victims(self, victims: int) -> None:
        """Observe how many pods the chosen preemption evicts (``scheduler_preemption_victims``)."""

    def preemption(self, policy: PreemptionPolicy) -> Preemption:
        """An evaluator that preempts with ``policy`` (API 2.1, :mod:`scheduler.api.preemption`).

        Call it in ``__init__`` (it asks for the PodDisruptionBudget store
        then) and keep the result: it remembers the preemptions in flight.
        Candidates, the dry run on what-if copies, the choice and the
        eviction are the ones DefaultPreemption gets.
        """

    @property
    def feature_gates(self) -> Mapping[str, bool]:
        """The effective feature gates, read-only (API 2.2): kube's and those plugins declare.

        Fixed for the life of the process (a config reload does not change them).
        """

    def nominated_pods(self) -> Mapping[str, Sequence[Pod]]:
        """Pods holding a nomination (they won a preemption), by node name.

        Includes pods already assumed or bound on a node (check
        whether a pod is on the node); empty where the scheduler keeps no queue
        (``explain``). Preemption's what-if checks count the room that
        equal- or higher-priority nominated pods hold, as kube's
        ``RunFilterPluginsWithNominatedPods`` does.
        """


#: The plugin API 1.x name, not to be confused with the scheduler's own
#: scheduler.kube.client.KubeClient; ``scheduler.api.KubeClient`` warns.
KubeClient = ApiClient
