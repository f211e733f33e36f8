"""Create / get / update / delete and the metadata kube-apiserver stamps on writes."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from .kube_helpers import error, pod, raw, read_json


async def test_create_stamps_metadata_and_defaults(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    body = pod("p1")
    body["status"] = {"phase": "Running"}
    resp = await core.create_namespaced_pod(namespace, body, _preload_content=False)
    assert resp.status == 201
    created = await read_json(resp)
    meta = created["metadata"]
    assert (
        meta["namespace"] == namespace and meta["uid"] and meta["creationTimestamp"].endswith("Z")
    )
    assert int(meta["resourceVersion"]) > 0
    assert created["status"]["phase"] == "Pending", "status is reset on create"
    assert created["spec"]["schedulerName"] == "default-scheduler"
    got = await core.read_namespaced_pod("p1", namespace)
    assert got.metadata.uid == meta["uid"]


async def test_resource_versions_increase_across_kinds(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    coord = client.CoordinationV1Api(api_client)
    a = await core.create_namespaced_pod(namespace, pod("a"))
    b = await coord.create_namespaced_lease(namespace, {"metadata": {"name": "l"}, "spec": {}})
    c = await core.patch_namespaced_pod("a", namespace, {"metadata": {"labels": {"x": "1"}}})
    versions = [int(o.metadata.resource_version) for o in (a, b, c)]
    assert versions == sorted(versions) and len(set(versions)) == 3


async def test_generate_name(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    body = pod("")
    body["metadata"] = {"generateName": "web-"}
    first = await core.create_namespaced_pod(namespace, body)
    second = await core.create_namespaced_pod(namespace, body)
    assert first.metadata.name.startswith("web-") and len(first.metadata.name) == len("web-") + 5
    assert first.metadata.name != second.metadata.name


async def test_create_errors(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("dup"))
    with pytest.raises(client.ApiException) as exc:
        await core.create_namespaced_pod(namespace, pod("dup"))
    assert exc.value.status == 409
    status = error(exc.value)
    assert status["reason"] == "AlreadyExists" and status["message"] == 'pods "dup" already exists'
    assert status["details"] == {"name": "dup", "kind": "pods"}

    with pytest.raises(client.ApiException) as exc:
        await core.create_namespaced_pod(namespace, pod("Bad_Name"))
    assert exc.value.status == 422 and error(exc.value)["reason"] == "Invalid"
    assert error(exc.value)["details"]["causes"][0]["field"] == "metadata.name"

    no_containers = pod("empty")
    no_containers["spec"] = {"containers": []}
    with pytest.raises(client.ApiException) as exc:
        await core.create_namespaced_pod(namespace, no_containers)
    assert exc.value.status == 422

    with pytest.raises(client.ApiException) as exc:
        await core.create_namespaced_pod("no-such-namespace-x1", pod("p"))
    assert (
        exc.value.status == 404
        and error(exc.value)["message"] == 'namespaces "no-such-namespace-x1" not found'
    )

    other = pod("mismatch")
    other["metadata"]["namespace"] = "default"
    with pytest.raises(client.ApiException) as exc:
        await core.create_namespaced_pod(namespace, other)
    assert exc.value.status == 400 and error(exc.value)["reason"] == "BadRequest"

    status_code, body, _ = await raw(
        api_client, "POST", f"/api/v1/namespaces/{namespace}/pods", data=b"{not json"
    )
    assert status_code == 400 and body["reason"] == "BadRequest"


async def test_get_missing(api_client: client.ApiClient, namespace: str) -> None:
    with pytest.raises(client.ApiException) as exc:
        await client.CoreV1Api(api_client).read_namespaced_pod("nope", namespace)
    assert exc.value.status == 404
    status = error(exc.value)
    assert (
        status["kind"] == "Status"
        and status["reason"] == "NotFound"
        and status["message"] == 'pods "nope" not found'
    )
    with pytest.raises(client.ApiException) as exc:
        await client.CoordinationV1Api(api_client).read_namespaced_lease("nope", namespace)
    assert error(exc.value)["message"] == 'leases.coordination.k8s.io "nope" not found'


async def test_put_requires_current_resource_version(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    created = await read_json(
        await core.create_namespaced_pod(namespace, pod("p"), _preload_content=False)
    )
    stale = created["metadata"]["resourceVersion"]
    created["metadata"]["labels"] = {"v": "1"}
    updated = await read_json(
        await core.replace_namespaced_pod("p", namespace, created, _preload_content=False)
    )
    assert int(updated["metadata"]["resourceVersion"]) > int(stale)
    created["metadata"]["labels"] = {"v": "2"}
    with pytest.raises(client.ApiException) as exc:
        await core.replace_namespaced_pod("p", namespace, created)
    assert exc.value.status == 409 and error(exc.value)["reason"] == "Conflict"
    assert "the object has been modified" in error(exc.value)["message"]
    # An identical update writes nothing: same resourceVersion.
    again = await read_json(
        await core.replace_namespaced_pod("p", namespace, updated, _preload_content=False)
    )
    assert again["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]


async def test_pod_spec_is_immutable(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    with pytest.raises(client.ApiException) as exc:
        await core.patch_namespaced_pod("p", namespace, {"spec": {"nodeName": "somewhere"}})
    assert exc.value.status == 422 and error(exc.value)["reason"] == "Invalid"


async def test_lease_leader_election_flow(api_client: client.ApiClient, namespace: str) -> None:
    coord = client.CoordinationV1Api(api_client)
    with pytest.raises(client.ApiException) as exc:
        await coord.read_namespaced_lease("sched", namespace)
    assert exc.value.status == 404
    spec = {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "renewTime": "2024-01-01T00:00:00.000000Z",
    }
    created = await read_json(
        await coord.create_namespaced_lease(
            namespace, {"metadata": {"name": "sched"}, "spec": spec}, _preload_content=False
        )
    )
    renewed = {**created, "spec": {**spec, "holderIdentity": "b"}}
    ok = await read_json(
        await coord.replace_namespaced_lease("sched", namespace, renewed, _preload_content=False)
    )
    assert ok["spec"]["holderIdentity"] == "b"
    with pytest.raises(client.ApiException) as exc:  # stale: another candidate lost the race
        await coord.replace_namespaced_lease("sched", namespace, renewed)
    assert exc.value.status == 409
    no_version = {
        **ok,
        "metadata": {k: v for k, v in ok["metadata"].items() if k != "resourceVersion"},
    }
    with pytest.raises(client.ApiException) as exc:
        await coord.replace_namespaced_lease("sched", namespace, no_version)
    assert exc.value.status == 422


async def test_status_subresource_separates_spec_and_status(
    api_client: client.ApiClient, namespace: str
) -> None:
    policy = client.PolicyV1Api(api_client)
    pdb = {
        "metadata": {"name": "pdb"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}},
    }
    created = await read_json(
        await policy.create_namespaced_pod_disruption_budget(namespace, pdb, _preload_content=False)
    )
    assert created["metadata"]["generation"] == 1
    # Main resource: spec change bumps generation, status in the body is ignored.
    body = {
        **created,
        "spec": {**created["spec"], "minAvailable": 2},
        "status": {
            "currentHealthy": 5,
            "desiredHealthy": 1,
            "disruptionsAllowed": 4,
            "expectedPods": 5,
        },
    }
    updated = await read_json(
        await policy.replace_namespaced_pod_disruption_budget(
            "pdb", namespace, body, _preload_content=False
        )
    )
    assert updated["spec"]["minAvailable"] == 2 and updated["metadata"]["generation"] == 2
    assert (updated.get("status") or {}).get("currentHealthy", 0) == 0
    # /status: status changes, spec in the body is ignored, generation stays.
    body = {
        **updated,
        "spec": {**updated["spec"], "minAvailable": 9},
        "status": {
            "currentHealthy": 3,
            "desiredHealthy": 1,
            "disruptionsAllowed": 2,
            "expectedPods": 3,
        },
    }
    after = await read_json(
        await policy.replace_namespaced_pod_disruption_budget_status(
            "pdb", namespace, body, _preload_content=False
        )
    )
    assert after["status"]["currentHealthy"] == 3 and after["spec"]["minAvailable"] == 2
    assert after["metadata"]["generation"] == 2


async def test_delete_unbound_pod_is_immediate(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    resp = await core.delete_namespaced_pod("p", namespace, _preload_content=False)
    assert resp.status == 200
    resp.release()
    with pytest.raises(client.ApiException) as exc:
        await core.read_namespaced_pod("p", namespace)
    assert exc.value.status == 404


async def test_delete_bound_pod_is_graceful(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p", node="node-x"))
    deleted = await read_json(
        await core.delete_namespaced_pod("p", namespace, _preload_content=False)
    )
    assert (
        deleted["metadata"]["deletionTimestamp"]
        and deleted["metadata"]["deletionGracePeriodSeconds"] == 30
    )
    still = await core.read_namespaced_pod("p", namespace)
    assert still.metadata.deletion_timestamp is not None
    await core.delete_namespaced_pod("p", namespace, grace_period_seconds=0)
    with pytest.raises(client.ApiException) as exc:
        await core.read_namespaced_pod("p", namespace)
    assert exc.value.status == 404


async def test_delete_preconditions_and_missing(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    with pytest.raises(client.ApiException) as exc:
        await core.delete_namespaced_pod(
            "p", namespace, body={"preconditions": {"uid": "not-the-uid"}}
        )
    assert exc.value.status == 409 and error(exc.value)["reason"] == "Conflict"
    assert "the UID in the precondition (not-the-uid) does not match" in error(exc.value)["message"]
    with pytest.raises(client.ApiException) as exc:
        await core.delete_namespaced_pod("missing", namespace)
    assert exc.value.status == 404


async def test_finalizers_hold_deletion(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "cm", "finalizers": ["example.com/hold"]}}
    )
    await core.delete_namespaced_config_map("cm", namespace)
    held = await core.read_namespaced_config_map("cm", namespace)
    assert held.metadata.deletion_timestamp is not None
    await core.patch_namespaced_config_map(
        "cm",
        namespace,
        {"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )
    with pytest.raises(client.ApiException) as exc:
        await core.read_namespaced_config_map("cm", namespace)
    assert exc.value.status == 404


async def test_delete_collection_by_label(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        await core.create_namespaced_pod(namespace, pod(name, labels={"tier": tier}))
    resp = await core.delete_collection_namespaced_pod(
        namespace, label_selector="tier=web", _preload_content=False
    )
    assert resp.status == 200
    resp.release()
    left = await core.list_namespaced_pod(namespace)
    assert [p.metadata.name for p in left.items] == ["c"]
