"""VolumeRestrictions: disks that cannot be shared, and ReadWriteOncePod claims.

kube-scheduler's plugin:

- An inline GCE PD, AWS EBS, RBD or iSCSI volume conflicts with the same
  disk used by a pod already on the node (GCE PD, RBD and iSCSI may share
  when both are read-only; EBS never).
- A ReadWriteOncePod claim already used by any scheduled pod makes every
  node Unschedulable (not unresolvable), so DefaultPreemption may evict
  the holder: the PreFilter count follows its AddPod/RemovePod what-ifs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    Plugin,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.api.handle import Handle
from scheduler.plugins.volumes.objects import (
    PVCS,
    READ_WRITE_ONCE_POD,
    access_modes,
    claim_hint,
)
from scheduler.state.nodetable import NodeInfo, NodeSet
from scheduler.state.pod import PodInfo

NAME = "VolumeRestrictions"
STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
_DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


class _State:
    def __init__(self, rwop_claims: frozenset[str], conflicts: int) -> None:
        self.rwop_claims = rwop_claims
        self.conflicts = conflicts

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicts)

    def update(self, other: PodInfo, sign: int) -> None:
        ephemeral = set(other.ephemeral_pvc_names)
        self.conflicts += sign * sum(
            1 for claim in other.pvc_names if claim not in ephemeral and claim in self.rwop_claims
        )


def _disks(pod: PodInfo) -> list[Mapping[str, Any]]:
    volumes = pod.raw.get("spec", {}).get("volumes") or ()
    return [
        v
        for v in volumes
        if isinstance(v, Mapping) and any(isinstance(v.get(s), Mapping) for s in _DISK_SOURCES)
    ]


def volumes_conflict(volume: Mapping[str, Any], existing: Mapping[str, Any]) -> bool:
    """kube's isVolumeConflict for one pair of volumes."""
    for source in _DISK_SOURCES:
        mine, theirs = volume.get(source), existing.get(source)
        if not isinstance(mine, Mapping) or not isinstance(theirs, Mapping):
            continue
        both_read_only = bool(mine.get("readOnly")) and bool(theirs.get("readOnly"))
        if source == "gcePersistentDisk":
            if mine.get("pdName") == theirs.get("pdName") and not both_read_only:
                return True
        elif source == "awsElasticBlockStore":
            if mine.get("volumeID") == theirs.get("volumeID"):
                return True
        elif source == "iscsi":
            if mine.get("iqn") == theirs.get("iqn") and not both_read_only:
                return True
        else:  # rbd
            monitors = set(mine.get("monitors") or ()) & set(theirs.get("monitors") or ())
            same_image = mine.get("pool", "rbd") == theirs.get("pool", "rbd") and mine.get(
                "image"
            ) == theirs.get("image")
            if monitors and same_image and not both_read_only:
                return True
    return False


class VolumeRestrictions(Plugin):
    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = NAME
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (PVCS,)

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def _rwop_claims(self, pod: PodInfo) -> frozenset[str] | Status:
        pvcs = self.handle.store(*PVCS)
        found: set[str] = set()
        ephemeral = set(pod.ephemeral_pvc_names)
        for claim in pod.pvc_names:
            if claim in ephemeral:
                continue  # kube reads persistentVolumeClaim sources only
            pvc = pvcs.get(pod.namespace, claim)
            if pvc is None:
                return Status.unresolvable(f'persistentvolumeclaim "{claim}" not found')
            if READ_WRITE_ONCE_POD in access_modes(pvc):
                found.add(claim)
        return frozenset(found)

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        has_disks = bool(_disks(pod))
        if not has_disks and len(pod.ephemeral_pvc_names) == len(pod.pvc_names):
            return Status.skip()
        claims = self._rwop_claims(pod)
        if isinstance(claims, Status):
            return claims
        users = nodes.table.pod_table.claim_users
        conflicts = sum(1 for c in claims if users.get(f"{pod.namespace}/{c}", 0) > 0)
        if not has_disks and conflicts == 0:
            return Status.skip()
        state.write(STATE_KEY, _State(claims, conflicts))
        return None

    @hookimpl
    def pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        data = state.get(STATE_KEY)
        if isinstance(data, _State):
            data.update(pod_to_add, 1)
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        data = state.get(STATE_KEY)
        if isinstance(data, _State):
            data.update(pod_to_remove, -1)
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        result = FilterResult(len(nodes))
        disks = _disks(pod)
        if disks:
            table = nodes.table
            conflict = np.zeros(len(nodes), dtype=np.bool_)
            for i, row in enumerate(nodes.rows.tolist()):
                for other in table.pods[row].values():
                    theirs = _disks(other)
                    if theirs and any(volumes_conflict(v, t) for v in disks for t in theirs):
                        conflict[i] = True
                        break
            result.reject(conflict, ERR_REASON_DISK_CONFLICT)
        data = state.get(STATE_KEY)
        if isinstance(data, _State) and data.conflicts > 0:
            result.reject(np.ones(len(nodes), dtype=np.bool_), ERR_REASON_RWOP_CONFLICT)
        return result

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD), claim_hint(ephemeral=False)
            ),
        ]


def _pod_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    deleted = old if isinstance(old, PodInfo) else None
    if deleted is None:
        return QueueingHint.QUEUE
    if deleted.namespace != pod.namespace:
        return QueueingHint.SKIP
    mine, theirs = _disks(pod), _disks(deleted)
    if any(volumes_conflict(v, t) for v in mine for t in theirs):
        return QueueingHint.QUEUE
    if set(pod.pvc_names) & set(deleted.pvc_names):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
