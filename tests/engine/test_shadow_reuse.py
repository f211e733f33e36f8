"""A shadow decision derived from the primary's must equal the shadow's own full cycle.

On random clusters, a primary profile (kube's defaults) decides a stream of
pods; for each, the shadow's decision is derived from the primary's
(:func:`derived_decision`) and also computed by a full cycle of the shadow's
own on the same table. Wherever the derivation answers, the feasible nodes,
the best (tied) nodes and every node's total score must be the full cycle's;
and it must answer for most pods, or it saves nothing.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.engine.shadow import Shadows
from scheduler.engine.shadow_reuse import Derivation, changed_plugins
from scheduler.framework.cycle import Algorithm, ScheduleResult
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import Profile, build_profiles
from scheduler.state.nodetable import NodeTable
from tests.framework.test_batching import _templates, random_node, replica
from tests.plugins.builders import make_pod

PRIMARY, SHADOW = "primary", "shadow"

MOST_ALLOCATED = {
    "type": "MostAllocated",
    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
}

FIT_MOST_ALLOCATED = {
    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": MOST_ALLOCATED}}]
}

#: What the shadow changes, and the plugins that then differ.
CHANGES: dict[str, tuple[dict[str, Any], frozenset[str]]] = {
    "weight": (
        {"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 30}]}}},
        frozenset(),
    ),
    "fit-args": (
        {
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": MOST_ALLOCATED}}
            ]
        },
        frozenset({"NodeResourcesFit"}),
    ),
    "score-removed": (
        {"plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}}},
        frozenset({"NodeResourcesBalancedAllocation"}),
    ),
    # Its Filter rejected nodes in the primary's cycles: those decisions need the full cycle.
    "filter-removed": (
        {"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}},
        frozenset({"TaintToleration"}),
    ),
    "weight-and-args": (
        {
            "plugins": {"score": {"enabled": [{"name": "TaintToleration", "weight": 9}]}},
            **FIT_MOST_ALLOCATED,
        },
        frozenset({"NodeResourcesFit"}),
    ),
}


def build(table: NodeTable, change: dict[str, Any], **top: Any) -> dict[str, Profile]:
    config = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            **top,
            "profiles": [
                {"schedulerName": PRIMARY},
                {"schedulerName": SHADOW, **change, "pluggableScheduler": {"shadowOf": PRIMARY}},
            ],
        }
    )
    return build_profiles(
        config,
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=StaticStores()),
    )


def totals(result: ScheduleResult) -> dict[int, int]:
    scores = result.score_outcome
    if scores is None:
        return {}
    return dict(zip(scores.nodes.rows.tolist(), scores.total.tolist(), strict=True))


@pytest.mark.parametrize("sampled", [False, True])
@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize("seed", range(3))
def test_derived_decisions_equal_the_shadows_full_cycle(
    change: str, seed: int, sampled: bool
) -> None:
    """``sampled``: both profiles score a sample (kube's search from a rotating start)."""
    rng = random.Random(seed)
    table = NodeTable()
    for i in range(rng.randint(300, 400) if sampled else rng.randint(8, 40)):
        table.upsert_node(random_node(rng, i))
    config, want_changed = CHANGES[change]
    profiles = build(table, config, **({"percentageOfNodesToScore": 20} if sampled else {}))
    primary, shadow = profiles[PRIMARY], profiles[SHADOW]
    changed = changed_plugins(primary, shadow)
    assert changed == want_changed
    assert changed is not None
    derivation = Derivation(primary.framework, shadow.framework, changed)
    decide = Algorithm(primary.framework, seed=seed)
    full = Algorithm(shadow.framework, seed=seed)
    templates = _templates()
    derived = placed = untainted = windows = 0
    for step in range(120):
        pod = replica(rng.choice(templates), f"p-{step}")
        decided = decide.schedule(
            primary.framework.new_cycle_state(),
            pod,
            table,
            primary.resolved.percentage_of_nodes_to_score,
        )
        got = derivation.decide(decided, pod, table, rng=random.Random(step), nominator=None)
        if decided.node is not None:
            placed += 1
            rejecters = {r.plugin for r in decided.diagnosis.rejections}
            untainted += "TaintToleration" not in rejecters
        if got is not None:
            derived += 1
            full.next_start = decided.sample_start  # as Shadows does: the same sample
            want = full.schedule(
                shadow.framework.new_cycle_state(),
                pod,
                table,
                shadow.resolved.percentage_of_nodes_to_score,
            )
            windows += decided.evaluated_nodes < len(table)
            where = f"{change}, step {step}, pod {pod.key}"
            assert got.status.code == want.status.code, where
            assert got.feasible_nodes == want.feasible_nodes, where
            assert sorted(got.tied) == sorted(want.tied), where
            assert got.node in want.tied, where
            assert totals(got) == totals(want), where
        if decided.node is not None:
            table.add_pod(pod, decided.node)
    assert placed > 20
    if sampled and derived:  # most derived decisions were on a window of the nodes
        assert windows > derived / 2, (windows, derived)
    if change == "filter-removed":
        # Derived exactly where TaintToleration rejected nothing in the primary's cycle.
        assert derived == untainted
    else:
        assert derived > placed * 0.6, (derived, placed)


def test_profiles_with_different_sampling_are_never_derived() -> None:
    table = NodeTable()
    profiles = build(table, {"percentageOfNodesToScore": 50})
    assert changed_plugins(profiles[PRIMARY], profiles[SHADOW]) is None


def test_a_sampled_shadow_looks_at_the_nodes_its_primary_looked_at() -> None:
    """percentageOfNodesToScore set: a cycle filters from where the previous one
    stopped. A shadow added mid-run (a reload) has its own rotation; its full cycle
    (derived decisions turned off here) starts where the primary's did, so a shadow
    that changes nothing that matters here (ImageLocality's weight, no pod has
    images) never diverges."""
    rng = random.Random(11)
    table = NodeTable()
    for i in range(300):
        table.upsert_node(random_node(rng, i))
    config = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 20,
            "profiles": [
                {"schedulerName": PRIMARY},
                {
                    "schedulerName": SHADOW,
                    **CHANGES["weight"][0],
                    "pluggableScheduler": {"shadowOf": PRIMARY},
                },
            ],
        }
    )
    profiles = build_profiles(
        config,
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=StaticStores()),
    )
    primary = profiles[PRIMARY]
    decide = Algorithm(primary.framework, seed=3)
    template = make_pod("t", requests=[{"cpu": "100m", "memory": "128Mi"}])

    def place(step: int, shadows: Shadows | None) -> None:
        pod = replica(template, f"p-{step}")
        decided = decide.schedule(primary.framework.new_cycle_state(), pod, table, 20)
        assert decided.node is not None and decided.evaluated_nodes < 300
        if shadows is not None:
            shadows.follow(primary, pod, decided, table)
        table.add_pod(pod, decided.node)

    for step in range(7):  # before the shadow exists: the primary's start moves on
        place(step, None)
    assert decide.next_start != 0
    shadows = Shadows()
    shadows.configure(profiles, seed=3, nominator=None, reuse=False)
    for step in range(7, 40):
        place(step, shadows)
    derived, full, skipped = shadows.counts()[SHADOW]
    assert (derived, full, skipped) == (0, 33, 0)
    assert list(shadows.recent) == []
