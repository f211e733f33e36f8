"""kube-apiserver 1.36.3's Workload API: scheduling.k8s.io/v1alpha2 Workload and PodGroup.

Served as the real apiserver serves them with GenericWorkload on (and
TopologyAwareWorkloadScheduling, DRAWorkloadResourceClaims and
WorkloadAwarePreemption off, their defaults): the strategies drop the fields
of the gates that are off, PodGroups default ``spec.disruptionMode`` to
``Pod``, the PodGroupProtection admission plugin adds its finalizer, and the
declarative validation of ``pkg/apis/scheduling/v1alpha2`` checks the rest,
with its ratcheting (on update, unchanged fields are not checked again) and
its words (checked against the real apiserver in
tests/emulator/test_workload_api.py). Also pods' ``spec.schedulingGroup``
(``validateSchedulingGroup``).

Not emulated: ``status.conditions`` validation of PodGroups (the scheduler
writes them), and kube-controller-manager's podgroup-protection controller,
which removes the finalizer once no running pod uses the group: as on a real
apiserver without that controller, a deleted PodGroup stays (with its
``deletionTimestamp``) until a client removes the finalizer.
"""

from __future__ import annotations

from typing import Any, Final

from scheduler.model.names import dns1123_label_errors, dns1123_subdomain_errors
from scheduler.simulation.emulator.validation import Cause, invalid, required, show

Obj = dict[str, Any]

GROUP: Final = "scheduling.k8s.io"
VERSION: Final = "v1alpha2"
PROTECTION_FINALIZER: Final = "scheduling.k8s.io/podgroup-protection"
MAX_TEMPLATES: Final = 8
# Fields whose gates are off in kube 1.36.3 (dropped by the strategies).
_GATED_TEMPLATE_FIELDS: Final = (
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
)


def _mapping(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


# -- pods -------------------------------------------------------------------------------


def pod_scheduling_group(spec: Obj) -> list[Cause]:
    """validateSchedulingGroup: exactly one member (today ``podGroupName``), a DNS subdomain."""
    group = spec.get("schedulingGroup")
    if group is None:
        return []
    path = "spec.schedulingGroup.podGroupName"
    name = _mapping(group).get("podGroupName")
    if name is None:
        return [invalid(path, None, "must specify one of: `podGroupName`")]
    return [invalid(path, name, m) for m in dns1123_subdomain_errors(str(name))]


# -- defaulting and the strategies --------------------------------------------------------


def prepare_workload(obj: Obj) -> None:
    """Drop the fields of gates that are off; a template always shows schedulingConstraints."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for template in spec.get("podGroupTemplates") or []:
        if isinstance(template, dict):
            for key in _GATED_TEMPLATE_FIELDS:
                template.pop(key, None)
            template["schedulingConstraints"] = None


def prepare_pod_group(obj: Obj, old: Obj | None = None) -> None:
    """Drop gated fields, default disruptionMode (SetObjectDefaults_PodGroup), keep status."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        for key in (*_GATED_TEMPLATE_FIELDS, "schedulingConstraints"):
            spec.pop(key, None)
        spec.setdefault("podGroupTemplateRef", None)
        # Dropped while WorkloadAwarePreemption is off, then defaulted when read back.
        spec["disruptionMode"] = "Pod"
    if old is None:
        obj["status"] = {}
    elif "status" not in obj:
        obj["status"] = old.get("status", {})


def admit_pod_group(obj: Obj) -> None:
    """The PodGroupProtection admission plugin: the finalizer on every create (only)."""
    meta = obj.setdefault("metadata", {})
    finalizers = meta.get("finalizers") or []
    if PROTECTION_FINALIZER not in finalizers:
        meta["finalizers"] = [*finalizers, PROTECTION_FINALIZER]


# -- validation ---------------------------------------------------------------------------


def _immutable(path: str) -> Cause:
    # Declarative validation's Immutable prints no value.
    return invalid(path, None, "field is immutable")


def _changed(old: Obj | None, key: str, new: Obj) -> bool:
    return old is None or old.get(key) != new.get(key)


def _scheduling_policy(policy: Any, path: str) -> list[Cause]:
    """The union ``basic``/``gang`` and the gang's ``minCount`` (required, at least 1)."""
    policy = _mapping(policy)
    members = [k for k in ("basic", "gang") if policy.get(k) is not None]
    if not members:
        return [invalid(path, "", "must specify one of: `basic`, `gang`")]
    if len(members) > 1:
        shown = "{" + ", ".join(members) + "}"
        return [invalid(path, shown, "must specify exactly one of: `basic`, `gang`")]
    if members[0] != "gang":
        return []
    count = _mapping(policy["gang"]).get("minCount")
    where = f"{path}.gang.minCount"
    if not count:
        return [required(where)]
    if isinstance(count, int) and count < 1:
        return [invalid(where, count, "must be greater than or equal to 1")]
    return []


def _path_segment(value: str, path: str) -> list[Cause]:
    """ValidatePathSegmentName (a Kind or name in a URL path)."""
    if value in (".", ".."):
        return [invalid(path, value, f"may not be '{value}'")]
    return [invalid(path, value, f"may not contain '{c}'") for c in ("/", "%") if c in value]


def _controller_ref(ref: Any, path: str) -> list[Cause]:
    ref = _mapping(ref)
    causes: list[Cause] = []
    group = ref.get("apiGroup") or ""
    if group:
        causes += [invalid(f"{path}.apiGroup", group, m) for m in dns1123_subdomain_errors(group)]
    for key in ("kind", "name"):
        value = ref.get(key) or ""
        causes += _path_segment(value, f"{path}.{key}") if value else [required(f"{path}.{key}")]
    return causes


def _template(template: Any, path: str) -> list[Cause]:
    template = _mapping(template)
    name = template.get("name") or ""
    causes = (
        [invalid(f"{path}.name", name, m) for m in dns1123_label_errors(name)]
        if name
        else [required(f"{path}.name")]
    )
    return causes + _scheduling_policy(template.get("schedulingPolicy"), f"{path}.schedulingPolicy")


def workload(obj: Obj, old: Obj | None = None) -> list[Cause]:
    """Validate_Workload on create (``old`` None) or update."""
    spec, old_spec = _mapping(obj.get("spec")), _mapping((old or {}).get("spec"))
    causes: list[Cause] = []
    if _changed(old_spec if old else None, "controllerRef", spec):
        ref = spec.get("controllerRef")
        if old is not None:
            causes.append(_immutable("spec.controllerRef"))
        elif ref is not None:
            causes += _controller_ref(ref, "spec.controllerRef")
    if _changed(old_spec if old else None, "podGroupTemplates", spec):
        path = "spec.podGroupTemplates"
        templates = spec.get("podGroupTemplates") or []
        early: list[Cause] = []
        if old is not None:
            early.append(_immutable(path))
        if len(templates) > MAX_TEMPLATES:
            early.append(
                (
                    path,
                    "FieldValueTooMany",
                    f"Too many: {len(templates)}: must have at most {MAX_TEMPLATES} items",
                )
            )
        if not templates:
            early.append(required(path))
        if early:
            return causes + early
        seen: set[str] = set()
        for i, template in enumerate(templates):
            name = _mapping(template).get("name")
            if isinstance(name, str) and name in seen:
                causes.append(
                    (f"{path}[{i}]", "FieldValueDuplicate", f"Duplicate value: {show(template)}")
                )
            elif isinstance(name, str):
                seen.add(name)
        for i, template in enumerate(templates):
            causes += _template(template, f"{path}[{i}]")
    return causes


def pod_group(obj: Obj, old: Obj | None = None) -> list[Cause]:
    """Validate_PodGroup on create (``old`` None) or update of the object or its status."""
    spec, old_spec = _mapping(obj.get("spec")), _mapping((old or {}).get("spec"))
    causes: list[Cause] = []
    if _changed(old_spec if old else None, "podGroupTemplateRef", spec):
        ref = spec.get("podGroupTemplateRef")
        if old is not None:
            causes.append(_immutable("spec.podGroupTemplateRef"))
        elif ref is not None:
            workload_ref = _mapping(ref).get("workload")
            if workload_ref is None:
                causes.append(
                    invalid("spec.podGroupTemplateRef", "", "must specify one of: `workload`")
                )
            else:
                base = "spec.podGroupTemplateRef.workload"
                name = _mapping(workload_ref).get("workloadName") or ""
                causes += (
                    [
                        invalid(f"{base}.workloadName", name, m)
                        for m in dns1123_subdomain_errors(name)
                    ]
                    if name
                    else [required(f"{base}.workloadName")]
                )
                template = _mapping(workload_ref).get("podGroupTemplateName") or ""
                causes += (
                    [
                        invalid(f"{base}.podGroupTemplateName", template, m)
                        for m in dns1123_label_errors(template)
                    ]
                    if template
                    else [required(f"{base}.podGroupTemplateName")]
                )
    if _changed(old_spec if old else None, "schedulingPolicy", spec):
        if old is not None:
            causes.append(_immutable("spec.schedulingPolicy"))
        else:
            causes += _scheduling_policy(spec.get("schedulingPolicy"), "spec.schedulingPolicy")
    return causes
