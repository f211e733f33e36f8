"""Extender filter calls made ahead (``framework.extender_prefetch``): when an early
answer may stand for the call the pod's own cycle would make, and when not.

The real Extender plugin calls the toy extender on loopback; the table is a
real NodeTable.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import numpy as np
import pytest

from scheduler.framework.extender_prefetch import ExtenderPrefetch, _Early, restricted
from scheduler.framework.extenders import (
    ExtenderFilterOutcome,
    ExtenderFilterVerdict,
    ExtenderNodes,
)
from scheduler.plugins.extender.plugin import Extender
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo
from scheduler.testing.extender import RunningExtender, ToyExtender
from scheduler.testing.objects import make_node, make_pod


@pytest.fixture
async def toy() -> AsyncIterator[RunningExtender]:
    running = await RunningExtender(ToyExtender(require_label="ok")).start()
    try:
        yield running
    finally:
        await running.stop()


def table_of(*names: str) -> NodeTable:
    table = NodeTable()
    for name in names:
        table.upsert_node(make_node(name, labels={"ok": "true"} if name != "c" else {}))
    return table


def nodes(table: NodeTable, *names: str) -> NodeSet:
    return NodeSet(table, np.asarray([table.row_of(n) for n in names], dtype=np.int64))


def test_restricted_keeps_the_verdicts_on_the_nodes_asked() -> None:
    outcome = ExtenderFilterOutcome(
        [ExtenderFilterVerdict("x", ["a", "b"], {"c": "no"}, {"d": "never"})], ["a", "b"]
    )
    got = restricted(outcome, ["b", "d"])
    assert got.passed == ["b"]
    assert got.verdicts[0].passed == ["b"]
    assert got.verdicts[0].failed == {}
    assert got.verdicts[0].unresolvable == {"d": "never"}


async def early(prefetch: ExtenderPrefetch, pod: PodInfo, sent: NodeSet) -> None:
    """What ``launch`` does for one pod, without the queue and the cycle."""
    call = prefetch.step.filter_nodes(pod, ExtenderNodes.of(sent), time.monotonic() + 5)
    task = asyncio.ensure_future(call)
    prefetch._early[pod.key] = _Early(
        pod.raw, sent.table.node_epoch, frozenset(sent.names), task, 0
    )


async def test_an_early_answer_stands_for_a_subset_of_its_nodes(toy: RunningExtender) -> None:
    plugin = Extender({"extenders": [{"urlPrefix": toy.url, "filterVerb": "filter"}]})
    prefetch = ExtenderPrefetch(plugin, 5.0)
    table = table_of("a", "b", "c")
    pod = PodInfo.from_dict(make_pod("p"))
    try:
        await early(prefetch, pod, nodes(table, "a", "b", "c"))
        # At the pod's turn "a" is full: the answer on a, b, c stands for b, c.
        got = await prefetch.take(pod, nodes(table, "b", "c"))
        assert got is not None and got.passed == ["b"]
        assert got.verdicts[0].failed == {"c": "node(s) refused by the toy extender"}
        assert (prefetch.hits, prefetch.misses) == (1, 0)
        assert [v for v, _ in toy.toy.calls] == ["filter"]
    finally:
        await plugin.close()


async def test_no_early_answer_for_nodes_not_sent_or_a_changed_pod(toy: RunningExtender) -> None:
    plugin = Extender({"extenders": [{"urlPrefix": toy.url, "filterVerb": "filter"}]})
    prefetch = ExtenderPrefetch(plugin, 5.0)
    table = table_of("a", "b", "c")
    pod = PodInfo.from_dict(make_pod("p"))
    try:
        await early(prefetch, pod, nodes(table, "a", "b"))
        assert await prefetch.take(pod, nodes(table, "b", "c")) is None  # c was not sent
        await early(prefetch, pod, nodes(table, "a", "b"))
        updated = PodInfo.from_dict(make_pod("p"))
        assert await prefetch.take(updated, nodes(table, "a")) is None  # another pod object
        await early(prefetch, pod, nodes(table, "a", "b"))
        table.upsert_node(make_node("d"))
        assert await prefetch.take(pod, nodes(table, "a")) is None  # the node set changed
        assert (prefetch.hits, prefetch.misses) == (0, 3)
        assert await prefetch.take(pod, nodes(table, "a")) is None  # taken once only
    finally:
        prefetch.close()
        await plugin.close()


async def test_calls_go_ahead_only_while_the_pods_own_answer_is_still_due(
    toy: RunningExtender,
) -> None:
    plugin = Extender({"extenders": [{"urlPrefix": toy.url, "filterVerb": "filter"}]})
    prefetch = ExtenderPrefetch(plugin, 5.0)
    loop = asyncio.get_running_loop()
    try:
        answered = loop.create_future()
        loop.call_soon(answered.set_result, None)  # comes back within the steps
        assert await prefetch.settle(answered) is False
        never: asyncio.Future[None] = loop.create_future()
        assert await prefetch.settle(never) is True
        never.cancel()
    finally:
        prefetch.close()
        await plugin.close()
