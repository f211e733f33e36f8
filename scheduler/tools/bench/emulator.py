"""Emulator throughput: bindings/s and watch events/s at scheduler-benchmark scale.

The emulator backs the scheduler's benchmarks, so it must never be what they
measure. This loads 5,000 nodes and 10,000 pending pods into an emulator in
its own process (pinned to one core when the OS allows), binds every pod
from a client process with a pool of keep-alive connections while three
watchers follow all pods, and prints sustained rates as averages and
percentiles of one-second samples.

    python -m scheduler.tools.bench.emulator [--nodes 5000] [--pods 10000] [--watchers 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import multiprocessing.connection
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import aiohttp
import orjson

from scheduler.tools.bench.objects import bench_node


def make_cluster(nodes: int, pods: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        bench_node(f"node-{i:05d}", i, cpu="32", memory="128Gi") for i in range(nodes)
    ]
    for i in range(pods):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"pod-{i:05d}",
                    "namespace": "bench",
                    "labels": {"app": f"app-{i % 50}"},
                },
                "spec": {
                    "schedulerName": "pluggable-scheduler",
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ],
                },
            }
        )
    return objects


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpu})


def _serve(conn: multiprocessing.connection.Connection, nodes: int, pods: int, cpu: int) -> None:
    _pin(cpu)
    from scheduler.simulation.emulator import EmulatorServer

    async def main() -> None:
        server = EmulatorServer(make_cluster(nodes, pods))
        await server.start()
        conn.send(server.url)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_reader(conn.fileno(), stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(main())


def _rates(samples: list[int]) -> dict[str, float]:
    if not samples:
        return {"avg": 0.0, "p50": 0.0, "p10": 0.0, "max": 0.0}
    ordered = sorted(samples)
    return {
        "avg": statistics.fmean(samples),
        "p50": float(ordered[len(ordered) // 2]),
        "p10": float(ordered[max(0, len(ordered) // 10 - 1)] if len(ordered) >= 10 else ordered[0]),
        "max": float(ordered[-1]),
    }


async def run_client(
    url: str, pods: int, nodes: int, watchers: int, concurrency: int
) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=concurrency + watchers + 2)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"{url}/api/v1/pods", params={"limit": "1"}) as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        event_counts = [0] * watchers
        done = asyncio.Event()

        async def follow(i: int) -> None:
            params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true"}
            async with session.get(
                f"{url}/api/v1/pods", params=params, timeout=aiohttp.ClientTimeout(total=None)
            ) as resp:
                async for chunk in resp.content.iter_any():
                    event_counts[i] += chunk.count(b"\n")
                    if all(c >= pods for c in event_counts):
                        done.set()
                    if event_counts[i] >= pods:
                        return

        follow_tasks = [asyncio.create_task(follow(i)) for i in range(watchers)]
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(pods):
            queue.put_nowait(i)
        bound = 0
        failures = 0
        latencies: list[float] = []

        async def binder() -> None:
            nonlocal bound, failures
            while True:
                try:
                    i = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                name = f"pod-{i:05d}"
                body = orjson.dumps(
                    {
                        "apiVersion": "v1",
                        "kind": "Binding",
                        "metadata": {"name": name},
                        "target": {"kind": "Node", "name": f"node-{i % nodes:05d}"},
                    }
                )
                started = time.perf_counter()
                async with session.post(
                    f"{url}/api/v1/namespaces/bench/pods/{name}/binding",
                    data=body,
                    headers={"Content-Type": "application/json"},
                ) as resp:
                    await resp.read()
                    if resp.status == 201:
                        bound += 1
                    else:
                        failures += 1
                latencies.append(time.perf_counter() - started)

        bind_samples: list[int] = []
        event_samples: list[int] = []

        async def sample() -> None:
            last_bound, last_events = 0, 0
            while True:
                await asyncio.sleep(1.0)
                total_events = sum(event_counts)
                bind_samples.append(bound - last_bound)
                event_samples.append(total_events - last_events)
                last_bound, last_events = bound, total_events

        await asyncio.sleep(0.2)  # let the watches connect
        sampler = asyncio.create_task(sample())
        started = time.perf_counter()
        await asyncio.gather(*(binder() for _ in range(concurrency)))
        bind_elapsed = time.perf_counter() - started
        try:
            async with asyncio.timeout(60):
                await done.wait()
        except TimeoutError:
            pass
        events_elapsed = time.perf_counter() - started
        sampler.cancel()
        for task in follow_tasks:
            task.cancel()
        latencies.sort()
        full_bind = [s for s in bind_samples if s][:-1] or bind_samples
        full_events = [s for s in event_samples if s][:-1] or event_samples
        return {
            "nodes": nodes,
            "pods": pods,
            "watchers": watchers,
            "concurrency": concurrency,
            "bindings": bound,
            "binding_failures": failures,
            "bindings_per_s": bound / bind_elapsed,
            "binding_samples": _rates(full_bind),
            "binding_latency_ms": {
                "p50": latencies[len(latencies) // 2] * 1000 if latencies else 0.0,
                "p99": latencies[int(len(latencies) * 0.99)] * 1000 if latencies else 0.0,
            },
            "watch_events": sum(event_counts),
            "watch_events_per_s": sum(event_counts) / events_elapsed,
            "watch_event_samples": _rates(full_events),
            "all_events_delivered": all(c >= pods for c in event_counts),
        }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scheduler.tools.bench.emulator", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--watchers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32, help="bindings in flight")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    loading = time.perf_counter()
    proc = ctx.Process(target=_serve, args=(child, args.nodes, args.pods, 0), daemon=True)
    proc.start()
    try:
        if not parent.poll(300):
            print("error: the emulator did not start", file=sys.stderr)
            return 1
        url = parent.recv()
        load_s = time.perf_counter() - loading
        _pin(1)
        result = asyncio.run(
            run_client(url, args.pods, args.nodes, args.watchers, args.concurrency)
        )
    finally:
        parent.send("stop")
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    result["startup_s"] = load_s
    if args.json:
        print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    else:
        samples, latency = result["binding_samples"], result["binding_latency_ms"]
        print(
            f"emulator: {args.nodes} nodes, {args.pods} pods loaded in {load_s:.1f}s "
            "(server pinned to one core)"
        )
        print(
            f"bindings:      {result['bindings_per_s']:8.0f}/s sustained "
            f"(1s samples avg {samples['avg']:.0f}, p50 {samples['p50']:.0f}, "
            f"p10 {samples['p10']:.0f}); latency p50 {latency['p50']:.1f} ms, "
            f"p99 {latency['p99']:.1f} ms; failures {result['binding_failures']}"
        )
        print(
            f"watch events:  {result['watch_events_per_s']:8.0f}/s to {args.watchers} watchers "
            f"(1s samples avg {result['watch_event_samples']['avg']:.0f}); "
            f"{result['watch_events']} delivered, complete: {result['all_events_delivered']}"
        )
    return 0 if result["all_events_delivered"] and not result["binding_failures"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
