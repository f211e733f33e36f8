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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Diagnosis,
    Handle,
    Node,
    Nodes,
    Plugin,
    Pod,
    PostFilterResult,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.api.preemption import (
    PDB_RESOURCE,
    Candidate,
    DisruptionBudget,
    Victims,
    WhatIf,
    pick_one_node,
)

from scheduler_plugin_capacityscheduling import preemption
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


def _bound_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only a pod that was charged (on a node) frees quota when it goes.

    scheduler-plugins requeues on every pod deletion; under churn, deleting
    pending pods would retry every pod this plugin rejected for nothing.
    """
    if not isinstance(old, Mapping):
        return QueueingHint.QUEUE
    spec = old.get("spec")
    return (
        QueueingHint.QUEUE
        if isinstance(spec, Mapping) and spec.get("nodeName")
        else QueueingHint.SKIP
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

    api_version: ClassVar[str] = "2.3"
    name: ClassVar[str] = NAME
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (ELASTIC_QUOTAS, PODS, PDB_RESOURCE)

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        # Asked for here (and declared in ``watches``) so the informers are
        # synced before the first pod is scheduled.
        self._quotas = handle.store(*ELASTIC_QUOTAS)
        self.book = QuotaBook(handle.store(*PODS), self._quotas)
        self.status_writer = StatusWriter(
            self.book,
            self._quotas,
            lambda: handle.client,
            handle.logger,
            STATUS_INTERVAL,
            on_round=self._retry_after_doubts,
        )
        # Pods this plugin's PreFilter rejected (uid -> pod), retried when a
        # charge in doubt is released: no cluster event announces that room.
        self._rejected: dict[str, Pod] = {}
        self._doubts_seen = 0
        self.preemption = handle.preemption(self)
        # The cycle state and pod of the PostFilter call in progress: kube's
        # preemptor carries them for the policy methods, which are not given them.
        self._post_filter_state: CycleState | None = None
        self._preemptor: Pod | None = None
        # Preemptor uid -> uids of the victims it evicted. While a victim is
        # still charged, its charge stands in for the preemptor's nomination
        # (see ``_nominated_requests``).
        self._evicting: dict[str, frozenset[str]] = {}

    # -- PreFilter ----------------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> Status | None:
        """Reject the pod when its quota's max, or the quotas' total min, cannot hold it."""
        self.book.sync()
        self.status_writer.ensure_running(self)
        snapshot = self.book.snapshot()
        uid = view_uid(pod)
        if self.book.in_flight_charge(uid):
            # Charged by an earlier attempt that failed (still in doubt): its
            # own charge must not count against it a second time.
            snapshot.release(pod.namespace, uid)
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
            self._rejected[uid] = pod
            return Status.unschedulable(over_max_message(pod))
        if snapshot.aggregated_used_over_min_with(total):
            self._rejected[uid] = pod
            return Status.unschedulable(over_min_message(pod))
        self._rejected.pop(uid, None)
        return None

    def _retry_after_doubts(self) -> None:
        """Retry the pods this plugin rejected once a charge in doubt was released."""
        if self.book.released_doubts == self._doubts_seen:
            return
        self._doubts_seen = self.book.released_doubts
        pods, self._rejected = list(self._rejected.values()), {}
        if pods:
            self.handle.activate_pods(pods)

    def _nominated_requests(self, pod: Pod, quotas: QuotaSet) -> tuple[Vector, Vector]:
        """Requests of pods nominated elsewhere that hold quota room before this pod.

        Pods already charged (assumed or bound) are in ``used`` already. So
        are, for a while, the victims of a preemption this plugin made: until
        they are gone, their charges hold the room their preemptor will take,
        and counting the preemptor as well would count that room twice (and
        make the next preemption evict one pod too many).
        """
        in_quota: Vector = {}
        total: Vector = {}
        me = view_uid(pod)
        charged = self.book.charged
        self._evicting = {
            uid: victims
            for uid, victims in self._evicting.items()
            if not charged(uid) and any(charged(v) for v in victims)
        }
        for nominated in self.handle.nominated_pods().values():
            for other in nominated:
                uid = view_uid(other)
                if uid == me or charged(uid) or uid in self._evicting:
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

    # -- PreEnqueue / PostFilter: preemption ------------------------------------------------

    @hookimpl
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Hold a pod back while the victims of its preemption are being deleted."""
        return self.preemption.admit(pod)

    @hookimpl
    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> PostFilterResult:
        """Preempt with CapacityScheduling's victim rules (see :mod:`.preemption`)."""
        self._post_filter_state, self._preemptor = state, pod
        try:
            result = self.preemption.preempt(state, pod, diagnosis)
        finally:
            self._post_filter_state, self._preemptor = None, None
        status = result.status
        if status.message():
            status = Status(status.code, ("preemption: " + status.message(),), status.plugin)
        return PostFilterResult(status, result.nominated_node_name)

    def pod_eligible_to_preempt_others(self, pod: Pod, diagnosis: Diagnosis) -> tuple[bool, str]:
        """kube's ``PodEligibleToPreemptOthers`` with scheduler-plugins' quota rules."""
        state = self._post_filter_state
        quotas = state.get(SNAPSHOT_KEY) if state is not None else None
        pre = state.get(PRE_FILTER_KEY) if state is not None else None
        return preemption.eligible(
            self.handle,
            pod,
            diagnosis,
            quotas if isinstance(quotas, QuotaSet) else None,
            pre.in_quota if isinstance(pre, PreFilterState) else None,
        )

    def select_candidate(self, candidates: Sequence[Candidate], now_ns: int) -> Candidate:
        """kube's choice among the candidates; the chosen victims are remembered."""
        chosen = pick_one_node(candidates, now_ns)
        if self._preemptor is not None:
            self._evicting[view_uid(self._preemptor)] = frozenset(
                view_uid(v) for v in chosen.victims
            )
        return chosen

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Every potential node, from the first (scheduler-plugins' preemptor)."""
        return 0, num_nodes

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: Pod,
        node: Node,
        what_if: WhatIf,
        budgets: Sequence[DisruptionBudget],
    ) -> Victims:
        """kube's ``SelectVictimsOnNode`` with the quota rules (see :mod:`.preemption`)."""
        quotas = state.get(SNAPSHOT_KEY)
        pre = state.get(PRE_FILTER_KEY)
        if not isinstance(quotas, QuotaSet) or not isinstance(pre, PreFilterState):
            return Victims(
                [], 0, Status.unschedulable("Failed to read elasticQuotaSnapshot from cycleState")
            )
        return preemption.select_victims_on_node(
            state, pod, node, what_if, budgets, quotas, pre.request, pre.in_quota, pre.total
        )

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
        """A deleted pod that ran frees quota; a changed ElasticQuota may raise max or min."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _bound_pod_deleted),
            ClusterEventWithHint(ClusterEvent(KIND, ActionType.ALL)),
        ]
