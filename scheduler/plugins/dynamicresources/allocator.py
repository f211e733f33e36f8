"""The structured-parameters device allocator of Dynamic Resource Allocation.

A port of kube 1.36's default ("incubating") allocator
(``k8s.io/dynamic-resource-allocation/structured/internal/incubating``), the one
kube-scheduler picks with its default feature gates: admin access, prioritized
lists, partitionable devices, device taints, binding conditions and consumable
capacity all on.

The search is kube's first-fit depth-first search, unchanged: claims in the pod's
order, requests in claim order (``firstAvailable`` subrequests tried in order), and
for each device of a request the candidates in pool order (see :mod:`.pools`),
continuing after the previous device of the same request so a request tries
combinations, not permutations. Because the first complete solution wins, visiting
candidates in any other order, or pruning differently, would pick other devices than
kube does; ``num_allocate_one_invocations`` counts search steps like kube's
``NumAllocateOneInvocations`` so tests can check the search itself.

One :class:`Allocator` serves one scheduling cycle of one pod and is asked about
many nodes; CEL verdicts per (device, expression) are therefore cached for its
whole life (kube caches them per node only), and counters already consumed in a
pool are computed once per pool, as kube does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from scheduler.model.devicecel import (
    CelCompileError,
    CelError,
    CompiledSelector,
    DeviceInput,
    SelectorCache,
)
from scheduler.plugins._helpers import object_name
from scheduler.plugins.dynamicresources.capacity import (
    Amount,
    CapacityError,
    ConsumedCapacity,
    amount,
    consumed_capacity_from_request,
    request_fits_capacity,
)
from scheduler.plugins.dynamicresources.constraints import (
    Constraint,
    DistinctAttributeConstraint,
    MatchAttributeConstraint,
)
from scheduler.plugins.dynamicresources.pools import (
    AllocationError,
    Device,
    DeviceKey,
    NodeAllocationError,
    Obj,
    Pool,
    SliceIndex,
)
from scheduler.plugins.dynamicresources.results import build_result
from scheduler.plugins.dynamicresources.state import AllocatedState

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "AllocatedState",
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "NodeAllocationError",
    "Obj",
    "SelectorCache",
    "SliceIndex",
]

#: ``resourceapi.AllocationResultsMaxSize``: at most this many devices per claim.
ALLOCATION_RESULTS_MAX_SIZE: Final = 32

_MODE_EXACT: Final = "ExactCount"
_MODE_ALL: Final = "All"
_EFFECTS_PREVENTING_ALLOCATION: Final = frozenset({"NoSchedule", "NoExecute"})
#: How many search steps run between two deadline checks.
_DEADLINE_CHECK_EVERY: Final = 256


class AllocationTimeout(AllocationError):
    """The search ran past its deadline (kube's filter timeout, context.DeadlineExceeded)."""


class _Exceeded:
    """kube's ``errAllocationResultMaxSizeExceeded``: a claim would exceed 32 devices."""


_EXCEEDED: Final = _Exceeded()
_Outcome = bool | _Exceeded


def klog_kobj(obj: Obj) -> str:
    """``klog.KObj(obj)``: ``namespace/name``, or just the name without a namespace."""
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or ""
    name = metadata.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


@dataclass(eq=False, slots=True)
class _Request:
    """One request without subrequests, or one subrequest (kube's ``requestData``)."""

    claim_index: int
    request_index: int
    sub_index: int
    name: str
    parent: str
    spec: Obj
    device_class: Obj | None = None
    mode: str = _MODE_EXACT
    num_devices: int = 0
    all_devices: list[tuple[Device, Pool]] = field(default_factory=list)
    capacity_requests: dict[str, Amount] | None = None

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name

    @property
    def admin_access(self) -> bool:
        return not self.parent and bool(self.spec.get("adminAccess"))

    @property
    def tolerations(self) -> Sequence[Obj]:
        return self.spec.get("tolerations") or ()

    @property
    def selectors(self) -> Sequence[Obj]:
        return self.spec.get("selectors") or ()


@dataclass(eq=False, slots=True)
class _Chosen:
    """One device picked for a claim (kube's ``internalDeviceResult``)."""

    request: _Request
    device: Device
    share_id: str | None = None
    consumed: dict[str, Amount] | None = None


class Allocator:
    """Allocates a pod's pending claims on one node at a time.

    ``classes`` maps DeviceClass name to object; ``allocated`` is the cluster-wide
    state of claims already allocated or in flight. Thread-unsafe by design: one
    allocator belongs to one pod's scheduling cycle.
    """

    def __init__(
        self,
        slices: SliceIndex,
        classes: Mapping[str, Obj],
        allocated: AllocatedState,
        cel: SelectorCache,
    ) -> None:
        self.slices = slices
        self.classes = classes
        self.allocated = allocated
        self.cel = cel
        #: kube's ``NumAllocateOneInvocations``, summed over all ``allocate`` calls.
        self.num_allocate_one_invocations = 0
        self._shared_keys = {shared[:3] for shared in allocated.shared_devices}
        self._verdicts: dict[tuple[int, str], bool | CelError] = slices.verdicts
        self._inputs: dict[int, DeviceInput] = slices.device_inputs
        self._compiled: dict[str, CompiledSelector | CelCompileError] = {}
        # Counters still free per pool, from allocated claims only (kube keys this
        # by pool name alone, so pools of different drivers with one name share it).
        self._available_counters: dict[str, dict[str, dict[str, Fraction]]] = {}

    def node_may_have_devices(self, node: Obj) -> bool:
        """Cheap PreFilter aid: False when no slice at all is relevant for the node."""
        return self.slices.node_may_have_devices(node)

    def allocate(
        self, node: Obj, claims: Sequence[Obj], *, deadline: float | None = None
    ) -> list[Obj] | None:
        """One AllocationResult per claim, or ``None`` if they do not all fit on ``node``.

        Raises :class:`AllocationError` for problems no node can fix (kube's fatal
        errors, same texts), :class:`NodeAllocationError` when allocation failed and
        invalid pools were seen on this node, and :class:`AllocationTimeout` once
        ``time.monotonic()`` passes ``deadline``.
        """
        search = _Search(self, node, claims, deadline)
        return search.run()

    # Helpers shared by all searches of this allocator.

    def device_input(self, device: Device) -> DeviceInput:
        """The device as CEL sees it (built once per slice set)."""
        return self._device_input(device)

    def _device_input(self, device: Device) -> DeviceInput:
        found = self._inputs.get(id(device))
        if found is None:
            found = DeviceInput(
                driver=device.key[0],
                attributes=device.attributes,
                capacity=device.capacity,
                allow_multiple_allocations=device.allow_multiple_allocations,
            )
            self._inputs[id(device)] = found
        return found

    def _compile(self, expression: str) -> CompiledSelector | CelCompileError:
        found = self._compiled.get(expression)
        if found is None:
            try:
                found = self.cel.compile(expression)
            except CelCompileError as err:
                found = err
            self._compiled[expression] = found
        return found

    def _verdict(self, device: Device, compiled: CompiledSelector) -> bool | CelError:
        """A selector's verdict on a device; a runtime error is remembered too."""
        key = (id(device), compiled.expression)
        found = self._verdicts.get(key)
        if found is None:
            try:
                found = bool(compiled.matches(self._device_input(device)))
            except CelError as err:
                found = err
            self._verdicts[key] = found
        return found

    def _available_for_pool(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        """kube's available counters of a pool: totals minus allocated devices' use."""
        found = self._available_counters.get(pool.name)
        if found is not None:
            return found
        available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
        for slice_ in (*pool.device_slices, *pool.other_slices):
            for device in slice_.devices:
                key = device.key
                if not (
                    key in self.allocated.devices
                    or key in self._shared_keys
                    or key in self.allocated.aggregated_capacity
                ):
                    continue
                for set_name, counters in device.consumes_counters:
                    counter_set = available.get(set_name)
                    if counter_set is None:
                        continue
                    for name, value in counters.items():
                        if name in counter_set:
                            counter_set[name] -= value
        self._available_counters[pool.name] = available
        return available


class _Search:
    """State of one ``allocate`` call (kube's unexported ``allocator``)."""

    def __init__(
        self, owner: Allocator, node: Obj, claims: Sequence[Obj], deadline: float | None
    ) -> None:
        self.owner = owner
        self.node = node
        self.claims = claims
        self.deadline = deadline
        self.pools: list[Pool] = []
        self.requests: dict[tuple[int, int, int], _Request] = {}
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.constraints: list[list[Constraint]] = []
        self.results: list[list[_Chosen]] = [[] for _ in claims]
        self.allocating: dict[DeviceKey, set[int]] = {}
        self.allocating_capacity: dict[DeviceKey, ConsumedCapacity] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.node_matches: dict[int, bool] = {}

    # Set-up, as kube's Allocate does it before searching.

    def run(self) -> list[Obj] | None:
        self.pools = self.owner.slices.gather_pools(self.node)
        for claim_index, claim in enumerate(self.claims):
            self._prepare_claim(claim_index, claim)
        if not self._one(0, 0, 0, 0, False, (0, 0, 0)):
            if any(pool.invalid for pool in self.pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return [
            build_result(
                claim,
                self.results[index],
                self._class_for_config,
                self._selected_subrequest,
                index,
                object_name(self.node),
            )
            for index, claim in enumerate(self.claims)
        ]

    def _prepare_claim(self, claim_index: int, claim: Obj) -> None:
        devices = (claim.get("spec") or {}).get("devices") or {}
        min_devices = 0
        for request_index, request in enumerate(devices.get("requests") or ()):
            name = str(request.get("name") or "")
            subrequests = request.get("firstAvailable") or ()
            if subrequests:
                fewest: int | None = None
                for sub_index, sub in enumerate(subrequests):
                    data = _Request(
                        claim_index, request_index, sub_index, str(sub.get("name") or ""), name, sub
                    )
                    self._validate(claim, data)
                    self.requests[(claim_index, request_index, sub_index)] = data
                    if fewest is None or data.num_devices < fewest:
                        fewest = data.num_devices
                min_devices += fewest or 0
            else:
                data = _Request(
                    claim_index, request_index, 0, name, "", request.get("exactly") or {}
                )
                self._validate(claim, data)
                self.requests[(claim_index, request_index, 0)] = data
                min_devices += data.num_devices
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {klog_kobj(claim)}: number of requested devices {min_devices} "
                f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        constraints: list[Constraint] = []
        for index, constraint in enumerate(devices.get("constraints") or ()):
            requests = [str(r) for r in constraint.get("requests") or ()]
            if constraint.get("matchAttribute"):
                constraints.append(
                    MatchAttributeConstraint(requests, str(constraint["matchAttribute"]))
                )
            elif constraint.get("distinctAttribute"):
                constraints.append(
                    DistinctAttributeConstraint(requests, str(constraint["distinctAttribute"]))
                )
            else:
                raise AllocationError(
                    f"claim {klog_kobj(claim)}, constraint #{index}: empty constraint "
                    "(unsupported constraint type?)"
                )
        self.constraints.append(constraints)

    def _validate(self, claim: Obj, data: _Request) -> None:
        """kube's ``validateDeviceRequest``; also finds "all" devices up front."""
        where = f"claim {klog_kobj(claim)}, request {data.name}"
        for index, selector in enumerate(data.selectors):
            if not (selector or {}).get("cel"):
                raise AllocationError(
                    f"{where}, selector #{index}: CEL expression empty (unsupported selector type?)"
                )
        class_name = str(data.spec.get("deviceClassName") or "")
        if not class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        device_class = self.owner.classes.get(class_name)
        if device_class is None:
            raise AllocationError(
                f"{where}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        data.device_class = device_class
        capacity = data.spec.get("capacity")
        if isinstance(capacity, Mapping) and capacity.get("requests") is not None:
            data.capacity_requests = {
                str(name): amount(raw) for name, raw in capacity["requests"].items()
            }
        # The API server defaults allocationMode to ExactCount and count to 1.
        mode = data.spec.get("allocationMode") or _MODE_EXACT
        data.mode = str(mode)
        if mode == _MODE_EXACT:
            count = data.spec.get("count")
            data.num_devices = 1 if count is None else int(count)
            return
        if mode != _MODE_ALL:
            raise AllocationError(f"{where}: unsupported count mode {mode}")
        for pool in self.pools:
            if pool.incomplete:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool} "
                    "is currently being updated"
                )
            if pool.invalid:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool} is currently invalid"
                )
            for slice_ in pool.device_slices:
                for device in slice_.devices:
                    if self._selectable(data, device) and self._capacity_fits(data, device):
                        data.all_devices.append((device, pool))
        data.num_devices = len(data.all_devices)

    # The search.

    def _one(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        device_index: int,
        in_subrequest: bool,
        start: tuple[int, int, int],
    ) -> _Outcome:
        """kube's ``allocateOne``: place one more device, recursively all the rest."""
        owner = self.owner
        owner.num_allocate_one_invocations += 1
        if (
            self.deadline is not None
            and owner.num_allocate_one_invocations % _DEADLINE_CHECK_EVERY == 0
            and time.monotonic() > self.deadline
        ):
            raise AllocationTimeout("timed out trying to allocate devices")
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
        if request_index >= len(requests):
            outcome = self._one(claim_index + 1, 0, 0, 0, False, (0, 0, 0))
            # Another subrequest choice in this claim may need fewer devices.
            return False if outcome is _EXCEEDED else outcome

        data = self.requests[(claim_index, request_index, sub_index)]
        if not in_subrequest and data.parent:
            all_exceeded = True
            sub = 0
            while (claim_index, request_index, sub) in self.requests:
                outcome = self._one(claim_index, request_index, sub, device_index, True, (0, 0, 0))
                if outcome is _EXCEEDED:
                    sub += 1
                    continue
                all_exceeded = False
                if outcome:
                    self.selected_sub[(claim_index, request_index)] = sub
                    return True
                sub += 1
            return _EXCEEDED if all_exceeded else False

        all_mode = data.mode == _MODE_ALL
        if all_mode and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self._one(claim_index, request_index + 1, 0, 0, False, (0, 0, 0))
        chosen = self.results[claim_index]
        if len(chosen) + data.num_devices - device_index > ALLOCATION_RESULTS_MAX_SIZE:
            return _EXCEEDED

        if all_mode:
            device, pool = data.all_devices[device_index]
            undo = self._allocate_device(data, device, pool, must=True)
            if undo is None:
                return False
            outcome = self._one(
                claim_index, request_index, sub_index, device_index + 1, in_subrequest, (0, 0, 0)
            )
            if outcome is not True:
                undo()
            return outcome

        admin = data.admin_access
        start_pool, start_slice, start_device = start
        for pool_index in range(start_pool, len(self.pools)):
            pool = self.pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            first_slice = start_slice if pool_index == start_pool else 0
            for slice_index in range(first_slice, len(pool.device_slices)):
                devices = pool.device_slices[slice_index].devices
                first_device = (
                    start_device if pool_index == start_pool and slice_index == start_slice else 0
                )
                for index in range(first_device, len(devices)):
                    device = devices[index]
                    key = device.key
                    if admin:
                        if claim_index in self.allocating.get(key, ()):
                            continue
                    elif self._in_use(key):
                        continue
                    if not self._selectable(data, device):
                        continue
                    if not self._capacity_fits(data, device):
                        continue
                    undo = self._allocate_device(data, device, pool, must=False)
                    if undo is None:
                        continue
                    outcome = self._one(
                        claim_index,
                        request_index,
                        sub_index,
                        device_index + 1,
                        in_subrequest,
                        (pool_index, slice_index, index + 1),
                    )
                    if outcome is True:
                        return True
                    undo()
                    if outcome is _EXCEEDED:
                        return _EXCEEDED
        return False

    def _in_use(self, key: DeviceKey) -> bool:
        return key in self.owner.allocated.devices or bool(self.allocating.get(key))

    def _selectable(self, data: _Request, device: Device) -> bool:
        """kube's ``isSelectable``: class selectors, request selectors, node of the device."""
        device_class = data.device_class
        if device_class is not None:
            selectors = (device_class.get("spec") or {}).get("selectors") or ()
            if not self._selectors_match(data, device, selectors, device_class):
                return False
        if not self._selectors_match(data, device, data.selectors, None):
            return False
        if device.slice.per_device_node_selection:
            found = self.node_matches.get(id(device))
            if found is None:
                found = device.node_matches(self.node)
                self.node_matches[id(device)] = found
            return found
        return True

    def _selectors_match(
        self, data: _Request, device: Device, selectors: Sequence[Obj], device_class: Obj | None
    ) -> bool:
        if device_class is not None:
            owner_text = f"class {(device_class.get('metadata') or {}).get('name') or ''}"
        else:
            owner_text = f"claim {klog_kobj(self.claims[data.claim_index])}"
        for index, selector in enumerate(selectors):
            expression = str(((selector or {}).get("cel") or {}).get("expression") or "")
            compiled = self.owner._compile(expression)
            if isinstance(compiled, CelCompileError):
                raise AllocationError(
                    f"{owner_text}: selector #{index}: CEL compile error: {compiled}"
                )
            verdict = self.owner._verdict(device, compiled)
            if isinstance(verdict, CelError):
                raise AllocationError(
                    f"{owner_text}: selector #{index}: CEL runtime error: {verdict}"
                )
            if not verdict:
                return False
        return True

    def _capacity_fits(self, data: _Request, device: Device) -> bool:
        """kube's ``CmpRequestOverCapacity`` on the device; an undefined capacity fails."""
        key = device.key
        if (
            not data.capacity_requests
            and key not in self.owner.allocated.aggregated_capacity
            and not self.allocating_capacity.get(key)
            and self.owner.slices.plain_capacity(device)
        ):
            # Nothing asked, nothing used, no policy: each capacity is consumed
            # whole and fits exactly (kube's comparison, without the parsing).
            return True
        try:
            return request_fits_capacity(
                self.owner.allocated.aggregated_capacity.get(key, {}),
                data.capacity_requests,
                device.capacity,
                self.allocating_capacity.get(key),
            )
        except CapacityError:
            return False

    def _allocate_device(
        self, data: _Request, device: Device, pool: Pool, *, must: bool
    ) -> Callable[[], None] | None:
        """kube's ``allocateDevice``: the undo function, or ``None`` if not usable."""
        claim_index = data.claim_index
        key = device.key
        multiple = device.allow_multiple_allocations is True
        admin = data.admin_access
        if not multiple and admin and claim_index in self.allocating.get(key, ()):
            return None
        if not admin and self._in_use(key):
            return None
        skip_counters = multiple and (
            key in self.owner.allocated.aggregated_capacity or key in self.allocating_capacity
        )
        counters_reserved = False
        if not skip_counters and device.consumes_counters:
            if not self._reserve_counters(device, pool):
                return None
            counters_reserved = True

        base_name = data.parent or data.name
        sub_name = data.name if data.parent else ""
        added: list[Constraint] = []

        def rollback(
            marked: bool = False,
            capacity: dict[str, Amount] | None = None,
            entry_existed: bool = False,
            result_added: bool = False,
        ) -> None:
            if result_added:
                self.results[claim_index].pop()
            if capacity is not None:
                self._release_capacity(key, capacity, entry_existed)
            if marked:
                self.allocating[key].discard(claim_index)
            for constraint in reversed(added):
                constraint.remove(base_name, sub_name)
            if counters_reserved:
                self._release_counters(device, pool)

        if _taint_prevents_allocation(device, data.tolerations):
            rollback()
            return None
        for constraint in self.owner_constraints(claim_index):
            if not constraint.add(base_name, sub_name, device.attributes, key[0]):
                rollback()
                if must:
                    claim = self.claims[claim_index]
                    raise AllocationError(
                        f"claim {klog_kobj(claim)}, request {data.name}: cannot add device "
                        f"{'/'.join(key)} because a claim constraint would not be satisfied"
                    )
                return None
            added.append(constraint)

        marked = False
        if not multiple:
            self.allocating.setdefault(key, set()).add(claim_index)
            marked = True
        if not self._capacity_fits(data, device):
            rollback(marked)
            return None
        share_id: str | None = None
        consumed: dict[str, Amount] | None = None
        entry_existed = False
        if multiple:
            consumed = consumed_capacity_from_request(data.capacity_requests, device.capacity)
            share_id = str(uuid.uuid1())
            entry_existed = key in self.allocating_capacity
            total = self.allocating_capacity.setdefault(key, {})
            for name, value in consumed.items():
                total[name] = total.get(name, Fraction(0)) + value.value
        self.results[claim_index].append(
            _Chosen(data, device, share_id, consumed if consumed else None)
        )

        def undo() -> None:
            rollback(marked, consumed, entry_existed, True)

        return undo

    def owner_constraints(self, claim_index: int) -> list[Constraint]:
        return self.constraints[claim_index]

    def _release_capacity(
        self, key: DeviceKey, consumed: Mapping[str, Amount], entry_existed: bool
    ) -> None:
        """kube's ``ConsumedCapacityCollection.Remove`` plus its "keep shared marker" fix."""
        total = self.allocating_capacity.get(key)
        if total is not None:
            for name, value in consumed.items():
                if name in total:
                    total[name] -= value.value
            if all(v == 0 for v in total.values()):
                del self.allocating_capacity[key]
        if entry_existed and key not in self.allocating_capacity:
            self.allocating_capacity[key] = {}

    def _reserve_counters(self, device: Device, pool: Pool) -> bool:
        """kube's ``checkAvailableCounters``: take the device's counters if they fit."""
        available = self.owner._available_for_pool(pool)
        consumed_pool = self.consumed_counters.setdefault(pool.name, {})
        for set_name, counters in device.consumes_counters:
            consumed_set = consumed_pool.setdefault(set_name, {})
            for name, value in counters.items():
                consumed_set[name] = consumed_set.get(name, Fraction(0)) + value
        for set_name, counters in available.items():
            consumed_set = consumed_pool.get(set_name, {})
            for name, value in counters.items():
                if value < consumed_set.get(name, Fraction(0)):
                    self._release_counters(device, pool)
                    return False
        return True

    def _release_counters(self, device: Device, pool: Pool) -> None:
        consumed_pool = self.consumed_counters.get(pool.name, {})
        for set_name, counters in device.consumes_counters:
            consumed_set = consumed_pool.setdefault(set_name, {})
            for name, value in counters.items():
                consumed_set[name] = consumed_set.get(name, Fraction(0)) - value

    # What result building needs.

    def _class_for_config(self, claim_index: int, request_index: int) -> tuple[str, Obj] | None:
        sub = self.selected_sub.get((claim_index, request_index), 0)
        data = self.requests.get((claim_index, request_index, sub))
        if data is None or data.device_class is None:
            return None
        return data.full_name, data.device_class

    def _selected_subrequest(self, claim_index: int, request_index: int) -> str | None:
        data = self.requests.get((claim_index, request_index, 0))
        if data is None or not data.parent:
            return None
        sub = self.selected_sub.get((claim_index, request_index), 0)
        return self.requests[(claim_index, request_index, sub)].full_name


def _taint_prevents_allocation(device: Device, tolerations: Sequence[Obj]) -> bool:
    """kube's ``taintPreventsAllocation``: an untolerated NoSchedule/NoExecute taint."""
    for taint in device.taints:
        if taint.get("effect") not in _EFFECTS_PREVENTING_ALLOCATION:
            continue
        if not any(_tolerates(toleration, taint) for toleration in tolerations):
            return True
    return False


def _tolerates(toleration: Obj, taint: Obj) -> bool:
    """``resourceclaim.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"
