"""Typed, parsed views of pods handed to plugins.

A pod arrives as the API server's raw JSON. Parsing it once into a
:class:`PodInfo` (resource requests summed, tolerations and host ports parsed)
keeps that work out of the per-cycle path; every plugin reads the same parse.
Anything a plugin needs that is not pre-parsed is in ``raw``, and a plugin may
memoise its own derived data in ``cache`` (keyed by its plugin name).

A PodInfo and its ``raw`` are read-only: pods made from one template share
their parsed parts, and in the daemon (see :func:`compact_pod`) parts of
their raw objects too, so a change made through one pod would show in
others. The parsed collections that are shared refuse changes
(``TypeError``); ``raw`` is plain JSON data and relies on the convention,
as objects from a client-go informer cache do. ``cache`` is the one part a
plugin may write.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import orjson

from scheduler.model.ports import HostPort, pod_host_ports
from scheduler.model.quantity import QuantityError
from scheduler.model.resources import pod_request_totals
from scheduler.model.taints import Toleration

_K = TypeVar("_K")
_V = TypeVar("_V")
_T = TypeVar("_T")


class InvalidPodError(ValueError):
    """A pod whose spec cannot be scheduled as written; the message names it."""


def _refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__}: shared between pods and read-only")


class FrozenDict(dict[_K, _V]):
    """A dict that refuses changes; copies (``dict(d)``, ``copy``, pickle) are plain dicts."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[type[dict[_K, _V]], tuple[dict[_K, _V]]]:
        return dict, (dict(self),)


class FrozenList(list[_T]):
    """A list that refuses changes; copies (``list(x)``, ``copy``, pickle) are plain lists."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[type[list[_T]], tuple[list[_T]]]:
        return list, (list(self),)


# What pods without labels, tolerations, ... all share.
_EMPTY_DICT: FrozenDict[Any, Any] = FrozenDict()
_EMPTY_LIST: FrozenList[Any] = FrozenList()


def _frozen_list(items: Iterable[_T]) -> list[_T]:
    out = FrozenList(items)
    return out if out else _EMPTY_LIST


def _mapping_field(value: Any) -> dict[str, Any]:
    """A map from the raw pod, as is (it is read-only) or the shared empty one."""
    if type(value) is dict:
        return value if value else _EMPTY_DICT
    return dict(value) if value else _EMPTY_DICT


# -- parsed parts shared by pods of one template --------------------------------------

# Requests, tolerations, host ports and images depend only on these fields
# (status resources are not used for a PodInfo):
#
# * each container's and init container's ``resources``, ``ports`` and
#   ``image``, and an init container's ``restartPolicy`` (sidecars);
# * the spec's ``resources`` (pod-level), ``overhead``, ``hostNetwork`` and
#   ``tolerations``.
#
# Pods made from one template share them: parsing quantities (exact fractions)
# is most of the cost of a parse, so it is done once per distinct set of those
# fields, and the result (read-only) is shared by all those pods. The key is
# those fields and nothing else: every pod has a service account token volume
# named per pod (kube-api-access-xxxxx) and mounted in each of its containers,
# so a key on whole containers would never hit. Container names only appear in
# error messages, and errors are not cached. Bounded; cleared when full.
_Derived = tuple[dict[str, int], tuple[int, int], list[Toleration], list[HostPort], list[str]]
_DERIVED_CACHE: dict[bytes, _Derived] = {}
_DERIVED_CACHE_SIZE = 4096


def _container_fields(containers: Any, init: bool) -> list[Any] | None:
    """What the parse reads of each container; raises ``TypeError`` on odd shapes."""
    if containers is None:
        return None
    if type(containers) is not list:
        raise TypeError  # let the parser report it
    fields: list[Any] = []
    for c in containers:
        if type(c) is not dict:
            raise TypeError
        if init:
            fields.append(
                (c.get("resources"), c.get("ports"), c.get("image"), c.get("restartPolicy"))
            )
        else:
            fields.append((c.get("resources"), c.get("ports"), c.get("image")))
    return fields


def _status_checked(raw: dict[str, Any]) -> bool:
    """Whether the status has the shape the parser checks (an odd one is never cached)."""
    status = raw.get("status")
    if status is not None:
        # Not read for the result, but the parser checks their shape.
        if type(status) is not dict:
            return False
        conditions = status.get("conditions")
        if conditions is not None and type(conditions) is not list:
            return False
    return True


def _derive_inputs(spec: dict[str, Any]) -> tuple[Any, ...]:
    """What :func:`_derive` reads of a spec; raises ``TypeError`` on odd shapes."""
    return (
        _container_fields(spec.get("containers"), False),
        _container_fields(spec.get("initContainers"), True),
        spec.get("resources"),
        spec.get("overhead"),
        spec.get("hostNetwork"),
        spec.get("tolerations"),
    )


def _derived_key(raw: dict[str, Any], spec: dict[str, Any]) -> bytes | None:
    """The cache key of :func:`_derive`'s result, or None when not to cache."""
    if not _status_checked(raw):
        return None
    try:
        return orjson.dumps(_derive_inputs(spec))
    except TypeError:
        return None


def _as_before(raw: dict[str, Any], spec: dict[str, Any], previous: PodInfo) -> bool:
    """Whether ``previous`` (the same pod, parsed before) was derived from the same inputs.

    An update of a pod (its binding, a status or label change) rarely touches
    them. The shared cache does not cover that: pods unlike each other (each
    its own requests) fill it, and with thousands created ahead of their
    binding, a pod's entry is gone when its binding comes back.
    """
    old_spec = previous.raw.get("spec")
    if type(old_spec) is not dict or not _status_checked(raw):
        return False
    try:
        return bool(_derive_inputs(spec) == _derive_inputs(old_spec))
    except TypeError:
        return False


def _derive(raw: dict[str, Any], spec: dict[str, Any]) -> _Derived:
    requests, non_zero = pod_request_totals(raw)
    tolerations = [Toleration.from_dict(t) for t in spec.get("tolerations") or ()]
    host_ports = pod_host_ports(raw)
    containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
    images = [str(c["image"]) for c in containers if isinstance(c, dict) and c.get("image")]
    return (
        FrozenDict(requests) if requests else _EMPTY_DICT,
        non_zero,
        _frozen_list(tolerations),
        _frozen_list(host_ports),
        _frozen_list(images),
    )


def _parse_spec(
    raw: dict[str, Any], spec: dict[str, Any], previous: PodInfo | None = None
) -> _Derived:
    if previous is not None and _as_before(raw, spec, previous):
        return (
            previous.requests,
            previous.non_zero_requests,
            previous.tolerations,
            previous.host_ports,
            previous.images,
        )
    key = _derived_key(raw, spec)
    cached = _DERIVED_CACHE.get(key) if key is not None else None
    if cached is None:
        cached = _derive(raw, spec)
        if key is not None:
            if len(_DERIVED_CACHE) >= _DERIVED_CACHE_SIZE:
                _DERIVED_CACHE.clear()
            _DERIVED_CACHE[key] = cached
    return cached


# -- raw parts shared by pods of one template -------------------------------------------


class _Shared:
    """What :func:`compact_pod` keeps once: each part by its JSON, and strings.

    Bounded by entries and by the bytes of the keys; cleared when full (the
    pods keep what they share, new pods start sharing anew). A list is kept
    whole only when all its parts were kept before, so lists with a part of
    one pod's own (its token volume or mount) do not fill it.
    """

    __slots__ = ("parts", "parts_bytes", "strings")

    PARTS_MAX = 4096
    PARTS_BYTES_MAX = 8 << 20
    STRINGS_MAX = 1 << 16

    def __init__(self) -> None:
        self.parts: dict[bytes, Any] = {}
        self.parts_bytes = 0
        self.strings: dict[str, str] = {}

    def part(self, value: Any) -> Any:
        """The shared object equal to ``value`` (as JSON), or ``value`` now shared."""
        try:
            key = orjson.dumps(value)
        except TypeError:
            return value
        shared = self.parts.get(key)
        if shared is not None:
            return shared
        return self._keep(key, value)

    def _keep(self, key: bytes, value: Any) -> Any:
        if len(self.parts) >= self.PARTS_MAX or self.parts_bytes > self.PARTS_BYTES_MAX:
            self.parts.clear()
            self.parts_bytes = 0
        self.parts[key] = value
        self.parts_bytes += len(key)
        return value

    def strings_of(self, obj: dict[str, Any]) -> None:
        """Share ``obj``'s string values (not those of nested objects)."""
        strings = self.strings
        for key, value in obj.items():
            if type(value) is str:
                obj[key] = strings.setdefault(value, value)

    def _whole(self, items: list[Any]) -> tuple[bytes | None, list[Any] | None]:
        """``items``' key and the shared list equal to it, if any."""
        try:
            key = orjson.dumps(items)
        except TypeError:
            return None, items
        return key, self.parts.get(key)

    def container_list(self, containers: list[Any]) -> list[Any]:
        """A containers list: shared whole, or else each container's parts.

        Containers of one template mostly differ only in a mount of the pod's
        own token volume: their lists are shared item by item.
        """
        key, shared = self._whole(containers)
        if key is None:
            return containers
        if shared is not None:
            return shared
        strings = self.strings
        new = False
        for container in containers:
            if type(container) is dict:
                for name, value in container.items():
                    kind = type(value)
                    if kind is str:
                        container[name] = strings.setdefault(value, value)
                    elif kind is dict:
                        container[name] = part = self.part(value)
                        new = new or part is value
                    elif kind is list:
                        container[name] = part = self.item_list(value)
                        new = new or part is value
            else:
                new = True
        # Kept whole only when made of parts seen before: a list with a part of
        # its own (a per-pod mount) would never be asked for again.
        return containers if new else self._keep(key, containers)

    def item_list(self, items: list[Any]) -> list[Any]:
        """A list shared whole, or else item by item (volumes: one may be the pod's own)."""
        key, shared = self._whole(items)
        if key is None:
            return items
        if shared is not None:
            return shared
        new = False
        for index, item in enumerate(items):
            kind = type(item)
            if kind is dict or kind is list:
                items[index] = part = self.part(item)
                if part is item:
                    new = True
                    if kind is dict:  # e.g. a token volume: all but its name is common
                        for name, value in item.items():
                            if type(value) is dict:
                                item[name] = self.part(value)
        # As in container_list (a list of strings or numbers is kept at once).
        return items if new else self._keep(key, items)


_SHARED = _Shared()
_CONTAINER_LISTS = frozenset(("containers", "initContainers", "ephemeralContainers"))
_META_STRINGS = ("namespace", "generateName", "creationTimestamp")
_META_PARTS = ("labels", "annotations", "ownerReferences", "finalizers")


def compact_pod(raw: dict[str, Any]) -> dict[str, Any]:
    """Drop ``metadata.managedFields`` and share with other pods what ``raw`` has in common.

    The daemon's pod informer applies this to every pod it receives, before
    storing it. Pods made from one template (a ReplicaSet's, a Job's)
    decode into equal but separate objects: containers, tolerations,
    affinity, labels, and strings such as the namespace, image and node
    name. Here each such part is replaced by one shared object equal to it,
    which cuts the memory a bound pod costs by more than half. Equal means
    equal as JSON, so a pod reads exactly as before; the parts are shared,
    which is why raw pods are read-only. managedFields is dropped as
    kube-scheduler's informers do: a scheduler never reads it. Returns
    ``raw``, changed in place.
    """
    if type(raw) is not dict:
        return raw
    shared = _SHARED
    strings = shared.strings
    if len(strings) >= shared.STRINGS_MAX:
        strings.clear()
    shared.strings_of(raw)
    meta = raw.get("metadata")
    if type(meta) is dict:
        meta.pop("managedFields", None)
        for key in _META_STRINGS:
            value = meta.get(key)
            if type(value) is str:
                meta[key] = strings.setdefault(value, value)
        for key in _META_PARTS:
            value = meta.get(key)
            if value:
                meta[key] = shared.part(value)
    spec = raw.get("spec")
    if type(spec) is dict:
        for key, value in spec.items():
            kind = type(value)
            if kind is str:
                spec[key] = strings.setdefault(value, value)
            elif kind is list:
                if key in _CONTAINER_LISTS:
                    spec[key] = shared.container_list(value)
                else:
                    spec[key] = shared.item_list(value)
            elif kind is dict:
                spec[key] = shared.part(value)
    status = raw.get("status")
    if type(status) is dict:
        shared.strings_of(status)
        conditions = status.get("conditions")
        if type(conditions) is list:
            status["conditions"] = shared.item_list(conditions)
    return raw


def _claim_names(pod_name: str, volumes: Any) -> tuple[list[str], list[str]]:
    """The claims of a pod's volumes: all of them, and those of ephemeral volumes.

    A generic ephemeral volume's claim is named ``<pod>-<volume>`` (kube's
    ``ephemeral.VolumeClaimName``); the pod cannot run before it exists.
    """
    claims: list[str] = []
    ephemeral: list[str] = []
    for volume in volumes:
        if not isinstance(volume, dict):
            continue
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, dict):
            claims.append(str(source.get("claimName", "")))
        elif isinstance(volume.get("ephemeral"), dict):
            claim = f"{pod_name}-{volume.get('name', '')}"
            claims.append(claim)
            ephemeral.append(claim)
    return (
        _frozen_list(claims) if claims else _EMPTY_LIST,
        _frozen_list(ephemeral) if ephemeral else _EMPTY_LIST,
    )


@dataclass(slots=True, eq=False)
class PodInfo:
    """One pod, parsed; read-only but for ``cache`` (see the module docstring)."""

    raw: dict[str, Any]
    namespace: str
    name: str
    key: str  # ``namespace/name``, the way kube-scheduler names pods in messages
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    scheduler_name: str
    node_name: str
    priority: int
    creation_timestamp: str
    resource_version: str
    requests: dict[str, int]
    non_zero_requests: tuple[int, int]
    node_selector: dict[str, str]
    affinity: dict[str, Any]
    tolerations: list[Toleration]
    host_ports: list[HostPort]
    scheduling_gates: list[str]
    topology_spread_constraints: list[dict[str, Any]]
    images: list[str]
    #: Every PersistentVolumeClaim the pod's volumes use, in volume order: the
    #: ``persistentVolumeClaim`` claims and the generic ephemeral volumes'
    #: ``<pod>-<volume>`` claims, which the ephemeral-volume controller creates.
    pvc_names: list[str]
    #: The subset of ``pvc_names`` that belong to generic ephemeral volumes.
    ephemeral_pvc_names: list[str]
    #: Names of the pod's ``spec.resourceClaims`` entries (Dynamic Resource Allocation).
    resource_claims: list[str]
    nominated_node_name: str
    deleting: bool
    phase: str
    _cache: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def cache(self) -> dict[str, Any]:
        """Plugins' memo for this pod, keyed by plugin name (made on first use)."""
        cache = self._cache
        if cache is None:
            cache = self._cache = {}
        return cache

    def same_footprint(self, other: PodInfo) -> bool:
        """Equal in all a node table accounts and indexes a pod by (a later copy of it).

        The informer's copy of an assumed pod (its binding coming back) is
        swapped in without accounting it again when this holds.
        """
        return (
            self.requests == other.requests
            and self.non_zero_requests == other.non_zero_requests
            and self.host_ports == other.host_ports
            and self.namespace == other.namespace
            and self.labels == other.labels
            and self.affinity == other.affinity
            and self.pvc_names == other.pvc_names
        )

    @classmethod
    def from_dict(cls, raw: dict[str, Any], previous: PodInfo | None = None) -> PodInfo:
        """Parse a pod; raise :class:`InvalidPodError` naming the pod on bad specs.

        ``previous``: this pod as parsed before (an update); what its spec
        gave that the update left alone is taken from it, not parsed again.
        """
        meta = raw.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or meta.get("generateName") or "")
        key = f"{namespace}/{name}"
        spec = raw.get("spec")
        if not isinstance(spec, dict):
            raise InvalidPodError(f"pod {key}: spec is missing or not an object")
        status = raw.get("status") or {}
        try:
            requests, non_zero, tolerations, host_ports, images = _parse_spec(raw, spec, previous)
        except (QuantityError, ValueError, TypeError, AttributeError) as err:
            raise InvalidPodError(f"pod {key}: {err}") from err
        priority = spec.get("priority")
        if priority is not None and not isinstance(priority, int):
            raise InvalidPodError(f"pod {key}: spec.priority must be an integer")
        volumes = spec.get("volumes")
        pvc_names, ephemeral_pvc_names = (
            _claim_names(name, volumes) if volumes else (_EMPTY_LIST, _EMPTY_LIST)
        )
        resource_claims = spec.get("resourceClaims")
        gates = spec.get("schedulingGates")
        spread = spec.get("topologySpreadConstraints")
        return cls(
            raw=raw,
            namespace=namespace,
            name=name,
            key=key,
            uid=str(meta.get("uid") or ""),
            labels=_mapping_field(meta.get("labels")),
            annotations=_mapping_field(meta.get("annotations")),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
            node_name=str(spec.get("nodeName") or ""),
            priority=int(priority or 0),
            creation_timestamp=str(meta.get("creationTimestamp") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            requests=requests,
            non_zero_requests=non_zero,
            node_selector=_mapping_field(spec.get("nodeSelector")),
            affinity=_mapping_field(spec.get("affinity")),
            tolerations=tolerations,
            host_ports=host_ports,
            scheduling_gates=(
                _frozen_list(str(g.get("name", "")) for g in gates if g) if gates else _EMPTY_LIST
            ),
            topology_spread_constraints=(
                (spread if type(spread) is list else list(spread)) if spread else _EMPTY_LIST
            ),
            images=images,
            pvc_names=pvc_names,
            ephemeral_pvc_names=ephemeral_pvc_names,
            resource_claims=(
                _frozen_list(str(c.get("name", "")) for c in resource_claims if isinstance(c, dict))
                if resource_claims
                else _EMPTY_LIST
            ),
            nominated_node_name=str(status.get("nominatedNodeName") or ""),
            deleting=bool(meta.get("deletionTimestamp")),
            phase=str(status.get("phase") or ""),
        )


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod waiting in the scheduling queue, as QueueSort and PreEnqueue see it.

    ``timestamp`` is when it last entered the queue (monotonic seconds), which
    is what kube-scheduler's PrioritySort uses to break priority ties;
    ``initial_attempt_timestamp`` is the first time it was tried, for the SLI.
    """

    pod: PodInfo
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    consecutive_errors: int = 0
    cycle: int = 0  # the queue's scheduling cycle number of the latest attempt
