"""``simulate``: the real daemon against the embedded API server emulator.

Nothing is special-cased: the emulator serves the cluster file over HTTP,
the daemon lists, watches, schedules and binds through kubernetes-asyncio
exactly as in a cluster. A fake kubelet starts bound pods and completes
deletions (a preemption's victims go away, as kubelets make them). The run
ends when no pod can make progress: nothing is active, in flight or being
bound, no preemption is still evicting or waiting for its victims to go,
every binding has come back through the watch, and every pod still queued is
either

* unschedulable (or gated): only a cluster event could move it, and the run
  itself makes no more events; or
* **stuck on an error**: a pod whose attempts end in Error (a plugin that
  raises, a failing API call) is not the pod's fault, so the daemon retries it
  after a backoff forever - in a cluster something may fix it, in a
  simulation nothing will. A backing-off pod counts as stuck once its last
  ``ERROR_REPEATS`` attempts all failed with the *same* error message while
  the emulated cluster did not change (no write other than Events and the
  status reports schedulers make about pending pods; see
  :class:`ClusterChanges`), or once its last ``ERROR_LIMIT`` attempts were
  all errors, whatever changed.

Why this rule: a scheduling attempt's outcome depends on the cluster and on
the plugins' own state. Repeating the same error in an unchanged cluster is
the best evidence available that the next attempt will fail the same way;
requiring a few repeats (not one) leaves room for plugins that fail a couple
of times and then recover (a warming cache, a retried call). Pods that are
genuinely progressing are never cut short by it: a pod waiting on Permit or in
a slow PreBind is in flight, and a pod whose errors clear up when something
else happens (a WaitForFirstConsumer volume the emulated volume controller
provisions) sees the cluster change, which restarts its count. The second
bound, ``ERROR_LIMIT`` errors in a row, keeps the run finite when a plugin
writes to the cluster on every failing attempt or its message never repeats
(it embeds a counter or a time). Both are bounded in time: with kube's
default backoffs (1 s doubling to 10 s) a pod is stuck about 3 s after its
first error in a quiet cluster, and at most about 45 s after it anyway.

Such a pod's reason in the report is its last error, as the daemon recorded
it in its FailedScheduling event (an error names the plugin that failed).
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
from scheduler.daemon.daemon import Daemon
from scheduler.engine.queue import BACKOFF, scheduling_relevant_change
from scheduler.framework.loader import PluginCatalog
from scheduler.kube.client import KubeClient
from scheduler.simulation.emulator import EmulatorServer
from scheduler.simulation.emulator.resources import ResourceType
from scheduler.simulation.emulator.watch import Change
from scheduler.state.pod import InvalidPodError, PodInfo

QUIET_CHECKS = 3  # consecutive idle checks before declaring the run settled
CHECK_INTERVAL = 0.05
#: Attempts in a row failing with the same error in an unchanged cluster after
#: which a pod is stuck. Three, not two: a plugin may well fail twice and recover.
ERROR_REPEATS = 3
#: Attempts in a row failing with an error after which a pod is stuck whatever
#: changed meanwhile, so that the run ends (about 45 s with default backoffs).
ERROR_LIMIT = 8


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
    #: Pods running at the start that are gone at the end: preemption evicted them.
    evicted: list[str] = field(default_factory=list)

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
            "evicted": list(self.evicted),
        }


def _running_pods(objects: list[dict[str, Any]]) -> list[str]:
    """``namespace/name`` of the cluster file's pods already on a node."""
    return [
        f"{(obj.get('metadata') or {}).get('namespace') or 'default'}/"
        f"{(obj.get('metadata') or {}).get('name')}"
        for obj in objects
        if obj.get("kind") == "Pod" and (obj.get("spec") or {}).get("nodeName")
    ]


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


class ClusterChanges:
    """Counts the emulator's writes that could change the outcome of an attempt.

    Left out: Events (the daemon records one per failed attempt, and nothing
    schedules on them) and status-only writes of pods without a node, which
    are what schedulers report about pending pods (PodScheduled conditions,
    nominatedNodeName: the queue holds nominations itself); the daemon ignores
    those updates too (``scheduling_relevant_change``). Everything else -
    a binding, a node, a volume the volume controller provisions, an object a
    plugin writes - counts.
    """

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, rt: ResourceType, change: Change) -> None:
        if rt.kind == "Event":
            return
        if rt.kind == "Pod" and not rt.group and change.prev is not None:
            old, new = change.prev.obj, change.entry.obj
            unassigned = not (old.get("spec") or {}).get("nodeName") and not (
                new.get("spec") or {}
            ).get("nodeName")
            if unassigned and not scheduling_relevant_change(old, new):
                return
        self.count += 1


@dataclass
class _ErrorStreak:
    message: str
    attempts: int  # the pod's attempt count when last seen
    errors: int  # its consecutive errors when last seen
    since: int  # first attempt of the streak seen in the current cluster state
    changes: int  # ClusterChanges.count when ``since`` was set


class ErrorStreaks:
    """Which backing-off pods are stuck on an error (see the module docstring).

    Fed every check with each backing-off pod's attempt and error counts and
    last recorded failure. Pods back off at least a second after an error
    (``podInitialBackoffSeconds`` is a whole number above 0), far longer than
    a check interval, so every failed attempt is seen with its own message.
    """

    def __init__(self) -> None:
        self._streaks: dict[str, _ErrorStreak] = {}

    def stuck(self, key: str, attempts: int, errors: int, message: str, changes: int) -> bool:
        """Whether the pod, last seen failing with ``message``, is stuck."""
        if errors <= 0:
            self._streaks.pop(key, None)
            return False
        streak = self._streaks.get(key)
        continued = (
            streak is not None
            and streak.message == message
            and attempts >= streak.attempts
            # every attempt since was an error (a rejection resets the count)
            and errors - streak.errors == attempts - streak.attempts
        )
        if streak is None or not continued:
            streak = _ErrorStreak(message, attempts, errors, attempts, changes)
            self._streaks[key] = streak
        elif streak.changes != changes:
            # The cluster changed: that attempt may have seen the old state or
            # the new one, so the count restarts from it.
            streak.since, streak.changes = attempts, changes
        streak.attempts, streak.errors = attempts, errors
        return attempts - streak.since + 1 >= ERROR_REPEATS or errors >= ERROR_LIMIT


def _stuck_on_errors(
    daemon: Daemon, tracked: list[str], streaks: ErrorStreaks, changes: ClusterChanges
) -> list[str]:
    """The tracked pods backing off that are stuck on an error."""
    queue = daemon.queue
    stuck = []
    for key in tracked:
        info = queue.get(key)
        if info is None or queue.where(key) != BACKOFF:
            continue
        message = daemon.io.last_failure.get(key, "")
        if streaks.stuck(key, info.attempts, info.consecutive_errors, message, changes.count):
            stuck.append(key)
    return stuck


def _settled(daemon: Daemon, stuck: int) -> bool:
    """No pod can make progress: see the module docstring.

    ``stuck`` is how many backing-off pods are stuck on an error; any other
    pod backing off (or untracked, as a pod a plugin created) will be tried.
    """
    counts = daemon.queue.counts()
    if (
        counts["active"]
        or counts["backoff"] > stuck
        or counts["in_flight"]
        or daemon.scheduler.busy
        or daemon.preempting
    ):
        return False
    # Every binding must have come back through the watch.
    return not daemon.cache.assumed


def _never_tried(daemon: Daemon, obj: dict[str, Any]) -> str:
    """Why a pod was never tried: held at PreEnqueue (a gate, a gang short of its
    minCount), else simply not scheduled yet."""
    try:
        status = daemon.pre_enqueue_status(PodInfo.from_dict(obj))
    except InvalidPodError:
        return "not scheduled yet"
    if status.is_success():
        return "not scheduled yet"
    who = f" by {status.plugin}" if status.plugin else ""
    return f"not tried: held at PreEnqueue{who}: {status.message()}"


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
    # (claims bound, WaitForFirstConsumer volumes provisioned), as a cluster would;
    # the claim controller creates pods' ResourceClaims from their templates.
    changes = ClusterChanges()
    async with EmulatorServer(
        objects, volume_controller=True, claim_controller=True, fake_kubelet=True
    ) as server:
        server.store.listeners.append(changes)
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
            streaks = ErrorStreaks()
            quiet = 0
            last_report = 0.0
            while quiet < QUIET_CHECKS:
                await asyncio.sleep(CHECK_INTERVAL)
                if run.done():
                    break
                stuck = _stuck_on_errors(daemon, tracked, streaks, changes)
                quiet = quiet + 1 if _settled(daemon, len(stuck)) else 0
                now = time.monotonic()
                if progress is not None and now - last_report >= 1.0:
                    last_report = now
                    counts = daemon.queue.counts()
                    progress(
                        f"scheduled {daemon.scheduler.scheduled}/{len(tracked)} pods, "
                        f"{counts['active'] + counts['backoff'] - len(stuck)} queued, "
                        f"{counts['unschedulable'] + counts['gated']} unschedulable, "
                        f"{len(stuck)} failing with errors"
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
                elif key in daemon.io.last_failure:
                    reason = daemon.io.last_failure[key]
                else:
                    reason = _never_tried(daemon, obj)
                result.placements.append(Placement(key, node, reason))
            result.evicted = [key for key in _running_pods(objects) if store.get(key) is None]
            return result
        finally:
            await client.close()


def print_progress(message: str) -> None:
    print(f"\r{message}", end="", file=sys.stderr, flush=True)
