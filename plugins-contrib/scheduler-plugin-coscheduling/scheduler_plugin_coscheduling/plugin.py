"""Coscheduling: all-or-nothing placement of a PodGroup's members (gang scheduling).

Compatible with kubernetes-sigs/scheduler-plugins' Coscheduling: the same
PodGroup CRD, pod label, args and decisions, so workloads written for it move
over unchanged. How a group gets placed:

- **QueueSort** keeps a group's pods next to each other in the active queue
  (priority, then the group's creation time, then the group's name), so the
  members are tried back to back instead of interleaved with other work that
  would take their room in between.
- **PreFilter** refuses early what cannot succeed: a group with fewer pods
  than ``minMember``, one whose ``minResources`` exceed the cluster's free
  capacity, or one in its back-off window after a failed attempt.
- **Permit** holds each placed member (``Status.wait``) until ``minMember``
  members are assumed or bound, then releases all of them at once. Until
  then their resources stay reserved, so nothing else can take the room.
- **PostFilter**: when a member fits nowhere, the waiting members are
  rejected at once (their reservations released) instead of holding the
  room until the timeout.
- **Unreserve**: a member that fails (timeout, rejection, failed binding)
  takes the waiting rest of its group down with it, so no partial gang is
  ever bound.
- **PostBind** reports progress in the PodGroup's status (best effort).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

import numpy as np
from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Diagnosis,
    Handle,
    InvalidPodError,
    NodeSet,
    NodeTable,
    Plugin,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
    Resource,
    Status,
    WaitingPod,
    hookimpl,
)

from scheduler_plugin_coscheduling.args import CoschedulingArgs
from scheduler_plugin_coscheduling.podgroup import (
    GROUP,
    KIND,
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_SCHEDULED,
    PHASE_SCHEDULING,
    PLURAL,
    POD_GROUP_LABEL,
    VERSION,
    PodGroupError,
    PodGroupInfo,
    group_ref,
    parse_timestamp,
    raw_group_ref,
)

PODS: Final = ("", "v1", "pods")
PODGROUPS: Final = (GROUP, VERSION, PLURAL)
MERGE_PATCH: Final = "application/merge-patch+json"

# scheduler-plugins does not tear a group down for a failing member when the
# group is at most this fraction short of its quorum: later members may still
# complete it, and releasing a nearly complete gang wastes the most work.
SMALL_GAP: Final = 0.1

_TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})
_NO_OPINION: Final = Status(Code.UNSCHEDULABLE)  # PostFilter: let the next plugin try


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _pod_key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def _pod_uid(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return str(meta.get("uid") or _pod_key(obj))


def _node_name(obj: Mapping[str, Any]) -> str:
    spec = obj.get("spec")
    return str(spec.get("nodeName") or "") if isinstance(spec, Mapping) else ""


def _phase(obj: Mapping[str, Any]) -> str:
    status = obj.get("status")
    return str(status.get("phase") or "") if isinstance(status, Mapping) else ""


def _uid(pod: PodInfo) -> str:
    """How the framework keys waiting pods (the uid, or the key for uid-less test pods)."""
    return pod.uid or pod.key


def _format_amount(resource: str, amount: int) -> str:
    return f"{amount}m" if resource == "cpu" else str(amount)


class Coscheduling(Plugin):
    """Gang scheduling of PodGroups; see the module docstring for the decisions."""

    api_version: ClassVar[str] = "1.0"
    name: ClassVar[str] = "Coscheduling"
    Args = CoschedulingArgs
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (PODGROUPS, PODS)

    #: Monotonic clock for back-off windows and Permit deadlines (tests replace it).
    clock: Callable[[], float] = staticmethod(time.monotonic)

    def __init__(self, args: CoschedulingArgs | None, handle: Handle) -> None:
        super().__init__(args if args is not None else CoschedulingArgs(), handle)
        self.args: CoschedulingArgs
        # Requested at construction (and declared in ``watches``) so that their
        # informers are started and synced before the first pod is scheduled.
        self._groups = handle.store(*PODGROUPS)
        self._pods = handle.store(*PODS)
        self._parsed: dict[str, tuple[Mapping[str, Any], PodGroupInfo | PodGroupError]] = {}
        # Group -> monotonic time until which PreFilter rejects it (scheduler-plugins'
        # backed-off groups).
        self._denied: dict[str, float] = {}
        # Group -> monotonic time until which its minResources check stands
        # (checked once per attempt of the group, not once per member).
        self._permitted: dict[str, float] = {}
        # Groups whose pending members were already moved to the active queue in
        # this attempt; reset when the attempt ends, so each attempt does it once.
        self._activated: set[str] = set()
        # Members this plugin rejected, and Permit deadlines: such pods are still
        # in the NodeTable until their binding cycle unreserves them, and must not
        # count towards a quorum meanwhile.
        self._doomed: set[str] = set()
        self._deadlines: dict[str, float] = {}
        self._post_bound: dict[str, set[str]] = {}
        self._status_locks: dict[str, asyncio.Lock] = {}

    # -- PodGroups and members ----------------------------------------------------------

    def _group(self, ref: str) -> PodGroupInfo | None:
        """The PodGroup ``namespace/name``; None if absent; PodGroupError if unusable."""
        namespace, _, name = ref.partition("/")
        obj = self._groups.get(namespace, name)
        if obj is None:
            self._parsed.pop(ref, None)
            return None
        cached = self._parsed.get(ref)
        if cached is not None and cached[0] is obj:
            parsed = cached[1]
        else:
            try:
                parsed = PodGroupInfo.from_object(obj)
            except PodGroupError as err:
                parsed = err
            self._parsed[ref] = (obj, parsed)
        if isinstance(parsed, PodGroupError):
            raise parsed
        return parsed

    def _members(self, group: PodGroupInfo) -> list[Mapping[str, Any]]:
        """The group's pods that exist and may still run (not terminal, not deleting)."""
        out = []
        # By label (plugin API 2.1): the store's index, not a scan of the namespace.
        for obj in self._pods.list(group.namespace, labels={POD_GROUP_LABEL: group.name}):
            meta = _meta(obj)
            if meta.get("deletionTimestamp") or _phase(obj) in _TERMINAL_PHASES:
                continue
            out.append(obj)
        return out

    def _placed(self, table: NodeTable, group: PodGroupInfo) -> list[PodInfo]:
        """Members in the NodeTable (assumed or bound) that still count for the quorum.

        A member rejected by this plugin, or whose Permit wait has run out, stays
        in the table until its binding cycle unreserves it; counting it would let
        a later member "complete" a gang that is being torn down.
        """
        pods = table.pod_table
        rows = np.arange(pods.size, dtype=np.int64)
        value = pods.labels.value_id(POD_GROUP_LABEL, group.name)
        if value < 0 or not len(rows):
            return []
        rows = rows[pods.labels.column(POD_GROUP_LABEL, rows) == value]
        now = self.clock()
        out = []
        for row in rows.tolist():
            info = pods.infos[row]
            if info is None or info.namespace != group.namespace:
                continue
            uid = _uid(info)
            if uid in self._doomed or self._deadlines.get(uid, now + 1.0) <= now:
                continue
            out.append(info)
        return out

    def _waiting_members(self, ref: str) -> list[WaitingPod]:
        return [wp for wp in self.handle.iterate_waiting_pods() if group_ref(wp.pod) == ref]

    def _reject_waiting(self, ref: str, message: str, *, exclude: str = "") -> int:
        """Reject the group's pods waiting at Permit; returns how many were rejected."""
        rejected = 0
        for waiting in self._waiting_members(ref):
            uid = _uid(waiting.pod)
            if uid == exclude:
                continue
            if self.handle.reject_waiting_pod(uid, self.name, message):
                self._doomed.add(uid)
                rejected += 1
        return rejected

    def _end_attempt(self, ref: str) -> None:
        """Forget what one attempt of the group cached; the next attempt starts afresh."""
        self._permitted.pop(ref, None)
        self._activated.discard(ref)

    def _activate_pending(self, group: PodGroupInfo, exclude: str = "") -> None:
        """Move the group's unplaced members to the active queue (scheduler-plugins'
        ActivateSiblings): members rejected earlier, e.g. before the group had
        enough pods, would otherwise wait for an unrelated cluster event."""
        pods = []
        for obj in self._members(group):
            if _node_name(obj) or _pod_uid(obj) == exclude:
                continue
            try:
                pods.append(PodInfo.from_dict(dict(obj)))
            except InvalidPodError:
                continue
        if pods:
            self.handle.activate_pods(pods)

    def _deny(self, group: PodGroupInfo) -> None:
        """Start the group's back-off window and retry the group when it ends."""
        seconds = self.args.pod_group_backoff_seconds
        ref = group.full_name
        self._denied[ref] = self.clock() + seconds
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (e.g. `explain`): nothing to retry
            return
        loop.call_later(seconds, self._backoff_ended, ref)

    def _backoff_ended(self, ref: str) -> None:
        try:
            group = self._group(ref)
            if group is not None:
                self._activate_pending(group)
        except Exception as err:  # a timer callback must never raise into the loop
            self.handle.logger.warning("podgroup retry failed", podgroup=ref, error=str(err))

    # -- QueueSort ----------------------------------------------------------------------

    @hookimpl
    def queue_sort_key(self, queued: QueuedPodInfo) -> tuple[int, float, str, str]:
        """Priority first; then the group's creation time, so that a group's members
        sort next to each other and older groups go first; then the group's name
        (groups created in the same second stay apart), then the pod's.

        A pod outside any group sorts by its own creation time and name.
        """
        pod = queued.pod
        ref = group_ref(pod)
        if ref is not None:
            try:
                group = self._group(ref)
            except PodGroupError:
                group = None
            if group is not None and group.creation_time is not None:
                return (-pod.priority, group.creation_time, ref, pod.key)
        created = parse_timestamp(pod.creation_timestamp)
        if created is None:
            # No creation time (hand-made objects): when it entered the queue, on
            # the same epoch scale as creation times.
            created = time.time() - (time.monotonic() - queued.timestamp)
        return (-pod.priority, created, pod.key, pod.key)

    # -- PreFilter ----------------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        """Reject the whole group early when this attempt cannot reach its quorum.

        UnschedulableAndUnresolvable, as in scheduler-plugins: preempting
        victims for one member cannot make the group schedulable.
        """
        ref = group_ref(pod)
        if ref is None:
            return None
        try:
            group = self._group(ref)
        except PodGroupError as err:
            return Status.unresolvable(str(err))
        if group is None:
            return Status.unresolvable(f"PodGroup {ref} not found")
        now = self.clock()
        until = self._denied.get(ref)
        if until is not None:
            if until > now:
                return Status.unresolvable(
                    f"PodGroup {ref} failed recently and is backing off "
                    f"for another {until - now:.0f}s"
                )
            del self._denied[ref]
        members = len(self._members(group))
        if members < group.min_member:
            return Status.unresolvable(
                f"PodGroup {ref} has {members} pod(s), fewer than its minMember "
                f"{group.min_member}: waiting for more members before scheduling any"
            )
        if group.min_resources and self._permitted.get(ref, 0.0) <= now:
            shortfall = self._resource_shortfall(group, nodes)
            if shortfall:
                return Status.unresolvable(
                    f"PodGroup {ref}: the cluster's free capacity cannot hold its "
                    f"minResources (short of {shortfall})"
                )
            self._permitted[ref] = now + self._wait_seconds(group)
        return None

    def _resource_shortfall(self, group: PodGroupInfo, nodes: NodeSet) -> str:
        """What the nodes' free capacity lacks for ``minResources`` and ``minMember`` pods.

        Free capacity is allocatable minus requested, summed over the nodes,
        with the group's own placed pods counted as free (a retry of the group
        may use the room its members already hold). Empty when it all fits.
        """
        table, rows = nodes.table, nodes.rows
        free = table.allocatable[rows] - table.requested[rows]
        row_pos = {int(r): i for i, r in enumerate(rows.tolist())}
        pods_column = table.resource_index["pods"]
        for info in self._placed(table, group):
            node = table.node_of_pod(info.key)
            row = table.row_of(node) if node else None
            pos = row_pos.get(row) if row is not None else None
            if pos is None:
                continue
            for resource, amount in info.requests.items():
                col = table.resource_index.get(resource)
                if col is not None and resource != "pods":
                    free[pos, col] += amount
            free[pos, pods_column] += 1
        total = np.maximum(free, 0).sum(axis=0)
        need = dict(group.min_resources)
        need["pods"] = group.min_member
        missing = []
        for resource, amount in sorted(need.items()):
            col = table.resource_index.get(resource)
            available = int(total[col]) if col is not None else 0
            if available < amount:
                missing.append(f"{resource} {_format_amount(resource, amount - available)}")
        return ", ".join(missing)

    # -- PostFilter ---------------------------------------------------------------------

    @hookimpl
    def post_filter(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> Status:
        """A member fits nowhere: release the group's waiting members now.

        Their reservations would otherwise block the room until the Permit
        timeout, although the group is very likely to fail as a whole. Never
        nominates a node, so preemption plugins after this one still run.
        """
        ref = group_ref(pod)
        if ref is None:
            return _NO_OPINION
        try:
            group = self._group(ref)
        except PodGroupError as err:
            return Status.unschedulable(str(err))
        if group is None:
            return Status.unschedulable(f"PodGroup {ref} not found")
        placed = len(self._placed(self.handle.table, group))
        if placed >= group.min_member:
            return _NO_OPINION  # the quorum stands; this member is an extra
        missing = group.min_member - placed
        if missing / group.min_member <= SMALL_GAP:
            return Status.unschedulable(
                f"PodGroup {ref} is {missing} member(s) short of its minMember "
                f"{group.min_member}; keeping its {placed} placed member(s) for now"
            )
        message = (
            f"PodGroup {ref} rejected: member {pod.key} cannot be scheduled, "
            f"so the group cannot reach its minMember {group.min_member}"
        )
        released = self._reject_waiting(ref, message)
        if (
            self.args.pod_group_backoff_seconds > 0
            and len(self._members(group)) >= group.min_member
        ):
            self._deny(group)
        self._end_attempt(ref)
        return Status.unschedulable(f"{message}; released {released} waiting member(s)")

    # -- Permit and Unreserve -----------------------------------------------------------

    def _wait_seconds(self, group: PodGroupInfo) -> int:
        return group.schedule_timeout_seconds or self.args.permit_waiting_time_seconds

    @hookimpl
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Wait until ``minMember`` members are placed; the last one releases them all."""
        ref = group_ref(pod)
        if ref is None:
            return None
        try:
            group = self._group(ref)
        except PodGroupError as err:
            return Status.unschedulable(str(err))
        if group is None:
            return Status.unschedulable(f"PodGroup {ref} not found")
        uid = _uid(pod)
        # A retried member counts again even where Reserve (which also does this) is off.
        self._doomed.discard(uid)
        self._deadlines.pop(uid, None)
        table = self.handle.table
        placed = self._placed(table, group)
        count = len(placed) + (0 if table.has_pod(pod.key) else 1)
        if count >= group.min_member:
            for waiting in self._waiting_members(ref):
                self._deadlines.pop(_uid(waiting.pod), None)
                waiting.allow(self.name)
            self._deadlines.pop(uid, None)
            self._end_attempt(ref)
            return None
        seconds = self._wait_seconds(group)
        self._deadlines[uid] = self.clock() + seconds
        if ref not in self._activated:
            self._activated.add(ref)
            self._activate_pending(group, exclude=uid)
        return Status.wait(
            seconds,
            f"waiting for {group.min_member - count} more member(s) of PodGroup {ref}",
        )

    @hookimpl
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """A member placed anew counts for its group again, whatever its last attempt was.

        (The framework calls Unreserve only for plugins enabled at Reserve, and
        Unreserve is what keeps a failing member from leaving its group waiting.)
        """
        uid = _uid(pod)
        self._doomed.discard(uid)
        self._deadlines.pop(uid, None)
        return None

    @hookimpl
    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """One member failed after Reserve: the rest of the group must not wait on."""
        uid = _uid(pod)
        self._doomed.discard(uid)
        self._deadlines.pop(uid, None)
        ref = group_ref(pod)
        if ref is None:
            return
        self._reject_waiting(
            ref,
            f"PodGroup {ref} rejected: member {pod.key} was unreserved "
            "(it timed out, was rejected or failed to bind)",
            exclude=uid,
        )
        self._end_attempt(ref)

    # -- PostBind -----------------------------------------------------------------------

    @hookimpl
    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Report the group's progress in its status; a failure is logged, nothing else.

        Patches are serialised per group so that concurrent bindings of one
        gang cannot overwrite a higher count with a lower one.
        """
        self._doomed.discard(_uid(pod))
        ref = group_ref(pod)
        if ref is None:
            return
        lock = self._status_locks.setdefault(ref, asyncio.Lock())
        async with lock:
            try:
                await self._update_status(ref, pod)
            except Exception as err:  # best effort: the pod is bound whatever happens here
                self.handle.logger.warning(
                    "podgroup status update failed", podgroup=ref, pod=pod.key, error=str(err)
                )

    async def _update_status(self, ref: str, pod: PodInfo) -> None:
        try:
            group = self._group(ref)
        except PodGroupError:
            group = None
        if group is None:
            self._post_bound.pop(ref, None)
            self._status_locks.pop(ref, None)
            return
        members = self._members(group)
        present = {_pod_key(m) for m in members}
        bound = {k for k in self._post_bound.get(ref, set()) if k in present}
        bound.add(pod.key)
        bound.update(_pod_key(m) for m in members if _node_name(m))
        self._post_bound[ref] = bound
        scheduled = len(bound)
        running = sum(1 for m in members if _phase(m) == "Running")
        if running >= group.min_member:
            phase = PHASE_RUNNING
        elif scheduled >= group.min_member:
            phase = PHASE_SCHEDULED
        elif scheduled:
            phase = PHASE_SCHEDULING
        else:
            phase = PHASE_PENDING
        current = group.status
        status: dict[str, Any] = {}
        if current.get("phase") != phase:
            status["phase"] = phase
        if current.get("scheduled") != scheduled:
            status["scheduled"] = scheduled
        if current.get("running", 0) != running:
            status["running"] = running
        if not current.get("scheduleStartTime"):
            status["scheduleStartTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if not status:
            return
        await self.handle.client.request(
            "PATCH",
            f"/apis/{GROUP}/{VERSION}/namespaces/{group.namespace}/{PLURAL}/{group.name}/status",
            body={"status": status},
            content_type=MERGE_PATCH,
        )

    # -- requeueing ---------------------------------------------------------------------

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """What may make a group this plugin rejected schedulable.

        A PodGroup created or changed (e.g. a lower minMember), a pod added
        (a new member may complete the quorum) or deleted (room freed), and a
        node added (room for the members that did not fit).
        """
        return [
            ClusterEventWithHint(
                ClusterEvent(KIND, ActionType.ADD | ActionType.UPDATE), self._podgroup_changed
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.ADD | ActionType.DELETE), self._pod_changed
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]

    def _podgroup_changed(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Only a change of the pod's own group may help it."""
        obj = new if isinstance(new, Mapping) else old
        if not isinstance(obj, Mapping):
            return QueueingHint.QUEUE
        meta = _meta(obj)
        ref = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        return QueueingHint.QUEUE if ref == group_ref(pod) else QueueingHint.SKIP

    def _pod_changed(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """A deleted pod frees room; a new pod helps only as a member of the same group
        that brings the group to its quorum (so members being created one by one
        do not retry the whole group each time)."""
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        ref = group_ref(pod)
        if ref is None:
            return QueueingHint.QUEUE
        if raw_group_ref(new) != ref or _pod_uid(new) == _uid(pod):
            return QueueingHint.SKIP
        try:
            group = self._group(ref)
        except PodGroupError:
            return QueueingHint.SKIP
        if group is None or len(self._members(group)) < group.min_member:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
