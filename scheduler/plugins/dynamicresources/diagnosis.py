"""Why a node's devices did not fit a pod's claims, for `explain` and `simulate`.

kube-scheduler says only "cannot allocate all claims" for such a node, and
our Filter says exactly that (the FailedScheduling text must match kube's).
An operator asking *why* needs the funnel per request: how many devices the
node sees, how many the DeviceClass admits, how many the request's own
selectors admit, and how many of those are still free, against how many the
request wants. Incomplete or invalid pools are named too, since kube skips
them silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.model.devicecel import CelCompileError, CelError
from scheduler.plugins.dynamicresources.allocator import Allocator
from scheduler.plugins.dynamicresources.claims import Obj, key
from scheduler.plugins.dynamicresources.pools import AllocationError, Device


def _alternatives(request: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    name = str(request.get("name") or "")
    exactly = request.get("exactly")
    if isinstance(exactly, Mapping):
        return [(name, exactly)]
    return [
        (f"{name}/{sub.get('name')}", sub)
        for sub in request.get("firstAvailable") or ()
        if isinstance(sub, Mapping)
    ]


def _matching(
    allocator: Allocator, devices: Sequence[Device], selectors: Sequence[Any]
) -> tuple[list[Device], str | None]:
    """The devices every selector admits, or the first CEL error met."""
    kept = list(devices)
    for selector in selectors:
        expression = str(((selector or {}).get("cel") or {}).get("expression") or "")
        compiled = allocator._compile(expression)
        if isinstance(compiled, CelCompileError):
            return [], f"CEL compile error: {compiled}"
        survivors = []
        for device in kept:
            verdict = allocator._verdict(device, compiled)
            if isinstance(verdict, CelError):
                return [], f"CEL runtime error on {device.name}: {verdict}"
            if verdict:
                survivors.append(device)
        kept = survivors
    return kept, None


def _wanted(spec: Mapping[str, Any]) -> str:
    if spec.get("allocationMode") == "All":
        return "all of them"
    return str(spec.get("count") or 1)


def explain_node(allocator: Allocator, node: Obj, claims: Sequence[Obj]) -> list[str]:
    """One line per request (or firstAvailable alternative) of each claim, plus bad pools."""
    try:
        pools = allocator.slices.gather_pools(node)
    except AllocationError as err:
        return [str(err)]
    lines: list[str] = []
    devices: list[Device] = []
    for pool in pools:
        if pool.invalid:
            lines.append(f"pool {pool} is invalid: {pool.invalid_reason}")
        elif pool.incomplete:
            lines.append(f"pool {pool} is incomplete (not all of its slices are published)")
        for slice_ in pool.device_slices:
            if slice_.per_device_node_selection:
                devices.extend(d for d in slice_.devices if d.node_matches(node))
            else:
                devices.extend(slice_.devices)
    taken = allocator.allocated
    for claim in claims:
        requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
        for request in requests:
            for name, spec in _alternatives(request):
                class_name = str(spec.get("deviceClassName") or "")
                device_class = allocator.classes.get(class_name)
                head = f"claim {key(claim)}, request {name}"
                if device_class is None:
                    lines.append(f"{head}: device class {class_name} does not exist")
                    continue
                class_selectors = (device_class.get("spec") or {}).get("selectors") or ()
                in_class, error = _matching(allocator, devices, class_selectors)
                if error is None:
                    selected, error = _matching(allocator, in_class, spec.get("selectors") or ())
                if error is not None:
                    lines.append(f"{head}: {error}")
                    continue
                free = [d for d in selected if not taken.is_allocated(d.key)]
                lines.append(
                    f"{head}: wants {_wanted(spec)}; the node sees {len(devices)} device(s), "
                    f"{len(in_class)} in class {class_name}, {len(selected)} matching the "
                    f"request's selectors, {len(free)} of them free"
                )
    return lines
