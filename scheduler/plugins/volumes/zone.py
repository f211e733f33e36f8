"""VolumeZone: a pod goes only where the zones and regions of its bound PVs are.

kube-scheduler's plugin: the topology labels of each bound PV (GA
``topology.kubernetes.io/zone|region`` and the legacy
``failure-domain.beta.kubernetes.io/*``, whose value may list several zones
joined by ``__``) must match the node's; a node with none of those labels is
not constrained. Claims of WaitForFirstConsumer classes are not bound yet
and are left to VolumeBinding.
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
    PVS,
    STORAGE_CLASSES,
    WAIT_FOR_FIRST_CONSUMER,
    claim_class,
    claim_hint,
    labels,
    spec,
)
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo

NAME = "VolumeZone"
STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
REGION_BETA = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (ZONE_BETA, REGION_BETA, ZONE, REGION)
_GA = {ZONE_BETA: ZONE, REGION_BETA: REGION}

Topology = tuple[str, tuple[str, ...]]  # label key, allowed values


def pv_topologies(pv: Mapping[str, Any]) -> list[Topology]:
    """The PV's topology constraints (kube's getPVTopologies with LabelZonesToSet)."""
    found: list[Topology] = []
    pv_labels = labels(pv)
    for key in TOPOLOGY_LABELS:
        value = pv_labels.get(key)
        if value is None:
            continue
        zones = [z.strip() for z in str(value).split("__")]
        if any(not z for z in zones):
            continue  # kube skips a label it cannot parse
        found.append((key, tuple(sorted(set(zones)))))
    return found


class VolumeZone(Plugin):
    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = NAME
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (PVCS, PVS, STORAGE_CLASSES)
    # Verdicts never look at the pods on a node: what-ifs may edit `requested` only.
    pods_via_requested: ClassVar[bool] = True

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def _topologies(self, pod: PodInfo) -> list[Topology] | Status:
        stores = self.handle
        found: list[Topology] = []
        ephemeral = set(pod.ephemeral_pvc_names)
        for claim in pod.pvc_names:
            if claim in ephemeral:
                continue  # kube's VolumeZone reads persistentVolumeClaim sources only
            if not claim:
                return Status.unresolvable("PersistentVolumeClaim had no name")
            pvc = stores.store(*PVCS).get(pod.namespace, claim)
            if pvc is None:
                return Status.unresolvable(f'persistentvolumeclaim "{claim}" not found')
            pv_name = str(spec(pvc).get("volumeName") or "")
            if not pv_name:
                klass = claim_class(pvc)
                if not klass:
                    return Status.unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                sc = stores.store(*STORAGE_CLASSES).get("", klass)
                if sc is None:
                    return Status.unresolvable(f'storageclass.storage.k8s.io "{klass}" not found')
                mode = sc.get("volumeBindingMode")
                if mode is None:
                    return Status.unresolvable(
                        f'VolumeBindingMode not set for StorageClass "{klass}"'
                    )
                if mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return Status.unresolvable("PersistentVolume had no name")
            pv = stores.store(*PVS).get("", pv_name)
            if pv is None:
                return Status.unresolvable(f'persistentvolume "{pv_name}" not found')
            found.extend(pv_topologies(pv))
        return found

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        if not pod.pvc_names or len(pod.ephemeral_pvc_names) == len(pod.pvc_names):
            return Status.skip()
        got = self._topologies(pod)
        if isinstance(got, Status):
            return got
        if not got:
            return Status.skip()
        state.write(STATE_KEY, got)
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult | Status:
        result = FilterResult(len(nodes))
        topologies = state.get(STATE_KEY)
        if topologies is None:
            got = self._topologies(pod)
            if isinstance(got, Status):
                return got
            topologies = got
        if not topologies or not len(nodes):
            return result
        table_labels = nodes.table.labels
        rows = nodes.rows
        constrained = np.zeros(len(nodes), dtype=np.bool_)
        for key in TOPOLOGY_LABELS:
            constrained |= table_labels.match(key, "Exists", (), rows)
        fits = np.ones(len(nodes), dtype=np.bool_)
        for key, values in topologies:
            has_key = table_labels.match(key, "Exists", (), rows)
            on_key = table_labels.match(key, "In", values, rows)
            ga = _GA.get(key, key)
            on_ga = table_labels.match(ga, "In", values, rows)
            fits &= np.where(has_key, on_key, on_ga)
        return result.reject_unresolvable(constrained & ~fits, ERR_REASON_CONFLICT)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD), _wffc_class_added),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE),
                claim_hint(ephemeral=False),
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE),
                _pv_topology_changed,
            ),
        ]


def _wffc_class_added(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    mode = new.get("volumeBindingMode") if isinstance(new, Mapping) else None
    return QueueingHint.QUEUE if mode == WAIT_FOR_FIRST_CONSUMER else QueueingHint.SKIP


def _pv_topology_changed(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE
    if pv_topologies(old) != pv_topologies(new or {}):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
