"""What keeps one plugin from costing more than its own say: breakers, a watchdog, abandonment.

Budgets and failure policies are plain numbers and flags on each
:class:`~scheduler.framework.runtime.PluginCall`; this module holds the parts
with state or threads:

- :class:`Breaker`: a plugin that keeps failing is taken out of its profile
  for a cool-down, so a broken plugin costs one fast decision per pod instead
  of a slow failure per pod (or, under ``Ignore``, nothing).
- :class:`Watchdog`: a thread that notices a call running past its budget
  while it still runs. A synchronous hook blocks the event loop, so nothing
  on the loop could notice it; an operator must see which plugin is stuck
  before it returns (or when it never does).
- :func:`abandon`: an ``async`` hook past its budget is cancelled and left
  behind. Awaiting its cancellation would let a hook that swallows
  ``CancelledError`` hold its binding slot (and the shutdown) forever.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from scheduler.observability.logging import get_logger

__all__ = [
    "WATCHDOG",
    "Breaker",
    "CallInfo",
    "IgnoredFailure",
    "Running",
    "Watchdog",
    "abandon",
]

log = get_logger("scheduler.framework.guard")

WATCHDOG_INTERVAL: Final = 0.25
"""Seconds between the watchdog's looks: a stuck call is reported at most this late.
Each look takes the GIL from the scheduling thread, so not much more often."""


@dataclass(slots=True)
class IgnoredFailure:
    """A plugin call whose failure cost only that plugin's say (``failurePolicy: Ignore``)."""

    point: str
    plugin: str
    reason: str  # "error", "overrun" or "circuit_open"
    message: str

    def to_json(self) -> dict[str, str]:
        return {
            "extension_point": self.point,
            "plugin": self.plugin,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(slots=True)
class Breaker:
    """The circuit breaker of one plugin in one profile.

    Counts the *pods* the plugin failed for since its last success, so that
    one pod retried over and over (a pod the plugin cannot handle) never
    opens it: ``threshold`` different pods must fail in a row. ``threshold``
    0 turns it off. Open, it refuses calls until ``cool_down`` has passed;
    then calls run again (half-open) and the first outcome decides.
    """

    threshold: int
    cool_down: float
    clock: Callable[[], float] = time.monotonic
    is_open: bool = False
    #: Whether anything is to reset on success (failures counted, or open).
    failing: bool = False
    opened_at: float = 0.0
    _failed_pods: set[str] = field(default_factory=set)

    def refuses(self) -> bool:
        """Whether a call must not run now (open, and the cool-down not over)."""
        return self.is_open and self.clock() - self.opened_at < self.cool_down

    def retry_in(self) -> float:
        """Seconds until an open breaker lets a call through again."""
        return max(self.cool_down - (self.clock() - self.opened_at), 0.0)

    @property
    def failures(self) -> int:
        """Different pods failed in a row so far."""
        return len(self._failed_pods)

    def succeeded(self) -> bool:
        """Record a successful call; True when that closed an open breaker."""
        was_open = self.is_open
        self._failed_pods.clear()
        self.is_open = self.failing = False
        return was_open

    def failed(self, pod: str) -> bool:
        """Record a failed call for ``pod``; True when the breaker opened (again) now."""
        if self.threshold <= 0:
            return False
        self.failing = True
        if self.is_open:
            # A half-open trial failed: another full cool-down.
            if not self.refuses():
                self.opened_at = self.clock()
                return True
            return False
        self._failed_pods.add(pod)
        if len(self._failed_pods) >= self.threshold:
            self.is_open = True
            self.opened_at = self.clock()
            return True
        return False


class CallInfo(Protocol):
    """What the watchdog reads of a plugin call (a ``PluginCall``)."""

    profile: str
    plugin: str
    point: str
    budget: float


class PodRef(Protocol):
    key: str


Running = tuple[CallInfo, PodRef, float]
"""A call in progress: the call, its pod and its ``perf_counter`` start. A bare
tuple because the scheduling thread publishes one per plugin call."""


class Watchdog:
    """A thread that logs, once per call, a plugin call still running past its budget.

    The scheduling thread publishes its one synchronous call in
    :attr:`current` (a plain attribute write, all the hot path can afford);
    async calls, many at once, register with :meth:`watch`. The thread only
    reads, so it needs no lock; it wakes every :data:`WATCHDOG_INTERVAL`.
    """

    def __init__(self, interval: float = WATCHDOG_INTERVAL) -> None:
        self.interval = interval
        #: The synchronous call in progress on the scheduling thread, if any.
        self.current: Running | None = None
        self._warned_current: Running | None = None
        self._async: dict[int, Running] = {}
        self._warned: set[int] = set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: Calls reported as stuck so far (for tests and diagnostics).
        self.reported = 0

    def ensure_started(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="plugin-watchdog", daemon=True)
                thread.start()
                self._thread = thread

    def watch(self, running: Running) -> None:
        """Watch an async call until :meth:`unwatch` (it ended, or its abandoned task did)."""
        self._async[id(running)] = running

    def unwatch(self, running: Running) -> None:
        self._async.pop(id(running), None)
        self._warned.discard(id(running))

    def over_budget(self, now: float | None = None) -> list[Running]:
        """Watched calls running past their budget right now."""
        now = time.perf_counter() if now is None else now
        calls = [self.current, *list(self._async.values())]
        return [r for r in calls if r is not None and now - r[2] > r[0].budget]

    def check(self, now: float | None = None) -> None:
        """Report every watched call past its budget that was not reported yet."""
        now = time.perf_counter() if now is None else now
        current = self.current
        if (
            current is not None
            and current is not self._warned_current
            and self._report(current, now)
        ):
            self._warned_current = current
        for key, running in list(self._async.items()):
            if key not in self._warned and self._report(running, now):
                self._warned.add(key)

    def _report(self, running: Running, now: float) -> bool:
        call, pod, start = running
        elapsed = now - start
        if elapsed <= call.budget:
            return False
        self.reported += 1
        log.warning(
            f"plugin {call.plugin} hook {call.point} on pod {pod.key} running "
            f"for {elapsed:.1f}s (budget {call.budget:g}s)",
            plugin=call.plugin,
            extension_point=call.point,
            pod=pod.key,
            profile=call.profile,
            elapsed_seconds=round(elapsed, 3),
            budget_seconds=call.budget,
        )
        return True

    def _run(self) -> None:
        while True:
            time.sleep(self.interval)
            try:
                self.check()
            except Exception:  # the watchdog must outlive anything it sees
                log.exception("plugin watchdog check failed")


WATCHDOG: Final = Watchdog()
"""The process's one watchdog: every profile's framework publishes its calls here."""

_abandoned: set[asyncio.Future[Any]] = set()


def abandon(task: asyncio.Future[Any], on_end: Callable[[], None]) -> None:
    """Cancel ``task`` and leave it: nothing waits for it to end.

    The task is kept referenced until it ends (a pending task that is garbage
    collected is destroyed mid-flight) and removed from asyncio's task
    registry: ``asyncio.run`` cancels and then *awaits* every task it knows
    at exit, so a hook that swallows cancellation would otherwise keep the
    process from ever exiting. ``on_end`` runs when (if ever) it ends.
    """
    task.cancel()
    _abandoned.add(task)

    def ended(done: asyncio.Future[Any]) -> None:
        _abandoned.discard(done)
        if not done.cancelled():
            done.exception()  # retrieved: no "exception was never retrieved" noise
        on_end()

    task.add_done_callback(ended)
    if isinstance(task, asyncio.Task):
        asyncio.tasks._unregister_task(task)


def abandoned_count() -> int:
    """Abandoned hook calls of this process still running."""
    return len(_abandoned)
