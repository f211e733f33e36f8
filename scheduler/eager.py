"""Start a coroutine as a task that runs its first step now (Python 3.12's eager tasks).

``asyncio.ensure_future`` only schedules a coroutine: its first line runs on
the event loop's next iteration, after everything else that is ready. The
scheduler's binding cycle is a chain of such hand-offs (the binding task, one
task per PreBind and Bind hook), and while the loop is busy every iteration
also holds a scheduling decision and a share of the watch events, so each
hand-off costs about a millisecond before the Binding is even sent.
kube-scheduler starts its binding goroutine at once, on another core.

:func:`start_eagerly` runs the coroutine up to its first real suspension
inside the call, as ``asyncio.Task(..., eager_start=True)`` does on Python
3.12 (used there): a PreBind hook with nothing to do costs nothing, and the
Binding request is written during the decision that made it. While it runs,
the task it belongs to is the loop's current task, so what the coroutine
ties to ``asyncio.current_task()`` (``asyncio.timeout``, aiohttp's request
timeout) is tied to its own task, never to the caller's.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["start_eagerly"]

T = TypeVar("T")


def start_eagerly(coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Run ``coro``'s first step now, as its own task; the rest as an ordinary task.

    Returns a future that is already done when ``coro`` finished (or failed)
    without suspending, and otherwise the task that goes on running it.
    Must be called from a coroutine or callback on the running loop.
    """
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12):  # pragma: no cover - the project runs on 3.11
        return asyncio.Task(coro, loop=loop, eager_start=True)
    return _start_eagerly_311(loop, coro)


def _start_eagerly_311(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]
) -> asyncio.Future[T]:
    context = contextvars.copy_context()
    resumed = _Resumed(coro)
    task: asyncio.Task[T] = loop.create_task(resumed, context=context)
    caller = asyncio.current_task(loop)
    if caller is not None:
        asyncio.tasks._leave_task(loop, caller)
    asyncio.tasks._enter_task(loop, task)
    try:
        context.run(resumed.first_step)
    finally:
        asyncio.tasks._leave_task(loop, task)
        if caller is not None:
            asyncio.tasks._enter_task(loop, caller)
    if resumed.suspended:
        return task
    # Finished in its first step: the task's own first step (next iteration)
    # only ends it; the caller gets the outcome now.
    done: asyncio.Future[T] = loop.create_future()
    if resumed.error is None:
        done.set_result(resumed.value)
    elif isinstance(resumed.error, asyncio.CancelledError):
        done.cancel()
    else:
        done.set_exception(resumed.error)
    return done


_NOTHING: Any = object()


class _Resumed(Coroutine[Any, Any, Any]):
    """``coro`` as its task sees it: its first step already taken, by :meth:`first_step`.

    The task's first ``send`` gets what that step yielded (the future the
    coroutine waits for, or None for a bare yield); from then on every
    ``send`` and ``throw`` goes straight to the coroutine, so the task drives
    it exactly as it would have from the start. A coroutine that finished in
    its first step ends its task at once with None (the caller already has
    the outcome).
    """

    __slots__ = ("coro", "error", "first", "suspended", "value")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.suspended = False
        self.first: Any = _NOTHING
        self.value: Any = None
        self.error: BaseException | None = None

    def first_step(self) -> None:
        try:
            self.first = self.coro.send(None)
        except StopIteration as stop:
            self.value = stop.value
        except (Exception, asyncio.CancelledError) as err:
            self.error = err
        else:
            self.suspended = True

    def send(self, value: Any) -> Any:
        if not self.suspended:
            raise StopIteration(None)
        first = self.first
        if first is not _NOTHING:
            self.first = _NOTHING
            return first
        return self.coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if not self.suspended:
            raise typ if val is None else val
        # Cancelled before the task's first step: the coroutine gets it where
        # its first step left it waiting.
        self.first = _NOTHING
        if val is None and tb is None:
            return self.coro.throw(typ)
        return self.coro.throw(typ, val, tb)

    def close(self) -> None:
        self.coro.close()

    def __await__(self) -> Generator[Any, None, Any]:
        raise TypeError("a coroutine started by start_eagerly is driven by its own task")

    def __repr__(self) -> str:
        return f"<started eagerly: {self.coro!r}>"
