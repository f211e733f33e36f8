"""The subset of kube-apiserver's object validation a scheduler's inputs depend on.

Metadata (names, labels, annotations) for every kind; for pods what
``ValidatePodCreate``/``ValidatePodUpdate`` check about containers, resources,
tolerations, node selection, topology spread and scheduling gates; for nodes
taints and capacity/allocatable; priority classes. Field paths, cause
reasons and messages are the apiserver's (``pkg/apis/core/validation``), so a
client sees the same 422 from both.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from scheduler.model.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from scheduler.simulation.emulator import quantity

Obj = dict[str, Any]
Cause = tuple[str, str, str]

PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)
TOTAL_ANNOTATION_SIZE = 256 * 1024
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES = _STANDARD_CONTAINER_RESOURCES | frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)


def show(value: Any) -> str:
    """A value as field.Invalid prints it: strings quoted, numbers bare."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def invalid(path: str, value: Any, why: str) -> Cause:
    return (path, "FieldValueInvalid", f"Invalid value: {show(value)}: {why}")


def required(path: str, why: str = "") -> Cause:
    return (path, "FieldValueRequired", "Required value" + (f": {why}" if why else ""))


def forbidden(path: str, why: str) -> Cause:
    return (path, "FieldValueForbidden", f"Forbidden: {why}")


def not_supported(path: str, value: Any, supported: tuple[str, ...]) -> Cause:
    values = ", ".join(f'"{v}"' for v in supported)
    return (
        path,
        "FieldValueNotSupported",
        f"Unsupported value: {show(value)}: supported values: {values}",
    )


def duplicate(path: str, value: Any, why: str = "") -> Cause:
    return (path, "FieldValueDuplicate", f"Duplicate value: {show(value)}" + why)


# -- names ----------------------------------------------------------------------


def label_causes(values: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key, value in (values or {}).items():
        causes += [invalid(path, key, msg) for msg in qualified_name_errors(key)]
        causes += [invalid(path, value, msg) for msg in label_value_errors(str(value))]
    return causes


def annotation_causes(values: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    total = 0
    for key, value in (values or {}).items():
        causes += [invalid(path, key, msg) for msg in qualified_name_errors(key.lower())]
        total += len(key.encode()) + len(str(value).encode())
    if total > TOTAL_ANNOTATION_SIZE:
        causes.append(
            (
                path,
                "FieldValueTooLong",
                f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes",
            )
        )
    return causes


def object_meta(meta: Obj) -> list[Cause]:
    """ValidateObjectMeta's labels and annotations (names: ``strategy.name_causes``)."""
    return label_causes(meta.get("labels"), "metadata.labels") + annotation_causes(
        meta.get("annotations"), "metadata.annotations"
    )


# -- resources ------------------------------------------------------------------


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or not _native(name)


def _resource_name(name: str, path: str, *, container: bool) -> list[Cause]:
    causes = [invalid(path, name, msg) for msg in qualified_name_errors(name)]
    if causes:
        return causes
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not _hugepages(name):
            causes.append(
                invalid(path, name, "must be a standard resource type or fully qualified")
            )
        if container and name not in _STANDARD_CONTAINER_RESOURCES and not _hugepages(name):
            causes.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _native(name) and name.startswith("requests."):
        causes.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return causes


def _quantity_value(name: str, raw: Any, path: str) -> list[Cause]:
    q = quantity.from_json(raw)
    causes = []
    if q.value < 0:
        causes.append(invalid(path, str(q), "must be greater than or equal to 0"))
    if _integer_resource(name) and q.milli % 1000 != 0:
        causes.append(invalid(path, str(q), "must be an integer"))
    return causes


def container_resources(resources: Any, path: str) -> list[Cause]:
    """ValidateContainerResourceRequirements."""
    if not isinstance(resources, dict):
        return []
    causes: list[Cause] = []
    limits: Obj = resources.get("limits") or {}
    requests: Obj = resources.get("requests") or {}
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    cpu_mem = huge = False
    for name, raw in limits.items():
        where = f"{lim_path}[{name}]"
        causes += _resource_name(name, where, container=True)
        causes += _quantity_value(name, raw, where)
        huge = huge or _hugepages(name)
        cpu_mem = cpu_mem or name in ("cpu", "memory")
    for name, raw in requests.items():
        where = f"{req_path}[{name}]"
        causes += _resource_name(name, where, container=True)
        causes += _quantity_value(name, raw, where)
        request = quantity.from_json(raw)
        overcommit = _native(name) and not _hugepages(name)
        if name in limits:
            limit = quantity.from_json(limits[name])
            if request.value != limit.value and not overcommit:
                causes.append(
                    invalid(req_path, str(request), f"must be equal to {name} limit of {limit}")
                )
            elif request.value > limit.value:
                causes.append(
                    invalid(
                        req_path,
                        str(request),
                        f"must be less than or equal to {name} limit of {limit}",
                    )
                )
        elif not overcommit:
            causes.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        huge = huge or _hugepages(name)
        cpu_mem = cpu_mem or name in ("cpu", "memory")
    if huge and not cpu_mem:
        causes.append(forbidden(path, "HugePages require cpu or memory"))
    return causes


# -- pods -----------------------------------------------------------------------


def _containers(spec: Obj, key: str, names: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    for i, container in enumerate(spec.get(key) or []):
        path = f"spec.{key}[{i}]"
        if not isinstance(container, dict):
            continue
        cname = container.get("name") or ""
        if not cname:
            causes.append(required(f"{path}.name"))
        elif names_errors := dns1123_label_errors(cname):
            causes += [invalid(f"{path}.name", cname, m) for m in names_errors]
        elif cname in names:
            causes.append(duplicate(f"{path}.name", cname))
        names.add(cname)
        if not container.get("image"):
            causes.append(required(f"{path}.image"))
        causes += container_resources(container.get("resources"), f"{path}.resources")
    return causes


def tolerations(values: Any, path: str) -> list[Cause]:
    """ValidateTolerations."""
    causes: list[Cause] = []
    for i, tol in enumerate(values or []):
        if not isinstance(tol, dict):
            continue
        where = f"{path}[{i}]"
        key = tol.get("key") or ""
        op = tol.get("operator") or ""
        value = tol.get("value") or ""
        effect = tol.get("effect") or ""
        if key:
            causes += [invalid(f"{where}.key", key, m) for m in qualified_name_errors(key)]
        if not key and op != "Exists":
            causes.append(
                invalid(
                    f"{where}.operator",
                    op,
                    'operator must be Exists when `key` is empty, which means "match all '
                    'values and all keys"',
                )
            )
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(
                invalid(
                    f"{where}.effect",
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if op in ("Equal", ""):
            errs = label_value_errors(value)
            if errs:
                causes.append(invalid(f"{where}.operator", value, ";".join(errs)))
        elif op == "Exists":
            if value:
                causes.append(
                    invalid(
                        f"{where}.operator",
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            causes.append(not_supported(f"{where}.operator", op, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            causes.append(not_supported(f"{where}.effect", effect, TAINT_EFFECTS))
    return causes


def _node_selector_requirements(values: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, req in enumerate(values or []):
        if not isinstance(req, dict):
            continue
        where = f"{path}[{i}]"
        op = req.get("operator") or ""
        vals = req.get("values") or []
        if op in ("In", "NotIn"):
            if not vals:
                causes.append(
                    required(
                        f"{where}.values",
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if vals:
                causes.append(
                    forbidden(
                        f"{where}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        elif op in ("Gt", "Lt"):
            if len(vals) != 1:
                causes.append(
                    required(
                        f"{where}.values",
                        "must be specified single value when `operator` is 'Lt' or 'Gt'",
                    )
                )
        else:
            causes.append(invalid(f"{where}.operator", op, "not a valid selector operator"))
        key = req.get("key") or ""
        causes += [invalid(f"{where}.key", key, m) for m in qualified_name_errors(key)]
    return causes


def _affinity(affinity: Any) -> list[Cause]:
    if not isinstance(affinity, dict):
        return []
    causes: list[Cause] = []
    node = affinity.get("nodeAffinity") or {}
    base = "spec.affinity.nodeAffinity"
    req = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(req, dict):
        rpath = f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
        terms = req.get("nodeSelectorTerms") or []
        if not terms:
            causes.append(
                required(f"{rpath}.nodeSelectorTerms", "must have at least one node selector term")
            )
        for i, term in enumerate(terms):
            if isinstance(term, dict):
                causes += _node_selector_requirements(
                    term.get("matchExpressions"), f"{rpath}.nodeSelectorTerms[{i}].matchExpressions"
                )
    for i, pref in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        if not isinstance(pref, dict):
            continue
        ppath = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        weight = pref.get("weight") or 0
        if not 1 <= weight <= 100:
            causes.append(invalid(f"{ppath}.weight", weight, "must be in the range 1-100"))
        term = pref.get("preference") or {}
        causes += _node_selector_requirements(
            term.get("matchExpressions"), f"{ppath}.preference.matchExpressions"
        )
    return causes


def _topology_spread(values: Any) -> list[Cause]:
    causes: list[Cause] = []
    for i, tsc in enumerate(values or []):
        if not isinstance(tsc, dict):
            continue
        where = f"spec.topologySpreadConstraints[{i}]"
        skew = tsc.get("maxSkew") or 0
        if skew <= 0:
            causes.append(invalid(f"{where}.maxSkew", skew, "must be greater than zero"))
        if not tsc.get("topologyKey"):
            causes.append(required(f"{where}.topologyKey", "can not be empty"))
        when = tsc.get("whenUnsatisfiable") or ""
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            causes.append(
                not_supported(
                    f"{where}.whenUnsatisfiable", when, ("DoNotSchedule", "ScheduleAnyway")
                )
            )
    return causes


def pod_spec(spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        causes.append(required("spec.containers"))
    names: set[str] = set()
    causes += _containers(spec, "containers", names)
    causes += _containers(spec, "initContainers", names)
    restart = spec.get("restartPolicy") or ""
    if restart not in ("Always", "OnFailure", "Never"):
        causes.append(
            not_supported("spec.restartPolicy", restart, ("Always", "OnFailure", "Never"))
        )
    dns = spec.get("dnsPolicy") or ""
    dns_policies = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
    if dns not in dns_policies:
        causes.append(not_supported("spec.dnsPolicy", dns, dns_policies))
    causes += label_causes(spec.get("nodeSelector"), "spec.nodeSelector")
    node = spec.get("nodeName") or ""
    if node:
        causes += [invalid("spec.nodeName", node, m) for m in dns1123_subdomain_errors(node)]
    causes += _affinity(spec.get("affinity"))
    causes += tolerations(spec.get("tolerations"), "spec.tolerations")
    causes += _topology_spread(spec.get("topologySpreadConstraints"))
    gates: set[str] = set()
    for i, gate in enumerate(spec.get("schedulingGates") or []):
        name = (gate or {}).get("name") or ""
        causes += [
            invalid(f"spec.schedulingGates[{i}]", name, m) for m in qualified_name_errors(name)
        ]
        if name in gates:
            causes.append(duplicate(f"spec.schedulingGates[{i}]", name))
        gates.add(name)
    causes += _ephemeral_volumes(spec.get("volumes"))
    for name, raw in (spec.get("overhead") or {}).items():
        where = f"spec.overhead[{name}]"
        causes += _resource_name(name, where, container=False)
        causes += _quantity_value(name, raw, where)
    return causes


def _ephemeral_volumes(volumes: Any) -> list[Cause]:
    """validateEphemeralVolumeSource: the claim template the PV controller will create
    is validated with the pod, so a bad template is refused up front."""
    causes: list[Cause] = []
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        ephemeral = volume.get("ephemeral") if isinstance(volume, dict) else None
        if not isinstance(ephemeral, dict):
            continue
        path = f"spec.volumes[{i}].ephemeral.volumeClaimTemplate"
        template = ephemeral.get("volumeClaimTemplate")
        if not isinstance(template, dict):
            causes.append(required(path))
            continue
        meta = _mapping(template.get("metadata"))
        causes += annotation_causes(meta.get("annotations"), f"{path}.metadata.annotations")
        causes += label_causes(meta.get("labels"), f"{path}.metadata.labels")
        causes += persistent_volume_claim_spec(template.get("spec"), f"{path}.spec")
    return causes


def pod_status(status: Any) -> list[Cause]:
    if not isinstance(status, dict):
        return []
    causes: list[Cause] = []
    nominated = status.get("nominatedNodeName") or ""
    if nominated:
        causes += [
            invalid("status.nominatedNodeName", nominated, m)
            for m in dns1123_subdomain_errors(nominated)
        ]
    for i, condition in enumerate(status.get("conditions") or []):
        if isinstance(condition, dict):
            kind = condition.get("type") or ""
            # The apiserver names this field with the Go name.
            causes += [
                invalid(f"status.conditions[{i}].Type", kind, m)
                for m in qualified_name_errors(kind)
            ]
    return causes


# -- other kinds the scheduler reads or writes ----------------------------------


def label_selector(selector: Any, path: str) -> list[Cause]:
    if not isinstance(selector, dict):
        return []
    causes = label_causes(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, req in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(req, dict):
            continue
        where = f"{path}.matchExpressions[{i}]"
        op = req.get("operator") or ""
        values = req.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                causes.append(
                    required(
                        f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                causes.append(
                    forbidden(
                        f"{where}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            causes.append(invalid(f"{where}.operator", op, "not a valid selector operator"))
        key = req.get("key") or ""
        causes += [invalid(f"{where}.key", key, m) for m in qualified_name_errors(key)]
        for j, value in enumerate(values):
            causes += [
                invalid(f"{where}.values[{j}]", value, m) for m in label_value_errors(str(value))
            ]
    return causes


def _int_or_percent(value: Any, path: str) -> list[Cause]:
    if isinstance(value, int):
        if value < 0:
            return [invalid(path, value, "must be greater than or equal to 0")]
        return []
    if isinstance(value, str):
        match = re.fullmatch(r"([0-9]+)%", value)
        if match is None:
            return [invalid(path, value, PERCENT_MSG)]
        if int(match.group(1)) > 100:
            return [invalid(path, value, "must not be greater than 100%")]
    return []


def pod_disruption_budget(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        shown = json.dumps(
            {
                "MinAvailable": min_available,
                "Selector": spec.get("selector"),
                "MaxUnavailable": max_unavailable,
                "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy"),
            },
            separators=(",", ":"),
        )
        causes.append(
            (
                "spec",
                "FieldValueInvalid",
                f"Invalid value: {shown}: minAvailable and maxUnavailable cannot be both set",
            )
        )
    if min_available is not None:
        causes += _int_or_percent(min_available, "spec.minAvailable")
    if max_unavailable is not None:
        causes += _int_or_percent(max_unavailable, "spec.maxUnavailable")
    causes += label_selector(spec.get("selector"), "spec.selector")
    return causes


def lease(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        return [invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")]
    return []


def core_event(obj: Obj) -> list[Cause]:
    """ValidateEventCreate for core/v1 Events (the stored form of both groups)."""
    causes: list[Cause] = []
    namespace = obj["metadata"].get("namespace") or ""
    involved = obj.get("involvedObject") or {}
    involved_ns = involved.get("namespace") or ""
    if involved_ns and involved_ns != namespace:
        causes.append(
            invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
        )
    return causes


def events_v1_event(obj: Obj) -> list[Cause]:
    """What events.k8s.io/v1 requires beyond core/v1 (served form)."""
    causes: list[Cause] = []
    if not obj.get("eventTime"):
        causes.append(required("eventTime"))
    controller = obj.get("reportingController") or ""
    if not controller:
        causes.append(required("reportingController"))
    causes += [
        invalid("reportingController", controller, m) for m in qualified_name_errors(controller)
    ]
    return causes


# -- nodes ----------------------------------------------------------------------


def node(obj: Obj) -> list[Cause]:
    """ValidateNode: taints (reported under ``metadata.taints``, as the apiserver does)
    and capacity/allocatable."""
    causes: list[Cause] = []
    spec = obj.get("spec") or {}
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.get("taints") or []):
        if not isinstance(taint, dict):
            continue
        where = f"metadata.taints[{i}]"
        key = taint.get("key") or ""
        value = taint.get("value") or ""
        effect = taint.get("effect") or ""
        causes += [invalid(f"{where}.key", key, m) for m in qualified_name_errors(key)]
        for msg in label_value_errors(value):
            causes.append(invalid(f"{where}.value", value, msg))
        if not effect:
            causes.append(required(f"{where}.effect"))
        elif effect not in TAINT_EFFECTS:
            causes.append(not_supported(f"{where}.effect", effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            shown = json.dumps(
                {"Key": key, "Value": value, "Effect": effect, "TimeAdded": taint.get("timeAdded")},
                separators=(",", ":"),
            )
            causes.append(
                (
                    where,
                    "FieldValueDuplicate",
                    f"Duplicate value: {shown}: taints must be unique by key and effect pair",
                )
            )
        seen.add((key, effect))
    status = obj.get("status") or {}
    for section in ("capacity", "allocatable"):
        for name, raw in (status.get(section) or {}).items():
            where = f"status.{section}.{name}"
            causes += _resource_name(name, where, container=False)
            causes += _quantity_value(name, raw, where)
    return causes


# -- priority classes -----------------------------------------------------------


def priority_class(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    name = obj["metadata"].get("name") or ""
    value = obj.get("value") or 0
    if name.startswith("system-") and name not in SYSTEM_PRIORITY_CLASSES:
        causes.append(
            forbidden(
                "metadata.name",
                "priority class names with 'system-' prefix are reserved for system use only. "
                f"error: {name} is not a known system priority class",
            )
        )
    elif name in SYSTEM_PRIORITY_CLASSES:
        if value != SYSTEM_PRIORITY_CLASSES[name]:
            causes.append(
                forbidden(
                    "metadata.name",
                    f"priority class names with 'system-' prefix are reserved for system use "
                    f"only. error: value of {name} PriorityClass must be "
                    f"{SYSTEM_PRIORITY_CLASSES[name]}",
                )
            )
    elif value > MAX_USER_PRIORITY:
        causes.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {MAX_USER_PRIORITY}",
            )
        )
    policy = obj.get("preemptionPolicy")
    if policy not in (None, "PreemptLowerPriority", "Never"):
        causes.append(not_supported("preemptionPolicy", policy, ("PreemptLowerPriority", "Never")))
    return causes


def priority_class_update(old: Obj, new: Obj) -> list[Cause]:
    causes = priority_class(new)
    if old.get("value") != new.get("value"):
        causes.append(forbidden("value", "may not be changed in an update."))
    if old.get("preemptionPolicy") != new.get("preemptionPolicy"):
        causes.append(forbidden("preemptionPolicy", "may not be changed in an update."))
    return causes


# -- storage: what VolumeBinding, VolumeZone, NodeVolumeLimits read --------------
#
# pkg/apis/core/validation (PersistentVolume, PersistentVolumeClaim) and
# pkg/apis/storage/validation (StorageClass, CSINode, CSIDriver, CSIStorageCapacity),
# limited to the fields a scheduler's volume plugins and the emulated PV controller
# depend on. kube's sets.List sorts, so the supported values below are sorted too.

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
PV_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM_POLICIES = ("Delete", "Retain")
VOLUME_MODES = ("Block", "Filesystem")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Persistent", "Ephemeral")
# ValidatePersistentVolumeSpec's volume sources, in its order: (JSON key, path kube
# reports "may not specify more than 1 volume type" under).
PV_SOURCES = (
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", ""),  # kube counts it without the "more than 1" check
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
)
CSI_NODE_ID_MAX = 256  # the CSINode strategy validates with AllowLongNodeID
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * 1024


def _mapping(value: Any) -> Obj:
    """``value`` if it is a JSON object, else empty (decoding already refused bad types)."""
    return value if isinstance(value, dict) else {}


def _too_long(path: str, limit: int) -> Cause:
    return (path, "FieldValueTooLong", f"Too long: may not be more than {limit} bytes")


def _immutable(path: str, value: Any) -> Cause:
    """ValidateImmutableField's error."""
    return invalid(path, value, "field is immutable")


def _access_modes(modes: Any, path: str, required_why: str) -> list[Cause]:
    causes: list[Cause] = []
    modes = modes if isinstance(modes, list) else []
    if not modes:
        causes.append(required(path, required_why))
    rwop = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            causes.append(not_supported(path, mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            rwop = True
        else:
            other = True
    if rwop and other:
        causes.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return causes


def _class_name(name: str, path: str) -> list[Cause]:
    """ValidateClassName: a DNS subdomain."""
    return [invalid(path, name, msg) for msg in dns1123_subdomain_errors(name)]


def csi_driver_name(name: str, path: str) -> list[Cause]:
    """ValidateCSIDriverName (PV ``csi.driver``, CSINode ``drivers[].name``)."""
    causes: list[Cause] = []
    if not name:
        causes.append(required(path))
    if len(name) > 63:
        causes.append(_too_long(path, 63))
    causes += [invalid(path, name, msg) for msg in dns1123_subdomain_errors(name.lower())]
    return causes


def node_selector(selector: Any, path: str) -> list[Cause]:
    """ValidateNodeSelector: at least one term, each requirement valid."""
    terms = selector.get("nodeSelectorTerms") if isinstance(selector, dict) else None
    if not terms:
        return [required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    causes: list[Cause] = []
    for i, term in enumerate(terms):
        if isinstance(term, dict):
            causes += _node_selector_requirements(
                term.get("matchExpressions"), f"{path}.nodeSelectorTerms[{i}].matchExpressions"
            )
    return causes


def _pv_source(key: str, source: Obj, path: str) -> list[Cause]:
    """The per-source checks for the sources an emulated cluster uses."""
    causes: list[Cause] = []
    if key in ("hostPath", "local") and not source.get("path"):
        causes.append(required(f"{path}.path"))
    elif key == "nfs":
        if not source.get("server"):
            causes.append(required(f"{path}.server"))
        nfs_path = source.get("path") or ""
        if not nfs_path:
            causes.append(required(f"{path}.path"))
        elif not nfs_path.startswith("/"):
            causes.append(invalid(f"{path}.path", nfs_path, "must be an absolute path"))
    elif key == "csi":
        causes += csi_driver_name(source.get("driver") or "", f"{path}.driver")
        if not source.get("volumeHandle"):
            causes.append(required(f"{path}.volumeHandle"))
    return causes


def _storage_quantity(raw: Any) -> quantity.Quantity | None:
    """A quantity already decoded by the schema; None if absent or (lax mode) unparsable."""
    try:
        return quantity.from_json(raw)
    except quantity.QuantityError:
        return None


def persistent_volume(obj: Obj) -> list[Cause]:
    """ValidatePersistentVolumeSpec for a (non-inline) PersistentVolume."""
    spec = _mapping(obj.get("spec"))
    causes = _access_modes(spec.get("accessModes"), "spec.accessModes", "")
    capacity = _mapping(spec.get("capacity"))
    if not capacity:
        causes.append(required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        causes.append(not_supported("spec.capacity", capacity, ("storage",)))
    for name, raw in capacity.items():
        where = f"spec.capacity[{name}]"
        q = _storage_quantity(raw)
        if q is None:
            continue
        if q.value < 0:
            # validateBasicResource reports Quantity.Value(), an integer.
            whole = -math.ceil(-q.value)  # rounded away from zero, as Value() does
            causes.append(invalid(where, whole, "must be a valid resource quantity"))
        if q.value <= 0:
            causes.append(invalid(where, str(q), "must be greater than zero"))
    policy = spec.get("persistentVolumeReclaimPolicy") or ""
    if policy and policy not in PV_RECLAIM_POLICIES:
        causes.append(
            not_supported("spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM_POLICIES)
        )
    affinity_given = False
    affinity = spec.get("nodeAffinity")
    if isinstance(affinity, dict):
        affinity_given = True
        if isinstance(affinity.get("required"), dict):
            causes += node_selector(affinity["required"], "spec.nodeAffinity.required")
        else:
            causes.append(
                required("spec.nodeAffinity.required", "must specify required node constraints")
            )
    sources = 0
    for key, forbidden_path in PV_SOURCES:
        source = spec.get(key)
        if not isinstance(source, dict):
            continue
        if sources and forbidden_path:
            why = "may not specify more than 1 volume type"
            causes.append(forbidden(f"spec.{forbidden_path}", why))
            continue
        sources += 1
        causes += _pv_source(key, source, f"spec.{key}")
        if key == "local" and not affinity_given:
            causes.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    if not sources:
        causes.append(required("spec", "must specify a volume type"))
    class_name = spec.get("storageClassName") or ""
    if class_name:
        causes += _class_name(class_name, "spec.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.append(not_supported("spec.volumeMode", mode, VOLUME_MODES))
    return causes


def persistent_volume_update(old: Obj, new: Obj) -> list[Cause]:
    """ValidatePersistentVolumeUpdate: the volume source and volumeMode are immutable.

    kube appends a go-cmp diff of the sources to the message; the emulator names
    the field and says why, without the diff.
    """
    causes = persistent_volume(new)
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    keys = [key for key, _ in PV_SOURCES]
    if {k: old_spec.get(k) for k in keys} != {k: new_spec.get(k) for k in keys}:
        causes.append(
            forbidden(
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation",
            )
        )
    if old_spec.get("volumeMode") != new_spec.get("volumeMode"):
        causes.append(_immutable("volumeMode", new_spec.get("volumeMode")))
    return causes


def persistent_volume_claim_spec(spec: Any, path: str) -> list[Cause]:
    """ValidatePersistentVolumeClaimSpec (claims and ephemeral volume templates)."""
    spec = spec if isinstance(spec, dict) else {}
    causes = _access_modes(
        spec.get("accessModes"), f"{path}.accessModes", "at least 1 access mode is required"
    )
    if isinstance(spec.get("selector"), dict):
        causes += label_selector(spec["selector"], f"{path}.selector")
    resources = _mapping(spec.get("resources"))
    requests = _mapping(resources.get("requests"))
    where = f"{path}.resources[storage]"
    if "storage" not in requests:
        causes.append(required(where))
    else:
        q = _storage_quantity(requests["storage"])
        if q is not None and q.value <= 0:
            causes.append(invalid(where, str(q), "must be greater than zero"))
    class_name = spec.get("storageClassName") or ""
    if class_name:
        causes += _class_name(class_name, f"{path}.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.append(not_supported(f"{path}.volumeMode", mode, VOLUME_MODES))
    return causes


def persistent_volume_claim(obj: Obj) -> list[Cause]:
    return persistent_volume_claim_spec(obj.get("spec"), "spec")


_BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def persistent_volume_claim_update(old: Obj, new: Obj) -> list[Cause]:
    """ValidatePersistentVolumeClaimUpdate.

    The spec is immutable except: ``volumeName`` may be set once while empty (the
    PV controller binds that way), ``storageClassName`` may go from unset to set,
    and a bound claim's ``resources.requests.storage`` may grow. kube appends a
    go-cmp diff to the "spec is immutable" message; the emulator leaves it out.
    """
    causes = persistent_volume_claim(new)
    old_spec = dict(old.get("spec") or {})
    new_spec = dict(new.get("spec") or {})
    if not old_spec.get("volumeName"):
        old_spec.pop("volumeName", None)
        new_spec.pop("volumeName", None)
    old_annotations = old["metadata"].get("annotations") or {}
    if (
        old_spec.get("storageClassName") is None
        and new_spec.get("storageClassName") is not None
        and (
            _BETA_CLASS_ANNOTATION not in old_annotations
            or old_annotations[_BETA_CLASS_ANNOTATION] == new_spec["storageClassName"]
        )
    ):
        new_spec.pop("storageClassName")
    old_size = new_size = None
    old_requests = (old_spec.get("resources") or {}).get("requests") or {}
    new_requests = (new_spec.get("resources") or {}).get("requests") or {}
    if "storage" in old_requests:
        old_size = _storage_quantity(old_requests["storage"])
    if "storage" in new_requests:
        new_size = _storage_quantity(new_requests["storage"])
    if (new.get("status") or {}).get("phase") == "Bound" and new_spec.get("resources"):
        resources = dict(new_spec["resources"])
        requests = dict(resources.get("requests") or {})
        if "storage" in old_requests:
            requests["storage"] = old_requests["storage"]
        else:
            requests.pop("storage", None)
        resources["requests"] = requests
        new_spec["resources"] = resources
    for spec in (old_spec, new_spec):
        spec.pop("volumeAttributesClassName", None)
    if old_spec != new_spec:
        causes.append(
            forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims",
            )
        )
    if old_size is not None and new_size is not None and new_size.value < old_size.value:
        # RecoverVolumeExpansionFailure (on by default): shrinking is allowed down to,
        # but not including, the capacity in status.
        status_raw = ((old.get("status") or {}).get("capacity") or {}).get("storage")
        status_size = _storage_quantity(status_raw) if status_raw is not None else None
        floor = status_size.value if status_size is not None else 0
        if new_size.value <= floor:
            causes.append(
                forbidden(
                    "spec.resources.requests.storage", "field can not be less than status.capacity"
                )
            )
    if old_spec.get("volumeMode") != new_spec.get("volumeMode"):
        causes.append(_immutable("volumeMode", (new.get("spec") or {}).get("volumeMode")))
    return causes


def _allowed_topologies(terms: Any) -> list[Cause]:
    causes: list[Cause] = []
    seen: list[dict[str, set[str]]] = []
    for i, term in enumerate(terms if isinstance(terms, list) else []):
        if not isinstance(term, dict):
            continue
        exprs_path = f"allowedTopologies[{i}].matchLabelExpressions"
        keys: dict[str, set[str]] = {}
        for j, req in enumerate(term.get("matchLabelExpressions") or []):
            if not isinstance(req, dict):
                continue
            where = f"{exprs_path}[{j}]"
            values = req.get("values") or []
            if not values:
                causes.append(required(f"{where}.values"))
            value_set: set[str] = set()
            for k, value in enumerate(values):
                if value in value_set:
                    causes.append(duplicate(f"{where}.values[{k}]", value))
                value_set.add(value)
            key = req.get("key") or ""
            causes += [invalid(f"{where}.key", key, m) for m in qualified_name_errors(key)]
            if key in keys:
                causes.append(duplicate(f"{where}.key", key))
            keys[key] = value_set
        if keys in seen:
            causes.append(duplicate(exprs_path, ""))
        seen.append(keys)
    return causes


def storage_class(obj: Obj) -> list[Cause]:
    """ValidateStorageClass."""
    causes: list[Cause] = []
    provisioner = obj.get("provisioner") or ""
    if not provisioner:
        causes.append(required("provisioner"))
    else:
        lowered = provisioner.lower()
        causes += [invalid("provisioner", lowered, m) for m in qualified_name_errors(lowered)]
    params = _mapping(obj.get("parameters"))
    if len(params) > MAX_PARAMETERS:
        causes.append(_too_long("parameters", MAX_PARAMETERS))
    else:
        size = 0
        for key, value in params.items():
            if not key:
                causes.append(invalid("parameters", key, "field can not be empty."))
            size += len(key) + len(str(value))
        if size > MAX_PARAMETERS_SIZE:
            causes.append(_too_long("parameters", MAX_PARAMETERS_SIZE))
    policy = obj.get("reclaimPolicy") or ""
    if policy and policy not in CLASS_RECLAIM_POLICIES:
        causes.append(not_supported("reclaimPolicy", policy, CLASS_RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        causes.append(required("volumeBindingMode"))
    elif mode not in BINDING_MODES:
        causes.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    causes += _allowed_topologies(obj.get("allowedTopologies"))
    return causes


def storage_class_update(old: Obj, new: Obj) -> list[Cause]:
    """ValidateStorageClassUpdate: kube 1.36 checks the four fields as immutable fields."""
    causes: list[Cause] = []
    if (old.get("parameters") or {}) != (new.get("parameters") or {}):
        causes.append(_immutable("parameters", new.get("parameters")))
    if old.get("provisioner") != new.get("provisioner"):
        causes.append(_immutable("provisioner", new.get("provisioner")))
    if old.get("reclaimPolicy") != new.get("reclaimPolicy"):
        causes.append(_immutable("reclaimPolicy", new.get("reclaimPolicy")))
    if old.get("volumeBindingMode") != new.get("volumeBindingMode"):
        causes.append(_immutable("volumeBindingMode", new.get("volumeBindingMode")))
    return causes


def csi_node(obj: Obj) -> list[Cause]:
    """ValidateCSINode: driver names, node IDs, allocatable counts, topology keys."""
    causes: list[Cause] = []
    spec = _mapping(obj.get("spec"))
    names: set[str] = set()
    for i, driver in enumerate(spec.get("drivers") or []):
        if not isinstance(driver, dict):
            continue
        where = f"spec.drivers[{i}]"
        name = driver.get("name") or ""
        causes += csi_driver_name(name, f"{where}.name")
        node_id = driver.get("nodeID") or ""
        if not node_id:
            causes.append(required(f"{where}.nodeID"))
        if len(node_id) > CSI_NODE_ID_MAX:
            causes.append(
                invalid(f"{where}.nodeID", node_id, f"must be {CSI_NODE_ID_MAX} characters or less")
            )
        count = (driver.get("allocatable") or {}).get("count")
        if isinstance(count, int) and count < 0:
            causes.append(
                invalid(f"{where}.allocatable.count", count, "must be greater than or equal to 0")
            )
        if name in names:
            causes.append(duplicate(f"{where}.name", name))
        names.add(name)
        keys: set[str] = set()
        for key in driver.get("topologyKeys") or []:
            if not key:
                causes.append(required(where))
            if key in keys:
                causes.append(duplicate(where, key))
            keys.add(key)
            causes += [invalid(where, key, m) for m in qualified_name_errors(key)]
    return causes


def csi_driver(obj: Obj) -> list[Cause]:
    """validateCSIDriverSpec (kube's field path for attachRequired is ``attachedRequired``)."""
    causes: list[Cause] = []
    spec = _mapping(obj.get("spec"))
    for key, path in (
        ("attachRequired", "spec.attachedRequired"),
        ("podInfoOnMount", "spec.podInfoOnMount"),
        ("storageCapacity", "spec.storageCapacity"),
    ):
        if spec.get(key) is None:
            causes.append(required(path))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        causes.append(not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES))
    for mode in spec.get("volumeLifecycleModes") or []:
        if mode not in LIFECYCLE_MODES:
            causes.append(not_supported("spec.volumeLifecycleModes", mode, LIFECYCLE_MODES))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if isinstance(period, int) and period < 10:
        causes.append(
            invalid(
                "spec.nodeAllocatableUpdatePeriodSeconds",
                period,
                "must be greater than or equal to 10 seconds",
            )
        )
    return causes


def csi_driver_update(old: Obj, new: Obj) -> list[Cause]:
    causes = csi_driver(new)
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_spec.get("attachRequired") != new_spec.get("attachRequired"):
        causes.append(_immutable("spec.attachedRequired", new_spec.get("attachRequired")))
    if old_spec.get("volumeLifecycleModes") != new_spec.get("volumeLifecycleModes"):
        causes.append(_immutable("spec.volumeLifecycleModes", new_spec.get("volumeLifecycleModes")))
    return causes


def csi_storage_capacity(obj: Obj) -> list[Cause]:
    """ValidateCSIStorageCapacity: an unset storageClassName fails the name check."""
    causes = label_selector(obj.get("nodeTopology"), "nodeTopology")
    causes += _class_name(obj.get("storageClassName") or "", "storageClassName")
    if obj.get("capacity") is not None:
        q = _storage_quantity(obj["capacity"])
        if q is not None and q.value < 0:
            causes.append(invalid("capacity", str(q), "must be greater than or equal to 0"))
    return causes


def csi_storage_capacity_update(old: Obj, new: Obj) -> list[Cause]:
    causes: list[Cause] = []
    if old.get("nodeTopology") != new.get("nodeTopology"):
        causes.append(_immutable("nodeTopology", new.get("nodeTopology")))
    if old.get("storageClassName") != new.get("storageClassName"):
        causes.append(_immutable("storageClassName", new.get("storageClassName") or ""))
    return causes
