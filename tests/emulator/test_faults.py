"""Fault injection and the request log (emulator-only: a real apiserver has neither)."""

from __future__ import annotations

import time

import pytest
from kubernetes_asyncio import client

from scheduler.simulation.emulator import EmulatorServer

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


async def test_first_matching_failing_rule_wins_others_untouched(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    first = emulator.faults.fail(503, verb="list", resource="pods", count=1)
    second = emulator.faults.fail(429, verb="list", resource="pods", count=1)
    path = f"/api/v1/namespaces/{namespace}/pods"
    status, _, _ = await raw(api_client, "GET", path)
    assert status == 503
    assert (first.hits, second.hits) == (1, 0), "the second rule keeps its budget"
    status, _, _ = await raw(api_client, "GET", path)
    assert status == 429
    assert (first.hits, second.hits) == (1, 1)
    status, _, _ = await raw(api_client, "GET", path)
    assert status == 200


async def test_delay_rules_stack_with_the_failing_rule(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    slow = emulator.faults.delay(0.2, verb="get", resource="namespaces", count=1)
    failing = emulator.faults.fail(500, verb="get", resource="namespaces", count=1)
    started = time.monotonic()
    status, _, _ = await raw(api_client, "GET", f"/api/v1/namespaces/{namespace}")
    assert status == 500 and time.monotonic() - started >= 0.2
    assert (slow.hits, failing.hits) == (1, 1)


async def test_skip_lets_the_first_matches_through(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    rule = emulator.faults.fail(500, verb="create", resource="pods", skip=2, count=1)
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("a"))
    await core.create_namespaced_pod(namespace, pod("b"))
    with pytest.raises(client.ApiException) as exc:
        await core.create_namespaced_pod(namespace, pod("c"))
    assert exc.value.status == 500
    assert (rule.skipped, rule.hits) == (2, 1)
    await core.create_namespaced_pod(namespace, pod("c"))
    # Over HTTP too.
    status, created, _ = await raw(
        api_client,
        "POST",
        "/_emulator/faults",
        body={"action": "fail", "verb": "get", "resource": "pods", "skip": 1},
    )
    assert status == 200 and created["skip"] == 1
    await core.read_namespaced_pod("a", namespace)
    with pytest.raises(client.ApiException):
        await core.read_namespaced_pod("a", namespace)


async def test_after_commits_then_fails_the_answer(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    rule = emulator.faults.fail(500, verb="create", resource="pods/binding", after=True)
    body = {"metadata": {"name": "p"}, "target": {"name": "n1"}}
    with pytest.raises(client.ApiException) as exc:
        await core.create_namespaced_pod_binding("p", namespace, body)
    assert exc.value.status == 500 and rule.hits == 1
    bound = await core.read_namespaced_pod("p", namespace)
    assert bound.spec.node_name == "n1", "the binding was committed although the answer failed"
    # A retry sees the committed state.
    with pytest.raises(client.ApiException) as exc:
        await core.create_namespaced_pod_binding("p", namespace, body)
    assert exc.value.status == 409
    status, created, _ = await raw(
        api_client,
        "POST",
        "/_emulator/faults",
        body={"action": "fail", "verb": "delete", "resource": "pods", "after": True},
    )
    assert status == 200 and created["after"] is True
    with pytest.raises(client.ApiException):
        await core.delete_namespaced_pod("p", namespace, grace_period_seconds=0)
    with pytest.raises(client.ApiException) as exc:
        await core.read_namespaced_pod("p", namespace)
    assert exc.value.status == 404
