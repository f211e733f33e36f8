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
when that node's pods or its CSINode change (see :class:`_LimitsView`), so
Filter is a few array operations per driver however many nodes there are.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

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
    claim_hint,
    ephemeral_owner_error,
    meta,
    name,
    spec,
)
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

Volumes = dict[str, str]  # unique volume name -> driver
NO_LIMIT = np.iinfo(np.int64).max


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


class _LimitsView:
    """Per node row: its CSINode's limits and what its pods attach, kept up to date.

    The CSINode of every node is looked up again only when the CSINode
    store's revision or the set of nodes changes;
    the volumes a node's pods attach are recomputed only for rows whose pods
    changed (the table's per-row generation). A PV or PVC that changes
    under a pod already placed is seen at the node's next pod change.
    """

    def __init__(self) -> None:
        self.csinodes: list[Obj] = []
        self._revision = -1
        self._epoch = -1
        self.csinode = np.zeros(0, dtype=np.int64)  # row -> index in csinodes, -1 none
        self.generation = np.zeros(0, dtype=np.int64)  # row -> generation counted
        self.limits: dict[str, npt.NDArray[np.int64]] = {}  # driver -> row -> limit
        self.counts: dict[str, npt.NDArray[np.int64]] = {}  # driver -> row -> attached
        self.attached: list[Volumes | None] = []
        self.holders: dict[str, set[int]] = {}  # unique volume -> rows attaching it
        self.has_attachments = False
        self._attachments_revision = -1

    def _resize(self, capacity: int) -> None:
        old = len(self.csinode)
        if old >= capacity:
            return
        grow = capacity - old
        self.csinode = np.concatenate([self.csinode, np.full(grow, -1, dtype=np.int64)])
        self.generation = np.concatenate([self.generation, np.full(grow, -1, dtype=np.int64)])
        for table in (self.limits, self.counts):
            for driver, values in table.items():
                fill = NO_LIMIT if table is self.limits else 0
                table[driver] = np.concatenate([values, np.full(grow, fill, dtype=np.int64)])
        self.attached.extend([None] * grow)

    def _column(
        self, table: dict[str, npt.NDArray[np.int64]], driver: str, fill: int
    ) -> npt.NDArray[np.int64]:
        column = table.get(driver)
        if column is None:
            column = table[driver] = np.full(len(self.csinode), fill, dtype=np.int64)
        return column

    def _forget(self, row: int) -> None:
        for unique in self.attached[row] or {}:
            holders = self.holders.get(unique)
            if holders is not None:
                holders.discard(row)
                if not holders:
                    del self.holders[unique]
        for counts in self.counts.values():
            counts[row] = 0
        self.attached[row] = None
        self.generation[row] = -1

    def refresh(self, plugin: NodeVolumeLimits, nodes: NodeSet) -> _LimitsView:
        """Up to date for ``nodes``, whose table may be a what-if copy (pods counted there)."""
        handle = plugin.handle
        table = nodes.table
        rows = nodes.rows
        self._resize(table.capacity)
        store = handle.store(*CSI_NODES)
        revision = store.revision()
        if revision != self._revision or table.node_epoch != self._epoch:
            self.csinodes = store.list(None)
            self._revision, self._epoch = revision, table.node_epoch
            by_name = {name(o): i for i, o in enumerate(self.csinodes)}
            for column in self.limits.values():
                column[:] = NO_LIMIT
            self.csinode[:] = -1
            for row in table.rows().tolist():
                index = by_name.get(table.names[row], -1)
                self.csinode[row] = index
                if index >= 0:
                    for driver, count in _limits(self.csinodes[index]).items():
                        self._column(self.limits, driver, NO_LIMIT)[row] = count
                self._forget(row)  # its CSINode may have changed: count again
        attachments = handle.store(*VOLUME_ATTACHMENTS)
        if attachments.revision() != self._attachments_revision:
            self._attachments_revision = attachments.revision()
            self.has_attachments = bool(attachments.list(None))
        if not self.limits:
            return self
        candidates = rows[self.csinode[rows] >= 0]
        stale = candidates[self.generation[candidates] != table.generation[candidates]]
        for row in stale.tolist():
            self._forget(row)
            attached = plugin._attached_by_pods(table, row, self.csinodes[int(self.csinode[row])])
            self.attached[row] = attached
            for unique, driver in attached.items():
                self.holders.setdefault(unique, set()).add(row)
                self._column(self.counts, driver, 0)[row] += 1
            self.generation[row] = table.generation[row]
        return self


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
        self._view = _LimitsView()

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

    def _attached_by_pods(self, table: NodeTable, row: int, csinode: Obj) -> Volumes:
        attached: Volumes = {}
        for other in table.pods[row].values():
            if other.pvc_names or other.raw.get("spec", {}).get("volumes"):
                try:
                    attached.update(self._volumes(other, csinode, new_pod=False))
                except _LookupError:
                    continue  # a bad existing pod must not block its node
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
        if not _needs_check(pod):
            return Status.skip()
        # Where no node reports a limit, Filter passes every node whatever the
        # pods on it: skipping says so, and lets what-ifs (preemption's dry
        # run) judge many nodes at once. A claim that cannot be looked up is
        # left to Filter, which reports it per node as kube does.
        try:
            self._volumes(pod, None, new_pod=True)
        except _LookupError:
            return None
        if not self._view.refresh(self, nodes).limits:
            return Status.skip()
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult | Status:
        result = FilterResult(len(nodes))
        if not _needs_check(pod) or not len(nodes):
            return result
        try:
            self._volumes(pod, None, new_pod=True)  # kube looks the claims up first
        except _LookupError as err:
            return Status.unresolvable(str(err)) if err.not_found else Status.error_status(str(err))
        view = self._view.refresh(self, nodes)
        if not view.limits:
            return result  # no node reports a limit
        rows = nodes.rows
        limited = view.csinode[rows] >= 0
        if not limited.any():
            return result
        some_csinode = view.csinodes[int(view.csinode[rows][limited][0])]
        try:
            new = self._volumes(pod, some_csinode, new_pod=True)
        except _LookupError as err:
            return Status.error_status(str(err))
        if not new:
            return result
        per_driver: dict[str, int] = {}
        for driver in new.values():
            per_driver[driver] = per_driver.get(driver, 0) + 1
        attachments = self._attachments_by_node() if view.has_attachments else {}
        names = nodes.table.names
        over = np.zeros(len(nodes), dtype=np.bool_)
        for driver, count in per_driver.items():
            limit = view.limits.get(driver)
            if limit is None:
                continue
            attached_counts = view.counts.get(driver)
            total = (
                attached_counts[rows] + count
                if attached_counts is not None
                else np.full(len(rows), count, dtype=np.int64)
            )
            # A volume already attached on a node adds nothing there.
            for unique, owner in new.items():
                if owner != driver:
                    continue
                holders = view.holders.get(unique)
                if holders:
                    total -= np.isin(rows, np.fromiter(holders, dtype=np.int64))
            if attachments:
                for i, row in enumerate(rows.tolist()):
                    attached = view.attached[row]
                    extra = attachments.get(names[row], {})
                    total[i] += sum(
                        1 for u, d in extra.items() if d == driver and u not in (attached or {})
                    )
            over |= total > limit[rows]
        return result.reject(over, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.UPDATE), _limit_raised),
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _freed_volumes),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD), claim_hint(ephemeral=True)
            ),
            ClusterEventWithHint(
                ClusterEvent("VolumeAttachment", ActionType.DELETE), _attachment_deleted
            ),
        ]


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
