"""In-memory PV and PVC bindings that VolumeBinding makes at Reserve.

kube's passive assume cache: between Reserve and the API writes of PreBind,
the next pods must already see a PV as taken (its ``claimRef`` set) and a
claim as pinned to a node (its ``selected-node`` annotation), or two pods in
flight could pick the same PV. An assumed object shadows the informer's
copy only while that copy keeps the resourceVersion it was assumed on: any
newer version from the API server wins, so nothing stale outlives a write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.api import ObjectStore
from scheduler.plugins.volumes.objects import meta, resource_version

Obj = Mapping[str, Any]


class AssumeError(RuntimeError):
    """An object could not be assumed (gone, or changed since it was read)."""


def _key(obj: Obj) -> tuple[str, str]:
    m = meta(obj)
    return str(m.get("namespace") or ""), str(m.get("name") or "")


class AssumeCache:
    def __init__(self, store: Callable[[], ObjectStore]) -> None:
        self._store = store
        self._assumed: dict[tuple[str, str], Obj] = {}

    def api_object(self, namespace: str, name: str) -> Obj | None:
        """The informer's copy, ignoring anything assumed."""
        return self._store().get(namespace, name)

    def get(self, namespace: str, name: str) -> Obj | None:
        """The assumed copy while it is current, else the informer's."""
        stored = self._store().get(namespace, name)
        key = (namespace, name)
        assumed = self._assumed.get(key)
        if assumed is None:
            return stored
        if stored is None or resource_version(stored) != resource_version(assumed):
            del self._assumed[key]  # the API server has moved on
            return stored
        return assumed

    def list(self) -> list[Obj]:
        objects = self._store().list(None)
        if not self._assumed:
            return objects
        out: list[Obj] = []
        for obj in objects:
            assumed = self._assumed.get(_key(obj))
            if assumed is not None and resource_version(assumed) == resource_version(obj):
                obj = assumed
            out.append(obj)
        return out

    def assume(self, obj: Obj) -> None:
        namespace, name = key = _key(obj)
        stored = self._store().get(namespace, name)
        shown = f"{namespace}/{name}" if namespace else name
        if stored is None:
            raise AssumeError(f"{shown!r} not found")
        if resource_version(stored) != resource_version(obj):
            raise AssumeError(
                f"{shown!r} is out of sync (stored: {resource_version(stored)}, "
                f"assume: {resource_version(obj)})"
            )
        self._assumed[key] = obj

    def restore(self, obj: Obj) -> None:
        """Drop the assumed copy of ``obj`` (the informer's copy shows again)."""
        key = _key(obj)
        assumed = self._assumed.get(key)
        if assumed is not None and resource_version(assumed) == resource_version(obj):
            del self._assumed[key]

    def __len__(self) -> int:
        return len(self._assumed)
