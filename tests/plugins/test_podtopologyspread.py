"""PodTopologySpread against kube-scheduler's own cases.

Inputs and expected verdicts/scores are carried over from kube-scheduler's
``podtopologyspread/filtering_test.go`` and ``scoring_test.go``
(TestSingleConstraint, TestMultipleConstraints, TestPreFilterState,
TestPodTopologySpreadScore); hooks are called directly on a NodeTable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pytest
from pydantic import ValidationError

from scheduler.api import ActionType, Code, CycleState, Handle, QueueingHint, Resource, Status
from scheduler.plugins.podtopologyspread import (
    ERR_CONSTRAINTS_NOT_MATCH,
    ERR_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_KEY,
    Args,
    PodTopologySpread,
    PreFilterState,
)
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo
from tests.plugins.builders import make_node, make_pod, make_table

HOST = "kubernetes.io/hostname"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
EMPTY: dict[str, Any] = {}
NULL = None
UNSET = object()
NO_SCHEDULE_TAINT = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]

S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# -- builders -----------------------------------------------------------------------


def constraint(
    max_skew: int,
    key: str,
    when: str = "DoNotSchedule",
    selector: Any = FOO,
    *,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if node_affinity_policy is not None:
        c["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy is not None:
        c["nodeTaintsPolicy"] = node_taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def pod(
    name: str = "p",
    labels: Mapping[str, str] | None = None,
    constraints: Sequence[Mapping[str, Any]] = (),
    *,
    node: str | None = None,
    namespace: str = "default",
    terminating: bool = False,
    owner: Mapping[str, Any] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    raw = make_pod(
        name,
        namespace=namespace,
        node_name=node,
        labels=labels if labels is not None else {"foo": ""},
        node_selector=node_selector,
        affinity=affinity,
    )
    if constraints:
        raw["spec"]["topologySpreadConstraints"] = [dict(c) for c in constraints]
    if terminating:
        raw["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if owner is not None:
        raw["metadata"]["ownerReferences"] = [dict(owner, controller=True)]
    return raw


def node_in(name: str, key: str, value: str) -> dict[str, Any]:
    """A node with the given ``key`` label and ``node``/hostname labels, as kube's tests."""
    return make_node(name, labels={key: value, "node": name})


def zoned(*specs: tuple[str, str]) -> list[dict[str, Any]]:
    return [make_node(n, labels={"zone": z, "node": n}) for n, z in specs]


FOUR_NODES = zoned(
    ("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")
)


def placed(
    *specs: tuple[str, str], labels: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Existing pods: (name, node), all labelled ``foo`` unless told otherwise."""
    return [pod(n, labels, node=nd) for n, nd in specs]


SPREAD_2_1_0_3 = placed(
    ("p-a1", "node-a"),
    ("p-a2", "node-a"),
    ("p-b1", "node-b"),
    ("p-y1", "node-y"),
    ("p-y2", "node-y"),
    ("p-y3", "node-y"),
)


class StoreHandle:
    """The handle surface this plugin uses: ``store()`` (and only for what a test gives)."""

    def __init__(self, stores: Mapping[tuple[str, str, str], list[dict[str, Any]]]) -> None:
        self._stores = stores

    def store(self, group: str, version: str, plural: str) -> ListStore:
        try:
            return ListStore(self._stores[(group, version, plural)])
        except KeyError:
            raise LookupError(f"{plural} are not watched") from None


class ListStore:
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        for obj in self.objects:
            meta = obj.get("metadata") or {}
            if meta.get("name") == name and (meta.get("namespace") or "") == namespace:
                return obj
        return None

    def list(self, namespace: str | None = None) -> list[Mapping[str, Any]]:
        return [
            o
            for o in self.objects
            if namespace is None or (o.get("metadata") or {}).get("namespace") == namespace
        ]


def plugin(args: Any = None, stores: Any = None) -> PodTopologySpread:
    return PodTopologySpread(args, cast(Handle, StoreHandle(stores or {})))


def subset(table: NodeTable, names: Sequence[str]) -> NodeSet:
    rows = np.asarray([table.row_of(n) for n in names], dtype=np.int64)
    return NodeSet(table, rows)


def run_filter(
    pl: PodTopologySpread, table: NodeTable, incoming: dict[str, Any]
) -> dict[str, Code]:
    state = CycleState()
    info = PodInfo.from_dict(incoming)
    nodes = table.all_nodes()
    status = pl.pre_filter(state, info, nodes)
    assert status is None or (isinstance(status, Status) and status.is_skip())
    result = pl.filter(state, info, nodes)
    assert not isinstance(result, Status)
    return {name: Code(int(c)) for name, c in zip(nodes.names, result.codes, strict=True)}


def run_score(
    pl: PodTopologySpread, table: NodeTable, incoming: dict[str, Any], names: Sequence[str]
) -> dict[str, int]:
    state = CycleState()
    info = PodInfo.from_dict(incoming)
    nodes = subset(table, names)
    status = pl.pre_score(state, info, nodes)
    assert status is None, status
    raw = pl.score(state, info, nodes)
    assert not isinstance(raw, Status)
    normalized = pl.normalize_score(state, info, nodes, raw)
    assert normalized is not None
    return dict(zip(names, normalized.tolist(), strict=True))


# -- Filter: TestSingleConstraint -----------------------------------------------------

SINGLE_CONSTRAINT_CASES = [
    (
        "no existing pods",
        pod(constraints=[constraint(1, "zone")]),
        FOUR_NODES,
        [],
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "no existing pods, incoming pod doesn't match itself",
        pod(constraints=[constraint(1, "zone", selector=BAR)]),
        FOUR_NODES,
        [],
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "existing pods in a different namespace do not count",
        pod(constraints=[constraint(1, "zone")]),
        FOUR_NODES,
        [
            pod("p-a1", node="node-a", namespace="ns1"),
            pod("p-b1", node="node-a", namespace="ns2"),
            pod("p-x1", node="node-x"),
            pod("p-y1", node="node-y"),
        ],
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "existing pods do not match null selector",
        pod(constraints=[constraint(1, "zone", selector=NULL)]),
        FOUR_NODES,
        placed(("p-x1", "node-x"), ("p-y1", "node-y")),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        pod(constraints=[constraint(1, "zone")]),
        FOUR_NODES,
        SPREAD_2_1_0_3,
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        pod(constraints=[constraint(1, "zone")]),
        [
            make_node("node-a", labels={"zone": "zone1", "node": "node-a"}),
            make_node("node-b", labels={"zon": "zone1", "node": "node-b"}),
            make_node("node-x", labels={"zone": "zone2", "node": "node-x"}),
            make_node("node-y", labels={"zone": "zone2", "node": "node-y"}),
        ],
        placed(("p-a1", "node-a"), ("p-b1", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y")),
        {"node-a": S, "node-b": UU, "node-x": U, "node-y": U},
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        pod(constraints=[constraint(1, "rack")]),
        zoned(("node-a", "zone1"), ("node-x", "zone2")),
        [],
        {"node-a": UU, "node-x": UU},
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        pod(constraints=[constraint(1, "node")]),
        FOUR_NODES,
        SPREAD_2_1_0_3,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        pod(constraints=[constraint(2, "node")]),
        FOUR_NODES,
        SPREAD_2_1_0_3,
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        pod(labels={"bar": ""}, constraints=[constraint(1, "node")]),
        FOUR_NODES,
        SPREAD_2_1_0_3,
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        pod(
            constraints=[constraint(1, "node")],
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "node",
                                        "operator": "In",
                                        "values": ["node-a", "node-y"],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
        ),
        FOUR_NODES,
        SPREAD_2_1_0_3,
        # node-b and node-x still pass: NodeAffinity is not part of this test.
        {"node-a": S, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "terminating Pods should be excluded",
        pod(constraints=[constraint(1, "node")]),
        [node_in("node-a", "node", "node-a"), node_in("node-b", "node", "node-b")],
        [pod("p-a", node="node-a", terminating=True), pod("p-b", node="node-b")],
        {"node-a": S, "node-b": U},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        pod(
            constraints=[constraint(1, "zone")],
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "node", "operator": "NotIn", "values": ["node-b"]}
                                ]
                            }
                        ]
                    }
                }
            },
        ),
        FOUR_NODES,
        placed(("p-b1", "node-b"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "pods spread as 2/2/1, maxSkew 2, fewer domains than minDomains: only the third fits",
        pod(constraints=[constraint(2, "node", min_domains=4)]),
        [node_in(n, "node", n) for n in ("node-a", "node-b", "node-c")],
        placed(
            ("p-a1", "node-a"),
            ("p-a2", "node-a"),
            ("p-b1", "node-b"),
            ("p-b2", "node-b"),
            ("p-c1", "node-c"),
        ),
        {"node-a": U, "node-b": U, "node-c": S},
    ),
    (
        "pods spread as 2/2/1, maxSkew 2, more domains than minDomains: all fit",
        pod(constraints=[constraint(2, "node", min_domains=2)]),
        [node_in(n, "node", n) for n in ("node-a", "node-b", "node-c")],
        placed(
            ("p-a1", "node-a"),
            ("p-a2", "node-a"),
            ("p-b1", "node-b"),
            ("p-b2", "node-b"),
            ("p-c1", "node-c"),
        ),
        {"node-a": S, "node-b": S, "node-c": S},
    ),
    (
        "zones as 2/1, maxSkew 2, fewer domains than minDomains: the zone2 nodes fit",
        pod(constraints=[constraint(2, "zone", min_domains=3)]),
        FOUR_NODES,
        placed(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "zones as 2/1, maxSkew 2, more domains than minDomains: all fit",
        pod(constraints=[constraint(2, "zone", min_domains=1)]),
        FOUR_NODES,
        placed(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
]

_POLICY_NODES = [
    make_node("node-a", labels={"node": "node-a", "foo": ""}),
    make_node("node-b", labels={"node": "node-b", "foo": ""}),
    make_node("node-x", labels={"node": "node-x", "foo": ""}),
    make_node("node-y", labels={"node": "node-y"}),
]
_TAINT_NODES = [
    *_POLICY_NODES[:3],
    make_node("node-y", labels={"node": "node-y"}, taints=NO_SCHEDULE_TAINT),
]
_POLICY_PODS = placed(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y"))
_FOO_NODE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}
            ]
        }
    }
}

SINGLE_CONSTRAINT_CASES += [
    (
        "NodeAffinityPolicy honored with nodeSelector",
        pod(constraints=[constraint(1, "node")], node_selector={"foo": ""}),
        _POLICY_NODES,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "NodeAffinityPolicy ignored with nodeSelector",
        pod(
            constraints=[constraint(1, "node", node_affinity_policy="Ignore")],
            node_selector={"foo": ""},
        ),
        _POLICY_NODES,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        pod(constraints=[constraint(1, "node")], affinity=_FOO_NODE_AFFINITY),
        _POLICY_NODES,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod(
            constraints=[constraint(1, "node", node_affinity_policy="Ignore")],
            affinity=_FOO_NODE_AFFINITY,
        ),
        _POLICY_NODES,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "NodeTaintsPolicy honored",
        pod(constraints=[constraint(1, "node", node_taints_policy="Honor")]),
        _TAINT_NODES,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "NodeTaintsPolicy ignored",
        pod(constraints=[constraint(1, "node")]),
        _TAINT_NODES,
        _POLICY_PODS,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
]

# -- Filter: TestMultipleConstraints --------------------------------------------------

ZONE_AND_NODE = [constraint(1, "zone"), constraint(1, "node")]
FOO_ZONE_BAR_NODE = [constraint(1, "zone"), constraint(1, "node", selector=BAR)]

MULTIPLE_CONSTRAINT_CASES = [
    (
        "two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        pod(constraints=ZONE_AND_NODE),
        FOUR_NODES,
        SPREAD_2_1_0_3,
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "two constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        pod(constraints=ZONE_AND_NODE),
        FOUR_NODES,
        [*SPREAD_2_1_0_3, pod("p-y4", node="node-y")],
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    ),
    (
        "constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        pod(labels={"foo": "", "bar": ""}, constraints=FOO_ZONE_BAR_NODE),
        FOUR_NODES,
        [pod("p-a1", {"foo": ""}, node="node-a"), pod("p-y1", {"bar": ""}, node="node-y")],
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        pod(labels={"foo": "", "bar": ""}, constraints=FOO_ZONE_BAR_NODE),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-x1", {"bar": ""}, node="node-x"),
            pod("p-y1", {"bar": ""}, node="node-y"),
        ],
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    ),
    (
        "constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        pod(labels={"foo": "", "bar": ""}, constraints=FOO_ZONE_BAR_NODE),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-a2", {"foo": "", "bar": ""}, node="node-a"),
            pod("p-y1", {"foo": ""}, node="node-y"),
            pod("p-y2", {"foo": "", "bar": ""}, node="node-y"),
            pod("p-y3", {"foo": ""}, node="node-y"),
        ],
        {"node-a": U, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "constraints hold different labelSelectors but pod doesn't match itself on 'zone'",
        pod(labels={"bar": ""}, constraints=FOO_ZONE_BAR_NODE),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-x1", {"bar": ""}, node="node-x"),
            pod("p-y1", {"bar": ""}, node="node-y"),
        ],
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "two constraints on zone and node, absence of label 'node' on node-x",
        pod(constraints=ZONE_AND_NODE),
        [
            make_node("node-a", labels={"zone": "zone1", "node": "node-a"}),
            make_node("node-b", labels={"zone": "zone1", "node": "node-b"}),
            make_node("node-x", labels={"zone": "zone2"}),
            make_node("node-y", labels={"zone": "zone2", "node": "node-y"}),
        ],
        placed(("p-a1", "node-a"), ("p-y3", "node-y")),
        {"node-a": U, "node-b": S, "node-x": UU, "node-y": U},
    ),
]


@pytest.mark.parametrize(
    ("incoming", "nodes", "existing", "want"),
    [
        pytest.param(*case[1:], id=case[0])
        for case in SINGLE_CONSTRAINT_CASES + MULTIPLE_CONSTRAINT_CASES
    ],
)
def test_filter_matches_kube(
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    want: dict[str, Code],
) -> None:
    table = make_table(nodes, existing)
    assert run_filter(plugin({"defaultingType": "List"}), table, incoming) == want


def test_filter_reasons_and_codes() -> None:
    table = make_table(
        [
            make_node("node-a", labels={"zone": "zone1", "node": "node-a"}),
            make_node("node-b", labels={"zon": "zone1", "node": "node-b"}),
            make_node("node-x", labels={"zone": "zone2", "node": "node-x"}),
        ],
        placed(("p-a1", "node-a"), ("p-x1", "node-x"), ("p-x2", "node-x")),
    )
    pl = plugin()
    state = CycleState()
    info = PodInfo.from_dict(pod(constraints=[constraint(1, "zone")]))
    nodes = table.all_nodes()
    assert pl.pre_filter(state, info, nodes) is None
    result = pl.filter(state, info, nodes)
    assert not isinstance(result, Status)
    assert [result.reasons_at(i) for i in range(3)] == [
        [],
        [ERR_NODE_LABEL_NOT_MATCH],
        [ERR_CONSTRAINTS_NOT_MATCH],
    ]
    assert result.reason_counts() == {ERR_NODE_LABEL_NOT_MATCH: 1, ERR_CONSTRAINTS_NOT_MATCH: 1}


def test_first_failing_constraint_decides_the_code() -> None:
    # On node-c the zone constraint fails on skew before its missing "node"
    # label is looked at, so it is Unschedulable, not UnschedulableAndUnresolvable.
    table = make_table(
        [
            make_node("node-a", labels={"zone": "zone1", "node": "node-a"}),
            make_node("node-b", labels={"zone": "zone2", "node": "node-b"}),
            make_node("node-c", labels={"zone": "zone1"}),
        ],
        placed(("p-a1", "node-a"), ("p-a2", "node-a")),
    )
    got = run_filter(plugin(), table, pod(constraints=ZONE_AND_NODE))
    assert got == {"node-a": U, "node-b": S, "node-c": U}


# -- PreFilter state: TestPreFilterState ------------------------------------------------


def _state_of(
    table: NodeTable, incoming: dict[str, Any], pl: PodTopologySpread | None = None
) -> PreFilterState:
    state = CycleState()
    (pl or plugin()).pre_filter(state, PodInfo.from_dict(incoming), table.all_nodes())
    s = state.read(PRE_FILTER_KEY)
    assert isinstance(s, PreFilterState)
    return s


def _domain_counts(table: NodeTable, s: PreFilterState, i: int) -> dict[str, int]:
    key = s.constraints[i].topology_key
    names = table.labels.value_names[key]
    return {names[v]: int(s.counts[i][v]) for v in np.flatnonzero(s.present[i])}


@pytest.mark.parametrize(
    ("name", "incoming", "nodes", "existing", "want_counts", "want_min"),
    [
        (
            "clean cluster with one spreadConstraint",
            pod(constraints=[constraint(5, "zone", selector={"matchLabels": {"foo": "bar"}})]),
            FOUR_NODES,
            [],
            [{"zone1": 0, "zone2": 0}],
            [0],
        ),
        (
            "normal case with one spreadConstraint",
            pod(constraints=[constraint(1, "zone")]),
            FOUR_NODES,
            placed(
                ("p-a1", "node-a"),
                ("p-a2", "node-a"),
                ("p-b1", "node-b"),
                ("p-y1", "node-y"),
                ("p-y2", "node-y"),
            ),
            [{"zone1": 3, "zone2": 2}],
            [2],
        ),
        (
            "normal case with one spreadConstraint, on a 3-zone cluster",
            pod(constraints=[constraint(1, "zone")]),
            [*FOUR_NODES, *zoned(("node-o", "zone3"), ("node-p", "zone3"))],
            placed(
                ("p-a1", "node-a"),
                ("p-a2", "node-a"),
                ("p-b1", "node-b"),
                ("p-y1", "node-y"),
                ("p-y2", "node-y"),
            ),
            [{"zone1": 3, "zone2": 2, "zone3": 0}],
            [0],
        ),
        (
            "namespace mismatch doesn't count",
            pod(constraints=[constraint(1, "zone")]),
            FOUR_NODES,
            [
                pod("p-a1", node="node-a"),
                pod("p-a2", node="node-a", namespace="ns1"),
                pod("p-b1", node="node-b"),
                pod("p-y1", node="node-y", namespace="ns2"),
                pod("p-y2", node="node-y"),
            ],
            [{"zone1": 2, "zone2": 1}],
            [1],
        ),
        (
            "normal case with two spreadConstraints",
            pod(constraints=ZONE_AND_NODE),
            FOUR_NODES,
            [*SPREAD_2_1_0_3, pod("p-y4", node="node-y")],
            [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
            [3, 0],
        ),
        (
            "soft spreadConstraints should be bypassed",
            pod(
                constraints=[
                    constraint(1, "zone", "ScheduleAnyway"),
                    constraint(1, "zone"),
                    constraint(1, "node", "ScheduleAnyway"),
                    constraint(1, "node"),
                ]
            ),
            zoned(("node-a", "zone1"), ("node-b", "zone1"), ("node-y", "zone2")),
            [*SPREAD_2_1_0_3, pod("p-y4", node="node-y")],
            [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
            [3, 1],
        ),
        (
            "matchLabelKeys are ANDed with the selector",
            pod(
                labels={"foo": "", "bar": "a"},
                constraints=[constraint(1, "zone", match_label_keys=["bar"])],
            ),
            FOUR_NODES,
            [
                pod("p-a1", {"foo": "", "bar": "a"}, node="node-a"),
                pod("p-a2", {"foo": "", "bar": "b"}, node="node-a"),
                pod("p-y1", {"foo": ""}, node="node-y"),
            ],
            [{"zone1": 1, "zone2": 0}],
            [0],
        ),
    ],
)
def test_pre_filter_counts_per_domain(
    name: str,
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    want_counts: list[dict[str, int]],
    want_min: list[int],
) -> None:
    table = make_table(nodes, existing)
    s = _state_of(table, incoming)
    assert [_domain_counts(table, s, i) for i in range(len(s.constraints))] == want_counts
    assert [s.min_match(i) for i in range(len(s.constraints))] == want_min
    assert s.domains == [len(c) for c in want_counts]


def test_pre_filter_skips_pods_without_hard_constraints() -> None:
    table = make_table(FOUR_NODES)
    state = CycleState()
    info = PodInfo.from_dict(pod(constraints=[constraint(1, "zone", "ScheduleAnyway")]))
    status = plugin().pre_filter(state, info, table.all_nodes())
    assert isinstance(status, Status) and status.is_skip()
    result = plugin().filter(state, info, table.all_nodes())
    assert not isinstance(result, Status) and result.feasible.all()


def test_filter_without_pre_filter_is_an_error() -> None:
    table = make_table(FOUR_NODES)
    result = plugin().filter(CycleState(), PodInfo.from_dict(pod()), table.all_nodes())
    assert isinstance(result, Status) and result.code is Code.ERROR


def test_invalid_selector_is_an_error_at_pre_filter() -> None:
    bad = {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["{{.bad}}"]}]}
    table = make_table(FOUR_NODES)
    status = plugin().pre_filter(
        CycleState(),
        PodInfo.from_dict(pod(constraints=[constraint(1, "zone", selector=bad)])),
        table.all_nodes(),
    )
    assert isinstance(status, Status) and status.code is Code.ERROR


# -- PreFilter extensions (preemption) --------------------------------------------------


def test_add_and_remove_pod_update_a_cloned_state() -> None:
    table = make_table(FOUR_NODES, SPREAD_2_1_0_3)
    pl = plugin()
    state = CycleState()
    info = PodInfo.from_dict(pod(constraints=[constraint(1, "node")]))
    nodes = table.all_nodes()
    pl.pre_filter(state, info, nodes)
    copy = state.clone()
    x = table.node_info(table.row_of("node-x") or 0)
    y = table.node_info(table.row_of("node-y") or 0)
    # As if a matching pod ran on node-x (the minimum goes from 0 to 1) and
    # one of node-y's pods were preempted (3 -> 2): skew 2/1/1/2.
    assert pl.pre_filter_add_pod(copy, info, PodInfo.from_dict(pod("new")), x) is None
    victim = table.pods[y.row]["default/p-y1"]
    assert pl.pre_filter_remove_pod(copy, info, victim, y) is None
    result = pl.filter(copy, info, nodes)
    assert not isinstance(result, Status)
    assert dict(zip(nodes.names, result.feasible.tolist(), strict=True)) == {
        "node-a": False,
        "node-b": True,
        "node-x": True,
        "node-y": False,
    }
    # The original state is untouched: only node-x fits there.
    original = pl.filter(state, info, nodes)
    assert not isinstance(original, Status)
    assert original.feasible.tolist() == [False, False, True, False]


def test_add_pod_ignores_other_namespaces_and_non_matching_pods() -> None:
    table = make_table(FOUR_NODES, SPREAD_2_1_0_3)
    pl = plugin()
    state = CycleState()
    info = PodInfo.from_dict(pod(constraints=[constraint(1, "node")]))
    pl.pre_filter(state, info, table.all_nodes())
    x = table.node_info(table.row_of("node-x") or 0)
    pl.pre_filter_add_pod(state, info, PodInfo.from_dict(pod("o", namespace="other")), x)
    pl.pre_filter_add_pod(state, info, PodInfo.from_dict(pod("n", labels={"bar": ""})), x)
    s = state.read(PRE_FILTER_KEY)
    assert _domain_counts(table, s, 0)["node-x"] == 0


# -- Score: TestPodTopologySpreadScore ------------------------------------------------


def hosts(*names: str) -> list[dict[str, Any]]:
    return [make_node(n, labels={HOST: n}) for n in names]


SPREAD_4_3_2_1 = placed(
    ("p-a1", "node-a"),
    ("p-a2", "node-a"),
    ("p-a3", "node-a"),
    ("p-a4", "node-a"),
    ("p-b1", "node-b"),
    ("p-b2", "node-b"),
    ("p-b3", "node-b"),
    ("p-c1", "node-c"),
    ("p-c2", "node-c"),
    ("p-d1", "node-d"),
)
SPREAD_4_2_1_3 = placed(
    ("p-a1", "node-a"),
    ("p-a2", "node-a"),
    ("p-a3", "node-a"),
    ("p-a4", "node-a"),
    ("p-b1", "node-b"),
    ("p-b2", "node-b"),
    ("p-x1", "node-x"),
    ("p-y1", "node-y"),
    ("p-y2", "node-y"),
    ("p-y3", "node-y"),
)
ZONE_HOST_NODES = [
    make_node(n, labels={"zone": z, HOST: n})
    for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))
]
MIXED_PODS = [
    pod("p-a1", {"foo": ""}, node="node-a"),
    pod("p-b1", {"foo": "", "bar": ""}, node="node-b"),
    pod("p-y1", {"foo": ""}, node="node-y"),
    pod("p-y2", {"bar": ""}, node="node-y"),
]
ZONE_FOO_HOST_BAR = [
    constraint(1, "zone", "ScheduleAnyway"),
    constraint(1, HOST, "ScheduleAnyway", BAR),
]

SCORE_CASES = [
    (
        "one constraint on node, no existing pods",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b"),
        [],
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, only one node is candidate",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b"),
        placed(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b")),
        {"node-a": 100},
    ),
    (
        "one constraint on node, all nodes have the same number of matching pods",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b"),
        placed(("p-a1", "node-a"), ("p-b1", "node-b")),
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b", "node-c", "node-d"),
        placed(
            ("p-a1", "node-a"),
            ("p-a2", "node-a"),
            ("p-b1", "node-b"),
            ("p-d1", "node-d"),
            ("p-d2", "node-d"),
            ("p-d3", "node-d"),
        ),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    (
        "one constraint on node, null selector",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway", NULL)]),
        hosts("node-a", "node-b", "node-c", "node-d"),
        placed(
            ("p-a1", "node-a"),
            ("p-a2", "node-a"),
            ("p-b1", "node-b"),
            ("p-d1", "node-d"),
            ("p-d2", "node-d"),
            ("p-d3", "node-d"),
        ),
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        pod(constraints=[constraint(2, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b", "node-c", "node-d"),
        placed(
            ("p-a1", "node-a"),
            ("p-a2", "node-a"),
            ("p-b1", "node-b"),
            ("p-d1", "node-d"),
            ("p-d2", "node-d"),
            ("p-d3", "node-d"),
        ),
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        pod(constraints=[constraint(3, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b", "node-c", "node-d"),
        SPREAD_4_3_2_1,
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b", "node-x", "node-y"),
        SPREAD_4_2_1_3,
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    (
        "one constraint on node, 3 of 4 nodes are candidates, one lacks the topology key",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]),
        [*hosts("node-a"), make_node("node-b", labels={"n": "node-b"}), *hosts("node-x", "node-y")],
        SPREAD_4_2_1_3,
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        pod(constraints=[constraint(1, "zone", "ScheduleAnyway")]),
        ZONE_HOST_NODES,
        SPREAD_4_2_1_3,
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    (
        "two constraints on zone and node, 2 out of 4 nodes are candidates",
        pod(
            constraints=[
                constraint(1, "zone", "ScheduleAnyway"),
                constraint(1, HOST, "ScheduleAnyway"),
            ]
        ),
        ZONE_HOST_NODES,
        placed(
            ("p-a1", "node-a"),
            ("p-a2", "node-a"),
            ("p-b1", "node-b"),
            ("p-x1", "node-x"),
            ("p-x2", "node-x"),
            ("p-y1", "node-y"),
            ("p-y2", "node-y"),
            ("p-y3", "node-y"),
            ("p-y4", "node-y"),
        ),
        {"node-a": 100, "node-x": 63},
    ),
    (
        "two constraints on zone and node, with different labelSelectors",
        pod(labels={"foo": "", "bar": ""}, constraints=ZONE_FOO_HOST_BAR),
        ZONE_HOST_NODES,
        MIXED_PODS,
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    (
        "two constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        pod(labels={"foo": "", "bar": ""}, constraints=ZONE_FOO_HOST_BAR),
        ZONE_HOST_NODES,
        [
            pod("p-b1", {"bar": ""}, node="node-b"),
            pod("p-x1", {"foo": ""}, node="node-x"),
            pod("p-y1", {"foo": "", "bar": ""}, node="node-y"),
        ],
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
    (
        "two constraints, different labelSelectors, 3 of 4 nodes are candidates",
        pod(labels={"foo": "", "bar": ""}, constraints=ZONE_FOO_HOST_BAR),
        ZONE_HOST_NODES,
        MIXED_PODS,
        {"node-a": 50, "node-b": 25, "node-x": 100},
    ),
    (
        "existing pods in a different namespace do not count",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b"),
        [
            pod("p-a1", node="node-a", namespace="ns1"),
            pod("p-a2", node="node-a"),
            pod("p-b1", node="node-b"),
            pod("p-b2", node="node-b"),
        ],
        {"node-a": 100, "node-b": 33},
    ),
    (
        "terminating Pods should be excluded",
        pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]),
        hosts("node-a", "node-b"),
        [pod("p-a", node="node-a", terminating=True), pod("p-b", node="node-b")],
        {"node-a": 100, "node-b": 0},
    ),
    (
        "minDomains has no effect when ScheduleAnyway",
        pod(constraints=[constraint(2, "node", "ScheduleAnyway", min_domains=10)]),
        [node_in(n, "node", n) for n in ("node-a", "node-b", "node-c")],
        placed(
            ("p-a1", "node-a"),
            ("p-a2", "node-a"),
            ("p-b1", "node-b"),
            ("p-b2", "node-b"),
            ("p-c1", "node-c"),
        ),
        {"node-a": 75, "node-b": 75, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy honored with nodeSelector",
        pod(constraints=[constraint(1, "node", "ScheduleAnyway")], node_selector={"foo": ""}),
        [*_POLICY_NODES[:2], make_node("node-c", labels={"node": "node-c"})],
        placed(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c")),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy ignored with nodeSelector",
        pod(
            constraints=[constraint(1, "node", "ScheduleAnyway", node_affinity_policy="Ignore")],
            node_selector={"foo": ""},
        ),
        [*_POLICY_NODES[:2], make_node("node-c", labels={"node": "node-c"})],
        placed(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c")),
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        pod(constraints=[constraint(1, "node", "ScheduleAnyway")], affinity=_FOO_NODE_AFFINITY),
        [*_POLICY_NODES[:2], make_node("node-c", labels={"node": "node-c"})],
        placed(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c")),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeTaintsPolicy honored",
        pod(constraints=[constraint(1, "node", "ScheduleAnyway", node_taints_policy="Honor")]),
        [
            node_in("node-a", "node", "node-a"),
            node_in("node-b", "node", "node-b"),
            make_node("node-c", labels={"node": "node-c"}, taints=NO_SCHEDULE_TAINT),
        ],
        placed(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c")),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "NodeTaintsPolicy ignored",
        pod(constraints=[constraint(1, "node", "ScheduleAnyway")]),
        [
            node_in("node-a", "node", "node-a"),
            node_in("node-b", "node", "node-b"),
            make_node("node-c", labels={"node": "node-c"}, taints=NO_SCHEDULE_TAINT),
        ],
        placed(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c")),
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod(
            labels={"foo": "", "bar": ""},
            constraints=[
                constraint(1, "zone", "ScheduleAnyway", EMPTY, match_label_keys=["foo"]),
                constraint(1, HOST, "ScheduleAnyway", EMPTY, match_label_keys=["bar"]),
            ],
        ),
        [
            make_node(n, labels={"zone": z, HOST: n})
            for n, z in (
                ("node-a", "zone1"),
                ("node-b", "zone1"),
                ("node-c", "zone2"),
                ("node-d", "zone2"),
            )
        ],
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-b1", {"foo": "", "bar": ""}, node="node-b"),
            pod("p-y1", {"foo": ""}, node="node-c"),
            pod("p-y2", {"bar": ""}, node="node-c"),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod(
            labels={"foo": "", "bar": "", "baz": ""},
            constraints=[
                constraint(1, "zone", "ScheduleAnyway"),
                constraint(1, HOST, "ScheduleAnyway", BAR, match_label_keys=["baz"]),
            ],
        ),
        [
            make_node(n, labels={"zone": z, HOST: n})
            for n, z in (
                ("node-a", "zone1"),
                ("node-b", "zone1"),
                ("node-c", "zone2"),
                ("node-d", "zone2"),
            )
        ],
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-b1", {"foo": "", "bar": "", "baz": ""}, node="node-b"),
            pod("p-c1", {"foo": ""}, node="node-c"),
            pod("p-c2", {"bar": ""}, node="node-c"),
            pod("p-d3", {"bar": "", "baz": ""}, node="node-c"),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "nodes", "existing", "want"),
    [pytest.param(*case, id=case[0]) for case in SCORE_CASES],
)
def test_score_matches_kube(
    name: str,
    incoming: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    want: dict[str, int],
) -> None:
    # The expected nodes are the candidates; the others exist but failed Filter.
    table = make_table(nodes, existing)
    assert run_score(plugin(), table, incoming, list(want)) == want


def test_pre_score_skips_without_soft_constraints_or_nodes() -> None:
    table = make_table(hosts("node-a"))
    hard = PodInfo.from_dict(pod(constraints=[constraint(1, HOST)]))
    status = plugin().pre_score(CycleState(), hard, table.all_nodes())
    assert isinstance(status, Status) and status.is_skip()
    empty = make_table([])
    soft = PodInfo.from_dict(pod(constraints=[constraint(1, HOST, "ScheduleAnyway")]))
    status = plugin().pre_score(CycleState(), soft, empty.all_nodes())
    assert isinstance(status, Status) and status.is_skip()


# -- default constraints ------------------------------------------------------------


def test_system_defaulting_uses_the_services_selector() -> None:
    """kube: "system defaulting, nodes don't have zone, pods match service"."""
    table = make_table(hosts("node-a", "node-b", "node-c", "node-d"), SPREAD_4_3_2_1)
    service = {
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"selector": {"foo": ""}},
    }
    pl = plugin(stores={("", "v1", "services"): [service]})
    got = run_score(pl, table, pod(), ["node-a", "node-b", "node-c", "node-d"])
    assert got == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}


def test_system_defaulting_without_owner_or_service_does_nothing() -> None:
    table = make_table(hosts("node-a", "node-b"), SPREAD_4_3_2_1[:2])
    status = plugin().pre_score(CycleState(), PodInfo.from_dict(pod()), table.all_nodes())
    assert isinstance(status, Status) and status.is_skip()


RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f"}


def test_owner_selector_from_the_store() -> None:
    rs = {
        "metadata": {"name": "web-5d8f", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    pl = plugin(stores={("apps", "v1", "replicasets"): [rs]})
    info = PodInfo.from_dict(
        pod(labels={"app": "web", "pod-template-hash": "5d8f"}, owner=RS_OWNER)
    )
    assert pl.default_selector(info).requirements == (("app", "In", ("web",)),)


def test_owner_selector_approximated_from_pod_labels_without_store() -> None:
    info = PodInfo.from_dict(
        pod(
            labels={
                "app": "db",
                "controller-revision-hash": "db-1",
                "statefulset.kubernetes.io/pod-name": "db-0",
            },
            owner={"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
        )
    )
    assert plugin().default_selector(info).requirements == (("app", "In", ("db",)),)


def test_system_defaults_spread_replicaset_pods_by_hostname() -> None:
    siblings = [
        pod(f"web-{i}", {"app": "web", "pod-template-hash": "5d8f"}, node=n, owner=RS_OWNER)
        for i, n in enumerate(["node-a", "node-a", "node-b"])
    ]
    table = make_table(hosts("node-a", "node-b", "node-c"), siblings)
    incoming = pod("web-new", {"app": "web", "pod-template-hash": "5d8f"}, owner=RS_OWNER)
    got = run_score(plugin(), table, incoming, ["node-a", "node-b", "node-c"])
    # Hostname maxSkew 3 (zone ignored: no node has a zone); fewer siblings scores higher.
    assert got["node-c"] == 100 and got["node-c"] > got["node-b"] > got["node-a"]


def test_list_defaulting_applies_hard_default_constraints() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    service = {
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"selector": {"foo": ""}},
    }
    pl = plugin(args, stores={("", "v1", "services"): [service]})
    table = make_table(FOUR_NODES, SPREAD_2_1_0_3)
    assert run_filter(pl, table, pod()) == {"node-a": U, "node-b": U, "node-x": S, "node-y": U}


# -- args -----------------------------------------------------------------------------


def test_args_defaults_and_aliases() -> None:
    assert Args().defaulting_type == "System"
    assert Args().default_constraints == []
    by_alias = Args.model_validate(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
        }
    )
    by_name = Args(defaulting_type="List", default_constraints=by_alias.default_constraints)
    assert by_alias == by_name
    assert by_alias.default_constraints[0].max_skew == 2


@pytest.mark.parametrize(
    "raw",
    [
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        },
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            ],
        },
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {},
                }
            ],
        },
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ],
        },
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}
            ],
        },
        {"defaultingType": "Custom"},
        {"unknownField": 1},
    ],
)
def test_args_validation_rejects(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Args.model_validate(raw)


# -- events -------------------------------------------------------------------------


def test_events_to_register() -> None:
    events = {e.event.resource: e for e in plugin().events_to_register()}
    assert events[Resource.POD].event.action == (
        ActionType.ADD
        | ActionType.UPDATE_POD_LABEL
        | ActionType.UPDATE_POD_TOLERATION
        | ActionType.DELETE
    )
    assert events[Resource.NODE].event.action == (
        ActionType.ADD
        | ActionType.DELETE
        | ActionType.UPDATE_NODE_LABEL
        | ActionType.UPDATE_NODE_TAINT
    )
    assert all(e.hint is not None for e in events.values())


def test_pod_change_hint() -> None:
    pl = plugin()
    waiting = PodInfo.from_dict(pod(constraints=[constraint(1, "zone")]))
    matching = pod("m", node="node-a")
    other = pod("o", {"bar": ""}, node="node-a")
    assert pl.is_schedulable_after_pod_change(waiting, None, matching) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_change(waiting, None, other) is QueueingHint.SKIP
    assert pl.is_schedulable_after_pod_change(waiting, matching, None) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_change(waiting, other, matching) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_change(waiting, matching, matching) is QueueingHint.SKIP
    unassigned = pod("u")
    assert pl.is_schedulable_after_pod_change(waiting, None, unassigned) is QueueingHint.SKIP
    elsewhere = pod("e", node="node-a", namespace="ns1")
    assert pl.is_schedulable_after_pod_change(waiting, None, elsewhere) is QueueingHint.SKIP


def test_node_change_hint() -> None:
    pl = plugin()
    waiting = PodInfo.from_dict(pod(constraints=[constraint(1, "zone")]))
    with_zone = make_node("n", labels={"zone": "z1"})
    other_zone = make_node("n", labels={"zone": "z2"})
    no_zone = make_node("n", labels={})
    assert pl.is_schedulable_after_node_change(waiting, None, with_zone) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_node_change(waiting, None, no_zone) is QueueingHint.SKIP
    assert pl.is_schedulable_after_node_change(waiting, no_zone, with_zone) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_node_change(waiting, with_zone, other_zone) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_node_change(waiting, with_zone, with_zone) is QueueingHint.SKIP
    assert pl.is_schedulable_after_node_change(waiting, with_zone, None) is QueueingHint.QUEUE


def test_plugin_metadata() -> None:
    assert PodTopologySpread.api_version == "1.0"
    assert PodTopologySpread.Args is Args
