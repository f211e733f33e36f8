"""NodeVolumeLimits: no more attachable volumes on a node than its CSI drivers allow.

kube-scheduler's CSI limits plugin: each CSI driver on a node reports how
many volumes it can attach (CSINode ``spec.drivers[].allocatable.count``).
The pod's volumes (claims resolved to their PV's CSI driver and volume
handle, or to their class's provisioner while unbound; in-tree volumes
through their migrated CSI driver) are added to those already attached
there: by pods on the node and by VolumeAttachments. A volume counts once
however many pods use it (``driver/handle``). A node without a CSINode, or
whose drivers report no count, is not limited.

What pods already on a node attach is kept per node and recomputed only
when that node's pods or its CSINode change.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    NodeSet,
    Plugin,
    PodInfo,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.api.handle import Handle
from scheduler.plugins.volumes.migration import BY_PLUGIN, is_inline_migratable, migrated_source
from scheduler.plugins.volumes.objects import (
    CSI_DRIVERS,
    CSI_NODES,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    Obj,
    claim_class,
    ephemeral_owner_error,
    meta,
    name,
    resource_version,
    spec,
)

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

Volumes = dict[str, str]  # unique volume name -> driver


class _LookupError(Exception):
    """The new pod's claim cannot be resolved (kube: NotFound is unresolvable)."""

    def __init__(self, message: str, not_found: bool) -> None:
        super().__init__(message)
        self.not_found = not_found


def _needs_check(pod: PodInfo) -> bool:
    if pod.pvc_names:
        return True
    volumes = pod.raw.get("spec", {}).get("volumes") or ()
    return any(isinstance(v, Mapping) and is_inline_migratable(v) for v in volumes)


def _limits(csinode: Obj | None) -> dict[str, int]:
    out: dict[str, int] = {}
    drivers = spec(csinode).get("drivers") if csinode is not None else None
    for driver in drivers if isinstance(drivers, list) else ():
        if not isinstance(driver, Mapping):
            continue
        allocatable = driver.get("allocatable")
        count = allocatable.get("count") if isinstance(allocatable, Mapping) else None
        if isinstance(count, int) and not isinstance(count, bool):
            out[str(driver.get("name") or "")] = count
    return out


class NodeVolumeLimits(Plugin):
    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = NAME
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (
        PVCS,
        PVS,
        STORAGE_CLASSES,
        CSI_NODES,
        CSI_DRIVERS,
        VOLUME_ATTACHMENTS,
    )

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        # Unbound claims get a handle unique to this scheduler (kube: a random prefix).
        self._prefix = secrets.token_hex(16)
        # node row -> (pods generation, CSINode version, volumes attached by its pods)
        self._attached: dict[int, tuple[int, str, Volumes]] = {}

    # -- volumes of a pod -----------------------------------------------------------

    def _driver_of_claim(self, pvc: Obj, csinode: Obj | None) -> tuple[str, str]:
        """kube's getCSIDriverInfo: (driver, volume handle), or empty when not counted."""
        pv_name = str(spec(pvc).get("volumeName") or "")
        pv = self.handle.store(*PVS).get("", pv_name) if pv_name else None
        if pv is None:
            return self._driver_from_class(pvc, csinode)
        csi = spec(pv).get("csi")
        if isinstance(csi, Mapping):
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        migrated = migrated_source(spec(pv))
        if migrated is None or csinode is None:
            return "", ""
        plugin, disk = migrated
        return plugin.driver, disk

    def _driver_from_class(self, pvc: Obj, csinode: Obj | None) -> tuple[str, str]:
        klass = claim_class(pvc)
        if not klass:
            return "", ""
        sc = self.handle.store(*STORAGE_CLASSES).get("", klass)
        if sc is None:
            return "", ""
        handle = f"{self._prefix}-{meta(pvc).get('namespace')}/{name(pvc)}"
        provisioner = str(sc.get("provisioner") or "")
        plugin = BY_PLUGIN.get(provisioner)
        if plugin is not None:
            return (plugin.driver, handle) if csinode is not None else ("", "")
        return provisioner, handle

    def _volumes(self, pod: PodInfo, csinode: Obj | None, new_pod: bool) -> Volumes:
        """kube's filterAttachableVolumes: the pod's attachable volumes by unique name."""
        out: Volumes = {}
        pvcs = self.handle.store(*PVCS)
        ephemeral = set(pod.ephemeral_pvc_names)
        for claim in pod.pvc_names:
            if not claim:
                raise _LookupError("PersistentVolumeClaim had no name", False)
            pvc = pvcs.get(pod.namespace, claim)
            if pvc is None:
                if new_pod:
                    raise _LookupError(
                        f'looking up PVC {pod.namespace}/{claim}: persistentvolumeclaim "{claim}" '
                        "not found",
                        True,
                    )
                continue
            if claim in ephemeral:
                error = ephemeral_owner_error(pod, pvc)
                if error is not None:
                    raise _LookupError(error, False)
            driver, handle = self._driver_of_claim(pvc, csinode)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
        if csinode is not None:
            for volume in pod.raw.get("spec", {}).get("volumes") or ():
                if not isinstance(volume, Mapping):
                    continue
                migrated = migrated_source(volume)
                if migrated is not None:
                    plugin, disk = migrated
                    out[f"{plugin.driver}/{disk}"] = plugin.driver
        return out

    def _attached_by_pods(self, row: int, csinode: Obj) -> Volumes:
        table = self.handle.table
        generation = int(table.generation[row])
        version = resource_version(csinode)
        cached = self._attached.get(row)
        if cached is not None and cached[0] == generation and cached[1] == version:
            return cached[2]
        attached: Volumes = {}
        for other in table.pods[row].values():
            if other.pvc_names or other.raw.get("spec", {}).get("volumes"):
                try:
                    attached.update(self._volumes(other, csinode, new_pod=False))
                except _LookupError:
                    continue  # a bad existing pod must not block its node
        self._attached[row] = (generation, version, attached)
        return attached

    def _attachments_by_node(self) -> dict[str, Volumes]:
        by_node: dict[str, Volumes] = {}
        pvs = self.handle.store(*PVS)
        for va in self.handle.store(*VOLUME_ATTACHMENTS).list(None):
            va_spec = spec(va)
            attacher = str(va_spec.get("attacher") or "")
            source = va_spec.get("source")
            pv_name = source.get("persistentVolumeName") if isinstance(source, Mapping) else None
            if not attacher or not pv_name:
                continue
            pv = pvs.get("", str(pv_name))
            csi = spec(pv).get("csi") if pv is not None else None
            if not isinstance(csi, Mapping):
                continue
            node = str(va_spec.get("nodeName") or "")
            by_node.setdefault(node, {})[f"{attacher}/{csi.get('volumeHandle') or ''}"] = attacher
        return by_node

    # -- hooks ----------------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        return None if _needs_check(pod) else Status.skip()

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult | Status:
        result = FilterResult(len(nodes))
        if not _needs_check(pod) or not len(nodes):
            return result
        table = nodes.table
        csinodes = self.handle.store(*CSI_NODES)
        try:
            new_without_csinode = self._volumes(pod, None, new_pod=True)
        except _LookupError as err:
            return Status.unresolvable(str(err)) if err.not_found else Status.error_status(str(err))
        new_with: Volumes | None = None
        attachments: dict[str, Volumes] | None = None
        over = np.zeros(len(nodes), dtype=np.bool_)
        for i, row in enumerate(nodes.rows.tolist()):
            node_name = table.names[row]
            csinode = csinodes.get("", node_name)
            if csinode is None:
                continue  # no limits known
            limits = _limits(csinode)
            if not limits:
                continue
            if new_with is None:
                try:
                    new_with = self._volumes(pod, csinode, new_pod=True)
                except _LookupError as err:
                    return Status.error_status(str(err))
            if not new_with:
                continue
            attached = self._attached_by_pods(row, csinode)
            counts: dict[str, int] = {}
            for driver in attached.values():
                counts[driver] = counts.get(driver, 0) + 1
            if attachments is None:
                attachments = self._attachments_by_node()
            for unique, driver in attachments.get(node_name, {}).items():
                if unique not in attached:
                    counts[driver] = counts.get(driver, 0) + 1
            wanted: dict[str, int] = {}
            for unique, driver in new_with.items():
                if unique not in attached:
                    wanted[driver] = wanted.get(driver, 0) + 1
            for driver, count in wanted.items():
                limit = limits.get(driver)
                if limit is not None and counts.get(driver, 0) + count > limit:
                    over[i] = True
                    break
        del new_without_csinode  # only checked for lookup errors, as kube does first
        return result.reject(over, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.UPDATE), _limit_raised),
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _freed_volumes),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD), _claim_of_pod
            ),
            ClusterEventWithHint(
                ClusterEvent("VolumeAttachment", ActionType.DELETE), _attachment_deleted
            ),
        ]


def _claim_of_pod(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    m = meta(new) if isinstance(new, Mapping) else {}
    if m.get("namespace") == pod.namespace and m.get("name") in pod.pvc_names:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _limit_raised(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    before = _limits(old) if isinstance(old, Mapping) else {}
    after = _limits(new) if isinstance(new, Mapping) else {}
    if any(count > before.get(driver, 0) for driver, count in after.items()):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _freed_volumes(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    deleted = old if isinstance(old, PodInfo) else None
    if deleted is None:
        return QueueingHint.QUEUE
    if not deleted.node_name and not deleted.nominated_node_name:
        return QueueingHint.SKIP
    volumes = deleted.raw.get("spec", {}).get("volumes") or ()
    if deleted.pvc_names or any(
        isinstance(v, Mapping) and is_inline_migratable(v) for v in volumes
    ):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _attachment_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if pod.pvc_names:
        return QueueingHint.QUEUE
    attacher = str(spec(old).get("attacher") or "") if isinstance(old, Mapping) else ""
    for volume in pod.raw.get("spec", {}).get("volumes") or ():
        migrated = migrated_source(volume) if isinstance(volume, Mapping) else None
        if migrated is not None and migrated[0].driver == attacher:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP
