"""kube's passive assume cache: the scheduler's own changes, seen before the informer sees them.

Between a plugin's decision and the informer's echo of its API write, the
next pods must already see that change, or two pods in flight could take
the same thing: VolumeBinding assumes a PV's ``claimRef`` and a claim's
``selected-node`` at Reserve (same resourceVersion, not yet written);
DynamicResources assumes a ResourceClaim as PreBind wrote it (a newer
resourceVersion the informer has not delivered yet).

An assumed object shadows the informer's copy until the informer holds a
strictly newer version (resourceVersions compared as integers, as kube's
assume cache does), so nothing stale outlives a write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.api import ObjectStore
from scheduler.plugins._helpers import meta, resource_version

Obj = Mapping[str, Any]


class AssumeError(RuntimeError):
    """An object could not be assumed (gone, or changed since it was read)."""


def _key(obj: Obj) -> tuple[str, str]:
    m = meta(obj)
    return str(m.get("namespace") or ""), str(m.get("name") or "")


def newer(a: Obj, b: Obj) -> bool:
    """Whether ``a``'s resourceVersion is later than ``b``'s (kube's int64 comparison)."""
    va, vb = resource_version(a), resource_version(b)
    try:
        return int(va) > int(vb)
    except ValueError:
        return va != vb


class AssumeCache:
    def __init__(self, store: Callable[[], ObjectStore]) -> None:
        self._store = store
        #: key -> (the assumed copy, the informer's copy when it was assumed)
        self._assumed: dict[tuple[str, str], tuple[Obj, Obj]] = {}

    def api_object(self, namespace: str, name: str) -> Obj | None:
        """The informer's copy, ignoring anything assumed."""
        return self._store().get(namespace, name)

    def _current(self, key: tuple[str, str], stored: Obj | None) -> Obj | None:
        """The assumed copy if it still shadows ``stored``; forgets it otherwise.

        kube replaces an assumed object when the informer delivers a version at
        least as new: here, when the informer's copy is no longer the one seen
        at assume time and is not older than the assumed copy.
        """
        entry = self._assumed.get(key)
        if entry is None:
            return None
        assumed, seen = entry
        if stored is None or (stored is not seen and not newer(assumed, stored)):
            del self._assumed[key]  # the API server has caught up or moved on
            return None
        return assumed

    def get(self, namespace: str, name: str) -> Obj | None:
        """The assumed copy while it is current, else the informer's."""
        stored = self._store().get(namespace, name)
        if not self._assumed:
            return stored
        assumed = self._current((namespace, name), stored)
        return assumed if assumed is not None else stored

    def list(self) -> list[Obj]:
        objects = self._store().list(None)
        if not self._assumed:
            return objects
        out: list[Obj] = []
        for obj in objects:
            key = _key(obj)
            assumed = self._current(key, obj) if key in self._assumed else None
            out.append(assumed if assumed is not None else obj)
        return out

    def assume(self, obj: Obj) -> None:
        namespace, name = key = _key(obj)
        stored = self._store().get(namespace, name)
        shown = f"{namespace}/{name}" if namespace else name
        if stored is None:
            raise AssumeError(f"{shown!r} not found")
        if newer(stored, obj):
            raise AssumeError(
                f"{shown!r} is out of sync (stored: {resource_version(stored)}, "
                f"assume: {resource_version(obj)})"
            )
        self._assumed[key] = (obj, stored)

    def restore(self, obj: Obj) -> None:
        """Drop the assumed copy of ``obj`` (the informer's copy shows again)."""
        key = _key(obj)
        entry = self._assumed.get(key)
        if entry is not None and resource_version(entry[0]) == resource_version(obj):
            del self._assumed[key]

    def assumed(self) -> tuple[Obj, ...]:
        """The assumed copies that still shadow the informer's."""
        store = self._store()
        return tuple(
            found
            for key in tuple(self._assumed)
            if (found := self._current(key, store.get(*key))) is not None
        )

    def __len__(self) -> int:
        return len(self._assumed)
