"""Per-kind create/update rules that kube-apiserver's registry strategies apply.

Clients observe these (a created pod is Pending with defaults filled in, its
status cannot be set on create, its spec is mostly immutable), so the
scheduler under test must see them here exactly as on a real cluster.
"""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from scheduler.model.names import (
    DNS1123_SUBDOMAIN_MAX,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    max_len_error,
)
from scheduler.simulation.emulator import (
    draclaims,
    dracommon,
    draslices,
    podclaims,
    quantity,
    statuserrors,
    validation,
    workloads,
)
from scheduler.simulation.emulator.resources import ResourceType

Obj = dict[str, Any]

# Pod spec fields kube-apiserver lets an update change (ValidatePodUpdate).
_MUTABLE_POD_SPEC = (
    "activeDeadlineSeconds",
    "tolerations",
    "schedulingGates",
    "terminationGracePeriodSeconds",
)

DEFAULT_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]


def name_causes(rt: ResourceType, obj: Obj) -> list[validation.Cause]:
    """``metadata.name`` (and ``generateName``) as ValidateObjectMeta checks them."""
    meta = obj["metadata"]
    name = meta.get("name") or ""
    if not name:
        return [
            (
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            )
        ]
    # ValidateNamespaceName is IsDNS1123Label; every other kind here uses
    # NameIsDNSSubdomain (generateName with its trailing "-" masked).
    namespace = rt.kind == "Namespace"
    name_errors = dns1123_label_errors if namespace else dns1123_subdomain_errors
    causes: list[validation.Cause] = []
    if rt.kind != "Event" and meta.get("generateName"):
        prefix = str(meta["generateName"])
        masked = prefix[:-1] + "a" if prefix.endswith("-") else prefix
        causes += [
            validation.invalid("metadata.generateName", prefix, msg) for msg in name_errors(masked)
        ]
    if rt.kind == "Event":
        # core/v1 Events keep only the length rule of an object name.
        limit = DNS1123_SUBDOMAIN_MAX
        errs = [max_len_error(limit)] if len(name.encode("utf-8", "surrogatepass")) > limit else []
    else:
        errs = name_errors(name)
    return causes + [validation.invalid("metadata.name", name, msg) for msg in errs]


def validate_name(rt: ResourceType, obj: Obj) -> None:
    causes = name_causes(rt, obj)
    if causes:
        raise statuserrors.invalid(rt.group, rt.kind, obj["metadata"].get("name") or "", causes)


def _qos_class(spec: Obj) -> str:
    requests_any = limits_any = False
    guaranteed = True
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        if not isinstance(container, dict):
            continue
        resources = container.get("resources") or {}
        requests = {
            k: _amount(v)
            for k, v in (resources.get("requests") or {}).items()
            if k in ("cpu", "memory")
        }
        limits = {
            k: _amount(v)
            for k, v in (resources.get("limits") or {}).items()
            if k in ("cpu", "memory")
        }
        requests_any = requests_any or any(requests.values())
        limits_any = limits_any or any(limits.values())
        if set(limits) != {"cpu", "memory"}:
            guaranteed = False
        for key, value in requests.items():
            if limits.get(key) != value:
                guaranteed = False
    if not requests_any and not limits_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _amount(value: Any) -> Fraction:
    try:
        return quantity.from_json(value).value
    except quantity.QuantityError:
        return Fraction(0)


def _with_default_tolerations(given: list[Any]) -> list[Any]:
    tolerations = list(given)
    for default in DEFAULT_TOLERATIONS:
        if not any(
            isinstance(t, dict)
            and t.get("key") == default["key"]
            and t.get("effect") in (None, "", "NoExecute")
            for t in tolerations
        ):
            tolerations.append(dict(default))
    return tolerations


def _default_pod(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    given = spec.get("tolerations") or []
    if isinstance(given, list):
        spec["tolerations"] = _with_default_tolerations(given)
    for key in ("containers", "initContainers"):
        containers = spec.get(key) or []
        for container in containers if isinstance(containers, list) else []:
            if isinstance(container, dict):
                container.setdefault("terminationMessagePath", "/dev/termination-log")
                container.setdefault("terminationMessagePolicy", "File")
                container.setdefault("resources", {})
                image = str(container.get("image", ""))
                latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
                container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")


def _mark_scheduling_gated(spec: Obj, status: Obj) -> None:
    """kube-apiserver's applySchedulingGatedCondition: a gated pod says why it waits.

    (kubectl shows such a pod as SchedulingGated rather than Pending.)
    """
    conditions = status.get("conditions")
    if not spec.get("schedulingGates") or not isinstance(conditions, list | None):
        return
    if any(isinstance(c, dict) and c.get("type") == "PodScheduled" for c in conditions or []):
        return
    status["conditions"] = [
        *(conditions or []),
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        },
    ]


def _default_node(obj: Obj) -> None:
    """SetDefaults_NodeStatus: allocatable defaults to capacity; the non-optional
    structs of NodeStatus are always present."""
    status = obj.setdefault("status", {})
    if not isinstance(status, dict):
        return
    if status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = dict(status["capacity"])
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
    status.setdefault(
        "nodeInfo",
        {
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
            "kernelVersion": "",
            "osImage": "",
            "containerRuntimeVersion": "",
            "kubeletVersion": "",
            "kubeProxyVersion": "",
            "operatingSystem": "",
            "architecture": "",
        },
    )


def _kind_causes(rt: ResourceType, obj: Obj) -> list[validation.Cause]:
    kind = rt.kind if not rt.group else f"{rt.group}/{rt.kind}"
    if kind == "Pod":
        spec = obj.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        return validation.pod_spec(spec) + workloads.pod_scheduling_group(spec)
    if kind == "Node":
        return validation.node(obj)
    if kind == "scheduling.k8s.io/Workload":
        return workloads.workload(obj)
    if kind == "scheduling.k8s.io/PodGroup":
        return workloads.pod_group(obj)
    if kind == "scheduling.k8s.io/PriorityClass":
        return validation.priority_class(obj)
    if kind == "policy/PodDisruptionBudget":
        return validation.pod_disruption_budget(obj)
    if kind == "coordination.k8s.io/Lease":
        return validation.lease(obj)
    if kind == "Event":
        return validation.core_event(obj)
    if kind == "PersistentVolume":
        return validation.persistent_volume(obj)
    if kind == "PersistentVolumeClaim":
        return validation.persistent_volume_claim(obj)
    if kind == "storage.k8s.io/StorageClass":
        return validation.storage_class(obj)
    if kind == "storage.k8s.io/CSINode":
        return validation.csi_node(obj)
    if kind == "storage.k8s.io/CSIDriver":
        return validation.csi_driver(obj)
    if kind == "storage.k8s.io/CSIStorageCapacity":
        return validation.csi_storage_capacity(obj)
    if kind == "resource.k8s.io/DeviceClass":
        return dracommon.device_class(obj)
    if kind == "resource.k8s.io/ResourceSlice":
        return draslices.resource_slice(obj)
    if kind == "resource.k8s.io/ResourceClaim":
        return draclaims.resource_claim(obj)
    if kind == "resource.k8s.io/ResourceClaimTemplate":
        return draclaims.resource_claim_template(obj)
    return []


def _default_resource(rt: ResourceType, obj: Obj, old: Obj | None = None) -> None:
    """resource.k8s.io defaulting on decode (SetObjectDefaults_*) and the fields the
    strategies drop while their feature is off."""
    if rt.group != "resource.k8s.io":
        return
    spec = obj.get("spec")
    if rt.kind == "ResourceClaim":
        draclaims.default_claim_spec(spec)
        draclaims.default_claim_status(obj.get("status"))
    elif rt.kind == "ResourceClaimTemplate" and isinstance(spec, dict):
        draclaims.default_claim_spec(spec.get("spec"))
    elif rt.kind == "ResourceSlice":
        draslices.drop_disabled_slice_fields(obj, old)


def _default_storage(rt: ResourceType, obj: Obj) -> None:
    """The defaulting kube applies when decoding storage objects (SetDefaults_*),
    so validation and clients see the same values as on a real cluster."""
    kind = rt.kind if not rt.group else f"{rt.group}/{rt.kind}"
    spec = obj.get("spec")
    if kind in ("PersistentVolume", "PersistentVolumeClaim") and isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
        if kind == "PersistentVolume":
            spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    elif kind == "storage.k8s.io/StorageClass":
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
    elif kind == "storage.k8s.io/CSIDriver":
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        spec.setdefault("attachRequired", True)
        spec.setdefault("podInfoOnMount", False)
        spec.setdefault("storageCapacity", False)
        spec.setdefault("requiresRepublish", False)
        spec.setdefault("seLinuxMount", False)
        spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
        spec.setdefault("volumeLifecycleModes", ["Persistent"])


def _raise(rt: ResourceType, name: str, causes: list[validation.Cause]) -> None:
    if causes:
        kind = rt.kind if not rt.group or rt.custom else f"{rt.kind}.{rt.group}"
        raise statuserrors.invalid(rt.group, kind, name, causes)


def prepare_for_create(
    rt: ResourceType, obj: Obj, *, keep_status: bool, validate: bool = True
) -> None:
    """Reset what users may not set and fill defaults, then validate."""
    if not keep_status and not rt.create_keeps_status and rt.has_status:
        obj.pop("status", None)
    kind = rt.kind if not rt.group else ""
    if kind == "Pod":
        _default_pod(obj)
        status = obj.setdefault("status", {})
        if isinstance(status, dict) and isinstance(obj["spec"], dict):
            status.setdefault("phase", "Pending")
            status.setdefault("qosClass", _qos_class(obj["spec"]))
            _mark_scheduling_gated(obj["spec"], status)
    elif kind == "Node":
        if not isinstance(obj.get("spec"), dict):
            obj["spec"] = {}
        _default_node(obj)
    elif kind == "Namespace":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        name = obj["metadata"].get("name")
        if name:
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    elif rt.group == "scheduling.k8s.io" and rt.kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif rt.group == workloads.GROUP and rt.kind == "Workload":
        workloads.prepare_workload(obj)
    elif rt.group == workloads.GROUP and rt.kind == "PodGroup":
        workloads.prepare_pod_group(obj)
    elif kind in ("PersistentVolume", "PersistentVolumeClaim"):
        # Both start Pending; the PV controller moves them on.
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            status.setdefault("phase", "Pending")
    elif rt.group == "policy" and rt.kind == "PodDisruptionBudget" and not keep_status:
        obj["status"] = {
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        }
    _default_storage(rt, obj)
    _default_resource(rt, obj)
    if not validate:
        if not obj["metadata"].get("name"):
            validate_name(rt, obj)
        return
    causes = name_causes(rt, obj)
    causes += validation.object_meta(obj["metadata"])
    causes += _kind_causes(rt, obj)
    if kind == "Pod":
        causes += podclaims.pod_claim_causes(obj)
    _raise(rt, obj["metadata"].get("name") or "", causes)
    if rt.group == "apiextensions.k8s.io" and rt.kind == "CustomResourceDefinition":
        from scheduler.simulation.emulator.crds import validate_crd

        validate_crd(obj)


def validate_served_event(rt: ResourceType, body: Obj, name: str) -> None:
    """events.k8s.io/v1 requirements, checked on the served form before conversion."""
    causes = validation.events_v1_event(body)
    if causes:
        raise statuserrors.invalid(rt.group, rt.kind, name, causes)


def validate_update(rt: ResourceType, old: Obj, new: Obj, subresource: str) -> None:
    """What ValidateXUpdate / ValidateXStatusUpdate check besides immutability."""
    kind = rt.kind if not rt.group else f"{rt.group}/{rt.kind}"
    causes = validation.object_meta(new["metadata"])
    if kind == "Pod":
        if subresource == "status":
            causes += validation.pod_status(new.get("status"))
            causes += podclaims.pod_claim_status_causes(new)
        else:
            spec = new.get("spec")
            spec = spec if isinstance(spec, dict) else {}
            causes += validation.pod_spec(spec) + workloads.pod_scheduling_group(spec)
            causes += podclaims.pod_claim_causes(new)
    elif kind == "Node":
        causes += validation.node(new)
    elif kind == "scheduling.k8s.io/PriorityClass":
        causes += validation.priority_class_update(old, new)
    elif kind == "scheduling.k8s.io/Workload":
        causes += workloads.workload(new, old)
    elif kind == "scheduling.k8s.io/PodGroup":
        causes += workloads.pod_group(new, old)
    elif kind == "policy/PodDisruptionBudget" and subresource != "status":
        causes += validation.pod_disruption_budget(new)
    elif kind == "coordination.k8s.io/Lease":
        causes += validation.lease(new)
    elif kind == "resource.k8s.io/ResourceClaim":
        if subresource == "status":
            # A status body is defaulted on decoding like any other.
            draclaims.default_claim_status(new.get("status"))
            causes += draclaims.resource_claim_status_update(old, new)
        else:
            causes += draclaims.resource_claim_update(old, new)
    elif kind == "resource.k8s.io/ResourceClaimTemplate":
        causes += draclaims.resource_claim_template_update(old, new)
    elif kind == "resource.k8s.io/DeviceClass":
        causes += dracommon.device_class(new, old)
    elif kind == "resource.k8s.io/ResourceSlice":
        causes += draslices.resource_slice(new, old)
    elif subresource == "status":
        pass  # storage kinds: a status update validates only metadata
    elif kind == "PersistentVolume":
        causes += validation.persistent_volume_update(old, new)
    elif kind == "PersistentVolumeClaim":
        causes += validation.persistent_volume_claim_update(old, new)
    elif kind == "storage.k8s.io/StorageClass":
        causes += validation.storage_class_update(old, new)
    elif kind == "storage.k8s.io/CSINode":
        causes += validation.csi_node(new)
    elif kind == "storage.k8s.io/CSIDriver":
        causes += validation.csi_driver_update(old, new)
    elif kind == "storage.k8s.io/CSIStorageCapacity":
        causes += validation.csi_storage_capacity_update(old, new)
    _raise(rt, old["metadata"]["name"], causes)


def check_update(rt: ResourceType, old: Obj, new: Obj) -> None:
    """Reject updates kube-apiserver's validation would refuse."""
    # An update body is defaulted on decoding like a create body.
    _default_storage(rt, new)
    _default_resource(rt, new, old)
    if rt.group == workloads.GROUP and rt.kind == "Workload":
        workloads.prepare_workload(new)
    elif rt.group == workloads.GROUP and rt.kind == "PodGroup":
        workloads.prepare_pod_group(new, old)
    if rt.group or rt.kind != "Pod":
        return
    old_spec, new_spec = dict(old.get("spec") or {}), dict(new.get("spec") or {})
    for spec in (old_spec, new_spec):
        for key in _MUTABLE_POD_SPEC:
            spec.pop(key, None)
        for ckey in ("containers", "initContainers"):
            if isinstance(spec.get(ckey), list):
                spec[ckey] = [
                    {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                    for c in spec[ckey]
                ]
    if old_spec != new_spec:
        raise statuserrors.invalid(
            rt.group,
            rt.kind,
            old["metadata"]["name"],
            [
                (
                    "spec",
                    "FieldValueForbidden",
                    "Forbidden: pod updates may not change fields other than "
                    "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                    "`spec.activeDeadlineSeconds`,`spec.tolerations` "
                    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                    "(allow it to be set to 1 if it was previously negative)",
                )
            ],
        )


def spec_changed(old: Obj, new: Obj) -> bool:
    """Whether anything besides metadata and status changed (bumps generation)."""
    keys = (set(old) | set(new)) - {"metadata", "status", "kind", "apiVersion"}
    return any(old.get(k) != new.get(k) for k in keys)
