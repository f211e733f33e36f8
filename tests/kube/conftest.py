"""Fixtures for the kube adapter tests: a fresh emulator per test, over real HTTP.

Each test gets its own emulator (start-up is a few milliseconds) so fault
rules, compactions and leases never leak between tests, and a client built
from the emulator's kubeconfig exactly as the daemon builds its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from scheduler.kube.client import KubeClient, RetryPolicy
from scheduler.simulation.emulator import EmulatorServer
from tests.kube.helpers import FAST_RETRY

ClientFactory = Callable[..., Awaitable[KubeClient]]


@pytest.fixture
async def emulator() -> AsyncIterator[EmulatorServer]:
    async with EmulatorServer(bookmark_interval=0.2) as server:
        yield server


@pytest.fixture
async def make_client(emulator: EmulatorServer, tmp_path: Path) -> AsyncIterator[ClientFactory]:
    """Build clients against the emulator; all are closed after the test."""
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    clients: list[KubeClient] = []

    async def make(
        *, qps: float = 0.0, burst: int = 100, retry: RetryPolicy = FAST_RETRY
    ) -> KubeClient:
        client = await KubeClient.from_kubeconfig(
            str(kubeconfig), qps=qps, burst=burst, retry=retry
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
async def client(make_client: ClientFactory) -> KubeClient:
    return await make_client()
