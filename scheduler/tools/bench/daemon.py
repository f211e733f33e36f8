"""Daemon throughput and latency: 1,000 pods onto 500 nodes, end to end over HTTP.

Three processes, so that none measures another's CPU: the API server
emulator (500 nodes preloaded), a load process that creates the pods and
watches them, and this process running the real :class:`Daemon` with the
default profile. The load process stamps, on its own clock, when each pod's
creation and its binding come through its watch; latency is the difference
(pod creation -> bound, as seen by a client), throughput is bindings per
second, as an overall rate and as percentiles of one-second samples
(scheduler_perf's way of reporting).

    python -m scheduler.tools.bench.daemon [--nodes 500] [--pods 1000] [--qps 5000]

Client-side rate limiting is raised to ``--qps`` (kube-scheduler's default
of 50 would cap bindings at 50/s and measure the limiter, not the scheduler;
scheduler_perf raises it too).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from scheduler.tools.bench.objects import bench_node

NAMESPACE = "bench"
SCHEDULER_NAME = "pluggable-scheduler"


def cluster_objects(nodes: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    ]
    objects += [bench_node(f"node-{i:04d}", i, cpu="32", memory="128Gi") for i in range(nodes)]
    return objects


def pod_body(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": NAMESPACE, "labels": {"app": "bench"}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    }


# -- emulator process ----------------------------------------------------------------


def _serve_emulator(nodes: int, conn: multiprocessing.connection.Connection) -> None:
    from scheduler.simulation.emulator import EmulatorServer

    async def serve() -> None:
        server = EmulatorServer(cluster_objects(nodes), record_requests=False)
        await server.start()
        conn.send(server.url)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


# -- load process --------------------------------------------------------------------


async def _load(url: str, pods: int, concurrency: int, deadline: float) -> dict[str, Any]:
    created: dict[str, float] = {}
    bound: dict[str, float] = {}
    done = asyncio.Event()
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    connector = aiohttp.TCPConnector(limit=concurrency + 4)
    async with aiohttp.ClientSession(url, connector=connector, timeout=timeout) as session:
        async with session.get(f"/api/v1/namespaces/{NAMESPACE}/pods") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]

        async def watch() -> None:
            params = {"watch": "true", "resourceVersion": rv}
            async with session.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params=params) as r:
                async for line in r.content:
                    if not line.strip():
                        continue
                    now = time.perf_counter()
                    event = orjson.loads(line)
                    obj = event.get("object") or {}
                    name = str((obj.get("metadata") or {}).get("name"))
                    if event.get("type") == "ADDED":
                        created.setdefault(name, now)
                    if (obj.get("spec") or {}).get("nodeName") and name not in bound:
                        bound[name] = now
                        if len(bound) == pods:
                            done.set()
                            return

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.2)  # the watch is open before the first create
        slots = asyncio.Semaphore(concurrency)

        async def create(i: int) -> None:
            async with (
                slots,
                session.post(
                    f"/api/v1/namespaces/{NAMESPACE}/pods",
                    data=orjson.dumps(pod_body(i)),
                    headers={"Content-Type": "application/json"},
                ) as r,
            ):
                if r.status != 201:
                    raise RuntimeError(f"create failed: {r.status} {await r.text()}")

        started = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(pods)))
        created_all = time.perf_counter()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), deadline)
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    return {
        "created": created,
        "bound": bound,
        "started": started,
        "creation_seconds": created_all - started,
    }


def _run_load(
    url: str,
    pods: int,
    concurrency: int,
    deadline: float,
    conn: multiprocessing.connection.Connection,
) -> None:
    conn.send(asyncio.run(_load(url, pods, concurrency, deadline)))


# -- the daemon (this process) ---------------------------------------------------------


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


async def _bench(args: argparse.Namespace) -> int:
    from scheduler.config.loading import load_config
    from scheduler.daemon.daemon import Daemon
    from scheduler.framework.loader import PluginCatalog
    from scheduler.kube.client import KubeClient
    from scheduler.observability.logging import QUIET, configure_logging
    from scheduler.simulation.emulator.kubeconfig import write_kubeconfig

    configure_logging("text", QUIET)
    ctx = multiprocessing.get_context("spawn")
    emu_recv, emu_send = ctx.Pipe(duplex=False)
    emulator = ctx.Process(target=_serve_emulator, args=(args.nodes, emu_send), daemon=True)
    emulator.start()
    loop = asyncio.get_running_loop()
    url = await loop.run_in_executor(None, emu_recv.recv)
    load_proc: multiprocessing.process.BaseProcess | None = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", url)
            client = await KubeClient.from_kubeconfig(
                str(kubeconfig), qps=args.qps, burst=int(args.qps)
            )
        config = load_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "pluggableScheduler": {"serverAddress": "127.0.0.1:0"},
            }
        )
        daemon = Daemon(config, PluginCatalog.discover(), client, serve_health=False, seed=0)
        run = asyncio.create_task(daemon.run(install_signal_handlers=False))
        await daemon.leading.wait()
        print(
            f"emulator (own process) at {url} with {len(daemon.cache.table)} nodes; "
            f"daemon in this process; load+watch in a third process",
            file=sys.stderr,
        )
        load_recv, load_send = ctx.Pipe(duplex=False)
        load_proc = ctx.Process(
            target=_run_load,
            args=(url, args.pods, args.concurrency, args.timeout, load_send),
            daemon=True,
        )
        load_proc.start()
        result: dict[str, Any] = await loop.run_in_executor(None, load_recv.recv)
        daemon.request_stop()
        await run
        await client.close()
    finally:
        if load_proc is not None:
            load_proc.terminate()
        emulator.terminate()

    created, bound = result["created"], result["bound"]
    latencies = [bound[n] - created[n] for n in bound if n in created]
    if len(bound) < args.pods:
        print(f"only {len(bound)}/{args.pods} pods were bound within {args.timeout}s")
        return 1
    first, last = min(created.values()), max(bound.values())
    seconds = last - first
    samples: dict[int, int] = {}
    for t in bound.values():
        samples[int(t - first)] = samples.get(int(t - first), 0) + 1
    full = [samples.get(s, 0) for s in range(int(seconds))] or [len(bound)]
    print(f"pods: {args.pods} on {args.nodes} nodes (default profile, qps {args.qps:g})")
    print(f"pod creation took {result['creation_seconds']:.2f}s ({args.concurrency} in flight)")
    print(
        f"throughput: {args.pods / seconds:.0f} pods/s overall "
        f"({seconds:.2f}s from first create to last bound)"
    )
    print(
        "one-second samples (pods/s): "
        f"avg {statistics.mean(full):.0f}, p50 {_percentile(full, 50):.0f}, "
        f"p90 {_percentile(full, 90):.0f}, p99 {_percentile(full, 99):.0f}"
    )
    print(
        "latency create -> bound: "
        f"p50 {_percentile(latencies, 50) * 1000:.0f} ms, "
        f"p90 {_percentile(latencies, 90) * 1000:.0f} ms, "
        f"p99 {_percentile(latencies, 99) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms"
    )
    print(f"scheduling attempts: {daemon.scheduler.attempts}, bound: {daemon.scheduler.scheduled}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--qps", type=float, default=5000.0)
    parser.add_argument("--concurrency", type=int, default=32, help="pod creations in flight")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for binds")
    args = parser.parse_args(argv)
    return asyncio.run(_bench(args))


if __name__ == "__main__":
    raise SystemExit(main())
