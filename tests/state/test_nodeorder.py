"""kube-scheduler's node list order (its nodeTree), which sampling walks."""

from __future__ import annotations

from typing import Any

from scheduler.state.nodeorder import zone_key
from scheduler.state.nodetable import NodeTable

ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str | None = None, **labels: str) -> dict[str, Any]:
    all_labels = dict(labels)
    if zone is not None:
        all_labels[ZONE] = zone
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "status": {"allocatable": {"cpu": "1", "pods": "10"}},
    }


def names(table: NodeTable) -> list[str]:
    return [table.names[r] for r in table.sampling_order().tolist()]


def test_zones_are_interleaved_in_the_order_they_appeared() -> None:
    """kube's nodeTree.list: one node per zone in turn, each zone in join order."""
    table = NodeTable()
    for name, zone in [
        ("a1", "a"),
        ("a2", "a"),
        ("a3", "a"),
        ("b1", "b"),
        ("c1", "c"),
        ("b2", "b"),
        ("none1", None),
    ]:
        table.upsert_node(node(name, zone))
    assert names(table) == ["a1", "b1", "c1", "none1", "a2", "b2", "a3"]


def test_removed_nodes_leave_and_come_back_last_and_an_emptied_zone_goes_last() -> None:
    table = NodeTable()
    for name, zone in [("a1", "a"), ("b1", "b"), ("a2", "a"), ("b2", "b")]:
        table.upsert_node(node(name, zone))
    table.remove_node("a1")
    assert names(table) == ["a2", "b1", "b2"]
    table.upsert_node(node("a1", "a"))  # reuses a1's row, joins zone a last
    assert names(table) == ["a2", "b1", "a1", "b2"]
    table.remove_node("a2")
    table.remove_node("a1")  # zone a is gone; when it comes back it is the last zone
    table.upsert_node(node("a3", "a"))
    assert names(table) == ["b1", "a3", "b2"]


def test_a_zone_change_moves_the_node_when_the_list_is_next_rebuilt() -> None:
    """As in kube: the tree changes at once, the snapshot's list when nodes come or go."""
    table = NodeTable()
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        table.upsert_node(node(name, zone))
    assert names(table) == ["a1", "b1", "a2"]
    table.upsert_node(node("a1", "b"))
    assert names(table) == ["a1", "b1", "a2"]
    table.upsert_node(node("c1", "c"))
    assert names(table) == ["a2", "b1", "c1", "a1"]
    # A label change that keeps the zone moves nothing.
    table.upsert_node(node("a2", "a", team="x"))
    table.upsert_node(node("c2", "c"))
    assert names(table) == ["a2", "b1", "c1", "a1", "c2"]


def test_zone_key_takes_region_and_zone_with_the_beta_labels_first() -> None:
    assert zone_key({}) == ""
    assert zone_key({ZONE: "z"}) == ":\x00:z"
    assert zone_key({"topology.kubernetes.io/region": "r", ZONE: "z"}) == "r:\x00:z"
    beta = {"failure-domain.beta.kubernetes.io/zone": "old", ZONE: "new"}
    assert zone_key(beta) == ":\x00:old"
