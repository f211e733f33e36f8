"""End-to-end fixtures: the real Daemon, over HTTP, against the test backend.

Every test gets its own namespace (root ``namespace`` fixture), a scheduler
name derived from it, nodes whose names start with it (deleted afterwards,
since nodes are cluster-wide and messages count them), and daemons built
exactly as ``pluggable-scheduler run`` builds them, except that the tests may
add in-process plugins to the catalog.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scheduler.config.loading import load_config
from scheduler.daemon.daemon import Daemon
from scheduler.framework.loader import PluginCatalog
from scheduler.kube.apierrors import NotFound
from scheduler.kube.client import KubeClient
from scheduler.observability.server import Serving
from scheduler.simulation.emulator.claimcontroller import ClaimController
from scheduler.simulation.emulator.volumecontroller import VolumeController
from scheduler.tools.controlplane import (
    DRA_CONTROLLERS,
    ControlPlaneError,
    KubeControllerManagerProcess,
    run_kube_controller_manager,
)
from tests.conftest import KubeBackend
from tests.e2e.plugins import catalog_with_test_plugins

CATALOG = catalog_with_test_plugins()
SCHEDULER_UA = "pluggable-scheduler"


async def wait_until(
    predicate: Callable[[], Awaitable[bool] | bool],
    *,
    within: float = 10.0,
    message: str = "condition",
    every: float = 0.02,
) -> None:
    """Poll ``predicate`` (sync or async) until true; fail after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            pytest.fail(f"timed out after {within}s waiting for {message}")
        await asyncio.sleep(every)


def pod_body(
    name: str,
    scheduler: str,
    *,
    cpu: str = "100m",
    memory: str = "64Mi",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **spec,
        },
    }
    return body


@dataclass
class Cluster:
    """The test's own view of the API (a separate client from the daemon's)."""

    client: KubeClient
    namespace: str
    backend: KubeBackend
    scheduler_name: str
    nodes: list[str] = field(default_factory=list)

    @property
    def emulator(self) -> Any:
        return self.backend.emulator

    def node_name(self, short: str) -> str:
        return f"{self.namespace}-{short}"

    async def create_node(
        self,
        short: str,
        *,
        cpu: str = "4",
        memory: str = "8Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
    ) -> str:
        name = self.node_name(short)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {"taints": taints} if taints else {},
        }
        await self.client.request("POST", "/api/v1/nodes", body=body)
        self.nodes.append(name)
        status = {
            "status": {
                "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
                "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            }
        }
        # Status is a subresource on a real API server: create drops it.
        await self.client.request(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            body=status,
            content_type="application/strategic-merge-patch+json",
        )
        return name

    async def delete_node(self, name: str) -> None:
        with contextlib.suppress(NotFound):
            await self.client.request("DELETE", f"/api/v1/nodes/{name}")

    async def create_pod(self, name: str, **kwargs: Any) -> dict[str, Any]:
        scheduler = kwargs.pop("scheduler", self.scheduler_name)
        return await self.create_raw_pod(pod_body(name, scheduler, **kwargs))

    async def create_raw_pod(self, body: dict[str, Any]) -> dict[str, Any]:
        created = await self.client.request(
            "POST", f"/api/v1/namespaces/{self.namespace}/pods", body=body
        )
        assert isinstance(created, dict)
        return created

    async def pod(self, name: str) -> dict[str, Any]:
        got = await self.client.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        assert isinstance(got, dict)
        return got

    async def pods(self) -> dict[str, dict[str, Any]]:
        items, _ = await self.client.list(f"/api/v1/namespaces/{self.namespace}/pods")
        return {p["metadata"]["name"]: p for p in items}

    async def placements(self) -> dict[str, str]:
        """Pod name -> node name ("" while unbound)."""
        return {
            n: (p.get("spec") or {}).get("nodeName") or "" for n, p in (await self.pods()).items()
        }

    async def wait_bound(self, names: list[str], *, within: float = 15.0) -> dict[str, str]:
        placed: dict[str, str] = {}

        async def all_bound() -> bool:
            nonlocal placed
            placed = await self.placements()
            return all(placed.get(n) for n in names)

        await wait_until(all_bound, within=within, message=f"pods {names} to be bound", every=0.05)
        return {n: placed[n] for n in names}

    async def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        """events.k8s.io/v1 Events of the namespace (optionally of one reason)."""
        items, _ = await self.client.list(
            f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events"
        )
        return [e for e in items if reason is None or e.get("reason") == reason]

    async def events_for(self, pod: str, reason: str) -> list[dict[str, Any]]:
        return [
            e for e in await self.events(reason) if (e.get("regarding") or {}).get("name") == pod
        ]

    async def wait_event(self, pod: str, reason: str, *, within: float = 10.0) -> dict[str, Any]:
        found: list[dict[str, Any]] = []

        async def seen() -> bool:
            found[:] = await self.events_for(pod, reason)
            return bool(found)

        await wait_until(seen, within=within, message=f"a {reason} event for {pod}", every=0.05)
        return found[-1]

    def successful_bindings(self) -> dict[str, int]:
        """Emulator only: pod name -> number of bindings the API server accepted."""
        assert self.emulator is not None
        counts: dict[str, int] = {}
        for r in self.emulator.request_log.find(
            verb="create", resource="pods/binding", namespace=self.namespace
        ):
            if r.status == 201:
                counts[r.name] = counts.get(r.name, 0) + 1
        return counts

    def binding_attempts(self, pod: str) -> list[int]:
        """Emulator only: the HTTP statuses of every binding request for ``pod``."""
        assert self.emulator is not None
        return [
            r.status
            for r in self.emulator.request_log.find(
                verb="create", resource="pods/binding", namespace=self.namespace
            )
            if r.name == pod
        ]

    async def assert_bound_exactly_once(self, names: list[str]) -> None:
        """Every pod is on a node; on the emulator also: one accepted binding each."""
        placed = await self.placements()
        assert all(placed.get(n) for n in names), {n: placed.get(n) for n in names}
        if self.emulator is not None:
            counts = self.successful_bindings()
            assert {n: counts.get(n, 0) for n in names} == dict.fromkeys(names, 1)


def scheduler_config(
    profiles: list[dict[str, Any]],
    *,
    leader_elect: bool = False,
    namespace: str = "default",
    lease: str = "pluggable-scheduler",
    **extra: Any,
) -> dict[str, Any]:
    """A KubeSchedulerConfiguration dict; fast backoff, no health server port clash."""
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 1,
        "leaderElection": {
            "leaderElect": leader_elect,
            "leaseDuration": "2s",
            "renewDeadline": "1.5s",
            "retryPeriod": "0.3s",
            "resourceNamespace": namespace,
            "resourceName": lease,
        },
        "profiles": profiles,
        "pluggableScheduler": {"serverAddress": "127.0.0.1:0"},
    }
    config.update(extra)
    return config


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data))


@dataclass
class RunningDaemon:
    daemon: Daemon
    task: asyncio.Task[int]
    client: KubeClient

    def plugin(self, profile: str, name: str) -> Any:
        return self.daemon.profiles[profile].framework.plugins[name]

    async def stop(self, within: float = 15.0) -> int:
        """Graceful stop (what SIGTERM does); returns the exit code."""
        self.daemon.request_stop()
        return await asyncio.wait_for(asyncio.shield(self.task), within)

    async def kill(self) -> None:
        """Abrupt stop: cancel the task, as if the process died."""
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self.task, 15)


StartDaemon = Callable[..., Awaitable[RunningDaemon]]


@pytest.fixture
async def cluster(kube_backend: KubeBackend, namespace: str) -> AsyncIterator[Cluster]:
    client = await KubeClient.from_kubeconfig(str(kube_backend.kubeconfig), qps=0, burst=100)
    c = Cluster(client, namespace, kube_backend, f"sched-{namespace}")
    try:
        yield c
    finally:
        if kube_backend.emulator is not None:
            kube_backend.emulator.faults.clear()
        for node in c.nodes:
            await c.delete_node(node)
        await client.close()


@pytest.fixture
async def start_daemon(kube_backend: KubeBackend) -> AsyncIterator[StartDaemon]:
    running: list[RunningDaemon] = []

    async def start(
        config: dict[str, Any],
        *,
        identity: str | None = None,
        catalog: PluginCatalog = CATALOG,
        wait_leading: bool = True,
        config_file: Path | None = None,
        serving: Serving | None = None,
    ) -> RunningDaemon:
        """Start a daemon; with ``config_file``, ``config`` is written there and watched.

        With ``serving``, it serves health and metrics that way (else not at all).
        """
        loaded = load_config(config)
        if config_file is not None:
            write_json(config_file, config)
        conn = loaded.client_connection
        client = await KubeClient.from_kubeconfig(
            str(kube_backend.kubeconfig), qps=conn.qps, burst=conn.burst
        )
        daemon = Daemon(
            loaded,
            catalog,
            client,
            identity=identity,
            serve_health=serving is not None,
            serving=serving,
            seed=0,
            config_path=config_file,
        )
        task = asyncio.create_task(daemon.run(install_signal_handlers=False))
        handle = RunningDaemon(daemon, task, client)
        running.append(handle)
        if wait_leading:
            leading = asyncio.ensure_future(daemon.leading.wait())
            done, _ = await asyncio.wait({task, leading}, timeout=15, return_when="FIRST_COMPLETED")
            if task in done:
                leading.cancel()
                task.result()
                pytest.fail("the daemon stopped during start-up")
            if leading not in done:
                leading.cancel()
                pytest.fail("the daemon did not start leading within 15s")
        return handle

    try:
        yield start
    finally:
        for handle in running:
            if not handle.task.done():
                handle.daemon.request_stop()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(handle.task, 15)
            await handle.client.close()


@pytest.fixture(scope="package")
def volume_controllers(
    request: pytest.FixtureRequest, kube_backend: KubeBackend
) -> Iterator[KubeControllerManagerProcess | None]:
    """The PersistentVolume binder and ephemeral-volume controller, on the real backend.

    On the real backend: one kube-controller-manager for the e2e tests (stopped
    after them, so no controller acts on later tests' objects), running only
    ``VOLUME_CONTROLLERS`` against that backend's apiserver, so PVCs get bound to
    matching PVs, a PV pre-bound by the scheduler (``spec.claimRef``) has its
    binding completed, and a pod's generic ephemeral volume gets its
    ``<pod>-<volume>`` PVC. Skipped, with the reason, when the binaries cannot be
    built (no Go toolchain, build failure); a kube-controller-manager that is built
    but fails to start is an error, not a skip.

    On the emulator: None. The emulator's equivalent (an emulated PV controller) is
    enabled separately, in the emulator itself, not by this fixture; until it is, a
    test that needs binding on both backends checks for None and skips.
    """
    if kube_backend.kind != "real":
        yield None
        return
    try:
        bin_dir: Path = request.getfixturevalue("control_plane_binaries")
    except ControlPlaneError as error:
        pytest.skip(f"kube-controller-manager cannot be built: {error}")
    with run_kube_controller_manager(kube_backend.kubeconfig, bin_dir=bin_dir) as process:
        yield process


@pytest.fixture(scope="package")
def dra_controllers(
    request: pytest.FixtureRequest, kube_backend: KubeBackend
) -> Iterator[KubeControllerManagerProcess | None]:
    """kube-controller-manager's ResourceClaim controller, on the real backend.

    Like ``volume_controllers`` (its own process for the e2e tests, only
    ``DRA_CONTROLLERS``, skipped when the binaries cannot be built): pods naming a
    ResourceClaimTemplate get their claims, and a deleted pod's claims lose its
    reservation and, when nobody else reserves them, their allocation. A separate
    process rather than one shared with the volume controllers, because a session
    fixture cannot widen the controller list of a process already running.

    On the emulator: None (``claim_controller`` in tests/e2e runs the emulator's
    own ResourceClaim controller there).
    """
    if kube_backend.kind != "real":
        yield None
        return
    try:
        bin_dir: Path = request.getfixturevalue("control_plane_binaries")
    except ControlPlaneError as error:
        pytest.skip(f"kube-controller-manager cannot be built: {error}")
    with run_kube_controller_manager(
        kube_backend.kubeconfig, controllers=DRA_CONTROLLERS, bin_dir=bin_dir
    ) as process:
        yield process


@pytest.fixture
async def pv_controller(
    kube_backend: KubeBackend, request: pytest.FixtureRequest
) -> AsyncIterator[None]:
    """The backend's PV controller for the test: kube-controller-manager or the emulator's."""
    emulator = kube_backend.emulator
    if emulator is None:
        request.getfixturevalue("volume_controllers")
        yield None
        return
    controller = VolumeController(emulator.store)
    emulator.call(controller.start)
    try:
        yield None
    finally:
        emulator.call(controller.stop)


@pytest.fixture
async def claim_controller(
    kube_backend: KubeBackend, request: pytest.FixtureRequest
) -> AsyncIterator[None]:
    """The backend's ResourceClaim controller: kube-controller-manager's or the emulator's."""
    emulator = kube_backend.emulator
    if emulator is None:
        request.getfixturevalue("dra_controllers")
        yield None
        return
    controller = ClaimController(emulator.store)
    emulator.call(controller.start)
    try:
        yield None
    finally:
        emulator.call(controller.stop)


@pytest.fixture
async def priorities(cluster: Cluster) -> AsyncIterator[dict[str, str]]:
    """A low (10) and a high (1000) PriorityClass of the test's own (cluster-scoped,
    removed after), by level."""
    names = {"low": f"{cluster.namespace}-low", "high": f"{cluster.namespace}-high"}
    for level, value in (("low", 10), ("high", 1000)):
        await cluster.client.request(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            body={
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": names[level]},
                "value": value,
            },
        )
    yield names
    for name in names.values():
        await cluster.client.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
