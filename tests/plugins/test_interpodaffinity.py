"""InterPodAffinity against kube-scheduler's own cases.

Inputs and expected verdicts/scores are carried over from kube-scheduler's
``interpodaffinity/filtering_test.go`` (TestRequiredAffinitySingleNode,
TestRequiredAffinityMultipleNodes) and ``scoring_test.go``
(TestPreferredAffinity, TestPreferredAffinityWithHardPodAffinitySymmetricWeight).
kube's tests use the namespace "" for unnamed pods; here that is "default".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pytest
from pydantic import ValidationError

from scheduler.api import ActionType, Code, CycleState, Handle, QueueingHint, Resource, Status
from scheduler.plugins.interpodaffinity import (
    ERR_AFFINITY_RULES_NOT_MATCH,
    ERR_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_SCORE_KEY,
    Args,
    InterPodAffinity,
    PreScoreState,
)
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from tests.plugins.builders import make_node, make_pod, make_table

S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE

NAMESPACES = [
    {"metadata": {"name": "subteam1.team1", "labels": {"team": "team1"}}},
    {"metadata": {"name": "subteam2.team1", "labels": {"team": "team1"}}},
    {"metadata": {"name": "subteam1.team2", "labels": {"team": "team2"}}},
    {"metadata": {"name": "subteam2.team2", "labels": {"team": "team2"}}},
]
TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}


# -- builders -----------------------------------------------------------------------


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(
    key: str | None,
    *expressions: dict[str, Any],
    namespaces: Sequence[str] | None = None,
    namespace_selector: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": {"matchExpressions": list(expressions)}}
    if key is not None:
        t["topologyKey"] = key
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        t["namespaceSelector"] = dict(namespace_selector)
    return t


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    required: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    preferred: Sequence[dict[str, Any]] = (),
    preferred_anti: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required or preferred:
        out["podAffinity"] = {}
        if required:
            out["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
        if preferred:
            out["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
    if anti or preferred_anti:
        out["podAntiAffinity"] = {}
        if anti:
            out["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti)
        if preferred_anti:
            out["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(
                preferred_anti
            )
    return out


def pod(
    labels: Mapping[str, str] | None = None,
    aff: Mapping[str, Any] | None = None,
    *,
    node: str | None = None,
    namespace: str = "default",
    name: str | None = None,
) -> dict[str, Any]:
    return make_pod(
        name, namespace=namespace, node_name=node, labels=labels or {}, affinity=aff or None
    )


def node(name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return make_node(name, labels=labels)


class NamespaceHandle:
    """Offers the one store InterPodAffinity reads: namespaces."""

    def __init__(self, namespaces: list[dict[str, Any]]) -> None:
        self.namespaces = namespaces

    def store(self, group: str, version: str, plural: str) -> NamespaceHandle:
        if (group, version, plural) != ("", "v1", "namespaces"):
            raise LookupError(plural)
        return self

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return next((n for n in self.namespaces if n["metadata"]["name"] == name), None)

    def list(self, namespace: str | None = None) -> list[Mapping[str, Any]]:
        return list(self.namespaces)


def plugin(args: Any = None) -> InterPodAffinity:
    return InterPodAffinity(args, cast(Handle, NamespaceHandle(NAMESPACES)))


def run_filter(
    pl: InterPodAffinity, table: NodeTable, incoming: dict[str, Any]
) -> tuple[Status | None, dict[str, tuple[Code, list[str]]]]:
    state = CycleState()
    info = PodInfo.from_dict(incoming)
    nodes = table.all_nodes()
    status = pl.pre_filter(state, info, nodes)
    assert status is None or isinstance(status, Status)
    if status is not None and not status.is_skip():
        return status, {}
    result = pl.filter(state, info, nodes)
    assert not isinstance(result, Status)
    verdicts = {
        name: (Code(int(result.codes[i])), result.reasons_at(i))
        for i, name in enumerate(nodes.names)
    }
    return status, verdicts


def run_score(
    pl: InterPodAffinity, table: NodeTable, incoming: dict[str, Any]
) -> Status | dict[str, int]:
    state = CycleState()
    info = PodInfo.from_dict(incoming)
    nodes = table.all_nodes()
    status = pl.pre_score(state, info, nodes)
    if status is not None:
        return status
    raw = pl.score(state, info, nodes)
    assert not isinstance(raw, Status)
    normalized = pl.normalize_score(state, info, nodes, raw)
    final = raw if normalized is None else normalized
    return dict(zip(nodes.names, final.tolist(), strict=True))


# -- Filter: TestRequiredAffinitySingleNode --------------------------------------------

SECURITYSCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
NODE1 = node("node1", {"region": "r1", "zone": "z11"})
EXISTING = pod(SECURITYSCAN, node="node1", name="existing")

AFF: tuple[Code, list[str]] = (S, [])
NOT_AFF = (UU, [ERR_AFFINITY_RULES_NOT_MATCH])
NOT_ANTI = (U, [ERR_ANTI_AFFINITY_RULES_NOT_MATCH])
NOT_EXISTING = (U, [ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH])
SKIP = "skip"

SINGLE_NODE_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], Any]] = [
    ("no required pod affinity and no existing pods", pod(), [], SKIP),
    (
        "required affinity In matches the existing pod",
        pod(S1, affinity([term("region", expr("service", "In", "securityscan", "value2"))])),
        [EXISTING],
        AFF,
    ),
    (
        "required affinity NotIn matches the existing pod",
        pod(S1, affinity([term("region", expr("service", "NotIn", "securityscan3", "value3"))])),
        [EXISTING],
        AFF,
    ),
    (
        "affinity does not match because of a different namespace",
        pod(
            S1,
            affinity(
                [
                    term(
                        None,
                        expr("service", "In", "securityscan", "value2"),
                        namespaces=["DiffNameSpace"],
                    )
                ]
            ),
        ),
        [pod(SECURITYSCAN, node="node1", namespace="ns")],
        NOT_AFF,
    ),
    (
        "affinity labelSelector does not match the existing pod",
        pod(SECURITYSCAN, affinity([term("", expr("service", "In", "antivirusscan", "value2"))])),
        [EXISTING],
        NOT_AFF,
    ),
    (
        "multiple required terms with different operators all match",
        pod(
            S1,
            affinity(
                [
                    term(
                        "region",
                        expr("service", "Exists"),
                        expr("wrongkey", "DoesNotExist"),
                    ),
                    term(
                        "region",
                        expr("service", "In", "securityscan"),
                        expr("service", "NotIn", "WrongValue"),
                    ),
                ]
            ),
        ),
        [EXISTING],
        AFF,
    ),
    (
        "matchExpressions are ANDed: one does not match",
        pod(
            S1,
            affinity(
                [
                    term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                    term(
                        "region",
                        expr("service", "In", "securityscan2"),
                        expr("service", "NotIn", "WrongValue"),
                    ),
                ]
            ),
        ),
        [EXISTING],
        NOT_AFF,
    ),
    (
        "satisfies affinity and anti-affinity with the existing pod",
        pod(
            S1,
            affinity(
                [term("region", expr("service", "In", "securityscan", "value2"))],
                [term("node", expr("service", "In", "antivirusscan", "value2"))],
            ),
        ),
        [EXISTING],
        AFF,
    ),
    (
        "satisfies affinity, anti-affinity and symmetry with the existing pod",
        pod(
            S1,
            affinity(
                [term("region", expr("service", "In", "securityscan", "value2"))],
                [term("node", expr("service", "In", "antivirusscan", "value2"))],
            ),
        ),
        [
            pod(
                SECURITYSCAN,
                affinity(anti=[term("node", expr("service", "In", "antivirusscan", "value2"))]),
                node="node1",
            )
        ],
        AFF,
    ),
    (
        "satisfies affinity but not anti-affinity with the existing pod",
        pod(
            S1,
            affinity(
                [term("region", expr("service", "In", "securityscan", "value2"))],
                [term("zone", expr("service", "In", "securityscan", "value2"))],
            ),
        ),
        [EXISTING],
        NOT_ANTI,
    ),
    (
        "satisfies affinity and anti-affinity but not the existing pod's anti-affinity",
        pod(
            SECURITYSCAN,
            affinity(
                [term("region", expr("service", "In", "securityscan", "value2"))],
                [term("node", expr("service", "In", "antivirusscan", "value2"))],
            ),
        ),
        [
            pod(
                SECURITYSCAN,
                affinity(anti=[term("zone", expr("service", "In", "securityscan", "value2"))]),
                node="node1",
            )
        ],
        NOT_EXISTING,
    ),
    (
        "pod matches its own affinity but the matching pod is on an unknown node",
        pod(
            SECURITYSCAN,
            affinity([term("region", expr("service", "NotIn", "securityscan", "value2"))]),
        ),
        [pod(SECURITYSCAN, node="node2")],
        NOT_AFF,
    ),
    (
        "existing pod's anti-affinity is respected without incoming terms: violated",
        pod(SECURITYSCAN),
        [
            pod(
                SECURITYSCAN,
                affinity(anti=[term("zone", expr("service", "In", "securityscan", "value2"))]),
                node="node1",
            )
        ],
        NOT_EXISTING,
    ),
    (
        "existing pod's anti-affinity is respected without incoming terms: satisfied",
        pod(SECURITYSCAN),
        [
            pod(
                SECURITYSCAN,
                affinity(anti=[term("zone", expr("service", "NotIn", "securityscan", "value2"))]),
                node="node1",
            )
        ],
        SKIP,
    ),
    (
        "satisfies existing pod's anti-affinity but not the symmetric incoming one",
        pod(
            SECURITYSCAN,
            affinity(
                anti=[
                    term("region", expr("service", "Exists")),
                    term("region", expr("security", "Exists")),
                ]
            ),
        ),
        [pod(S1, affinity(anti=[term("zone", expr("security", "Exists"))]), node="node1")],
        NOT_ANTI,
    ),
    (
        "symmetry a1: incoming and existing pod partially match each other",
        pod(
            SECURITYSCAN,
            affinity(
                anti=[
                    term("zone", expr("service", "Exists")),
                    term("zone", expr("security", "Exists")),
                ]
            ),
        ),
        [pod(S1, affinity(anti=[term("zone", expr("security", "Exists"))]), node="node1")],
        NOT_ANTI,
    ),
    (
        "symmetry a2: incoming and existing pod partially match each other",
        pod(S1, affinity(anti=[term("zone", expr("security", "Exists"))])),
        [
            pod(
                SECURITYSCAN,
                affinity(
                    anti=[
                        term("zone", expr("service", "Exists")),
                        term("zone", expr("security", "Exists")),
                    ]
                ),
                node="node1",
            )
        ],
        NOT_EXISTING,
    ),
    (
        "symmetry b1: incoming and existing pod partially match each other",
        pod(
            {"abc": "", "xyz": ""},
            affinity(
                anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]
            ),
        ),
        [
            pod(
                {"def": "", "xyz": ""},
                affinity(
                    anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]
                ),
                node="node1",
            )
        ],
        NOT_ANTI,
    ),
    (
        "symmetry b2: incoming and existing pod partially match each other",
        pod(
            {"def": "", "xyz": ""},
            affinity(
                anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]
            ),
        ),
        [
            pod(
                {"abc": "", "xyz": ""},
                affinity(
                    anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]
                ),
                node="node1",
            )
        ],
        NOT_ANTI,
    ),
    (
        "affinity with a matching namespaceSelector",
        pod(
            S1,
            affinity(
                [
                    term(
                        "region",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector=TEAM1,
                    )
                ]
            ),
        ),
        [pod(SECURITYSCAN, node="node1", namespace="subteam1.team1")],
        AFF,
    ),
    (
        "affinity with a non-matching namespaceSelector",
        pod(
            S1,
            affinity(
                [
                    term(
                        "region",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector=TEAM1,
                    )
                ]
            ),
        ),
        [pod(SECURITYSCAN, node="node1", namespace="subteam1.team2")],
        NOT_AFF,
    ),
    (
        "anti-affinity with a matching namespaceSelector",
        pod(
            S1,
            affinity(
                anti=[
                    term(
                        "zone",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector=TEAM1,
                    )
                ]
            ),
            namespace="subteam1.team1",
        ),
        [pod(SECURITYSCAN, node="node1", namespace="subteam2.team1")],
        NOT_ANTI,
    ),
    (
        "anti-affinity with a match-all namespaceSelector",
        pod(
            S1,
            affinity(
                anti=[
                    term(
                        "zone",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector={},
                    )
                ]
            ),
            namespace="subteam1.team1",
        ),
        [pod(SECURITYSCAN, node="node1", namespace="subteam2.team1")],
        NOT_ANTI,
    ),
    (
        "anti-affinity with a non-matching namespaceSelector",
        pod(
            S1,
            affinity(
                anti=[
                    term(
                        "zone",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector=TEAM1,
                    )
                ]
            ),
            namespace="subteam1.team1",
        ),
        [pod(SECURITYSCAN, node="node1", namespace="subteam1.team2")],
        AFF,
    ),
]


@pytest.mark.parametrize(
    ("incoming", "existing", "want"),
    [pytest.param(*case[1:], id=case[0]) for case in SINGLE_NODE_CASES],
)
def test_required_affinity_single_node(
    incoming: dict[str, Any], existing: list[dict[str, Any]], want: Any
) -> None:
    table = make_table([NODE1], existing)
    status, verdicts = run_filter(plugin(), table, incoming)
    if want == SKIP:
        assert isinstance(status, Status) and status.is_skip()
        return
    assert status is None
    assert verdicts["node1"] == want


def test_invalid_affinity_selector_fails_pre_filter() -> None:
    bad = pod(
        SECURITYSCAN,
        affinity(
            [
                term("region", expr("service", "In", "{{.bad-value.}}")),
                term("node", expr("service", "In", "antivirusscan", "value2")),
            ]
        ),
    )
    table = make_table([NODE1])
    status, _ = run_filter(plugin(), table, bad)
    assert isinstance(status, Status)
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message().startswith("parsing pod: ")
    assert "{{.bad-value.}}" in status.message()


# -- Filter: TestRequiredAffinityMultipleNodes -----------------------------------------

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}

MULTI_NODE_CASES: list[
    tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Any]
] = [
    (
        "nodes sharing the topology value of a matching pod's node all fit",
        pod(aff=affinity([term("region", expr("foo", "In", "bar"))])),
        [pod({"foo": "bar"}, node="node1")],
        [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)],
        [AFF, AFF, NOT_AFF],
    ),
    (
        "the first pod of a self-affine group may go to any node with the keys",
        pod(
            {"foo": "bar", "service": "securityscan"},
            affinity(
                [
                    term("zone", expr("foo", "In", "bar")),
                    term("zone", expr("service", "In", "securityscan")),
                ]
            ),
        ),
        [pod({"foo": "bar"}, node="nodeA")],
        [
            node("nodeA", {"zone": "az1", "hostname": "h1"}),
            node("nodeB", {"zone": "az2", "hostname": "h2"}),
        ],
        [AFF, AFF],
    ),
    (
        "the first pod of a self-affine group needs nodes with the topology keys",
        pod(
            {"foo": "bar", "service": "securityscan"},
            affinity(
                [
                    term("zone", expr("foo", "In", "bar")),
                    term("zone", expr("service", "In", "securityscan")),
                ]
            ),
        ),
        [pod({"foo": "bar"}, node="nodeA")],
        [
            node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            node("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        [NOT_AFF, NOT_AFF],
    ),
    (
        "anti-affinity blocks every node of the matching pod's region",
        pod(aff=affinity(anti=[term("region", expr("foo", "In", "abc"))])),
        [pod({"foo": "abc"}, node="nodeA")],
        [
            node("nodeA", {"region": "r1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ],
        [NOT_ANTI, NOT_ANTI],
    ),
    (
        "anti-affinity matches a pod when any of its terms matches",
        pod(
            aff=affinity(
                anti=[
                    term("region", expr("foo", "In", "abc")),
                    term("zone", expr("service", "In", "securityscan")),
                ]
            )
        ),
        [pod({"foo": "abc", "service": "securityscan"}, node="nodeA")],
        [
            node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"}),
        ],
        [NOT_ANTI, NOT_ANTI],
    ),
    (
        "anti-affinity spares other regions",
        pod(aff=affinity(anti=[term("region", expr("foo", "In", "abc"))])),
        [pod({"foo": "abc"}, node="nodeA")],
        [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)],
        [NOT_ANTI, NOT_ANTI, AFF],
    ),
    (
        "existing anti-affinity in another namespace does not match",
        pod(
            {"foo": "123"},
            affinity(anti=[term("region", expr("foo", "In", "bar"))]),
            namespace="NS1",
        ),
        [
            pod({"foo": "bar"}, node="nodeA", namespace="NS1"),
            pod(
                aff=affinity(anti=[term("region", expr("foo", "In", "123"))]),
                node="nodeC",
                namespace="NS2",
            ),
        ],
        [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)],
        [NOT_ANTI, NOT_ANTI, AFF],
    ),
    (
        "existing pod's anti-affinity with a topology key no node has",
        pod({"foo": ""}),
        [pod(aff=affinity(anti=[term("invalid-node-label", expr("foo", "Exists"))]), node="nodeA")],
        [
            node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"}),
        ],
        SKIP,
    ),
    (
        "incoming anti-affinity with a topology key no node has",
        pod(aff=affinity(anti=[term("invalid-node-label", expr("foo", "Exists"))])),
        [pod({"foo": ""}, node="nodeA")],
        [
            node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"}),
        ],
        [AFF, AFF],
    ),
    (
        "two existing pods' anti-affinity on different keys",
        pod({"foo": "", "bar": ""}),
        [
            pod(aff=affinity(anti=[term("zone", expr("foo", "Exists"))]), node="nodeA"),
            pod(aff=affinity(anti=[term("region", expr("bar", "Exists"))]), node="nodeA"),
        ],
        [
            node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"}),
        ],
        [NOT_EXISTING, NOT_EXISTING],
    ),
]


@pytest.mark.parametrize(
    ("incoming", "existing", "nodes", "want"),
    [pytest.param(*case[1:], id=case[0]) for case in MULTI_NODE_CASES],
)
def test_required_affinity_multiple_nodes(
    incoming: dict[str, Any], existing: list[dict[str, Any]], nodes: list[dict[str, Any]], want: Any
) -> None:
    table = make_table(nodes, existing)
    status, verdicts = run_filter(plugin(), table, incoming)
    if want == SKIP:
        assert isinstance(status, Status) and status.is_skip()
        return
    assert status is None
    assert list(verdicts.values()) == want


def test_filter_without_pre_filter_is_an_error() -> None:
    table = make_table([NODE1])
    result = plugin().filter(CycleState(), PodInfo.from_dict(pod()), table.all_nodes())
    assert isinstance(result, Status) and result.code is Code.ERROR


# -- PreFilter extensions and incremental index -----------------------------------------


def test_add_and_remove_pod_on_a_cloned_state() -> None:
    nodes = [node("nodeA", {"zone": "z1"}), node("nodeB", {"zone": "z2"})]
    blocker = pod({"app": "db"}, node="nodeA", name="blocker")
    table = make_table(nodes, [blocker])
    pl = plugin()
    incoming = PodInfo.from_dict(pod(aff=affinity(anti=[term("zone", expr("app", "In", "db"))])))
    state = CycleState()
    assert pl.pre_filter(state, incoming, table.all_nodes()) is None
    copy = state.clone()
    a = table.node_info(table.row_of("nodeA") or 0)
    b = table.node_info(table.row_of("nodeB") or 0)
    victim = table.pods[a.row]["default/blocker"]
    pl.pre_filter_remove_pod(copy, incoming, victim, a)
    # An existing pod whose anti-affinity rejects the incoming pod, nominated on nodeB.
    nominated = PodInfo.from_dict(
        pod(aff=affinity(anti=[term("zone", expr("app", "Exists"))]), node="nodeB", name="n")
    )
    incoming_labelled = PodInfo.from_dict(
        pod({"app": "web"}, affinity(anti=[term("zone", expr("app", "In", "db"))]))
    )
    state2 = CycleState()
    pl.pre_filter(state2, incoming_labelled, table.all_nodes())
    pl.pre_filter_remove_pod(state2, incoming_labelled, victim, a)
    pl.pre_filter_add_pod(state2, incoming_labelled, nominated, b)
    got = pl.filter(state2, incoming_labelled, table.all_nodes())
    assert not isinstance(got, Status)
    assert [got.reasons_at(i) for i in range(2)] == [
        [],
        [ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH],
    ]
    # The removed blocker frees nodeA in the copy; the original still rejects it.
    after = pl.filter(copy, incoming, table.all_nodes())
    before = pl.filter(state, incoming, table.all_nodes())
    assert not isinstance(after, Status) and not isinstance(before, Status)
    assert after.feasible.tolist() == [True, True]
    assert before.feasible.tolist() == [False, True]


def test_existing_terms_follow_table_changes() -> None:
    nodes = [node("nodeA", {"zone": "z1"}), node("nodeB", {"zone": "z2"})]
    table = make_table(nodes)
    pl = plugin()
    incoming = pod({"app": "web"})
    status, _ = run_filter(pl, table, incoming)
    assert isinstance(status, Status) and status.is_skip()
    guard = PodInfo.from_dict(
        pod(aff=affinity(anti=[term("zone", expr("app", "In", "web"))]), node="nodeB", name="guard")
    )
    table.add_pod(guard)
    status, verdicts = run_filter(pl, table, incoming)
    assert status is None
    assert verdicts == {"nodeA": AFF, "nodeB": NOT_EXISTING}
    table.remove_pod(guard.key)
    status, _ = run_filter(pl, table, incoming)
    assert isinstance(status, Status) and status.is_skip()


# -- Score: TestPreferredAffinity -----------------------------------------------------

S2 = {"security": "S2"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
STAY_WITH_S1_IN_REGION = affinity(
    preferred=[weighted(5, term("region", expr("security", "In", "S1")))]
)
STAY_WITH_S2_IN_REGION = affinity(
    preferred=[weighted(6, term("region", expr("security", "In", "S2")))]
)
AFFINITY3 = affinity(
    preferred=[
        weighted(8, term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2"))),
        weighted(2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
    ]
)
HARD_AFFINITY = affinity(
    [
        term("region", expr("security", "In", "S1", "value2")),
        term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(
    preferred_anti=[weighted(5, term("az", expr("security", "In", "S1")))]
)
AWAY_FROM_S2_IN_AZ = affinity(
    preferred_anti=[weighted(5, term("az", expr("security", "In", "S2")))]
)
STAY_S1_AWAY_S2 = affinity(
    preferred=[weighted(8, term("region", expr("security", "In", "S1")))],
    preferred_anti=[weighted(5, term("az", expr("security", "In", "S2")))],
)
NS_SELECTOR_TERM = term(
    "region", expr("security", "In", "S1"), namespaces=["subteam2.team2"], namespace_selector=TEAM1
)
AFFINITY_NS_SELECTOR = affinity(preferred=[weighted(5, NS_SELECTOR_TERM)])
ANTI_AFFINITY_NS_SELECTOR = affinity(preferred_anti=[weighted(5, NS_SELECTOR_TERM)])

THREE = [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)]

SCORE_CASES: list[
    tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Any, dict[str, Any]]
] = [
    ("all nodes score alike when the pod has no affinity", pod(S1), [], THREE, SKIP, {}),
    (
        "affinity: the matching pod's topology domain scores high",
        pod(S1, STAY_WITH_S1_IN_REGION),
        [pod(S1, node="node1"), pod(S2, node="node2"), pod(S1, node="node3")],
        THREE,
        {"node1": 100, "node2": 0, "node3": 0},
        {},
    ),
    (
        "affinity: every node of the matching domain scores the same",
        pod(aff=STAY_WITH_S1_IN_REGION),
        [pod(S1, node="node1")],
        [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)],
        {"node1": 100, "node2": 100, "node3": 0},
        {},
    ),
    (
        "affinity: the region with more matching pods wins",
        pod(S1, STAY_WITH_S2_IN_REGION),
        [pod(S2, node=n) for n in ("node1", "node1", "node2", "node3", "node4", "node5")],
        [
            node("node1", CHINA),
            node("node2", INDIA),
            node("node3", CHINA),
            node("node4", CHINA),
            node("node5", INDIA),
        ],
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
        {},
    ),
    (
        "affinity: different operators, some failing",
        pod(S1, AFFINITY3),
        [pod(S1, node="node1"), pod(S2, node="node2"), pod(S1, node="node3")],
        THREE,
        {"node1": 20, "node2": 100, "node3": 0},
        {},
    ),
    (
        "affinity symmetry: existing pods' preferred affinity",
        pod(S2),
        [
            pod(S1, STAY_WITH_S1_IN_REGION, node="node1"),
            pod(S2, STAY_WITH_S2_IN_REGION, node="node2"),
        ],
        THREE,
        {"node1": 0, "node2": 100, "node3": 0},
        {},
    ),
    (
        "affinity symmetry with a namespace selector",
        pod(S1, namespace="subteam1.team1"),
        [
            pod(S1, AFFINITY_NS_SELECTOR, node="node1"),
            pod(S2, STAY_WITH_S2_IN_REGION, node="node2"),
        ],
        THREE,
        {"node1": 100, "node2": 0, "node3": 0},
        {},
    ),
    (
        "anti-affinity symmetry with a namespace selector",
        pod(S1, namespace="subteam1.team1"),
        [
            pod(S1, ANTI_AFFINITY_NS_SELECTOR, node="node1"),
            pod(S2, STAY_WITH_S2_IN_REGION, node="node2"),
        ],
        THREE,
        {"node1": 0, "node2": 100, "node3": 100},
        {},
    ),
    (
        "affinity symmetry: existing pods' required affinity (hard weight 1)",
        pod(S1),
        [pod(S1, HARD_AFFINITY, node="node1"), pod(S2, HARD_AFFINITY, node="node2")],
        THREE,
        {"node1": 100, "node2": 100, "node3": 0},
        {},
    ),
    (
        "anti-affinity: the node without matching pods scores high",
        pod(S1, AWAY_FROM_S1_IN_AZ),
        [pod(S1, node="node1"), pod(S2, node="node2")],
        [node("node1", AZ1), node("node2", CHINA)],
        {"node1": 0, "node2": 100},
        {},
    ),
    (
        "anti-affinity: the node without the topology key scores high",
        pod(S1, AWAY_FROM_S1_IN_AZ),
        [pod(S1, node="node1"), pod(S1, node="node2")],
        [node("node1", AZ1), node("node2", CHINA)],
        {"node1": 0, "node2": 100},
        {},
    ),
    (
        "anti-affinity: more matching pods scores lower",
        pod(S1, AWAY_FROM_S1_IN_AZ),
        [pod(S1, node="node1"), pod(S1, node="node1"), pod(S2, node="node2")],
        [node("node1", AZ1), node("node2", INDIA)],
        {"node1": 0, "node2": 100},
        {},
    ),
    (
        "anti-affinity symmetry: existing pods' preferred anti-affinity",
        pod(S2),
        [pod(S1, AWAY_FROM_S2_IN_AZ, node="node1"), pod(S2, AWAY_FROM_S1_IN_AZ, node="node2")],
        [node("node1", AZ1), node("node2", AZ2)],
        {"node1": 0, "node2": 100},
        {},
    ),
    (
        "affinity and anti-affinity: preferred only",
        pod(S1, STAY_S1_AWAY_S2),
        [pod(S1, node="node1"), pod(S1, node="node2")],
        [node("node1", CHINA), node("node2", AZ1)],
        {"node1": 100, "node2": 0},
        {},
    ),
    (
        "affinity and anti-affinity: same labels, stay in region, spread within",
        pod(S1, STAY_S1_AWAY_S2),
        [pod(S1, node=n) for n in ("node1", "node1", "node2", "node3", "node3", "node4", "node5")],
        [
            node("node1", CHINA_AZ1),
            node("node2", INDIA),
            node("node3", CHINA),
            node("node4", CHINA),
            node("node5", INDIA),
        ],
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
        {},
    ),
    (
        "affinity, anti-affinity and symmetry together",
        pod(S1, STAY_S1_AWAY_S2),
        [
            pod(S1, node="node1"),
            pod(S2, node="node2"),
            pod(aff=STAY_S1_AWAY_S2, node="node3"),
            pod(aff=AWAY_FROM_S1_IN_AZ, node="node4"),
        ],
        [node("node1", CHINA), node("node2", AZ1), node("node3", INDIA), node("node4", AZ2)],
        {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
        {},
    ),
    (
        "partial nodes of a topology without pods with affinity",
        pod(S1),
        [pod(S1, node="node1"), pod(aff=STAY_S1_AWAY_S2, node="node2")],
        [node("node1", CHINA), node("node2", CHINA)],
        {"node1": 0, "node2": 0},
        {},
    ),
    (
        "affinity with pods matching the namespaceSelector",
        pod(S1, AFFINITY_NS_SELECTOR, namespace="subteam1.team1"),
        [
            pod(S1, node="node1", namespace="subteam1.team1"),
            pod(S1, node="node1", namespace="subteam1.team1"),
            pod(S1, node="node1", namespace="subteam1.team2"),
            pod(S1, node="node2", namespace="subteam2.team1"),
        ],
        [node("node1", CHINA), node("node2", INDIA)],
        {"node1": 100, "node2": 0},
        {},
    ),
    (
        "affinity with pods matching both the namespaceSelector and namespaces",
        pod(S1, AFFINITY_NS_SELECTOR, namespace="subteam1.team1"),
        [
            pod(S1, node="node1", namespace="subteam1.team1"),
            pod(S1, node="node1", namespace="subteam1.team1"),
            pod(S1, node="node1", namespace="subteam2.team2"),
            pod(S1, node="node2", namespace="subteam2.team1"),
        ],
        [node("node1", CHINA), node("node2", INDIA)],
        {"node1": 100, "node2": 0},
        {},
    ),
    (
        "anti-affinity with pods matching the namespaceSelector",
        pod(S1, ANTI_AFFINITY_NS_SELECTOR, namespace="subteam1.team1"),
        [
            pod(S1, node="node1", namespace="subteam1.team1"),
            pod(S1, node="node1", namespace="subteam1.team1"),
            pod(S1, node="node1", namespace="subteam1.team2"),
            pod(S1, node="node2", namespace="subteam2.team1"),
        ],
        [node("node1", CHINA), node("node2", INDIA)],
        {"node1": 0, "node2": 100},
        {},
    ),
    (
        "ignore preferred terms of existing pods",
        pod(S2),
        [pod(S1, STAY_S1_AWAY_S2, node="node1"), pod(S2, STAY_WITH_S2_IN_REGION, node="node2")],
        [node("node1", CHINA), node("node2", INDIA)],
        SKIP,
        {"ignorePreferredTermsOfExistingPods": True},
    ),
    (
        "do not ignore preferred terms of existing pods",
        pod(S2),
        [pod(S1, STAY_S1_AWAY_S2, node="node1"), pod(S2, STAY_WITH_S2_IN_REGION, node="node2")],
        [node("node1", CHINA), node("node2", INDIA)],
        {"node1": 0, "node2": 100},
        {"ignorePreferredTermsOfExistingPods": False},
    ),
    ("no nodes to score", pod(S2), [], [], SKIP, {}),
]

# TestPreferredAffinityWithHardPodAffinitySymmetricWeight
SERVICE_S1 = {"service": "S1"}
HARD_POD_AFFINITY = affinity(
    [
        term(
            "region",
            expr("service", "In", "S1"),
            namespaces=["default", "subteam2.team2"],
            namespace_selector=TEAM1,
        )
    ]
)
HARD_NODES = [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)]
HARD_PODS = [pod(aff=HARD_POD_AFFINITY, node="node1"), pod(aff=HARD_POD_AFFINITY, node="node2")]
SCORE_CASES += [
    (
        "hard pod affinity symmetry with the default weight",
        pod(SERVICE_S1),
        HARD_PODS,
        HARD_NODES,
        {"node1": 100, "node2": 100, "node3": 0},
        {"hardPodAffinityWeight": 1},
    ),
    (
        "hard pod affinity symmetry with zero weight",
        pod(SERVICE_S1),
        HARD_PODS,
        HARD_NODES,
        SKIP,
        {"hardPodAffinityWeight": 0},
    ),
    (
        "hard pod affinity symmetry with no matching namespace",
        pod(SERVICE_S1, namespace="subteam1.team2"),
        HARD_PODS,
        HARD_NODES,
        SKIP,
        {},
    ),
    (
        "hard pod affinity symmetry with a matching namespaceSelector",
        pod(SERVICE_S1, namespace="subteam1.team1"),
        HARD_PODS,
        HARD_NODES,
        {"node1": 100, "node2": 100, "node3": 0},
        {},
    ),
    (
        "hard pod affinity symmetry with matching namespaces",
        pod(SERVICE_S1, namespace="subteam2.team2"),
        HARD_PODS,
        HARD_NODES,
        {"node1": 100, "node2": 100, "node3": 0},
        {},
    ),
]


@pytest.mark.parametrize(
    ("incoming", "existing", "nodes", "want", "args"),
    [pytest.param(*case[1:], id=case[0]) for case in SCORE_CASES],
)
def test_preferred_affinity_scores(
    incoming: dict[str, Any],
    existing: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    want: Any,
    args: dict[str, Any],
) -> None:
    table = make_table(nodes, existing)
    got = run_score(plugin(args), table, incoming)
    if want == SKIP:
        assert isinstance(got, Status) and got.is_skip()
    else:
        assert got == want


def test_invalid_preferred_term_fails_pre_score() -> None:
    bad = affinity(
        preferred=[weighted(8, term("region", expr("security", "In", "{{.bad-value.}}")))]
    )
    table = make_table([node("node1", CHINA), node("node2", CHINA)])
    got = run_score(plugin(), table, pod(aff=bad))
    assert isinstance(got, Status) and got.code is Code.ERROR
    assert "{{.bad-value.}}" in got.message()


def test_normalize_truncates_like_kube() -> None:
    # Raw scores 8, -5, 3 (min -5, spread 13): kube's int64(100 * (s - min) / 13).
    table = make_table([node("n1", CHINA), node("n2", AZ1), node("n3", INDIA)])
    pl = plugin()
    state = CycleState()
    info = PodInfo.from_dict(pod(S1, STAY_S1_AWAY_S2))
    nodes = table.all_nodes()
    state.write(PRE_SCORE_KEY, PreScoreState({"region": np.zeros(1)}))
    out = pl.normalize_score(state, info, nodes, np.asarray([8, -5, 3], dtype=np.int64))
    assert out is not None
    assert out.tolist() == [100, 0, 61]


# -- args and events -------------------------------------------------------------------


def test_args() -> None:
    assert Args().hard_pod_affinity_weight == 1
    assert Args().ignore_preferred_terms_of_existing_pods is False
    a = Args.model_validate(
        {"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True}
    )
    assert a == Args(hard_pod_affinity_weight=5, ignore_preferred_terms_of_existing_pods=True)
    for raw in ({"hardPodAffinityWeight": 101}, {"hardPodAffinityWeight": -1}, {"other": 1}):
        with pytest.raises(ValidationError):
            Args.model_validate(raw)


def test_events_to_register() -> None:
    events = {e.event.resource: e for e in plugin().events_to_register()}
    assert events[Resource.POD].event.action == (
        ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
    )
    assert events[Resource.NODE].event.action == (
        ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
    )


def test_hints() -> None:
    pl = plugin()
    waiting = PodInfo.from_dict(
        pod(
            aff=affinity(
                [term("zone", expr("app", "In", "db"))],
                [term("zone", expr("app", "In", "web"))],
            )
        )
    )
    db = pod({"app": "db"}, node="n1", name="db")
    web = pod({"app": "web"}, node="n1", name="web")
    other = pod({"app": "x"}, node="n1", name="x")
    assert pl.is_schedulable_after_pod_change(waiting, None, db) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_change(waiting, None, other) is QueueingHint.SKIP
    assert pl.is_schedulable_after_pod_change(waiting, web, None) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_change(waiting, other, db) is QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_change(waiting, web, other) is QueueingHint.QUEUE
    assert (
        pl.is_schedulable_after_pod_change(waiting, None, pod({"app": "db"})) is QueueingHint.SKIP
    )
    assert (
        pl.is_schedulable_after_node_change(waiting, None, node("n", {"zone": "z"}))
        is QueueingHint.QUEUE
    )
    assert (
        pl.is_schedulable_after_node_change(waiting, None, node("n", {"rack": "r"}))
        is QueueingHint.SKIP
    )


def test_plugin_metadata() -> None:
    assert InterPodAffinity.api_version == "1.0"
    assert InterPodAffinity.Args is Args
    assert InterPodAffinity.watches == (("", "v1", "namespaces"),)
