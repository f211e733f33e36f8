"""LoadAware: the score function, args, metrics handling, logging, and the real daemon."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import structlog
from pydantic import ValidationError
from scheduler_plugin_loadaware import LoadAware, LoadAwareArgs, target_load_score

from scheduler.testing import PluginTestKit, installed_plugin, make_node, make_pod
from scheduler.testing.objects import make_node_metrics

FALLBACK_LOG = "node metrics unavailable: scoring these nodes by the fallback"


# -- the score function and args ------------------------------------------------------


def test_target_load_packing_curve() -> None:
    u = np.asarray([0.0, 20.0, 40.0, 70.0, 100.0, 130.0])
    assert target_load_score(u, 40.0).tolist() == [40.0, 70.0, 100.0, 20.0, 0.0, 0.0]
    assert target_load_score(np.asarray([50.0]), 50.0).tolist() == [100.0]


def test_args_defaults_and_aliases() -> None:
    args = LoadAwareArgs()
    assert args.target_utilization == 40.0
    assert args.resource_weights == {"cpu": 1, "memory": 1}
    assert args.fallback == "requested"
    args = LoadAwareArgs.model_validate(
        {"targetUtilization": 70, "usageThresholds": {"cpu": 85}, "fallback": "neutral"}
    )
    assert (args.target_utilization, args.usage_thresholds) == (70, {"cpu": 85})


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"targetUtilization": 100}, "less than 100"),
        ({"targetUtilization": 0}, "greater than 0"),
        ({"resourceWeights": {"gpu": 1}}, "Input should be 'cpu' or 'memory'"),
        ({"resourceWeights": {"cpu": -1}}, "weights must not be negative"),
        ({"resourceWeights": {"cpu": 0}}, "at least one resource needs a positive weight"),
        ({"usageThresholds": {"memory": 120}}, "memory: a usage threshold is a percentage"),
        ({"metricsExpirationSeconds": 0}, "greater than 0"),
        ({"fallback": "zero"}, "Input should be 'requested' or 'neutral'"),
        ({"target": 50}, "Extra inputs are not permitted"),
    ],
)
def test_args_validation(args: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        LoadAwareArgs.model_validate(args)


# -- the plugin on a small cluster (scheduler.testing.PluginTestKit) -------------------


@dataclass
class On:
    """The plugin and the kit holding its cluster."""

    kit: PluginTestKit
    plugin: LoadAware


def plugin_on(nodes: list[dict[str, Any]], metrics: list[dict[str, Any]], **args: Any) -> On:
    kit = PluginTestKit(nodes=nodes, objects=metrics)
    plugin = kit.build(LoadAware, args)
    plugin.refresh_seconds = 0.0  # type: ignore[misc]
    return On(kit, plugin)


def scores(on: On, cpu: str = "100m", name: str = "p") -> Mapping[str, int]:
    got = on.kit.call(on.plugin, "score", make_pod(name, cpu=cpu))
    return dict(zip(on.kit.nodes().names, got.tolist(), strict=True))


def verdicts(on: On) -> dict[str, list[str]]:
    result = on.kit.call(on.plugin, "filter", make_pod("p"))
    return {name: result.reasons_at(i) for i, name in enumerate(on.kit.nodes().names)}


NODES = [make_node(n, cpu="10", memory="10Gi") for n in ("hot", "target", "cold")]
METRICS = [
    make_node_metrics("hot", cpu="9", memory="1Gi"),
    make_node_metrics("target", cpu="4", memory="4Gi"),
    make_node_metrics("cold", cpu="0", memory="0"),
]


def test_score_prefers_target_then_cooler_nodes() -> None:
    got = scores(plugin_on(NODES, METRICS, resourceWeights={"cpu": 1}), cpu="0")
    assert got == {"hot": 7, "target": 100, "cold": 40}
    # The pod's own request counts towards the predicted utilisation.
    got = scores(plugin_on(NODES, METRICS, resourceWeights={"cpu": 1}), cpu="1")
    assert got == {"hot": 0, "target": 33, "cold": 55}


def test_weights_combine_resources() -> None:
    plugin = plugin_on(NODES, METRICS, resourceWeights={"cpu": 3, "memory": 1})
    # hot: cpu 90% -> 6.67, memory 10% -> 55; (3 * 6.67 + 55) / 4
    assert scores(plugin, cpu="0")["hot"] == round((3 * 40 * 10 / 60 + 55) / 4)


def test_stale_and_invalid_metrics_use_the_requested_fallback() -> None:
    metrics = [
        make_node_metrics("hot", cpu="9", age_seconds=600),  # stale: scored by requests
        make_node_metrics("target", cpu="4"),
        {**make_node_metrics("cold"), "usage": {"cpu": "lots"}},  # invalid
    ]
    plugin = plugin_on(NODES, metrics, resourceWeights={"cpu": 1}, metricsExpirationSeconds=60)
    plugin.kit.add_pod(make_pod("x", cpu="4", node_name="hot"))
    assert scores(plugin, cpu="0") == {"hot": 100, "target": 100, "cold": 40}


def test_neutral_fallback_scores_missing_nodes_fifty() -> None:
    plugin = plugin_on(NODES, METRICS[:1], resourceWeights={"cpu": 1}, fallback="neutral")
    assert scores(plugin, cpu="0") == {"hot": 7, "target": 50, "cold": 50}


def test_filter_rejects_only_fresh_nodes_above_the_threshold() -> None:
    metrics = [*METRICS[:2], make_node_metrics("cold", cpu="9.5", age_seconds=3600)]
    plugin = plugin_on(NODES, metrics, usageThresholds={"cpu": 80, "memory": 30})
    assert verdicts(plugin) == {
        "hot": ["node(s) cpu usage is above 80%"],
        "target": ["node(s) memory usage is above 30%"],
        "cold": [],  # stale metrics: never filtered
    }
    assert verdicts(plugin_on(NODES, METRICS)) == {"hot": [], "target": [], "cold": []}


def test_fallback_is_logged_once_per_node_not_per_pod() -> None:
    nodes = [*NODES]
    plugin = plugin_on(nodes, METRICS[:1])
    with structlog.testing.capture_logs() as logs:
        for i in range(5):
            scores(plugin, name=f"p{i}")
    fallback = [e for e in logs if e["event"] == FALLBACK_LOG]
    assert len(fallback) == 1
    assert fallback[0]["log_level"] == "warning"
    assert fallback[0]["nodes"] == ["target", "cold"]
    assert fallback[0]["reasons"] == {"no NodeMetrics": 2}
    assert fallback[0]["plugin"] == "LoadAware"

    # A new node without metrics is logged (alone); nodes already logged are not.
    plugin.kit.add_node(make_node("new"))
    with structlog.testing.capture_logs() as logs:
        scores(plugin)
        scores(plugin)
    assert [e["nodes"] for e in logs if e["event"] == FALLBACK_LOG] == [["new"]]


def test_installed_entry_point_loads() -> None:
    loaded = installed_plugin("LoadAware")
    assert loaded.plugin_class is LoadAware
    assert loaded.hooks == {"filter", "score", "events_to_register"}


# -- the real daemon against the emulator ---------------------------------------------

CLUSTER = [make_node(n, cpu="8", memory="16Gi") for n in ("n1", "n2", "n3")]


async def test_pods_avoid_the_hot_node(emulated_cluster: Any, running_scheduler: Any) -> None:
    cluster = await emulated_cluster(
        [
            *CLUSTER,
            make_node_metrics("n1", cpu="7500m", memory="14Gi"),
            make_node_metrics("n2", cpu="1", memory="2Gi"),
            make_node_metrics("n3", cpu="1500m", memory="3Gi"),
        ]
    )
    sched = await running_scheduler(cluster, enable=[{"name": "LoadAware", "weight": 10}])
    cluster.create(*(make_pod(f"web-{i}", cpu="200m") for i in range(6)))
    placed = await sched.wait_for_placements([f"web-{i}" for i in range(6)])
    assert "n1" not in placed.values(), placed


async def test_threshold_filter_and_requeue_on_new_metrics(
    emulated_cluster: Any, running_scheduler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LoadAware, "refresh_seconds", 0.0)
    cluster = await emulated_cluster([CLUSTER[0], make_node_metrics("n1", cpu="7", memory="1Gi")])
    sched = await running_scheduler(
        cluster,
        enable=["LoadAware"],
        plugin_config={"LoadAware": {"usageThresholds": {"cpu": 80}}},
    )
    cluster.create(make_pod("web"))
    message = await sched.wait_for_failure("web")
    assert message.startswith("0/1 nodes are available: 1 node(s) cpu usage is above 80%.")
    # The node cools down: the NodeMetrics update requeues the pod.
    cluster.apply(make_node_metrics("n1", cpu="2", memory="1Gi"))
    await sched.wait_for_placements({"web": "n1"})


async def test_missing_metrics_fall_back_and_are_logged_once(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    cluster = await emulated_cluster(CLUSTER)
    with structlog.testing.capture_logs() as logs:
        sched = await running_scheduler(cluster, enable=["LoadAware"])
        cluster.create(*(make_pod(f"job-{i}") for i in range(5)))
        placed = await sched.wait_for_placements([f"job-{i}" for i in range(5)])
    assert set(placed.values()) <= {"n1", "n2", "n3"}
    fallback = [e for e in logs if e["event"] == FALLBACK_LOG]
    assert len(fallback) == 1, fallback
    assert fallback[0]["count"] == 3
    assert fallback[0]["fallback"] == "requested"
