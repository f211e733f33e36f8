"""Run scheduler_perf-style workloads against our daemon and kube-scheduler.

Every run is separate processes, so that nothing measures another's CPU:
the API server (the emulator in a process of its own, or etcd +
kube-apiserver), the scheduler under test (``python -m scheduler run``, or
the kube-scheduler binary) and this harness, which creates the objects at
high client QPS (no controllers: pods are created directly) and follows all
pods through one watch. A pod counts as scheduled when its
``spec.nodeName`` is set. Each scheduler gets a fresh API server with the
same objects, one after the other, in the same invocation.

Both schedulers run with client QPS/burst raised (5000/5000 by default, as
scheduler_perf does), JSON on the wire, leader election off and the default
plugins in one profile named ``perf-scheduler``, which every pod asks for.

The DRA workloads need what scheduler_perf runs in-process for them: the
ResourceClaim controller, which creates each pod's claim from its template,
records it in the pod's ``status.resourceClaimStatuses`` (until then neither
scheduler tries the pod) and, once a pod is gone, deallocates and deletes its
claim. Against the emulator that is its emulated controller (inside the emulator
process); against kube-apiserver it is kube-controller-manager's
``resourceclaim-controller`` with the ``garbage-collector-controller``, at the same client
QPS as scheduler_perf's (5000). Either way both schedulers get the same
controller on the same backend, and the controller's CPU is never the
scheduler's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import multiprocessing
import multiprocessing.connection
import os
import pstats
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from scheduler.tools.bench.perf import report, workloads
from scheduler.tools.bench.perf.batch import QuotaAudit, crd_manifests, gang_figures
from scheduler.tools.bench.perf.progress import INTERVAL, Progress, say
from scheduler.tools.bench.perf.workloads import Phase, Workload

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# -- /proc -------------------------------------------------------------------------------


@dataclasses.dataclass
class ProcSample:
    cpu_seconds: float
    rss_mib: float
    peak_rss_mib: float


def proc_sample(pid: int) -> ProcSample | None:
    """utime+stime from /proc/<pid>/stat, VmRSS and VmHWM from /proc/<pid>/status."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            stat = f.read()
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            status = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; fields after its ')' are fixed.
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)
    values: dict[str, float] = {}
    for line in status.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return ProcSample(cpu, values.get("VmRSS", 0.0), values.get("VmHWM", 0.0))


def server_cpu_seconds(server: ApiServer) -> float | None:
    """The API server's processes' CPU so far; None if any is gone or unknown."""
    samples = [proc_sample(pid) for pid in server.pids]
    if not samples or any(sample is None for sample in samples):
        return None
    return sum(sample.cpu_seconds for sample in samples if sample is not None)


# -- backends ----------------------------------------------------------------------------


@dataclasses.dataclass
class ApiServer:
    """Where the harness and the schedulers find the API, and what it already holds."""

    url: str
    kubeconfig: Path
    token: str | None = None
    ca_file: Path | None = None
    preloaded: bool = False  # namespaces, nodes and bound pods exist already
    #: The processes serving the API (the emulator; etcd, kube-apiserver and any
    #: controller manager): their CPU over the measured phase is reported, because
    #: on a shared machine what the server spends per pod bounds both schedulers.
    pids: tuple[int, ...] = ()


def _serve_emulator(conn: multiprocessing.connection.Connection, workload: Workload) -> None:
    from scheduler.processgc import freeze_what_is_held, hold_a_cluster
    from scheduler.simulation.emulator import EmulatorServer

    hold_a_cluster()  # a process of its own, as kube-apiserver is

    async def serve() -> None:
        server = EmulatorServer(
            workloads.preloaded_objects(workload),
            record_requests=False,
            claim_controller=workload.dra is not None,
        )
        await server.start()
        freeze_what_is_held()
        conn.send(server.url)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_reader(conn.fileno(), stop.set)
        await stop.wait()
        await server.stop()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


#: How long an emulator may take to load its preloaded cluster and listen (65,000
#: nodes with 200,000 pods take about a minute on two busy cores).
EMULATOR_START_SECONDS = 900.0


@contextlib.contextmanager
def emulator_backend(workload: Workload, workdir: Path) -> Iterator[ApiServer]:
    """The API server emulator in a process of its own, preloaded with the cluster."""
    from scheduler.simulation.emulator.kubeconfig import write_kubeconfig

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_serve_emulator, args=(child, workload), daemon=True)
    process.start()
    try:
        started = time.monotonic()
        deadline = started + EMULATOR_START_SECONDS
        next_line = started + INTERVAL
        while not parent.poll(0.5):  # an emulator that died (an import error) says so at once
            if not process.is_alive():
                raise RuntimeError(
                    f"the emulator exited (code {process.exitcode}) before it started"
                )
            now = time.monotonic()
            if now > deadline:
                raise RuntimeError(
                    f"the emulator did not start within {EMULATOR_START_SECONDS:.0f} s"
                )
            if now >= next_line:  # 65,000 nodes and 200,000 pods take a minute to load
                say(f"the emulator is loading the cluster ({now - started:.0f} s)")
                next_line = now + INTERVAL
        url = str(parent.recv())
        kubeconfig = write_kubeconfig(workdir / "emulator.kubeconfig", url)
        pids = (process.pid,) if process.pid is not None else ()
        yield ApiServer(url, Path(kubeconfig), preloaded=True, pids=pids)
    finally:
        with contextlib.suppress(OSError):
            parent.send("stop")
        process.join(10)
        if process.is_alive():
            process.terminate()
            process.join(5)


#: kube-controller-manager's controllers a DRA workload needs: claims from templates,
#: released and deallocated when their pod goes, then deleted with it.
CLAIM_CONTROLLERS = ("resourceclaim-controller", "garbage-collector-controller")
#: scheduler_perf's client for its in-process controllers: QPS and burst 5000
#: (kube-controller-manager's own default, 20, would throttle claim creation).
CONTROLLER_QPS = 5000


@contextlib.contextmanager
def real_backend(workload: Workload, workdir: Path) -> Iterator[ApiServer]:
    """etcd + kube-apiserver on loopback (fresh, empty); the harness creates the objects.

    For a DRA workload kube-controller-manager runs :data:`CLAIM_CONTROLLERS`
    alongside, for the whole run.
    """
    from scheduler.tools.controlplane import start_control_plane

    with (
        start_control_plane(workdir=workdir / "controlplane") as plane,
        contextlib.ExitStack() as stack,
    ):
        pids = list(plane.pids.values())
        if workload.dra is not None:
            controllers = stack.enter_context(
                plane.run_controller_manager(
                    CLAIM_CONTROLLERS,
                    verbosity=1,
                    extra_args=[
                        f"--kube-api-qps={CONTROLLER_QPS}",
                        f"--kube-api-burst={CONTROLLER_QPS}",
                    ],
                )
            )
            pids.append(controllers.pid)
        yield ApiServer(
            plane.server,
            plane.kubeconfig,
            token=plane.token,
            ca_file=plane.ca_file,
            pids=tuple(pids),
        )


# -- the harness's own client ------------------------------------------------------------


class Api:
    """A small aiohttp client: JSON in and out, bounded retries on 429/5xx."""

    def __init__(self, server: ApiServer, concurrency: int) -> None:
        self.server = server
        ssl_context: ssl.SSLContext | bool = False
        if server.ca_file is not None:
            ssl_context = ssl.create_default_context(cafile=str(server.ca_file))
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if server.token:
            headers["Authorization"] = f"Bearer {server.token}"
        self.session = aiohttp.ClientSession(
            server.url,
            headers=headers,
            connector=aiohttp.TCPConnector(limit=concurrency + 8, ssl=ssl_context),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
        )

    async def close(self) -> None:
        await self.session.close()

    async def request(
        self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 201)
    ) -> Any:
        data = orjson.dumps(body) if body is not None else None
        for attempt in range(6):
            async with self.session.request(method, path, data=data) as resp:
                raw = await resp.read()
                if resp.status in ok:
                    return orjson.loads(raw) if raw else None
                if resp.status in (429, 500, 503, 504) and attempt < 5:
                    await asyncio.sleep(0.1 * 2**attempt)
                    continue
                raise RuntimeError(f"{method} {path} -> {resp.status}: {raw[:300]!r}")
        raise AssertionError("unreachable")

    async def create_all(
        self, objects: Sequence[dict[str, Any]], concurrency: int, what: str | None = None
    ) -> None:
        """POST every object, `concurrency` in flight."""
        await self.create_groups([[obj] for obj in objects], concurrency, what)

    async def create_groups(
        self,
        groups: Sequence[Sequence[dict[str, Any]]],
        concurrency: int,
        what: str | None = None,
    ) -> None:
        """Create every group, `concurrency` groups in flight, each group's objects
        one after the other (a pod's PVC and PV before it, as scheduler_perf's
        workers do). Kinds whose status a create resets get it written back.
        With `what`, a long creation prints its progress under that name."""
        it = iter(groups)
        done = [0]
        tracker = Progress(f"creating {what}", len(groups)) if what else None

        async def worker() -> None:
            for group in it:
                for obj in group:
                    path = collection_path(obj)
                    await self.request("POST", path, obj, ok=(201, 409))
                    if obj["kind"] in workloads.STATUS_UPDATE_KINDS:
                        status_path = f"{path}/{obj['metadata']['name']}/status"
                        await self.request("PUT", status_path, obj, ok=(200, 201))
                done[0] += 1
                if tracker is not None:
                    tracker.update(done[0])

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
        if tracker is not None:
            tracker.finish(done[0])


#: Kinds outside the core group: their API group and version, and plural.
_GROUP_PATHS = {
    "PriorityClass": ("scheduling.k8s.io/v1", "priorityclasses"),
    "CSINode": ("storage.k8s.io/v1", "csinodes"),
    "DeviceClass": ("resource.k8s.io/v1", "deviceclasses"),
    "ResourceSlice": ("resource.k8s.io/v1", "resourceslices"),
    "ResourceClaim": ("resource.k8s.io/v1", "resourceclaims"),
    "ResourceClaimTemplate": ("resource.k8s.io/v1", "resourceclaimtemplates"),
    "PodGroup": (workloads.BATCH_API, "podgroups"),
    "ElasticQuota": (workloads.BATCH_API, "elasticquotas"),
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions"),
}


def collection_path(obj: dict[str, Any]) -> str:
    kind = obj["kind"]
    namespace = (obj.get("metadata") or {}).get("namespace")
    if kind in _GROUP_PATHS:
        group_version, resource = _GROUP_PATHS[kind]
        where = f"namespaces/{namespace}/" if namespace else ""
        return f"/apis/{group_version}/{where}{resource}"
    plural = {
        "Pod": "pods",
        "Node": "nodes",
        "Namespace": "namespaces",
        "Service": "services",
        "PersistentVolumeClaim": "persistentvolumeclaims",
        "PersistentVolume": "persistentvolumes",
    }[kind]
    if namespace:
        return f"/api/v1/namespaces/{namespace}/{plural}"
    return f"/api/v1/{plural}"


#: How long a real apiserver may take to establish and serve a CRD.
CRD_TIMEOUT = 60.0


async def install_crds(api: Api, crds: Sequence[dict[str, Any]]) -> None:
    """Create `crds` and wait until each is Established and its resource served."""
    await api.create_all(crds, 1)
    for crd in crds:
        name = crd["metadata"]["name"]
        spec = crd["spec"]
        served_path = (
            f"/apis/{spec['group']}/{spec['versions'][0]['name']}/{spec['names']['plural']}"
        )
        try:
            async with asyncio.timeout(CRD_TIMEOUT):
                while True:
                    current = await api.request("GET", f"{collection_path(crd)}/{name}")
                    conditions = (current.get("status") or {}).get("conditions") or []
                    if any(
                        c.get("type") == "Established" and c.get("status") == "True"
                        for c in conditions
                    ):
                        served = await api.request("GET", served_path, ok=(200, 404))
                        if served is not None and served.get("kind") != "Status":
                            break
                    await asyncio.sleep(0.2)
        except TimeoutError:
            raise RuntimeError(f"CRD {name} was not served within {CRD_TIMEOUT:.0f} s") from None


async def populate(api: Api, workload: Workload, concurrency: int) -> None:
    """Namespaces, the PriorityClass, nodes, their CSINodes, the DRA objects and
    already-bound pods (if not preloaded); then, on every backend, the allocated
    claims of ``allocResourceClaims`` (a create and a status write each) and the
    batch workloads' namespaces, PodGroups and ElasticQuotas (after their CRDs,
    which the emulator serves built in and a real apiserver gets installed)."""
    if workload.plugins and not api.server.preloaded:
        await install_crds(api, crd_manifests(workload))
    if not api.server.preloaded:
        await api.create_all([*workloads.namespaces(), workloads.priority_class()], 1)
        await api.create_all(list(workloads.nodes(workload)), concurrency, "nodes")
        await api.create_all(list(workloads.csi_nodes(workload)), concurrency, "CSINodes")
        await api.create_all(workloads.dra_objects(workload), concurrency, "DRA objects")
        if workload.bound_pods:
            await api.create_all(list(workloads.bound_pods(workload)), concurrency, "bound pods")
    await api.create_all(workloads.allocated_claims(workload), concurrency)
    objects = workloads.batch_objects(workload)
    await api.create_all([o for o in objects if o["kind"] == "Namespace"], concurrency)
    await api.create_all([o for o in objects if o["kind"] != "Namespace"], concurrency)


# -- following pods ----------------------------------------------------------------------


class PodTracker:
    """One watch on all pods: when each was first seen and when it first had a node."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.added: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.bound_in: dict[str, int] = {}
        self._waiters: list[tuple[tuple[str, ...], int, asyncio.Event]] = []
        # Called with (namespace, pod) for each pod when it is first seen bound.
        self.on_bound: list[Callable[[str, dict[str, Any]], None]] = []
        self._task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    async def start(self) -> None:
        listing = await self.api.request("GET", "/api/v1/pods?limit=1")
        rv = str(listing["metadata"]["resourceVersion"])
        self._task = asyncio.create_task(self._watch(rv))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def bound_count(self, namespaces: Sequence[str]) -> int:
        return sum(self.bound_in.get(n, 0) for n in namespaces)

    def wait_for(self, namespaces: str | Sequence[str], count: int) -> asyncio.Event:
        """An event set once `count` pods of `namespaces` (together) are bound."""
        names = (namespaces,) if isinstance(namespaces, str) else tuple(namespaces)
        event = asyncio.Event()
        if self.bound_count(names) >= count:
            event.set()
        else:
            self._waiters.append((names, count, event))
        return event

    async def _watch(self, rv: str) -> None:
        failures = 0
        while True:
            path = f"/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion={rv}"
            try:
                async with self.api.session.get(path) as resp:
                    if resp.status != 200:
                        raise RuntimeError(f"watch -> {resp.status}: {(await resp.read())[:200]!r}")
                    failures = 0
                    async for line in resp.content:
                        if len(line) > 1:
                            rv = self._event(line) or rv
            except (aiohttp.ClientError, RuntimeError) as exc:
                failures += 1
                if failures > 5:
                    self.error = exc
                    for _, _, event in self._waiters:
                        event.set()
                    raise
                await asyncio.sleep(0.5)

    def _event(self, line: bytes) -> str | None:
        now = time.perf_counter()
        event = orjson.loads(line)
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        if event.get("type") == "ERROR":
            raise RuntimeError(f"watch error: {obj}")
        if event.get("type") in ("ADDED", "MODIFIED"):
            namespace = meta.get("namespace") or ""
            key = f"{namespace}/{meta.get('name')}"
            self.added.setdefault(key, now)
            if (obj.get("spec") or {}).get("nodeName") and key not in self.bound:
                self.bound[key] = now
                self.bound_in[namespace] = self.bound_in.get(namespace, 0) + 1
                for callback in self.on_bound:
                    callback(namespace, obj)
                if self._waiters:
                    for waiter in [w for w in self._waiters if namespace in w[0]]:
                        if self.bound_count(waiter[0]) >= waiter[1]:
                            waiter[2].set()
                            self._waiters.remove(waiter)
        return str(meta.get("resourceVersion") or "") or None


# -- schedulers --------------------------------------------------------------------------


@dataclasses.dataclass
class SchedulerProcess:
    kind: str  # "ours" or "kube"
    pid: int
    metrics_url: str
    started: float
    ready_seconds: float = 0.0
    log_path: Path | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scheduler_config(
    qps: float, workload: Workload | None = None, extender: str | None = None
) -> dict[str, Any]:
    """The shared part of both schedulers' KubeSchedulerConfiguration; the
    profile enables the workload's contrib plugins, if it has any.

    ``extender``: the URL of a no-op HTTP extender both call for every pod
    (``filterVerb`` with node names only, every node passes).
    """
    profile = (
        workloads.scheduler_profile(workload)
        if workload is not None
        else {"schedulerName": workloads.SCHEDULER_NAME}
    )
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"qps": qps, "burst": int(qps), "contentType": "application/json"},
        "profiles": [profile],
    }
    if extender is not None:
        config["extenders"] = [
            {"urlPrefix": extender, "filterVerb": "filter", "nodeCacheCapable": True}
        ]
    return config


@dataclasses.dataclass(frozen=True)
class NoopExtender:
    """Where the schedulers call the toy extender, and its process (for its CPU)."""

    url: str
    pid: int


@contextlib.contextmanager
def noop_extender(workdir: Path) -> Iterator[NoopExtender]:
    """The test kit's toy extender, passing every node, in a process of its own."""
    port = _free_port()
    log_path = workdir / "extender.log"
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(
            [sys.executable, "-m", "scheduler.testing.extender", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(
            _wait_ready(f"{url}/healthz", lambda: popen.poll() is None, 60, "the no-op extender")
        )
        yield NoopExtender(url, popen.pid)
    finally:
        popen.terminate()
        try:
            popen.wait(10)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()


async def _wait_ready(url: str, alive: Callable[[], bool], limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if not alive():
                raise RuntimeError(f"{what} exited before it was ready")
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with session.get(url, ssl=False) as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{what} was not ready within {limit:.0f} s")


@contextlib.contextmanager
def run_ours(
    server: ApiServer,
    workdir: Path,
    qps: float,
    profile_path: Path | None,
    workload: Workload | None = None,
    extra_profiles: Sequence[dict[str, Any]] = (),
    extender: str | None = None,
) -> Iterator[SchedulerProcess]:
    """``python -m scheduler run`` as a child process (optionally under cProfile)."""
    port = _free_port()
    config = scheduler_config(qps, workload, extender)
    config["profiles"] = [*config["profiles"], *extra_profiles]
    config["pluggableScheduler"] = {"serverAddress": f"127.0.0.1:{port}"}
    config_path = workdir / "ours-config.json"
    config_path.write_text(json.dumps(config, indent=2))
    log_path = workdir / "ours.log"
    prefix = [sys.executable]
    if profile_path is not None:
        prefix += ["-m", "cProfile", "-o", str(profile_path)]
    command = [
        *prefix,
        *["-m", "scheduler", "run", "--config", str(config_path)],
        *["--kubeconfig", str(server.kubeconfig), "--log-format", "json"],
        # Scraped over loopback by the runner, as kube-scheduler is with its
        # authentication and authorization turned off for the benchmark.
        "--plain-http",
    ]
    started = time.perf_counter()
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        proc = SchedulerProcess("ours", popen.pid, f"http://127.0.0.1:{port}/metrics", started)
        proc.log_path = log_path
        try:
            asyncio.run(
                _wait_ready(
                    f"http://127.0.0.1:{port}/readyz",
                    lambda: popen.poll() is None,
                    600,
                    "our scheduler",
                )
            )
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; log {log_path}:\n{_tail(log_path)}") from None
        proc.ready_seconds = time.perf_counter() - started
        yield proc
    finally:
        if popen.poll() is None:
            popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(120)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()


@contextlib.contextmanager
def run_kube(
    server: ApiServer,
    workdir: Path,
    qps: float,
    workload: Workload | None = None,
    extender: str | None = None,
) -> Iterator[SchedulerProcess]:
    """The real kube-scheduler binary, /metrics open to this harness; for a
    workload with contrib plugins, scheduler-plugins' build of it."""
    from scheduler.tools.controlplane import run_kube_scheduler

    binary: Path | None = None
    if workload is not None and workload.plugins:
        from scheduler.tools import schedulerplugins

        binary = schedulerplugins.ensure_binary()
    started = time.perf_counter()
    with run_kube_scheduler(
        server.kubeconfig,
        scheduler_config(qps, workload, extender),
        binary=binary,
        workdir=workdir / "kube-scheduler",
        verbosity=1,
        extra_args=["--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"],
        ready_timeout=600,
        # Each binary's default gates, as our daemon runs with its defaults:
        # the comparison is of the default plugin sets, alpha gates off.
        feature_gates=None,
    ) as kube:
        proc = SchedulerProcess(
            "kube", kube.pid, f"https://127.0.0.1:{kube.healthz_port}/metrics", started
        )
        proc.ready_seconds = time.perf_counter() - started
        proc.log_path = kube.log_path
        yield proc


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


async def scrape(url: str) -> str | None:
    with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
            session.get(url, ssl=False) as resp,
        ):
            if resp.status == 200:
                return await resp.text()
    return None


# -- driving one run ---------------------------------------------------------------------


@dataclasses.dataclass
class Options:
    backend: str = "emulator"
    schedulers: tuple[str, ...] = ("ours", "kube")
    qps: float = 5000.0
    concurrency: int = 32
    timeout: float | None = None
    profile: bool = False
    profile_dir: Path = Path("perf-profiles")
    workdir: Path | None = None
    #: Profiles appended to our daemon's config after the measured one (e.g. a shadow).
    extra_profiles: tuple[dict[str, Any], ...] = ()
    #: Both schedulers call a no-op HTTP extender for every pod.
    extender: bool = False


#: How long a quota phase watches on after its expected pods are bound, for bindings
#: that should not happen.
SETTLE_SECONDS = 2.0


def phase_timeout(options: Options, phase: Phase) -> float:
    if options.timeout is not None:
        return options.timeout
    return 120.0 + phase.count / 10.0  # generous: 10 pods/s would still finish


async def _churn(api: Api) -> None:
    """scheduler_perf's churn op, mode recreate: every second a node, an unschedulable
    high-priority pod and a service appear; a second later they are deleted."""
    i = 0
    previous: list[str] = []
    while True:
        for path in previous:
            with contextlib.suppress(RuntimeError):
                await api.request("DELETE", path, ok=(200, 202, 404))
        objects = [
            workloads.node(0, name=f"churn-node-{i}"),
            workloads.pod("high-priority-large-cpu", f"churn-pod-{i}", workloads.CHURN_NAMESPACE),
            workloads.churn_service(i),
        ]
        previous = []
        for obj in objects:
            with contextlib.suppress(RuntimeError):
                await api.request("POST", collection_path(obj), obj, ok=(201, 409))
                previous.append(f"{collection_path(obj)}/{obj['metadata']['name']}")
        i += 1
        await asyncio.sleep(1.0)


async def _steady_state(
    api: Api, tracker: PodTracker, phase: Phase, concurrency: int, created: list[int]
) -> None:
    """scheduler_perf's ``createPodsSteadily``: create `phase.count` pods, wait until
    all are scheduled, delete every pod in the namespace (grace period 0,
    background propagation, one DeleteCollection) and start over; runs until
    cancelled. `created` counts the pods created so far."""
    delete_all = {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Background",
    }
    batch = 0
    while True:
        done = tracker.wait_for(phase.namespace, (batch + 1) * phase.count)
        await api.create_groups(workloads.phase_objects(phase, batch), concurrency)
        created[0] += phase.count
        await done.wait()
        if tracker.error is not None:
            raise RuntimeError(f"the pod watch failed: {tracker.error}")
        await api.request("DELETE", f"/api/v1/namespaces/{phase.namespace}/pods", delete_all)
        batch += 1


async def _wait_scheduled(
    tracker: PodTracker, phase: Phase, done: asyncio.Event, limit: float
) -> bool:
    """Wait until `done` (the phase's pods are bound) or `limit` seconds pass; False
    if they pass first.

    A long wait prints how many of the phase's pods are bound every
    :data:`INTERVAL` seconds.
    """
    progress = Progress(f"{phase.name} pods scheduled", phase.expected)
    deadline = time.monotonic() + limit
    while not done.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), min(remaining, INTERVAL))
        progress.update(tracker.bound_count(phase.namespaces))
    progress.finish(tracker.bound_count(phase.namespaces))
    return True


async def drive(
    server: ApiServer,
    workload: Workload,
    proc: SchedulerProcess,
    options: Options,
    extender_pid: int | None = None,
) -> dict[str, Any]:
    """Create the phases' pods in order and observe the measured one.

    ``extender_pid``: the no-op extender's process, whose CPU over the measured
    phase is reported beside the server's (it shares the machine too).
    """
    api = Api(server, options.concurrency)
    tracker = PodTracker(api)
    result: dict[str, Any] = {"ready_seconds": proc.ready_seconds}
    churn: asyncio.Task[None] | None = None
    audit = QuotaAudit(workload.quotas) if workload.quotas else None
    if audit is not None:
        tracker.on_bound.append(audit.bound)
    try:
        await tracker.start()
        for phase in workload.phases:
            groups = workloads.phase_objects(phase)
            done = tracker.wait_for(phase.namespaces, phase.expected)
            if not phase.measure:
                t0 = time.perf_counter()
                await api.create_groups(groups, options.concurrency, f"{phase.name} pods")
                if phase.wait:
                    await _wait_scheduled(tracker, phase, done, phase_timeout(options, phase))
                    got = tracker.bound_count(phase.namespaces)
                    if got < phase.count:
                        raise RuntimeError(
                            f"only {got} of {phase.count} {phase.name} pods were scheduled "
                            f"within {phase_timeout(options, phase):.0f} s"
                        )
                result[f"{phase.name}_seconds"] = time.perf_counter() - t0
                continue
            if workload.churn:
                churn = asyncio.create_task(_churn(api))
            metrics_before = await scrape(proc.metrics_url)
            before = proc_sample(proc.pid)
            server_before = server_cpu_seconds(server)
            extender_before = proc_sample(extender_pid) if extender_pid else None
            harness_before = time.process_time()
            start = time.perf_counter()
            timed_out = False
            expected = phase.expected
            window_end: float | None = None  # a steady-state phase counts pods until then
            if phase.steady_seconds is not None:
                created = [0]
                steady = asyncio.create_task(
                    _steady_state(api, tracker, phase, options.concurrency, created)
                )
                finished, _ = await asyncio.wait({steady}, timeout=phase.steady_seconds)
                window_end = start + phase.steady_seconds
                if finished:
                    steady.result()  # it only ends early by failing
                steady.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await steady
                expected = created[0]
            else:
                creating = asyncio.create_task(api.create_groups(groups, options.concurrency))
                timed_out = not await _wait_scheduled(
                    tracker, phase, done, phase_timeout(options, phase)
                )
                await creating
            end = time.perf_counter()
            after = proc_sample(proc.pid)
            server_after = server_cpu_seconds(server)
            extender_after = proc_sample(extender_pid) if extender_pid else None
            harness_cpu = time.process_time() - harness_before
            metrics_after = await scrape(proc.metrics_url)
            if phase.expected < phase.count and not timed_out:
                # The pods beyond the quotas must stay pending: give a scheduler that
                # would bind more the time to show it (the audit sees each binding).
                await asyncio.sleep(SETTLE_SECONDS)
            if tracker.error is not None:
                raise RuntimeError(f"the pod watch failed: {tracker.error}")
            prefixes = tuple(f"{n}/" for n in phase.namespaces)
            bound = {
                k: t
                for k, t in tracker.bound.items()
                if k.startswith(prefixes) and (window_end is None or t <= window_end)
            }
            latencies = [(t - tracker.added[k]) * 1000 for k, t in bound.items()]
            times = list(bound.values())
            if phase.gang_size is not None:
                # A gang is scheduled when its last member is: throughput counts
                # each gang's pods then (partial gangs' pods never).
                times, result["gangs"] = gang_figures(phase, bound, start)
            if audit is not None:
                result["quota"] = audit.figures()
            overall = len(times) / (max(times) - start) if times and max(times) > start else None
            if window_end is not None:
                overall = len(bound) / (window_end - start) if bound else None
            samples = report.throughput_samples(start, times, end=window_end)
            method = "scheduler_perf"
            if not samples and overall is not None:
                # Too short for two ticks: scheduler_perf would report nothing.
                samples, method = [overall], "overall (run shorter than scheduler_perf's ticks)"
            result.update(
                {
                    "expected": expected,
                    "scheduled": len(bound),
                    # A steady-state run ends with a batch in flight; upstream fails
                    # it only when no pod at all got scheduled.
                    "incomplete": (
                        not bound if window_end is not None else timed_out or len(bound) < expected
                    ),
                    "measured_seconds": end - start,
                    "overall_pods_per_second": overall,
                    "throughput": report.summarize(samples),
                    "throughput_method": method,
                    "throughput_samples": [round(s, 2) for s in samples],
                    # Offsets from the phase's start, to recompute any figure later.
                    "bound_offsets": sorted(round(t - start, 4) for t in times),
                    "latency_ms": report.summarize(latencies),
                    "attempt_ms": _histogram_delta(
                        metrics_before,
                        metrics_after,
                        "scheduler_scheduling_attempt_duration_seconds",
                        {"result": "scheduled"},
                    ),
                    "algorithm_ms": _histogram_delta(
                        metrics_before,
                        metrics_after,
                        "scheduler_scheduling_algorithm_duration_seconds",
                        None,
                    ),
                    "process": _process(before, after),
                    # The rest of the machine over the same phase: the API server
                    # (None when one of its processes could not be read) and this
                    # harness (creating the pods, watching them bind).
                    "server_cpu_seconds_measured": (
                        server_after - server_before
                        if server_after is not None and server_before is not None
                        else None
                    ),
                    "harness_cpu_seconds_measured": harness_cpu,
                    # None without an extender, or when its process could not be read.
                    "extender_cpu_seconds_measured": (
                        extender_after.cpu_seconds - extender_before.cpu_seconds
                        if extender_after is not None and extender_before is not None
                        else None
                    ),
                }
            )
    finally:
        if churn is not None:
            churn.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await churn
        await tracker.stop()
        await api.close()
    return result


def _histogram_delta(
    before: str | None, after: str | None, name: str, match: dict[str, str] | None
) -> dict[str, float | None] | None:
    """Quantiles of what was observed between two scrapes (buckets subtracted)."""
    if not after:
        return None
    b_after = report.histogram(after, name, match)
    b_before = dict(report.histogram(before, name, match)) if before else {}
    delta = [(le, count - b_before.get(le, 0.0)) for le, count in b_after]
    if not delta or delta[-1][1] <= 0:
        return None

    def ms(q: float) -> float | None:
        value = report.histogram_quantile(q, delta)
        return None if value is None else value * 1000

    return {"p50_ms": ms(0.5), "p90_ms": ms(0.9), "p99_ms": ms(0.99), "count": delta[-1][1]}


def _process(before: ProcSample | None, after: ProcSample | None) -> dict[str, float | None]:
    return {
        "cpu_seconds_measured": (
            after.cpu_seconds - before.cpu_seconds if before and after else None
        ),
        "cpu_seconds": after.cpu_seconds if after else None,
        "rss_mib": after.rss_mib if after else None,
        "peak_rss_mib": after.peak_rss_mib if after else None,
    }


async def measure_memory(proc: SchedulerProcess, settle: float = 3.0) -> dict[str, Any]:
    """Memory mode: the scheduler is synced (ready); its RSS once it has settled."""
    first = proc_sample(proc.pid)
    await asyncio.sleep(settle)
    sample = proc_sample(proc.pid)
    metrics = await scrape(proc.metrics_url)
    result: dict[str, Any] = {
        "ready_seconds": proc.ready_seconds,
        "process": {
            "rss_after_sync_mib": sample.rss_mib if sample else None,
            "peak_rss_mib": sample.peak_rss_mib if sample else None,
            "cpu_seconds": sample.cpu_seconds if sample else None,
            "cpu_seconds_measured": (
                sample.cpu_seconds - first.cpu_seconds if sample and first else None
            ),
        },
        "metrics_scraped": metrics is not None,
    }
    return result


# -- one workload, both schedulers -------------------------------------------------------


def run_one(workload: Workload, kind: str, options: Options, workdir: Path) -> dict[str, Any]:
    backend = emulator_backend if options.backend == "emulator" else real_backend
    workdir.mkdir(parents=True, exist_ok=True)
    profile_path: Path | None = None
    if kind == "ours" and options.profile:
        options.profile_dir.mkdir(parents=True, exist_ok=True)
        profile_path = (options.profile_dir / f"{workload.name}-{options.backend}.prof").resolve()
    t0 = time.perf_counter()
    with backend(workload, workdir) as server:

        async def setup() -> None:
            api = Api(server, options.concurrency)
            try:
                await populate(api, workload, options.concurrency)
            finally:
                await api.close()

        asyncio.run(setup())
        setup_seconds = time.perf_counter() - t0
        if setup_seconds >= INTERVAL:
            say(f"cluster ready in {setup_seconds:.0f} s; starting {kind} and waiting for its sync")
        extender = noop_extender(workdir) if options.extender else contextlib.nullcontext(None)
        with extender as noop:
            url = noop.url if noop is not None else None
            launcher = (
                run_ours(
                    server,
                    workdir,
                    options.qps,
                    profile_path,
                    workload,
                    options.extra_profiles,
                    url,
                )
                if kind == "ours"
                else run_kube(server, workdir, options.qps, workload, url)
            )
            result = _measure(
                workload, options, server, launcher, noop.pid if noop is not None else None
            )
            result["setup_seconds"] = setup_seconds
    if profile_path is not None:
        result["profile"] = write_profile_summary(profile_path)
    return result


def _measure(
    workload: Workload,
    options: Options,
    server: ApiServer,
    launcher: contextlib.AbstractContextManager[SchedulerProcess],
    extender_pid: int | None = None,
) -> dict[str, Any]:
    """Start the scheduler and run the workload against it."""
    with launcher as proc:
        if proc.ready_seconds >= INTERVAL:
            say(f"{proc.kind} ready in {proc.ready_seconds:.0f} s")
        if workload.memory_only:
            result = asyncio.run(measure_memory(proc))
        else:
            result = asyncio.run(drive(server, workload, proc, options, extender_pid))
        result["log"] = str(proc.log_path) if proc.log_path else None
    return result


def write_profile_summary(path: Path, top: int = 40) -> str | None:
    """The profile's top functions (by own time and by cumulative time) as text."""
    if not path.exists():
        return None
    out = path.with_suffix(".txt")
    with open(out, "w", encoding="utf-8") as f:
        stats = pstats.Stats(str(path), stream=f)
        stats.strip_dirs()
        f.write(f"# {path.name}: top {top} by own time (tottime)\n")
        stats.sort_stats("tottime").print_stats(top)
        f.write(f"\n# top {top} by cumulative time\n")
        stats.sort_stats("cumulative").print_stats(top)
    return str(out)


def run_workload(workload: Workload, options: Options, root: Path) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "workload": workload.name,
        "backend": options.backend,
        "description": workload.describe(),
        "params": {
            "nodes": workload.nodes,
            "bound_pods": workload.bound_pods,
            "phases": [dataclasses.asdict(p) for p in workload.phases],
            "churn": workload.churn,
            "csi_nodes": (
                dataclasses.asdict(workload.csi_nodes) if workload.csi_nodes is not None else None
            ),
            "dra": dataclasses.asdict(workload.dra) if workload.dra is not None else None,
            "plugins": list(workload.plugins),
            "quotas": [dataclasses.asdict(q) for q in workload.quotas],
        },
        "schedulers": {},
    }
    if workload.plugins:
        entry["peer"] = peer_label(workload)
    for kind in options.schedulers:
        print(
            f"[perf] {workload.name} ({workload.describe()}) on {options.backend}: "
            f"{report.SCHEDULER_LABELS[kind]} ...",
            file=sys.stderr,
            flush=True,
        )
        started = time.perf_counter()
        try:
            if kind == "kube" and workload.plugins:
                # Built before its API server starts (a cold build takes many minutes).
                from scheduler.tools import schedulerplugins

                schedulerplugins.ensure_binary()
            outcome = run_one(workload, kind, options, root / f"{workload.name}-{kind}")
        except Exception as exc:  # one failed run must not lose the others' figures
            outcome = {"error": f"{type(exc).__name__}: {exc}"}
        outcome["wall_seconds"] = time.perf_counter() - started
        if kind == "ours" and outcome.get("profile"):
            entry["profile"] = outcome["profile"]
        entry["schedulers"][kind] = outcome
        avg = (outcome.get("throughput") or {}).get("avg")
        rss = (outcome.get("process") or {}).get("rss_after_sync_mib")
        print(
            f"[perf]   done in {outcome['wall_seconds']:.0f} s: "
            + (f"error {outcome['error']}" if "error" in outcome else "")
            + (f"avg {avg:.1f} pods/s" if avg is not None else "")
            + (f"RSS {rss:.0f} MiB" if rss is not None else ""),
            file=sys.stderr,
            flush=True,
        )
    return entry


def peer_label(workload: Workload) -> str:
    """What runs as the peer of a workload with contrib plugins."""
    from scheduler.tools import schedulerplugins

    try:
        version = schedulerplugins.pinned_versions()[0]
    except Exception:  # a missing pin is reported when the peer is built
        version = "?"
    return f"scheduler-plugins {version}"


def run(
    names: Sequence[str],
    scale: str,
    options: Options,
    duration: float | None = None,
    **sizes: int | None,
) -> dict[str, Any]:
    results = []
    with contextlib.ExitStack() as stack:
        if options.workdir is not None:
            root = options.workdir
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="perf-")))
        for name in names:
            workload = workloads.build(name, scale, duration=duration, **sizes)
            results.append(run_workload(workload, options, root))
    return {
        "machine": report.machine(),
        "scale": scale,
        "backend": options.backend,
        "schedulers": list(options.schedulers),
        "qps": options.qps,
        "extender": options.extender,
        "results": results,
    }


# -- command line ------------------------------------------------------------------------


def _workload_names(values: Sequence[str], scale: str = "full") -> list[str]:
    """The workloads named, groups expanded to their members that `scale` has
    (the 15k and 65k scales have a few workloads only)."""
    at_scale = workloads.SCALES[scale]

    def members(group: Sequence[str]) -> list[str]:
        return [n for n in group if n in at_scale]

    names: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if part == "all":
                names += members(workloads.DEFAULT_WORKLOADS)
            elif part == "volumes":
                names += members(workloads.VOLUME_WORKLOADS)
            elif part == "dra":
                names += members(workloads.DRA_WORKLOADS)
            elif part == "batch":
                names += members(workloads.BATCH_WORKLOADS)
            elif part in workloads.WORKLOAD_NAMES:
                names.append(part)
            else:
                raise SystemExit(
                    f"unknown workload {part!r}; choose from: all, volumes, dra, batch, "
                    + ", ".join(workloads.WORKLOAD_NAMES)
                )
    asked = [p.strip() for v in values for p in v.split(",") if p.strip()]
    if asked and not names:
        raise SystemExit(
            f"no workload of {', '.join(asked)} has a {scale} variant; "
            f"{scale} has: {', '.join(at_scale)}"
        )
    return list(dict.fromkeys(names)) or members(workloads.DEFAULT_WORKLOADS)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pluggable-scheduler bench perf",
        description="scheduler_perf-style workloads, our daemon vs kube-scheduler, each "
        "against a fresh API server, all in separate processes.",
    )
    parser.add_argument(
        "--workload",
        action="append",
        default=[],
        metavar="NAME",
        help="workload(s), comma-separated or repeated; 'all' (default) runs every one "
        "but Memory and the batch ones, 'volumes' the ones with PVs, 'dra' the ones with "
        "ResourceClaims, 'batch' Coscheduling and CapacityScheduling against "
        "scheduler-plugins' kube-scheduler: " + ", ".join(workloads.WORKLOAD_NAMES),
    )
    parser.add_argument(
        "--scale",
        choices=sorted(workloads.SCALES),
        default="full",
        help="full: scheduler_perf's 5000Nodes variants; small: its 500Nodes ones; 15k and "
        "65k: the 5000Nodes pods on 15,000 / 65,000 nodes (SchedulingBasic, HeteroBasic, "
        "SchedulingPodAntiAffinity, TopologySpreading, SchedulingCSIPVs, "
        "SchedulingWithResourceClaimTemplate; Memory at 65k: 200,000 bound pods)",
    )
    parser.add_argument("--nodes", type=int, help="override the number of nodes")
    parser.add_argument(
        "--init-pods",
        type=int,
        help="override init pods (Memory's bound pods, a steady-state workload's allocated claims)",
    )
    parser.add_argument(
        "--pods",
        type=int,
        help="override the number of measured pods (a steady-state workload's batch size)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        help="override a steady-state workload's duration in seconds (upstream: 10)",
    )
    parser.add_argument("--backend", choices=("emulator", "real"), default="emulator")
    parser.add_argument(
        "--schedulers", default="ours,kube", help="comma-separated: ours, kube (default both)"
    )
    parser.add_argument("--qps", type=float, default=5000.0, help="client QPS and burst")
    parser.add_argument("--concurrency", type=int, default=32, help="creations in flight")
    parser.add_argument("--timeout", type=float, help="seconds to wait per phase")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    parser.add_argument("--json-file", type=Path, help="also write the JSON report here")
    parser.add_argument(
        "--profile", action="store_true", help="run our daemon under cProfile; write top functions"
    )
    parser.add_argument("--profile-dir", type=Path, default=Path("perf-profiles"))
    parser.add_argument("--workdir", type=Path, help="keep configs and logs here")
    parser.add_argument(
        "--extender",
        action="store_true",
        help="configure both schedulers with one no-op HTTP extender (filterVerb, "
        "nodeCacheCapable; the test kit's toy extender in its own process)",
    )
    parser.add_argument(
        "--ours-extra-profiles",
        type=Path,
        metavar="FILE",
        help="YAML or JSON list of profiles appended to our daemon's config after the "
        "measured one, e.g. a shadow of it (pluggableScheduler.shadowOf: "
        f"{workloads.SCHEDULER_NAME})",
    )
    args = parser.parse_args(argv)
    args.extra_profiles = _extra_profiles(parser, args.ours_extra_profiles)
    schedulers = tuple(s.strip() for s in args.schedulers.split(",") if s.strip())
    bad = [s for s in schedulers if s not in report.SCHEDULER_LABELS]
    if bad or not schedulers:
        parser.error(f"--schedulers takes ours and/or kube, got {args.schedulers!r}")
    args.schedulers = schedulers
    args.workloads = _workload_names(args.workload, args.scale)
    return args


def _extra_profiles(
    parser: argparse.ArgumentParser, path: Path | None
) -> tuple[dict[str, Any], ...]:
    if path is None:
        return ()
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        parser.error(f"--ours-extra-profiles {path}: {err}")
    if not isinstance(loaded, list) or not all(isinstance(p, dict) for p in loaded):
        parser.error(f"--ours-extra-profiles {path}: want a list of profiles (mappings)")
    return tuple(loaded)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    for name in args.workloads:  # sizes a workload cannot take are an error before any run
        try:
            workloads.build(
                name,
                args.scale,
                nodes=args.nodes,
                init_pods=args.init_pods,
                pods=args.pods,
                duration=args.duration,
            )
        except ValueError as error:
            raise SystemExit(f"bench perf: {name}: {error}") from None
    options = Options(
        backend=args.backend,
        schedulers=args.schedulers,
        qps=args.qps,
        concurrency=args.concurrency,
        timeout=args.timeout,
        profile=args.profile,
        profile_dir=args.profile_dir,
        workdir=args.workdir,
        extender=args.extender,
        extra_profiles=args.extra_profiles,
    )
    result = run(
        args.workloads,
        args.scale,
        options,
        nodes=args.nodes,
        init_pods=args.init_pods,
        pods=args.pods,
        duration=args.duration,
    )
    text = json.dumps(result, indent=2)
    if args.json_file is not None:
        args.json_file.write_text(text + "\n")
    if args.output == "json":
        print(text)
    else:
        print(report.render(result), end="")
    failed = any(
        "error" in outcome for r in result["results"] for outcome in r["schedulers"].values()
    )
    return 1 if failed else 0
