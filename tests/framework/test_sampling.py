"""percentageOfNodesToScore: kube's early-stopping Filter, in windows of rows.

kube-scheduler's findNodesThatPassFilters checks nodes one by one from
``nextStartNodeIndex`` and stops at the ``numFeasibleNodesToFind``-th
feasible node; the start then moves on by the nodes it processed. The
windowed implementation must give exactly that: the same feasible nodes in
the same order, the same count of evaluated nodes, the same next start, and
rejections for the evaluated nodes only. The reference here is that
sequential reading, computed from a full Filter pass over every node (a
node's verdict does not depend on which other nodes are candidates).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.api.status import Code
from scheduler.config import load_config
from scheduler.framework import cycle
from scheduler.framework.cycle import (
    Algorithm,
    ScheduleResult,
    _first_window,
    nodes_to_find,
    num_feasible_nodes_to_find,
)
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import build_profiles
from scheduler.framework.runtime import NullRecorder
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from tests.framework.test_batching import Side, _templates, default_profile, random_node, replica
from tests.framework.test_nominated import StaticNominator
from tests.plugins.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


def test_sample_sizes_follow_kube_and_unset_scores_every_node_up_to_the_threshold() -> None:
    assert cycle.ALL_NODES_UP_TO == 5000
    # kube's numFeasibleNodesToFind: adaptive max(5, 50 - N/125) %, at least 100.
    assert num_feasible_nodes_to_find(500, 0) == 230
    assert num_feasible_nodes_to_find(5000, 0) == 500
    assert num_feasible_nodes_to_find(15000, 0) == 750
    assert num_feasible_nodes_to_find(65000, 0) == 3250
    assert num_feasible_nodes_to_find(500, 50) == 250
    assert num_feasible_nodes_to_find(500, 10) == 100  # at least 100
    assert num_feasible_nodes_to_find(99, 10) == 99  # fewer than 100: every node
    assert num_feasible_nodes_to_find(1000, 100) == 1000
    # Unset: every node up to the threshold, kube's adaptive rule above it.
    assert nodes_to_find(500, None) == 500
    assert nodes_to_find(5000, None) == 5000
    assert nodes_to_find(5001, None) == 500
    assert nodes_to_find(15000, None) == 750
    assert nodes_to_find(500, 0) == 230


def _sequential(
    table: NodeTable, start: int, feasible: set[int], want: int
) -> tuple[list[int], int]:
    """kube's reading: node by node from ``start`` until ``want`` feasible ones."""
    rows = table.sampling_order().tolist()
    found: list[int] = []
    evaluated = 0
    for i in range(len(rows)):
        row = rows[(start + i) % len(rows)]
        evaluated += 1
        if row in feasible:
            found.append(row)
            if len(found) == want:
                break
    return found, evaluated


def _check_against_sequential(side: Side, percentage: int | None, steps: int, seed: int) -> int:
    """Decide ``steps`` pods; every one must match the sequential reading. Returns how
    many decisions sampled (evaluated fewer nodes than the cluster has)."""
    rng = random.Random(seed)
    templates = _templates()
    algorithm, table, framework = side.algorithm, side.table, side.profile.framework
    sampled = 0
    for step in range(steps):
        pod = replica(rng.choice(templates), f"p-{step}")
        full = algorithm.feasibility(framework.new_cycle_state(), pod, table)
        everywhere = (
            set(full.filter_outcome.feasible.rows.tolist()) if full.filter_outcome else set()
        )
        start = algorithm.next_start
        n = len(table)
        result: ScheduleResult = algorithm.schedule(
            framework.new_cycle_state(), pod, table, percentage
        )
        want = nodes_to_find(n, percentage)
        expected, evaluated = _sequential(table, start % n, everywhere, want)
        where = f"step {step}, pod {pod.key}, percentage {percentage}"
        assert result.filter_outcome is not None, where
        got = result.filter_outcome.feasible.rows.tolist()
        if want >= n:  # every node filtered: the feasible ones in row order
            assert got == sorted(expected), where
        else:
            assert got == expected, where
        assert result.evaluated_nodes == evaluated, where
        assert algorithm.next_start == (start + evaluated) % n, where
        if evaluated < n or algorithm.batch is None:  # a batched cycle keeps no rejections
            rejected = {r for rej in result.diagnosis.rejections for r in rej.rows.tolist()}
            rows = table.sampling_order().tolist()
            processed = {rows[(start + i) % n] for i in range(evaluated)}
            assert rejected == processed - set(expected), where
        if expected:
            assert result.node is not None and table.row_of(result.node) in expected, where
            if result.score_outcome is not None:
                assert result.score_outcome.nodes.rows.tolist() == got, where
            table.add_pod(pod, result.node)
        else:
            assert result.node is None, where
            assert result.status.message() == full.status.message(), where
        sampled += evaluated < n
    return sampled


@pytest.mark.parametrize("percentage", [0, 10, 35, 100])
def test_windowed_filter_equals_kubes_node_by_node_search(percentage: int) -> None:
    rng = random.Random(percentage)
    side = Side([random_node(rng, i) for i in range(300)], batching=False)
    sampled = _check_against_sequential(side, percentage, steps=80, seed=percentage)
    if percentage != 100:
        assert sampled > 40


def test_unset_samples_only_above_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    side = Side([random_node(rng, i) for i in range(300)], batching=True)
    assert _check_against_sequential(side, None, steps=30, seed=3) == 0
    monkeypatch.setattr(cycle, "ALL_NODES_UP_TO", 200)
    assert _check_against_sequential(side, None, steps=60, seed=4) > 20


def test_a_profile_without_score_plugins_stops_at_the_first_feasible_node() -> None:
    """kube: nothing scores and no extender filters, so one feasible node is enough."""
    table = NodeTable()
    for i in range(200):
        table.upsert_node(random_node(random.Random(i), i))
    config = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 50,
            "profiles": [
                {"schedulerName": "no-score", "plugins": {"score": {"disabled": [{"name": "*"}]}}}
            ],
        }
    )
    profile = build_profiles(
        config,
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=StaticStores()),
    )["no-score"]
    assert not profile.framework.score_calls
    algorithm = Algorithm(profile.framework, seed=1)
    percentage = profile.resolved.percentage_of_nodes_to_score
    assert percentage == 50
    rows = table.sampling_order().tolist()
    for i in range(20):
        pod = replica(make_pod("t", requests=[{"cpu": "100m"}]), f"q-{i}")
        full = algorithm.feasibility(profile.framework.new_cycle_state(), pod, table)
        assert full.filter_outcome is not None
        everywhere = set(full.filter_outcome.feasible.rows.tolist())
        start = algorithm.next_start
        result = algorithm.schedule(profile.framework.new_cycle_state(), pod, table, percentage)
        assert result.feasible_nodes == 1
        expected, evaluated = _sequential(table, start, everywhere, 1)
        assert result.node == table.names[expected[0]]
        assert result.evaluated_nodes == evaluated
        assert algorithm.next_start == (start + result.evaluated_nodes) % len(rows)
        assert result.node is not None
        table.add_pod(pod, result.node)


def test_the_start_moves_on_even_when_every_node_is_filtered() -> None:
    """kube advances by the nodes processed in every cycle; with no PreFilter
    narrowing that is the whole cluster, so the start stays put."""
    rng = random.Random(9)
    side = Side([random_node(rng, i) for i in range(50)], batching=False)
    side.algorithm.next_start = 7
    side.decide(replica(make_pod("t", requests=[{"cpu": "100m"}]), "one"))
    assert side.algorithm.next_start == 7
    assert np.array_equal(side.table.rows(), np.arange(50))


def test_nodes_whose_room_nominated_pods_hold_are_passed_over_as_kube_does() -> None:
    """kube runs RunFilterPluginsWithNominatedPods node by node inside its search, so a
    node filled by higher-priority nominees is rejected and the search goes on."""
    table = NodeTable()
    for i in range(200):
        table.upsert_node(make_node(f"n-{i:03d}", cpu="2", memory="4Gi", pods=110))
    nominee = PodInfo.from_dict(make_pod("nominee", requests=[{"cpu": "2"}], priority=100))
    held = {f"n-{i:03d}": [nominee] for i in range(0, 200, 3)}  # every third node is taken
    profile = default_profile(table)
    algorithm = Algorithm(profile.framework, seed=0, nominator=StaticNominator(held))
    everything = Algorithm(profile.framework, seed=0, nominator=StaticNominator(held))
    for k in range(5):
        pod = PodInfo.from_dict(make_pod(f"p-{k}", requests=[{"cpu": "1"}]))
        full = everything.schedule(profile.framework.new_cycle_state(), pod, table, 100)
        assert full.filter_outcome is not None
        feasible = set(full.filter_outcome.feasible.rows.tolist())
        assert len(feasible) == 133
        start = algorithm.next_start
        result = algorithm.schedule(profile.framework.new_cycle_state(), pod, table, 50)
        expected, evaluated = _sequential(table, start, feasible, 100)
        assert result.filter_outcome is not None
        assert result.filter_outcome.feasible.rows.tolist() == expected
        assert result.evaluated_nodes == evaluated
        rejected = {r for rej in result.diagnosis.rejections for r in rej.rows.tolist()}
        order = table.sampling_order().tolist()
        assert rejected == {order[(start + i) % 200] for i in range(evaluated)} - set(expected)


class _PointRecorder(NullRecorder):
    def __init__(self) -> None:
        self.points: list[str] = []

    def point_duration(self, point: str, code: Code, seconds: float) -> None:
        self.points.append(point)


def test_a_sampled_cycle_observes_the_filter_point_once() -> None:
    """kube's Filter histogram gets one observation per cycle, however many windows of
    rows it took here: a pod that fits one node in three needs several."""
    rng = random.Random(2)
    side = Side([random_node(rng, i) for i in range(300)], batching=False)
    recorder = _PointRecorder()
    side.profile.framework.recorder = recorder
    pod = replica(make_pod("t", requests=[{"cpu": "100m"}], node_selector={ZONE: "a"}), "z")
    result = side.algorithm.schedule(side.profile.framework.new_cycle_state(), pod, side.table, 50)
    assert result.node is not None
    assert result.evaluated_nodes > _first_window(150, 300)  # more than one window
    assert recorder.points.count("Filter") == 1
