"""Storage objects and a handle with mutable stores, for the volume plugins' tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from scheduler.api import Handle
from scheduler.state.nodetable import NodeTable

Obj = dict[str, Any]

_PLURALS = {
    "PersistentVolumeClaim": ("", "v1", "persistentvolumeclaims"),
    "PersistentVolume": ("", "v1", "persistentvolumes"),
    "StorageClass": ("storage.k8s.io", "v1", "storageclasses"),
    "CSINode": ("storage.k8s.io", "v1", "csinodes"),
    "CSIDriver": ("storage.k8s.io", "v1", "csidrivers"),
    "CSIStorageCapacity": ("storage.k8s.io", "v1", "csistoragecapacities"),
    "VolumeAttachment": ("storage.k8s.io", "v1", "volumeattachments"),
    "Pod": ("", "v1", "pods"),
}


class MutableStore:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}
        self.changes = 0

    def revision(self) -> int:
        return self.changes

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.objects.get((namespace, name))

    def list(self, namespace: str | None = None) -> list[Obj]:
        return [o for (ns, _), o in self.objects.items() if namespace is None or ns == namespace]


class VolumeHandle:
    """What the volume plugins use of a Handle: the table, stores and a client."""

    def __init__(self, table: NodeTable, client: Any = None) -> None:
        self.table = table
        self.client = client
        self.profile_name = "default-scheduler"
        self.stores: dict[tuple[str, str, str], MutableStore] = {}

    def store(self, group: str, version: str, plural: str) -> MutableStore:
        return self.stores.setdefault((group, version, plural), MutableStore())

    def put(self, *objects: Obj) -> None:
        """Add or replace objects, bumping their resourceVersion as an API server would."""
        for obj in objects:
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(int(meta.get("resourceVersion") or 0) + 1)
            key = (str(meta.get("namespace") or ""), str(meta["name"]))
            store = self.store(*_PLURALS[obj["kind"]])
            store.objects[key] = obj
            store.changes += 1

    def as_handle(self) -> Handle:
        return cast(Handle, self)


def pv(
    name: str,
    size: str = "10Gi",
    *,
    storage_class: str = "",
    modes: Sequence[str] = ("ReadWriteOnce",),
    hostname: str | None = None,
    zone: str | None = None,
    labels: Mapping[str, str] | None = None,
    claim: Obj | None = None,
    phase: str = "Available",
    source: Mapping[str, Any] | None = None,
) -> Obj:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": storage_class,
    }
    spec.update(source or {"local": {"path": f"/mnt/{name}"}})
    if hostname is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": [hostname],
                            }
                        ]
                    }
                ]
            }
        }
    if claim is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": claim["metadata"]["namespace"],
            "name": claim["metadata"]["name"],
            "uid": claim["metadata"]["uid"],
        }
    meta_labels = dict(labels or {})
    if zone is not None:
        meta_labels["topology.kubernetes.io/zone"] = zone
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": meta_labels, "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": "Bound" if claim is not None and phase == "Available" else phase},
    }


def pvc(
    name: str,
    size: str = "5Gi",
    *,
    namespace: str = "default",
    storage_class: str | None = "",
    modes: Sequence[str] = ("ReadWriteOnce",),
    volume: str | None = None,
    bound: bool = False,
    annotations: Mapping[str, str] | None = None,
    owner: Obj | None = None,
) -> Obj:
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume is not None:
        spec["volumeName"] = volume
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "annotations": ann,
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Bound" if bound else "Pending"},
    }


def storage_class(
    name: str,
    *,
    provisioner: str = "kubernetes.io/no-provisioner",
    mode: str | None = "WaitForFirstConsumer",
    zones: Sequence[str] = (),
) -> Obj:
    sc: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if mode is not None:
        sc["volumeBindingMode"] = mode
    if zones:
        sc["allowedTopologies"] = [
            {
                "matchLabelExpressions": [
                    {"key": "topology.kubernetes.io/zone", "values": list(zones)}
                ]
            }
        ]
    return sc


def csi_driver(name: str, *, capacity: bool = False) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": capacity},
    }


def capacity(name: str, klass: str, size: str, zone: str, *, namespace: str = "kube-system") -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace},
        "storageClassName": klass,
        "capacity": size,
        "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": zone}},
    }


def csi_node(node: str, drivers: Mapping[str, int | None], *, migrated: str = "") -> Obj:
    entries = []
    for driver, count in drivers.items():
        entry: dict[str, Any] = {"name": driver, "nodeID": node}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    meta: dict[str, Any] = {"name": node}
    if migrated:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": meta,
        "spec": {"drivers": entries},
    }


def claim_volume(claim: str, name: str | None = None) -> Obj:
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_volume(name: str, klass: str = "fast") -> Obj:
    return {
        "name": name,
        "ephemeral": {
            "volumeClaimTemplate": {
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": klass,
                    "resources": {"requests": {"storage": "1Gi"}},
                }
            }
        },
    }
