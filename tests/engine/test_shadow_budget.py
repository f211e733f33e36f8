"""``pluggableScheduler.shadowBudget``: a shadow takes at most its share of the loop's time."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.engine.shadow import Budget, Shadows
from scheduler.errors import UserError
from scheduler.framework.cycle import Algorithm
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import build_profiles
from scheduler.observability.metrics import SchedulerMetrics
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from tests.plugins.builders import make_node, make_pod

PRIMARY, SHADOW = "primary", "shadow"


def config(shadow_extensions: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": PRIMARY},
            {
                "schedulerName": SHADOW,
                "plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}},
                "pluggableScheduler": shadow_extensions,
            },
        ],
    }


def test_the_budget_allows_its_share_of_the_time() -> None:
    # Cycles of 5 ms every 1 ms against a 20% share: the first second's allowance
    # (0.2 s), then one cycle in 25.
    budget, ran = Budget(0.2), []
    for i in range(3000):
        now = i * 0.001
        if budget.allows(now):
            budget.spend(0.005)
            ran.append(now)
    spent = len(ran) * 0.005
    # Its share of the 3 s plus the first allowance, give or take the cycle that overdraws.
    assert abs(spent - (0.2 * 3.0 + 0.2)) <= 0.005
    gaps = {round(b - a, 6) for a, b in itertools.pairwise(ran[60:])}
    assert gaps <= {0.024, 0.025, 0.026}  # and evenly spread, not in bursts


def test_a_quiet_loop_is_never_held_back() -> None:
    # 1 ms cycles every 10 ms take a tenth of the time: under a 20% share, none is skipped.
    budget = Budget(0.2)
    for i in range(1000):
        assert budget.allows(i * 0.01)
        budget.spend(0.001)


def run(budget: float | None, pods: int) -> tuple[int, int, float]:
    """Shadowed and skipped decisions of ``pods`` pods, and the skip counter."""
    extensions: dict[str, Any] = {"shadowOf": PRIMARY}
    if budget is not None:
        extensions["shadowBudget"] = budget
    table = NodeTable()
    for i in range(4):
        table.upsert_node(make_node(f"n{i}", cpu="64", memory="256Gi", pods=500))
    profiles = build_profiles(
        load_config(config(extensions)),
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=StaticStores()),
    )
    metrics = SchedulerMetrics(process_metrics=False)
    shadows = Shadows(metrics)
    primary = shadows.configure(profiles, seed=0, nominator=None)[PRIMARY]
    algorithm = Algorithm(primary.framework, seed=0)
    for i in range(pods):
        pod = PodInfo.from_dict(make_pod(f"p{i}", requests=[{"cpu": "100m"}]))
        decided = algorithm.schedule(primary.framework.new_cycle_state(), pod, table)
        assert decided.node is not None
        shadows.follow(primary, pod, decided, table)
        table.add_pod(pod, decided.node)
    derived, full, skipped = shadows.counts()[SHADOW]
    counted = metrics.registry.get_sample_value(
        "scheduler_shadow_skipped_total", {"profile": SHADOW}
    )
    return derived + full, skipped, counted or 0.0


@pytest.mark.parametrize("budget", [None, 1.0])
def test_without_a_limit_every_decision_is_shadowed(budget: float | None) -> None:
    # A share of 1 is all the time there is: a shadow cycle cannot outrun the clock.
    assert run(budget, pods=50) == (50, 0, 0.0)


def test_a_shadow_over_its_share_skips_decisions_and_counts_them() -> None:
    # A millionth of the time: the first cycle overdraws it for far longer than the test.
    assert run(1e-6, pods=50) == (1, 49, 49.0)


@pytest.mark.parametrize(
    ("extensions", "problem"),
    [
        ({"shadowBudget": 0.2}, "profiles[1].pluggableScheduler.shadowBudget: only a shadow"),
        ({"shadowOf": PRIMARY, "shadowBudget": 0}, "profiles[1].pluggableScheduler.shadowBudget"),
        ({"shadowOf": PRIMARY, "shadowBudget": 1.5}, "profiles[1].pluggableScheduler.shadowBudget"),
    ],
)
def test_a_bad_budget_names_its_field(extensions: dict[str, Any], problem: str) -> None:
    with pytest.raises(UserError) as err:
        load_config(config(extensions))
    assert problem in err.value.render()
