"""The secure port against a real kube-apiserver's authentication and RBAC, as kube-scheduler's.

Two ServiceAccounts; a ClusterRole granting ``get`` on the non-resource URL
``/metrics`` bound to one of them; tokens minted for both with the
TokenRequest API. The daemon reviews every token with a TokenReview and every
non-health request with a SubjectAccessReview: the bound account scrapes
(200), the other is refused (403), a request without a token is
``system:anonymous`` (403 for ``/metrics``, 200 for the health paths), a
token the API server does not know is 401.

The emulator serves neither TokenReview nor SubjectAccessReview (it has no
users to review), so these tests run on the real backend only.
"""

from __future__ import annotations

import asyncio
import signal
import ssl
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from scheduler.observability.delegated_auth import DelegatedAuthOptions
from scheduler.observability.server import Serving
from scheduler.observability.tls import self_signed_pem, server_context
from tests.e2e.conftest import Cluster, RunningDaemon, StartDaemon, scheduler_config, wait_until
from tests.e2e.processes import free_port, start_run

RBAC = "/apis/rbac.authorization.k8s.io/v1"


@dataclass
class Tokens:
    scraper: str  # bound to get on /metrics
    nobody: str  # a valid ServiceAccount token, bound to nothing


async def create_role(client: Any, role: str, path: str, verb: str) -> None:
    """A ClusterRole allowing ``verb`` on the non-resource URL ``path``."""
    await client.request(
        "POST",
        f"{RBAC}/clusterroles",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [{"nonResourceURLs": [path], "verbs": [verb]}],
        },
    )


async def bind_role(client: Any, role: str, account: str, namespace: str) -> None:
    """Bind the ClusterRole ``role`` (the binding has its name) to a ServiceAccount."""
    await client.request(
        "POST",
        f"{RBAC}/clusterrolebindings",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    )


@pytest.fixture
async def tokens(cluster: Cluster) -> AsyncIterator[Tokens]:
    if cluster.backend.kind != "real":
        pytest.skip(
            "the emulator serves no TokenReview or SubjectAccessReview "
            "(authentication.k8s.io, authorization.k8s.io): real kube-apiserver only"
        )
    ns = cluster.namespace
    role = f"metrics-reader-{ns}"
    client = cluster.client
    for name in ("scraper", "nobody"):
        await client.request(
            "POST",
            f"/api/v1/namespaces/{ns}/serviceaccounts",
            body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        )
    await create_role(client, role, "/metrics", "get")
    await bind_role(client, role, "scraper", ns)

    async def mint(account: str) -> str:
        answer = await client.request(
            "POST",
            f"/api/v1/namespaces/{ns}/serviceaccounts/{account}/token",
            body={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600},
            },
        )
        return str(answer["status"]["token"])

    try:
        yield Tokens(scraper=await mint("scraper"), nobody=await mint("nobody"))
    finally:
        for kind in ("clusterrolebindings", "clusterroles"):
            await client.request("DELETE", f"{RBAC}/{kind}/{role}")


async def get(
    http: aiohttp.ClientSession, url: str, token: str | None = None
) -> tuple[int, str, str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with http.get(url, headers=headers) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.text()


async def assert_guarded(http: aiohttp.ClientSession, base: str, tokens: Tokens) -> None:
    """What every caller gets from the secure port."""
    status, kind, body = await get(http, f"{base}/metrics", tokens.scraper)
    assert status == 200, body
    assert "text/plain" in kind and "# TYPE scheduler_" in body

    status, kind, body = await get(http, f"{base}/metrics", tokens.nobody)
    assert status == 403, body
    assert kind == "application/json"
    assert 'cannot get path \\"/metrics\\"' in body and ":nobody" in body

    status, _, body = await get(http, f"{base}/metrics")
    assert status == 403, body
    assert 'User \\"system:anonymous\\" cannot get path' in body

    status, _, body = await get(http, f"{base}/metrics", "not-a-token-the-apiserver-knows")
    assert status == 401, body
    assert '"reason":"Unauthorized"' in body

    for path in ("/healthz", "/livez", "/readyz"):
        status, _, body = await get(http, base + path)
        assert (status, body) == (200, "ok"), path
    # Only the listed paths skip authorization: one check of /readyz is reviewed.
    status, _, _ = await get(http, f"{base}/readyz/informer-sync")
    assert status == 403
    status, _, body = await get(http, f"{base}/readyz/informer-sync", tokens.nobody)
    assert status == 403, body


async def start_delegated(
    cluster: Cluster, start_daemon: StartDaemon, **auth: Any
) -> RunningDaemon:
    """A daemon serving HTTPS whose callers the test's API server authenticates and authorizes."""
    kubeconfig = str(cluster.backend.kubeconfig)
    serving = Serving(
        "127.0.0.1:0",
        tls=server_context(),
        auth=DelegatedAuthOptions(
            authentication_kubeconfig=kubeconfig, authorization_kubeconfig=kubeconfig, **auth
        ),
    )
    return await start_daemon(
        scheduler_config([{"schedulerName": cluster.scheduler_name}]), serving=serving
    )


async def test_scrapes_are_authenticated_and_authorized_by_the_api_server(
    cluster: Cluster, start_daemon: StartDaemon, tokens: Tokens
) -> None:
    running = await start_delegated(cluster, start_daemon)
    health = running.daemon.health
    assert health is not None
    base = f"https://127.0.0.1:{health.port}"
    connector = aiohttp.TCPConnector(ssl=False)  # the self-signed certificate of this start
    async with aiohttp.ClientSession(connector=connector) as http:
        await assert_guarded(http, base, tokens)
        # Plain HTTP is not served on the secure port.
        with pytest.raises(aiohttp.ClientError):
            await get(http, f"http://127.0.0.1:{health.port}/healthz")


async def test_a_run_process_serves_https_with_the_given_certificate(
    cluster: Cluster, tokens: Tokens, tmp_path: Path
) -> None:
    """``run``'s own flags, as in a kube-scheduler manifest; TLS verified against the cert."""
    cert, key = self_signed_pem()
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    kubeconfig = str(cluster.backend.kubeconfig)
    port = free_port()
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        leader_elect=True,
        namespace=cluster.namespace,
        lease=f"secure-{uuid.uuid4().hex[:6]}",
        pluggableScheduler={"serverAddress": "127.0.0.1:1"},  # --secure-port wins
    )
    args = [
        "--secure-port", str(port),
        "--tls-cert-file", str(tmp_path / "tls.crt"),
        "--tls-private-key-file", str(tmp_path / "tls.key"),
        "--authentication-kubeconfig", kubeconfig,
        "--authorization-kubeconfig", kubeconfig,
    ]  # fmt: skip
    proc = await start_run(cluster, config, tmp_path, "daemon", args=args)
    verified = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
    base = f"https://localhost:{port}"
    try:
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=verified),
            timeout=aiohttp.ClientTimeout(total=5),
        ) as http:

            async def live() -> bool:
                assert proc.returncode is None, (tmp_path / "daemon.log").read_text()[-3000:]
                try:
                    return (await get(http, f"{base}/readyz"))[0] == 200
                except aiohttp.ClientConnectionError:
                    return False

            await wait_until(live, within=30, message="/readyz over verified HTTPS")
            await assert_guarded(http, base, tokens)
            await cluster.create_node("n1")
            await cluster.create_pod("p1")
            await cluster.wait_bound(["p1"], within=30)
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 20)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert code == 0, (tmp_path / "daemon.log").read_text()[-3000:]


@pytest.mark.parametrize("allow_ttl", [10.0, 0.0], ids=["cached", "uncached"])
async def test_an_allowing_review_is_cached_for_the_authorized_ttl(
    cluster: Cluster, start_daemon: StartDaemon, tokens: Tokens, allow_ttl: float
) -> None:
    """As kube's delegating authorizer: a revoked grant still scrapes until the TTL runs out."""
    running = await start_delegated(cluster, start_daemon, allow_cache_ttl=allow_ttl)
    assert running.daemon.health is not None
    url = f"https://127.0.0.1:{running.daemon.health.port}/metrics"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
        assert (await get(http, url, tokens.scraper))[0] == 200
        role = f"metrics-reader-{cluster.namespace}"
        await cluster.client.request("DELETE", f"{RBAC}/clusterrolebindings/{role}")
        await cluster.client.request(
            "POST",
            f"{RBAC}/clusterrolebindings",
            body={
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [],  # the grant is gone; the fixture still cleans up by name
            },
        )
        if allow_ttl:
            ns = cluster.namespace

            async def revoked() -> bool:
                review = await cluster.client.request(
                    "POST",
                    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                    body={
                        "apiVersion": "authorization.k8s.io/v1",
                        "kind": "SubjectAccessReview",
                        "spec": {
                            "user": f"system:serviceaccount:{ns}:scraper",
                            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}"],
                            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
                        },
                    },
                )
                return not review["status"].get("allowed")

            # The API server already refuses; the cached answer still serves.
            await wait_until(revoked, within=5, every=0.1, message="RBAC to see the revocation")
            assert (await get(http, url, tokens.scraper))[0] == 200
        else:

            async def refused() -> bool:
                return (await get(http, url, tokens.scraper))[0] == 403

            await wait_until(refused, within=10, every=0.2, message="the revoked grant to apply")


async def test_whatif_needs_post_on_its_path(
    cluster: Cluster, start_daemon: StartDaemon, tokens: Tokens
) -> None:
    """``POST /whatif`` is reviewed like ``/metrics``: verb post on the non-resource path."""
    running = await start_delegated(cluster, start_daemon)
    assert running.daemon.health is not None
    url = f"https://127.0.0.1:{running.daemon.health.port}/whatif"

    async def post(token: str | None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        connector = aiohttp.TCPConnector(ssl=False)
        async with (
            aiohttp.ClientSession(connector=connector) as http,
            http.post(url, json={}, headers=headers) as response,
        ):
            return response.status, await response.text()

    status, body = await post(tokens.scraper)  # may get /metrics, not post /whatif
    assert status == 403 and 'cannot post path \\"/whatif\\"' in body, body
    assert (await post(None))[0] == 403
    role = f"whatif-{cluster.namespace}"
    client = cluster.client
    await create_role(client, role, "/whatif", "post")
    try:
        await bind_role(client, role, "nobody", cluster.namespace)

        async def allowed() -> bool:
            return (await post(tokens.nobody))[0] == 200

        await wait_until(allowed, within=10, message="post /whatif allowed after the binding")
        status, body = await post(tokens.nobody)
        assert status == 200 and '"answers":[]' in body, body
    finally:
        for kind in ("clusterrolebindings", "clusterroles"):
            await client.request("DELETE", f"{RBAC}/{kind}/{role}")
