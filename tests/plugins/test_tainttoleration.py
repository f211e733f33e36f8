"""TaintToleration, with kube's taint_toleration_test.go inputs."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import Code, Resource
from scheduler.plugins.tainttoleration import ERR_REASON_UNTOLERATED, TaintToleration
from tests.plugins.builders import FakeHandle, make_node, make_table, new_state, pod_info


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, operator: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


FILTER_CASES: list[tuple[str, Any, Any, bool]] = [
    (
        "a pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [],
        [taint("dedicated", "user1", "NoSchedule")],
        False,
    ),
    (
        "a pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [tol("dedicated", "Equal", "user1", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
        True,
    ),
    (
        "a pod which can't be scheduled on a dedicated node "
        "assigned to user2 with effect NoSchedule",
        [tol("dedicated", "Equal", "user2", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
        False,
    ),
    (
        "a pod can be scheduled onto the node, with a toleration uses "
        "operator Exists that tolerates the taints on the node",
        [tol("foo", "Exists", "", "NoSchedule")],
        [taint("foo", "bar", "NoSchedule")],
        True,
    ),
    (
        "a pod has multiple tolerations, node has multiple taints, all the "
        "taints are tolerated, pod can be scheduled onto the node",
        [tol("dedicated", "Equal", "user2", "NoSchedule"), tol("foo", "Exists", "", "NoSchedule")],
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        True,
    ),
    (
        "a pod has a toleration that keys and values match the taint on the node, but "
        "(non-empty) effect doesn't match, can't be scheduled onto the node",
        [tol("foo", "Equal", "bar", "PreferNoSchedule")],
        [taint("foo", "bar", "NoSchedule")],
        False,
    ),
    (
        "The pod has a toleration that keys and values match the taint on the node, "
        "the effect of toleration is empty, and the effect of taint is NoSchedule. "
        "Pod can be scheduled onto the node",
        [tol("foo", "Equal", "bar", "")],
        [taint("foo", "bar", "NoSchedule")],
        True,
    ),
    (
        "The pod has a toleration that key and value don't match the taint on the node, but the "
        "effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        [tol("dedicated", "Equal", "user2", "NoSchedule")],
        [taint("dedicated", "user1", "PreferNoSchedule")],
        True,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is "
        "PreferNoSchedule. Pod can be scheduled onto the node",
        [],
        [taint("dedicated", "user1", "PreferNoSchedule")],
        True,
    ),
    (
        "untolerated NoExecute taint blocks",
        [],
        [taint("node.kubernetes.io/unreachable", "", "NoExecute")],
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "taints", "fits"), FILTER_CASES, ids=[c[0][:60] for c in FILTER_CASES]
)
def test_filter(name: str, tolerations: Any, taints: Any, fits: bool) -> None:
    table = make_table([make_node("nodeA", taints=taints), make_node("clean")])
    plugin = TaintToleration(None, FakeHandle(table))
    info = pod_info(tolerations=tolerations)
    result = plugin.filter(new_state(), info, table.all_nodes().view())
    if fits:
        assert result.codes.tolist() == [0, 0]
    else:
        assert result.codes.tolist() == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 0]
        assert result.reasons_at(0) == [ERR_REASON_UNTOLERATED]


def test_filter_verdicts_follow_new_taints() -> None:
    table = make_table([make_node("a", taints=[taint("x", "1", "NoSchedule")])])
    plugin = TaintToleration(None, FakeHandle(table))
    info = pod_info(tolerations=[tol("x", "Exists", "", "")])
    assert plugin.filter(new_state(), info, table.all_nodes().view()).feasible.tolist() == [True]
    table.upsert_node(make_node("b", taints=[taint("x", "1", "NoSchedule")]))
    more = make_table(
        [
            make_node("a", taints=[taint("x", "1", "NoSchedule")]),
            make_node("c", taints=[taint("y", "", "NoExecute")]),
        ]
    )
    result = plugin.filter(new_state(), info, more.all_nodes().view())
    assert result.feasible.tolist() == [True, False]


SCORE_CASES: list[tuple[str, Any, list[Any], list[int]]] = [
    (
        "node with taints tolerated by the pod, gets a higher score "
        "than those node with intolerable taints",
        [tol("foo", "Equal", "bar", "PreferNoSchedule")],
        [[taint("foo", "bar", "PreferNoSchedule")], [taint("foo", "blah", "PreferNoSchedule")]],
        [100, 0],
    ),
    (
        "the nodes that all of their taints are tolerated by the pod, get the "
        "same score, no matter how many tolerable taints a node has",
        [
            tol("cpu-type", "Equal", "arm64", "PreferNoSchedule"),
            tol("disk-type", "Equal", "ssd", "PreferNoSchedule"),
        ],
        [
            [],
            [taint("cpu-type", "arm64", "PreferNoSchedule")],
            [
                taint("cpu-type", "arm64", "PreferNoSchedule"),
                taint("disk-type", "ssd", "PreferNoSchedule"),
            ],
        ],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [tol("foo", "Equal", "bar", "PreferNoSchedule")],
        [
            [],
            [taint("cpu-type", "arm64", "PreferNoSchedule")],
            [
                taint("cpu-type", "arm64", "PreferNoSchedule"),
                taint("disk-type", "ssd", "PreferNoSchedule"),
            ],
        ],
        [100, 50, 0],
    ),
    (
        "only taints and tolerations that have effect "
        "PreferNoSchedule are checked by prioritizeTaintsFunction",
        [
            tol("cpu-type", "Equal", "arm64", "NoSchedule"),
            tol("disk-type", "Equal", "ssd", "NoSchedule"),
        ],
        [
            [],
            [taint("cpu-type", "arm64", "NoSchedule")],
            [
                taint("cpu-type", "arm64", "PreferNoSchedule"),
                taint("disk-type", "ssd", "PreferNoSchedule"),
            ],
        ],
        [100, 100, 0],
    ),
    (
        "Default behaviour No taints and tolerations, lands on node with no taints",
        [],
        [[], [taint("cpu-type", "arm64", "PreferNoSchedule")]],
        [100, 0],
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "node_taints", "expected"),
    SCORE_CASES,
    ids=[c[0][:60] for c in SCORE_CASES],
)
def test_score(name: str, tolerations: Any, node_taints: list[Any], expected: list[int]) -> None:
    table = make_table([make_node(f"node{i}", taints=t) for i, t in enumerate(node_taints)])
    plugin = TaintToleration(None, FakeHandle(table))
    state, info, nodes = new_state(), pod_info(tolerations=tolerations), table.all_nodes().view()
    assert plugin.pre_score(state, info, nodes) is None
    raw = plugin.score(state, info, nodes)
    assert plugin.normalize_score(state, info, nodes, raw).tolist() == expected


def test_events() -> None:
    events = TaintToleration(None, FakeHandle()).events_to_register()
    assert {e.event.resource for e in events} == {Resource.NODE, Resource.UNSCHEDULED_POD}
