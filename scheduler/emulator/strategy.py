"""Per-kind create/update rules that kube-apiserver's registry strategies apply.

Clients observe these (a created pod is Pending with defaults filled in, its
status cannot be set on create, its spec is mostly immutable), so the
scheduler under test must see them here exactly as on a real cluster.
"""

from __future__ import annotations

import re
from typing import Any

from scheduler.emulator import errors
from scheduler.emulator.resources import ResourceType

Obj = dict[str, Any]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

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


def validate_name(rt: ResourceType, obj: Obj) -> None:
    meta = obj["metadata"]
    name = meta.get("name") or ""
    if not name:
        raise errors.invalid(
            rt.group,
            rt.kind,
            "",
            [
                (
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                )
            ],
        )
    dns_label = rt.kind == "Namespace"
    pattern, msg, limit = (
        (_DNS_LABEL, _LABEL_MSG, 63) if dns_label else (_DNS_SUBDOMAIN, _SUBDOMAIN_MSG, 253)
    )
    if len(name) > limit:
        why = f"must be no more than {limit} characters"
        raise errors.invalid(
            rt.group,
            rt.kind,
            name,
            [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {why}')],
        )
    if rt.kind != "Event" and not pattern.match(name):
        raise errors.invalid(
            rt.group,
            rt.kind,
            name,
            [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {msg}')],
        )


def _qos_class(spec: Obj) -> str:
    requests_any = limits_any = False
    guaranteed = True
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        requests = {
            k: v for k, v in (resources.get("requests") or {}).items() if k in ("cpu", "memory")
        }
        limits = {
            k: v for k, v in (resources.get("limits") or {}).items() if k in ("cpu", "memory")
        }
        requests_any = requests_any or bool(requests)
        limits_any = limits_any or bool(limits)
        if set(limits) != {"cpu", "memory"}:
            guaranteed = False
        for key, value in requests.items():
            if limits.get(key) != value:
                guaranteed = False
    if not requests_any and not limits_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _default_pod(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    tolerations = list(spec.get("tolerations") or [])
    for default in DEFAULT_TOLERATIONS:
        if not any(
            t.get("key") == default["key"] and t.get("effect") in (None, "", "NoExecute")
            for t in tolerations
        ):
            tolerations.append(dict(default))
    spec["tolerations"] = tolerations
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                container.setdefault("terminationMessagePath", "/dev/termination-log")
                container.setdefault("terminationMessagePolicy", "File")
                container.setdefault("resources", {})
                image = str(container.get("image", ""))
                latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
                container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")


def _validate_pod(rt: ResourceType, obj: Obj) -> None:
    spec = obj.get("spec")
    name = obj["metadata"]["name"]
    causes: list[tuple[str, str, str]] = []
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        causes.append(("spec.containers", "FieldValueRequired", "Required value"))
    else:
        for i, container in enumerate(containers):
            if not isinstance(container, dict):
                causes.append(
                    (
                        f"spec.containers[{i}]",
                        "FieldValueInvalid",
                        "Invalid value: must be an object",
                    )
                )
                continue
            cname = container.get("name") or ""
            if not cname:
                causes.append(
                    (f"spec.containers[{i}].name", "FieldValueRequired", "Required value")
                )
            elif not _DNS_LABEL.match(cname):
                causes.append(
                    (
                        f"spec.containers[{i}].name",
                        "FieldValueInvalid",
                        f'Invalid value: "{cname}": {_LABEL_MSG}',
                    )
                )
            if not container.get("image"):
                causes.append(
                    (f"spec.containers[{i}].image", "FieldValueRequired", "Required value")
                )
    if causes:
        raise errors.invalid(rt.group, rt.kind, name, causes)


def prepare_for_create(rt: ResourceType, obj: Obj, *, keep_status: bool) -> None:
    """Reset what users may not set and fill defaults, then validate."""
    if not keep_status and not rt.create_keeps_status and rt.has_status:
        obj.pop("status", None)
    kind = rt.kind if not rt.group else ""
    if kind == "Pod":
        _default_pod(obj)
        status = obj.setdefault("status", {})
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", _qos_class(obj["spec"]))
        validate_name(rt, obj)
        _validate_pod(rt, obj)
    elif kind == "Namespace":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        name = obj["metadata"].get("name")
        if name:
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        validate_name(rt, obj)
    elif rt.group == "apiextensions.k8s.io" and rt.kind == "CustomResourceDefinition":
        from scheduler.emulator.crds import validate_crd

        validate_name(rt, obj)
        validate_crd(obj)
    else:
        validate_name(rt, obj)


def check_update(rt: ResourceType, old: Obj, new: Obj) -> None:
    """Reject updates kube-apiserver's validation would refuse."""
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
        raise errors.invalid(
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
