"""CapacityScheduling: elastic quotas per namespace, compatible with scheduler-plugins'.

Each namespace may have one ElasticQuota (``scheduling.x-k8s.io/v1alpha1``)
with ``min`` (guaranteed) and ``max`` (ceiling). The decisions are
scheduler-plugins' ``pkg/capacityscheduling``:

- **PreFilter** rejects a pod whose quota's used plus its request (and the
  requests of equal- or higher-priority pods of the same quota nominated for
  a node) exceeds ``max``, or whose request would take the sum of all
  quotas' used above the sum of all quotas' ``min``: a namespace may borrow
  what other quotas leave unused of their min, never more. Both rejections
  are Unschedulable, so PostFilter may preempt.
- **Reserve/Unreserve** charge the pod to its quota from the moment it is
  assumed until it binds (then the informer keeps it charged) or fails, so
  the next decision already counts it. Reserve re-checks ``max`` and the
  aggregate min with the pod in flight and refuses rather than overshoot.
- **PostFilter** preempts with CapacityScheduling's victim rules: within the
  preemptor's quota, lower-priority pods of that quota when the quota is at
  or above its min with the preemptor; otherwise pods of quotas using more
  than their min (reclaiming what was lent); a pod outside any quota may
  preempt only lower-priority pods outside any quota. PodDisruptionBudgets
  and kube's reprieve order decide among them.
- ``status.used`` of each ElasticQuota is reconciled from the bound pods
  (see :mod:`scheduler_plugin_capacityscheduling.status`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    Node,
    Nodes,
    Plugin,
    Pod,
    Resource,
    Status,
    hookimpl,
)

from scheduler_plugin_capacityscheduling.book import QuotaBook, view_uid
from scheduler_plugin_capacityscheduling.quota import (
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    QuotaError,
    QuotaSet,
)
from scheduler_plugin_capacityscheduling.resources import Vector, add_into, describe, pod_vector
from scheduler_plugin_capacityscheduling.status import StatusWriter

NAME: Final = "CapacityScheduling"
ELASTIC_QUOTAS: Final = (GROUP, VERSION, PLURAL)
PODS: Final = ("", "v1", "pods")
SNAPSHOT_KEY: Final = f"{NAME}/ElasticQuotaSnapshot"
PRE_FILTER_KEY: Final = f"PreFilter{NAME}"

#: Seconds between ``status.used`` reconciliations (writes happen only on change).
STATUS_INTERVAL: Final = 0.2


def over_max_message(pod: Pod) -> str:
    """scheduler-plugins' PreFilter message for a quota that would exceed its max."""
    return (
        f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because "
        f"ElasticQuota {pod.namespace} is more than Max"
    )


def over_min_message(pod: Pod) -> str:
    """scheduler-plugins' PreFilter message for borrowing beyond the quotas' total min."""
    return (
        f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because "
        "total ElasticQuota used is more than min"
    )


@dataclass(slots=True)
class PreFilterState:
    """What PreFilter computed for the pod (scheduler-plugins' ``PreFilterState``).

    ``in_quota`` is the pod's request plus the requests of nominated pods of its
    quota that are at least as important; ``total`` adds nominated pods of
    other quotas that are within their min. Read-only once written.
    """

    request: Vector
    in_quota: Vector = field(default_factory=dict)
    total: Vector = field(default_factory=dict)


class CapacityScheduling(Plugin):
    """Elastic quotas: see the module docstring for the decisions."""

    api_version: ClassVar[str] = "2.0"
    name: ClassVar[str] = NAME
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (ELASTIC_QUOTAS, PODS)

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        # Asked for here (and declared in ``watches``) so the informers are
        # synced before the first pod is scheduled.
        self._quotas = handle.store(*ELASTIC_QUOTAS)
        self.book = QuotaBook(handle.store(*PODS), self._quotas)
        self.status_writer = StatusWriter(
            self.book, self._quotas, lambda: handle.client, handle.logger, STATUS_INTERVAL
        )

    # -- PreFilter ----------------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> Status | None:
        """Reject the pod when its quota's max, or the quotas' total min, cannot hold it."""
        self.book.sync()
        self.status_writer.ensure_running(self)
        snapshot = self.book.snapshot()
        state.write(SNAPSHOT_KEY, snapshot)
        request = pod_vector(pod.requests)
        spec = self.book.specs.get(pod.namespace)
        if isinstance(spec, QuotaError):
            state.write(PRE_FILTER_KEY, PreFilterState(request))
            return Status.unresolvable(str(spec))
        quota = snapshot.get(pod.namespace)
        if quota is None:
            state.write(PRE_FILTER_KEY, PreFilterState(request))
            return None
        in_quota, total = self._nominated_requests(pod, snapshot)
        add_into(in_quota, request)
        add_into(total, request)
        state.write(PRE_FILTER_KEY, PreFilterState(request, in_quota, total))
        if quota.used_over_max_with(in_quota):
            return Status.unschedulable(over_max_message(pod))
        if snapshot.aggregated_used_over_min_with(total):
            return Status.unschedulable(over_min_message(pod))
        return None

    def _nominated_requests(self, pod: Pod, quotas: QuotaSet) -> tuple[Vector, Vector]:
        """Requests of pods nominated elsewhere that hold quota room before this pod.

        Pods already charged (assumed or bound) are in ``used`` already.
        """
        in_quota: Vector = {}
        total: Vector = {}
        me = view_uid(pod)
        for nominated in self.handle.nominated_pods().values():
            for other in nominated:
                uid = view_uid(other)
                if uid == me or self.book.charged(uid):
                    continue
                info = quotas.get(other.namespace)
                if info is None:
                    continue
                request = pod_vector(other.requests)
                if other.namespace == pod.namespace and other.priority >= pod.priority:
                    add_into(in_quota, request)
                    add_into(total, request)
                elif other.namespace != pod.namespace and not info.used_over_min():
                    add_into(total, request)
        return in_quota, total

    @hookimpl
    def pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node: Node
    ) -> Status | None:
        """What-if: charge ``pod_to_add`` to its quota in this cycle's snapshot."""
        snapshot = state.get(SNAPSHOT_KEY)
        if isinstance(snapshot, QuotaSet):
            snapshot.charge(
                pod_to_add.namespace, view_uid(pod_to_add), pod_vector(pod_to_add.requests)
            )
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node: Node
    ) -> Status | None:
        """What-if: release ``pod_to_remove`` from its quota in this cycle's snapshot."""
        snapshot = state.get(SNAPSHOT_KEY)
        if isinstance(snapshot, QuotaSet):
            snapshot.release(pod_to_remove.namespace, view_uid(pod_to_remove))
        return None

    # -- Reserve ------------------------------------------------------------------------

    @hookimpl
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Charge the pod to its quota while it is in flight; refuse rather than overshoot.

        PreFilter decided on a snapshot; the re-check here, against the live
        accounting with every pod in flight, is what guarantees ``used`` never
        passes ``max`` whatever ran between the two.
        """
        self.status_writer.ensure_running(self)
        quota = self.book.live.get(pod.namespace)
        uid = view_uid(pod)
        if quota is not None and not self.book.charged(uid):
            request = pod_vector(pod.requests)
            if quota.used_over_max_with(request):
                return Status.unschedulable(
                    f"{over_max_message(pod)} (used {describe(quota.used)} with pods in "
                    f"flight, max {describe(quota.spec.max)})"
                )
            if self.book.live.aggregated_used_over_min_with(request):
                return Status.unschedulable(over_min_message(pod))
        self.book.reserve(pod)
        return None

    @hookimpl
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """The pod failed after Reserve (Permit, PreBind, binding): release its charge."""
        self.book.unreserve(pod)

    # -- requeueing ---------------------------------------------------------------------

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A deleted pod frees quota; a changed ElasticQuota may raise max or min."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(KIND, ActionType.ALL)),
        ]
