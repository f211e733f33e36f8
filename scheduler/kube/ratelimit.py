"""Client-side rate limiting with priorities (``clientConnection.qps``/``burst``).

kube-scheduler throttles its own requests with one token bucket shared by all
of them. A plain FIFO bucket lets a storm of FailedScheduling events queue up
in front of the bindings that actually make progress, so here the bucket is
still one (the API server sees at most ``qps`` sustained, ``burst`` peak) but
its waiters are served by priority: a waiting ``"high"`` request (binding,
status patch, list/watch) always gets the next token before any waiting
``"low"`` one (events). Within one priority the order is FIFO.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Literal

Priority = Literal["high", "low"]
PRIORITIES: tuple[Priority, ...] = ("high", "low")


class PriorityRateLimiter:
    """A token bucket (``qps`` refill, ``burst`` capacity) with prioritised waiters.

    ``qps <= 0`` disables limiting, as an unset limit would otherwise stall
    every request forever.
    """

    def __init__(
        self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.qps = float(qps)
        self.burst = max(int(burst), 1)
        self._clock = clock
        self._tokens = float(self.burst)
        self._stamp = clock()
        self._waiters: dict[Priority, deque[asyncio.Future[None]]] = {
            p: deque() for p in PRIORITIES
        }
        self._timer: asyncio.TimerHandle | None = None
        self.granted: dict[Priority, int] = dict.fromkeys(PRIORITIES, 0)

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def waiting(self, priority: Priority | None = None) -> int:
        """How many callers are queued (at one priority, or in total)."""
        queues = [self._waiters[priority]] if priority else list(self._waiters.values())
        return sum(1 for q in queues for f in q if not f.done())

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._stamp
        self._stamp = now
        if elapsed > 0:
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)

    def _ahead(self, priority: Priority) -> bool:
        """Is anyone queued who must be served before a new ``priority`` caller?"""
        for p in PRIORITIES:
            queue = self._waiters[p]
            while queue and queue[0].done():
                queue.popleft()
            if queue:
                return True
            if p == priority:
                return False
        return False

    async def acquire(self, priority: Priority = "high") -> None:
        """Wait for a token; higher-priority waiters are always served first."""
        if self.unlimited:
            self.granted[priority] += 1
            return
        if priority not in self._waiters:
            raise ValueError(f"unknown priority {priority!r}; expected 'high' or 'low'")
        self._refill()
        if self._tokens >= 1.0 and not self._ahead(priority):
            self._tokens -= 1.0
            self.granted[priority] += 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters[priority].append(future)
        self._schedule()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                # Granted just as we were cancelled: hand the token on.
                self._tokens = min(float(self.burst), self._tokens + 1.0)
                self.granted[priority] -= 1
                self._dispatch()
            raise

    def _schedule(self) -> None:
        if self._timer is not None:
            return
        self._refill()
        delay = max((1.0 - self._tokens) / self.qps, 0.0)
        self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._dispatch()

    def _dispatch(self) -> None:
        self._refill()
        for priority in PRIORITIES:
            queue = self._waiters[priority]
            while queue and self._tokens >= 1.0:
                future = queue.popleft()
                if future.done():
                    continue
                self._tokens -= 1.0
                self.granted[priority] += 1
                future.set_result(None)
        if self.waiting() and self._timer is None:
            self._schedule()
