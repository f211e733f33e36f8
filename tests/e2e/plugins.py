"""In-process plugins the end-to-end tests add to the daemon's catalog.

They are ordinary plugins, loaded through the framework's embedding API
(``PluginCatalog.from_classes``) and run by the real daemon; tests steer them
through the instance the daemon built (``daemon.profiles[...].framework.plugins``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from scheduler.api import CycleState, Plugin, hookimpl
from scheduler.api.results import FilterResult
from scheduler.api.status import Status
from scheduler.framework.loader import PluginCatalog
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo


class PoolArgs(BaseModel):
    pool: str


class PoolFilter(Plugin):
    """Keeps the nodes whose ``pool`` label equals the profile's ``pool`` arg."""

    api_version: ClassVar[str] = "1.0"
    Args: ClassVar[type[BaseModel] | None] = PoolArgs

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        pool = self.args.pool
        result = FilterResult(len(nodes))
        mismatch = np.asarray([n.labels.get("pool") != pool for n in nodes], dtype=np.bool_)
        if mismatch.any():
            result.reject(mismatch, f"node(s) are not in pool {pool}")
        return result


class ExplodingFilter(Plugin):
    """Raises for pods labelled ``explode=yes`` (a plugin bug that must cost one pod)."""

    api_version: ClassVar[str] = "1.0"

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        if pod.labels.get("explode") == "yes":
            raise RuntimeError(f"cannot handle {pod.name}")
        return FilterResult(len(nodes))


class ControlledPreBind(Plugin):
    """PreBind the test steers per pod.

    ``hold[name]``: wait for that event before returning; ``hang``: while
    True, every call hangs (past any timeout); ``before_return``: an async
    callback run just before returning (e.g. another client binding the pod).
    """

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.hold: dict[str, asyncio.Event] = {}
        self.entered: dict[str, int] = {}
        self.hang = False
        self.before_return: Callable[[PodInfo], Awaitable[None]] | None = None

    @hookimpl
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.entered[pod.name] = self.entered.get(pod.name, 0) + 1
        if self.hang:
            await asyncio.Event().wait()  # never set: only the framework's timeout ends it
        gate = self.hold.get(pod.name)
        if gate is not None:
            await gate.wait()
        if self.before_return is not None:
            await self.before_return(pod)


class ControlledBind(Plugin):
    """A Bind the test holds per pod (``hold[name]``), then skips to the next binder."""

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.hold: dict[str, asyncio.Event] = {}
        self.entered: dict[str, int] = {}

    @hookimpl
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.entered[pod.name] = self.entered.get(pod.name, 0) + 1
        gate = self.hold.get(pod.name)
        if gate is not None:
            await gate.wait()
        return Status.skip()


class StubbornPreBind(Plugin):
    """For pods labelled ``stubborn=yes``, a PreBind that swallows its cancellation.

    It keeps running until the test sets ``release``: the framework must
    abandon it at its budget, not wait for it.
    """

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.release = asyncio.Event()
        self.cancellations = 0

    @hookimpl
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        if pod.labels.get("stubborn") != "yes":
            return
        while not self.release.is_set():
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancellations += 1


class BlockingFilter(Plugin):
    """For pods labelled ``block=sleep`` or ``block=spin``, a Filter that never returns.

    ``sleep`` sleeps in a loop (the GIL released), ``spin`` loops in pure
    Python (the GIL taken back every switch interval): the two ways a hook
    holds the scheduling loop that no budget can interrupt.
    """

    api_version: ClassVar[str] = "1.0"

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        how = pod.labels.get("block")
        if how == "sleep":
            while True:
                time.sleep(0.05)
        elif how == "spin":
            n = 0
            while True:
                n += 1
        return FilterResult(len(nodes))


class BrokenScore(Plugin):
    """A Score plugin that raises for every pod."""

    api_version: ClassVar[str] = "1.0"

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Any:
        raise ZeroDivisionError("score divided by zero")


class FavourArgs(BaseModel):
    node: str


class FavourNode(Plugin):
    """Scores its ``node`` arg 100 and every other node 0 (registered under two names)."""

    api_version: ClassVar[str] = "1.0"
    Args: ClassVar[type[BaseModel] | None] = FavourArgs

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Any:
        return np.asarray([100 if n == self.args.node else 0 for n in nodes.names], np.int64)


TEST_PLUGINS: dict[str, type] = {
    "FavourNodeA": FavourNode,
    "FavourNodeB": FavourNode,
    "PoolFilter": PoolFilter,
    "ExplodingFilter": ExplodingFilter,
    "ControlledPreBind": ControlledPreBind,
    "ControlledBind": ControlledBind,
    "StubbornPreBind": StubbornPreBind,
    "BrokenScore": BrokenScore,
    "BlockingFilter": BlockingFilter,
}


def catalog_with_test_plugins() -> PluginCatalog:
    """The installed plugins plus the test plugins above."""
    return PluginCatalog.discover().merged(PluginCatalog.from_classes(TEST_PLUGINS))
