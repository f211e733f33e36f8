"""WhatIfTable: a what-if copy of the NodeTable whose pod edits never reach the live table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.plugins._helpers import RowKeyIndex
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.whatif import WhatIfTable


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "4", "memory": "4Gi", "pods": "10"}
    return {
        "metadata": {"name": name, "labels": {"zone": "a"}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str, node_name: str = "", cpu: str = "1", port: int = 0, **extra: str) -> PodInfo:
    container: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": cpu, **extra}}}
    if port:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    return PodInfo.from_dict({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})


def live_table() -> NodeTable:
    table = NodeTable()
    for name in ("n1", "n2"):
        table.upsert_node(node(name))
    table.add_pod(pod("a", "n1", port=80))
    table.add_pod(pod("b", "n1"))
    table.add_pod(pod("c", "n2"))
    return table


def state_of(table: NodeTable) -> tuple[Any, ...]:
    return (
        table.requested.tolist(),
        table.non_zero_requested.tolist(),
        table.generation.tolist(),
        [list(p) for p in table.pods],
        [list(p) for p in table.ports],
        {k: table.node_of_pod(k) for k in ("ns/a", "ns/b", "ns/c", "ns/new")},
        len(table.pod_table),
        table.pod_table.node_row.tolist(),
    )


def test_edits_show_in_the_copy_and_never_in_the_live_table() -> None:
    table = live_table()
    before = state_of(table)
    whatif = WhatIfTable(table)
    n1 = table.row_of("n1")
    assert n1 is not None
    whatif.remove_pod("ns/a")
    whatif.add_pod(pod("new", cpu="2", port=81), "n1")
    assert state_of(table) == before
    assert list(whatif.pods[n1]) == ["ns/b", "ns/new"]
    assert [p.port for p in whatif.ports[n1]] == [81]
    assert whatif.requested[n1, 0] == table.requested[n1, 0] + 1000
    assert not whatif.has_pod("ns/a") and whatif.node_of_pod("ns/new") == "n1"
    assert whatif.origin is table and table.origin is table


def test_generation_stamps_of_a_copy_are_never_those_of_the_live_table() -> None:
    table = live_table()
    whatif = WhatIfTable(table)
    n1 = table.row_of("n1")
    assert n1 is not None
    whatif.remove_pod("ns/b")
    seen = int(whatif.generation[n1])
    assert seen != table.generation[n1]
    table.add_pod(pod("d", "n1"))  # the live row moves on
    assert table.generation[n1] != seen, "a cache that saw the what-if row must recompute"


def test_revert_reads_as_the_base_again() -> None:
    table = live_table()
    whatif = WhatIfTable(table)
    whatif.remove_pod("ns/a")
    whatif.add_pod(pod("new"), "n2")
    whatif.shift_requested(np.asarray([0, 1]), np.ones((2, len(table.resources)), np.int64))
    whatif.revert()
    assert state_of(whatif) == state_of(table)
    assert all(whatif.pods[r] is table.pods[r] for r in table.rows().tolist())


def test_a_new_resource_column_goes_to_the_live_table_as_zeros() -> None:
    table = live_table()
    whatif = WhatIfTable(table)
    whatif.add_pod(pod("gpu", cpu="1", **{"example.com/gpu": "2"}), "n2")
    col = table.resource_index["example.com/gpu"]
    assert table.requested.shape == whatif.requested.shape
    assert table.requested[:, col].tolist() == [0] * table.capacity
    n2 = table.row_of("n2")
    assert whatif.requested[n2, col] == 2


def test_a_what_if_has_no_orphans() -> None:
    whatif = WhatIfTable(live_table())
    with pytest.raises(ValueError, match="what-if: pod ns/x: node 'gone' is not in the table"):
        whatif.add_pod(pod("x"), "gone")


def test_a_row_index_refreshed_on_a_copy_answers_for_the_live_table_after() -> None:
    """Per-table caches key on ``origin`` and recompute what-if rows from their stamps."""
    table = live_table()
    index = RowKeyIndex(lambda t, row: {p.port: 1 for p in t.ports[row]})
    index.refresh(table)
    n1 = table.row_of("n1")
    whatif = WhatIfTable(table)
    whatif.remove_pod("ns/a")
    index.refresh(whatif)
    mask = index.mask(80)
    assert mask is None or not mask[n1]
    index.refresh(table)
    mask = index.mask(80)
    assert mask is not None and mask[n1]


def test_the_read_only_views_show_the_copys_requested_not_the_bases() -> None:
    """A plugin reading ``nodes.requested`` in a what-if sees the what-if's pods."""
    table = live_table()
    live_view = table.all_nodes().view().requested.copy()  # views made for the live table
    whatif = WhatIfTable(table)
    whatif.add_pod(pod("d", "n2", cpu="2"))
    seen = whatif.all_nodes().view().requested
    assert (seen == whatif.requested[whatif.rows()]).all()
    assert not (seen == live_view).all()
    assert (table.all_nodes().view().requested == live_view).all()


def test_a_scenario_table_adds_and_drops_nodes_without_touching_the_base() -> None:
    from scheduler.state.scenario import ScenarioTable

    table = live_table()
    before = state_of(table)
    scenario = ScenarioTable(table)
    for i in range(100):  # beyond the base's capacity: the copy grows alone
        scenario.add_node(node(f"t{i}"))
    assert scenario.drop_node("n1") and not scenario.drop_node("n1")
    assert len(scenario) == 101 and "n1" not in scenario and not scenario.has_pod("ns/a")
    assert scenario.all_nodes().view().requested.shape == (101, len(scenario.resources))
    assert scenario.origin is scenario and scenario.node_epoch < 0
    with pytest.raises(ValueError, match="already in the table"):
        scenario.add_node(node("n2"))
    assert state_of(table) == before
    assert len(table) == 2 and table.has_pod("ns/a") and table.pod_table.node_row.max() >= 0
