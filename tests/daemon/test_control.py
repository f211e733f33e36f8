"""The control thread answers and ends the process while the scheduling loop is held.

The loop is held here the way a plugin holds it: a synchronous ``time.sleep``
on the loop's own thread, during which only other threads can act.
"""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request
from typing import Any

from scheduler.daemon.control import EXIT_LOST_LEASE, EXIT_STUCK, ControlThread
from scheduler.observability.metrics import SchedulerMetrics
from scheduler.observability.server import HealthServer


class FakeClient:
    async def close(self) -> None:
        pass


class FakeDaemon:
    """What the control thread uses of the daemon."""

    def __init__(self) -> None:
        self.health = HealthServer("127.0.0.1:0", SchedulerMetrics())
        self.heartbeat_at = time.monotonic()
        self.exit_code = 0
        self.stop_requests = 0

    @property
    def stopping(self) -> bool:
        return self.stop_requests > 0

    def request_stop(self) -> None:
        self.stop_requests += 1


async def start_control(
    daemon: FakeDaemon, *, grace: float = 0.5, stall_limit: float = 60.0
) -> tuple[ControlThread, list[int]]:
    exits: list[int] = []

    async def client() -> Any:
        return FakeClient()

    control = ControlThread(
        daemon,  # type: ignore[arg-type]
        client,
        grace=grace,
        stall_limit=stall_limit,
        exit_process=exits.append,
    )
    await control.start()
    return control, exits


def get(url: str) -> tuple[int, str, float]:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:
            return response.status, response.read().decode(), time.monotonic() - started
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), time.monotonic() - started


def hold_loop(seconds: float) -> None:
    """Hold the calling thread's event loop, as a synchronous plugin hook does."""
    time.sleep(seconds)


def probe_while_held(url: str, hold: float) -> list[tuple[int, str, float]]:
    """GET ``url`` from another thread every 0.1 s while this loop's thread sleeps."""
    answers: list[tuple[int, str, float]] = []
    done = threading.Event()

    def prober() -> None:
        while not done.is_set():
            answers.append(get(url))
            time.sleep(0.1)

    thread = threading.Thread(target=prober)
    thread.start()
    hold_loop(hold)
    done.set()
    thread.join()
    return answers


async def test_health_and_metrics_answer_while_the_scheduling_loop_is_held() -> None:
    daemon = FakeDaemon()
    control, _ = await start_control(daemon)
    try:
        base = f"http://127.0.0.1:{daemon.health.port}"
        answers = probe_while_held(base + "/healthz", 1.0)
        answers += probe_while_held(base + "/metrics", 0.5)
        assert len(answers) >= 8
        assert all(status == 200 and took < 1.0 for status, _, took in answers)
    finally:
        await control.stop()


async def test_livez_fails_with_a_clear_reason_once_the_loop_stalls_past_the_limit() -> None:
    daemon = FakeDaemon()
    control, _ = await start_control(daemon, stall_limit=5.0)
    try:
        url = f"http://127.0.0.1:{daemon.health.port}/livez"
        status, _, _ = await asyncio.to_thread(get, url)
        assert status == 200
        daemon.heartbeat_at = time.monotonic() - 7.0
        status, body, _ = await asyncio.to_thread(get, url)
        assert status == 500
        assert "[-]scheduling-loop failed: the scheduling loop has not run for 7." in body
        assert "(schedulingLoopStallLimit 5s): a plugin hook is probably holding it" in body
    finally:
        await control.stop()


async def test_a_stop_the_held_loop_cannot_finish_ends_the_process_after_the_grace() -> None:
    daemon = FakeDaemon()
    control, exits = await start_control(daemon, grace=0.3)
    try:
        control.request_stop("SIGTERM")  # as the signal handler does
        hold_loop(0.8)  # the stop request cannot run here meanwhile
        assert exits == [EXIT_STUCK]
        await asyncio.sleep(0)
        assert daemon.stop_requests == 1  # it was asked, once the loop ran again
    finally:
        await control.stop()


async def test_a_forced_exit_keeps_the_daemons_error_code() -> None:
    daemon = FakeDaemon()
    daemon.exit_code = EXIT_LOST_LEASE
    control, exits = await start_control(daemon, grace=0.2)
    try:
        control.request_stop("SIGTERM")
        hold_loop(0.6)
        assert exits == [EXIT_LOST_LEASE]
    finally:
        await control.stop()


async def test_a_stop_that_finishes_in_time_disarms_the_forced_exit() -> None:
    daemon = FakeDaemon()
    control, exits = await start_control(daemon, grace=0.3)
    control.request_stop("SIGTERM")
    await asyncio.sleep(0.05)
    await control.stop()
    await asyncio.sleep(0.5)
    assert exits == []
    assert daemon.stop_requests == 1
