"""Progress lines for the harness's long phases.

At 65,000 nodes creating the cluster, starting an emulator preloaded with it
or waiting for init pods takes minutes; without a line now and then a run
cannot be told from a hung one. Lines go to stderr (the report goes to
stdout), at most one per ``interval`` seconds, so a measured window pays
for a clock read per event and nothing more.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: Seconds between two progress lines of one phase.
INTERVAL = 10.0
#: Phases with fewer items than this finish fast enough to need no progress lines.
MIN_ITEMS = 5000


def say(message: str, stream: TextIO | None = None) -> None:
    """One ``[perf]`` line on stderr, flushed (the harness's only output channel)."""
    print(f"[perf]   {message}", file=stream or sys.stderr, flush=True)


class Progress:
    """``what: done/total (rate/s)`` every `interval` seconds while `done` moves.

    `total` below :data:`MIN_ITEMS` (and not forced with `always`) makes it
    silent: small runs and the tests keep their quiet output.
    """

    def __init__(
        self,
        what: str,
        total: int,
        *,
        interval: float = INTERVAL,
        always: bool = False,
        stream: TextIO | None = None,
    ) -> None:
        self.what = what
        self.total = total
        self.interval = interval
        self.enabled = always or total >= MIN_ITEMS
        self.stream = stream
        self.started = time.monotonic()
        self._next = self.started + interval

    def update(self, done: int) -> None:
        """Print a line if `interval` has passed since the last one."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval
        self._line(done, now)

    def finish(self, done: int) -> None:
        """The last line: how many, in how long (only if the phase printed any)."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started >= self.interval:
            self._line(done, now, final=True)

    def _line(self, done: int, now: float, final: bool = False) -> None:
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        verb = "done:" if final else "..."
        say(
            f"{self.what} {verb} {done:,}/{self.total:,} in {elapsed:.0f} s ({rate:,.0f}/s)",
            self.stream,
        )
