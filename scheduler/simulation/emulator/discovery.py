"""Legacy (unaggregated) discovery documents, built from the resource registry.

kubectl and client-go first ask for aggregated discovery; answering with the
plain ``APIGroupList`` makes them fall back to per-group-version documents,
which is the smallest surface that keeps every client working.
"""

from __future__ import annotations

import hashlib
from typing import Any

from scheduler.simulation.emulator.resources import Registry, ResourceType

Obj = dict[str, Any]

KUBE_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-pluggable-scheduler-emulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_STATUS_VERBS = ["get", "patch", "update"]


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> Obj:
    groups = [_group(g, vs) for g, vs in registry.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> Obj | None:
    versions = registry.group_versions().get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def _hash(rt: ResourceType) -> str:
    digest = hashlib.sha256(f"{rt.group}/{rt.version}/{rt.kind}".encode()).digest()
    import base64

    return base64.b64encode(digest[:8]).decode()


def resource_list(registry: Registry, group: str, version: str) -> Obj | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources: list[Obj] = []
    for rt in sorted(types, key=lambda t: t.plural):
        entry: Obj = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
            "storageVersionHash": _hash(rt),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for sub in sorted(rt.subresources):
            if sub == "binding":
                resources.append(
                    {
                        "name": f"{rt.plural}/binding",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": "Binding",
                        "verbs": ["create"],
                    }
                )
            elif sub == "status":
                resources.append(
                    {
                        "name": f"{rt.plural}/status",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": rt.kind,
                        "verbs": list(_STATUS_VERBS),
                    }
                )
            elif sub == "finalize":
                resources.append(
                    {
                        "name": f"{rt.plural}/finalize",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": rt.kind,
                        "verbs": ["update"],
                    }
                )
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }
