"""Cluster files: a snapshot of a cluster the emulator starts from.

Either what ``kubectl get nodes,pods -A -o yaml`` prints (a ``List``) or a
multi-document YAML of objects. Objects keep their status, uid and
timestamps, so a snapshot of a real cluster loads as it was (running pods
stay Running on their nodes); only resourceVersions are re-stamped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scheduler.config.yamlfiles import load_yaml_documents, read_text
from scheduler.errors import UserError
from scheduler.simulation.emulator.admission import SYSTEM_NAMES
from scheduler.simulation.emulator.statuserrors import ApiError
from scheduler.simulation.emulator.store import Store

Obj = dict[str, Any]

# Load order so that references resolve: namespaces, then definitions, then nodes,
# the storage classes and CSI drivers that volumes and claims name and the device
# classes that resource claims name, then the rest (ResourceSlices, ResourceClaims,
# ResourceClaimTemplates and pods among them, as any other object).
_FIRST = {
    "Namespace": 0,
    "CustomResourceDefinition": 1,
    "Node": 2,
    "StorageClass": 2,
    "CSIDriver": 2,
    "DeviceClass": 2,
}


def _check_object(obj: Any, where: str) -> Obj:
    if not isinstance(obj, dict):
        raise UserError(
            f"{where}: expected a Kubernetes object (a mapping), got {type(obj).__name__}"
        )
    for field in ("apiVersion", "kind"):
        if not isinstance(obj.get(field), str) or not obj[field]:
            raise UserError(f"{where}: missing {field!r}")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        raise UserError(f"{where}: {obj['kind']} has no metadata.name")
    return obj


def parse_cluster_text(text: str, source: str) -> list[Obj]:
    documents = load_yaml_documents(text, source)
    objects: list[Obj] = []
    for index, doc in enumerate(documents):
        if doc is None:
            continue
        where = f"{source}: document {index}"
        if (
            isinstance(doc, dict)
            and isinstance(doc.get("kind"), str)
            and doc["kind"].endswith("List")
            and "items" in doc
        ):
            items = doc["items"] or []
            if not isinstance(items, list):
                raise UserError(f"{where}: 'items' must be a list")
            for i, item in enumerate(items):
                objects.append(_check_object(item, f"{where}, item {i}"))
        else:
            objects.append(_check_object(doc, where))
    return objects


def load_cluster_file(path: str | Path) -> list[Obj]:
    """Parse a cluster file; bad input raises UserError naming the file and document."""
    file = Path(path)
    return parse_cluster_text(read_text(file, "cluster file"), str(file))


def load_objects(store: Store, objects: list[Obj]) -> int:
    """Create ``objects`` in ``store`` as they are, creating missing namespaces."""
    ns_type = store.type("", "v1", "namespaces")
    ordered = sorted(enumerate(objects), key=lambda pair: _FIRST.get(pair[1].get("kind", ""), 3))
    for index, obj in ordered:
        meta = obj.get("metadata") or {}
        where = "/".join(p for p in (meta.get("namespace"), meta.get("name")) if p)
        label = f"object {index} ({obj.get('kind')} {where})"
        api_version = obj.get("apiVersion", "")
        rt = store.registry.by_kind(api_version, obj.get("kind", ""))
        if rt is None:
            raise UserError(
                f"{label}: the emulator does not serve kind {obj.get('kind')!r} in {api_version!r}"
            )
        body = {k: v for k, v in obj.items()}
        body["metadata"] = {
            k: v
            for k, v in meta.items()
            if k not in ("resourceVersion", "managedFields", "selfLink")
        }
        if rt.namespaced:
            namespace = body["metadata"].setdefault("namespace", "default")
            if ("", namespace) not in store.collection(ns_type).objects:
                store.create(ns_type, {"metadata": {"name": namespace}})
        try:
            # What every cluster has from the start (kube-system, the system priority
            # classes) is in a snapshot too: keep the emulator's own.
            if (
                (rt.kind == "Namespace" and not rt.group)
                or (rt.group == "scheduling.k8s.io" and meta.get("name") in SYSTEM_NAMES)
            ) and ("", meta.get("name", "")) in store.collection(rt).objects:
                continue
            store.create(rt, body, preserve=True)
        except ApiError as exc:
            raise UserError(f"{label}: {exc.message}") from exc
    return len(objects)
