"""start_eagerly: a coroutine's first step runs inside the call, as its own task."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from scheduler.eager import start_eagerly

LOOP_TURNS = 5


def loop_turned() -> list[bool]:
    """A flag that flips once the event loop has run one more iteration."""
    flag = [False]
    asyncio.get_running_loop().call_soon(flag.__setitem__, 0, True)
    return flag


async def test_a_coroutine_that_never_suspends_is_done_when_the_call_returns() -> None:
    steps: list[str] = []

    async def quick() -> int:
        steps.append("ran")
        return 7

    turned = loop_turned()
    future = start_eagerly(quick())
    assert steps == ["ran"]
    assert future.done() and future.result() == 7
    assert turned == [False]  # no iteration of the loop was needed


async def test_failures_in_the_first_step_are_the_futures_outcome() -> None:
    async def broken() -> None:
        raise ValueError("bad input")

    async def cancelled() -> None:
        raise asyncio.CancelledError

    failed = start_eagerly(broken())
    assert failed.done()
    with pytest.raises(ValueError, match="bad input"):
        failed.result()
    gone = start_eagerly(cancelled())
    assert gone.done() and gone.cancelled()


async def test_a_suspending_coroutine_runs_its_first_step_now_as_its_own_task() -> None:
    caller = asyncio.current_task()
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    seen: list[object] = []

    async def waits() -> str:
        seen.append(asyncio.current_task())
        got = await gate
        seen.append(asyncio.current_task())
        return got + "!"

    future = start_eagerly(waits())
    assert isinstance(future, asyncio.Task) and not future.done()
    assert seen == [future]  # the first step ran, under its own task
    assert asyncio.current_task() is caller  # and the caller is current again
    gate.set_result("open")
    assert await future == "open!"
    assert seen == [future, future]


async def test_a_timeout_set_in_the_first_step_cancels_that_task_not_the_caller() -> None:
    async def stuck() -> None:
        async with asyncio.timeout(0.01):
            await asyncio.Event().wait()

    future = start_eagerly(stuck())
    with pytest.raises(TimeoutError):
        await future
    me = asyncio.current_task()
    assert me is not None and not me.cancelling()


async def test_cancelling_the_task_reaches_the_coroutine_where_it_waits() -> None:
    cleaned: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cleaned.append("cancelled")  # not a GeneratorExit at garbage collection
            raise

    # Cancelled before the task took its own first step ...
    early = start_eagerly(waits())
    early.cancel()
    with pytest.raises(asyncio.CancelledError):
        await early
    assert cleaned == ["cancelled"]
    # ... and while it waits.
    late = start_eagerly(waits())
    for _ in range(LOOP_TURNS):
        await asyncio.sleep(0)
    late.cancel()
    with pytest.raises(asyncio.CancelledError):
        await late
    assert cleaned == ["cancelled", "cancelled"]


async def test_bare_yields_and_failures_after_suspending_pass_through() -> None:
    async def steps() -> None:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        raise KeyError("later")

    future = start_eagerly(steps())
    assert not future.done()
    with pytest.raises(KeyError, match="later"):
        await future


async def test_context_changes_stay_with_the_coroutine() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="caller")

    async def sets() -> str:
        var.set("coroutine")
        await asyncio.sleep(0)
        return var.get()

    future = start_eagerly(sets())
    assert var.get() == "caller"
    assert await future == "coroutine"
    assert var.get() == "caller"
