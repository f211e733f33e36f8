"""A pod's references to ResourceClaims, validated as kube-apiserver's pod validation does.

``spec.resourceClaims`` (unique DNS-label names, exactly one of
``resourceClaimName``/``resourceClaimTemplateName``; none on static pods),
containers' ``resources.claims`` naming them (validateResourceClaimNames), and
``status.resourceClaimStatuses`` (the claim controller's record of generated
claims), with the paths and messages of ``pkg/apis/core/validation``.
"""

from __future__ import annotations

from typing import Any

from scheduler.simulation.emulator import gojson
from scheduler.simulation.emulator.dracommon import (
    dns_label,
    dns_subdomain,
    items,
    mapping,
    name_of,
)
from scheduler.simulation.emulator.validation import Cause, duplicate, forbidden, invalid, required

Obj = dict[str, Any]
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def _invalid_claim(claim: Obj, path: str, why: str) -> Cause:
    shown = gojson.render("PodResourceClaim", claim)
    return (path, "FieldValueInvalid", f"Invalid value: {shown}: {why}")


def _pod_claims(pod: Obj) -> list[Cause]:
    spec = mapping(pod.get("spec"))
    claims = items(spec.get("resourceClaims"))
    annotations = mapping(mapping(pod.get("metadata")).get("annotations"))
    causes: list[Cause] = []
    names: set[str] = set()
    for i, claim in enumerate(claims):
        if MIRROR_POD_ANNOTATION in annotations:
            # kube returns at the first entry with an empty path, for every entry
            causes.append(forbidden("", "static pods do not support resource claims"))
            continue
        claim = mapping(claim)
        path = f"spec.resourceClaims[{i}]"
        name = name_of(claim)
        if not name:
            causes.append(required(f"{path}.name"))
        elif name in names:
            causes.append(duplicate(f"{path}.name", name))
        else:
            causes += dns_label(name, f"{path}.name")
            names.add(name)
        by_name = claim.get("resourceClaimName")
        by_template = claim.get("resourceClaimTemplateName")
        if by_name is not None and by_template is not None:
            causes.append(
                _invalid_claim(
                    claim,
                    path,
                    "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be "
                    "specified",
                )
            )
        if by_name is None and by_template is None:
            causes.append(
                _invalid_claim(
                    claim,
                    path,
                    "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                )
            )
        if by_name is not None:
            causes += dns_subdomain(str(by_name), f"{path}.resourceClaimName")
        if by_template is not None:
            causes += dns_subdomain(str(by_template), f"{path}.resourceClaimTemplateName")
    return causes


def _container_claims(claims: Any, pod_claims: set[str], path: str) -> list[Cause]:
    """validateResourceClaimNames: each names a pod claim, at most once (whole or per request)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, claim in enumerate(items(claims)):
        claim = mapping(claim)
        where = f"{path}[{i}]"
        name = name_of(claim)
        if not name:
            causes.append(required(where))
            continue
        if name in seen:
            causes.append(duplicate(where, name))
        else:
            key = name
            request = str(claim.get("request") or "")
            if request:
                causes += dns_label(request, f"{where}.request")
                key += "/" + request
            if key in seen:
                causes.append(duplicate(where, key))
            elif not request:
                for earlier in seen:
                    if "/" in earlier and earlier.split("/", 1)[0] == name:
                        causes.append(duplicate(where, name))
            seen.add(key)
        if name not in pod_claims:
            why = "must be one of the names in pod.spec.resourceClaims"
            why += ": " + ", ".join(sorted(pod_claims)) if pod_claims else " which is empty"
            causes.append(
                (where, "FieldValueNotFound", f"Not found: {gojson.marshal(name)}: {why}")
            )
    return causes


def pod_claim_causes(pod: Obj) -> list[Cause]:
    """The resource-claim part of ValidatePodSpec for a pod being created or updated."""
    spec = mapping(pod.get("spec"))
    causes = _pod_claims(pod)
    pod_claims = {name_of(c) for c in items(spec.get("resourceClaims")) if name_of(c)}
    for key in ("containers", "initContainers"):
        for i, container in enumerate(items(spec.get(key))):
            claims = mapping(mapping(container).get("resources")).get("claims")
            causes += _container_claims(claims, pod_claims, f"spec.{key}[{i}].resources.claims")
    return causes


def pod_claim_status_causes(pod: Obj) -> list[Cause]:
    """validatePodResourceClaimStatuses: entries name pod claims, once each."""
    spec_claims = {name_of(c) for c in items(mapping(pod.get("spec")).get("resourceClaims"))}
    causes: list[Cause] = []
    seen: set[str] = set()
    statuses = items(mapping(pod.get("status")).get("resourceClaimStatuses"))
    for i, status in enumerate(statuses):
        status = mapping(status)
        path = f"status.resourceClaimStatuses[{i}]"
        name = name_of(status)
        if name not in spec_claims:
            causes.append(
                invalid(
                    f"{path}.name", name, "must match the name of an entry in `spec.resourceClaims`"
                )
            )
        if name in seen:
            causes.append(duplicate(f"{path}.name", name))
        seen.add(name)
        if status.get("resourceClaimName") is not None:
            causes += dns_subdomain(str(status["resourceClaimName"]), f"{path}.resourceClaimName")
    return causes
