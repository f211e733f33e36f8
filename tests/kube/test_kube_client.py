"""KubeClient against the emulator over HTTP: paging, errors, retries, watch."""

from __future__ import annotations

import asyncio
import base64
import shutil
import time
from contextlib import aclosing
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import certifi
import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.config import incluster_config, kube_config

from scheduler.api import BindOutcome, BindResult, Code, bind_pod
from scheduler.kube.apierrors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    NotFound,
    ServerError,
    TooManyRequests,
    error_from_response,
)
from scheduler.kube.client import STRATEGIC_MERGE_PATCH, KubeClient
from scheduler.simulation.emulator import EmulatorServer
from scheduler.simulation.emulator.statuserrors import ApiError as EmulatedError
from scheduler.state.pod import PodInfo
from tests.kube.conftest import ClientFactory
from tests.kube.helpers import node, pod

PODS = "/api/v1/namespaces/default/pods"


def requests_to(emulator: EmulatorServer, path_part: str, method: str = "") -> list[Any]:
    return [
        r
        for r in emulator.request_log
        if path_part in r.path and (not method or r.method == method)
    ]


async def create_pod(client: KubeClient, name: str) -> dict[str, Any]:
    created = await client.request("POST", PODS, body=pod(name))
    assert isinstance(created, dict)
    return created


async def test_list_pages_with_limit_and_continue(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    for i in range(7):
        await client.request("POST", "/api/v1/nodes", body=node(f"n{i}"))
    emulator.request_log.clear()

    items, rv = await client.list(
        "/api/v1/nodes", {"resourceVersion": "0", "labelSelector": ""}, limit=3
    )

    assert [i["metadata"]["name"] for i in items] == [f"n{i}" for i in range(7)]
    assert rv == str(emulator.store.rv)
    queries = [parse_qs(r.query) for r in requests_to(emulator, "/api/v1/nodes", "GET")]
    assert len(queries) == 3
    assert all(q["limit"] == ["3"] for q in queries)
    assert "continue" not in queries[0] and queries[0]["resourceVersion"] == ["0"]
    # Later pages carry the token only: the API server rejects a version beside it.
    assert all("continue" in q and "resourceVersion" not in q for q in queries[1:])


async def test_list_falls_back_to_full_list_when_continue_token_expires(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    for i in range(5):
        await create_pod(client, f"p{i}")
    original = client.request
    calls = 0

    async def compact_after_first_page(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        result = await original(*args, **kwargs)
        calls += 1
        if calls == 1:
            # A write, then compaction: the token of page one is now too old.
            emulator.store.create(emulator.store.type("", "v1", "pods"), pod("late"))
            emulator.store.compact()
        return result

    client.request = compact_after_first_page  # type: ignore[method-assign]
    emulator.request_log.clear()

    def mark(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["annotations"] = {"transformed": "yes"}
        return obj

    items, _ = await client.list(PODS, limit=2, transform=mark)

    assert sorted(i["metadata"]["name"] for i in items) == ["late"] + [f"p{i}" for i in range(5)]
    # The transform ran on the restarted full list's items too.
    assert all(i["metadata"]["annotations"] == {"transformed": "yes"} for i in items)
    statuses = [r.status for r in requests_to(emulator, PODS, "GET")]
    assert statuses == [200, 410, 200]
    assert "limit" not in parse_qs(requests_to(emulator, PODS, "GET")[-1].query)


async def test_errors_are_typed_and_name_request_and_object(client: KubeClient) -> None:
    with pytest.raises(NotFound) as missing:
        await client.get(f"{PODS}/nope")
    assert missing.value.status == 404 and missing.value.reason == "NotFound"
    assert f"GET {PODS}/nope" in str(missing.value)
    assert 'pods "default/nope"' in str(missing.value)
    assert missing.value.message == 'pods "nope" not found'

    await create_pod(client, "dup")
    with pytest.raises(AlreadyExists) as exists:
        await create_pod(client, "dup")
    assert isinstance(exists.value, Conflict) and exists.value.status == 409
    assert f"POST {PODS}" in str(exists.value) and '"dup" already exists' in str(exists.value)

    lease_path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l1"
    lease = await client.request(
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        body={"metadata": {"name": "l1"}, "spec": {"holderIdentity": "a"}},
    )
    stale = {**lease, "metadata": {**lease["metadata"], "resourceVersion": "1"}}
    with pytest.raises(Conflict) as conflict:
        await client.request("PUT", lease_path, body=stale)
    assert not isinstance(conflict.value, AlreadyExists)
    assert conflict.value.reason == "Conflict"
    assert f"PUT {lease_path}" in str(conflict.value)
    assert 'leases "default/l1"' in str(conflict.value)


def test_error_mapping_without_status_body() -> None:
    error = error_from_response(
        503, b"<html>bad gateway</html>", method="GET", path="/api/v1/nodes/n1"
    )
    assert isinstance(error, ServerError) and error.status == 503
    assert "bad gateway" in error.message and 'nodes "n1"' in str(error)
    throttled = error_from_response(
        429, b"", method="GET", path="/api/v1/pods", retry_after_header="3"
    )
    assert isinstance(throttled, TooManyRequests) and throttled.retry_after == 3.0
    gone = error_from_response(
        410,
        b'{"kind":"Status","code":410,"reason":"Expired","message":"too old"}',
        method="GET",
        path="/api/v1/pods",
    )
    assert isinstance(gone, Gone) and gone.reason == "Expired"


async def bound(client: KubeClient, created: dict[str, Any], node_name: str) -> BindOutcome:
    """Bind ``created`` as DefaultBinder does: the one binding path, over this client."""
    return await bind_pod(client, PodInfo.from_dict(created), node_name)


async def test_429_on_binding_honours_retry_after(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    created = await create_pod(client, "p")
    emulator.faults.fail(429, verb="create", resource="pods/binding", retry_after=1, count=1)

    started = time.monotonic()
    outcome = await bound(client, created, "n1")
    elapsed = time.monotonic() - started

    assert outcome == BindOutcome(BindResult.BOUND, "n1")
    assert elapsed >= 0.95, "the retry must wait for Retry-After"
    assert [r.status for r in requests_to(emulator, "/binding")] == [429, 201]
    assert (await client.get(f"{PODS}/p"))["spec"]["nodeName"] == "n1"


async def test_429_is_retried_even_for_create(client: KubeClient, emulator: EmulatorServer) -> None:
    emulator.faults.fail(429, verb="create", resource="pods", retry_after=0, count=2)
    await create_pod(client, "p")
    assert [r.status for r in requests_to(emulator, PODS, "POST")] == [429, 429, 201]


async def test_500_on_binding_is_a_failed_outcome_not_retried(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    """As client-go for kube-scheduler: a 5xx POST is not repeated; the engine backs off."""
    created = await create_pod(client, "p")
    emulator.faults.fail(500, verb="create", resource="pods/binding", count=1)

    outcome = await bound(client, created, "n1")

    assert outcome.result is BindResult.FAILED and isinstance(outcome.error, ServerError)
    assert [r.status for r in requests_to(emulator, "/binding")] == [500]
    status = outcome.status(PodInfo.from_dict(created))
    assert status.code is Code.ERROR and isinstance(status.error, ServerError)
    assert status.message().startswith("binding pod default/p to node n1: POST ")
    assert await bound(client, created, "n1") == BindOutcome(BindResult.BOUND, "n1")


def commit_then_fail_first_binding(emulator: EmulatorServer, *, bind_to: str) -> None:
    """The first binding is applied by the server but its answer is lost (a 500).

    That is what a timeout or a proxy error after the commit looks like to the
    client, and the case the "already assigned" rule exists for.
    """
    original = emulator.faults.check
    done = False

    def check(verb: str, resource: str, path: str) -> tuple[float, EmulatedError | None]:
        nonlocal done
        if resource == "pods/binding" and not done:
            done = True
            name = path.rstrip("/").split("/")[-2]
            emulator.store.bind("default", name, {"target": {"name": bind_to}})
            return 0.0, EmulatedError(500, "InternalError", "etcdserver: request timed out")
        return original(verb, resource, path)

    emulator.faults.check = check  # type: ignore[method-assign]


async def test_binding_again_after_a_lost_answer_counts_as_bound(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    created = await create_pod(client, "p")
    commit_then_fail_first_binding(emulator, bind_to="n1")

    first = await bound(client, created, "n1")
    again = await bound(client, created, "n1")

    assert first.result is BindResult.FAILED
    assert again.bound and again.by_earlier_attempt and again.assigned_to == "n1"
    assert again.status(PodInfo.from_dict(created)).is_success()
    assert [r.status for r in requests_to(emulator, "/binding")] == [500, 409]


async def test_binding_a_pod_placed_on_another_node_is_assigned_elsewhere(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    created = await create_pod(client, "p")
    commit_then_fail_first_binding(emulator, bind_to="other")

    await bound(client, created, "n1")
    outcome = await bound(client, created, "n1")

    assert outcome.result is BindResult.ASSIGNED_ELSEWHERE and outcome.assigned_to == "other"
    assert isinstance(outcome.error, Conflict)
    assert 'already assigned to node "other"' in outcome.message
    status = outcome.status(PodInfo.from_dict(created))
    assert "POST /api/v1/namespaces/default/pods/p/binding" in status.message()


async def test_binding_a_deleted_pod_is_pod_gone(client: KubeClient) -> None:
    created = await create_pod(client, "p")
    await client.request("DELETE", f"{PODS}/p")
    outcome = await bound(client, created, "n1")
    assert outcome.result is BindResult.POD_GONE
    assert isinstance(outcome.error, NotFound | Conflict)


async def test_binding_uid_precondition(client: KubeClient) -> None:
    created = await create_pod(client, "p")
    outcome = await bound(
        client, {**created, "metadata": {**created["metadata"], "uid": "x"}}, "n1"
    )
    assert outcome.result is BindResult.FAILED and isinstance(outcome.error, Conflict)
    assert "UID in precondition" in outcome.message


async def test_post_is_not_retried_on_500(client: KubeClient, emulator: EmulatorServer) -> None:
    emulator.faults.fail(500, verb="create", resource="pods", count=1)
    with pytest.raises(ServerError) as failed:
        await create_pod(client, "p")
    assert failed.value.status == 500
    assert len(requests_to(emulator, PODS, "POST")) == 1


async def test_get_is_retried_on_500_with_a_bound(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    emulator.faults.fail(500, verb="get", resource="nodes", count=None)
    with pytest.raises(ServerError):
        await client.get("/api/v1/nodes/n1")
    # One attempt plus max_retries (4 in the tests' policy), then give up.
    assert len(requests_to(emulator, "/api/v1/nodes/n1")) == 5


async def test_patch_pod_status_strategic_merge(client: KubeClient) -> None:
    await create_pod(client, "p")
    await client.patch_pod_status(
        "default",
        "p",
        {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
    )
    patched = await client.patch_pod_status(
        "default",
        "p",
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available",
                    }
                ]
            }
        },
    )
    by_type = {c["type"]: c for c in patched["status"]["conditions"]}
    assert set(by_type) == {"Ready", "PodScheduled"}, "conditions merge by type"
    assert by_type["PodScheduled"]["reason"] == "Unschedulable"


async def test_request_satisfies_plugin_protocol(client: KubeClient) -> None:
    from scheduler.api.handle import ApiClient as KubeClientProtocol

    proto: KubeClientProtocol = client
    version = await proto.request("GET", "/version")
    assert "gitVersion" in version
    assert await proto.request("GET", "/healthz") == "ok", "non-JSON answers come back as text"


async def test_watch_streams_events_and_maps_410(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    _, rv = await client.list(PODS)
    await create_pod(client, "w1")
    seen: list[tuple[str, str]] = []
    async with asyncio.timeout(5), aclosing(client.watch(PODS, {"resourceVersion": rv})) as stream:
        async for kind, obj in stream:
            seen.append((kind, obj["metadata"]["name"]))
            break
    assert seen == [("ADDED", "w1")]

    emulator.store.compact()
    await create_pod(client, "w2")
    with pytest.raises(Gone) as gone:
        async with asyncio.timeout(5):
            async for _ in client.watch(PODS, {"resourceVersion": rv}):
                pass
    assert gone.value.status == 410 and "GET " + PODS in str(gone.value)


async def test_transport_error_is_an_api_error(
    make_client: ClientFactory, emulator: EmulatorServer
) -> None:
    client = await make_client()
    await emulator.stop()
    with pytest.raises(ApiError) as failed:
        await client.request("POST", PODS, body=pod("x"))
    assert failed.value.status == 0 and f"POST {PODS}" in str(failed.value)


async def test_default_kubeconfig_when_not_in_cluster(
    emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = emulator.write_kubeconfig(tmp_path / "default-kubeconfig")
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(default))
    # The variable without a mounted token is not "in cluster": fall back.
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "no-token"))
    async with await KubeClient.from_kubeconfig(None, qps=5, burst=10) as client:
        assert client.host == emulator.url
        assert (await client.get("/version"))["major"]


async def test_in_cluster_config_is_preferred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text("secret-token")
    ca = tmp_path / "ca.crt"
    shutil.copyfile(certifi.where(), ca)  # any valid CA bundle will do
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    async with await KubeClient.from_kubeconfig(None, qps=5, burst=10) as client:
        configuration = client.api_client.configuration
        assert client.host == "https://10.0.0.1:6443"
        assert configuration.api_key["BearerToken"] == "Bearer secret-token"
        assert configuration.ssl_ca_cert == str(ca)


# -- the lean request path: auth, headers and body exactly as call_api sent them ----------


class _HeaderRecorder:
    """A bare HTTP server that answers ``{}`` and records each request's headers and body."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> _HeaderRecorder:
        async def handle(request: web.Request) -> web.Response:
            self.seen.append(
                (request.method, request.path_qs, dict(request.headers), await request.read())
            )
            return web.json_response({"kind": "Status", "status": "Success"})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def _api_client(url: str, token: str | None) -> k8s_client.ApiClient:
    configuration = k8s_client.Configuration(host=url)
    if token is not None:
        configuration.api_key["BearerToken"] = token
    return k8s_client.ApiClient(configuration=configuration)


async def test_lean_path_sends_bearer_token_headers_and_json_body() -> None:
    async with _HeaderRecorder() as server:
        api = _api_client(server.url, "Bearer first-token")
        api.user_agent = "test-agent/1"
        client = KubeClient.from_api_client(api, qps=0, owns_api_client=True)
        async with client:
            await client.request(
                "PATCH",
                f"{PODS}/p/status",
                body={"status": {"phase": "Running"}, 1: "int key"},
                content_type=STRATEGIC_MERGE_PATCH,
                query={"fieldManager": "a b", "dryRun": "All"},
            )
            await client.get(f"{PODS}/p")

    (method, path_qs, headers, body), (get_method, _, get_headers, get_body) = server.seen
    assert method == "PATCH"
    assert path_qs == f"{PODS}/p/status?fieldManager=a+b&dryRun=All"
    assert headers["Authorization"] == "Bearer first-token"
    assert headers["Content-Type"] == STRATEGIC_MERGE_PATCH
    assert headers["Accept"] == "application/json"
    assert headers["User-Agent"] == "test-agent/1"
    assert orjson.loads(body) == {"status": {"phase": "Running"}, "1": "int key"}
    assert get_method == "GET" and get_body == b""
    assert get_headers["Authorization"] == "Bearer first-token"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync-hook", "async-hook"])
async def test_lean_path_picks_up_refreshed_token(asynchronous: bool) -> None:
    """The Configuration's refresh hook runs per request, as in ApiClient.call_api."""
    async with _HeaderRecorder() as server:
        api = _api_client(server.url, "Bearer old")
        calls = 0

        def refresh(configuration: k8s_client.Configuration) -> None:
            nonlocal calls
            calls += 1
            if calls >= 3:  # e.g. the projected service account token was rotated
                configuration.api_key["BearerToken"] = "Bearer new"

        async def refresh_async(configuration: k8s_client.Configuration) -> None:
            refresh(configuration)

        api.configuration.refresh_api_key_hook = refresh_async if asynchronous else refresh
        async with KubeClient.from_api_client(api, qps=0, owns_api_client=True) as client:
            for _ in range(4):
                await client.get("/api/v1/nodes")
            # A token rotated behind the client's back (exec plugin refresher task).
            api.configuration.api_key["BearerToken"] = "Bearer newer"
            api.configuration.refresh_api_key_hook = None
            await client.get("/api/v1/nodes")

    tokens = [headers["Authorization"] for _, _, headers, _ in server.seen]
    assert tokens == ["Bearer old", "Bearer old", "Bearer new", "Bearer new", "Bearer newer"]


async def test_in_cluster_token_file_rotation_is_picked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text("one")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", certifi.where())
    # Re-read the token file on every request instead of once a minute.
    monkeypatch.setattr(incluster_config, "TOKEN_REFRESH_PERIOD", timedelta(0))
    async with _HeaderRecorder() as server:
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", server.url.rsplit(":", 1)[1])
        async with await KubeClient.from_kubeconfig(None, qps=0, burst=10) as client:
            # The in-cluster loader builds an https URL; point it at the plain recorder.
            client.api_client.configuration.host = server.url
            await client.get("/api/v1/nodes")
            token.write_text("two")  # the kubelet rotated the projected token
            await client.get("/api/v1/nodes")
    tokens = [headers["Authorization"] for _, _, headers, _ in server.seen]
    assert tokens == ["Bearer one", "Bearer two"]


async def test_lean_path_makes_no_per_request_thread_hops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubernetes-asyncio's session trusts the environment, which costs aiohttp two
    worker-thread hand-offs per request (netrc, proxy); the lean path looks both up
    once, still honouring ~/.netrc when no token is configured."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login alice password secret\n")
    monkeypatch.setenv("NETRC", str(netrc))
    async with _HeaderRecorder() as server:
        api = _api_client(server.url, None)
        loop = asyncio.get_running_loop()
        original = loop.run_in_executor
        hops = 0

        def counting(*args: Any) -> Any:
            nonlocal hops
            hops += 1
            return original(*args)

        monkeypatch.setattr(loop, "run_in_executor", counting)
        async with KubeClient.from_api_client(api, qps=0, owns_api_client=True) as client:
            for _ in range(5):
                await client.get("/api/v1/nodes")
        # A token, when there is one, wins over ~/.netrc (aiohttp would refuse both).
        token_api = _api_client(server.url, "Bearer tok")
        async with KubeClient.from_api_client(token_api, qps=0, owns_api_client=True) as client:
            await client.get("/api/v1/nodes")
    assert hops == 0
    auth = [headers.get("Authorization") for _, _, headers, _ in server.seen]
    assert auth[:5] == ["Basic " + base64.b64encode(b"alice:secret").decode()] * 5
    assert auth[5] == "Bearer tok"


async def test_closing_a_wrapping_client_leaves_the_api_client_usable(
    emulator: EmulatorServer,
) -> None:
    api = _api_client(emulator.url, None)
    async with api:
        async with KubeClient.from_api_client(api, qps=0) as client:
            assert (await client.get("/version"))["major"]
        nodes = await k8s_client.CoreV1Api(api).list_node()
        assert nodes.items is not None
