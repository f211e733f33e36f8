"""kube-apiserver's validation and defaulting of ResourceClaims and their templates.

``ValidateResourceClaim``/``ValidateResourceClaimTemplate`` (requests with exactly
one of ``exactly``/``firstAvailable``, counts and allocation modes, selectors,
tolerations, constraints and configs naming requests), the immutable specs, and
the status rules of ``ValidateResourceClaimStatusUpdate`` that the scheduler and
the claim controller live by: ``reservedFor`` needs an allocation, holds at most
256 distinct consumers and gains none once the claim is being deleted; an
allocation is immutable once set (it may only be cleared); a new one names
requests of the claim. Defaulting is ``SetObjectDefaults_ResourceClaim``.

Skipped: ``status.devices`` (drivers write it, the scheduler never does) and the
``resource.kubernetes.io/admin-access`` namespace check on adminAccess.
"""

from __future__ import annotations

from typing import Any

from scheduler.simulation.emulator import gojson
from scheduler.simulation.emulator.dracommon import (
    CONFIG_MAX,
    REQUESTS_MAX,
    binding_conditions,
    check_list,
    device_class_name,
    device_configuration,
    dns_label,
    fully_qualified_name,
    immutable,
    items,
    mapping,
    name_of,
    pool_name,
    selectors,
    tolerations,
    too_many,
)
from scheduler.simulation.emulator.validation import (
    Cause,
    annotation_causes,
    csi_driver_name,
    forbidden,
    invalid,
    label_causes,
    node_selector,
    not_supported,
    required,
)

Obj = dict[str, Any]
RequestNames = dict[str, set[str] | None]

FIRST_AVAILABLE_MAX = 8
CONSTRAINTS_MAX = 32
RESERVED_FOR_MAX = 256
RESULTS_MAX = 32
ALLOCATION_MODES = ("All", "ExactCount")
CONFIG_SOURCES = ("FromClaim", "FromClass")
REQUEST_REF_MSG = (
    "must be the name of a request in the claim or the name of a request and a "
    "subrequest separated by '/'"
)
# ObjectMeta fields in Go order; a template's metadata may set only labels/annotations.
_TEMPLATE_META_FORBIDDEN = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


# -- defaulting -------------------------------------------------------------------


def _default_request(request: Obj) -> None:
    """SetDefaults_ExactDeviceRequest / _DeviceSubRequest and the tolerations' operator."""
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for tol in items(request.get("tolerations")):
        if isinstance(tol, dict) and not tol.get("operator"):
            tol["operator"] = "Equal"


def default_claim_spec(spec: Any) -> None:
    for request in items(mapping(mapping(spec).get("devices")).get("requests")):
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _default_request(request["exactly"])
        for sub in items(request.get("firstAvailable")):
            if isinstance(sub, dict):
                _default_request(sub)


def default_claim_status(status: Any) -> None:
    allocation = mapping(mapping(status).get("allocation"))
    for result in items(mapping(allocation.get("devices")).get("results")):
        for tol in items(mapping(result).get("tolerations")):
            if isinstance(tol, dict) and not tol.get("operator"):
                tol["operator"] = "Equal"


# -- spec -------------------------------------------------------------------------


def request_names(spec: Any) -> RequestNames:
    """gatherRequestNames: each request, with its subrequests if it has any."""
    names: RequestNames = {}
    for request in items(mapping(mapping(spec).get("devices")).get("requests")):
        subs = items(mapping(request).get("firstAvailable"))
        names[name_of(request)] = {name_of(s) for s in subs} if subs else None
    return names


def _has_request(names: RequestNames, ref: str) -> bool:
    segments = ref.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    return segments[1] in (names[segments[0]] or set())


def _request_ref(ref: Any, path: str, names: RequestNames) -> list[Cause]:
    ref = str(ref)
    segments = ref.split("/")
    if len(segments) > 2:
        return [invalid(path, ref, REQUEST_REF_MSG)]
    causes: list[Cause] = []
    for segment in segments:
        causes += dns_label(segment, path)
    if not _has_request(names, ref):
        causes.append(invalid(path, ref, REQUEST_REF_MSG))
    return causes


def _request_refs(values: Any, path: str, names: RequestNames) -> list[Cause]:
    return check_list(
        values, REQUESTS_MAX, lambda ref, where: _request_ref(ref, where, names), path, str
    )


def _allocation_mode(request: Obj, path: str) -> list[Cause]:
    mode = request.get("allocationMode") or ""
    count = request.get("count") or 0
    if mode == "All":
        if count != 0:
            return [
                invalid(
                    f"{path}.count", count, "must not be specified when allocationMode is 'All'"
                )
            ]
    elif mode == "ExactCount":
        if count <= 0:
            return [invalid(f"{path}.count", count, "must be greater than zero")]
    else:
        return [not_supported(f"{path}.allocationMode", mode, ALLOCATION_MODES)]
    return []


def _exact_request(request: Obj, path: str, stored: bool) -> list[Cause]:
    causes = device_class_name(str(request.get("deviceClassName") or ""), f"{path}.deviceClassName")
    causes += selectors(request.get("selectors"), f"{path}.selectors", stored=stored)
    causes += _allocation_mode(request, path)
    causes += tolerations(request.get("tolerations"), f"{path}.tolerations")
    return causes


def _sub_request(sub: Any, path: str, stored: bool) -> list[Cause]:
    sub = mapping(sub)
    causes = dns_label(name_of(sub), f"{path}.name")
    return causes + _exact_request(sub, path, stored)


def _request(request: Any, path: str, stored: bool) -> list[Cause]:
    request = mapping(request)
    causes = dns_label(name_of(request), f"{path}.name")
    first = items(request.get("firstAvailable"))
    exactly = request.get("exactly")
    why = "exactly one of `exactly` or `firstAvailable` is required"
    if not first and exactly is None:
        causes.append(required(path, why))
    elif first and exactly is not None:
        causes.append(invalid(path, None, f"{why}, but multiple fields are set"))
    elif first:
        causes += check_list(
            first,
            FIRST_AVAILABLE_MAX,
            lambda sub, where: _sub_request(sub, where, stored),
            f"{path}.firstAvailable",
            name_of,
        )
    else:
        causes += _exact_request(mapping(exactly), f"{path}.exactly", stored)
    return causes


def _constraint(constraint: Any, path: str, names: RequestNames) -> list[Cause]:
    constraint = mapping(constraint)
    causes = _request_refs(constraint.get("requests"), f"{path}.requests", names)
    if constraint.get("matchAttribute") is not None:
        causes += fully_qualified_name(str(constraint["matchAttribute"]), f"{path}.matchAttribute")
    elif constraint.get("distinctAttribute") is not None:
        causes += fully_qualified_name(
            str(constraint["distinctAttribute"]), f"{path}.distinctAttribute"
        )
    else:  # DRAConsumableCapacity is on in kube 1.36: its message, as worded there
        causes.append(
            required(
                path,
                'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                "but multiple fields are set",
            )
        )
    return causes


def claim_spec(spec: Any, path: str, *, stored: bool = False) -> list[Cause]:
    """validateResourceClaimSpec (claims, and the spec inside templates)."""
    devices = mapping(mapping(spec).get("devices"))
    base = f"{path}.devices"
    names = request_names(spec)
    causes = check_list(
        devices.get("requests"),
        REQUESTS_MAX,
        lambda request, where: _request(request, where, stored),
        f"{base}.requests",
        name_of,
    )
    causes += check_list(
        devices.get("constraints"),
        CONSTRAINTS_MAX,
        lambda constraint, where: _constraint(constraint, where, names),
        f"{base}.constraints",
    )
    causes += check_list(
        devices.get("config"),
        CONFIG_MAX,
        lambda config, where: (
            _request_refs(mapping(config).get("requests"), f"{where}.requests", names)
            + device_configuration(config, where, stored=stored)
        ),
        f"{base}.config",
    )
    return causes


def resource_claim(obj: Obj) -> list[Cause]:
    return claim_spec(obj.get("spec"), "spec")


def resource_claim_update(old: Obj, new: Obj) -> list[Cause]:
    """The spec is immutable; kube checks nothing else about it on update."""
    if _same(old.get("spec"), new.get("spec")):
        return []
    return [immutable("spec", mapping(new.get("spec")), "ResourceClaimSpec")]


def resource_claim_template(obj: Obj) -> list[Cause]:
    spec = mapping(obj.get("spec"))
    meta = mapping(spec.get("metadata"))
    causes = annotation_causes(meta.get("annotations"), "spec.metadata.annotations")
    causes += label_causes(meta.get("labels"), "spec.metadata.labels")
    for key in _TEMPLATE_META_FORBIDDEN:
        if meta.get(key) not in (None, "", 0, [], {}):
            causes.append(forbidden(f"spec.metadata.{key}", "cannot be set"))
    return causes + claim_spec(spec.get("spec"), "spec.spec")


def resource_claim_template_update(old: Obj, new: Obj) -> list[Cause]:
    """The whole template spec (metadata included) is immutable."""
    if _same(old.get("spec"), new.get("spec")):
        return []
    # The internal ResourceClaimTemplateSpec embeds ObjectMeta (JSON-tagged, omitempty,
    # its zero creationTimestamp printed as null) next to an untagged Spec.
    spec = mapping(new.get("spec"))
    meta = mapping(spec.get("metadata"))
    shown: Obj = {"creationTimestamp": None}
    for key in ("labels", "annotations"):
        if meta.get(key):
            shown[key] = dict(sorted(meta[key].items()))
    shown["Spec"] = gojson.internal("ResourceClaimSpec", mapping(spec.get("spec")))
    return [
        ("spec", "FieldValueInvalid", f"Invalid value: {gojson.marshal(shown)}: field is immutable")
    ]


def _same(a: Any, b: Any) -> bool:
    """apiequality.Semantic.DeepEqual: nil and empty slices and maps are equal."""
    return bool(_normal(a) == _normal(b))


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


# -- status -----------------------------------------------------------------------


def _consumer(ref: Any, path: str) -> list[Cause]:
    ref = mapping(ref)
    return [required(f"{path}.{key}") for key in ("resource", "name", "uid") if not ref.get(key)]


def _result(result: Any, path: str, names: RequestNames) -> list[Cause]:
    result = mapping(result)
    causes = _request_ref(result.get("request") or "", f"{path}.request", names)
    causes += csi_driver_name(str(result.get("driver") or ""), f"{path}.driver")
    causes += pool_name(str(result.get("pool") or ""), f"{path}.pool")
    causes += dns_label(str(result.get("device") or ""), f"{path}.device")
    causes += binding_conditions(result, path)
    return causes


def _allocation_config(config: Any, path: str, names: RequestNames) -> list[Cause]:
    config = mapping(config)
    source = config.get("source") or ""
    causes: list[Cause] = []
    if not source:
        causes.append(required(f"{path}.source"))
    elif source not in CONFIG_SOURCES:
        causes.append(not_supported(f"{path}.source", source, CONFIG_SOURCES))
    causes += _request_refs(config.get("requests"), f"{path}.requests", names)
    return causes + device_configuration(config, path, stored=False)


def _allocation(allocation: Obj, names: RequestNames) -> list[Cause]:
    path = "status.allocation"
    devices = mapping(allocation.get("devices"))
    causes = check_list(
        devices.get("results"),
        RESULTS_MAX,
        lambda result, where: _result(result, where, names),
        f"{path}.devices.results",
    )
    causes += check_list(
        devices.get("config"),
        2 * CONFIG_MAX,
        lambda config, where: _allocation_config(config, where, names),
        f"{path}.devices.config",
    )
    if allocation.get("nodeSelector") is not None:
        causes += node_selector(allocation["nodeSelector"], f"{path}.nodeSelector")
    return causes


def resource_claim_status_update(old: Obj, new: Obj) -> list[Cause]:
    """ValidateResourceClaimStatusUpdate (metadata and spec are the stored ones)."""
    status, old_status = mapping(new.get("status")), mapping(old.get("status"))
    reserved = items(status.get("reservedFor"))
    causes: list[Cause] = []
    if len(reserved) > RESERVED_FOR_MAX:
        causes.append(too_many("status.reservedFor", len(reserved), RESERVED_FOR_MAX))
    else:
        causes += check_list(
            reserved,
            -1,
            _consumer,
            "status.reservedFor",
            lambda r: str(mapping(r).get("uid") or ""),
        )
    allocation = status.get("allocation")
    old_allocation = old_status.get("allocation")
    if reserved:
        if allocation is None:
            causes.append(
                forbidden("status.reservedFor", "may not be specified when `allocated` is not set")
            )
        elif new["metadata"].get("deletionTimestamp"):
            before = [_normal(r) for r in items(old_status.get("reservedFor"))]
            if any(_normal(r) not in before for r in reserved):
                causes.append(
                    forbidden(
                        "status.reservedFor",
                        "new entries may not be added while `deallocationRequested` or "
                        "`deletionTimestamp` are set",
                    )
                )
    if old_allocation is not None and allocation is not None:
        if not _same(old_allocation, allocation):
            causes.append(immutable("status.allocation", allocation, "AllocationResult"))
    elif isinstance(allocation, dict):
        causes += _allocation(allocation, request_names(new.get("spec")))
    return causes
