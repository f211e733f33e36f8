"""NodeResourcesFit: filter reasons and the three scoring strategies.

Inputs and expected numbers come from kube-scheduler's fit_test.go,
least_allocated_test.go, most_allocated_test.go and
requested_to_capacity_ratio_test.go. As there, ``cpu: "4000"`` is 4000 cores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from scheduler.api import Code, Resource, Status
from scheduler.plugins.noderesources import NodeResourcesFit
from scheduler.plugins.noderesources.allocation import broken_linear
from scheduler.plugins.noderesources.fit import NodeResourcesFitArgs
from tests.plugins.builders import (
    FakeHandle,
    container,
    make_node,
    make_pod,
    make_table,
    new_state,
    pod_info,
)

EXT = "example.com/foo"


def run_filter(plugin: NodeResourcesFit, pod: dict[str, Any], table: Any) -> list[list[str]]:
    state = new_state()
    info = pod_info(pod)
    nodes = table.all_nodes()
    assert plugin.pre_filter(state, info, nodes) is None
    result = plugin.filter(state, info, nodes)
    return [sorted(result.reasons_at(i)) for i in range(len(result))]


def run_score(plugin: NodeResourcesFit, pod: dict[str, Any], table: Any) -> list[int]:
    state = new_state()
    info = pod_info(pod)
    nodes = table.all_nodes()
    assert plugin.pre_score(state, info, nodes) is None
    scores = plugin.score(state, info, nodes)
    assert not isinstance(scores, Status)
    return [int(s) for s in scores]


FILTER_CASES = [
    ("no resources requested always fits", [], [{"cpu": "10", "memory": "20"}], []),
    (
        "too many resources fails",
        [{"cpu": "1", "memory": "1"}],
        [{"cpu": "10", "memory": "20"}],
        ["Insufficient cpu", "Insufficient memory"],
    ),
    ("enough resources fits", [{"cpu": "1", "memory": "1"}], [{"cpu": "5", "memory": "5"}], []),
    (
        "one resource memory fits",
        [{"cpu": "2", "memory": "1"}],
        [{"cpu": "9", "memory": "5"}],
        ["Insufficient cpu"],
    ),
    (
        "one resource cpu fits",
        [{"cpu": "1", "memory": "2"}],
        [{"cpu": "5", "memory": "19"}],
        ["Insufficient memory"],
    ),
    ("equal edge case", [{"cpu": "5", "memory": "1"}], [{"cpu": "5", "memory": "19"}], []),
    (
        "extended resource fits",
        [{"cpu": "1", "memory": "1", EXT: "1"}],
        [{"cpu": "0", "memory": "0", EXT: "4"}],
        [],
    ),
    (
        "extended resource capacity enforced",
        [{"cpu": "1", "memory": "1", EXT: "1"}],
        [{"cpu": "0", "memory": "0", EXT: "5"}],
        [f"Insufficient {EXT}"],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod_requests", "existing", "reasons"),
    FILTER_CASES,
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    name: str,
    pod_requests: list[dict[str, str]],
    existing: list[dict[str, str]],
    reasons: list[str],
) -> None:
    # kube's node: 10 cpu, 20 memory, 32 pods, 5 of the extended resource.
    node = make_node("n", cpu="10", memory="20", pods=32, extended={EXT: "5"})
    pods = [make_pod(node_name="n", requests=[r]) for r in existing]
    table = make_table([node], pods)
    plugin = NodeResourcesFit(None, FakeHandle(table))
    assert run_filter(plugin, make_pod(requests=pod_requests), table) == [sorted(reasons)]


def test_filter_init_container_dominates() -> None:
    # kube: "too many resources fails due to init container cpu".
    node = make_node("n", cpu="10", memory="20", pods=32)
    table = make_table([node], [make_pod(node_name="n", requests=[{"cpu": "8", "memory": "19"}])])
    pod = make_pod(
        containers=[container(requests={"cpu": "1", "memory": "1"})],
        init_containers=[container("init", requests={"cpu": "3", "memory": "1"})],
    )
    plugin = NodeResourcesFit(None, FakeHandle(table))
    assert run_filter(plugin, pod, table) == [["Insufficient cpu"]]


def test_filter_counts_overhead() -> None:
    node = make_node("n", cpu="10", memory="20", pods=32)
    table = make_table([node], [make_pod(node_name="n", requests=[{"cpu": "5", "memory": "5"}])])
    plugin = NodeResourcesFit(None, FakeHandle(table))
    pod = make_pod(requests=[{"cpu": "1", "memory": "1"}], overhead={"cpu": "5"})
    assert run_filter(plugin, pod, table) == [["Insufficient cpu"]]


def test_filter_too_many_pods() -> None:
    # kube: "even without specified resources, predicate fails when there's no space
    # for additional pod".
    node = make_node("n", cpu="10", memory="20", pods=1)
    table = make_table([node], [make_pod(node_name="n", requests=[{"cpu": "5", "memory": "5"}])])
    plugin = NodeResourcesFit(None, FakeHandle(table))
    assert run_filter(plugin, make_pod(), table) == [["Too many pods"]]
    reasons = run_filter(plugin, make_pod(requests=[{"cpu": "6", "memory": "1"}]), table)
    assert reasons == [["Insufficient cpu", "Too many pods"]]


def test_filter_unknown_extended_resource_is_insufficient_everywhere() -> None:
    table = make_table(
        [make_node("a", cpu="1", memory="1Gi"), make_node("b", cpu="1", memory="1Gi")]
    )
    plugin = NodeResourcesFit(None, FakeHandle(table))
    pod = make_pod(requests=[{"example.com/bar": "1"}])
    assert run_filter(plugin, pod, table) == [["Insufficient example.com/bar"]] * 2


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        ({"ignoredResources": [EXT]}, True),
        ({"ignoredResourceGroups": ["example.com"]}, True),
        ({"ignoredResourceGroups": ["other.com"]}, False),
        ({}, False),
    ],
)
def test_filter_ignored_extended_resources(args: dict[str, Any], fits: bool) -> None:
    node = make_node("n", cpu="10", memory="20", pods=32, extended={EXT: "1"})
    table = make_table([node])
    plugin = NodeResourcesFit(args, FakeHandle(table))
    reasons = run_filter(plugin, make_pod(requests=[{EXT: "2"}]), table)
    assert reasons == [[]] if fits else [[f"Insufficient {EXT}"]]


def test_filter_result_code_is_unresolvable_beyond_allocatable() -> None:
    """kube 1.36 (InsufficientResource.Unresolvable): more than the node has at all
    is UnschedulableAndUnresolvable; more than is free, merely Unschedulable."""
    busy = make_pod("busy", node_name="full", requests=[{"cpu": "500m"}])
    table = make_table(
        [make_node("small", cpu="1", memory="1Gi"), make_node("full", cpu="4", memory="1Gi")],
        [busy],
    )
    plugin = NodeResourcesFit(None, FakeHandle(table))
    for cpu, codes in (
        ("2", [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SUCCESS]),
        ("3700m", [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE]),
    ):
        state, info = new_state(), pod_info(requests=[{"cpu": cpu}])
        plugin.pre_filter(state, info, table.all_nodes())
        result = plugin.filter(state, info, table.all_nodes())
        assert result.codes.tolist() == codes
        assert result.reasons_at(0) == ["Insufficient cpu"]


def _nodes(*specs: tuple[str, str, str]) -> list[dict[str, Any]]:
    return [make_node(name, cpu=cpu, memory=mem) for name, cpu, mem in specs]


TWO_CONTAINERS = [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]

LEAST_CASES: list[tuple[str, Any, Any, Any, Any, list[int]]] = [
    (
        "nothing scheduled, nothing requested",
        [],
        _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [],
        None,
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        None,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        [],
        _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [("node1", []), ("node1", []), ("node2", []), ("node2", [])],
        None,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        [],
        _nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        None,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        _nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        None,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        TWO_CONTAINERS,
        _nodes(("node1", "10000", "20000"), ("node2", "10000", "50000")),
        [
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        None,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        [{"cpu": "3000", "memory": "0"}],
        _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        None,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        [],
        [make_node("node1"), make_node("node2")],
        [
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        None,
        [0, 0],
    ),
    (
        "different weight on CPU and memory",
        TWO_CONTAINERS,
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        TWO_CONTAINERS,
        [
            make_node("node1", cpu="6000", memory="10000"),
            make_node("node2", cpu="6000", memory="10000", extended={EXT: "4"}),
        ],
        [],
        [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": EXT, "weight": 1}],
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        [{"cpu": "3000", "memory": "5000", EXT: "2"}],
        [
            make_node("node1", cpu="6000", memory="10000", extended={EXT: "4"}),
            make_node("node2", cpu="6000", memory="10000", extended={EXT: "10"}),
        ],
        [],
        [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": EXT, "weight": 1}],
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        [{"cpu": "3000", "memory": "4000"}],
        [
            make_node("node1", cpu="6000", memory="10000"),
            make_node("node2", cpu="6000", memory="10000", extended={EXT: "4"}),
        ],
        [],
        [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        [55, 55],
    ),
]


def _scenario(existing: list[tuple[str, list[dict[str, str]]]], nodes: list[dict[str, Any]]) -> Any:
    return make_table(nodes, [make_pod(node_name=n, requests=r) for n, r in existing])


@pytest.mark.parametrize(
    ("name", "requests", "nodes", "existing", "resources", "expected"),
    LEAST_CASES,
    ids=[c[0] for c in LEAST_CASES],
)
def test_least_allocated(
    name: str, requests: Any, nodes: Any, existing: Any, resources: Any, expected: list[int]
) -> None:
    table = _scenario(existing, nodes)
    strategy: dict[str, Any] = {"type": "LeastAllocated"}
    if resources is not None:
        strategy["resources"] = resources
    plugin = NodeResourcesFit({"scoringStrategy": strategy}, FakeHandle(table))
    assert run_score(plugin, make_pod(requests=requests), table) == expected


MOST_CASES: list[tuple[str, Any, Any, Any, Any, list[int]]] = [
    (
        "nothing scheduled, nothing requested",
        [],
        _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [],
        None,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        None,
        [62, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        [],
        _nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        None,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        _nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            ("node1", [{"cpu": "3000", "memory": "0"}]),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        None,
        [42, 55],
    ),
    (
        "resources requested with more than the node, pods scheduled with resources",
        [{"cpu": "10000", "memory": "20000"}],
        _nodes(("node1", "4000", "10000"), ("node2", "10000", "20000")),
        [],
        None,
        [100, 100],
    ),
    (
        "different weight on CPU and memory",
        TWO_CONTAINERS,
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [58, 50],
    ),
    (
        "honor extended resource if the pod requests",
        [{"cpu": "3000", "memory": "5000", EXT: "2"}],
        [
            make_node("node1", cpu="6000", memory="10000", extended={EXT: "4"}),
            make_node("node2", cpu="6000", memory="10000", extended={EXT: "10"}),
        ],
        [],
        [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": EXT, "weight": 1}],
        [50, 40],
    ),
]


def test_least_allocated_scores_incoming_pod_by_containers_not_pod_level() -> None:
    # kube 1.36's Fit scorer is built without the PodLevelResources flag (fit.go
    # getScorer), so the incoming pod is scored by its containers' requests while
    # placed pods count at their pod-level requests. Seen live in the fidelity
    # scenario ``pod-level-resources`` (tests/fidelity): node 2 cpu / 4Gi, pod-level
    # 1500m/2Gi over a 200m/128Mi container scores 93, not 37.
    mib = 1024 * 1024
    nodes = [
        make_node("m1", cpu="2", memory=str(4096 * mib)),
        make_node("m2", cpu="4", memory=str(8192 * mib)),
    ]
    placed = make_pod(node_name="m2", requests=[{"cpu": "100m", "memory": str(64 * mib)}])
    placed["spec"]["resources"] = {"requests": {"cpu": "2500m", "memory": str(1024 * mib)}}
    table = make_table(nodes, [placed])
    pod = make_pod(requests=[{"cpu": "200m", "memory": str(128 * mib)}])
    pod["spec"]["resources"] = {"requests": {"cpu": "1500m", "memory": str(2048 * mib)}}
    plugin = NodeResourcesFit(None, FakeHandle(table))
    # m1: cpu (2000-200)/2000 -> 90, memory (4096-128)/4096 -> 96: 93.
    # m2: cpu (4000-2700)/4000 -> 32, memory (8192-1152)/8192 -> 85: 58.
    assert run_score(plugin, pod, table) == [93, 58]
    # The filter uses the pod-level requests: 1800m fits m1, not m2 (1500m free).
    pod["spec"]["resources"]["requests"]["cpu"] = "1800m"
    assert run_filter(plugin, pod, table) == [[], ["Insufficient cpu"]]


@pytest.mark.parametrize(
    ("name", "requests", "nodes", "existing", "resources", "expected"),
    MOST_CASES,
    ids=[c[0] for c in MOST_CASES],
)
def test_most_allocated(
    name: str, requests: Any, nodes: Any, existing: Any, resources: Any, expected: list[int]
) -> None:
    table = _scenario(existing, nodes)
    strategy: dict[str, Any] = {"type": "MostAllocated"}
    if resources is not None:
        strategy["resources"] = resources
    plugin = NodeResourcesFit({"scoringStrategy": strategy}, FakeHandle(table))
    assert run_score(plugin, make_pod(requests=requests), table) == expected


LEAST_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
RTCR_CASES: list[tuple[str, Any, Any, Any, list[int]]] = [
    (
        "nothing scheduled, nothing requested",
        [],
        _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [("node1", []), ("node1", [])],
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [("node1", []), ("node1", [])],
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        [],
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [
            ("node1", [{"cpu": "3000", "memory": "5000"}]),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        [38, 50],
    ),
]


@pytest.mark.parametrize(
    ("name", "requests", "nodes", "existing", "expected"),
    RTCR_CASES,
    ids=[c[0] for c in RTCR_CASES],
)
def test_requested_to_capacity_ratio(
    name: str, requests: Any, nodes: Any, existing: Any, expected: list[int]
) -> None:
    table = _scenario(existing, nodes)
    args = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": LEAST_SHAPE},
        }
    }
    plugin = NodeResourcesFit(args, FakeHandle(table))
    assert run_score(plugin, make_pod(requests=requests), table) == expected


MB = 1024 * 1024


@pytest.mark.parametrize(
    ("requests", "existing", "expected"),
    [
        ([], [("node1", [])], [0, 0]),
        ([{"intel.com/foo": "2"}], [("node1", [])], [2, 5]),
        ([{"intel.com/foo": "2"}], [("node2", [{"intel.com/foo": "2"}])], [2, 10]),
        ([{"intel.com/foo": "4"}], [("node1", [])], [5, 10]),
    ],
)
def test_bin_packing_single_extended(requests: Any, existing: Any, expected: list[int]) -> None:
    nodes = [
        make_node("node1", cpu="4000", memory=str(10000 * MB), extended={"intel.com/foo": 8}),
        make_node("node2", cpu="4000", memory=str(10000 * MB), extended={"intel.com/foo": 4}),
    ]
    table = _scenario(existing, nodes)
    args = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "intel.com/foo", "weight": 1}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]
            },
        }
    }
    plugin = NodeResourcesFit(args, FakeHandle(table))
    assert run_score(plugin, make_pod(requests=requests), table) == expected


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        ),
        (
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        ),
    ],
)
def test_broken_linear_function(
    points: list[tuple[int, int]], assertions: list[tuple[int, int]]
) -> None:
    p = np.array([a for a, _ in assertions], dtype=np.int64)
    assert broken_linear(p, points).tolist() == [e for _, e in assertions]


def test_broken_linear_truncates_toward_zero_on_falling_segments() -> None:
    # Go: 100 + (0-100)*(1-0)/(100-0) = 100 + (-100/100) = 99; (-1)/3 truncates to 0.
    assert broken_linear(np.array([1]), [(0, 100), (100, 0)]).tolist() == [99]
    assert broken_linear(np.array([1]), [(0, 10), (3, 9)]).tolist() == [10]


@pytest.mark.parametrize(
    "args",
    [
        {
            "scoringStrategy": {
                "resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}]
            }
        },
        {
            "scoringStrategy": {
                "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}]
            }
        },
        {
            "scoringStrategy": {
                "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}]
            }
        },
        {"scoringStrategy": {"type": "Unknown"}},
        {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 10, "score": 1}, {"utilization": 10, "score": 2}]
                },
            }
        },
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 11}]},
            }
        },
        {"ignoredResourceGroups": ["example.com/foo"]},
        {"unknownField": 1},
    ],
)
def test_invalid_args(args: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        NodeResourcesFitArgs.model_validate(args)


def test_default_args_are_kubes() -> None:
    args = NodeResourcesFitArgs()
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
    ]
    dumped = args.model_dump(by_alias=True)
    assert set(dumped) == {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}
    empty = NodeResourcesFitArgs.model_validate(
        {"scoringStrategy": {"type": "MostAllocated", "resources": []}}
    )
    assert len(empty.scoring_strategy.resources) == 2


def test_events() -> None:
    plugin = NodeResourcesFit(None, FakeHandle())
    events = plugin.events_to_register()
    assert {e.event.resource for e in events} == {Resource.POD, Resource.NODE, "DeviceClass"}
    pod_event = next(e for e in events if e.event.resource == Resource.POD)
    assert pod_event.hint is not None
    target = pod_info(requests=[{"cpu": "1"}])
    placed = make_pod(node_name="n1")
    unplaced = make_pod()
    assert pod_event.hint(target, placed, None).value == "Queue"
    assert pod_event.hint(target, unplaced, None).value == "QueueSkip"
