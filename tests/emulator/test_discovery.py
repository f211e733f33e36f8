"""Discovery documents: what kubectl and client-go read before anything else."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from .kube_helpers import raw


def _resources(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in doc["resources"]}


async def test_version_and_core_group(api_client: client.ApiClient) -> None:
    status, version, _ = await raw(api_client, "GET", "/version")
    assert status == 200 and version["major"] == "1" and version["gitVersion"].startswith("v1.")
    status, api, _ = await raw(api_client, "GET", "/api")
    assert status == 200 and api["kind"] == "APIVersions" and "v1" in api["versions"]
    core = _resources((await raw(api_client, "GET", "/api/v1"))[1])
    assert core["pods"]["namespaced"] is True and core["pods"]["kind"] == "Pod"
    assert {"create", "get", "list", "watch", "patch", "update", "delete"} <= set(
        core["pods"]["verbs"]
    )
    assert core["pods/binding"]["verbs"] == ["create"]
    assert set(core["pods/status"]["verbs"]) == {"get", "patch", "update"}
    assert core["nodes"]["namespaced"] is False and "nodes/status" in core
    assert core["namespaces"]["namespaced"] is False
    assert "po" in core["pods"]["shortNames"]


@pytest.mark.parametrize(
    ("group_version", "expected"),
    [
        ("events.k8s.io/v1", {"events"}),
        ("coordination.k8s.io/v1", {"leases"}),
        ("policy/v1", {"poddisruptionbudgets", "poddisruptionbudgets/status"}),
        ("apps/v1", {"replicasets", "statefulsets"}),
        ("storage.k8s.io/v1", {"storageclasses", "csinodes", "csidrivers", "csistoragecapacities"}),
        ("apiextensions.k8s.io/v1", {"customresourcedefinitions"}),
    ],
)
async def test_group_discovery(
    api_client: client.ApiClient, group_version: str, expected: set[str]
) -> None:
    group = group_version.split("/")[0]
    _, groups, _ = await raw(api_client, "GET", "/apis")
    assert groups["kind"] == "APIGroupList"
    entry = next(g for g in groups["groups"] if g["name"] == group)
    assert group_version in [v["groupVersion"] for v in entry["versions"]]
    status, one, _ = await raw(api_client, "GET", f"/apis/{group}")
    assert status == 200 and one["kind"] == "APIGroup" and one["preferredVersion"]["groupVersion"]
    status, doc, _ = await raw(api_client, "GET", f"/apis/{group_version}")
    assert status == 200 and doc["groupVersion"] == group_version
    assert expected <= set(_resources(doc))


async def test_unknown_paths_are_404(api_client: client.ApiClient) -> None:
    for path in ("/apis/nonexistent.example.com", "/apis/nonexistent.example.com/v1"):
        status, _, _ = await raw(api_client, "GET", path)
        assert status == 404, path
    status, body, _ = await raw(api_client, "GET", "/api/v1/nonexistents")
    assert status == 404
    assert body["kind"] == "Status" and body["reason"] == "NotFound"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nodes",
        "/api/v1/pods",
        "/api/v1/namespaces",
        "/api/v1/services",
        "/api/v1/replicationcontrollers",
        "/api/v1/persistentvolumes",
        "/api/v1/persistentvolumeclaims",
        "/apis/apps/v1/replicasets",
        "/apis/apps/v1/statefulsets",
        "/apis/storage.k8s.io/v1/storageclasses",
        "/apis/storage.k8s.io/v1/csinodes",
        "/apis/storage.k8s.io/v1/csidrivers",
        "/apis/storage.k8s.io/v1/csistoragecapacities",
        "/apis/policy/v1/poddisruptionbudgets",
    ],
)
async def test_every_collection_kube_scheduler_syncs_is_listable(
    api_client: client.ApiClient, path: str
) -> None:
    status, body, _ = await raw(
        api_client, "GET", path, params={"limit": "500", "resourceVersion": "0"}
    )
    assert status == 200
    assert body["kind"].endswith("List") and isinstance(body["items"], list)
    assert int(body["metadata"]["resourceVersion"]) > 0
