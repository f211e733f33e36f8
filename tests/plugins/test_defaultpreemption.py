"""DefaultPreemption: eligibility, victim selection, node choice, PDBs and the evictions.

Inputs and expected victims/nodes come from kube-scheduler's
``default_preemption_test.go`` (TestPostFilter, TestDryRunPreemption,
TestSelectBestCandidate, TestPodEligibleToPreemptOthers, TestPreempt). The
what-if filtering runs through a real Framework of the default filter plugins
(see ``preemption_kit``), so NodeResourcesFit, PodTopologySpread and
InterPodAffinity really decide whether the pod fits once victims are gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from scheduler.api import Code
from scheduler.framework.cycle import Algorithm
from scheduler.framework.preemption.candidates import (
    Candidate,
    DisruptionBudget,
    calculate_num_candidates,
    filter_pods_with_pdb_violation,
    pick_one_node,
)
from scheduler.framework.preemption.executor import MSG_IN_PROGRESS
from scheduler.framework.waiting import WaitingPodEntry
from scheduler.plugins.defaultpreemption import DefaultPreemption, DefaultPreemptionArgs
from scheduler.state.pod import PodInfo
from tests.plugins.preemption_kit import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    Cluster,
    ErroringExtensions,
    FakeClient,
    build_cluster,
    knode,
    kpod,
    pdb,
    snapshot,
    spread_exists,
)

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
NODE_RES = {"cpu": "200m", "memory": "400"}
VIOLATING = {"test.kubernetes.io/is-violating-pdb": "violating"}
NON_VIOLATING = {"test.kubernetes.io/is-violating-pdb": "non-violating"}


def offsets(*values: int) -> Any:
    """A replacement for the random offset that yields ``values`` in turn (kube seeds rand)."""
    it: Iterator[int] = iter(values)
    return lambda n: next(it) % n


# -- TestPostFilter ------------------------------------------------------------------------

POST_FILTER_CASES = [
    (
        "pod with higher priority can be made schedulable",
        kpod("p", priority=HIGH),
        [kpod("p1", node="node1")],
        [knode("node1", ONE_POD)],
        {"node1": U},
        [],
        "node1",
        Code.SUCCESS,
        "",
    ),
    (
        "pod with tied priority is still unschedulable",
        kpod("p"),
        [kpod("p1", node="node1")],
        [knode("node1", ONE_POD)],
        {"node1": U},
        [],
        None,
        U,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    (
        "preemption should respect filteredNodesStatuses",
        kpod("p", priority=HIGH),
        [kpod("p1", node="node1")],
        [knode("node1", ONE_POD)],
        {"node1": UU},
        [],
        None,
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    (
        "preemption should respect absent node statuses meaning UnschedulableAndUnresolvable",
        kpod("p", priority=HIGH),
        [kpod("p1", node="node1")],
        [knode("node1", ONE_POD)],
        {},
        [],
        None,
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    (
        "pod can be made schedulable on one node",
        kpod("p", priority=MID),
        [kpod("p1", node="node1", priority=HIGH), kpod("p2", node="node2", priority=LOW)],
        [knode("node1", ONE_POD), knode("node2", ONE_POD)],
        {"node1": U, "node2": U},
        [],
        "node2",
        Code.SUCCESS,
        "",
    ),
    (
        "pod can be made schedulable on minHighestPriority node",
        kpod("p", priority=VERY_HIGH),
        [
            kpod("p1", node="node1", priority=HIGH, labels=NON_VIOLATING),
            kpod("p2", node="node1", priority=LOW, labels=VIOLATING),
            kpod("p3", node="node2", priority=MID, labels=VIOLATING),
        ],
        [knode("node1", ONE_POD), knode("node2", ONE_POD)],
        {"node1": U, "node2": U},
        [
            pdb(VIOLATING, 0, name="violating-pdb"),
            pdb(NON_VIOLATING, 2**31 - 1, name="non-violating-pdb"),
        ],
        "node2",
        Code.SUCCESS,
        "",
    ),
    (
        "no candidate nodes found, no enough resource after removing low priority pods",
        kpod("p", priority=HIGH, req=LARGE),
        [kpod("p1", node="node1"), kpod("p2", node="node2")],
        [knode("node1", NODE_RES), knode("node2", NODE_RES)],
        {"node1": U, "node2": U},
        [],
        None,
        U,
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
    ),
    (
        "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU",
        kpod("p", priority=HIGH, req=LARGE),
        [
            kpod("p1", node="node1", priority=HIGH),
            kpod("p2", node="node2"),
            kpod("p3", node="node3", priority=HIGH),
        ],
        [knode("node1", ONE_POD), knode("node2", NODE_RES), knode("node3", ONE_POD)],
        {"node1": U, "node2": U, "node3": U},
        [],
        None,
        U,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
    ),
    (
        "no candidate nodes found with mixed reason, 2 unresolvable nodes, 2 without enough CPU",
        kpod("p", priority=HIGH, req=LARGE),
        [kpod("p1", node="node1"), kpod("p2", node="node2")],
        [knode(f"node{i}", NODE_RES) for i in range(1, 5)],
        {"node1": U, "node2": U, "node4": UU},
        [],
        None,
        U,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
    ),
    (
        "one node failed with the erroring extension and the other passes",
        kpod("p", priority=HIGH, req=LARGE),
        [kpod("p1", node="node1"), kpod("p2", node="node2", req=MEDIUM)],
        [
            {**knode("node1", LARGE), "metadata": {"name": "node1", "labels": {"error": "true"}}},
            knode("node2", LARGE),
        ],
        {"node1": U, "node2": U},
        [],
        "node2",
        Code.SUCCESS,
        "",
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "statuses", "pdbs", "want_node", "want_code", "want_message"),
    [pytest.param(*case[1:], id=case[0]) for case in POST_FILTER_CASES],
)
def test_post_filter(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    statuses: dict[str, Code],
    pdbs: list[dict[str, Any]],
    want_node: str | None,
    want_code: Code,
    want_message: str,
) -> None:
    cluster = build_cluster(nodes, pods, pdbs=pdbs, extra=[("test-plugin", ErroringExtensions())])
    preemptor = cluster.pod(pod)
    state = cluster.pre_filter(preemptor)
    before = snapshot(cluster.table)
    result = cluster.framework.run_post_filter(state, preemptor, cluster.diagnosis(statuses))
    assert result.status.code is want_code
    assert result.status.message() == want_message
    assert result.nominated_node_name == want_node
    assert snapshot(cluster.table) == before


def test_post_filter_error_from_the_only_node_is_returned() -> None:
    cluster = build_cluster(
        [{**knode("node1", LARGE), "metadata": {"name": "node1", "labels": {"error": "true"}}}],
        [kpod("p1", node="node1")],
        extra=[("test-plugin", ErroringExtensions())],
    )
    preemptor = cluster.pod(kpod("p", priority=HIGH, req=LARGE))
    state = cluster.pre_filter(preemptor)
    before = snapshot(cluster.table)
    result = cluster.framework.run_post_filter(state, preemptor, cluster.diagnosis({"node1": U}))
    assert result.status.code is Code.ERROR
    assert result.status.message().startswith("preemption: ")
    assert "failed to remove pod: p" in result.status.message()
    assert result.nominated_node_name is None
    assert snapshot(cluster.table) == before


# -- TestDryRunPreemption ----------------------------------------------------------------------

# (name, node names, preemptors, assigned pods, pdbs, fake filter code, args, offsets,
#  expected candidates per preemptor: {node: (sorted victim names, PDB violations)},
#  expected Filter calls per preemptor)
DRY_RUN_CASES: list[tuple[Any, ...]] = [
    (
        "a pod that does not fit on any node",
        ["node1", "node2"],
        [kpod("p", priority=HIGH)],
        [kpod("p1", node="node1", priority=MID), kpod("p2", node="node2", priority=MID)],
        [],
        U,
        None,
        (0,),
        [{}],
        [2],
    ),
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        [kpod("p", priority=HIGH, req=LARGE)],
        [
            kpod("p1", node="node1", priority=MID, req=LARGE),
            kpod("p2", node="node2", priority=MID, req=LARGE),
        ],
        [],
        None,
        None,
        (0,),
        [{"node1": (["p1"], 0), "node2": (["p2"], 0)}],
        [4],
    ),
    (
        "a pod that would fit, but other pods running are higher priority, no preemption",
        ["node1", "node2"],
        [kpod("p", priority=LOW, req=LARGE)],
        [
            kpod("p1", node="node1", priority=MID, req=LARGE),
            kpod("p2", node="node2", priority=MID, req=LARGE),
        ],
        [],
        None,
        None,
        (0,),
        [{}],
        [0],
    ),
    (
        "medium priority pod is preempted, but lower priority one stays as it is small",
        ["node1", "node2"],
        [kpod("p", priority=HIGH, req=LARGE)],
        [
            kpod("p1.1", node="node1", priority=LOW, req=SMALL),
            kpod("p1.2", node="node1", priority=MID, req=LARGE),
            kpod("p2", node="node2", priority=MID, req=LARGE),
        ],
        [],
        None,
        None,
        (0,),
        [{"node1": (["p1.2"], 0), "node2": (["p2"], 0)}],
        [5],
    ),
    (
        "mixed priority pods are preempted",
        ["node1", "node2"],
        [kpod("p", priority=HIGH, req=LARGE)],
        [
            kpod("p1.1", node="node1", priority=MID, req=SMALL),
            kpod("p1.2", node="node1", priority=LOW, req=SMALL),
            kpod("p1.3", node="node1", priority=MID, req=MEDIUM),
            kpod("p1.4", node="node1", priority=HIGH, req=SMALL),
            kpod("p2", node="node2", priority=HIGH, req=LARGE),
        ],
        [],
        None,
        None,
        (0,),
        [{"node1": (["p1.2", "p1.3"], 0)}],
        [4],
    ),
    (
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        ["node1", "node2"],
        [kpod("p", priority=HIGH, req=LARGE)],
        [
            kpod("p1.1", node="node1", priority=LOW, req=SMALL, start=5),
            kpod("p1.2", node="node1", priority=LOW, req=SMALL, start=4),
            kpod("p1.3", node="node1", priority=MID, req=MEDIUM, start=3),
            kpod("p1.4", node="node1", priority=HIGH, req=SMALL, start=2),
            kpod("p2", node="node2", priority=HIGH, req=LARGE, start=1),
        ],
        [],
        None,
        None,
        (0,),
        [{"node1": (["p1.1", "p1.3"], 0)}],
        [4],
    ),
    (
        "pod with anti-affinity is preempted",
        ["node1", "node2"],
        [kpod("p", priority=HIGH, req=SMALL, labels={"foo": ""})],
        [
            kpod(
                "p1.1",
                node="node1",
                priority=LOW,
                req=SMALL,
                labels={"foo": ""},
                anti_affinity_exists=("foo", "hostname"),
            ),
            kpod("p1.2", node="node1", priority=MID, req=SMALL),
            kpod("p1.3", node="node1", priority=HIGH, req=SMALL),
            kpod("p2", node="node2", priority=HIGH, req=SMALL),
        ],
        [],
        None,
        None,
        (0,),
        [{"node1": (["p1.1"], 0)}],
        [3],
    ),
    (
        "preemption to resolve pod topology spread filter failure",
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [
            kpod(
                "p",
                priority=HIGH,
                labels={"foo": ""},
                spread=[spread_exists(1, "zone", "foo"), spread_exists(1, "hostname", "foo")],
            )
        ],
        [
            kpod("pod-a1", node="node-a", priority=MID, labels={"foo": ""}),
            kpod("pod-a2", node="node-a", priority=LOW, labels={"foo": ""}),
            kpod("pod-b1", node="node-b", priority=LOW, labels={"foo": ""}),
            kpod("pod-x1", node="node-x", priority=HIGH, labels={"foo": ""}),
            kpod("pod-x2", node="node-x", priority=HIGH, labels={"foo": ""}),
        ],
        [],
        None,
        None,
        (0,),
        [{"node-a": (["pod-a2"], 0), "node-b": (["pod-b1"], 0)}],
        [5],
    ),
    (
        "get Unschedulable in the preemption phase when the filter plugins filter the nodes",
        ["node1", "node2"],
        [kpod("p", priority=HIGH, req=LARGE)],
        [
            kpod("p1", node="node1", priority=MID, req=LARGE),
            kpod("p2", node="node2", priority=MID, req=LARGE),
        ],
        [],
        U,
        None,
        (0,),
        [{}],
        [2],
    ),
    (
        "preemption with violation of same pdb",
        ["node1"],
        [kpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            kpod("p1.1", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
            kpod("p1.2", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
        ],
        [pdb({"app": "foo"}, 1)],
        None,
        None,
        (0,),
        [{"node1": (["p1.1", "p1.2"], 1)}],
        [3],
    ),
    (
        "violation of the pdb whose processed eviction is not among the victims",
        ["node1"],
        [kpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            kpod("p1.1", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
            kpod("p1.2", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
        ],
        [pdb({"app": "foo"}, 1, disrupted=["p2"])],
        None,
        None,
        (0,),
        [{"node1": (["p1.1", "p1.2"], 1)}],
        [3],
    ),
    (
        "no violation when the victim's eviction was already processed by the pdb",
        ["node1"],
        [kpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            kpod("p1.1", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
            kpod("p1.2", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
        ],
        [pdb({"app": "foo"}, 1, disrupted=["p1.2"])],
        None,
        None,
        (0,),
        [{"node1": (["p1.1", "p1.2"], 0)}],
        [3],
    ),
    (
        "a victim in the pdb's disruptedPods is treated as non-violating",
        ["node1"],
        [kpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            kpod("p1.1", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
            kpod("p1.2", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
            kpod("p1.3", node="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
        ],
        [pdb({"app": "foo"}, 1, disrupted=["p1.3"])],
        None,
        None,
        (0,),
        [{"node1": (["p1.1", "p1.2", "p1.3"], 1)}],
        [4],
    ),
    (
        "PDB-violating pods are reprieved first, even before more important ones",
        ["node1"],
        [kpod("p", priority=HIGH, req=LARGE)],
        [
            kpod("guarded", node="node1", priority=LOW, req=MEDIUM, labels={"app": "foo"}),
            kpod("important", node="node1", priority=MID, req=MEDIUM),
        ],
        [pdb({"app": "foo"}, 0)],
        None,
        None,
        (0,),
        [{"node1": (["important"], 0)}],
        [3],
    ),
    (
        "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
        [f"node{i}" for i in range(1, 6)],
        [kpod("p", priority=HIGH, req=LARGE)],
        [kpod(f"p{i}", node=f"node{i}", priority=MID, req=LARGE) for i in range(1, 6)],
        [],
        None,
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        (4,),
        [{"node1": (["p1"], 0), "node5": (["p5"], 0)}],
        [4],
    ),
    (
        "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
        [f"node{i}" for i in range(1, 6)],
        [kpod("p", priority=HIGH, req=LARGE)],
        [
            kpod(f"p{i}", node=f"node{i}", priority=VERY_HIGH if i in (2, 5) else MID, req=LARGE)
            for i in range(1, 6)
        ],
        [],
        None,
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        (4,),
        [{"node1": (["p1"], 0), "node3": (["p3"], 0)}],
        [4],
    ),
    (
        "preemption offset across multiple scheduling cycles and wrap around",
        [f"node{i}" for i in range(1, 6)],
        [kpod(f"tp{i}", priority=HIGH, req=LARGE) for i in range(1, 4)],
        [kpod(f"p{i}", node=f"node{i}", priority=MID, req=LARGE) for i in range(1, 6)],
        [],
        None,
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        (4, 1, 3),
        [
            {"node1": (["p1"], 0), "node5": (["p5"], 0)},
            {"node2": (["p2"], 0), "node3": (["p3"], 0)},
            {"node4": (["p4"], 0), "node5": (["p5"], 0)},
        ],
        [4, 4, 4],
    ),
    (
        "preemption looks past numCandidates until a non-PDB violating node is found",
        [f"node{i}" for i in range(1, 6)],
        [kpod("p", priority=HIGH, req=LARGE)],
        [
            kpod(
                f"p{i}",
                node=f"node{i}",
                priority=MID,
                req=LARGE,
                labels={"app": "foo"} if i in (1, 2, 5) else None,
            )
            for i in range(1, 6)
        ],
        [pdb({"app": "foo"}, 0)],
        None,
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
        (4,),
        [{"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)}],
        [8],
    ),
]


@pytest.mark.parametrize(
    (
        "node_names",
        "preemptors",
        "pods",
        "pdbs",
        "filter_code",
        "args",
        "offset_seq",
        "expected",
        "filter_calls",
    ),
    [pytest.param(*case[1:], id=case[0]) for case in DRY_RUN_CASES],
)
def test_dry_run_preemption(
    node_names: list[str],
    preemptors: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    filter_code: Code | None,
    args: dict[str, int] | None,
    offset_seq: tuple[int, ...],
    expected: list[dict[str, tuple[list[str], int]]],
    filter_calls: list[int],
) -> None:
    cluster = build_cluster(
        [knode(n, VERY_LARGE) for n in node_names],
        pods,
        pdbs=pdbs,
        args=args,
        filter_code=filter_code,
    )
    plugin = cluster.plugin
    plugin.offset_rand = offsets(*offset_seq)
    budgets = plugin.evaluator.disruption_budgets()
    rows = cluster.table.rows()
    for cycle, raw in enumerate(preemptors):
        preemptor = cluster.pod(raw)
        state = cluster.pre_filter(preemptor)
        before_calls = cluster.counter.calls
        before = snapshot(cluster.table)
        offset, num = plugin.get_offset_and_num_candidates(len(rows))
        candidates, _, errors = plugin.evaluator.dry_run_preemption(
            state, preemptor, rows, budgets, offset, num, plugin.evaluator.clock_ns()
        )
        assert not errors
        got = {
            c.node: (sorted(v.name for v in c.victims), c.num_pdb_violations) for c in candidates
        }
        assert got == expected[cycle], f"cycle {cycle}"
        assert cluster.counter.calls - before_calls == filter_calls[cycle], f"cycle {cycle}"
        assert snapshot(cluster.table) == before


# -- TestSelectBestCandidate ---------------------------------------------------------------

SELECT_CASES = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        kpod("p", priority=HIGH, req=LARGE),
        [
            kpod("p1", node="node1", priority=MID, req=LARGE, start=0),
            kpod("p2", node="node2", priority=MID, req=LARGE, start=0),
        ],
        {"node1", "node2"},
    ),
    (
        "node with min highest priority pod is picked",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=MID, req=MEDIUM, start=0),
            kpod("p1.2", node="node1", priority=MID, req=LARGE, start=0),
            kpod("p2.1", node="node2", priority=MID, req=MEDIUM, start=0),
            kpod("p2.2", node="node2", priority=LOW, req=MEDIUM, start=0),
            kpod("p3.1", node="node3", priority=LOW, req=MEDIUM, start=0),
            kpod("p3.2", node="node3", priority=LOW, req=MEDIUM, start=0),
        ],
        {"node3"},
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=MID, req=MEDIUM, start=0),
            kpod("p1.2", node="node1", priority=MID, req=LARGE, start=0),
            kpod("p2.1", node="node2", priority=MID, req=LARGE, start=0),
            kpod("p2.2", node="node2", priority=LOW, req=MEDIUM, start=0),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM, start=0),
            kpod("p3.2", node="node3", priority=MID, req=MEDIUM, start=0),
        ],
        {"node2"},
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=MID, req=SMALL, start=0),
            kpod("p1.2", node="node1", priority=NEG, req=SMALL, start=0),
            kpod("p1.3", node="node1", priority=MID, req=SMALL, start=0),
            kpod("p1.4", node="node1", priority=NEG, req=SMALL, start=0),
            kpod("p2.1", node="node2", priority=MID, req=LARGE, start=0),
            kpod("p2.2", node="node2", priority=NEG, req=MEDIUM, start=0),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM, start=0),
            kpod("p3.2", node="node3", priority=NEG, req=SMALL, start=0),
            kpod("p3.3", node="node3", priority=LOW, req=SMALL, start=0),
        ],
        {"node2"},
    ),
    (
        "sum of adjusted priorities is considered",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=MID, req=SMALL, start=0),
            kpod("p1.2", node="node1", priority=NEG, req=SMALL, start=0),
            kpod("p1.3", node="node1", priority=NEG, req=SMALL, start=0),
            kpod("p2.1", node="node2", priority=MID, req=LARGE, start=0),
            kpod("p2.2", node="node2", priority=NEG, req=MEDIUM, start=0),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM, start=0),
            kpod("p3.2", node="node3", priority=NEG, req=SMALL, start=0),
            kpod("p3.3", node="node3", priority=LOW, req=SMALL, start=0),
        ],
        {"node2"},
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        kpod("p", priority=VERY_HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=MID, req=SMALL, start=0),
            kpod("p1.2", node="node1", priority=LOW, req=SMALL, start=0),
            kpod("p1.3", node="node1", priority=LOW, req=SMALL, start=0),
            kpod("p2.1", node="node2", priority=HIGH, req=LARGE, start=0),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM, start=0),
            kpod("p3.2", node="node3", priority=LOW, req=SMALL, start=0),
            kpod("p3.3", node="node3", priority=LOW, req=SMALL, start=0),
            kpod("p3.4", node="node3", priority=LOW, req=MEDIUM, start=0),
            kpod("p4.1", node="node4", priority=MID, req=MEDIUM, start=0),
            kpod("p4.2", node="node4", priority=MID, req=SMALL, start=0),
            kpod("p4.3", node="node4", priority=MID, req=SMALL, start=0),
            kpod("p4.4", node="node4", priority=NEG, req=SMALL, start=0),
        ],
        {"node1"},
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=MID, req=MEDIUM, start=2),
            kpod("p1.2", node="node1", priority=MID, req=MEDIUM, start=2),
            kpod("p2.1", node="node2", priority=MID, req=MEDIUM, start=3),
            kpod("p2.2", node="node2", priority=MID, req=MEDIUM, start=3),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM, start=1),
            kpod("p3.2", node="node3", priority=MID, req=MEDIUM, start=1),
        ],
        {"node2"},
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=MID, req=MEDIUM, start=4),
            kpod("p1.2", node="node1", priority=MID, req=MEDIUM, start=2),
            kpod("p2.1", node="node2", priority=MID, req=MEDIUM, start=5),
            kpod("p2.2", node="node2", priority=MID, req=MEDIUM, start=1),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM, start=3),
            kpod("p3.2", node="node3", priority=MID, req=MEDIUM, start=6),
        ],
        {"node3"},
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=LOW, req=MEDIUM, start=4),
            kpod("p1.2", node="node1", priority=MID, req=MEDIUM, start=2),
            kpod("p2.1", node="node2", priority=MID, req=MEDIUM, start=6),
            kpod("p2.2", node="node2", priority=LOW, req=MEDIUM, start=1),
            kpod("p3.1", node="node3", priority=LOW, req=MEDIUM, start=3),
            kpod("p3.2", node="node3", priority=MID, req=MEDIUM, start=5),
        ],
        {"node2"},
    ),
]


@pytest.mark.parametrize(
    ("node_names", "pod", "pods", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in SELECT_CASES],
)
def test_select_best_candidate(
    node_names: list[str],
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    expected: set[str],
) -> None:
    cluster = build_cluster([knode(n, VERY_LARGE) for n in node_names], pods)
    plugin = cluster.plugin
    plugin.offset_rand = offsets(0)
    preemptor = cluster.pod(pod)
    state = cluster.pre_filter(preemptor)
    rows = cluster.table.rows()
    now = plugin.evaluator.clock_ns()
    offset, num = plugin.get_offset_and_num_candidates(len(rows))
    candidates, _, _ = plugin.evaluator.dry_run_preemption(
        state, preemptor, rows, [], offset, num, now
    )
    assert candidates
    assert plugin.select_candidate(candidates, now).node in expected


def test_pick_one_node_ties_keep_the_first_candidate() -> None:
    victim = PodInfo.from_dict(kpod("v", priority=LOW, start=1))
    first = Candidate("node-b", (victim,), 0)
    second = Candidate("node-a", (victim,), 0)
    assert pick_one_node([first, second], 0).node == "node-b"
    assert pick_one_node([second, first], 0).node == "node-a"


def test_pick_one_node_prefers_fewer_pdb_violations_first() -> None:
    cheap = PodInfo.from_dict(kpod("cheap", priority=NEG, start=1))
    dear = PodInfo.from_dict(kpod("dear", priority=MID, start=1))
    violating = Candidate("node1", (cheap,), 1)
    clean = Candidate("node2", (dear,), 0)
    assert pick_one_node([violating, clean], 0).node == "node2"


# -- TestPodEligibleToPreemptOthers ------------------------------------------------------

PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}

ELIGIBLE_CASES = [
    (
        "pod with nominated node whose status is UnschedulableAndUnresolvable",
        kpod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [kpod("p1", node="node1", priority=LOW, terminating=True, conditions=[PREEMPTED])],
        ["node1"],
        {"node1": UU},
        True,
    ),
    (
        "pod without nominated node",
        kpod("p_without_nominated_node", priority=HIGH),
        [],
        [],
        {},
        True,
    ),
    (
        "pod with 'PreemptNever' preemption policy",
        kpod("p_with_preempt_never_policy", priority=HIGH, preemption_policy="Never"),
        [],
        [],
        {},
        False,
    ),
    (
        "preemption victim pod terminating, as indicated by the DisruptionTarget condition",
        kpod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [kpod("p1", node="node1", priority=LOW, terminating=True, conditions=[PREEMPTED])],
        ["node1"],
        {"node1": U},
        False,
    ),
    (
        "non-victim pods terminating",
        kpod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [kpod("p1", node="node1", priority=LOW, terminating=True)],
        ["node1"],
        {"node1": U},
        True,
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "statuses", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in ELIGIBLE_CASES],
)
def test_pod_eligible_to_preempt_others(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[str],
    statuses: dict[str, Code],
    expected: bool,
) -> None:
    cluster = build_cluster([knode(n) for n in nodes], pods)
    diagnosis = cluster.diagnosis(statuses)
    eligible, _ = cluster.plugin.pod_eligible_to_preempt_others(cluster.pod(pod), diagnosis)
    assert eligible is expected


def test_preemption_policy_never_explains_itself() -> None:
    cluster = build_cluster([knode("node1", ONE_POD)], [kpod("p1", node="node1")])
    preemptor = cluster.pod(kpod("p", priority=HIGH, preemption_policy="Never"))
    state = cluster.pre_filter(preemptor)
    result = cluster.framework.run_post_filter(state, preemptor, cluster.diagnosis({"node1": U}))
    assert result.status.code is U
    assert result.status.message() == "preemption: not eligible due to preemptionPolicy=Never."
    assert result.nominated_node_name is None
    assert not cluster.plugin.executor.background_tasks


# -- TestPreempt: the whole cycle, then the evictions ------------------------------------

PREEMPT_CASES = [
    (
        "basic preemption logic",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE, preemption_policy="PreemptLowerPriority"),
        [
            kpod("p1.1", node="node1", priority=LOW, req=SMALL),
            kpod("p1.2", node="node1", priority=LOW, req=SMALL),
            kpod("p2.1", node="node2", priority=HIGH, req=LARGE),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM),
        ],
        "node1",
        ["p1.1", "p1.2"],
    ),
    (
        "preemption for topology spread constraints",
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        kpod(
            "p",
            priority=HIGH,
            labels={"foo": ""},
            spread=[spread_exists(1, "zone", "foo"), spread_exists(1, "hostname", "foo")],
        ),
        [
            kpod("p-a1", node="node-a", priority=HIGH, labels={"foo": ""}),
            kpod("p-a2", node="node-a", priority=HIGH, labels={"foo": ""}),
            kpod("p-b1", node="node-b", priority=LOW, labels={"foo": ""}),
            kpod("p-x1", node="node-x", priority=HIGH, labels={"foo": ""}),
            kpod("p-x2", node="node-x", priority=HIGH, labels={"foo": ""}),
        ],
        "node-b",
        ["p-b1"],
    ),
    (
        "no preempting in pod",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE, preemption_policy="Never"),
        [
            kpod("p1.1", node="node1", priority=LOW, req=SMALL),
            kpod("p1.2", node="node1", priority=LOW, req=SMALL),
            kpod("p2.1", node="node2", priority=HIGH, req=LARGE),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM),
        ],
        None,
        [],
    ),
    (
        "PreemptionPolicy is nil",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", node="node1", priority=LOW, req=SMALL),
            kpod("p1.2", node="node1", priority=LOW, req=SMALL),
            kpod("p2.1", node="node2", priority=HIGH, req=LARGE),
            kpod("p3.1", node="node3", priority=MID, req=MEDIUM),
        ],
        "node1",
        ["p1.1", "p1.2"],
    ),
]


def schedule_and_preempt(cluster: Cluster, raw: dict[str, Any]) -> tuple[PodInfo, Any]:
    """One real scheduling cycle that fails, then the framework's PostFilter."""
    preemptor = cluster.pod(raw)
    state = cluster.framework.new_cycle_state()
    outcome = Algorithm(cluster.framework, seed=1).schedule(state, preemptor, cluster.table)
    assert outcome.node is None, "the pod must not fit without preemption"
    before = snapshot(cluster.table)
    result = cluster.framework.run_post_filter(state, preemptor, outcome.diagnosis)
    assert snapshot(cluster.table) == before
    return preemptor, result


def deletes(client: FakeClient) -> list[tuple[str, Any]]:
    return [(r["path"], r["body"]) for r in client.requests if r["method"] == "DELETE"]


@pytest.mark.parametrize(
    ("node_names", "pod", "pods", "want_node", "want_victims"),
    [pytest.param(*case[1:], id=case[0]) for case in PREEMPT_CASES],
)
async def test_preempt_deletes_the_victims(
    node_names: list[str],
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    want_node: str | None,
    want_victims: list[str],
) -> None:
    cluster = build_cluster([knode(n, VERY_LARGE) for n in node_names], pods)
    preemptor, result = schedule_and_preempt(cluster, pod)
    assert result.nominated_node_name == want_node
    assert result.status.is_success() is (want_node is not None)
    tasks = cluster.plugin.executor.background_tasks
    if want_node is not None:
        assert cluster.plugin.executor.is_preempting(preemptor.uid)
    await _settle(tasks)
    assert not cluster.plugin.executor.is_preempting(preemptor.uid)
    options = {"kind": "DeleteOptions", "apiVersion": "v1"}
    assert sorted(deletes(cluster.client)) == [
        (f"/api/v1/namespaces/default/pods/{v}", {**options, "preconditions": {"uid": v}})
        for v in want_victims
    ]
    assert sorted(e[0] for e in cluster.events if e[2] == "Preempted") == [
        f"default/{v}" for v in want_victims
    ]
    for _key, kind, _, note, action in cluster.events:
        assert (kind, action) == ("Normal", "Preempting")
        assert note == f"Preempted by pod {preemptor.uid} on node {want_node}"


async def _settle(tasks: Sequence[Any] | frozenset[Any]) -> None:
    if tasks:
        await asyncio.gather(*tasks)


async def test_eviction_marks_the_victim_then_deletes_it_and_unnominates_lower_pods() -> None:
    client = FakeClient()
    cluster = build_cluster(
        [knode("node1", ONE_POD)], [kpod("victim", node="node1", priority=LOW)], client=client
    )

    def nominate(name: str, priority: int) -> None:
        nominee = PodInfo.from_dict(kpod(name, priority=priority, nominated="node1"))
        cluster.nominator.nominate(nominee, "node1")

    nominate("low-nominee", LOW)
    _, result = schedule_and_preempt(cluster, kpod("p", priority=HIGH))
    assert result.nominated_node_name == "node1"
    # Nominated by the time the eviction runs (it would have blocked the dry run).
    nominate("high-nominee", VERY_HIGH)
    await _settle(cluster.plugin.executor.background_tasks)

    requests = client.requests
    # Nominations come from the queue: no pod listing per preemption.
    assert not [r for r in requests if r["method"] == "GET"]
    patches = [r for r in requests if r["method"] == "PATCH"]
    assert {p["path"] for p in patches} == {
        "/api/v1/namespaces/default/pods/victim/status",
        "/api/v1/namespaces/default/pods/low-nominee/status",
    }
    for patch in patches:
        assert patch["content_type"] == "application/strategic-merge-patch+json"
    mark = next(p for p in patches if p["path"].endswith("/victim/status"))
    assert mark["body"]["metadata"] == {"uid": "victim"}
    (condition,) = mark["body"]["status"]["conditions"]
    assert condition["type"] == "DisruptionTarget"
    assert condition["status"] == "True"
    assert condition["reason"] == "PreemptionByScheduler"
    assert condition["message"] == (
        "default-scheduler: preempting to accommodate a higher priority pod"
    )
    unnominate = next(p for p in patches if p["path"].endswith("/low-nominee/status"))
    assert unnominate["body"] == {
        "metadata": {"uid": "low-nominee"},
        "status": {"nominatedNodeName": None},
    }
    # The victim is marked before it is deleted, and deleted with its UID as precondition.
    order = [(r["method"], r["path"]) for r in requests]
    mark_at = order.index(("PATCH", "/api/v1/namespaces/default/pods/victim/status"))
    delete_at = order.index(("DELETE", "/api/v1/namespaces/default/pods/victim"))
    assert mark_at < delete_at
    assert requests[delete_at]["body"]["preconditions"] == {"uid": "victim"}
    assert cluster.events == [
        ("default/victim", "Normal", "Preempted", "Preempted by pod p on node node1", "Preempting")
    ]


async def test_a_victim_already_gone_is_no_failure() -> None:
    class Gone(Exception):
        status = 404

    client = FakeClient()
    client.fail[("DELETE", "/api/v1/namespaces/default/pods/victim")] = Gone("not found")
    cluster = build_cluster(
        [knode("node1", ONE_POD)], [kpod("victim", node="node1", priority=LOW)], client=client
    )
    _, result = schedule_and_preempt(cluster, kpod("p", priority=HIGH))
    assert result.nominated_node_name == "node1"
    await _settle(cluster.plugin.executor.background_tasks)
    assert not [e for e in cluster.events if e[2] == "Preempted"]
    assert cluster.activated == []


async def test_failed_eviction_retries_the_preemptor() -> None:
    client = FakeClient()
    client.fail[("DELETE", "/api/v1/namespaces/default/pods/victim")] = RuntimeError("boom")
    cluster = build_cluster(
        [knode("node1", ONE_POD)], [kpod("victim", node="node1", priority=LOW)], client=client
    )
    _, result = schedule_and_preempt(cluster, kpod("p", priority=HIGH))
    assert result.status.is_success()
    await _settle(cluster.plugin.executor.background_tasks)
    assert cluster.activated == ["default/p"]


async def test_no_second_preemption_while_the_first_is_in_flight() -> None:
    cluster = build_cluster(
        [knode("node1", ONE_POD), knode("node2", ONE_POD)],
        [kpod("v1", node="node1", priority=LOW), kpod("v2", node="node2", priority=LOW)],
    )
    _, first = schedule_and_preempt(cluster, kpod("p", priority=HIGH))
    assert first.status.is_success()
    _, second = schedule_and_preempt(cluster, kpod("p", priority=HIGH))
    assert second.status.code is U
    assert second.status.message() == "preemption: " + MSG_IN_PROGRESS
    await _settle(cluster.plugin.executor.background_tasks)
    assert len(deletes(cluster.client)) == 1


async def test_a_waiting_pod_is_rejected_instead_of_deleted() -> None:
    cluster = build_cluster([knode("node1", ONE_POD)], [kpod("victim", node="node1", priority=LOW)])
    victim = PodInfo.from_dict(kpod("victim", node="node1", priority=LOW))
    entry = WaitingPodEntry(victim, "node1", {"Gate": 30.0})
    cluster.handle.waiting_pods.add(entry)
    _, result = schedule_and_preempt(cluster, kpod("p", priority=HIGH))
    assert result.nominated_node_name == "node1"
    await _settle(cluster.plugin.executor.background_tasks)
    status = await entry.wait()
    assert status.code is U
    assert "preempted" in status.message()
    assert deletes(cluster.client) == []
    assert [e[2] for e in cluster.events] == ["Preempted"]


async def test_no_candidate_clears_the_pods_own_nomination() -> None:
    cluster = build_cluster([knode("node1", ONE_POD)], [kpod("p1", node="node1", priority=HIGH)])
    _, result = schedule_and_preempt(cluster, kpod("p", priority=HIGH, nominated="node1"))
    assert result.status.code is U
    assert result.status.message() == (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    await _settle(cluster.plugin.executor.background_tasks)
    assert [(r["method"], r["path"], r["body"]) for r in cluster.client.requests] == [
        (
            "PATCH",
            "/api/v1/namespaces/default/pods/p/status",
            {"metadata": {"uid": "p"}, "status": {"nominatedNodeName": None}},
        )
    ]


def test_without_an_event_loop_the_nomination_is_still_returned() -> None:
    cluster = build_cluster([knode("node1", ONE_POD)], [kpod("victim", node="node1", priority=LOW)])
    _, result = schedule_and_preempt(cluster, kpod("p", priority=HIGH))
    assert result.nominated_node_name == "node1"
    assert not cluster.plugin.executor.background_tasks
    assert cluster.client.requests == []


def test_failed_cycle_message_carries_the_preemption_verdict() -> None:
    cluster = build_cluster([knode("node1", ONE_POD)], [kpod("p1", node="node1", priority=HIGH)])
    preemptor = cluster.pod(kpod("p", priority=LOW))
    state = cluster.framework.new_cycle_state()
    outcome = Algorithm(cluster.framework).schedule(state, preemptor, cluster.table)
    cluster.framework.run_post_filter(state, preemptor, outcome.diagnosis)
    assert outcome.diagnosis.message() == (
        "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )


# -- PDB matching and the args ---------------------------------------------------------------


def test_pdb_selectors_namespaces_and_budgets() -> None:
    pods = [
        PodInfo.from_dict(kpod("a", labels={"app": "foo"})),
        PodInfo.from_dict(kpod("b", labels={"app": "foo"})),
        PodInfo.from_dict(kpod("c", labels={"app": "foo"}, namespace="other")),
        PodInfo.from_dict(kpod("d")),
    ]
    empty = {**pdb({}, 0, name="empty"), "spec": {"selector": {}}}
    nil = {**pdb({}, 0, name="nil"), "spec": {}}
    invalid = {
        **pdb({}, 0, name="invalid"),
        "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}},
    }
    budgets = [DisruptionBudget.from_dict(o) for o in (pdb({"app": "foo"}, 1), empty, nil, invalid)]
    violating, non_violating = filter_pods_with_pdb_violation(pods, budgets)
    assert [p.name for p in violating] == ["b"]
    assert [p.name for p in non_violating] == ["a", "c", "d"]


@pytest.mark.parametrize(
    ("num_nodes", "percentage", "absolute", "expected"),
    [(0, 10, 100, 0), (10, 10, 100, 10), (1000, 10, 100, 100), (5000, 10, 100, 500), (5, 40, 1, 2)],
)
def test_calculate_num_candidates(
    num_nodes: int, percentage: int, absolute: int, expected: int
) -> None:
    assert calculate_num_candidates(num_nodes, percentage, absolute) == expected


def test_args_defaults_and_aliases() -> None:
    args = DefaultPreemptionArgs()
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (10, 100)
    parsed = DefaultPreemptionArgs.model_validate(
        {"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 0}
    )
    assert (parsed.min_candidate_nodes_percentage, parsed.min_candidate_nodes_absolute) == (50, 0)


@pytest.mark.parametrize(
    "raw",
    [
        {"minCandidateNodesPercentage": -1},
        {"minCandidateNodesPercentage": 101},
        {"minCandidateNodesAbsolute": -1},
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        {"minCandidateNodes": 3},
    ],
)
def test_args_validation_rejects(raw: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        DefaultPreemptionArgs.model_validate(raw)


def test_plugin_declares_its_pdb_watch_and_api_version() -> None:
    assert ("policy", "v1", "poddisruptionbudgets") in DefaultPreemption.watches
    assert DefaultPreemption.api_version == "1.0"


# -- against the API server of the suite (the emulator, or a real kube-apiserver) ---------


async def test_evictions_are_accepted_by_the_api_server(kube_backend: Any, namespace: str) -> None:
    from scheduler.kube.client import KubeClient

    client = await KubeClient.from_kubeconfig(str(kube_backend.kubeconfig), qps=0, burst=100)
    async with client:
        base = f"/api/v1/namespaces/{namespace}/pods"
        victim = kpod("victim", node="node1", priority=LOW, namespace=namespace)
        nominee = kpod("nominee", priority=LOW, namespace=namespace)
        for raw in (victim, nominee):
            body = {k: v for k, v in raw.items() if k != "status"}
            body["metadata"] = {k: v for k, v in raw["metadata"].items() if k != "uid"}
            created = await client.request("POST", base, body=body)
            raw["metadata"]["uid"] = created["metadata"]["uid"]
        await client.request(
            "PATCH",
            f"{base}/nominee/status",
            body={"status": {"nominatedNodeName": "node1"}},
            content_type="application/strategic-merge-patch+json",
        )
        nominee["status"]["nominatedNodeName"] = "node1"
        cluster = build_cluster([knode("node1", ONE_POD)], [victim], client=client)
        cluster.nominator.nominate(PodInfo.from_dict(nominee), "node1")  # as the queue knows it
        _, result = schedule_and_preempt(cluster, kpod("p", priority=HIGH, namespace=namespace))
        assert result.nominated_node_name == "node1"
        await _settle(cluster.plugin.executor.background_tasks)
        assert cluster.activated == []

        listing = await client.request("GET", base)
        by_name = {p["metadata"]["name"]: p for p in listing["items"]}
        if "victim" in by_name:  # graceful deletion: still there, terminating and marked
            gone = by_name["victim"]
            assert gone["metadata"].get("deletionTimestamp")
            conditions = {c["type"]: c for c in gone["status"].get("conditions") or ()}
            assert conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
        assert not by_name["nominee"]["status"].get("nominatedNodeName")
        assert [e[2] for e in cluster.events] == ["Preempted"]


def test_the_pdb_store_is_requested_when_the_plugin_is_built() -> None:
    """The daemon starts informers for stores asked for before it runs."""
    from scheduler.framework.handle import FrameworkHandle, StaticStore
    from scheduler.state.nodetable import NodeTable

    asked: list[tuple[str, str, str]] = []

    def provider(group: str, version: str, plural: str) -> StaticStore:
        asked.append((group, version, plural))
        return StaticStore([pdb({"app": "foo"}, 3)])

    plugin = DefaultPreemption(None, FrameworkHandle("p", NodeTable(), store_provider=provider))
    assert asked == [("policy", "v1", "poddisruptionbudgets")]
    (budget,) = plugin.evaluator.disruption_budgets()
    assert budget.disruptions_allowed == 3
