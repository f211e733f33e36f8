"""The daemon's control plane on a thread of its own: health, metrics, the lease, stops.

Plugins run synchronous hooks inline on the scheduling loop, and Python cannot
pre-empt a hook that sleeps or loops forever. If the health server, the leader
elector and the SIGTERM handler ran on that same loop, one such hook would
freeze them all: probes time out, the Lease goes unrenewed (a standby takes it
while the stuck leader may still bind) and the process ignores SIGTERM.

So ``run`` gives them a thread with its own event loop and its own API client
(the lease's requests then never queue behind the scheduler's, nor behind its
rate limiter). The GIL is handed over every ``sys.getswitchinterval()`` (5 ms)
even while a hook spins in pure Python, and is released while it sleeps, so
this thread always gets to run. What it does:

- serves ``/healthz`` ``/livez`` ``/readyz`` ``/metrics``; liveness includes the
  age of the scheduling loop's heartbeat (``scheduling-loop``), which fails
  after ``schedulingLoopStallLimit`` so the kubelet restarts a replica whose
  loop a hook holds for good, the only way such a hook can be taken out;
- campaigns for and renews the Lease. Starting and stopping the scheduling
  work is marshalled onto the scheduling loop (``call_soon_threadsafe``);
  the bind gate reads the elector's state directly, so a leader that lost or
  cannot renew the lease stops binding at once even while its loop is busy;
- turns SIGTERM/SIGINT (caught in the main thread by ``signal.signal``,
  which runs between bytecodes, also inside a looping hook, and interrupts
  ``time.sleep``) into a stop request to the scheduling loop, and ends the
  process itself with :data:`EXIT_STUCK` (or :data:`EXIT_LOST_LEASE` after a
  lost lease) if that loop has not finished within ``shutdownGracePeriod``.
  Such an exit releases nothing: a loop that is stuck might still bind when
  it resumes, so the lease must expire rather than be handed over.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final, TypeVar

import structlog

from scheduler.kube.client import KubeClient
from scheduler.kube.leaderelection import LeaderElector

# The daemon's exit code after a lost lease (as kube-scheduler's); defined
# here too since the daemon module imports this one.
EXIT_LOST_LEASE: Final = 1

if TYPE_CHECKING:
    from scheduler.daemon.daemon import Daemon

__all__ = ["EXIT_STUCK", "HEARTBEAT_EVERY", "ClientFactory", "ControlThread"]

log = structlog.get_logger("scheduler.control")

#: Exit code of a process the control thread ended because the scheduling
#: loop did not finish a stop within the grace period (a plugin held it).
EXIT_STUCK: Final = 3

#: How often the scheduling loop proves it runs (see ``Daemon._heartbeat``).
HEARTBEAT_EVERY: Final = 0.1

#: How long the scheduling loop waits for the control thread to start or stop.
_THREAD_WAIT: Final = 10.0

ClientFactory = Callable[[], Awaitable[KubeClient]]
"""Makes the control thread's own API client, on the control thread's loop."""

T = TypeVar("T")


class ControlThread:
    """Runs the health server and the leader elector of ``daemon`` off its scheduling loop.

    Created and started by :meth:`Daemon.run` (only when the daemon was given
    a ``control_client`` factory, as ``pluggable-scheduler run`` does);
    methods without a leading underscore are called from the scheduling loop's
    thread, the others run on the control loop.
    """

    def __init__(
        self,
        daemon: Daemon,
        client_factory: ClientFactory,
        *,
        grace: float,
        stall_limit: float,
        exit_process: Callable[[int], None] = os._exit,
    ) -> None:
        self.daemon = daemon
        self._client_factory = client_factory
        self.grace = grace
        self.stall_limit = stall_limit
        self._exit_process = exit_process
        self._scheduling_loop: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: KubeClient | None = None
        self.elector: LeaderElector | None = None
        self._elector_task: asyncio.Task[None] | None = None
        self._deadline: asyncio.TimerHandle | None = None

    # -- called from the scheduling loop's thread ---------------------------------

    async def start(self) -> None:
        """Start the thread; returns once the health server listens (or raises its error)."""
        self._scheduling_loop = asyncio.get_running_loop()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._thread_main, args=(ready,), name="scheduler-control", daemon=True
        )
        self._thread.start()
        await asyncio.wait_for(asyncio.wrap_future(ready), _THREAD_WAIT)

    def may_bind(self) -> bool:
        """The bind gate: we lead and renewed recently (read from the elector, lock-free)."""
        elector = self.elector
        return elector is not None and elector.holds_lease

    @property
    def client(self) -> KubeClient:
        """The control thread's own API client (for the elector); valid once started."""
        if self._client is None:
            raise RuntimeError("the control thread is not started")
        return self._client

    def campaign(self, elector: LeaderElector) -> None:
        """Run ``elector`` (built on :attr:`client`) on the control loop.

        While it leads, ``daemon._lead`` runs on the scheduling loop; the
        elector's ``on_lost`` should reach the scheduling loop through
        :meth:`to_scheduling`.
        """
        self.elector = elector
        self._call(self._start_campaign)

    async def release(self) -> None:
        """Release the lease (graceful stop of a healthy loop), on the control loop."""
        elector = self.elector
        if elector is not None:
            await self._await(elector.release())

    def request_stop(self, reason: str) -> None:
        """Ask for a stop: safe from a signal handler (no lock is taken here)."""
        self._call(self._stop_requested, reason)

    async def stop(self) -> None:
        """Stop serving and campaigning (without releasing) and end the thread."""
        if self._loop is None or self._thread is None:
            return
        with contextlib.suppress(Exception):
            await self._await(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join, _THREAD_WAIT)

    # -- marshalling ------------------------------------------------------------------

    def _call(self, callback: Callable[..., object], *args: Any) -> None:
        loop = self._loop
        if loop is not None:
            # Closed (the thread ended) between the look and the call: nothing to do.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(callback, *args)

    async def _await(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the control loop and await it from the scheduling loop."""
        assert self._loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    def to_scheduling(self, callback: Callable[..., object], *args: Any) -> None:
        """Have the scheduling loop call ``callback`` as soon as it runs (any thread)."""
        loop = self._scheduling_loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(callback, *args)

    # -- the thread -------------------------------------------------------------------

    def _thread_main(self, ready: concurrent.futures.Future[None]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._open())
        except BaseException as error:
            ready.set_exception(error)
            loop.close()
            return
        ready.set_result(None)
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _open(self) -> None:
        health = self.daemon.health
        if health is not None:
            health.add_liveness_check("scheduling-loop", self._heartbeat_check)
            await health.start()
        try:
            self._client = await self._client_factory()
        except BaseException:
            if health is not None:
                await health.stop()
            raise

    async def _close(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        if self._elector_task is not None and not self._elector_task.done():
            self._elector_task.cancel()
            await asyncio.gather(self._elector_task, return_exceptions=True)
        if self.daemon.health is not None:
            await self.daemon.health.stop()
        if self._client is not None:
            await self._client.close()

    def _heartbeat_check(self) -> bool | str:
        age = time.monotonic() - self.daemon.heartbeat_at
        if age <= self.stall_limit:
            return True
        return (
            f"the scheduling loop has not run for {age:.1f}s (schedulingLoopStallLimit "
            f"{self.stall_limit:g}s): a plugin hook is probably holding it"
        )

    # -- leadership (control loop) ------------------------------------------------------

    def _start_campaign(self) -> None:
        elector = self.elector
        assert elector is not None
        self._elector_task = asyncio.create_task(self._campaign(elector), name="leader election")

    async def _campaign(self, elector: LeaderElector) -> None:
        try:
            await elector.run(self._lead, self._stopped_leading)
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            # The leading work failed (the elector released the lease) or the
            # elector did: the daemon exits non-zero, as when a task of its own ends.
            self.to_scheduling(self.daemon.control_failed, repr(error))

    async def _lead(self) -> None:
        """While we lead: the scheduling work, on the scheduling loop."""
        assert self._scheduling_loop is not None
        future = asyncio.run_coroutine_threadsafe(self.daemon._lead(), self._scheduling_loop)
        # Cancelling the wrapper (leadership ended) cancels the task over there.
        await asyncio.wrap_future(future)

    def _stopped_leading(self) -> None:
        self.to_scheduling(self.daemon._lost_lease)
        if not self.daemon.stopping:
            self._arm_deadline("leader election lost", EXIT_LOST_LEASE)

    # -- stopping (control loop) ------------------------------------------------------

    def _stop_requested(self, reason: str) -> None:
        log.info("stop requested", reason=reason)
        self.to_scheduling(self.daemon.request_stop)
        self._arm_deadline(reason, EXIT_STUCK)

    def _arm_deadline(self, reason: str, code: int) -> None:
        if self._deadline is None:
            assert self._loop is not None
            self._deadline = self._loop.call_later(self.grace, self._force_exit, reason, code)

    def _force_exit(self, reason: str, code: int) -> None:
        """The scheduling loop did not finish in time: end the process, releasing nothing.

        ``code`` is the reason's (``EXIT_LOST_LEASE`` after a lost lease), or
        what the daemon already decided if that is an error.
        """
        code = self.daemon.exit_code or code
        # The log line and the flush below can block (stdout a full pipe whose
        # lock the held thread owns): they must not keep the process alive.
        backstop = threading.Timer(1.0, self._exit_process, (code,))
        backstop.daemon = True
        backstop.start()
        log.error(
            "the scheduling loop did not stop within the grace period (a plugin holds it); "
            "exiting without releasing the lease",
            reason=reason,
            grace_seconds=self.grace,
            exit_code=code,
        )
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        self._exit_process(code)
        backstop.cancel()  # only reached when exit_process returns (tests)
