"""Pods held at Permit, and the handles plugins use to release or reject them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from scheduler.api.status import Code, Status
from scheduler.state.pod import PodInfo


class WaitingPodEntry:
    """A pod waiting at Permit for one or more plugins.

    Each waiting plugin has its own deadline; the pod proceeds when every
    plugin has allowed it, and fails at the first rejection or deadline.
    """

    def __init__(self, pod: PodInfo, node_name: str, waits: dict[str, float]) -> None:
        self.pod = pod
        self.node_name = node_name
        self._pending = dict(waits)
        loop = asyncio.get_running_loop()
        self._result: asyncio.Future[Status] = loop.create_future()
        self._timers = [
            loop.call_later(timeout, self._expire, plugin, timeout)
            for plugin, timeout in waits.items()
        ]

    def pending_plugins(self) -> list[str]:
        return list(self._pending)

    def _finish(self, status: Status) -> None:
        if not self._result.done():
            self._result.set_result(status)
        for timer in self._timers:
            timer.cancel()

    def _expire(self, plugin: str, timeout: float) -> None:
        self._finish(
            Status(
                Code.UNSCHEDULABLE,
                (f"rejected due to timeout after waiting {timeout:g}s at plugin {plugin}",),
                plugin,
            )
        )

    def allow(self, plugin: str) -> None:
        self._pending.pop(plugin, None)
        if not self._pending:
            self._finish(Status.success())

    def reject(self, plugin: str, message: str) -> None:
        self._finish(Status(Code.UNSCHEDULABLE, (message,), plugin))

    async def wait(self) -> Status:
        return await self._result

    @property
    def done(self) -> bool:
        return self._result.done()


class WaitingPods:
    """All pods currently waiting at Permit in one scheduler, keyed by pod uid."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPodEntry] = {}

    def add(self, entry: WaitingPodEntry) -> None:
        self._pods[entry.pod.uid or entry.pod.key] = entry

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPodEntry | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPodEntry]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)

    def reject(self, uid: str, plugin: str, message: str) -> bool:
        entry = self._pods.get(uid)
        if entry is None:
            return False
        entry.reject(plugin, message)
        return True
