"""``simulate``: the real daemon against the embedded API server emulator.

Nothing is special-cased: the emulator serves the cluster file over HTTP,
the daemon lists, watches, schedules and binds through kubernetes-asyncio
exactly as in a cluster. The run ends when no pod can make progress: nothing
is active, backing off or being bound, and every binding has come back
through the watch.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.config.models import SchedulerConfiguration
from scheduler.emulator import EmulatorServer
from scheduler.engine.daemon import Daemon
from scheduler.framework.loader import PluginCatalog
from scheduler.kube.client import KubeClient

QUIET_CHECKS = 3  # consecutive idle checks before declaring the run settled
CHECK_INTERVAL = 0.05


@dataclass
class Placement:
    pod: str
    node: str | None
    reason: str


@dataclass
class SimulationResult:
    placements: list[Placement] = field(default_factory=list)
    seconds: float = 0.0
    attempts: int = 0

    @property
    def scheduled(self) -> int:
        return sum(1 for p in self.placements if p.node)

    def to_json(self) -> dict[str, Any]:
        return {
            "placements": [
                {"pod": p.pod, "node": p.node, "reason": p.reason} for p in self.placements
            ],
            "summary": {
                "pods": len(self.placements),
                "scheduled": self.scheduled,
                "unscheduled": len(self.placements) - self.scheduled,
                "attempts": self.attempts,
                "seconds": round(self.seconds, 3),
            },
        }


def _pending_pods(objects: list[dict[str, Any]], scheduler_names: set[str]) -> list[str]:
    out = []
    for obj in objects:
        if obj.get("kind") != "Pod":
            continue
        spec = obj.get("spec") or {}
        meta = obj.get("metadata") or {}
        phase = (obj.get("status") or {}).get("phase")
        if spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            continue
        if (spec.get("schedulerName") or "default-scheduler") in scheduler_names:
            out.append(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
    return out


def _settled(daemon: Daemon) -> bool:
    counts = daemon.queue.counts()
    if counts["active"] or counts["backoff"] or counts["in_flight"] or daemon.scheduler.busy:
        return False
    # Every binding must have come back through the watch.
    return not daemon.cache.assumed


async def simulate(
    objects: list[dict[str, Any]],
    config: SchedulerConfiguration,
    catalog: PluginCatalog,
    *,
    seed: int | None = 0,
    max_seconds: float = 600.0,
    progress: Callable[[str], None] | None = None,
) -> SimulationResult:
    config = config.model_copy(
        update={
            "leader_election": config.leader_election.model_copy(update={"leader_elect": False})
        }
    )
    started = time.monotonic()
    # The volume controller completes what the scheduler's volume binding starts
    # (claims bound, WaitForFirstConsumer volumes provisioned), as a cluster would.
    async with EmulatorServer(objects, volume_controller=True) as server:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
            conn = config.client_connection
            client = await KubeClient.from_kubeconfig(
                str(kubeconfig), qps=max(conn.qps, 5000.0), burst=max(conn.burst, 5000)
            )
        try:
            daemon = Daemon(config, catalog, client, serve_health=False, seed=seed)
            tracked = _pending_pods(objects, set(daemon.profiles))
            run = asyncio.create_task(daemon.run(install_signal_handlers=False))
            leading = asyncio.create_task(daemon.leading.wait())
            await asyncio.wait({run, leading}, return_when=asyncio.FIRST_COMPLETED)
            if run.done():
                run.result()  # start-up failed: raise its error
            quiet = 0
            last_report = 0.0
            while quiet < QUIET_CHECKS:
                await asyncio.sleep(CHECK_INTERVAL)
                if run.done():
                    break
                quiet = quiet + 1 if _settled(daemon) else 0
                now = time.monotonic()
                if progress is not None and now - last_report >= 1.0:
                    last_report = now
                    counts = daemon.queue.counts()
                    progress(
                        f"scheduled {daemon.scheduler.scheduled}/{len(tracked)} pods, "
                        f"{counts['active'] + counts['backoff']} queued, "
                        f"{counts['unschedulable'] + counts['gated']} unschedulable"
                    )
                if now - started > max_seconds:
                    raise TimeoutError(f"simulation did not settle within {max_seconds:g}s")
            daemon.request_stop()
            await run
            store = daemon.pod_informer.store
            result = SimulationResult(
                seconds=time.monotonic() - started, attempts=daemon.scheduler.attempts
            )
            for key in tracked:
                obj = store.get(key)
                node = ((obj or {}).get("spec") or {}).get("nodeName") or None
                if node:
                    reason = "scheduled"
                elif obj is None:
                    reason = "pod no longer exists"
                else:
                    reason = daemon.io.last_failure.get(key, "not scheduled yet")
                result.placements.append(Placement(key, node, reason))
            return result
        finally:
            await client.close()


def print_progress(message: str) -> None:
    print(f"\r{message}", end="", file=sys.stderr, flush=True)
