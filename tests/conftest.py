"""Shared fixtures: the Kubernetes backend every API-facing test runs against.

By default (``--backend=both``) every test that uses ``kube_backend`` runs
twice: against the built-in emulator, served from a thread for the whole
session, and against a real kube-apiserver + etcd. ``--backend=emulator`` or
``--backend=real`` (or env SCHEDULER_TEST_BACKEND) picks one. Where the two
disagree, the real kube-apiserver is right. Tests get a kubernetes-asyncio
ApiClient and a namespace of their own, so they never see each other's objects.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scheduler.emulator import EmulatorServer


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=("both", "emulator", "real"),
        default=os.environ.get("SCHEDULER_TEST_BACKEND", "both"),
        help="Kubernetes API backend(s) for API tests: the built-in emulator, a real "
        "kube-apiserver, or both (default)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kube_backend" in metafunc.fixturenames:
        choice = metafunc.config.getoption("--backend")
        kinds = ["emulator", "real"] if choice == "both" else [choice]
        metafunc.parametrize("kube_backend", kinds, indirect=True, scope="session")


@dataclass
class KubeBackend:
    kind: str
    kubeconfig: Path
    emulator: EmulatorServer | None = None


@pytest.fixture(scope="session")
def kube_backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubeBackend]:
    kind = request.param
    if kind == "real":
        from scheduler.testing.controlplane import start_control_plane

        with start_control_plane() as plane:
            yield KubeBackend("real", Path(plane.kubeconfig))
        return
    server = EmulatorServer().start_in_thread()
    try:
        yield KubeBackend(
            "emulator",
            server.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig"),
            server,
        )
    finally:
        server.stop_thread()


@pytest.fixture
def emulator(kube_backend: KubeBackend) -> EmulatorServer:
    """The session emulator; tests using it are emulator-only."""
    if kube_backend.emulator is None:
        pytest.skip(
            "emulator-only: needs in-process access to the API server "
            "(fault injection, request log)"
        )
    return kube_backend.emulator


@pytest.fixture
async def api_client(kube_backend: KubeBackend) -> AsyncIterator[Any]:
    from kubernetes_asyncio import client, config

    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(kube_backend.kubeconfig), client_configuration=configuration
    )
    async with client.ApiClient(configuration) as api:
        yield api


@pytest.fixture
async def namespace(api_client: Any) -> AsyncIterator[str]:
    from kubernetes_asyncio import client

    core = client.CoreV1Api(api_client)
    name = f"t-{uuid.uuid4().hex[:12]}"
    await core.create_namespace({"metadata": {"name": name}})
    try:
        yield name
    finally:
        try:
            await core.delete_namespace(name, grace_period_seconds=0)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
