"""LeaderElector against the emulator's Lease API with short (1-2 s) durations."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from scheduler.kube.client import KubeClient
from scheduler.kube.leaderelection import LeaderElector, micro_time
from scheduler.simulation.emulator import EmulatorServer
from tests.kube.conftest import ClientFactory
from tests.kube.helpers import eventually

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/pluggable-scheduler"
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
TIMING: dict[str, Any] = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.2}


@dataclass
class Candidate:
    elector: LeaderElector
    started: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    leading_cancelled: bool = False
    task: asyncio.Task[None] | None = None

    async def lead(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()  # "schedule" until told to stop
        except asyncio.CancelledError:
            self.leading_cancelled = True
            raise

    def on_stopped(self) -> None:
        self.stopped.set()

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(self.lead, self.on_stopped))


def make(client: KubeClient, identity: str, **overrides: Any) -> Candidate:
    params: dict[str, Any] = {**TIMING, **overrides}
    return Candidate(
        LeaderElector(
            client, namespace="kube-system", name="pluggable-scheduler", identity=identity, **params
        )
    )


@contextlib.asynccontextmanager
async def campaigning(*candidates: Candidate) -> AsyncIterator[None]:
    for candidate in candidates:
        candidate.start()
    try:
        yield
    finally:
        for candidate in candidates:
            if candidate.task is not None and not candidate.task.done():
                candidate.task.cancel()
            if candidate.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    async with asyncio.timeout(5):
                        await candidate.task


async def spec(client: KubeClient) -> dict[str, Any]:
    lease = await client.get(LEASE)
    result: dict[str, Any] = lease["spec"]
    return result


async def wait(event: asyncio.Event, within: float = 5.0) -> None:
    async with asyncio.timeout(within):
        await event.wait()


async def test_acquires_a_new_lease_with_kube_fields(client: KubeClient) -> None:
    a = make(client, "a")
    async with campaigning(a):
        await wait(a.started)
        assert a.elector.is_leader
        lease = await spec(client)
        assert lease["holderIdentity"] == "a"
        assert lease["leaseDurationSeconds"] == 2
        assert lease["leaseTransitions"] == 0
        assert MICRO.match(lease["acquireTime"]) and MICRO.match(lease["renewTime"])

        first_renew = lease["renewTime"]
        await eventually(
            lambda: (
                a.elector.lease is not None and a.elector.lease["spec"]["renewTime"] != first_renew
            ),
            message="a renewal",
        )
        renewed = await spec(client)
        assert renewed["acquireTime"] == lease["acquireTime"], "renewing keeps acquireTime"
        assert renewed["leaseTransitions"] == 0 and renewed["holderIdentity"] == "a"


async def test_second_candidate_waits_then_takes_over_on_release(
    make_client: ClientFactory,
) -> None:
    a = make(await make_client(), "a")
    b_client = await make_client()
    b = make(b_client, "b")
    async with campaigning(a):
        await wait(a.started)
        async with campaigning(b):
            await asyncio.sleep(0.6)  # several of b's retry periods
            assert not b.started.is_set() and not b.elector.is_leader
            assert b.elector.leader == "a"

            assert await a.elector.release()
            released_at = time.monotonic()
            await wait(a.stopped)
            assert a.leading_cancelled and not a.elector.is_leader

            await wait(b.started)
            # A free lease is taken at the next attempt, not after expiry.
            assert time.monotonic() - released_at < 1.0
            lease = await spec(b_client)
            assert lease["holderIdentity"] == "b" and lease["leaseTransitions"] == 1


async def test_takeover_after_holder_vanishes_waits_for_expiry(
    make_client: ClientFactory,
) -> None:
    a = make(await make_client(), "a", release_on_cancel=False)
    b_client = await make_client()
    b = make(b_client, "b")
    async with campaigning(a):
        await wait(a.started)
    # a is gone without releasing (a crash): its lease must expire first.
    assert a.stopped.is_set()
    held = await spec(b_client)
    assert held["holderIdentity"] == "a"
    started = time.monotonic()
    async with campaigning(b):
        await wait(b.started, within=6.0)
        waited = time.monotonic() - started
        assert waited >= 1.9, "leaseDurationSeconds is measured from b's first observation"
        lease = await spec(b_client)
        assert lease["holderIdentity"] == "b" and lease["leaseTransitions"] == 1
        assert lease["acquireTime"] != held["acquireTime"], "a new holder sets acquireTime"


async def test_leader_detects_loss_when_lease_is_taken(
    client: KubeClient, make_client: ClientFactory
) -> None:
    a = make(client, "a")
    other = await make_client()
    async with campaigning(a):
        await wait(a.started)
        lease = await other.get(LEASE)
        now = micro_time()
        lease["spec"].update(
            holderIdentity="intruder", leaseDurationSeconds=30, acquireTime=now, renewTime=now
        )
        await other.request("PUT", LEASE, body=lease)  # a's next renewal now conflicts

        lost_at = time.monotonic()
        await wait(a.stopped, within=5.0)
        assert time.monotonic() - lost_at <= 1.5 + 0.2 + 1.0, "within renew_deadline"
        assert a.leading_cancelled and not a.elector.is_leader
        assert a.task is not None
        await asyncio.wait_for(a.task, 2)  # run() returns after losing
    assert (await spec(other))["holderIdentity"] == "intruder", "a loser must not release"


async def test_leader_gives_up_when_renewals_keep_failing(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    a = make(client, "a")
    async with campaigning(a):
        await wait(a.started)
        emulator.faults.fail(500, resource="leases", count=None)
        failing_since = time.monotonic()
        await wait(a.stopped, within=5.0)
        elapsed = time.monotonic() - failing_since
        # Never before renew_deadline has passed without a renewal; soon after.
        assert 1.4 <= elapsed <= 1.5 + 0.2 + 1.0
        assert not a.elector.is_leader and a.leading_cancelled


async def test_racing_candidates_elect_exactly_one(make_client: ClientFactory) -> None:
    candidates = [make(await make_client(), name) for name in ("a", "b", "c")]
    async with campaigning(*candidates):
        await eventually(lambda: any(c.started.is_set() for c in candidates), message="a leader")
        for _ in range(8):  # leadership is stable across several renewals
            assert sum(c.elector.is_leader for c in candidates) == 1
            await asyncio.sleep(0.1)
        assert sum(c.started.is_set() for c in candidates) == 1


async def test_cancel_releases_the_lease(client: KubeClient) -> None:
    a = make(client, "a")
    async with campaigning(a):
        await wait(a.started)
    assert a.stopped.is_set() and a.leading_cancelled
    lease = await spec(client)
    assert lease["holderIdentity"] in ("", None) and lease["leaseDurationSeconds"] == 1
    assert lease["leaseTransitions"] == 0


async def test_leading_callback_failure_steps_down_and_raises(client: KubeClient) -> None:
    elector = LeaderElector(
        client, namespace="kube-system", name="pluggable-scheduler", identity="a", **TIMING
    )
    stopped: list[bool] = []

    async def crash() -> None:
        raise RuntimeError("scheduler loop crashed")

    with pytest.raises(RuntimeError, match="crashed"):
        async with asyncio.timeout(5):
            await elector.run(crash, lambda: stopped.append(True))
    assert stopped == [True]
    assert (await spec(client))["holderIdentity"] in ("", None)


def test_timing_is_validated(client: KubeClient) -> None:
    with pytest.raises(ValueError, match="leaseDuration"):
        make(client, "a", lease_duration=1.0, renew_deadline=1.0)
    with pytest.raises(ValueError, match="renewDeadline"):
        make(client, "a", renew_deadline=0.3, retry_period=0.3)


@pytest.mark.parametrize(
    "nanos",
    [
        0,
        1_700_000_000_000_000_000,
        1_700_000_000_999_999_999,  # the last microsecond of a second
        1_700_000_001_000_000_000,  # and the next second's first
        4_102_444_799_123_456_789,  # 2099-12-31T23:59:59
    ],
)
def test_micro_time_formats_the_clock_as_kube_microtime(
    monkeypatch: pytest.MonkeyPatch, nanos: int
) -> None:
    expected = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )
    monkeypatch.setattr(time, "time_ns", lambda: nanos)
    assert micro_time() == expected
    assert MICRO.match(expected)


def test_micro_time_of_a_given_moment_is_in_utc() -> None:
    moment = datetime(2026, 3, 1, 1, 30, 0, 42, tzinfo=timezone(timedelta(hours=2)))
    assert micro_time(moment) == "2026-02-28T23:30:00.000042Z"
