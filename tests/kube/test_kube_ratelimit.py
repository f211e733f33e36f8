"""PriorityRateLimiter: the token bucket's rate, and high priority going first."""

from __future__ import annotations

import asyncio
import time

import pytest

from scheduler.kube.ratelimit import Priority, PriorityRateLimiter


async def test_burst_then_qps() -> None:
    limiter = PriorityRateLimiter(qps=50.0, burst=5)
    started = time.monotonic()
    for _ in range(5):
        await limiter.acquire()
    assert time.monotonic() - started < 0.05, "the burst is free"
    for _ in range(5):
        await limiter.acquire()
    # Five more tokens at 50/s take about 0.1 s.
    assert time.monotonic() - started >= 0.09


async def test_high_priority_goes_ahead_of_queued_low() -> None:
    limiter = PriorityRateLimiter(qps=20.0, burst=1)
    await limiter.acquire("low")  # empty the bucket
    order: list[str] = []

    async def take(priority: Priority, label: str) -> None:
        await limiter.acquire(priority)
        order.append(label)

    lows = [asyncio.create_task(take("low", f"low{i}")) for i in range(4)]
    await asyncio.sleep(0)
    assert limiter.waiting("low") == 4
    highs = [asyncio.create_task(take("high", f"high{i}")) for i in range(2)]
    async with asyncio.timeout(5):
        await asyncio.gather(*lows, *highs)
    assert order == ["high0", "high1", "low0", "low1", "low2", "low3"]
    assert limiter.granted == {"high": 2, "low": 5}


async def test_new_low_request_does_not_jump_queued_ones() -> None:
    limiter = PriorityRateLimiter(qps=100.0, burst=1)
    await limiter.acquire("high")
    first = asyncio.create_task(limiter.acquire("low"))
    await asyncio.sleep(0.02)  # a token is now available, but `first` is owed it
    async with asyncio.timeout(5):
        await limiter.acquire("low")
        await first


async def test_cancelled_waiter_hands_its_turn_on() -> None:
    limiter = PriorityRateLimiter(qps=20.0, burst=1)
    await limiter.acquire()
    doomed = asyncio.create_task(limiter.acquire("high"))
    survivor = asyncio.create_task(limiter.acquire("low"))
    await asyncio.sleep(0)
    doomed.cancel()
    async with asyncio.timeout(5):
        await survivor
    assert limiter.waiting() == 0


async def test_unlimited_and_bad_priority() -> None:
    limiter = PriorityRateLimiter(qps=0.0, burst=1)
    assert limiter.unlimited
    for _ in range(1000):
        await limiter.acquire("low")
    limited = PriorityRateLimiter(qps=1.0, burst=1)
    with pytest.raises(ValueError, match="priority"):
        await limited.acquire("urgent")  # type: ignore[arg-type]
