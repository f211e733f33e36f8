"""Extended resources backed by DRA device classes (kube 1.36's DRAExtendedResource, beta, on).

A pod may ask for ``example.com/gpu: 2`` the device-plugin way while the
cluster offers GPUs through DRA: a DeviceClass whose ``spec.extendedResourceName``
is ``example.com/gpu`` (or, for any class, the implicit name
``deviceclass.resource.kubernetes.io/<class>``) maps the resource to its
devices. On a node that advertises the resource in ``status.allocatable`` (a
device plugin) NodeResourcesFit fits it as usual; on the others Fit delegates
it, and DynamicResources allocates devices of the mapped class for it through
a *special claim*: in memory (named ``<extended-resources>``, which no real
claim can be) until PreBind creates it in the API, owned by the pod and
annotated as the pod's extended-resource claim.

This module holds what both plugins need of kube's code for it: the
resolver from resource name to class (kube's ExtendedResourceCache), the
request/mapping construction (``createRequestsAndMappings``, whose request
names ``container-<i>-request-<j>`` and order are part of what the API sees),
and the lookup of a claim left by an earlier attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler.model.quantity import QuantityError, parse_quantity
from scheduler.model.resources import is_extended_resource_name
from scheduler.plugins._helpers import meta, object_name
from scheduler.plugins.dynamicresources.claims import Obj
from scheduler.state.pod import PodInfo

#: kube's specialClaimInMemName: not a valid object name, so never a real claim's.
SPECIAL_CLAIM_NAME = "<extended-resources>"
#: kube's resourceapi.ExtendedResourceClaimAnnotation.
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: kube's resourceapi.ResourceDeviceClassPrefix: the implicit name of every class.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def is_dra_extended_resource_name(name: str) -> bool:
    """kube's IsDRAExtendedResourceName: an extended resource or a class's implicit name."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _created(obj: Obj) -> float:
    stamp = str(meta(obj).get("creationTimestamp") or "")
    if not stamp:
        return 0.0
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class DeviceClassResolver:
    """Which DeviceClass backs an extended resource name (kube's ExtendedResourceCache).

    Every class answers to its implicit name; a class's
    ``spec.extendedResourceName`` maps that name too. When two classes claim
    the same name the newer one wins (the name breaks a tie, lower first),
    which is what kube's cache settles on while migrating between classes.
    Built from the whole class list, so the answer does not depend on the
    order the informer delivered the classes in (kube's cache, fed event by
    event, can forget a name whose winning class was deleted while another
    still names it; this one does not).
    """

    def __init__(self, classes: Iterable[Obj]) -> None:
        mapping: dict[str, Obj] = {}
        explicit: dict[str, Obj] = {}
        for klass in classes:
            name = object_name(klass)
            if not name:
                continue
            mapping[DEVICE_CLASS_PREFIX + name] = klass
            wanted = (klass.get("spec") or {}).get("extendedResourceName")
            if not wanted:
                continue
            wanted = str(wanted)
            current = explicit.get(wanted)
            if current is not None:
                mine, theirs = _created(klass), _created(current)
                if mine < theirs:
                    continue
                if mine == theirs and name >= object_name(current):
                    continue
            explicit[wanted] = klass
        mapping.update(explicit)
        self._mapping = mapping

    def get(self, resource: str) -> Obj | None:
        return self._mapping.get(resource)

    def class_name(self, resource: str) -> str | None:
        klass = self._mapping.get(resource)
        return None if klass is None else object_name(klass)

    def __bool__(self) -> bool:
        return bool(self._mapping)


def mapped_requests(pod: PodInfo, resolver: DeviceClassResolver) -> dict[str, int]:
    """The pod's DRA-extended requests if any of them is backed by a class, else ``{}``.

    kube's hasDeviceClassMappedExtendedResource gate plus ``podScalarResources``:
    once one requested resource maps to a class, every DRA-extended resource the
    pod requests is looked at per node (the unmapped ones must come from a device
    plugin there).
    """
    if not resolver:
        return {}
    wanted = {
        name: amount
        for name, amount in pod.requests.items()
        if amount > 0 and is_dra_extended_resource_name(name)
    }
    if not any(resolver.get(name) is not None for name in wanted):
        return {}
    return wanted


def template_claim(pod: PodInfo, temporary_uid: str) -> dict[str, Any]:
    """kube's in-memory special claim: no requests yet, owned by the pod, generateName set."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": SPECIAL_CLAIM_NAME,
            "uid": temporary_uid,
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod.name,
                    "uid": pod.uid,
                    "controller": True,
                }
            ],
            "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
        },
        "spec": {},
    }


def is_special(claim: Obj) -> bool:
    return meta(claim).get("name") == SPECIAL_CLAIM_NAME


def owner_uid(claim: Obj) -> str | None:
    """The pod an extended-resource claim belongs to (kube's findExtendedResourceClaim test)."""
    m = meta(claim)
    annotations = m.get("annotations") or {}
    if annotations.get(EXTENDED_CLAIM_ANNOTATION) != "true":
        return None
    for ref in m.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return None


def find_extended_claim(pod: PodInfo, claims: Iterable[Obj]) -> Obj | None:
    """kube's findExtendedResourceClaim: the pod's annotated claim from an earlier attempt."""
    m_name = pod.name
    for claim in claims:
        m = meta(claim)
        if (m.get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) != "true":
            continue
        for ref in m.get("ownerReferences") or ():
            if (
                isinstance(ref, Mapping)
                and ref.get("name") == m_name
                and ref.get("controller")
                and ref.get("uid") == pod.uid
            ):
                return claim
    return None


# -- requests and mappings (kube's createRequestsAndMappings) ---------------------------


@dataclass(frozen=True, slots=True)
class _Request:
    name: str
    class_name: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "exactly": {
                "deviceClassName": self.class_name,
                "allocationMode": "ExactCount",
                "count": self.count,
            },
        }


def _requests_of(container: Mapping[str, Any]) -> dict[str, Any]:
    """The container's requests as the API server stores them: limits fill the gaps."""
    resources = container.get("resources") or {}
    return {**(resources.get("limits") or {}), **(resources.get("requests") or {})}


def _int_request(container: Mapping[str, Any], resource: str) -> int | None:
    """The container's request for ``resource`` if a whole number (Quantity.AsInt64)."""
    requests = _requests_of(container)
    if resource not in requests:
        return None
    try:
        value = parse_quantity(requests[resource])
    except QuantityError:
        return None
    if value.denominator != 1:
        return None
    return int(value)


def _request_and_mappings(
    index: int,
    container: Mapping[str, Any],
    resource: str,
    class_name: str,
    reusable: list[_Request | None],
) -> tuple[_Request | None, list[dict[str, str]]]:
    """kube's createResourceRequestAndMappings for one container and resource."""
    count = _int_request(container, resource)
    if not count:
        return None, []
    container_name = str(container.get("name") or "")
    mappings: list[dict[str, str]] = []
    covered = 0
    for request in reusable:
        if request is None:
            continue
        covered += request.count
        mappings.append(
            {"containerName": container_name, "resourceName": resource, "requestName": request.name}
        )
        if covered >= count:
            return None, mappings
    # The request's index among the container's requests, sorted by name.
    names = sorted(_requests_of(container))
    position = names.index(resource)
    name = f"container-{index}-request-{position}"
    mappings.append(
        {"containerName": container_name, "resourceName": resource, "requestName": name}
    )
    return _Request(name, class_name, count - covered), mappings


def requests_and_mappings(
    pod: Mapping[str, Any], resources: Iterable[str], resolver: DeviceClassResolver
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The special claim's device requests for ``resources`` and the container mappings.

    One request per long-lived container (regular containers and sidecars)
    asking for a resource; non-sidecar init containers run one at a time, so
    they first reuse the devices of the long-lived containers after them and
    share one request, the largest, for the rest. Requests are sorted by
    name; mappings list the long-lived containers' first, per resource in
    name order, as kube's do.
    """
    spec = pod.get("spec") or {}
    init = list(spec.get("initContainers") or ())
    containers = init + list(spec.get("containers") or ())
    long_lived: list[int] = []
    short_lived: list[int] = []
    for i, container in enumerate(containers):
        sidecar = container.get("restartPolicy") == "Always"
        (short_lived if i < len(init) and not sidecar else long_lived).append(i)
    out: list[_Request] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(resources):
        class_name = resolver.class_name(resource)
        if class_name is None:
            continue
        long_requests: list[_Request | None] = [None] * len(containers)
        long_mappings: list[dict[str, str]] = []
        for i in long_lived:
            request, found = _request_and_mappings(i, containers[i], resource, class_name, [])
            long_requests[i] = request
            long_mappings += found
        largest: _Request | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for i in short_lived:
            request, found = _request_and_mappings(
                i, containers[i], resource, class_name, long_requests[i:]
            )
            if request is not None:
                short_names.add(request.name)
                if largest is None or largest.count < request.count:
                    largest = request
            short_mappings += found
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest.name
        if largest is not None:
            out.append(largest)
        out += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    out.sort(key=lambda r: r.name)
    return [r.to_dict() for r in out], mappings
