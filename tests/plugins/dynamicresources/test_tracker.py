"""The claim tracker's taken devices, kept incrementally, equal a count from scratch.

The tracker updates the claims the store says changed (``changed_since``),
or re-reads them all when it cannot tell, and keeps a reference count per
device and the set of devices counted, so that a pod's cycle neither reads
every claim nor hashes every allocated device again. Whatever sequence of
claims allocated, replaced (a device moving from one claim to another) and
deleted, ``taken().devices`` must be exactly the devices the live claims hold.
"""

from __future__ import annotations

import random
from typing import Any

from scheduler.plugins.dynamicresources.tracker import ClaimTracker
from tests.plugins.builders import ChangingStore
from tests.plugins.dynamicresources.builders import allocation, claim, result

Obj = dict[str, Any]


def _allocated(name: str, devices: list[str], admin: bool = False) -> Obj:
    body = claim(name)
    body["metadata"]["namespace"] = "ns"
    results = [result("r", "gpu.example.com", "pool", d, admin_access=admin) for d in devices]
    body["status"] = {"allocation": allocation(None, *results)}
    return body


def test_taken_devices_follow_claims_allocated_moved_and_deleted() -> None:
    rng = random.Random(5)
    store = ChangingStore(rng)
    tracker = ClaimTracker(lambda: store)
    devices = [f"gpu-{i}" for i in range(12)]
    for step in range(400):
        name = f"claim-{rng.randrange(8)}"
        if rng.random() < 0.25:
            store.delete("ns", name)
        else:
            held = rng.sample(devices, rng.randint(0, 3))
            store.put(_allocated(name, held, admin=rng.random() < 0.1))
        if rng.random() < 0.5:
            continue  # several changes between two looks, as between two pods
        expected = {
            ("gpu.example.com", "pool", r["device"])
            for obj in store.objects.values()
            for r in obj["status"]["allocation"]["devices"].get("results", ())
            if not r.get("adminAccess")
        }
        assert tracker.taken().devices == expected, f"step {step}"
