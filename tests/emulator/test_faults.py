"""Fault injection and the request log (emulator-only: a real apiserver has neither)."""

from __future__ import annotations

import time

import pytest
from kubernetes_asyncio import client

from scheduler.emulator import EmulatorServer

from .kube_helpers import WatchStream, pod, raw, read_json


@pytest.fixture(autouse=True)
def _clean_faults(emulator: EmulatorServer) -> None:
    emulator.call(emulator.faults.clear)


async def test_injected_500_affects_only_matching_requests(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    emulator.faults.fail(500, verb="create", resource="pods/binding", count=1)
    await core.list_namespaced_pod(namespace)  # not matching: unaffected
    body = {"metadata": {"name": "p"}, "target": {"name": "n1"}}
    resp = await core.create_namespaced_pod_binding("p", namespace, body, _preload_content=False)
    assert resp.status == 500 and (await read_json(resp))["reason"] == "InternalError"
    resp = await core.create_namespaced_pod_binding("p", namespace, body, _preload_content=False)
    assert resp.status == 201
    resp.release()


async def test_injected_429_carries_retry_after(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    emulator.faults.fail(429, verb="list", resource="pods", retry_after=2, count=2)
    for _ in range(2):
        status, body, headers = await raw(api_client, "GET", f"/api/v1/namespaces/{namespace}/pods")
        assert status == 429 and headers["Retry-After"] == "2"
        assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 2
    status, _, _ = await raw(api_client, "GET", f"/api/v1/namespaces/{namespace}/pods")
    assert status == 200


async def test_added_latency(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    emulator.faults.delay(0.3, verb="get", resource="namespaces", count=1)
    started = time.monotonic()
    await client.CoreV1Api(api_client).read_namespace(namespace)
    assert time.monotonic() - started >= 0.3


async def test_drop_watches_cuts_streams(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    async with await WatchStream.open(
        api_client, f"/api/v1/namespaces/{namespace}/pods", timeoutSeconds="30"
    ) as stream:
        await client.CoreV1Api(api_client).create_namespaced_pod(namespace, pod("p"))
        await stream.next_of({"ADDED"})
        assert emulator.faults.drop_watches(abrupt=False) >= 1
        assert await stream.next(wait=5) is None


async def test_expired_watches_get_410_and_old_versions_stay_expired(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    core = client.CoreV1Api(api_client)
    listed = await read_json(await core.list_namespaced_pod(namespace, _preload_content=False))
    rv = listed["metadata"]["resourceVersion"]
    path = f"/api/v1/namespaces/{namespace}/pods"
    async with await WatchStream.open(
        api_client, path, resourceVersion=rv, timeoutSeconds="30"
    ) as stream:
        await core.create_namespaced_pod(namespace, pod("p"))
        await stream.next_of({"ADDED"})
        assert emulator.faults.expire_watches() >= 1
        error = await stream.next_of({"ERROR"})
        assert error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"
    async with await WatchStream.open(api_client, path, resourceVersion=rv) as again:
        error = await again.next_of({"ERROR"})
        assert error["object"]["code"] == 410
        assert await again.next() is None
    # A fresh list gives a version that can be watched again.
    fresh = await read_json(await core.list_namespaced_pod(namespace, _preload_content=False))
    async with await WatchStream.open(
        api_client, path, resourceVersion=fresh["metadata"]["resourceVersion"]
    ) as ok:
        await core.create_namespaced_pod(namespace, pod("after"))
        event = await ok.next_of({"ADDED", "ERROR"})
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "after"


async def test_admin_http_endpoint(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    status, rule, _ = await raw(
        api_client,
        "POST",
        "/_emulator/faults",
        body={"action": "fail", "status": 503, "verb": "get", "resource": "namespaces"},
    )
    assert status == 200 and rule["status"] == 503
    status, _, _ = await raw(api_client, "GET", f"/api/v1/namespaces/{namespace}")
    assert status == 503
    status, _, _ = await raw(api_client, "GET", f"/api/v1/namespaces/{namespace}")
    assert status == 200
    status, state, _ = await raw(api_client, "GET", "/_emulator/faults")
    assert state["rules"][0]["hits"] == 1
    status, _, _ = await raw(api_client, "POST", "/_emulator/faults", body={"action": "bogus"})
    assert status == 400
    status, state, _ = await raw(api_client, "DELETE", "/_emulator/faults")
    assert state["rules"] == []


async def test_request_log(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("logged"))
    with pytest.raises(client.ApiException):
        await core.read_namespaced_pod("not-there", namespace)
    creates = emulator.request_log.find(verb="create", resource="pods", namespace=namespace)
    assert [(r.name, r.status, r.method) for r in creates] == [("", 201, "POST")]
    misses = emulator.request_log.find(verb="get", resource="pods", namespace=namespace, status=404)
    assert [r.name for r in misses] == ["not-there"]
    _, records, _ = await raw(api_client, "GET", "/_emulator/requests")
    assert any(
        r["path"] == f"/api/v1/namespaces/{namespace}/pods" and r["verb"] == "create"
        for r in records
    )
