"""Pod resource requests and node allocatable, computed as kube-scheduler computes them.

NodeResourcesFit and the resource scorers decide on ``PodRequests`` from
``k8s.io/component-helpers/resource``; any difference here (how init containers,
sidecars, overhead or pod-level resources combine) would make this scheduler accept
pods the kubelet then rejects, or the reverse. The rules reproduced, as of
Kubernetes 1.36 with default feature gates:

* a container's requests are its ``resources.requests``, plus its ``limits`` for
  every resource it has a limit but no request for (the API server's defaulting;
  re-applying it is a no-op for objects read from a cluster);
* steady state = sum of regular containers + sum of sidecars (init containers with
  ``restartPolicy: Always``);
* each non-sidecar init container needs its own requests plus every sidecar started
  before it; the pod needs at least the largest of those;
* pod-level ``spec.resources.requests`` (PodLevelResources, on by default) replaces
  the aggregate for cpu, memory and ``hugepages-*``; pod-level requests are defaulted
  from pod-level limits as the API server does;
* ``spec.overhead`` is added last;
* sums and maxima are exact; conversion to integers happens once, at the end: cpu in
  millicores rounded up (``MilliValue``), everything else rounded up (``Value``).

Only the resources kube-scheduler tracks appear in results: cpu, memory,
ephemeral-storage, pods, and "scalar" resources (extended resources such as
``nvidia.com/gpu``, ``hugepages-*``, ``*kubernetes.io/*`` and
``attachable-volumes-*``). Names outside those, e.g. ``storage``, are ignored by
kube-scheduler's ``Resource.Add`` and dropped here too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any, Final

from scheduler.model._quote import go_quote
from scheduler.model.names import qualified_name_errors
from scheduler.model.quantity import QuantityError, ceil_fraction, parse_quantity

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "RESOURCE_CPU",
    "RESOURCE_EPHEMERAL_STORAGE",
    "RESOURCE_MEMORY",
    "RESOURCE_PODS",
    "PodSpecError",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "node_allocatable",
    "pod_non_zero_requests",
    "pod_requests",
]

RESOURCE_CPU: Final = "cpu"
RESOURCE_MEMORY: Final = "memory"
RESOURCE_EPHEMERAL_STORAGE: Final = "ephemeral-storage"
RESOURCE_PODS: Final = "pods"

#: Millicores assumed for a container without a cpu request, for scoring only.
DEFAULT_MILLI_CPU_REQUEST: Final = 100
#: Bytes assumed for a container without a memory request, for scoring only.
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024

_HUGEPAGES_PREFIX: Final = "hugepages-"
_ATTACHABLE_VOLUMES_PREFIX: Final = "attachable-volumes-"
_NATIVE_NAMESPACE: Final = "kubernetes.io/"
_QUOTA_REQUESTS_PREFIX: Final = "requests."

_BASE_UNIT_RESOURCES: Final = frozenset(
    {RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_PODS}
)

_ResourceList = dict[str, Fraction]

_NON_ZERO_DEFAULTS: Final[Mapping[str, Fraction]] = {
    RESOURCE_CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    RESOURCE_MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}


class PodSpecError(ValueError):
    """A pod or node whose resource fields do not have the shape the API defines.

    Malformed quantities raise :class:`~scheduler.model.quantity.QuantityError`
    instead; both are ``ValueError`` so a caller can treat "this object is broken"
    uniformly.
    """


def is_extended_resource_name(name: str) -> bool:
    """Whether ``name`` is an extended resource (e.g. ``example.com/foo``).

    Extended resources live outside the ``kubernetes.io`` namespace, so they carry a
    domain prefix; ``requests.`` + name must also be a valid qualified name because
    quota refers to them that way.
    """
    if "/" not in name or _NATIVE_NAMESPACE in name:
        return False
    if name.startswith(_QUOTA_REQUESTS_PREFIX):
        return False
    return not qualified_name_errors(_QUOTA_REQUESTS_PREFIX + name)


def is_scalar_resource_name(name: str) -> bool:
    """Whether kube-scheduler tracks ``name`` as a "scalar" resource.

    Scalar resources are compared by integer value in NodeResourcesFit; anything
    that is neither scalar nor cpu/memory/ephemeral-storage/pods is never counted.
    """
    return (
        is_extended_resource_name(name)
        or name.startswith(_HUGEPAGES_PREFIX)
        or _NATIVE_NAMESPACE in name
        or name.startswith(_ATTACHABLE_VOLUMES_PREFIX)
    )


def pod_requests(pod: Mapping[str, Any], *, use_status_resources: bool = False) -> dict[str, int]:
    """The pod's effective resource requests, as NodeResourcesFit computes them.

    cpu is in millicores, other resources in base units (bytes, count); zero entries
    are omitted. ``use_status_resources`` adds in-place-resize accounting (requests
    are the largest of spec, ``status.containerStatuses[].resources`` and
    ``allocatedResources``): kube-scheduler uses it for pods already on a node, not
    for the pod being scheduled.
    """
    return _to_units(_pod_requests_exact(pod, use_status_resources, None))


def pod_non_zero_requests(
    pod: Mapping[str, Any], *, use_status_resources: bool = False
) -> tuple[int, int]:
    """(cpu millicores, memory bytes) with kube-scheduler's non-zero defaults.

    Scoring spreads "best effort" pods by pretending each container that does not
    request cpu (memory) requests 100m (200Mi). A request explicitly set to zero is
    kept as zero. When pod-level requests are set, the defaults apply only to a
    resource the whole pod leaves unrequested.
    """
    return _non_zero(pod, use_status_resources, None)


def pod_request_totals(pod: Mapping[str, Any]) -> tuple[dict[str, int], tuple[int, int]]:
    """:func:`pod_requests` and :func:`pod_non_zero_requests` of a pod to be scheduled.

    One pass over the containers serves both when each of them requests cpu
    and memory (the defaults then change nothing): the informer parses every
    pod, most of them unlike any other.
    """
    exact = _pod_requests_exact(pod, False, None)
    return _to_units(exact), _non_zero(pod, False, exact)


def _non_zero(
    pod: Mapping[str, Any], use_status_resources: bool, exact: _ResourceList | None
) -> tuple[int, int]:
    if _pod_level_requests_set(pod):
        if exact is None:
            exact = _pod_requests_exact(pod, use_status_resources, None)
        non_missing = {k: v for k, v in _NON_ZERO_DEFAULTS.items() if k not in exact}
    else:
        non_missing = dict(_NON_ZERO_DEFAULTS)
    requests = exact
    if requests is None or (non_missing and _defaults_apply(pod, non_missing)):
        requests = _pod_requests_exact(pod, use_status_resources, non_missing)
    cpu = requests.get(RESOURCE_CPU, Fraction(0))
    memory = requests.get(RESOURCE_MEMORY, Fraction(0))
    return ceil_fraction(cpu * 1000), ceil_fraction(memory)


def _defaults_apply(pod: Mapping[str, Any], defaults: Mapping[str, Fraction]) -> bool:
    """Whether some container sets neither a request nor a limit for a defaulted resource.

    Status resources only add names to what the spec asks, so the spec decides.
    """
    spec = _mapping(pod.get("spec"), "pod spec")
    for field in ("containers", "initContainers"):
        for container in _containers(spec, field):
            what = f"{field} {go_quote(str(container.get('name', '')))}"
            resources = _resources(container, what)
            requests = _mapping(resources.get("requests"), f"{what} requests")
            limits = _mapping(resources.get("limits"), f"{what} limits")
            if any(name not in requests and name not in limits for name in defaults):
                return True
    return False


def node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """What the node offers to pods, in the units of :func:`pod_requests`.

    Reads ``status.allocatable``; when that is absent or empty, ``status.capacity``
    (the API server defaults a missing allocatable to capacity, and an empty one does
    not survive a round trip through storage). ``pods`` is the pod-count limit.
    Zero entries are omitted.
    """
    status = _mapping(node.get("status"), "status")
    allocatable = status.get("allocatable")
    source = "status.allocatable"
    if not allocatable:
        allocatable = status.get("capacity")
        source = "status.capacity"
    return _to_units(_parse_resource_list(allocatable, source))


# --------------------------------------------------------------------------- internals


def _pod_requests_exact(
    pod: Mapping[str, Any],
    use_status_resources: bool,
    non_missing: Mapping[str, Fraction] | None,
) -> _ResourceList:
    spec = _mapping(pod.get("spec"), "pod spec")
    status = _mapping(pod.get("status"), "pod status")
    statuses: dict[str, Mapping[str, Any]] = {}
    if use_status_resources:
        for field in ("containerStatuses", "initContainerStatuses"):
            for cs in _list(status.get(field), f"status.{field}"):
                cs_map = _mapping(cs, f"status.{field}[]")
                statuses[str(cs_map.get("name", ""))] = cs_map
    resize_infeasible = _resize_infeasible(status)

    def effective(
        container: Mapping[str, Any], what: str, sidecar_or_regular: bool
    ) -> _ResourceList:
        requests = _container_requests(container, what)
        if use_status_resources and sidecar_or_regular:
            cs = statuses.get(str(container.get("name", "")))
            if cs is not None and cs.get("resources") is not None:
                where = f"{what} status"
                actuated = _parse_resource_list(
                    _mapping(cs.get("resources"), where).get("requests"), f"{where} requests"
                )
                allocated = _parse_resource_list(
                    cs.get("allocatedResources"), f"{where} allocatedResources"
                )
                requests = _effective(requests, actuated, allocated, resize_infeasible)
        if non_missing:
            requests = dict(requests)
            for name, value in non_missing.items():
                requests.setdefault(name, value)
        return requests

    reqs = _aggregate(spec, effective)

    pod_level = _defaulted_pod_level_requests(spec)
    if any(_supported_pod_level(name) for name in pod_level):
        effective_pod: _ResourceList | None = None
        pod_status_resources = status.get("resources")
        if use_status_resources and pod_status_resources is not None:
            actuated = _parse_resource_list(
                _mapping(pod_status_resources, "pod status resources").get("requests"),
                "pod status resources requests",
            )
            allocated = _parse_resource_list(
                status.get("allocatedResources"), "pod status allocatedResources"
            )
            effective_pod = _effective(pod_level, actuated, allocated, resize_infeasible)
        for name, value in pod_level.items():
            if _supported_pod_level(name):
                if effective_pod is not None:
                    # kube-scheduler reads a missing entry as a zero quantity.
                    reqs[name] = effective_pod.get(name, Fraction(0))
                else:
                    reqs[name] = value

    _add_into(reqs, _parse_resource_list(spec.get("overhead"), "pod overhead"))
    return reqs


def _aggregate(
    spec: Mapping[str, Any],
    requests_of: Callable[[Mapping[str, Any], str, bool], _ResourceList],
) -> _ResourceList:
    """Combine container requests by the sidecar-aware formula (KEP-753)."""
    total: _ResourceList = {}
    for container in _containers(spec, "containers"):
        what = f"container {go_quote(str(container.get('name', '')))}"
        _add_into(total, requests_of(container, what, True))

    sidecars: _ResourceList = {}
    init_peak: _ResourceList = {}
    for container in _containers(spec, "initContainers"):
        what = f"init container {go_quote(str(container.get('name', '')))}"
        sidecar = _is_sidecar(container)
        requests = requests_of(container, what, sidecar)
        if sidecar:
            _add_into(total, requests)
            _add_into(sidecars, requests)
            while_starting = dict(sidecars)
        else:
            while_starting = dict(requests)
            _add_into(while_starting, sidecars)
        _max_into(init_peak, while_starting)

    _max_into(total, init_peak)
    return total


def _defaulted_pod_level_requests(spec: Mapping[str, Any]) -> _ResourceList:
    """``spec.resources.requests`` after the API server's pod-level defaulting.

    With pod-level limits present, a supported resource without a pod-level request
    gets the containers' aggregate request (cpu/memory) or else the pod-level limit;
    hugepages limits are first defaulted from the containers' aggregate limits.
    """
    resources = spec.get("resources")
    if resources is None:
        return {}
    resources = _mapping(resources, "pod resources")
    requests = _parse_resource_list(resources.get("requests"), "pod resources requests")
    limits = _parse_resource_list(resources.get("limits"), "pod resources limits")

    if limits or requests:
        aggregate_limits = _aggregate(
            spec,
            lambda c, what, _s: _parse_resource_list(
                _resources(c, what).get("limits"), f"{what} limits"
            ),
        )
        for name, value in aggregate_limits.items():
            if name.startswith(_HUGEPAGES_PREFIX) and name not in requests:
                limits.setdefault(name, value)

    if not limits:
        return requests
    aggregate_requests = _aggregate(spec, lambda c, what, _s: _container_requests(c, what))
    for name, value in aggregate_requests.items():
        if name in (RESOURCE_CPU, RESOURCE_MEMORY):
            requests.setdefault(name, value)
    for name, value in limits.items():
        if _supported_pod_level(name):
            requests.setdefault(name, value)
    return requests


def _pod_level_requests_set(pod: Mapping[str, Any]) -> bool:
    spec = _mapping(pod.get("spec"), "pod spec")
    return any(_supported_pod_level(name) for name in _defaulted_pod_level_requests(spec))


def _supported_pod_level(name: str) -> bool:
    return name in (RESOURCE_CPU, RESOURCE_MEMORY) or name.startswith(_HUGEPAGES_PREFIX)


def _container_requests(container: Mapping[str, Any], what: str) -> _ResourceList:
    resources = _resources(container, what)
    requests = _parse_resource_list(resources.get("requests"), f"{what} requests")
    limits = _parse_resource_list(resources.get("limits"), f"{what} limits")
    for name, value in limits.items():
        requests.setdefault(name, value)
    return requests


def _effective(
    spec: _ResourceList, actuated: _ResourceList, allocated: _ResourceList, infeasible: bool
) -> _ResourceList:
    """In-place resize: the largest of what is asked, running and admitted.

    An infeasible resize will never be actuated, so its spec is ignored.
    """
    result = dict(actuated) if infeasible else dict(spec)
    if not infeasible:
        _max_into(result, actuated)
    _max_into(result, allocated)
    return result


def _resize_infeasible(status: Mapping[str, Any]) -> bool:
    for condition in _list(status.get("conditions"), "status.conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "PodResizePending":
            return bool(condition.get("reason") == "Infeasible")
    return False


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _resources(container: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    return _mapping(container.get("resources"), f"{what} resources")


def _containers(spec: Mapping[str, Any], field: str) -> Iterable[Mapping[str, Any]]:
    for index, container in enumerate(_list(spec.get(field), f"spec.{field}")):
        yield _mapping(container, f"spec.{field}[{index}]")


def _parse_resource_list(value: object, where: str) -> _ResourceList:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PodSpecError(f"{where}: expected a mapping of resource names to quantities")
    result: _ResourceList = {}
    for name, quantity in value.items():
        try:
            result[str(name)] = parse_quantity(quantity)
        except QuantityError as err:
            raise err.with_context(f"{where}.{name}") from None
    return result


def _to_units(resources: Mapping[str, Fraction]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in resources.items():
        if name == RESOURCE_CPU:
            amount = ceil_fraction(value * 1000)
        elif name in _BASE_UNIT_RESOURCES or is_scalar_resource_name(name):
            amount = ceil_fraction(value)
        else:
            continue
        if amount:
            out[name] = amount
    return out


def _add_into(total: _ResourceList, more: Mapping[str, Fraction]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Fraction(0)) + value


def _max_into(peak: _ResourceList, other: Mapping[str, Fraction]) -> None:
    for name, value in other.items():
        if name not in peak or value > peak[name]:
            peak[name] = value


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PodSpecError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PodSpecError(f"{where}: expected a list, got {type(value).__name__}")
    return value
