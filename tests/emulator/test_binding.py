"""pods/binding with kube-apiserver's checks, as kube-scheduler's bind call sees them."""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio import client

from .kube_helpers import binding, pod


async def _bind(
    core: client.CoreV1Api, namespace: str, name: str, node: str, uid: str = ""
) -> tuple[int, Any]:
    resp = await core.create_namespaced_pod_binding(
        name, namespace, binding(name, node, uid), _preload_content=False
    )
    body = json.loads(await resp.read())
    assert body["kind"] == "Status"
    return int(resp.status), body


async def test_bind_sets_node_and_condition(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    status, body = await _bind(core, namespace, "p", "node-1")
    assert status == 201 and body["status"] == "Success"
    bound = await core.read_namespaced_pod("p", namespace)
    assert bound.spec.node_name == "node-1"
    scheduled = [c for c in bound.status.conditions if c.type == "PodScheduled"]
    assert len(scheduled) == 1 and scheduled[0].status == "True"


async def test_bind_errors(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    status, body = await _bind(core, namespace, "missing", "node-1")
    assert status == 404 and body["message"] == 'pods "missing" not found'

    created = await core.create_namespaced_pod(namespace, pod("p"))
    status, body = await _bind(
        core, namespace, "p", "node-1", uid="00000000-0000-0000-0000-000000000000"
    )
    assert status == 409 and "Precondition failed" in body["message"]

    status, _ = await _bind(core, namespace, "p", "node-1", uid=created.metadata.uid)
    assert status == 201
    status, body = await _bind(core, namespace, "p", "node-2")
    assert status == 409 and body["reason"] == "Conflict" and body["code"] == 409
    assert 'pod p is already assigned to node "node-1"' in body["message"]


async def test_bind_pod_being_deleted(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p", finalizers=["example.com/hold"]))
    await core.delete_namespaced_pod("p", namespace)
    status, body = await _bind(core, namespace, "p", "node-1")
    assert status == 409 and "is being deleted" in body["message"]
    await core.patch_namespaced_pod(
        "p",
        namespace,
        {"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )
