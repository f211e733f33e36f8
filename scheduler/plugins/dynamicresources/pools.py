"""ResourceSlices grouped into resource pools, as kube's structured allocator sees them.

The allocator only ever looks at the pools a node can reach, in kube's order (pools
sorted by driver then pool name, pools whose devices carry binding conditions last;
slices of a pool sorted by name; devices in slice order). That order decides which
devices a first-fit search picks, so it must be the same as kube's
(``structured/internal/incubating/pools_incubating.go``).

:class:`SliceIndex` is built once per change of the slice set and serves every
scheduling cycle until then: node-local slices are indexed by node name, everything
else (node selectors, ``allNodes``, per-device node selection, counter sets) is kept
in one list, and each slice's node selectors are parsed once. Gathering the pools for
a node therefore costs that node's slices plus the non-local ones, never all slices,
and validated pools are cached by the exact set of slices they were built from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from scheduler.model.quantity import QuantityError, parse_quantity
from scheduler.model.selectors import NodeSelector, SelectorError
from scheduler.plugins._helpers import object_name

__all__ = [
    "AllocationError",
    "Device",
    "DeviceKey",
    "NodeAllocationError",
    "NodeDeviceSummary",
    "Obj",
    "Pool",
    "PoolKey",
    "Slice",
    "SliceIndex",
]

Obj = Mapping[str, Any]
#: ``(driver, pool)``.
PoolKey = tuple[str, str]
#: ``(driver, pool, device)``, kube's ``DeviceID``.
DeviceKey = tuple[str, str, str]

_NO_SELECTOR: Final = NodeSelector()


class AllocationError(Exception):
    """A fatal allocation problem (kube's plain ``error`` from ``Allocate``).

    Caused by the input (a broken CEL expression, an unknown class, an "all devices"
    request while a pool is being updated, ...). kube aborts the scheduling attempt
    with this text instead of trying other nodes, because no node can fix it.
    """

    #: kube returns these as errors that end the scheduling attempt.
    fatal: bool = True


class NodeAllocationError(AllocationError):
    """Allocation failed on this node only (kube's ``ErrFailedAllocationOnNode``).

    kube reports the text as the node's unschedulable reason and keeps trying other
    nodes; today the only case is "invalid resource pools were encountered".
    """

    fatal = False


def _quantity(value: Any, where: str) -> Fraction:
    try:
        return parse_quantity(value)
    except QuantityError as err:
        raise AllocationError(f"{where}: {err}") from None


def _counters(raw: Any, where: str) -> dict[str, Fraction]:
    """``{name: {"value": q}}`` as exact numbers."""
    result: dict[str, Fraction] = {}
    for name, counter in (raw or {}).items():
        result[name] = _quantity((counter or {}).get("value", "0"), f"{where}: counter {name}")
    return result


@dataclass(eq=False, slots=True)
class Device:
    """One device of one slice; identity-hashed so verdict caches can key on it.

    Two slices for different nodes may carry devices with the same name in the same
    pool (kube only checks names among the slices a node sees), so a device is this
    object, not its :data:`DeviceKey`.
    """

    name: str
    raw: Obj
    slice: Slice
    key: DeviceKey
    consumes_counters: tuple[tuple[str, dict[str, Fraction]], ...]
    node_name: str
    all_nodes: bool
    raw_node_selector: Obj | None
    _node_selector: NodeSelector | None = None

    @property
    def attributes(self) -> Mapping[str, Any]:
        return self.raw.get("attributes") or {}

    @property
    def capacity(self) -> Mapping[str, Any]:
        return self.raw.get("capacity") or {}

    @property
    def taints(self) -> Sequence[Obj]:
        return self.raw.get("taints") or ()

    @property
    def binding_conditions(self) -> Sequence[str]:
        return self.raw.get("bindingConditions") or ()

    @property
    def binding_failure_conditions(self) -> Sequence[str]:
        return self.raw.get("bindingFailureConditions") or ()

    @property
    def binds_to_node(self) -> bool:
        return bool(self.raw.get("bindsToNode"))

    @property
    def allow_multiple_allocations(self) -> bool | None:
        value = self.raw.get("allowMultipleAllocations")
        return None if value is None else bool(value)

    def node_matches(self, node: Obj) -> bool:
        """kube's ``NodeMatches`` for the device's own node selection fields."""
        return _node_matches(self, node)


@dataclass(eq=False, slots=True)
class Slice:
    """One ResourceSlice, with what pool gathering needs already extracted."""

    name: str
    raw: Obj
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str
    all_nodes: bool
    raw_node_selector: Obj | None
    per_device_node_selection: bool
    shared_counters: tuple[tuple[str, dict[str, Fraction]], ...]
    devices: list[Device] = field(default_factory=list)
    _node_selector: NodeSelector | None = None

    @property
    def pool_key(self) -> PoolKey:
        return (self.driver, self.pool)

    def node_selector_for_result(self) -> tuple[str, Obj | None]:
        return self.node_name, self.raw_node_selector

    def relevant_for(self, node: Obj) -> bool | None:
        """Whether the slice belongs to the node's pools; ``None`` for an unknown kind.

        Mirrors the branches of kube's ``GatherPools``: counter-set slices always
        count, then nodeName/allNodes/nodeSelector, then per-device selection (any
        device matching is enough). A slice with none of these is some future
        extension and is skipped.
        """
        if self.shared_counters:
            return True
        if self.node_name or self.all_nodes or self.raw_node_selector is not None:
            try:
                return _node_matches(self, node)
            except AllocationError as err:
                raise AllocationError(
                    f"gather pool information: failed to perform node selection "
                    f"for slice {self.name}: {err}"
                ) from None
        if self.per_device_node_selection:
            for device in self.devices:
                try:
                    if device.node_matches(node):
                        return True
                except AllocationError as err:
                    raise AllocationError(
                        "gather pool information: failed to perform node selection for "
                        f"device {device.name} in slice {self.name}: {err}"
                    ) from None
            return False
        return None


@dataclass(eq=False, slots=True)
class Pool:
    """The part of one resource pool a node can see, as kube's ``Pool``.

    ``device_slices`` are the device slices targeting the node (the search space);
    ``other_slices`` the pool's remaining slices, only needed to count counters that
    their allocated devices consume. ``counter_sets`` maps counter set name to its
    counters.
    """

    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    device_slices: tuple[Slice, ...] = ()
    other_slices: tuple[Slice, ...] = ()
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)

    @property
    def key(self) -> PoolKey:
        return (self.driver, self.name)

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def has_binding_conditions(self) -> bool:
        return any(
            "bindingConditions" in d.raw and d.raw["bindingConditions"] is not None
            for s in self.device_slices
            for d in s.devices
        )


@dataclass(frozen=True, slots=True)
class NodeDeviceSummary:
    """Which nodes can possibly see a device: a cheap PreFilter aid.

    ``local_nodes`` have node-local slices; when ``non_local`` is true some slice
    uses a node selector, ``allNodes`` or per-device selection, so any node may see
    devices and only :meth:`SliceIndex.node_may_have_devices` can tell.
    """

    local_nodes: frozenset[str]
    non_local: bool


def _node_matches(owner: Device | Slice, node: Obj) -> bool:
    """kube's ``NodeMatches`` for the node selection fields of a slice or a device.

    The parsed selector is kept on ``owner``: it is parsed on first use only.
    """
    if owner.node_name:
        return object_name(node) == owner.node_name
    if owner.all_nodes:
        return True
    if owner.raw_node_selector is None:
        return False
    if owner._node_selector is None:
        try:
            owner._node_selector = NodeSelector.from_dict(owner.raw_node_selector)
        except SelectorError as err:
            raise AllocationError(
                f"failed to parse node selector {owner.raw_node_selector!r}: {err}"
            ) from None
    return owner._node_selector.matches_node(node)


def _parse_slice(raw: Obj) -> Slice:
    name = object_name(raw)
    spec = raw.get("spec") or {}
    pool = spec.get("pool") or {}
    where = f"ResourceSlice {name}"
    shared = tuple(
        (str(cs.get("name") or ""), _counters(cs.get("counters"), f"{where}: counter set"))
        for cs in spec.get("sharedCounters") or ()
    )
    result = Slice(
        name=name,
        raw=raw,
        driver=str(spec.get("driver") or ""),
        pool=str(pool.get("name") or ""),
        generation=int(pool.get("generation") or 0),
        slice_count=int(pool.get("resourceSliceCount") or 0),
        node_name=str(spec.get("nodeName") or ""),
        all_nodes=bool(spec.get("allNodes")),
        raw_node_selector=spec.get("nodeSelector"),
        per_device_node_selection=bool(spec.get("perDeviceNodeSelection")),
        shared_counters=shared,
    )
    for dev in spec.get("devices") or ():
        dev_name = str(dev.get("name") or "")
        consumes = tuple(
            (
                str(c.get("counterSet") or ""),
                _counters(c.get("counters"), f"{where}: device {dev_name}"),
            )
            for c in dev.get("consumesCounters") or ()
        )
        result.devices.append(
            Device(
                name=dev_name,
                raw=dev,
                slice=result,
                key=(result.driver, result.pool, dev_name),
                consumes_counters=consumes,
                node_name=str(dev.get("nodeName") or ""),
                all_nodes=bool(dev.get("allNodes")),
                raw_node_selector=dev.get("nodeSelector"),
            )
        )
    return result


class SliceIndex:
    """All ResourceSlices, grouped for fast per-node pool gathering.

    Build a new one whenever the slice set changes; it is immutable afterwards
    (apart from caches) and may be shared by any number of :class:`Allocator`\\ s.
    """

    def __init__(self, slices: Iterable[Obj]) -> None:
        self._on_node: dict[str, list[Slice]] = {}
        self._shared: list[Slice] = []
        self._by_pool: dict[PoolKey, list[Slice]] = {}
        for raw in slices:
            parsed = _parse_slice(raw)
            # kube: a slice with counter sets is "shared" even if it names a node.
            if parsed.node_name and not parsed.shared_counters:
                self._on_node.setdefault(parsed.node_name, []).append(parsed)
            else:
                self._shared.append(parsed)
            self._by_pool.setdefault(parsed.pool_key, []).append(parsed)
        self._pool_cache: dict[tuple[PoolKey, tuple[int, ...], bool], Pool] = {}
        #: Selector verdicts and CEL inputs per device, kept by the allocators of
        #: every pod while this slice set lasts: a device's attributes do not
        #: change without a new SliceIndex, so neither does a verdict on it.
        self.verdicts: dict[tuple[int, str], Any] = {}
        self.device_inputs: dict[int, Any] = {}
        self._plain_capacity: dict[int, bool] = {}
        self._summary: NodeDeviceSummary | None = None

    def plain_capacity(self, device: Device) -> bool:
        """Whether no capacity of the device has a request policy (cached per device)."""
        found = self._plain_capacity.get(id(device))
        if found is None:
            found = not any(
                isinstance(c, Mapping) and c.get("requestPolicy") is not None
                for c in device.capacity.values()
            )
            self._plain_capacity[id(device)] = found
        return found

    def nodes_with_devices(self) -> NodeDeviceSummary:
        """Nodes with node-local slices, and whether other slices exist at all (made once:
        Filter asks for every pod, and 15,000 names made it a millisecond each time)."""
        summary = self._summary
        if summary is None:
            summary = self._summary = NodeDeviceSummary(
                frozenset(self._on_node), bool(self._shared)
            )
        return summary

    def node_may_have_devices(self, node: Obj) -> bool:
        """False when no slice at all is relevant for the node.

        Such a node can only satisfy claims without requests. Raises
        :class:`AllocationError` for a slice whose node selector cannot be parsed,
        exactly like allocation would.
        """
        if self._on_node.get(object_name(node)):
            return True
        return any(s.relevant_for(node) for s in self._shared)

    def gather_pools(self, node: Obj) -> list[Pool]:
        """kube's ``GatherPools``: the pools the node can see, in search order."""
        grouped: dict[PoolKey, list[Slice]] = {}
        for candidate in (*self._on_node.get(object_name(node), ()), *self._shared):
            if not candidate.relevant_for(node):
                continue
            current = grouped.get(candidate.pool_key)
            if current is None or candidate.generation > current[0].generation:
                grouped[candidate.pool_key] = [candidate]
            elif candidate.generation == current[0].generation:
                current.append(candidate)

        result: list[Pool] = []
        with_binding_conditions: list[Pool] = []
        for key, pool_slices in grouped.items():
            generation = pool_slices[0].generation
            expected = pool_slices[0].slice_count
            if len(pool_slices) == expected:
                pool = self._build(key, pool_slices, complete_set=True)
            else:
                # Slices filtered out as irrelevant may still complete the pool, or a
                # newer generation may be on its way (then the pool is ignored).
                everything = self._by_pool.get(key, [])
                if any(s.generation > generation for s in everything):
                    continue
                same_generation = [s for s in everything if s.generation == generation]
                if len(same_generation) != expected:
                    result.append(Pool(driver=key[0], name=key[1], incomplete=True))
                    continue
                pool = self._build(
                    key, pool_slices, complete_set=len(pool_slices) == len(same_generation)
                )
                if not pool.invalid and len(pool_slices) != len(same_generation):
                    pool = self._with_other_slices(pool, pool_slices, same_generation)
            if pool.has_binding_conditions:
                with_binding_conditions.append(pool)
            else:
                result.append(pool)
        result.sort(key=lambda p: (p.driver, p.name))
        with_binding_conditions.sort(key=lambda p: (p.driver, p.name))
        result.extend(with_binding_conditions)
        return result

    def _build(self, key: PoolKey, slices: list[Slice], *, complete_set: bool) -> Pool:
        """kube's ``buildPool`` for the slices that target the node, cached."""
        cache_key = (key, tuple(sorted(id(s) for s in slices)), complete_set)
        cached = self._pool_cache.get(cache_key)
        if cached is not None:
            return cached
        ordered = sorted(slices, key=lambda s: s.name)
        device_slices = [s for s in ordered if not s.shared_counters]
        counter_slices = [s for s in ordered if s.shared_counters]
        pool = _validated(key, device_slices, counter_slices, ordered)
        self._pool_cache[cache_key] = pool
        return pool

    def _with_other_slices(
        self, pool: Pool, targeting: list[Slice], same_generation: list[Slice]
    ) -> Pool:
        """Add the pool's slices that do not target the node (for counter accounting)."""
        mine = {s.name for s in targeting}
        others = tuple(s for s in same_generation if s.name not in mine)
        problem = _counter_consumption_problem(pool.counter_sets, others)
        if problem:
            return Pool(driver=pool.driver, name=pool.name, invalid=True, invalid_reason=problem)
        return Pool(
            driver=pool.driver,
            name=pool.name,
            device_slices=pool.device_slices,
            other_slices=others,
            counter_sets=pool.counter_sets,
        )


def _validated(
    key: PoolKey, device_slices: list[Slice], counter_slices: list[Slice], ordered: list[Slice]
) -> Pool:
    seen: set[str] = set()
    for s in device_slices:
        for d in s.devices:
            if d.name in seen:
                return Pool(
                    driver=key[0],
                    name=key[1],
                    invalid=True,
                    invalid_reason=f"duplicate device name {d.name}",
                )
            seen.add(d.name)
    counter_sets: dict[str, dict[str, Fraction]] = {}
    for s in counter_slices:
        for name, counters in s.shared_counters:
            if name in counter_sets:
                return Pool(
                    driver=key[0],
                    name=key[1],
                    invalid=True,
                    invalid_reason=f"duplicate counter set name {name}",
                )
            counter_sets[name] = counters
    problem = _counter_consumption_problem(counter_sets, ordered)
    if problem:
        return Pool(driver=key[0], name=key[1], invalid=True, invalid_reason=problem)
    return Pool(
        driver=key[0],
        name=key[1],
        device_slices=tuple(device_slices),
        counter_sets=counter_sets,
    )


def _counter_consumption_problem(
    counter_sets: Mapping[str, Mapping[str, Fraction]], slices: Iterable[Slice]
) -> str:
    for s in slices:
        for d in s.devices:
            for set_name, counters in d.consumes_counters:
                counter_set = counter_sets.get(set_name)
                if counter_set is None:
                    return f"counter set {set_name} not found"
                for counter in counters:
                    if counter not in counter_set:
                        return f"counter {counter} not found in counter set {set_name}"
    return ""
