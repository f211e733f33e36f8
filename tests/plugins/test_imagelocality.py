"""ImageLocality, with the images and sizes of kube's image_locality_test.go."""

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
