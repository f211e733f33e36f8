"""Patches dispatched on Content-Type: strategic merge, JSON merge, JSON patch."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from .kube_helpers import error, pod, raw


async def test_strategic_merge_conditions_merge_by_type(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    first = {
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
        }
    }
    await core.patch_namespaced_pod_status("p", namespace, first)
    ready = {
        "status": {"conditions": [{"type": "Ready", "status": "False"}], "nominatedNodeName": "n1"}
    }
    patched = await core.patch_namespaced_pod_status("p", namespace, ready)
    conditions = {c.type: c for c in patched.status.conditions}
    assert set(conditions) == {"PodScheduled", "Ready"}
    assert conditions["PodScheduled"].reason == "Unschedulable"
    assert patched.status.nominated_node_name == "n1"
    again = {
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]
        }
    }
    patched = await core.patch_namespaced_pod_status("p", namespace, again)
    conditions = {c.type: c for c in patched.status.conditions}
    assert conditions["PodScheduled"].reason == "SchedulerError" and "Ready" in conditions


async def test_status_patch_ignores_spec_and_main_patch_ignores_status(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    patched = await core.patch_namespaced_pod(
        "p", namespace, {"metadata": {"labels": {"a": "1"}}, "status": {"phase": "Running"}}
    )
    assert patched.metadata.labels == {"a": "1"} and patched.status.phase == "Pending"
    patched = await core.patch_namespaced_pod_status(
        "p", namespace, {"metadata": {"labels": {"a": "2"}}, "status": {"phase": "Running"}}
    )
    assert patched.status.phase == "Running"


async def test_strategic_merge_containers_by_name(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    patched = await core.patch_namespaced_pod(
        "p",
        namespace,
        {"spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}},
    )
    assert [(c.name, c.image) for c in patched.spec.containers] == [
        ("c", "registry.k8s.io/pause:3.10")
    ]
    assert patched.spec.containers[0].termination_message_path == "/dev/termination-log"


async def test_merge_patch(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p", labels={"keep": "1", "drop": "1"}))
    patched = await core.patch_namespaced_pod(
        "p",
        namespace,
        {"metadata": {"labels": {"drop": None, "new": "2"}}},
        _content_type="application/merge-patch+json",
    )
    assert patched.metadata.labels == {"keep": "1", "new": "2"}


async def test_json_patch(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p", labels={"a": "1"}))
    ops = [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
        {"op": "add", "path": "/metadata/annotations", "value": {"example.com/team": "v"}},
    ]
    patched = await core.patch_namespaced_pod("p", namespace, ops)
    assert patched.metadata.labels == {"a": "2"} and patched.metadata.annotations == {
        "example.com/team": "v"
    }
    with pytest.raises(client.ApiException) as exc:
        await core.patch_namespaced_pod(
            "p", namespace, [{"op": "test", "path": "/metadata/labels/a", "value": "9"}]
        )
    assert exc.value.status == 422
    removed = await core.patch_namespaced_pod(
        "p", namespace, [{"op": "remove", "path": "/metadata/annotations/example.com~1team"}]
    )
    assert not removed.metadata.annotations


async def test_patch_errors(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_pod(namespace, pod("p"))
    path = f"/api/v1/namespaces/{namespace}/pods/p"
    status, body, _ = await raw(
        api_client, "PATCH", path, body={"metadata": {}}, content_type="application/xml"
    )
    assert status == 415 and body["reason"] == "UnsupportedMediaType"
    status, body, _ = await raw(
        api_client,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/missing",
        body={"metadata": {}},
        content_type="application/merge-patch+json",
    )
    assert status == 404
    await core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"v": "1"}}})
    with pytest.raises(client.ApiException) as exc:
        await core.patch_namespaced_pod(
            "p",
            namespace,
            {
                "metadata": {
                    "labels": {"v": "2"},
                    "resourceVersion": created.metadata.resource_version,
                }
            },
        )
    assert exc.value.status == 409 and error(exc.value)["reason"] == "Conflict"
