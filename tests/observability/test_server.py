"""HealthServer over real HTTP on a loopback port chosen by the kernel."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest

from scheduler.observability.metrics import SchedulerMetrics
from scheduler.observability.server import HealthServer, parse_address


class Flag:
    """A check whose answer the test flips."""

    def __init__(self, answer: bool | str = True) -> None:
        self.answer = answer

    def __call__(self) -> bool | str:
        return self.answer


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        yield session


async def get(
    http: aiohttp.ClientSession, server: HealthServer, path: str, **headers: str
) -> tuple[int, str, aiohttp.ClientResponse]:
    async with http.get(f"http://127.0.0.1:{server.port}{path}", headers=headers) as resp:
        body = await resp.read()
        if resp.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return resp.status, body.decode(), resp


@pytest.fixture
def synced() -> Flag:
    return Flag(True)


@pytest.fixture
async def server(synced: Flag) -> AsyncIterator[HealthServer]:
    metrics = SchedulerMetrics(process_metrics=False)
    srv = HealthServer("127.0.0.1:0", metrics=metrics, checks={"informer-sync": synced})
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


async def test_port_zero_binds_a_real_port(server: HealthServer) -> None:
    assert server.port > 0


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
async def test_all_endpoints_say_ok(
    http: aiohttp.ClientSession, server: HealthServer, path: str
) -> None:
    status, body, resp = await get(http, server, path)
    assert (status, body) == (200, "ok")
    assert resp.headers["Content-Type"].startswith("text/plain")
    assert resp.headers["X-Content-Type-Options"] == "nosniff"


async def test_verbose_lists_every_check(http: aiohttp.ClientSession, server: HealthServer) -> None:
    status, body, _ = await get(http, server, "/readyz?verbose")
    assert status == 200
    assert body == "[+]ping ok\n[+]informer-sync ok\nreadyz check passed\n"
    status, body, _ = await get(http, server, "/livez?verbose=true")
    assert body == "[+]ping ok\nlivez check passed\n"
    status, body, _ = await get(http, server, "/readyz?verbose=false")
    assert body == "ok"


async def test_failing_readiness_check_fails_readyz_only(
    http: aiohttp.ClientSession, server: HealthServer, synced: Flag
) -> None:
    synced.answer = "pods informer has not synced"
    status, body, _ = await get(http, server, "/readyz")
    assert status == 500
    assert body == (
        "[+]ping ok\n[-]informer-sync failed: pods informer has not synced\nreadyz check failed\n"
    )
    # Liveness must not depend on readiness (e.g. on being the leader).
    assert (await get(http, server, "/livez"))[:2] == (200, "ok")
    assert (await get(http, server, "/healthz"))[:2] == (200, "ok")
    synced.answer = True
    assert (await get(http, server, "/readyz"))[:2] == (200, "ok")


async def test_false_and_raising_checks_fail_with_a_reason(
    http: aiohttp.ClientSession, server: HealthServer, synced: Flag
) -> None:
    synced.answer = False
    _, body, _ = await get(http, server, "/readyz")
    assert "[-]informer-sync failed: reason unknown\n" in body

    def broken() -> bool:
        raise RuntimeError("cache lock poisoned")

    server.add_readiness_check("cache", broken)
    synced.answer = True
    status, body, _ = await get(http, server, "/readyz")
    assert status == 500
    assert "[-]cache failed: RuntimeError: cache lock poisoned\n" in body


async def test_empty_string_means_healthy(
    http: aiohttp.ClientSession, server: HealthServer, synced: Flag
) -> None:
    synced.answer = ""
    assert (await get(http, server, "/readyz"))[:2] == (200, "ok")


async def test_liveness_check_counts_everywhere(
    http: aiohttp.ClientSession, server: HealthServer
) -> None:
    server.add_liveness_check("event-loop", Flag("scheduling loop stalled for 120s"))
    for path in ("/healthz", "/livez", "/readyz"):
        status, body, _ = await get(http, server, path)
        name = path.strip("/")
        assert status == 500, path
        assert "[-]event-loop failed: scheduling loop stalled for 120s\n" in body
        assert body.endswith(f"{name} check failed\n")


async def test_exclude_skips_a_check_and_warns_about_unknown_names(
    http: aiohttp.ClientSession, server: HealthServer, synced: Flag
) -> None:
    synced.answer = False
    status, body, _ = await get(http, server, "/readyz?exclude=informer-sync")
    assert (status, body) == (200, "ok")
    status, body, _ = await get(http, server, "/readyz?verbose&exclude=informer-sync&exclude=nope")
    assert status == 200
    assert body == (
        "[+]ping ok\n[+]informer-sync excluded: ok\n"
        'warn: some health checks cannot be excluded: no matches for "nope"\n'
        "readyz check passed\n"
    )


async def test_single_check_endpoints(
    http: aiohttp.ClientSession, server: HealthServer, synced: Flag
) -> None:
    assert (await get(http, server, "/readyz/ping"))[:2] == (200, "ok")
    assert (await get(http, server, "/readyz/informer-sync"))[:2] == (200, "ok")
    synced.answer = "not yet"
    status, body, _ = await get(http, server, "/readyz/informer-sync")
    assert (status, body) == (500, "internal server error: not yet\n")
    # A readiness check is not part of liveness.
    assert (await get(http, server, "/livez/informer-sync"))[0] == 404


async def test_async_checks_are_awaited_with_a_timeout(
    http: aiohttp.ClientSession, synced: Flag
) -> None:
    async def quick() -> bool:
        await asyncio.sleep(0)
        return True

    async def stuck() -> bool:
        await asyncio.sleep(10)
        return True

    srv = HealthServer("127.0.0.1:0", checks={"quick": quick}, check_timeout=0.05)
    async with srv:
        assert (await get(http, srv, "/readyz"))[:2] == (200, "ok")
        srv.add_readiness_check("apiserver", stuck)
        status, body, _ = await get(http, srv, "/readyz")
        assert status == 500
        assert "[-]apiserver failed: timed out after 0.05s\n" in body


async def test_metrics_endpoint_serves_prometheus_text(
    http: aiohttp.ClientSession, server: HealthServer
) -> None:
    assert server.metrics is not None
    server.metrics.set_pending("active", 4)
    status, body, resp = await get(http, server, "/metrics", **{"Accept-Encoding": "identity"})
    assert status == 200
    assert "Content-Encoding" not in resp.headers
    assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert 'scheduler_pending_pods{queue="active"} 4.0' in body
    status, zipped, resp = await get(http, server, "/metrics", **{"Accept-Encoding": "gzip"})
    assert resp.headers.get("Content-Encoding") == "gzip"
    assert 'scheduler_pending_pods{queue="active"} 4.0' in zipped


async def test_metrics_without_a_registry_is_404(http: aiohttp.ClientSession) -> None:
    async with HealthServer("127.0.0.1:0") as srv:
        assert (await get(http, srv, "/metrics"))[0] == 404
        assert (await get(http, srv, "/healthz"))[:2] == (200, "ok")


async def test_lifecycle() -> None:
    srv = HealthServer("127.0.0.1:0")
    with pytest.raises(RuntimeError):
        _ = srv.port
    await srv.stop()  # not started: harmless
    await srv.start()
    port = srv.port
    with pytest.raises(RuntimeError, match="already started"):
        await srv.start()
    await srv.stop()
    await srv.stop()
    with pytest.raises(RuntimeError):
        _ = srv.port
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"http://127.0.0.1:{port}/healthz")


async def test_port_in_use_is_reported_and_leaves_nothing_running() -> None:
    async with HealthServer("127.0.0.1:0") as first:
        second = HealthServer(f"127.0.0.1:{first.port}")
        with pytest.raises(OSError):
            await second.start()
        with pytest.raises(RuntimeError):
            _ = second.port


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("ping", lambda: True),
        ("", lambda: True),
        ("a/b", lambda: True),
        ("has space", lambda: True),
    ],
)
def test_check_names_are_validated(name: str, make: Callable[[], bool]) -> None:
    srv = HealthServer("127.0.0.1:0")
    with pytest.raises(ValueError):
        srv.add_readiness_check(name, make)


def test_duplicate_check_names_are_rejected() -> None:
    srv = HealthServer("127.0.0.1:0", checks={"leader": lambda: True})
    with pytest.raises(ValueError, match="already registered"):
        srv.add_liveness_check("leader", lambda: True)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("0.0.0.0:10259", ("0.0.0.0", 10259)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        (":8080", (None, 8080)),
        ("[::1]:9000", ("::1", 9000)),
        ("[::]:10259", ("::", 10259)),
        ("localhost:1", ("localhost", 1)),
    ],
)
def test_parse_address(address: str, expected: tuple[str | None, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", ["10259", "host:port", "::1:80", "[::1]80", "h:70000", "h:-1"])
def test_parse_address_rejects_garbage(address: str) -> None:
    with pytest.raises(ValueError):
        parse_address(address)
