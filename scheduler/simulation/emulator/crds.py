"""CustomResourceDefinitions: POSTing one to apiextensions.k8s.io/v1 serves its kind.

As in kube-apiserver, the CRD is marked Established (and its names accepted)
right after creation, every served version shares one storage, and deleting
the CRD deletes its objects. The scheduler-plugins CRDs the contrib plugins
need are pre-installed the same way, so they also appear in ``kubectl get crd``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from scheduler.simulation.emulator import statuserrors
from scheduler.simulation.emulator.resources import Codec, ResourceType
from scheduler.simulation.emulator.watch import Change

Obj = dict[str, Any]
CRD_STORAGE = "apiextensions.k8s.io/customresourcedefinitions"


def _api_version_codec(api_version: str) -> Codec:
    def to_served(obj: Obj) -> Obj:
        return {**obj, "apiVersion": api_version}

    def from_served(obj: Obj) -> Obj:
        return dict(obj)

    return Codec(api_version, to_served, from_served)


def _selectable(paths: list[str]) -> Callable[[Obj], dict[str, str]] | None:
    if not paths:
        return None

    def values(obj: Obj) -> dict[str, str]:
        out: dict[str, str] = {}
        for path in paths:
            node: Any = obj
            for part in path.lstrip(".").split("."):
                node = node.get(part) if isinstance(node, dict) else None
            out[path.lstrip(".")] = (
                "" if node is None else (str(node).lower() if isinstance(node, bool) else str(node))
            )
        return out

    return values


def types_for(crd: Obj) -> list[ResourceType]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
    storage_version = next(
        (v["name"] for v in spec.get("versions") or [] if v.get("storage")), None
    )
    storage_api = f"{group}/{storage_version or (versions[0]['name'] if versions else 'v1')}"
    out = []
    for version in versions:
        api_version = f"{group}/{version['name']}"
        subresources = frozenset(
            (version.get("subresources") or spec.get("subresources") or {}).keys()
        )
        paths = [f.get("jsonPath", "") for f in version.get("selectableFields") or []]
        out.append(
            ResourceType(
                group,
                version["name"],
                names.get("plural", ""),
                names.get("kind", ""),
                spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular") or names.get("kind", "").lower(),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=frozenset(s for s in subresources if s in ("status", "scale")),
                storage=f"{group}/{names.get('plural', '')}",
                codec=None if api_version == storage_api else _api_version_codec(api_version),
                field_labels=_selectable([p.lstrip(".") for p in paths if p]),
                strategic_merge=False,
                custom=True,
                list_kind=names.get("listKind") or "",
                return_deleted_object=True,
                extra={
                    "storage_api_version": storage_api,
                    "printer_columns": version.get("additionalPrinterColumns")
                    or spec.get("additionalPrinterColumns")
                    or (),
                },
            )
        )
    return out


def validate_crd(crd: Obj) -> None:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = (crd.get("metadata") or {}).get("name", "")
    causes: list[tuple[str, str, str]] = []
    group, plural = spec.get("group", ""), names.get("plural", "")
    if not group:
        causes.append(("spec.group", "FieldValueRequired", "Required value"))
    if not plural:
        causes.append(("spec.names.plural", "FieldValueRequired", "Required value"))
    if not names.get("kind"):
        causes.append(("spec.names.kind", "FieldValueRequired", "Required value"))
    if group and plural and name != f"{plural}.{group}":
        causes.append(
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
            )
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            (
                "spec.scope",
                "FieldValueNotSupported",
                'Unsupported value: supported values: "Cluster", "Namespaced"',
            )
        )
    versions = spec.get("versions") or []
    if not versions or sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            (
                "spec.versions",
                "FieldValueInvalid",
                "Invalid value: must have exactly one version marked as storage version",
            )
        )
    if causes:
        raise statuserrors.invalid("apiextensions.k8s.io", "CustomResourceDefinition", name, causes)


def established_status(crd: Obj) -> Obj:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", names.get("kind", "").lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": now,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": now,
            },
        ],
        "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
    }


def _crd(
    group: str, plural: str, kind: str, short: list[str], version: str, scope: str = "Namespaced"
) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "listKind": f"{kind}List",
                "shortNames": short,
            },
            "scope": scope,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


BUILTIN_CRDS: list[Obj] = [
    _crd("scheduling.x-k8s.io", "podgroups", "PodGroup", ["pg", "pgs"], "v1alpha1"),
    _crd("scheduling.x-k8s.io", "elasticquotas", "ElasticQuota", ["eq", "eqs"], "v1alpha1"),
    # Koordinator's (scheduler-plugin-reservation): cluster-scoped, no short names.
    _crd("scheduling.koordinator.sh", "reservations", "Reservation", [], "v1alpha1", "Cluster"),
]


class CrdController:
    """Keeps the registry in step with stored CRDs (the store calls it on commit)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        store.after_commit[CRD_STORAGE] = self.on_change
        self._registered: dict[str, list[ResourceType]] = {}

    def on_change(self, rt: ResourceType, change: Change) -> None:
        crd = change.entry.obj
        name = crd["metadata"]["name"]
        for old in self._registered.pop(name, []):
            self.store.registry.remove(old.group, old.version, old.plural)
        if change.type == "DELETED":
            self._drop_objects(change.prev.obj if change.prev else crd)
            return
        types = types_for(crd)
        for new in types:
            self.store.registry.add(new)
        self._registered[name] = types
        if change.type == "ADDED":
            status = established_status(crd)
            if crd.get("status") != status:
                updated = {**crd, "status": status, "metadata": dict(crd["metadata"])}
                self.store.mutate(rt, "", name, lambda _cur: updated, subresource="status")

    def _drop_objects(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
        types = types_for(crd)
        coll = self.store.collections.get(f"{group}/{plural}")
        if coll is None or not types:
            return
        for key in list(coll.objects):
            entry = coll.objects[key]
            final = {**entry.obj, "metadata": dict(entry.obj["metadata"])}
            self.store._commit(types[0], "DELETED", key, final, entry)
