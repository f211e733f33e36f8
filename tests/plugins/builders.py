"""Builders for plugin tests: nodes, pods and a NodeTable, like kube's st.MakeNode/MakePod.

Quantities are strings as in manifests ("4", "500m", "2Gi"); kube's own tests
write ``cpu: "4000"`` meaning 4000 cores, and those numbers carry over as is.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from scheduler.api import CycleState, Handle
from scheduler.plugins._helpers import object_key
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

Quantities = Mapping[str, str | int]


def make_node(
    name: str,
    *,
    cpu: str | int | None = None,
    memory: str | int | None = None,
    pods: str | int | None = 110,
    ephemeral_storage: str | int | None = None,
    extended: Quantities | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    images: Sequence[tuple[Sequence[str], int]] = (),
) -> dict[str, Any]:
    """A v1 Node whose capacity and allocatable are the given amounts."""
    resources: dict[str, str | int] = {}
    for key, value in (
        ("cpu", cpu),
        ("memory", memory),
        ("pods", pods),
        ("ephemeral-storage", ephemeral_storage),
    ):
        if value is not None:
            resources[key] = value
    resources.update(extended or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"capacity": dict(resources), "allocatable": dict(resources)}
    if images:
        status["images"] = [{"names": list(n), "sizeBytes": size} for n, size in images]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": status,
    }


def container(
    name: str = "c",
    *,
    requests: Quantities | None = None,
    image: str | None = None,
    ports: Sequence[Mapping[str, Any]] = (),
    restart_policy: str | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image or "registry.k8s.io/pause:3.10"}
    if requests is not None:
        c["resources"] = {"requests": dict(requests)}
    if ports:
        c["ports"] = [dict(p) for p in ports]
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


_counter = 0


def make_pod(
    name: str | None = None,
    *,
    namespace: str = "default",
    uid: str | None = None,
    requests: Sequence[Quantities] = (),
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] = (),
    overhead: Quantities | None = None,
    node_name: str | None = None,
    priority: int | None = None,
    labels: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    host_ports: Sequence[Mapping[str, Any]] = (),
    scheduling_gates: Sequence[str] = (),
) -> dict[str, Any]:
    """A v1 Pod. ``requests`` adds one container per entry (like st.MakePod().Req());
    ``containers`` gives them explicitly instead; with neither the pod has none."""
    global _counter
    _counter += 1
    name = name or f"pod-{_counter}"
    spec: dict[str, Any] = {}
    if containers is None:
        built = [container(f"c{i}", requests=r) for i, r in enumerate(requests)]
        if host_ports:
            if not built:
                built = [container("c0")]
            built[0]["ports"] = [dict(p) for p in host_ports]
        containers = built
    spec["containers"] = [dict(c) for c in containers]
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    if overhead:
        spec["overhead"] = dict(overhead)
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = dict(affinity)
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{name}",
            "labels": dict(labels or {}),
        },
        "spec": spec,
    }


def pod_info(raw: Mapping[str, Any] | None = None, **kwargs: Any) -> PodInfo:
    """PodInfo of ``raw`` or of ``make_pod(**kwargs)``."""
    return PodInfo.from_dict(dict(raw) if raw is not None else make_pod(**kwargs))


def make_table(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]] = ()
) -> NodeTable:
    """A NodeTable holding ``nodes`` and the (assigned) ``pods``."""
    table = NodeTable()
    node_dicts = [dict(n) for n in nodes]
    pod_infos = [PodInfo.from_dict(dict(p)) for p in pods]
    for node in node_dicts:
        table.upsert_node(node)
    for pod in pod_infos:
        table.add_pod(pod)
    return table


def all_nodes(table: NodeTable) -> NodeSet:
    return table.all_nodes()


class _EmptyStore:
    """A watched resource with no objects (NodeResourcesFit reads DeviceClasses)."""

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return None

    def list(self, namespace: str | None = None) -> list[Mapping[str, Any]]:
        return []

    def revision(self) -> int:
        return 0


@dataclass
class _FakeHandle:
    table: NodeTable = field(default_factory=NodeTable)
    client: Any = None
    profile_name: str = "default-scheduler"

    def store(self, group: str, version: str, plural: str) -> _EmptyStore:
        return _EmptyStore()


def FakeHandle(table: NodeTable | None = None, *, client: Any = None) -> Handle:
    """A Handle with only ``table``, ``client`` and ``profile_name``: what the in-tree
    plugins use. Add attributes to ``_FakeHandle`` when a plugin needs more."""
    return cast(Handle, _FakeHandle(table if table is not None else NodeTable(), client))


def new_state() -> CycleState:
    return CycleState()


class ChangingStore:
    """An informer's store as plugins read it: objects replaced, never changed in place.

    Its change log forgets at random (as an informer's does at a re-list),
    so a reader's rebuild from the whole list is exercised as well as its
    updates from ``changed_since``.
    """

    def __init__(self, rng: random.Random, forget: float = 0.2) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._log: list[tuple[str, str]] = []
        self._rng = rng
        self._forget = forget

    def put(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        self.objects[key] = obj
        self._log.append(key)

    def delete(self, namespace: str, name: str) -> None:
        self.objects.pop((namespace, name), None)
        self._log.append((namespace, name))

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((namespace, name))

    def list(
        self, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> list[Mapping[str, Any]]:
        return [o for (ns, _), o in self.objects.items() if namespace in (None, ns)]

    def revision(self) -> int:
        return len(self._log)

    def changed_since(self, revision: int) -> set[tuple[str, str]] | None:
        if self._rng.random() < self._forget:
            return None
        return set(self._log[revision:])
