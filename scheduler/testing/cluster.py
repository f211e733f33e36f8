"""An emulated cluster for tests: the built-in API server on the test's event loop.

:class:`EmulatedCluster` wraps :class:`~scheduler.simulation.emulator.EmulatorServer`
with the few operations a plugin test needs (create, patch, delete, read
objects and events). Changes go straight into the emulator's store, so
watchers - the scheduler under test - see them as ordinary watch events.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from scheduler.simulation.emulator import EmulatorServer
from scheduler.simulation.emulator.clusterfile import load_cluster_file, load_objects
from scheduler.simulation.emulator.patch import merge_patch
from scheduler.simulation.emulator.resources import ResourceType
from scheduler.simulation.emulator.statuserrors import ApiError

Obj = dict[str, Any]


def split_key(key: str) -> tuple[str, str]:
    """``"ns/name"`` -> ``("ns", "name")``; a bare name is in ``default``."""
    namespace, _, name = key.rpartition("/")
    return namespace or "default", name


class EmulatedCluster:
    """A running emulator plus helpers; create with ``await EmulatedCluster.start(...)``."""

    def __init__(self, server: EmulatorServer, directory: Path) -> None:
        self.server = server
        self.directory = directory
        self.kubeconfig = server.write_kubeconfig(directory / "kubeconfig")

    @classmethod
    async def start(
        cls,
        objects: Iterable[Obj] = (),
        *,
        cluster_file: str | Path | None = None,
        directory: str | Path,
        builtin_crds: bool = True,
    ) -> EmulatedCluster:
        """Serve ``objects`` (and/or a cluster file's objects) on a loopback port.

        The emulator serves the CRDs of the plugins we publish from the start;
        with ``builtin_crds=False`` it serves none, so a test can install a
        distribution's own manifest as a user would on a real cluster.
        """
        items = list(load_cluster_file(cluster_file)) if cluster_file is not None else []
        items.extend(objects)
        server = EmulatorServer(items, builtin_crds=builtin_crds)
        await server.start()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return cls(server, directory)

    async def stop(self) -> None:
        await self.server.stop()

    async def __aenter__(self) -> EmulatedCluster:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        return self.server.url

    # -- objects ------------------------------------------------------------------

    def _type(self, api_version: str, kind: str) -> ResourceType:
        rt = self.server.store.registry.by_kind(api_version, kind)
        if rt is None:
            raise LookupError(f"the emulator does not serve kind {kind!r} in {api_version!r}")
        return rt

    def create(self, *objects: Obj) -> None:
        """Create objects as given (status kept; missing namespaces are created)."""
        load_objects(self.server.store, list(objects))

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        """The object as the API serves it, or None."""
        rt = self._type(api_version, kind)
        try:
            return self.server.store.get(rt, namespace if rt.namespaced else "", name)
        except ApiError as err:
            if err.code == 404:
                return None
            raise

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        rt = self._type(api_version, kind)
        out = []
        for (ns, name), _entry in sorted(self.server.store.collection(rt).objects.items()):
            if namespace is None or ns == namespace:
                obj = self.get(api_version, kind, name, ns)
                if obj is not None:
                    out.append(obj)
        return out

    def patch(self, api_version: str, kind: str, name: str, patch: Obj, namespace: str = "") -> Obj:
        """Apply a JSON merge patch (RFC 7386; ``None`` deletes a key)."""
        rt = self._type(api_version, kind)
        ns = namespace if rt.namespaced else ""

        def change(current: Obj) -> Obj:
            merged: Obj = merge_patch(current, patch)
            return merged

        self.server.store.mutate(rt, ns, name, change)
        result = self.get(api_version, kind, name, ns)
        assert result is not None
        return result

    def apply(self, *objects: Obj) -> None:
        """Create each object, or replace the existing one's content (metrics, nodes...)."""
        for obj in objects:
            meta = obj.get("metadata") or {}
            rt = self._type(str(obj.get("apiVersion")), str(obj.get("kind")))
            ns = str(meta.get("namespace") or "default") if rt.namespaced else ""
            name = str(meta.get("name") or "")
            if self.get(str(obj["apiVersion"]), str(obj["kind"]), name, ns) is None:
                self.create(obj)
                continue

            def replace(current: Obj, obj: Obj = obj) -> Obj:
                body = {k: v for k, v in obj.items() if k != "metadata"}
                body["metadata"] = {**current["metadata"], **(obj.get("metadata") or {})}
                body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                return body

            self.server.store.mutate(rt, ns, name, replace)

    def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> None:
        rt = self._type(api_version, kind)
        self.server.store.delete(
            rt, namespace if rt.namespaced else "", name, {"gracePeriodSeconds": 0}
        )

    # -- pods and events ------------------------------------------------------------

    def pod(self, key: str) -> Obj | None:
        """The pod ``"namespace/name"`` (a bare name is in ``default``)."""
        namespace, name = split_key(key)
        return self.get("v1", "Pod", name, namespace)

    def node_of(self, key: str) -> str | None:
        """Where the pod is bound (``spec.nodeName``), or None."""
        pod = self.pod(key)
        if pod is None:
            return None
        return str((pod.get("spec") or {}).get("nodeName") or "") or None

    def events(self, key: str | None = None, reason: str | None = None) -> builtins.list[Obj]:
        """``events.k8s.io/v1`` Events, optionally only about pod ``key`` and of ``reason``."""
        out = []
        for event in self.list("events.k8s.io/v1", "Event"):
            regarding = event.get("regarding") or {}
            if key is not None:
                namespace, name = split_key(key)
                if (regarding.get("namespace"), regarding.get("name")) != (namespace, name):
                    continue
            if reason is not None and event.get("reason") != reason:
                continue
            out.append(event)
        return out

    # Kinds left out of :meth:`snapshot`: the scheduler's own output, not cluster state.
    SNAPSHOT_SKIP = frozenset({"Event", "Lease", "CustomResourceDefinition"})

    def snapshot(self) -> builtins.list[Obj]:
        """Every object the emulator holds (but events and leases), as a cluster file has them."""
        out: builtins.list[Obj] = []
        store = self.server.store
        seen: set[str] = set()
        for rt in store.registry.all():
            # Several versions of one resource share storage: take each once.
            if rt.kind in self.SNAPSHOT_SKIP or rt.storage_key in seen:
                continue
            seen.add(rt.storage_key)
            for (namespace, name), _entry in sorted(store.collection(rt).objects.items()):
                obj = store.get(rt, namespace, name)
                obj.setdefault("apiVersion", rt.api_version)
                obj.setdefault("kind", rt.kind)
                out.append(obj)
        return out
