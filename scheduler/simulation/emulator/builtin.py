"""The resource types every emulated cluster serves out of the box.

Besides what the scheduler reads and writes, this includes every collection a
real kube-scheduler's informers wait on (see notes/kube-scheduler-client-
requests.md), so an unmodified kube-scheduler can sync against the emulator.
"""

from __future__ import annotations

from typing import Any

from scheduler.simulation.emulator.eventstorage import (
    EVENTS_V1_CODEC,
    event_fields,
    events_v1_fields,
)
from scheduler.simulation.emulator.resources import ResourceType

Obj = dict[str, Any]


def pod_fields(obj: Obj) -> dict[str, str]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return {
        "spec.nodeName": spec.get("nodeName") or "",
        "spec.restartPolicy": spec.get("restartPolicy") or "",
        "spec.schedulerName": spec.get("schedulerName") or "",
        "spec.serviceAccountName": spec.get("serviceAccountName") or "",
        "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
        "status.phase": status.get("phase") or "",
        "status.podIP": status.get("podIP") or "",
        "status.nominatedNodeName": status.get("nominatedNodeName") or "",
    }


def node_fields(obj: Obj) -> dict[str, str]:
    spec = obj.get("spec") or {}
    return {"spec.unschedulable": "true" if spec.get("unschedulable") else "false"}


def namespace_fields(obj: Obj) -> dict[str, str]:
    return {"status.phase": (obj.get("status") or {}).get("phase") or ""}


def _core(plural: str, kind: str, namespaced: bool = True, **kw: Any) -> ResourceType:
    return ResourceType("", "v1", plural, kind, namespaced, singular=kind.lower(), **kw)


def _cluster(
    group: str,
    plural: str,
    kind: str,
    short_names: tuple[str, ...] = (),
    subresources: frozenset[str] = frozenset(),
) -> ResourceType:
    return ResourceType(
        group,
        "v1",
        plural,
        kind,
        False,
        singular=kind.lower(),
        short_names=short_names,
        subresources=subresources,
        create_keeps_status=not subresources,
    )


def builtin_types() -> list[ResourceType]:
    status = frozenset({"status"})
    return [
        _core(
            "pods",
            "Pod",
            short_names=("po",),
            categories=("all",),
            subresources=frozenset({"status", "binding"}),
            field_labels=pod_fields,
            return_deleted_object=True,
        ),
        _core(
            "nodes",
            "Node",
            namespaced=False,
            short_names=("no",),
            subresources=status,
            field_labels=node_fields,
            create_keeps_status=True,
        ),
        _core(
            "namespaces",
            "Namespace",
            namespaced=False,
            short_names=("ns",),
            subresources=frozenset({"status", "finalize"}),
            field_labels=namespace_fields,
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            return_deleted_object=True,
        ),
        _core(
            "events",
            "Event",
            short_names=("ev",),
            field_labels=event_fields,
            allow_create_on_update=True,
            create_keeps_status=True,
        ),
        _core(
            "services", "Service", short_names=("svc",), categories=("all",), subresources=status
        ),
        _core(
            "replicationcontrollers",
            "ReplicationController",
            short_names=("rc",),
            subresources=status,
        ),
        _core(
            "persistentvolumes",
            "PersistentVolume",
            namespaced=False,
            short_names=("pv",),
            subresources=status,
        ),
        _core(
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            short_names=("pvc",),
            subresources=status,
        ),
        _core("configmaps", "ConfigMap", short_names=("cm",)),
        ResourceType(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            True,
            singular="event",
            short_names=("ev",),
            storage="/events",
            codec=EVENTS_V1_CODEC,
            field_labels=events_v1_fields,
            allow_create_on_update=True,
            create_keeps_status=True,
        ),
        ResourceType(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            True,
            singular="lease",
            allow_unconditional_update=False,
            create_keeps_status=True,
        ),
        ResourceType(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            True,
            singular="poddisruptionbudget",
            short_names=("pdb",),
            subresources=status,
        ),
        ResourceType(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            True,
            singular="replicaset",
            short_names=("rs",),
            categories=("all",),
            subresources=status,
        ),
        ResourceType(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            True,
            singular="statefulset",
            short_names=("sts",),
            categories=("all",),
            subresources=status,
        ),
        ResourceType(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            True,
            singular="deployment",
            short_names=("deploy",),
            categories=("all",),
            subresources=status,
        ),
        ResourceType(
            "storage.k8s.io",
            "v1",
            "storageclasses",
            "StorageClass",
            False,
            singular="storageclass",
            short_names=("sc",),
            create_keeps_status=True,
        ),
        ResourceType(
            "storage.k8s.io",
            "v1",
            "csinodes",
            "CSINode",
            False,
            singular="csinode",
            create_keeps_status=True,
        ),
        ResourceType(
            "storage.k8s.io",
            "v1",
            "csidrivers",
            "CSIDriver",
            False,
            singular="csidriver",
            create_keeps_status=True,
        ),
        ResourceType(
            "storage.k8s.io",
            "v1",
            "csistoragecapacities",
            "CSIStorageCapacity",
            True,
            singular="csistoragecapacity",
            create_keeps_status=True,
        ),
        ResourceType(
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            "PriorityClass",
            False,
            singular="priorityclass",
            short_names=("pc",),
            create_keeps_status=True,
        ),
        # kube 1.36's Workload API (GenericWorkload): what GangScheduling reads.
        ResourceType(
            "scheduling.k8s.io",
            "v1alpha2",
            "workloads",
            "Workload",
            True,
            singular="workload",
            create_keeps_status=True,
        ),
        ResourceType(
            "scheduling.k8s.io",
            "v1alpha2",
            "podgroups",
            "PodGroup",
            True,
            singular="podgroup",
            subresources=status,
        ),
        _cluster("storage.k8s.io", "volumeattachments", "VolumeAttachment", subresources=status),
        _cluster("storage.k8s.io", "volumeattributesclasses", "VolumeAttributesClass", ("vac",)),
        # Dynamic resource allocation: kube-scheduler >= 1.34 waits on these informers.
        _cluster("resource.k8s.io", "deviceclasses", "DeviceClass"),
        _cluster("resource.k8s.io", "resourceslices", "ResourceSlice"),
        ResourceType(
            "resource.k8s.io",
            "v1",
            "resourceclaims",
            "ResourceClaim",
            True,
            singular="resourceclaim",
            subresources=status,
        ),
        ResourceType(
            "resource.k8s.io",
            "v1",
            "resourceclaimtemplates",
            "ResourceClaimTemplate",
            True,
            singular="resourceclaimtemplate",
            create_keeps_status=True,
        ),
        ResourceType(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            False,
            singular="customresourcedefinition",
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            subresources=status,
        ),
        # metrics-server's API; writable here so simulations can feed usage.
        ResourceType(
            "metrics.k8s.io",
            "v1beta1",
            "nodes",
            "NodeMetrics",
            False,
            singular="",
            storage="metrics.k8s.io/nodes",
            create_keeps_status=True,
            strategic_merge=False,
        ),
        ResourceType(
            "metrics.k8s.io",
            "v1beta1",
            "pods",
            "PodMetrics",
            True,
            singular="",
            storage="metrics.k8s.io/pods",
            create_keeps_status=True,
            strategic_merge=False,
        ),
    ]
