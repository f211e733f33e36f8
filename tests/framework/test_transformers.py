"""The transformer hooks (API 2.1): adjusted views of the pod or of nodes, never the live table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.api import (
    CPU,
    Code,
    CycleState,
    FilterResult,
    NodeAdjustment,
    Status,
    hookimpl,
)
from scheduler.framework.cycle import Algorithm
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.pluginmanager import SchedulerPluginManager
from scheduler.framework.runtime import FILTER_OVERLAY_KEY, Framework
from scheduler.state.nodetable import NodeSet
from tests.framework.helpers import make_framework, node, pod, table_of


class CpuFit:
    """Filter on cpu alone (reads ``nodes.requested``); Score: most free cpu wins."""

    api_version = "2.1"

    def __init__(self) -> None:
        self.seen_requests: list[int] = []
        self.scored_free: list[list[int]] = []

    @hookimpl
    def filter(self, state: CycleState, pod: Any, nodes: Any) -> FilterResult:
        self.seen_requests.append(pod.requests.get("cpu", 0))
        free = nodes.allocatable[:, CPU] - nodes.requested[:, CPU]
        return FilterResult.from_mask(free >= pod.requests.get("cpu", 0), "Insufficient cpu")

    @hookimpl
    def score(self, state: CycleState, pod: Any, nodes: Any) -> Any:
        free = nodes.allocatable[:, CPU] - nodes.requested[:, CPU]
        self.scored_free.append(free.tolist())
        return (free * 100 // max(int(nodes.allocatable[:, CPU].max()), 1)).astype(np.int64)


class Transformer:
    """Releases or holds cpu on named nodes; optionally replaces the pod's cpu request."""

    api_version = "2.1"

    def __init__(
        self,
        release: dict[str, int] | None = None,
        hold: dict[str, int] | None = None,
        score_hold: dict[str, int] | None = None,
        pod_cpu: str | None = None,
    ) -> None:
        self.release, self.hold = release or {}, hold or {}
        self.score_hold = score_hold or {}
        self.pod_cpu = pod_cpu
        self.calls: list[str] = []
        self.framework: Framework | None = None  # set once built, as handle.framework

    @hookimpl
    def before_pre_filter(self, state: CycleState, pod: Any, nodes: Any) -> Any:
        self.calls.append("before_pre_filter")
        if self.pod_cpu is None or self.framework is None:
            return None
        raw = {**pod.raw, "spec": {**pod.raw["spec"]}}
        raw["spec"]["containers"] = [
            {"name": "c", "resources": {"requests": {"cpu": self.pod_cpu}}}
        ]
        return self.framework.pod_from_object(raw)

    @hookimpl
    def after_pre_filter(self, state: CycleState, pod: Any, nodes: Any) -> None:
        self.calls.append("after_pre_filter")

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Any, nodes: Any) -> None:
        self.calls.append("pre_filter")

    @hookimpl
    def before_filter(self, state: CycleState, pod: Any, nodes: Any) -> NodeAdjustment | None:
        self.calls.append("before_filter")
        return _adjust(nodes, self.release, self.hold)

    @hookimpl
    def filter(self, state: CycleState, pod: Any, nodes: Any) -> Status:
        return Status.success()

    @hookimpl
    def before_score(self, state: CycleState, pod: Any, nodes: Any) -> NodeAdjustment | None:
        self.calls.append("before_score")
        return _adjust(nodes, {}, self.score_hold)

    @hookimpl
    def score(self, state: CycleState, pod: Any, nodes: Any) -> Any:
        return np.zeros(len(nodes), dtype=np.int64)


def _adjust(nodes: Any, release: dict[str, int], hold: dict[str, int]) -> NodeAdjustment | None:
    adjustment = NodeAdjustment()
    for name, cpu in release.items():
        i = nodes.index_of(name)
        if i is not None:
            adjustment.release(i, {"cpu": cpu})
    for name, cpu in hold.items():
        i = nodes.index_of(name)
        if i is not None:
            adjustment.hold(i, {"cpu": cpu})
    return adjustment or None


def busy_table():
    """n1 and n2 with 4 cpu each, 3 cpu in use on each."""
    table = table_of(node("n1"), node("n2"))
    table.add_pod(pod("a", cpu="3"), "n1")
    table.add_pod(pod("b", cpu="3"), "n2")
    return table


def decide(framework: Any, table: Any, p: Any) -> Any:
    return Algorithm(framework, seed=1).schedule(framework.new_cycle_state(), p, table)


def test_released_resources_let_the_pod_fit_without_writing_the_live_table() -> None:
    table = busy_table()
    before = (table.requested.copy(), table.generation.copy(), table.version)
    fit = CpuFit()
    framework = make_framework([("T", Transformer(release={"n2": 2000})), ("Fit", fit)])
    result = decide(framework, table, pod("p", cpu="2"))
    assert result.node == "n2"
    assert result.filter_outcome is not None and result.filter_outcome.feasible.table is table
    assert np.array_equal(table.requested, before[0])
    assert np.array_equal(table.generation, before[1]) and table.version == before[2]


def test_held_resources_reject_the_node_with_the_filters_own_reason() -> None:
    table = table_of(node("n1"), node("n2"))
    framework = make_framework([("T", Transformer(hold={"n1": 3500})), ("Fit", CpuFit())])
    result = decide(framework, table, pod("p", cpu="1"))
    assert result.node == "n2"
    assert result.diagnosis.node_verdicts["n1"].reasons == ["Insufficient cpu"]
    assert result.diagnosis.node_verdicts["n1"].plugin == "Fit"


def test_every_filter_run_of_the_attempt_sees_the_overlay_preemption_included() -> None:
    table = busy_table()
    framework = make_framework([("T", Transformer(release={"n1": 2000})), ("Fit", CpuFit())])
    state = framework.new_cycle_state()
    p = pod("p", cpu="2")
    assert framework.run_before_filter(state, p, table.all_nodes()).is_success()
    assert FILTER_OVERLAY_KEY in state
    # Preemption's what-if check on one node, on a cloned state.
    assert framework.run_filter_with_nominated(state.clone(), p, table.node_info(0)).is_success()
    rejected = framework.run_filter_with_nominated(state.clone(), p, table.node_info(1))
    assert rejected.code is Code.UNSCHEDULABLE


def test_an_adjusted_pod_is_what_prefilter_to_score_see() -> None:
    table = table_of(node("n1"))
    fit = CpuFit()
    transformer = Transformer(pod_cpu="3")
    framework = make_framework([("T", transformer), ("Fit", fit)])
    transformer.framework = framework
    result = decide(framework, table, pod("p", cpu="100m"))
    assert result.node == "n1"
    assert fit.seen_requests == [3000]
    assert transformer.calls[:4] == [
        "before_pre_filter",
        "pre_filter",
        "after_pre_filter",
        "before_filter",
    ]


def test_a_transformer_returning_another_pod_fails_the_attempt_naming_it() -> None:
    class Swapper(Transformer):
        @hookimpl
        def before_pre_filter(self, state: CycleState, pod: Any, nodes: Any) -> Any:
            assert self.framework is not None
            return self.framework.pod_from_object(
                {"metadata": {"name": "other", "uid": "x"}, "spec": {"containers": []}}
            )

    swapper = Swapper()
    framework = make_framework([("Swap", swapper), ("Fit", CpuFit())])
    swapper.framework = framework
    result = decide(framework, table_of(node("n1")), pod("p"))
    assert result.node is None and result.status.code is Code.ERROR
    assert "Swap" in result.status.message() and "default/p" in result.status.message()


def test_score_sees_the_before_score_adjustment() -> None:
    table = table_of(node("n1"), node("n2"))
    fit = CpuFit()
    framework = make_framework([("T", Transformer(score_hold={"n1": 3000})), ("Fit", fit)])
    result = decide(framework, table, pod("p", cpu="1"))
    assert fit.scored_free == [[1000, 4000]]
    assert result.node == "n2"
    assert table.requested[table.row_of("n1"), CPU] == 0


@pytest.mark.parametrize(
    ("garbage", "expected"),
    [("yes", "expected a NodeAdjustment, Status or None"), (7, "NodeAdjustment")],
)
def test_garbage_from_before_filter_is_an_error_naming_the_plugin(
    garbage: Any, expected: str
) -> None:
    class Bad(Transformer):
        @hookimpl
        def before_filter(self, state: CycleState, pod: Any, nodes: Any) -> Any:
            return garbage

    framework = make_framework([("Bad", Bad()), ("Fit", CpuFit())])
    result = decide(framework, table_of(node("n1")), pod("p"))
    assert result.status.code is Code.ERROR
    assert "'Bad'" in result.status.message() and expected in result.status.message()


def test_an_adjustment_outside_the_given_nodes_is_an_error() -> None:
    class OutOfRange(Transformer):
        @hookimpl
        def before_filter(self, state: CycleState, pod: Any, nodes: Any) -> Any:
            return NodeAdjustment().hold(len(nodes), {"cpu": 1})

    framework = make_framework([("Far", OutOfRange()), ("Fit", CpuFit())])
    result = decide(framework, table_of(node("n1")), pod("p"))
    assert result.status.code is Code.ERROR
    assert "node index 1, but only 1 nodes were given" in result.status.message()


def test_ignore_policy_drops_a_failing_transformers_adjustment() -> None:
    class Raises(Transformer):
        @hookimpl
        def before_filter(self, state: CycleState, pod: Any, nodes: Any) -> Any:
            raise RuntimeError("boom")

    framework = make_framework([("R", Raises()), ("Fit", CpuFit())], failure_policy={"R": "Ignore"})
    result = decide(framework, busy_table(), pod("p", cpu="2"))
    assert result.node is None and result.status.code is Code.UNSCHEDULABLE


def test_without_transformers_no_overlay_is_made() -> None:
    framework = make_framework([("Fit", CpuFit())])
    state = framework.new_cycle_state()
    result = Algorithm(framework, seed=1).schedule(state, pod("p"), busy_table())
    assert result.node in ("n1", "n2") and FILTER_OVERLAY_KEY not in state
    assert not framework.before_filter_calls and not framework.before_score_calls


def test_transformers_refuse_pluggy_ordering_flags_like_every_hook() -> None:
    class First:
        api_version = "2.1"

        @hookimpl(tryfirst=True)
        def before_filter(self, state: CycleState, pod: Any, nodes: Any) -> None:
            return None

    manager = SchedulerPluginManager()
    manager.register(First, name="First")
    refusal = manager.refusal(First)
    assert refusal is not None and "tryfirst=True" in refusal
    assert "the filter extension point" in refusal


def test_find_node_places_a_pseudo_pod_through_filter_and_score() -> None:
    table = busy_table()
    table.remove_pod("default/b")
    framework = make_framework([("T", Transformer(hold={"n2": 1000})), ("Fit", CpuFit())])
    pseudo = framework.pod_from_object(
        {
            "metadata": {"name": "reserve-r1", "namespace": "default", "uid": "r1"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
        }
    )
    node_name, status = framework.find_node(pseudo, table.all_nodes().view())
    assert (node_name, status.is_success()) == ("n2", True)
    assert not table.has_pod("default/reserve-r1")
    big = pod("huge", cpu="8")
    node_name, status = framework.find_node(big, NodeSet(table, table.rows()).view())
    assert node_name is None and status.code is Code.UNSCHEDULABLE
    assert "Insufficient cpu" in status.message()


def test_plugins_ask_their_handle_whether_this_replica_leads() -> None:
    leading = [False]
    handle = FrameworkHandle("p", table_of(node("n1")), leader=lambda: leading[0])
    plugin_handle = handle.for_plugin("Reservation")
    assert not plugin_handle.is_leader()
    leading[0] = True
    assert plugin_handle.is_leader()
    assert FrameworkHandle("p", table_of()).is_leader()  # no election: always
