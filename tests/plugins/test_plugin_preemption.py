"""Preemption for plugins (API 2.1): ``handle.preemption(policy)`` and the ``WhatIf``.

A 2.1 plugin that only states kube's default policy must preempt exactly as
DefaultPreemption does, both with the framework's batched victim selection
and with its own ``select_victims_on_node`` written against the ``WhatIf``
(kube's ``SelectVictimsOnNode`` re-implemented through the public API): the
cases are kube's TestPostFilter and TestDryRunPreemption, as
``test_defaultpreemption`` runs them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest

from scheduler.api import Code, CycleState, Diagnosis, Node, Plugin, Pod, Status, hookimpl
from scheduler.api.handle import Handle
from scheduler.api.preemption import (
    MSG_NO_VICTIMS,
    Candidate,
    DisruptionBudget,
    Victims,
    WhatIf,
    filter_pods_with_pdb_violation,
    importance_key,
)
from scheduler.api.results import PostFilterResult
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.preemption.candidates import calculate_num_candidates
from tests.plugins.preemption_kit import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    SMALL,
    VERY_LARGE,
    Cluster,
    ErroringExtensions,
    build_cluster,
    knode,
    kpod,
    pdb,
    snapshot,
)
from tests.plugins.test_defaultpreemption import DRY_RUN_CASES, POST_FILTER_CASES


class KubePolicy(Plugin):
    """kube's default preemption policy through the public API only (offset 0)."""

    api_version: ClassVar[str] = "2.1"
    name: ClassVar[str] = "KubePolicy"

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.preemption = handle.preemption(self)
        self.offset = 0
        self.custom_calls = 0

    @hookimpl
    def pre_enqueue(self, pod: Pod) -> Status | None:
        return self.preemption.admit(pod)

    @hookimpl
    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> PostFilterResult:
        result = self.preemption.preempt(state, pod, diagnosis)
        status = result.status
        if status.message():
            status = Status(status.code, ("preemption: " + status.message(),), status.plugin)
        return PostFilterResult(status, result.nominated_node_name)

    def pod_eligible_to_preempt_others(self, pod: Pod, diagnosis: Diagnosis) -> tuple[bool, str]:
        if (pod.raw.get("spec") or {}).get("preemptionPolicy") == "Never":
            return False, "not eligible due to preemptionPolicy=Never."
        return True, ""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.offset % max(num_nodes, 1), calculate_num_candidates(num_nodes, 10, 100)


class OwnVictims(KubePolicy):
    """kube's ``SelectVictimsOnNode``, written against the ``WhatIf``."""

    name: ClassVar[str] = "OwnVictims"

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: Pod,
        node: Node,
        what_if: WhatIf,
        budgets: Sequence[DisruptionBudget],
    ) -> Victims:
        self.custom_calls += 1
        lower = [p for p in list(node.pods) if p.priority < pod.priority]
        if not lower:
            return Victims([], 0, Status.unresolvable(MSG_NO_VICTIMS))
        for victim in lower:
            status = what_if.remove_pod(victim)
            if not status.is_success():
                return Victims([], 0, status)
        status = what_if.filter(node.name)
        if not status.is_success():
            return Victims([], 0, status)
        lower.sort(key=importance_key(2**62))
        violating, non_violating = filter_pods_with_pdb_violation(lower, budgets)
        victims: list[Pod] = []
        violations = 0
        for group, counts in ((violating, 1), (non_violating, 0)):
            for candidate in group:
                status = what_if.add_pod(candidate, node.name)
                if not status.is_success():
                    return Victims([], 0, status)
                if not what_if.filter(node.name).is_success():
                    status = what_if.remove_pod(candidate)
                    if not status.is_success():
                        return Victims([], 0, status)
                    victims.append(candidate)
                    violations += counts
        return Victims(victims, violations, Status.success())


POLICIES: list[type[KubePolicy]] = [KubePolicy, OwnVictims]


def cluster_with(
    policy: type[KubePolicy], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], **kw: Any
) -> Cluster:
    factory: Callable[[FrameworkHandle], object] = lambda handle: policy(None, handle)  # noqa: E731
    return build_cluster(nodes, pods, post_filter=(policy.name, factory), **kw)


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "statuses", "pdbs", "want_node", "want_code", "want_message"),
    [pytest.param(*case[1:], id=case[0]) for case in POST_FILTER_CASES],
)
def test_a_plugin_policy_preempts_as_default_preemption_does(
    policy: type[KubePolicy],
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    statuses: dict[str, Code],
    pdbs: list[dict[str, Any]],
    want_node: str | None,
    want_code: Code,
    want_message: str,
) -> None:
    cluster = cluster_with(
        policy, nodes, pods, pdbs=pdbs, extra=[("test-plugin", ErroringExtensions())]
    )
    preemptor = cluster.pod(pod)
    state = cluster.pre_filter(preemptor)
    before = snapshot(cluster.table)
    result = cluster.framework.run_post_filter(state, preemptor, cluster.diagnosis(statuses))
    assert result.status.code is want_code
    assert result.status.message() == want_message
    assert result.nominated_node_name == want_node
    assert snapshot(cluster.table) == before


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
    [pytest.param(*case[1:], id=case[0]) for case in DRY_RUN_CASES if case[6] is None],
)
def test_own_victim_selection_finds_kubes_candidates(
    node_names: list[str],
    preemptors: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    filter_code: Code | None,
    args: None,
    offset_seq: tuple[int, ...],
    expected: list[dict[str, tuple[list[str], int]]],
    filter_calls: list[int],
) -> None:
    """Every candidate the dry run finds with the policy's own selection, as kube's."""
    cluster = cluster_with(
        OwnVictims,
        [knode(n, VERY_LARGE) for n in node_names],
        pods,
        pdbs=pdbs,
        filter_code=filter_code,
    )
    plugin: OwnVictims = cluster.plugin
    evaluator = plugin.preemption.evaluator  # type: ignore[attr-defined]
    budgets = evaluator.disruption_budgets()
    rows = cluster.table.rows()
    for cycle, raw in enumerate(preemptors):
        plugin.offset = offset_seq[cycle % len(offset_seq)]
        preemptor = cluster.pod(raw)
        state = cluster.pre_filter(preemptor)
        before = snapshot(cluster.table)
        offset, num = plugin.get_offset_and_num_candidates(len(rows))
        candidates, _, errors = evaluator.dry_run_preemption(
            state, preemptor, rows, budgets, offset, num, evaluator.clock_ns()
        )
        assert not errors
        got = {
            c.node: (sorted(v.name for v in c.victims), c.num_pdb_violations) for c in candidates
        }
        assert got == expected[cycle], f"cycle {cycle}"
        assert snapshot(cluster.table) == before
    assert plugin.custom_calls > 0


def test_without_own_selection_the_batched_dry_run_is_kept() -> None:
    cluster = cluster_with(
        KubePolicy, [knode("a", SMALL), knode("b", SMALL)], [kpod("v", node="a", req=SMALL)]
    )
    cluster.counter.pods_via_requested = True  # kube's fake filter reads nothing
    evaluator = cluster.plugin.preemption.evaluator
    state = cluster.pre_filter(cluster.pod(kpod("p", priority=HIGH, req=SMALL)))
    assert evaluator.dry_run.select_victims_on_node is None
    assert evaluator.dry_run.chunked(state)
    own = cluster_with(
        OwnVictims, [knode("a", SMALL), knode("b", SMALL)], [kpod("v", node="a", req=SMALL)]
    )
    own.counter.pods_via_requested = True
    assert own.plugin.preemption.evaluator.dry_run.select_victims_on_node is not None
    assert not own.plugin.preemption.evaluator.dry_run.chunked(
        own.pre_filter(own.pod(kpod("p", priority=HIGH, req=SMALL)))
    )


class ByFewestVictimsLast(KubePolicy):
    """kube's ``OrderedScoreFuncs``: prefer the candidate with the *most* victims."""

    name: ClassVar[str] = "MostVictims"

    def ordered_score_funcs(
        self, candidates: Sequence[Candidate]
    ) -> list[Callable[[Candidate], int]] | None:
        return [lambda c: len(c.victims)]


def test_ordered_score_funcs_choose_the_candidate() -> None:
    nodes = [knode("one", LARGE), knode("two", LARGE)]
    pods = [
        kpod("a1", node="one", priority=LOW, req=LARGE),
        kpod("b1", node="two", priority=LOW, req=SMALL),
        kpod("b2", node="two", priority=LOW, req=SMALL),
        kpod("b3", node="two", priority=LOW, req=SMALL),
    ]
    for policy, want in ((KubePolicy, "one"), (ByFewestVictimsLast, "two")):
        cluster = cluster_with(policy, nodes, pods)
        preemptor = cluster.pod(kpod("p", priority=HIGH, req=LARGE))
        state = cluster.pre_filter(preemptor)
        diagnosis = cluster.diagnosis({"one": Code.UNSCHEDULABLE, "two": Code.UNSCHEDULABLE})
        result = cluster.framework.run_post_filter(state, preemptor, diagnosis)
        assert result.nominated_node_name == want, policy.name


def test_what_if_places_other_pods_and_is_reverted() -> None:
    """A group's members placed one by one on the what-if, each judged with its own
    PreFilter; nothing reaches the live table."""
    cluster = cluster_with(
        KubePolicy,
        [knode("a", MEDIUM), knode("b", MEDIUM)],
        [kpod("low", node="a", priority=LOW, req=MEDIUM, labels={"app": "x"})],
        pdbs=[pdb({"app": "x"}, 0)],
    )
    plugin: KubePolicy = cluster.plugin
    first = cluster.pod(kpod("m1", priority=HIGH, req=MEDIUM))
    second = cluster.pod(kpod("m2", priority=HIGH, req=MEDIUM))
    state = cluster.pre_filter(first)
    before = snapshot(cluster.table)
    budgets = plugin.preemption.disruption_budgets()
    assert len(budgets) == 1 and budgets[0].disruptions_allowed == 0
    with plugin.preemption.what_if(state, first) as what_if:
        assert what_if.feasible_nodes() == ["b"]
        assert what_if.add_pod(first, "b").is_success()
        assert what_if.feasible_nodes(second) == []
        low = what_if.node("a").pods[0]
        assert what_if.remove_pod(low).is_success()
        assert what_if.node_of(low) is None
        assert what_if.feasible_nodes(second) == ["a"]
        assert what_if.filter("b", second).code is Code.UNSCHEDULABLE
        assert [p.name for p in what_if.node("b").pods] == ["m1"]
    assert snapshot(cluster.table) == before


async def test_evict_deletes_victims_on_any_node_and_holds_the_preemptor() -> None:
    cluster = cluster_with(
        KubePolicy,
        [knode("a", MEDIUM), knode("b", MEDIUM)],
        [
            kpod("g1", node="a", priority=LOW, req=MEDIUM),
            kpod("g2", node="b", priority=LOW, req=MEDIUM),
        ],
    )
    plugin: KubePolicy = cluster.plugin
    preemptor = cluster.pod(kpod("p", priority=HIGH, req=MEDIUM))
    victims = tuple(cluster.table.pods[r][k] for r in (0, 1) for k in cluster.table.pods[r])
    plugin.preemption.evict(preemptor, Candidate("a", victims, 0))
    assert plugin.preemption.is_preempting(preemptor)
    assert plugin.preemption.admit(preemptor) is not None
    for _ in range(50):
        if len([r for r in cluster.client.requests if r["method"] == "DELETE"]) == 2:
            break
        await asyncio.sleep(0.01)
    deleted = sorted(r["path"] for r in cluster.client.requests if r["method"] == "DELETE")
    assert deleted == ["/api/v1/namespaces/default/pods/g1", "/api/v1/namespaces/default/pods/g2"]


def test_another_pods_prefilter_state_sees_the_what_ifs_moves() -> None:
    """InterPodAffinity's PreFilter reads the live pod index: the pod removed in the
    what-if reaches another pod's state through its RemovePod extension."""
    cluster = cluster_with(
        KubePolicy,
        [knode("a", MEDIUM), knode("b", MEDIUM)],
        [
            kpod("low", node="a", priority=LOW, req=SMALL, labels={"app": "x"}),
            kpod("full", node="b", priority=HIGH, req=MEDIUM),
        ],
    )
    plugin: KubePolicy = cluster.plugin
    first = cluster.pod(kpod("m1", priority=HIGH, req=SMALL))
    other = cluster.pod(
        kpod("m2", priority=HIGH, req=SMALL, anti_affinity_exists=("app", "hostname"))
    )
    state = cluster.pre_filter(first)
    with plugin.preemption.what_if(state, first) as what_if:
        assert what_if.feasible_nodes(other) == []
        assert what_if.remove_pod(what_if.node("a").pods[0]).is_success()
        assert what_if.feasible_nodes(other) == ["a"]
        assert what_if.filter("a", other).is_success()
