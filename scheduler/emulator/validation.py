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
import re
from typing import Any

from scheduler.emulator import quantity

Obj = dict[str, Any]
Cause = tuple[str, str, str]

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
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


def dns_subdomain_errors(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append("must be no more than 253 characters")
    if not _DNS_SUBDOMAIN.match(value):
        out.append(SUBDOMAIN_MSG)
    return out


def dns_label_errors(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _DNS_LABEL.match(value):
        out.append(LABEL_MSG)
    return out


def qualified_name_errors(value: str) -> list[str]:
    """``validation.IsQualifiedName``: an optional DNS subdomain prefix and a name part."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        prefix_errors: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            prefix_errors = ["prefix part must be non-empty"]
        else:
            prefix_errors = [f"prefix part {msg}" for msg in dns_subdomain_errors(prefix)]
    else:
        return [
            "a qualified name "
            + QUALIFIED_NAME_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    out = list(prefix_errors)
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 bytes")
    if not _QUALIFIED_NAME.match(name):
        out.append(f"name part {QUALIFIED_NAME_MSG}")
    return out


def label_value_errors(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 bytes")
    if not _LABEL_VALUE.match(value):
        out.append(LABEL_VALUE_MSG)
    return out


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
        elif names_errors := dns_label_errors(cname):
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
        causes += [invalid("spec.nodeName", node, m) for m in dns_subdomain_errors(node)]
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
    for name, raw in (spec.get("overhead") or {}).items():
        where = f"spec.overhead[{name}]"
        causes += _resource_name(name, where, container=False)
        causes += _quantity_value(name, raw, where)
    return causes


def pod_status(status: Any) -> list[Cause]:
    if not isinstance(status, dict):
        return []
    causes: list[Cause] = []
    nominated = status.get("nominatedNodeName") or ""
    if nominated:
        causes += [
            invalid("status.nominatedNodeName", nominated, m)
            for m in dns_subdomain_errors(nominated)
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
