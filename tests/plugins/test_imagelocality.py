"""ImageLocality, with the images and sizes of kube's image_locality_test.go, then
clusters where kube's cluster-wide image states (one size per name, the first
holder's) differ from a per-node reading, and image volumes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.plugins.imagelocality import (
    ImageLocality,
    calculate_priority,
    normalized_image_name,
)
from tests.plugins.builders import (
    FakeHandle,
    container,
    make_node,
    make_pod,
    make_table,
    new_state,
    pod_info,
)

MB = 1024 * 1024

NODE_40_250 = [
    (["gcr.io/40:latest", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_WITH_NOTHING: list[Any] = []


def pod_with(*images: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    return make_pod(
        containers=[container(f"c{i}", image=im) for i, im in enumerate(images)],
        init_containers=[container(f"i{i}", image=im) for i, im in enumerate(init)],
    )


CASES: list[tuple[str, dict[str, Any], list[Any], list[int]]] = [
    # node1: 40MB * 1/2 spread = 20MB < 23MB -> 0;
    # node2: 250MB * 1/2 = 125MB over 2 containers -> 5.
    (
        "two images spread on two nodes, prefer the larger image one",
        pod_with("gcr.io/40", "gcr.io/250"),
        [NODE_40_250, NODE_250_10],
        [0, 5],
    ),
    # node1: 40/2 + 300/2 = 170MB -> 100*(170-23)/(2000-23) = 7; node2: 5.
    (
        "two images on one node, prefer this node",
        pod_with("gcr.io/40", "gcr.io/300"),
        [NODE_40_250, NODE_250_10],
        [7, 0],
    ),
    # node1: 2000MB/2 = 1000MB for two containers -> 100*(1000-23)/(2000-23) = 49.
    (
        "two containers double the upper threshold",
        pod_with("gcr.io/2000", "gcr.io/10"),
        [NODE_40_250, NODE_250_10],
        [49, 0],
    ),
    # One container: 1000MB reaches the 1000MB threshold -> 100.
    ("if exceed limit, use limit", pod_with("gcr.io/2000"), [NODE_40_250, NODE_250_10], [100, 0]),
    # "gcr.io/300:v1" matches node1 as written: 150MB -> 100*(150-23)/(1000-23) = 12.
    (
        "explicit tag is matched as written",
        pod_with("gcr.io/300:v1"),
        [NODE_40_250, NODE_250_10],
        [12, 0],
    ),
    ("pod with no images", pod_with(), [NODE_40_250, NODE_250_10], [0, 0]),
    (
        "init containers count too",
        pod_with("gcr.io/10", init=("gcr.io/300",)),
        [NODE_40_250, NODE_WITH_NOTHING],
        [6, 0],
    ),
    (
        "image on every node is spread to full size",
        pod_with("gcr.io/250"),
        [NODE_250_10, NODE_250_10],
        [23, 23],
    ),
]


@pytest.mark.parametrize(("name", "pod", "images", "expected"), CASES, ids=[c[0] for c in CASES])
def test_score(name: str, pod: dict[str, Any], images: list[Any], expected: list[int]) -> None:
    table = make_table([make_node(f"node{i}", images=im) for i, im in enumerate(images)])
    plugin = ImageLocality(None, FakeHandle(table))
    assert plugin.score(new_state(), pod_info(pod), table.all_nodes()).tolist() == expected


def test_index_follows_node_updates() -> None:
    table = make_table([make_node("a", images=NODE_250_10), make_node("b")])
    plugin = ImageLocality(None, FakeHandle(table))
    info = pod_info(pod_with("gcr.io/250"))
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [10, 0]
    table.upsert_node(make_node("b", images=NODE_250_10))
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [23, 23]
    table.remove_node("a")
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [23]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gcr.io/40", "gcr.io/40:latest"),
        ("gcr.io/40:v1", "gcr.io/40:v1"),
        ("localhost:5000/img", "localhost:5000/img:latest"),
        ("img@sha256:abc", "img@sha256:abc"),
    ],
)
def test_normalized_image_name(name: str, expected: str) -> None:
    assert normalized_image_name(name) == expected


def test_priority_without_containers_is_zero() -> None:
    assert calculate_priority(np.array([0]), 0).tolist() == [0]


# -- kube's cluster-wide image states ---------------------------------------------------
#
# Expected values from kube's formula: scaled = int64(float64(size) * holders/total),
# where size is the size of the node that first reported the name (cacheImpl's
# imageStates), summed over the pod's images and mapped by
# 100 * (sum - 23MB) / (1000MB * containers - 23MB), truncated.


def score(table: Any, pod: dict[str, Any]) -> list[int]:
    plugin = ImageLocality(None, FakeHandle(table))
    result: list[int] = plugin.score(new_state(), pod_info(pod), table.all_nodes()).tolist()
    return result


def test_first_holder_size_is_shared() -> None:
    # size 600MB (node0 reported it first), 2 of 3 nodes: 600 * 2/3 = 400MB
    # -> 100 * (400 - 23) / 977 = 38 on both holders; node1's own 100MB would give
    # 100 * (66.67 - 23) / 977 = 4.
    table = make_table(
        [
            make_node("node0", images=[(["img:latest"], 600 * MB)]),
            make_node("node1", images=[(["img:latest"], 100 * MB)]),
            make_node("node2"),
        ]
    )
    assert score(table, pod_with("img")) == [38, 38, 0]


def test_first_holder_size_in_the_other_order() -> None:
    # size 100MB now (node0 first): 100 * 2/3 = 66.67MB -> 4 on both holders.
    table = make_table(
        [
            make_node("node0", images=[(["img:latest"], 100 * MB)]),
            make_node("node1", images=[(["img:latest"], 600 * MB)]),
            make_node("node2"),
        ]
    )
    assert score(table, pod_with("img")) == [4, 4, 0]


def test_names_with_and_without_defaults_are_distinct() -> None:
    # Node names are not normalized: "nginx" (node2) never matches a pod, whose
    # "nginx" becomes "nginx:latest". "nginx:latest": node0 (500MB, first), node1;
    # 500 * 2/3 = 333.33MB -> 100 * (333.33 - 23) / 977 = 31 on node0 and node1.
    # "docker.io/library/nginx:latest": node0 (500MB, first) and node2 -> 31 likewise.
    table = make_table(
        [
            make_node(
                "node0", images=[(["docker.io/library/nginx:latest", "nginx:latest"], 500 * MB)]
            ),
            make_node("node1", images=[(["nginx:latest"], 200 * MB)]),
            make_node("node2", images=[(["nginx", "docker.io/library/nginx:latest"], 900 * MB)]),
        ]
    )
    assert score(table, pod_with("nginx")) == [31, 31, 0]
    assert score(table, pod_with("nginx:latest")) == [31, 31, 0]
    assert score(table, pod_with("docker.io/library/nginx")) == [31, 0, 31]


def test_name_listed_twice_on_a_node_keeps_the_first_size() -> None:
    # "a:latest" first with 50MB: 50MB * 1/1 -> 100 * (50 - 23) / 977 = 2
    # (the second entry's 800MB would give 79).
    table = make_table(
        [make_node("node0", images=[(["a:latest"], 50 * MB), (["a:latest", "a:v1"], 800 * MB)])]
    )
    assert score(table, pod_with("a")) == [2]


def test_size_stays_when_the_first_holder_leaves() -> None:
    table = make_table(
        [
            make_node("node0", images=[(["img:latest"], 600 * MB)]),
            make_node("node1", images=[(["img:latest"], 100 * MB)]),
        ]
    )
    plugin = ImageLocality(None, FakeHandle(table))
    info = pod_info(pod_with("img"))
    # 600MB * 2/2 -> 100 * (600 - 23) / 977 = 59.
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [59, 59]
    table.remove_node("node0")
    # kube drops node0 from the state but keeps its size: 600MB * 1/1 -> 59.
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [59]
    # A pod bound to node1 does not touch image states: still 59.
    table.add_pod(pod_info(make_pod(node_name="node1")))
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [59]
    # A node update is remove-then-add; node1, now the sole holder, re-creates the
    # state with its own 100MB: 100 * (100 - 23) / 977 = 7.
    table.upsert_node(make_node("node1", images=[(["img:latest"], 100 * MB)]))
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [7]
    # node0 comes back with 600MB but node1 holds the name first now: 100MB * 2/2 -> 7.
    table.upsert_node(make_node("node0", images=[(["img:latest"], 600 * MB)]))
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [7, 7]


def test_update_of_a_shared_name_keeps_the_size() -> None:
    # node1 re-reports "img:latest" with 900MB while node0 (600MB, first) holds it too:
    # the state survives node1's remove-then-add, 600 * 2/2 -> 59 on both.
    table = make_table(
        [
            make_node("node0", images=[(["img:latest"], 600 * MB)]),
            make_node("node1", images=[(["img:latest"], 100 * MB)]),
        ]
    )
    plugin = ImageLocality(None, FakeHandle(table))
    info = pod_info(pod_with("img"))
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [59, 59]
    table.upsert_node(make_node("node1", images=[(["img:latest"], 900 * MB)]))
    assert plugin.score(new_state(), info, table.all_nodes()).tolist() == [59, 59]


def with_image_volume(pod: dict[str, Any], reference: str) -> dict[str, Any]:
    pod["spec"]["volumes"] = [{"name": "data", "image": {"reference": reference}}]
    return pod


def test_image_volumes_count() -> None:
    # "registry.example/data" -> ":latest" added, node0 only (600MB), 1 of 2 nodes:
    # 300MB; "tools:v2" on both (400MB): 400MB. One container (a volume is not one),
    # so the upper threshold is 1000MB: node0 100 * (700 - 23) / 977 = 69,
    # node1 100 * (400 - 23) / 977 = 38. (Counting the volume as a container would
    # give 100 * (700 - 23) / 1977 = 34 on node0.)
    table = make_table(
        [
            make_node(
                "node0",
                images=[(["registry.example/data:latest"], 600 * MB), (["tools:v2"], 400 * MB)],
            ),
            make_node("node1", images=[(["tools:v2"], 400 * MB)]),
        ]
    )
    assert score(table, with_image_volume(pod_with("tools:v2"), "registry.example/data")) == [
        69,
        38,
    ]
    # Only the volume: 300MB -> 100 * (300 - 23) / 977 = 28 on node0.
    assert score(table, with_image_volume(pod_with("other"), "registry.example/data")) == [28, 0]
