"""Shared fixtures: the Kubernetes backend every API-facing test runs against.

By default (``--backend=both``) every test that uses ``kube_backend`` runs
twice: against the built-in emulator, served from a thread for the whole
session, and against a real kube-apiserver + etcd. ``--backend=emulator`` or
``--backend=real`` (or env SCHEDULER_TEST_BACKEND) picks one. Where the two
disagree, the real kube-apiserver is right. Tests get a kubernetes-asyncio
ApiClient and a namespace of their own, so they never see each other's objects.

The real backend runs no controllers; a test that needs PVCs bound or ephemeral
volumes' claims created asks for ``volume_controllers`` as well, one that needs
ResourceClaims made from templates and released after their pods for
``dra_controllers``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scheduler.simulation.emulator import EmulatorServer
from scheduler.tools.controlplane import (
    ensure_binaries,
    start_control_plane,
)
from scheduler.tools.packageindex import PackageIndex, pip_download, run_package_index

REPO = Path(__file__).resolve().parents[1]
CONTRIB = REPO / "plugins-contrib"
CONTRIB_DISTRIBUTIONS = sorted(p.parent for p in CONTRIB.glob("*/pyproject.toml"))

# The plugin authors' fixtures (emulated_cluster, running_scheduler) are opt-in,
# for our suite as for everyone's.
pytest_plugins = ["scheduler.testing.pytest_plugin"]


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
def control_plane_binaries(request: pytest.FixtureRequest) -> Path:
    """The built control plane binaries (see ``ensure_binaries``), built on first use.

    A cold build takes many minutes inside a fixture, where pytest captures output
    and log records; the build's progress lines (one every 30 s) are shown on the
    terminal meanwhile so that the session never looks hung.
    """
    capture = request.config.pluginmanager.getplugin("capturemanager")
    uncaptured = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    logger = logging.getLogger("scheduler.tools.controlplane")
    with uncaptured:
        handler = logging.StreamHandler(sys.stderr)  # the real stderr, captured no more
        handler.setFormatter(logging.Formatter("\n[control plane] %(message)s"))
        logger.addHandler(handler)
        try:
            return ensure_binaries()
        finally:
            logger.removeHandler(handler)


@pytest.fixture(scope="session")
def kube_backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubeBackend]:
    kind = request.param
    if kind == "real":
        bin_dir: Path = request.getfixturevalue("control_plane_binaries")
        with start_control_plane(bin_dir=bin_dir) as plane:
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


@pytest.fixture(scope="session")
def progress(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Print a progress line on the terminal, past pytest's capture, for slow fixtures."""
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def say(message: str) -> None:
        uncaptured = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
        with uncaptured:
            print(f"\n[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    return say


@pytest.fixture(scope="session")
def package_index(
    tmp_path_factory: pytest.TempPathFactory, progress: Callable[[str], None]
) -> Iterator[PackageIndex]:
    """A PyPI-compatible index (pypiserver) on loopback holding this release, as users get it.

    pluggable-scheduler and every plugins-contrib distribution are built
    (``python -m build``: sdist, then the wheel from it), checked (``twine
    check --strict``) and uploaded with twine under a password, exactly as a
    release is published; the pinned third-party wheels of requirements.lock
    and the build backend's lock are mirrored into it, so that ``pip install
    --index-url <package_index.simple_url> pluggable-scheduler
    scheduler-plugin-coscheduling`` needs nothing else (``clean_pip_env``
    gives pip that index only). Only filling the mirror reaches PyPI, through
    pip's cache. One per session (about 20 s): the release tests and the
    image tests (``FROM pluggable-scheduler`` + ``pip install`` by name) share it.
    """
    workdir = tmp_path_factory.mktemp("package-index")
    with run_package_index(workdir) as index:
        progress(f"package index {index.simple_url}: mirroring the pinned dependencies")
        locks = [REPO / "requirements.lock", REPO / "deploy/docker/requirements-build.lock"]
        index.mirror(pip_download(locks, workdir / "mirror"))
        for project in [REPO, *CONTRIB_DISTRIBUTIONS]:
            name = "pluggable-scheduler" if project == REPO else project.name
            progress(f"package index: building, checking and uploading {name}")
            index.release(project, workdir / "dist")
        yield index
