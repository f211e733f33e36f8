"""Shadow profiles on the real daemon, both backends: a shadow with a changed weight
reports exactly the divergences ``explain`` predicts, and binds nothing.

Pods are created one at a time, each after the previous one is bound and in
the daemon's cache, so the cluster each decision saw is known: the nodes and
the pods bound before it. ``explain`` of that cluster under the primary's and
the shadow's configs then predicts, per pod, whether the shadow would pick
the primary's node (it is among the shadow's best nodes) and, if not, which
plugin explains it (the Score plugin whose weighted scores moved most towards
the shadow's node). ``GET /shadow`` must list exactly those pods, with those
plugins, and ``scheduler_shadow_divergence_total`` count them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from scheduler.cli.main import main
from scheduler.config import load_config
from scheduler.framework.explain import explain
from scheduler.framework.loader import PluginCatalog
from scheduler.observability.server import Serving
from tests.e2e.conftest import CATALOG, Cluster, StartDaemon, pod_body, scheduler_config, wait_until

SHAPES = [  # (cpu, memory) of the pods, in creation order
    ("1", "1Gi"),
    ("500m", "3Gi"),
    ("1500m", "512Mi"),
    ("1", "2Gi"),
    ("250m", "1Gi"),
    ("2", "1Gi"),
    ("500m", "2Gi"),
    ("1", "512Mi"),
]


#: What the shadow changes: a weight (answered by re-weighting the primary's
#: normalized scores) or a plugin's args (that plugin re-run, the others' scores reused).
CHANGES: dict[str, dict[str, Any]] = {
    "weight": {
        "plugins": {
            "score": {"enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 20}]}
        }
    },
    "args": {
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [
                            {"name": "cpu", "weight": 1},
                            {"name": "memory", "weight": 1},
                        ],
                    }
                },
            }
        ]
    },
}


def profiles(name: str, shadow: str, change: str = "weight") -> list[dict[str, Any]]:
    return [
        {"schedulerName": name},
        {"schedulerName": shadow, **CHANGES[change], "pluggableScheduler": {"shadowOf": name}},
    ]


async def cluster_objects(cluster: Cluster) -> list[dict[str, Any]]:
    nodes = await cluster.client.request("GET", "/api/v1/nodes")
    pods = await cluster.client.request("GET", "/api/v1/pods")
    assert isinstance(nodes, dict) and isinstance(pods, dict)
    out: list[dict[str, Any]] = []
    for kind, listed in (("Node", nodes), ("Pod", pods)):
        for item in listed["items"]:
            out.append({**item, "kind": kind, "apiVersion": "v1"})
    return out


def weighted(report: dict[str, Any]) -> dict[str, int]:
    return {p: s["weighted"] for p, s in report["score"].items()}


def predicted_plugin(primary: Any, shadow: Any, p_node: str, s_node: str) -> str:
    """The rule of scheduler.engine.shadow, from explain's per-node scores."""
    ps, pp = weighted(primary.nodes[s_node].to_json()), weighted(primary.nodes[p_node].to_json())
    ss, sp = weighted(shadow.nodes[s_node].to_json()), weighted(shadow.nodes[p_node].to_json())
    best, change = "Score", 0
    for plugin in sorted(set(ss) | set(ps)):
        moved = (ss.get(plugin, 0) - sp.get(plugin, 0)) - (ps.get(plugin, 0) - pp.get(plugin, 0))
        if moved > change:
            best, change = plugin, moved
    return best


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_a_changed_shadow_reports_what_explain_predicts(
    cluster: Cluster, start_daemon: StartDaemon, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    name, shadow = cluster.scheduler_name, f"{cluster.scheduler_name}-shadow"
    config = scheduler_config(profiles(name, shadow, change))
    running = await start_daemon(config, serving=Serving("127.0.0.1:0"))
    daemon = running.daemon
    (follower,) = daemon.scheduler.shadows._of[name]
    assert follower.reweights is (change == "weight")
    await cluster.create_node("lean", cpu="4", memory="4Gi")
    await cluster.create_node("fat", cpu="4", memory="16Gi")
    await cluster.create_node("wide", cpu="8", memory="8Gi")
    loaded = load_config(config)
    catalog: PluginCatalog = CATALOG

    async def nodes_cached() -> bool:
        return all(n in daemon.cache.table for n in cluster.nodes)

    await wait_until(nodes_cached, message="the nodes in the daemon's cache")
    expected: dict[str, str] = {}
    for i, (cpu, memory) in enumerate(SHAPES):
        objects = await cluster_objects(cluster)
        body = pod_body(f"p{i}", name, cpu=cpu, memory=memory)
        body["metadata"]["namespace"] = cluster.namespace
        await cluster.create_raw_pod(body)
        node = (await cluster.wait_bound([f"p{i}"]))[f"p{i}"]
        key = f"{cluster.namespace}/p{i}"

        async def cached(key: str = key, node: str = node) -> bool:
            return daemon.cache.table.node_of_pod(key) == node

        await wait_until(cached, message=f"{key} in the daemon's cache")
        primary = explain(objects, body, loaded, catalog, profile_name=name)
        predicted = explain(objects, body, loaded, catalog, profile_name=shadow)
        assert node in primary.tied  # the primary's decision is explain's
        if node not in predicted.tied:
            s_node = predicted.node
            assert s_node is not None
            expected[key] = predicted_plugin(primary, predicted, node, s_node)

    assert expected, "the change should move at least one decision"
    # Both changes leave the other plugins alone: every decision was derived from the
    # primary's (scheduler.engine.shadow_reuse), and still equals explain's full cycle.
    assert (follower.derived, follower.full) == (len(SHAPES), 0)
    if change == "weight":  # MostAllocated instead of LeastAllocated moves them all
        assert len(expected) < len(SHAPES), "and leave at least one where it was"
    health = daemon.health
    assert health is not None
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{health.port}/shadow") as response,
    ):
        assert response.status == 200
        data = await response.json()
    got = {d["pod"]: d["plugin"] for d in data["divergences"]}
    assert got == expected, (got, expected)
    for d in data["divergences"]:
        assert d["profile"] == shadow and d["primary"] == name
        assert d["primary_decision"]["node"] in d["nodes"]
        assert d["shadow_decision"]["node"] in d["nodes"]
    counted = {
        s.labels["plugin"]: s.value
        for family in daemon.metrics.registry.collect()
        if family.name == "scheduler_shadow_divergence"
        for s in family.samples
        if s.name.endswith("_total") and s.labels["profile"] == shadow
    }
    want: dict[str, float] = {}
    for plugin in expected.values():
        want[plugin] = want.get(plugin, 0) + 1
    assert counted == want
    # The command reads the same list (blocking HTTP: off this loop, which serves it).
    capsys.readouterr()
    server = f"http://127.0.0.1:{health.port}"
    assert await asyncio.to_thread(main, ["shadow", "--server", server, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == data
    assert await asyncio.to_thread(main, ["shadow", "--server", server, "--limit", "1"]) == 0
    text = capsys.readouterr().out
    newest = data["divergences"][0]
    assert text.startswith(f"{newest['pod']}: {name} -> ")
    assert f"[{newest['plugin']}]" in text.splitlines()[0]
    # The shadow bound nothing and scheduled nothing of its own: one binding per pod.
    assert set((await cluster.placements()).values()) <= set(cluster.nodes)
    await cluster.assert_bound_exactly_once([f"p{i}" for i in range(len(SHAPES))])


async def test_pods_asking_for_a_shadow_are_not_scheduled(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    name, shadow = cluster.scheduler_name, f"{cluster.scheduler_name}-shadow"
    await start_daemon(scheduler_config(profiles(name, shadow)))
    await cluster.create_node("n1")
    await cluster.create_pod("theirs", scheduler=shadow)
    await cluster.create_pod("ours")
    await cluster.wait_bound(["ours"])
    assert (await cluster.pod("theirs"))["spec"].get("nodeName") in (None, "")
