"""NodeAffinity, with inputs from kube's node_affinity_test.go."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from scheduler.api import Code, PreFilterResult, Status
from scheduler.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
    NodeAffinityArgs,
)
from tests.plugins.builders import FakeHandle, make_node, make_table, new_state, pod_info


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def preferred(*terms: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": p} for w, p in terms
            ]
        }
    }


FILTER_CASES: list[tuple[str, dict[str, Any], Any, dict[str, str], bool]] = [
    ("no selector", {}, None, {}, True),
    ("missing labels", {"node_selector": {"foo": "bar"}}, None, {}, False),
    ("same labels", {"node_selector": {"foo": "bar"}}, None, {"foo": "bar"}, True),
    (
        "node labels are superset",
        {"node_selector": {"foo": "bar"}},
        None,
        {"foo": "bar", "baz": "blah"},
        True,
    ),
    (
        "node labels are subset",
        {"node_selector": {"foo": "bar", "baz": "blah"}},
        None,
        {"foo": "bar"},
        False,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        {},
        required({"matchExpressions": [expr("foo", "In", "bar", "value2")]}),
        {"foo": "bar"},
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        {},
        required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]}),
        {"kernel-version": "0206"},
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        {},
        required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}),
        {"mem-type": "DDR3"},
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        {},
        required({"matchExpressions": [expr("GPU", "Exists")]}),
        {"GPU": "NVIDIA-GRID-K1"},
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        {},
        required({"matchExpressions": [expr("foo", "In", "value1", "value2")]}),
        {"foo": "bar"},
        False,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will "
        "match no objects and won't schedule onto the node",
        {},
        required({"matchExpressions": []}),
        {"foo": "bar"},
        False,
    ),
    (
        "Pod with no Affinity will schedule onto a node",
        {"affinity": {}},
        None,
        {"foo": "bar"},
        True,
    ),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        {},
        {"nodeAffinity": {}},
        {"foo": "bar"},
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        {},
        required(
            {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}
        ),
        {"GPU": "NVIDIA-GRID-K1"},
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        {},
        required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}),
        {"GPU": "NVIDIA-GRID-K1"},
        False,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches "
        "the node's labels and will schedule onto the node",
        {},
        required(
            {"matchExpressions": [expr("foo", "In", "bar", "value2")]},
            {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]},
        ),
        {"foo": "bar"},
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are "
        "deprecating) both are satisfied, will schedule onto the node",
        {"node_selector": {"foo": "bar"}},
        required({"matchExpressions": [expr("foo", "Exists")]}),
        {"foo": "bar"},
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing "
        "that we are deprecating) is not satisfied, won't schedule onto the node",
        {"node_selector": {"foo": "bar"}},
        required({"matchExpressions": [expr("foo", "Exists")]}),
        {"foo": "barrrrrr"},
        False,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        {},
        required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]}),
        {"foo": "bar"},
        False,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        {},
        required({"matchFields": [expr("metadata.name", "In", "node1")]}),
        {},
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        {},
        required({"matchFields": [expr("metadata.name", "In", "node2")]}),
        {},
        False,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        {},
        required(
            {"matchFields": [expr("metadata.name", "In", "node2")]},
            {"matchExpressions": [expr("foo", "In", "bar")]},
        ),
        {"foo": "bar"},
        True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        {},
        required(
            {
                "matchFields": [expr("metadata.name", "In", "node2")],
                "matchExpressions": [expr("foo", "In", "bar")],
            }
        ),
        {"foo": "bar"},
        False,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        {},
        required(
            {
                "matchFields": [expr("metadata.name", "In", "node1")],
                "matchExpressions": [expr("foo", "In", "bar")],
            }
        ),
        {"foo": "bar"},
        True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        {},
        required(
            {"matchFields": [expr("metadata.name", "In", "node2")]},
            {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]},
        ),
        {"foo": "bar"},
        False,
    ),
    (
        "Pod with a NotIn matchField on another node",
        {},
        required({"matchFields": [expr("metadata.name", "NotIn", "node2")]}),
        {},
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod_kwargs", "affinity", "labels", "fits"),
    FILTER_CASES,
    ids=[c[0][:70] for c in FILTER_CASES],
)
def test_filter(
    name: str, pod_kwargs: dict[str, Any], affinity: Any, labels: dict[str, str], fits: bool
) -> None:
    table = make_table([make_node("node1", labels=labels)])
    plugin = NodeAffinity(None, FakeHandle(table))
    kwargs = dict(pod_kwargs)
    if affinity is not None:
        kwargs["affinity"] = affinity
    info, state, nodes = pod_info(**kwargs), new_state(), table.all_nodes().view()
    pre = plugin.pre_filter(state, info, nodes)
    if isinstance(pre, Status) and pre.is_skip():
        assert fits  # nothing to filter on
        return
    result = plugin.filter(state, info, nodes)
    if fits:
        assert result.codes.tolist() == [0]
    else:
        assert result.codes.tolist() == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
        assert result.reasons_at(0) == [ERR_REASON_POD]


def test_pre_filter_skips_pods_without_constraints() -> None:
    plugin = NodeAffinity(None, FakeHandle())
    status = plugin.pre_filter(new_state(), pod_info(), make_table([]).all_nodes().view())
    assert isinstance(status, Status) and status.is_skip()


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        (
            [{"matchFields": [expr("metadata.name", "In", "node1")]}],
            PreFilterResult.only({"node1"}),
        ),
        (
            [
                {"matchFields": [expr("metadata.name", "In", "node1", "node2")]},
                {"matchFields": [expr("metadata.name", "In", "node3")]},
            ],
            PreFilterResult.only({"node1", "node2", "node3"}),
        ),
        (
            [
                {
                    "matchFields": [
                        expr("metadata.name", "In", "node1", "node2"),
                        expr("metadata.name", "In", "node2", "node3"),
                    ]
                }
            ],
            PreFilterResult.only({"node2"}),
        ),
        (
            [
                {"matchFields": [expr("metadata.name", "In", "node1")]},
                {"matchExpressions": [expr("foo", "In", "bar")]},
            ],
            None,
        ),
        (
            [
                {
                    "matchFields": [
                        expr("metadata.name", "In", "node1"),
                        expr("metadata.name", "In", "node2"),
                    ]
                }
            ],
            Status.unresolvable(ERR_REASON_CONFLICT),
        ),
    ],
)
def test_pre_filter_node_names(terms: list[dict[str, Any]], expected: Any) -> None:
    plugin = NodeAffinity(None, FakeHandle())
    got = plugin.pre_filter(
        new_state(), pod_info(affinity=required(*terms)), make_table([]).all_nodes().view()
    )
    assert got == expected


def test_added_affinity_is_enforced_first() -> None:
    args = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "foo")]}]
            }
        }
    }
    table = make_table(
        [
            make_node("node1", labels={"zone": "foo"}),
            make_node("node2", labels={"zone": "bar"}),
            make_node("node3", labels={"zone": "foo", "x": "y"}),
        ]
    )
    plugin = NodeAffinity(args, FakeHandle(table))
    info = pod_info(node_selector={"x": "y"})
    state, nodes = new_state(), table.all_nodes().view()
    assert plugin.pre_filter(state, info, nodes) is None
    result = plugin.filter(state, info, nodes)
    assert result.codes.tolist() == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE] * 2 + [0]
    assert result.reasons_at(0) == [ERR_REASON_POD]
    assert result.reasons_at(1) == [ERR_REASON_ENFORCED]
    # Even a pod without any affinity goes through Filter with addedAffinity set.
    assert plugin.pre_filter(new_state(), pod_info(), nodes) is None


AFFINITY1 = preferred((2, {"matchExpressions": [expr("foo", "In", "bar")]}))
AFFINITY2 = preferred(
    (2, {"matchExpressions": [expr("foo", "In", "bar")]}),
    (4, {"matchExpressions": [expr("key", "In", "value")]}),
    (
        5,
        {
            "matchExpressions": [
                expr("foo", "In", "bar"),
                expr("key", "In", "value"),
                expr("az", "In", "az1"),
            ]
        },
    ),
)
LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

SCORE_CASES: list[tuple[str, Any, Any, list[dict[str, str]], list[int]]] = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        {},
        None,
        [LABEL1, LABEL2, {"az": "az1"}],
        [0, 0, 0],
    ),
    (
        "no node matches preferred scheduling requirements in "
        "NodeAffinity of pod so all nodes' priority is zero",
        AFFINITY1,
        None,
        [{"az": "az1"}, LABEL2, {"az": "az1"}],
        [0, 0, 0],
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        AFFINITY1,
        None,
        [LABEL1, LABEL2, {"az": "az1"}],
        [100, 0, 0],
    ),
    (
        "all nodes matches the preferred scheduling requirements "
        "of pod but with different priorities",
        AFFINITY2,
        None,
        [LABEL1, LABEL5, LABEL2],
        [18, 100, 36],
    ),
    (
        "added affinity",
        {},
        [{"weight": 2, "preference": {"matchExpressions": [expr("key", "In", "value")]}}],
        [LABEL1, LABEL2, {"az": "az1"}],
        [0, 100, 0],
    ),
    (
        "added affinity and pod has default affinity",
        AFFINITY1,
        [{"weight": 3, "preference": {"matchExpressions": [expr("key", "In", "value")]}}],
        [LABEL1, LABEL2, {"key": "value", "foo": "bar"}],
        [40, 60, 100],
    ),
]


@pytest.mark.parametrize(
    ("name", "affinity", "added", "labels", "expected"),
    SCORE_CASES,
    ids=[c[0][:70] for c in SCORE_CASES],
)
def test_score(
    name: str, affinity: Any, added: Any, labels: list[dict[str, str]], expected: list[int]
) -> None:
    table = make_table([make_node(f"node{i + 1}", labels=lab) for i, lab in enumerate(labels)])
    args = None
    if added is not None:
        args = {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": added}}
    plugin = NodeAffinity(args, FakeHandle(table))
    info, state, nodes = pod_info(affinity=affinity), new_state(), table.all_nodes().view()
    pre = plugin.pre_score(state, info, nodes)
    if isinstance(pre, Status) and pre.is_skip():
        assert expected == [0] * len(labels)
        return
    raw = plugin.score(state, info, nodes)
    assert not isinstance(raw, Status)
    assert plugin.normalize_score(state, info, nodes, raw).tolist() == expected


def test_pre_score_error_on_invalid_preferred_term() -> None:
    plugin = NodeAffinity(None, FakeHandle())
    bad = preferred((1, {"matchExpressions": [expr("foo", "Gt", "notanumber")]}))
    status = plugin.pre_score(
        new_state(), pod_info(affinity=bad), make_table([make_node("n")]).all_nodes().view()
    )
    assert isinstance(status, Status) and status.code is Code.ERROR


@pytest.mark.parametrize(
    "args",
    [
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
            }
        },
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expr("foo", "Bogus", "x")]}]
                }
            }
        },
        {
            "addedAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]
            }
        },
        {"addedAffinity": {"podAffinity": {}}},
    ],
)
def test_invalid_args(args: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        NodeAffinityArgs.model_validate(args)
