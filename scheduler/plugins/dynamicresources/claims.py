"""Which ResourceClaims a pod uses, and whether it may use them (kube's resourceclaim package).

A pod names its claims in ``spec.resourceClaims``: directly
(``resourceClaimName``), or through a template (``resourceClaimTemplateName``),
in which case the claim exists only once the resourceclaim controller has
created it and recorded its name in the pod's
``status.resourceClaimStatuses``. Until then the pod cannot be scheduled:
it waits, as kube-scheduler's pods do, for the pod update that adds the
name (or for the claim to appear). A generated claim must be owned by the
pod; an entry whose status names no claim was left out on purpose and is
skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.plugins._helpers import meta
from scheduler.state.pod import PodInfo

Obj = Mapping[str, Any]

#: The resources the plugin watches (group, version, plural).
CLAIMS = ("resource.k8s.io", "v1", "resourceclaims")
SLICES = ("resource.k8s.io", "v1", "resourceslices")
CLASSES = ("resource.k8s.io", "v1", "deviceclasses")

#: kube's resourceapi.Finalizer: PreBind adds it before it writes an allocation.
FINALIZER = "resource.kubernetes.io/delete-protection"
#: kube's FirstAvailableDeviceRequestMaxSize (scoring of firstAvailable choices).
FIRST_AVAILABLE_MAX_SIZE = 8

ERR_CLAIM_NOT_CREATED = "ResourceClaim not created yet"
ERR_API_UNSUPPORTED = "none of the supported fields are set"


class ClaimUnusable(Exception):
    """The pod cannot use its claims now (kube: UnschedulableAndUnresolvable)."""


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    """One ``spec.resourceClaims`` entry resolved to a claim name."""

    entry: str
    claim: str | None  # None: the controller deliberately created no claim
    must_check_owner: bool


def status(obj: Obj) -> Mapping[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, Mapping) else {}


def uid(obj: Obj) -> str:
    return str(meta(obj).get("uid") or "")


def key(obj: Obj) -> str:
    m = meta(obj)
    return f"{m.get('namespace') or ''}/{m.get('name') or ''}"


def allocation(claim: Obj) -> Mapping[str, Any] | None:
    found = status(claim).get("allocation")
    return found if isinstance(found, Mapping) else None


def reserved_for(claim: Obj) -> list[Mapping[str, Any]]:
    found = status(claim).get("reservedFor")
    return [r for r in found if isinstance(r, Mapping)] if isinstance(found, list) else []


def is_reserved_for(pod: PodInfo, claim: Obj) -> bool:
    return any(str(r.get("uid") or "") == pod.uid for r in reserved_for(claim))


def consumer_ref(pod: PodInfo) -> dict[str, Any]:
    """The ``reservedFor`` entry for a pod (kube's BindTo for a pod: core group, omitted)."""
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


def resolve(pod: PodInfo) -> list[PodClaimRef]:
    """kube's resourceclaim.Name for each entry; raises ClaimUnusable as kube errs."""
    spec = pod.raw.get("spec") or {}
    entries = spec.get("resourceClaims") or []
    statuses = (pod.raw.get("status") or {}).get("resourceClaimStatuses") or []
    out: list[PodClaimRef] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        entry_name = str(entry.get("name") or "")
        direct = entry.get("resourceClaimName")
        template = entry.get("resourceClaimTemplateName")
        if direct is not None:
            out.append(PodClaimRef(entry_name, str(direct), False))
        elif template is not None:
            for st in statuses:
                if isinstance(st, Mapping) and st.get("name") == entry_name:
                    generated = st.get("resourceClaimName")
                    out.append(PodClaimRef(entry_name, str(generated) if generated else None, True))
                    break
            else:
                raise ClaimUnusable(f'pod "{pod.namespace}/{pod.name}": {ERR_CLAIM_NOT_CREATED}')
        else:
            raise ClaimUnusable(
                f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry_name}": '
                f"{ERR_API_UNSUPPORTED}"
            )
    return out


def owner_error(pod: PodInfo, claim: Obj) -> str | None:
    """kube's IsForPod: a generated claim must be in the pod's namespace and owned by it."""
    m = meta(claim)
    namespace, name = m.get("namespace") or "", m.get("name") or ""
    if namespace != pod.namespace:
        return (
            f"ResourceClaim {namespace}/{name} is not in the same namespace as "
            f"Pod {pod.namespace}/{pod.name}"
        )
    for ref in m.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid") == pod.uid:
            return None
    return (
        f"ResourceClaim {namespace}/{name} was not created for Pod "
        f"{pod.namespace}/{pod.name} (Pod is not owner)"
    )


def sub_request_ref(request: str, sub: str) -> str:
    return f"{request}/{sub}"


def first_available_score(claim: Obj, result: Mapping[str, Any] | None) -> int:
    """kube's computeScore for one claim: earlier firstAvailable choices score higher."""
    if result is None:
        return 0
    devices = result.get("devices") or {}
    chosen = {
        str(r.get("request") or "")
        for r in devices.get("results") or ()
        if isinstance(r, Mapping) and "/" in str(r.get("request") or "")
    }
    if not chosen:
        return 0
    score = 0
    spec = claim.get("spec") or {}
    for request in (spec.get("devices") or {}).get("requests") or ():
        if not isinstance(request, Mapping) or request.get("exactly") is not None:
            continue
        for i, sub in enumerate(request.get("firstAvailable") or ()):
            if sub_request_ref(str(request.get("name")), str(sub.get("name"))) in chosen:
                score += FIRST_AVAILABLE_MAX_SIZE - i
    return score
