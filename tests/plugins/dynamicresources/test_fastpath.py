"""DynamicResources' device counting (``fastpath.DeviceTable``): the counts a pod sees are
those a fresh count over every allocated device gives, however they were reached."""

from __future__ import annotations

import random

import numpy as np

from scheduler.plugins.dynamicresources.fastpath import DeviceTable
from scheduler.plugins.dynamicresources.pools import SliceIndex
from scheduler.state.nodetable import NodeTable
from tests.plugins.dynamicresources.test_plugin import DRIVER, node, slice_on


def table_of(nodes: int, gpus: int) -> DeviceTable:
    built = DeviceTable.build(SliceIndex([slice_on(f"n{i}", gpus) for i in range(nodes)]))
    assert built is not None
    return built


def test_counts_moved_by_what_was_taken_or_freed_equal_a_fresh_count() -> None:
    devices = table_of(20, 4)
    rng = random.Random(7)
    keys = list(devices.keys)
    selectable = np.asarray([rng.random() < 0.8 for _ in keys], dtype=np.bool_)
    other = np.ones(len(keys), dtype=np.bool_)
    taken: set[tuple[str, str, str]] = set()
    for step in range(200):
        for key in rng.sample(keys, 3):  # some taken, some freed
            taken.symmetric_difference_update({key})
        if step % 7 == 0:
            taken.add((DRIVER, "elsewhere", "gpu-0"))  # not a device of the table
        for mask in (selectable, other):
            got = devices.free_counts(mask, set(taken))
            assert got.tolist() == devices._count(mask, taken).tolist(), step
            got[:] = -1  # the caller's copy: the kept counts are not touched
    assert devices.free_counts(other, set()).tolist() == [4] * 20


def test_positions_follow_the_node_set() -> None:
    devices = table_of(3, 1)
    table = NodeTable()
    for name in ("n2", "x", "n0"):
        table.upsert_node(node(name))
    names = table.names
    first = devices.positions(table)
    want = [devices.node_index.get(n, -1) for n in names]
    assert first[: len(want)].tolist() == want
    assert devices.positions(table) is first  # kept while the node set stays
    table.remove_node("n2")
    table.upsert_node(node("n1"))
    again = devices.positions(table)
    assert again is not first
    assert [again[table.row_of(n)] for n in ("n0", "n1", "x")] == [0, 1, -1]
