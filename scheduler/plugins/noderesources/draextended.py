"""How much of a DRA-backed extended resource a node has, for NodeResourcesFit's Score.

kube 1.36 scores an extended resource that a DeviceClass maps (DRAExtendedResource)
on nodes without a device plugin for it by counting devices: the node's
"allocatable" is the number of devices of the class it can use, its
"requested" how many of those are allocated (``calculateDRAResourceTotals``).
That applies only when the scoring strategy lists such a resource and the pod
requests it. Like kube, it counts every slice that reaches the node (pool
generations are not compared) and every device the class's selectors admit;
a selector that fails to compile or run makes the resource unscored on that
node (kube logs the error and returns 0/0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.devicecel import CelError, DeviceInput, SelectorCache
from scheduler.model.selectors import NodeSelector, SelectorError
from scheduler.plugins._helpers import object_name
from scheduler.plugins.dynamicresources.claims import Obj
from scheduler.plugins.dynamicresources.state import AllocatedState

__all__ = ["DeviceTotals", "SliceSet"]


def _selector(raw: Any) -> NodeSelector | None:
    """A parsed node selector; None when it cannot be parsed (kube: an error, 0/0)."""
    try:
        return NodeSelector.from_dict(raw)
    except SelectorError:
        return None


@dataclass(eq=False, slots=True)
class _Slice:
    driver: str
    pool: str
    node_name: str
    all_nodes: bool
    raw_selector: Any
    per_device: bool
    devices: list[Obj]
    selector: NodeSelector | None = None
    device_selectors: dict[int, NodeSelector | None] = field(default_factory=dict)


class _Unusable(Exception):
    """A node selector or class selector kube could not evaluate: resource unscored."""


class SliceSet:
    """The cluster's ResourceSlices, parsed once per change of the slice set."""

    def __init__(self, slices: Iterable[Obj]) -> None:
        self._on_node: dict[str, list[_Slice]] = {}
        self._other: list[_Slice] = []
        for raw in slices:
            spec = raw.get("spec") or {}
            parsed = _Slice(
                driver=str(spec.get("driver") or ""),
                pool=str((spec.get("pool") or {}).get("name") or ""),
                node_name=str(spec.get("nodeName") or ""),
                all_nodes=bool(spec.get("allNodes")),
                raw_selector=spec.get("nodeSelector"),
                per_device=bool(spec.get("perDeviceNodeSelection")),
                devices=[d for d in spec.get("devices") or () if isinstance(d, Mapping)],
            )
            if parsed.node_name and not parsed.per_device:
                self._on_node.setdefault(parsed.node_name, []).append(parsed)
            else:
                self._other.append(parsed)
        #: Selector verdicts per (device, expression), kept while the slices last.
        self.verdicts: dict[tuple[int, str], bool | None] = {}

    def devices_for(self, node: Obj) -> Iterable[tuple[_Slice, Obj]]:
        """kube's per-slice and per-device node matching, in its (lenient) form."""
        name = object_name(node)
        for slice_ in self._on_node.get(name, ()):
            for device in slice_.devices:
                yield slice_, device
        for slice_ in self._other:
            if slice_.per_device:
                for device in slice_.devices:
                    if _device_reaches(slice_, device, node, name):
                        yield slice_, device
                continue
            if not slice_.all_nodes and slice_.node_name != name and slice_.raw_selector:
                if slice_.selector is None:
                    slice_.selector = _selector(slice_.raw_selector)
                    if slice_.selector is None:
                        raise _Unusable
                if not slice_.selector.matches_node(node):
                    continue
            elif not slice_.all_nodes and slice_.node_name and slice_.node_name != name:
                continue
            for device in slice_.devices:
                yield slice_, device


def _device_reaches(slice_: _Slice, device: Obj, node: Obj, name: str) -> bool:
    if device.get("allNodes") or (device.get("nodeName") and device.get("nodeName") == name):
        return True
    raw = device.get("nodeSelector")
    if not raw:
        return False
    key = id(device)
    if key not in slice_.device_selectors:
        slice_.device_selectors[key] = _selector(raw)
    selector = slice_.device_selectors[key]
    if selector is None:
        raise _Unusable
    return selector.matches_node(node)


class DeviceTotals:
    """One scoring cycle's view: devices per node and class, and which are allocated."""

    def __init__(self, slices: SliceSet, allocated: AllocatedState, cel: SelectorCache) -> None:
        self.slices = slices
        self.allocated = allocated
        self.cel = cel

    def totals(self, node: Obj, klass: Obj) -> tuple[int, int]:
        """(devices of ``klass`` the node can use, how many of them are allocated)."""
        expressions = [
            str(((s or {}).get("cel") or {}).get("expression") or "")
            for s in (klass.get("spec") or {}).get("selectors") or ()
            if (s or {}).get("cel")
        ]
        capacity = used = 0
        try:
            for slice_, device in self.slices.devices_for(node):
                if expressions and not self._matches(slice_, device, expressions):
                    continue
                capacity += 1
                key = (slice_.driver, slice_.pool, str(device.get("name") or ""))
                if self.allocated.is_allocated(key):
                    used += 1
        except _Unusable:
            return 0, 0
        return capacity, used

    def _matches(self, slice_: _Slice, device: Obj, expressions: list[str]) -> bool:
        verdicts = self.slices.verdicts
        for expression in expressions:
            cache_key = (id(device), expression)
            verdict = verdicts.get(cache_key)
            if verdict is None and cache_key not in verdicts:
                try:
                    compiled = self.cel.compile(expression)
                    verdict = bool(
                        compiled.matches(
                            DeviceInput(
                                driver=slice_.driver,
                                attributes=device.get("attributes") or {},
                                capacity=device.get("capacity") or {},
                            )
                        )
                    )
                except CelError:
                    verdict = None
                verdicts[cache_key] = verdict
            if verdict is None:
                raise _Unusable
            if not verdict:
                return False
        return True
