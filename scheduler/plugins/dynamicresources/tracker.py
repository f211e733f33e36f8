"""ResourceClaims as the scheduler must see them, and which devices are taken (kube's claimTracker).

Three sources make a device taken, and a pod must never get one of them:

- claims the informer shows allocated;
- claims PreBind has written but the informer has not delivered yet (kept
  in the assume cache until it does);
- allocations made at Reserve and not yet written ("in flight"), counted
  once per claim however many pods in flight share it.

Devices given with admin access are never counted: they stay usable by
others, as in kube. The informer part is kept incrementally (a reference
count per device, updated for the claims the store says changed since the
last look), so a pod's cycle does not re-read every claim of the cluster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api import ObjectStore
from scheduler.plugins._helpers import StoreCursor, meta
from scheduler.plugins.assumecache import AssumeCache, AssumeError, newer
from scheduler.plugins.dynamicresources.claims import Obj, allocation
from scheduler.plugins.dynamicresources.state import AllocatedState

DeviceID = tuple[str, str, str]  # driver, pool, device
ClaimKey = tuple[str, str]  # namespace, name


def allocated_devices(claim: Obj) -> tuple[DeviceID, ...]:
    """kube's foreachAllocatedDevice: the devices a claim holds exclusively."""
    found = allocation(claim)
    if found is None:
        return ()
    devices = found.get("devices") or {}
    out: list[DeviceID] = []
    for result in devices.get("results") or ():
        if not isinstance(result, Mapping) or result.get("adminAccess"):
            continue
        out.append((str(result.get("driver")), str(result.get("pool")), str(result.get("device"))))
    return tuple(out)


def _has_shares(claim: Obj) -> bool:
    found = allocation(claim)
    results = ((found or {}).get("devices") or {}).get("results") or ()
    return any(isinstance(r, Mapping) and r.get("shareID") is not None for r in results)


@dataclass
class _InFlight:
    claim: Obj
    sharers: int


class ClaimTracker:
    def __init__(self, store: Callable[[], ObjectStore]) -> None:
        self.cache = AssumeCache(store)
        self._in_flight: dict[str, _InFlight] = {}
        self._cursor = StoreCursor(store)
        # Each claim counted, as last seen, with the devices it was counted for.
        self._entries: dict[ClaimKey, tuple[Obj, tuple[DeviceID, ...]]] = {}
        self._counts: Counter[DeviceID] = Counter()
        # The keys of ``_counts``, kept alongside: copying a set reuses its stored
        # hashes, where ``set(counter)`` hashes every device tuple again, per pod.
        self._taken: set[DeviceID] = set()
        self._shared: dict[ClaimKey, Obj] = {}

    # -- reading claims ---------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.cache.get(namespace, name)

    # -- in-flight allocations (Reserve .. PreBind) -----------------------------------

    def pending_allocation(self, claim_uid: str) -> Mapping[str, Any] | None:
        found = self._in_flight.get(claim_uid)
        return allocation(found.claim) if found is not None else None

    def signal_pending(self, claim_uid: str, allocated_claim: Obj) -> None:
        found = self._in_flight.get(claim_uid)
        if found is not None:
            found.sharers += 1
        else:
            self._in_flight[claim_uid] = _InFlight(allocated_claim, 1)

    def maybe_remove_pending(self, claim_uid: str, force: bool = False) -> bool:
        """Drop a pod's share of an in-flight allocation; True when it is gone."""
        found = self._in_flight.get(claim_uid)
        if found is None:
            return False
        if force or found.sharers == 1:
            del self._in_flight[claim_uid]
            return True
        found.sharers -= 1
        return False

    # -- after API writes -------------------------------------------------------------

    def assume_written(self, claim: Obj) -> bool:
        """Keep what PreBind wrote until the informer delivers it; False if it cannot."""
        m = meta(claim)
        stored = self.cache.api_object(str(m.get("namespace") or ""), str(m.get("name") or ""))
        if stored is not None and not newer(claim, stored):
            return True  # the informer was faster than the response: nothing to shadow
        try:
            self.cache.assume(claim)
        except AssumeError:
            return False
        return True

    def restore(self, claim: Obj) -> None:
        self.cache.restore(claim)

    # -- taken devices ----------------------------------------------------------------

    def taken(self) -> AllocatedState:
        """Every device (or share of one) no new allocation may use."""
        self._refresh()
        state = AllocatedState(devices=self._taken.copy())
        for claim in self._shared.values():
            state.add_claim(claim)
        for flight in self._in_flight.values():
            state.add_claim(flight.claim)
        for claim in self.cache.assumed():
            state.add_claim(claim)
        return state

    def _refresh(self) -> None:
        for claim_key, claim in self._cursor.changes(self._entries):
            self._count(claim_key, claim)

    def _count(self, claim_key: ClaimKey, claim: Obj | None) -> None:
        """Make the counts hold ``claim`` (None: deleted) where they held its last version."""
        entry = self._entries.get(claim_key)
        if entry is not None:
            if entry[0] is claim:
                return  # an informer replaces a changed object: same object, same devices
            del self._entries[claim_key]
            self._shared.pop(claim_key, None)
            counts = self._counts
            counts.subtract(entry[1])
            for device in entry[1]:
                if counts[device] <= 0:
                    del counts[device]
                    self._taken.discard(device)
        if claim is None:
            return
        devices = allocated_devices(claim)
        if devices and _has_shares(claim):
            self._shared[claim_key] = claim  # consumable capacity: counted per share
            devices = ()
        self._counts.update(devices)
        self._taken.update(devices)
        self._entries[claim_key] = (claim, devices)
