"""The secure port without an API server: TLS, the health paths, and kube's request parsing.

Reviews of tokens and of access need a real kube-apiserver; they are proven
in tests/e2e/test_secure_serving.py. Here: what holds with no delegation at
all (outside a cluster, no kubeconfigs), as kube-scheduler behaves there.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest

from scheduler.observability.delegated_auth import (
    DelegatedAuthOptions,
    PathMatcher,
    bearer_token,
)
from scheduler.observability.metrics import SchedulerMetrics
from scheduler.observability.server import HealthServer, Serving, override_address
from scheduler.observability.tls import self_signed_pem, server_context


def test_always_allowed_paths_match_as_in_kube() -> None:
    match = PathMatcher(["/healthz", "readyz", "/debug/*"])
    assert match("/healthz") and match("/readyz") and match("/debug/pprof/heap")
    assert not match("/healthz/ping") and not match("/metrics") and not match("/debugx")
    assert PathMatcher(["/"])("/") and not PathMatcher(["/"])("/metrics")
    with pytest.raises(ValueError, match=r"only a trailing \* is allowed in '/a\*/b'"):
        PathMatcher(["/a*/b"])


def test_bearer_tokens_are_parsed_as_kube_does() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer abc") == "abc"
    assert bearer_token("Bearer abc extra") == "abc"
    for header in (None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "abc"):
        assert bearer_token(header) is None, header


def test_bind_address_and_secure_port_override_the_configured_address() -> None:
    assert override_address("0.0.0.0:10259", "127.0.0.1", None) == "127.0.0.1:10259"
    assert override_address("0.0.0.0:10259", None, 9443) == "0.0.0.0:9443"
    assert override_address(":10259", "::1", 1) == "[::1]:1"
    assert override_address("[::]:10259", "[::1]", None) == "[::1]:10259"


def test_authentication_without_tls_is_refused() -> None:
    with pytest.raises(ValueError, match="needs TLS"):
        Serving("127.0.0.1:0", auth=DelegatedAuthOptions())


async def test_without_delegation_only_health_is_served_over_verified_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A given certificate, verified by the client; anonymous callers get health only."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    cert, key = self_signed_pem()
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    serving = Serving(
        "127.0.0.1:0",
        tls=server_context(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")),
        auth=DelegatedAuthOptions(),
    )
    verified = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
    async with (
        HealthServer(metrics=SchedulerMetrics(), serving=serving) as server,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=verified)) as http,
    ):
        for host in ("localhost", "127.0.0.1"):  # both are in the certificate
            async with http.get(f"https://{host}:{server.port}/livez") as response:
                assert (response.status, await response.text()) == (200, "ok")
        # A token cannot be reviewed without a kubeconfig: the caller stays anonymous.
        headers = {"Authorization": "Bearer whatever"}
        async with http.get(f"https://localhost:{server.port}/metrics", headers=headers) as r:
            assert r.status == 403
            status = await r.json()
        assert status["reason"] == "Forbidden" and status["code"] == 403
        assert status["message"].startswith(
            'forbidden: User "system:anonymous" cannot get path "/metrics"'
        )
        # The generated certificate of another start is not trusted.
        other = Serving("127.0.0.1:0", tls=server_context(), auth=DelegatedAuthOptions())
        async with HealthServer(serving=other) as stranger:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await http.get(f"https://localhost:{stranger.port}/livez")


async def test_always_allowed_paths_can_be_emptied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    serving = Serving(
        "127.0.0.1:0", tls=server_context(), auth=DelegatedAuthOptions(always_allow_paths=())
    )
    async with (
        HealthServer(serving=serving) as server,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http,
        http.get(f"https://127.0.0.1:{server.port}/healthz") as response,
    ):
        assert response.status == 403
