"""What is already allocated cluster-wide: kube's ``schedulerapi.AllocatedState``.

Built the way kube-scheduler's DRA plugin builds it (``foreachAllocatedDevice`` in
``allocateddevices.go`` with DRAConsumableCapacity on): admin-access results are not
"allocated"; a result with a ``shareID`` is a share of a multi-allocatable device and
adds its ``consumedCapacity`` to the device's aggregate instead of blocking it; every
other result blocks its device.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.plugins.dynamicresources.capacity import ConsumedCapacity, amount
from scheduler.plugins.dynamicresources.pools import DeviceKey

__all__ = ["AllocatedState", "SharedDeviceKey"]

#: ``(driver, pool, device, shareID)``.
SharedDeviceKey = tuple[str, str, str, str]


@dataclass
class AllocatedState:
    """Devices in use by allocated (or in-flight) claims.

    ``devices`` holds dedicated allocations, ``shared_devices`` the shares of
    multi-allocatable devices and ``aggregated_capacity`` what those shares consume.
    """

    devices: set[DeviceKey] = field(default_factory=set)
    shared_devices: set[SharedDeviceKey] = field(default_factory=set)
    aggregated_capacity: dict[DeviceKey, ConsumedCapacity] = field(default_factory=dict)

    @classmethod
    def from_claims(cls, claims: Iterable[Mapping[str, Any]]) -> AllocatedState:
        """From claims with ``status.allocation``; others are ignored.

        Pass in-flight allocations (assumed but not yet written) as claims carrying
        the allocation too: kube adds them the same way.
        """
        state = cls()
        for claim in claims:
            state.add_claim(claim)
        return state

    def add_claim(self, claim: Mapping[str, Any]) -> None:
        """Record one claim's allocation (kube's ``allocatedDevices.addDevices``)."""
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            return
        for result in (allocation.get("devices") or {}).get("results") or ():
            self.add_result(result)

    def add_result(self, result: Mapping[str, Any]) -> None:
        """Record one ``DeviceRequestAllocationResult``."""
        if result.get("adminAccess"):
            return
        key: DeviceKey = (
            str(result.get("driver") or ""),
            str(result.get("pool") or ""),
            str(result.get("device") or ""),
        )
        share_id = result.get("shareID")
        if share_id is not None:
            self.shared_devices.add((*key, str(share_id)))
            consumed = result.get("consumedCapacity")
            if consumed is not None:
                total = self.aggregated_capacity.setdefault(key, {})
                for name, raw in consumed.items():
                    total[name] = total.get(name, Fraction(0)) + amount(raw).value
            return
        self.devices.add(key)

    def is_allocated(self, key: DeviceKey) -> bool:
        """kube's ``IsDeviceAllocated``: dedicated, shared, or with consumed capacity."""
        if key in self.devices or key in self.aggregated_capacity:
            return True
        return any(shared[:3] == key for shared in self.shared_devices)
