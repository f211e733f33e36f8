"""Progress lines for the harness's long phases.

At 65,000 nodes creating the cluster, starting an emulator preloaded with it
or waiting for init pods takes minutes; without a line now and then a run
cannot be told from a hung one. Lines go to stderr (the report goes to
stdout), at most one per ``interval`` seconds, so a measured window pays
for a clock read per event and nothing more, and a phase shorter than one
interval prints nothing: small runs (and the tests) stay quiet by themselves.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: Seconds between two progress lines of one phase.
INTERVAL = 10.0


def say(message: str, stream: TextIO | None = None) -> None:
    """One ``[perf]`` line on stderr, flushed (the harness's only output channel)."""
    print(f"[perf]   {message}", file=stream or sys.stderr, flush=True)


class Progress:
    """``what ... done/total in s (rate/s)`` every `interval` seconds, and a last
    line if it printed any."""

    def __init__(
        self,
        what: str,
        total: int,
        *,
        interval: float = INTERVAL,
        stream: TextIO | None = None,
    ) -> None:
        self.what = what
        self.total = total
        self.interval = interval
        self.stream = stream
        self.started = time.monotonic()
        self._next = self.started + interval

    def update(self, done: int) -> None:
        """Print a line if `interval` has passed since the last one."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval
        self._line(done, now)

    def finish(self, done: int) -> None:
        """The last line: how many, in how long (only if the phase lasted an interval)."""
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
