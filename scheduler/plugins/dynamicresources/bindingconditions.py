"""Device binding conditions (kube 1.36's DRADeviceBindingConditions, beta and on by default).

Some devices are not ready when allocated: a fabric-attached GPU must first be
attached to the node. Their slice lists ``bindingConditions`` (and
``bindingFailureConditions``), copied into the allocation result; the driver
reports them in the claim's ``status.devices[].conditions``. The pod is bound
only once every binding condition is true; a failure condition that turns
true, or ``bindingTimeout`` passing since the allocation, makes the claim
unusable where it is allocated, so PostFilter can deallocate it and the next
attempt can pick other devices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.plugins._helpers import meta
from scheduler.plugins.dynamicresources.claims import Obj, allocation, status

ERR_BINDING_FAILED = "device binding failed"
ERR_BINDING_TIMEOUT = "device binding timeout"


class BindingFailed(Exception):
    """A binding failure condition is true (kube's ErrDeviceBindingFailed)."""


def _results(claim: Obj) -> list[Mapping[str, Any]]:
    found = allocation(claim)
    results = ((found or {}).get("devices") or {}).get("results") or ()
    return [r for r in results if isinstance(r, Mapping)]


def has_binding_conditions(claims: Iterable[Obj]) -> bool:
    return any(r.get("bindingConditions") for c in claims for r in _results(c))


def _device_conditions(claim: Obj, result: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    for device in status(claim).get("devices") or ():
        if (
            isinstance(device, Mapping)
            and device.get("driver") == result.get("driver")
            and device.get("pool") == result.get("pool")
            and device.get("device") == result.get("device")
        ):
            return [c for c in device.get("conditions") or () if isinstance(c, Mapping)]
    return None


def claim_ready(claim: Obj) -> bool:
    """kube's isClaimReadyForBinding; raises BindingFailed on a true failure condition."""
    if allocation(claim) is None:
        return False
    for result in _results(claim):
        wanted = result.get("bindingConditions") or ()
        if not wanted:
            continue
        conditions = _device_conditions(claim, result)
        if conditions is None:
            return False
        by_type = {str(c.get("type")): c for c in conditions}
        for name in result.get("bindingFailureConditions") or ():
            failed = by_type.get(str(name))
            if failed is not None and failed.get("status") == "True":
                raise BindingFailed(
                    f"{ERR_BINDING_FAILED}: claim={meta(claim).get('name')}, "
                    f'reason={failed.get("reason") or ""}, message="{failed.get("message") or ""}"'
                )
        if any((by_type.get(str(name)) or {}).get("status") != "True" for name in wanted):
            return False
    return True


def claim_timed_out(claim: Obj, timeout: float, now: datetime | None = None) -> bool:
    """kube's isClaimTimeout: bindingTimeout has passed since the allocation."""
    found = allocation(claim)
    stamp = (found or {}).get("allocationTimestamp")
    if not stamp or not any(r.get("bindingConditions") is not None for r in _results(claim)):
        return False
    try:
        allocated = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return False
    return allocated + timedelta(seconds=timeout) < (now or datetime.now(UTC))
