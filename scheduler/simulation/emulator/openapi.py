"""Just enough OpenAPI v3 for kubectl: which operations take ``fieldValidation``.

kubectl (``create``/``apply`` with the default ``--validate=strict``) refuses
to proceed when it cannot download OpenAPI. The documents here list, per
group-version, the PATCH operation of every kind with the
``fieldValidation`` parameter and no schemas, so kubectl delegates
validation to the server and builds strategic-merge patches from its own
built-in types. Schemas (``kubectl explain``) are not served.
"""

from __future__ import annotations

import hashlib
from typing import Any

from scheduler.simulation.emulator.resources import Registry, ResourceType

Obj = dict[str, Any]


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _hash(types: list[ResourceType]) -> str:
    text = ",".join(sorted(f"{t.kind}:{t.plural}:{t.namespaced}" for t in types))
    return hashlib.sha256(text.encode()).hexdigest()[:32].upper()


def root(registry: Registry) -> Obj:
    paths: Obj = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            types = registry.in_group_version(group, version)
            path = _gv_path(group, version)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={_hash(types)}"}
    return {"paths": paths}


def group_version(registry: Registry, path: str) -> Obj | None:
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api":
        group, version = "", parts[1]
    elif len(parts) == 3 and parts[0] == "apis":
        group, version = parts[1], parts[2]
    else:
        return None
    types = registry.in_group_version(group, version)
    if not types:
        return None
    param = {
        "name": "fieldValidation",
        "in": "query",
        "schema": {"type": "string", "uniqueItems": True},
    }
    paths: Obj = {}
    prefix = "/" + _gv_path(group, version)
    for rt in types:
        scope = (
            f"{prefix}/namespaces/{{namespace}}/{rt.plural}"
            if rt.namespaced
            else f"{prefix}/{rt.plural}"
        )
        gvk = {"group": group, "version": version, "kind": rt.kind}
        operation = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [param],
            "responses": {"200": {"description": "OK"}},
        }
        paths[scope] = {"post": operation}
        paths[f"{scope}/{{name}}"] = {"put": operation, "patch": operation}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (pluggable-scheduler emulator)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }
