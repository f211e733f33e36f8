"""GangScheduling: kube-scheduler 1.36.3's all-or-nothing scheduling of native PodGroups.

Pods name their group in ``spec.schedulingGroup.podGroupName``; a PodGroup
(``scheduling.k8s.io/v1alpha2``) with a ``gang`` policy needs ``minCount``
of them placed before any is bound. kube's plugin, decision by decision:

- **PreEnqueue** keeps a member out of the queue until its PodGroup exists
  and the group has ``minCount`` pods the scheduler knows (unscheduled ones
  of this profile, and assigned ones).
- **Permit** holds each placed member (``Wait``, up to 5 minutes) until
  ``minCount`` members are assumed or bound; the member that completes the
  quorum releases the waiting rest. A waiting member activates the group's
  unscheduled pods, so they are tried now rather than after their backoff.
- **Events**: a pod added to the same group, or the PodGroup created, may
  make a rejected member schedulable (both objects' group fields are
  immutable, so updates are not registered).
- **Status**: the PodGroup's ``PodGroupScheduled`` condition, as kube-scheduler
  writes it: ``True``/``Scheduled`` once the gang is complete,
  ``False``/``Unschedulable`` when it is refused (never back from ``True``).
- Alpha, behind kube's gate ``GangScheduling`` (which needs
  ``GenericWorkload``); with the gate on it joins the default plugins.

kube 1.36 schedules a group's pods in one pod-group cycle and assumes none of
them when the group cannot reach ``minCount``. This scheduler has pod-by-pod
cycles only, so a member that fits nowhere would leave its placed siblings
holding their room at Permit until the timeout. **PostFilter** closes that
gap: it rejects the group's waiting members at once, which gives kube's
outcome (nothing of the gang bound, nothing held) without the wait. It runs
after preemption plugins (it is appended last to the defaults, as kube
appends the plugin) and never nominates a node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Diagnosis,
    Plugin,
    Pod,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.model.schedulinggroup import POD_GROUPS, pod_group_name, scheduling_group_key
from scheduler.plugins._helpers import StoreIndex, object_key
from scheduler.state.pod import InvalidPodError, PodInfo

PODS: Final = ("", "v1", "pods")
CONDITION: Final = "PodGroupScheduled"
#: errPodGroupUnschedulable: the message of kube's Unschedulable PodGroupScheduled condition.
POD_GROUP_UNSCHEDULABLE: Final = "pod group is unschedulable"
#: kube's permitTimeoutDuration: how long members wait at Permit for their quorum.
PERMIT_TIMEOUT_SECONDS: Final = 300.0
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})
_NO_OPINION: Final = Status.unschedulable()
#: What kube 1.36.3 reports for a placed member of a gang its pod-group cycle
#: found unschedulable (errPodGroupUnschedulable, the Permit message, and the
#: framework's Wait summary), measured in tests/fidelity/test_gang_fidelity.py.
GROUP_UNSCHEDULABLE: Final = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _uid(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")


def _pod_uid(pod: Pod) -> str:
    """How the framework keys waiting pods (the uid, or the key for uid-less test pods)."""
    return pod.uid or pod.key


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _live(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return not _meta(obj).get("deletionTimestamp") and phase not in _TERMINAL


def gang_min_count(pod_group: Mapping[str, Any]) -> int | None:
    """``spec.schedulingPolicy.gang.minCount`` of a PodGroup; None for a ``basic`` policy."""
    policy = _spec(pod_group).get("schedulingPolicy")
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    if not isinstance(gang, Mapping):
        return None
    count = gang.get("minCount")
    return count if isinstance(count, int) and not isinstance(count, bool) else 1


def _group_key(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    name = pod_group_name(pod)
    return None if name is None else (object_key(pod)[0], name)


class GangScheduling(Plugin):
    """All-or-nothing scheduling of PodGroups with a gang policy (kube's GangScheduling)."""

    api_version: ClassVar[str] = "2.1"
    name: ClassVar[str] = "GangScheduling"
    gated_by: ClassVar[str | None] = "GangScheduling"
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (POD_GROUPS, PODS)

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self._groups = handle.store(*POD_GROUPS)
        # Pods by the PodGroup they name (namespace, group): a gang's members
        # without a scan of the namespace per lookup.
        self._by_group = StoreIndex(lambda: handle.store(*PODS), _group_key)
        # Group key -> uid -> the member reserved by this scheduler and not yet
        # unreserved: kube's "assumed" pods (placed, waiting at Permit or binding).
        self._assumed: dict[str, dict[str, Pod]] = {}
        self._writes: set[asyncio.Task[None]] = set()  # status patches in flight

    # -- the group's members ------------------------------------------------------------

    def _members(self, namespace: str, name: str) -> list[Mapping[str, Any]]:
        """Pods of the group the scheduler knows: this profile's unscheduled ones and
        every assigned one (kube's cache), neither terminal nor being deleted."""
        out = []
        for obj in self._by_group.get((namespace, name)).values():
            if not _live(obj):
                continue
            spec = _spec(obj)
            if spec.get("nodeName") or spec.get("schedulerName") == self.handle.profile_name:
                out.append(obj)
        return out

    def _scheduled(self, key: str, members: list[Mapping[str, Any]]) -> set[str]:
        """Uids of members assumed (reserved here) or assigned (bound)."""
        present = {_uid(m) for m in members}
        assumed = self._assumed.get(key, {})
        for uid in [u for u in assumed if u not in present]:
            del assumed[uid]  # deleted (or finished) since it was reserved
        scheduled = {_uid(m) for m in members if _spec(m).get("nodeName")}
        return scheduled | set(assumed)

    def _group(self, pod: Pod) -> tuple[str, str, Mapping[str, Any] | None] | None:
        name = pod_group_name(pod.raw)
        if name is None:
            return None
        return pod.namespace, name, self._groups.get(pod.namespace, name)

    # -- PreEnqueue ---------------------------------------------------------------------

    @hookimpl
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Hold a member until its PodGroup exists and the gang has ``minCount`` pods."""
        found = self._group(pod)
        if found is None:
            return None
        namespace, name, group = found
        if group is None:
            return Status.unresolvable(
                f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'
            )
        min_count = gang_min_count(group)
        if min_count is None:
            return None
        if len(self._members(namespace, name)) < min_count:
            return Status.unresolvable(
                "waiting for minCount pods from a gang to appear in scheduling queue"
            )
        return None

    # -- Reserve / Unreserve: which members are assumed ----------------------------------

    @hookimpl
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        key = scheduling_group_key(pod.raw)
        if key is not None:
            self._assumed.setdefault(key, {})[_pod_uid(pod)] = pod
        return None

    @hookimpl
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        key = scheduling_group_key(pod.raw)
        if key is not None:
            members = self._assumed.get(key, {})
            members.pop(_pod_uid(pod), None)
            if not members:
                self._assumed.pop(key, None)

    # -- Permit -------------------------------------------------------------------------

    @hookimpl
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Wait until ``minCount`` members are scheduled; the last one releases the rest."""
        found = self._group(pod)
        if found is None:
            return None
        namespace, name, group = found
        if group is None:
            return Status.error_status(
                f"failed to get podGroup {namespace}/{name}: "
                f'podgroups.scheduling.k8s.io "{name}" not found'
            )
        min_count = gang_min_count(group)
        if min_count is None:
            return None
        key = f"{namespace}/{name}"
        uid = _pod_uid(pod)
        self._assumed.setdefault(key, {})[uid] = pod  # assumed before Permit, as in kube
        members = self._members(namespace, name)
        scheduled = self._scheduled(key, members)
        if len(scheduled) < min_count:
            self._activate_unscheduled(members, scheduled)
            return Status.wait(
                PERMIT_TIMEOUT_SECONDS, "waiting for minCount pods from a gang to be scheduled"
            )
        for other in list(self._assumed.get(key, {})):
            waiting = self.handle.get_waiting_pod(other)
            if waiting is not None:
                waiting.allow(self.name)
        self._set_condition(namespace, name, "True", "Scheduled", "")
        return None

    def _activate_unscheduled(self, members: list[Mapping[str, Any]], scheduled: set[str]) -> None:
        """Move the group's unscheduled pods to the active queue (kube's Activate)."""
        pods = []
        for obj in members:
            if _uid(obj) in scheduled:
                continue
            try:
                pods.append(PodInfo.from_dict(dict(obj)))
            except InvalidPodError:
                continue
        if pods:
            self.handle.activate_pods(pods)

    # -- PostFilter: what kube's pod-group cycle gives ------------------------------------

    @hookimpl
    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> Status:
        """A member fits nowhere and the gang is short of ``minCount``: release the
        waiting members now, as kube's pod-group cycle would have assumed none."""
        found = self._group(pod)
        if found is None:
            return _NO_OPINION
        namespace, name, group = found
        if group is None:
            return _NO_OPINION
        min_count = gang_min_count(group)
        if min_count is None:
            return _NO_OPINION
        key = f"{namespace}/{name}"
        scheduled = self._scheduled(key, self._members(namespace, name))
        if len(scheduled) >= min_count:
            return _NO_OPINION
        released = 0
        for waiting in list(self.handle.iterate_waiting_pods()):
            if scheduling_group_key(waiting.pod.raw) == key and not waiting.done:
                waiting.reject(self.name, GROUP_UNSCHEDULABLE)
                released += 1
        self._set_condition(namespace, name, "False", "Unschedulable", POD_GROUP_UNSCHEDULABLE)
        if released:
            self.handle.logger.info(
                "gang cannot reach minCount: released its waiting members",
                pod_group=key,
                member=pod.key,
                min_count=min_count,
                released=released,
            )
        # No message of its own: the member's FailedScheduling says why it fits
        # nowhere, as kube's does.
        return _NO_OPINION

    # -- the PodGroup's status ----------------------------------------------------------

    def _set_condition(
        self, namespace: str, name: str, status: str, reason: str, message: str
    ) -> None:
        """Write ``PodGroupScheduled`` in the background (kube's updatePodGroupCondition)."""
        group = self._groups.get(namespace, name)
        if group is None:
            return
        raw_status = group.get("status")
        conditions = (
            list(raw_status.get("conditions") or []) if isinstance(raw_status, Mapping) else []
        )
        existing = next((c for c in conditions if c.get("type") == CONDITION), None)
        if existing is not None and existing.get("status") == "True" and status != "True":
            return  # a scheduled gang does not regress (extra members' cycles)
        generation = _meta(group).get("generation") or 0
        wanted = {
            "type": CONDITION,
            "status": status,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
        }
        if existing is not None and all(existing.get(k) == v for k, v in wanted.items()):
            return
        changed_status = existing is None or existing.get("status") != status
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        wanted["lastTransitionTime"] = (
            now if changed_status or existing is None else existing.get("lastTransitionTime", now)
        )
        updated = [c for c in conditions if c.get("type") != CONDITION] + [wanted]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (``explain``): nothing is written
            return
        task = loop.create_task(self._patch_status(namespace, name, updated))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _patch_status(self, namespace: str, name: str, conditions: list[Any]) -> None:
        try:
            await self.handle.client.request(
                "PATCH",
                f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups/{name}/status",
                body={"status": {"conditions": conditions}},
                content_type="application/merge-patch+json",
            )
        except Exception as err:  # best effort, as kube: the pods' fate does not depend on it
            self.handle.logger.warning(
                "pod group status update failed", pod_group=f"{namespace}/{name}", error=str(err)
            )

    # -- requeueing ---------------------------------------------------------------------

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod added to the same group may complete it; so may its PodGroup appearing."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.ADD), _same_group_pod),
            ClusterEventWithHint(ClusterEvent("PodGroup", ActionType.ADD), _own_pod_group),
        ]


def _same_group_pod(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """helper.MatchingSchedulingGroup: the added pod is in the rejected pod's group."""
    if not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    key = scheduling_group_key(pod.raw)
    if key is not None and key == scheduling_group_key(new):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _own_pod_group(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """The added PodGroup is the one the rejected pod names (same namespace and name)."""
    if not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    meta = _meta(new)
    if meta.get("namespace") == pod.namespace and meta.get("name") == pod_group_name(pod.raw):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
