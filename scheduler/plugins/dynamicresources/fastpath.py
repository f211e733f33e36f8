"""Counting free devices per node in arrays, for the commonest claim: N devices of one class.

A pod whose only claim to allocate has one ``exactly`` request (ExactCount,
no admin access, no capacity request) fits a node exactly when the node sees
at least N free devices the class and the request's selectors admit: with a
single request, kube's search has nothing to backtrack over, so it succeeds
iff that many exist. Counting them for every node is a handful of array
operations over all devices, instead of a search per node; the search runs
only for the chosen node, at Reserve, and so still picks kube's devices.

Only "plain" devices qualify (node-local slices of complete, valid pools; no
taints, counters, binding conditions or multiple allocations): a node that
sees any other device, and clusters with non-local slices, take the search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.model.devicecel import CelCompileError, CelError, SelectorCache
from scheduler.plugins.dynamicresources.claims import Obj
from scheduler.plugins.dynamicresources.pools import Device, SliceIndex
from scheduler.state.nodetable import NodeTable

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SimpleRequest:
    class_name: str
    selectors: tuple[str, ...]
    count: int


def simple_request(claims: Sequence[Obj]) -> SimpleRequest | None:
    """The one plain request of the only claim to allocate, or None."""
    if len(claims) != 1:
        return None
    devices = (claims[0].get("spec") or {}).get("devices") or {}
    requests: Sequence[Any] = devices.get("requests") or []
    if len(requests) != 1 or devices.get("constraints"):
        return None
    exactly = requests[0].get("exactly") if isinstance(requests[0], Mapping) else None
    if not isinstance(exactly, Mapping) or exactly.get("adminAccess"):
        return None
    if (exactly.get("allocationMode") or "ExactCount") != "ExactCount":
        return None
    if exactly.get("capacity"):
        return None
    selectors: list[str] = []
    for selector in exactly.get("selectors") or ():
        expression = ((selector or {}).get("cel") or {}).get("expression")
        if not expression:
            return None
        selectors.append(str(expression))
    count = exactly.get("count")
    return SimpleRequest(
        str(exactly.get("deviceClassName") or ""),
        tuple(selectors),
        1 if count is None else int(count),
    )


def _plain(device: Device) -> bool:
    raw = device.raw
    return not (
        raw.get("taints")
        or raw.get("consumesCounters")
        or raw.get("bindingConditions")
        or raw.get("allowMultipleAllocations")
        or device.slice.per_device_node_selection
    )


class PerNodeSet(Generic[T]):
    """A value made from a node table's rows, kept while its node set stays.

    Filter asks for it for every pod; the node set changes only when a node
    is added, removed or changed (``node_epoch``), not between most pods.
    """

    __slots__ = ("_key", "_value")

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._value: T | None = None

    def get(self, table: NodeTable, make: Callable[[list[str]], T], *also: object) -> T:
        """The value for ``table`` (and ``also``: other inputs, by identity), made if new."""
        names = table.names
        key = (table.origin, table.node_epoch, len(names), *also)
        if self._value is None or self._key != key:
            self._value = make(names)
            self._key = key
        return self._value


@dataclass
class DeviceTable:
    """Every plain device of a node-local-only slice set, in each node's search order."""

    node_names: list[str]
    node_index: dict[str, int]
    device_node: IntArray
    devices: list[Device]
    keys: list[tuple[str, str, str]]
    #: Nodes that see a device the arrays cannot judge: they take the search.
    complex_nodes: set[str]
    _masks: dict[tuple[int, tuple[str, ...]], BoolArray | None] = field(default_factory=dict)
    #: Each device key's position: allocated devices are marked by key lookups.
    key_index: dict[tuple[str, str, str], int] = field(init=False)
    #: Per selectable mask (by identity; the mask is kept): the taken devices the
    #: counts were made with, and the counts. The next pod's counts follow from
    #: the devices taken or freed since, not from every allocated device again.
    _free: dict[int, tuple[BoolArray, set[tuple[str, str, str]], IntArray]] = field(
        default_factory=dict
    )
    #: A node table's rows as positions in ``node_names`` (-1: not here, or complex).
    _positions: PerNodeSet[IntArray] = field(default_factory=lambda: PerNodeSet())

    def __post_init__(self) -> None:
        self.key_index = {key: i for i, key in enumerate(self.keys)}

    @classmethod
    def build(cls, slices: SliceIndex) -> DeviceTable | None:
        summary = slices.nodes_with_devices()
        if summary.non_local:
            return None
        names = sorted(summary.local_nodes)
        device_node: list[int] = []
        devices: list[Device] = []
        complex_nodes: set[str] = set()
        for index, name in enumerate(names):
            mine: list[Device] = []
            for pool in slices.gather_pools({"metadata": {"name": name}}):
                if pool.incomplete or pool.invalid:
                    complex_nodes.add(name)
                for slice_ in pool.device_slices:
                    for device in slice_.devices:
                        if not _plain(device):
                            complex_nodes.add(name)
                        mine.append(device)
            if name in complex_nodes:
                continue
            devices.extend(mine)
            device_node.extend([index] * len(mine))
        return cls(
            names,
            {n: i for i, n in enumerate(names)},
            np.asarray(device_node, dtype=np.int64),
            devices,
            [d.key for d in devices],
            complex_nodes,
        )

    def selectable(
        self,
        device_class: Obj,
        selectors: tuple[str, ...],
        cel: SelectorCache,
        verdicts: dict[tuple[int, str], Any],
        inputs: Any,
    ) -> BoolArray | None:
        """Which devices the class and the request admit (None on any CEL problem:
        the search then reports it as kube does)."""
        expressions = (
            tuple(
                str(((s or {}).get("cel") or {}).get("expression") or "")
                for s in (device_class.get("spec") or {}).get("selectors") or ()
            )
            + selectors
        )
        key = (id(device_class), expressions)
        if key in self._masks:
            return self._masks[key]
        mask: BoolArray | None = np.ones(len(self.devices), dtype=np.bool_)
        for expression in expressions:
            try:
                compiled = cel.compile(expression)
            except CelCompileError:
                mask = None
                break
            assert mask is not None
            for i, device in enumerate(self.devices):
                if not mask[i]:
                    continue
                found = verdicts.get((id(device), expression))
                if found is None:
                    try:
                        found = bool(compiled.matches(inputs(device)))
                    except CelError as err:
                        found = err
                    verdicts[(id(device), expression)] = found
                if isinstance(found, CelError):
                    mask = None
                    break
                mask[i] = found
            if mask is None:
                break
        self._masks[key] = mask
        return mask

    def free_counts(self, selectable: BoolArray, taken: set[tuple[str, str, str]]) -> IntArray:
        """Per node (``node_names`` order): free devices the request may use.

        Thousands of devices are allocated in a busy cluster, and between two
        pods only a few change: the counts are kept per mask and moved by the
        difference (a set operation), one device at a time.
        """
        kept = self._free.get(id(selectable))
        if kept is None or kept[0] is not selectable:
            counts = self._count(selectable, taken)
        else:
            _, before, counts = kept
            index, node = self.key_index, self.device_node
            for keys, step in ((taken - before, -1), (before - taken, 1)):
                for i in map(index.get, keys):
                    if i is not None and selectable[i]:
                        counts[node[i]] += step
        self._free[id(selectable)] = (selectable, set(taken), counts)
        return counts.copy()

    def _count(self, selectable: BoolArray, taken: set[tuple[str, str, str]]) -> IntArray:
        usable = selectable
        if taken:
            index = self.key_index
            hits = [i for i in map(index.get, taken) if i is not None]
            if hits:
                usable = selectable.copy()
                usable[hits] = False
        return np.bincount(self.device_node[usable], minlength=len(self.node_names)).astype(
            np.int64
        )

    def positions(self, table: NodeTable) -> IntArray:
        """Each row of ``table`` as its node's position here; -1 where the search decides
        (no plain device table entry, or a node with a device the arrays cannot judge)."""
        return self._positions.get(table, self._make_positions)

    def _make_positions(self, names: list[str]) -> IntArray:
        index, complex_nodes = self.node_index, self.complex_nodes
        out = np.full(len(names), -1, dtype=np.int64)
        for row, name in enumerate(names):
            position = index.get(name)
            if position is not None and name not in complex_nodes:
                out[row] = position
        return out
