"""``POST /whatif`` on the real daemon, over HTTP, on both backends.

The daemon watches the cluster, its pending pods are in its queue; the
endpoint answers which node templates (and existing nodes) they would fit
on, with the plugin that rejects the others, and never changes what the
daemon schedules on.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from scheduler.observability.server import Serving
from tests.e2e.conftest import Cluster, RunningDaemon, StartDaemon, scheduler_config, wait_until

LARGE = {
    "metadata": {"labels": {"topology.kubernetes.io/zone": "zone-b"}},
    "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
}
GPU = {
    "metadata": {"labels": {"accelerator": "gpu"}},
    "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
}


async def post(running: RunningDaemon, body: Any, *, raw: bytes | None = None) -> tuple[int, Any]:
    health = running.daemon.health
    assert health is not None
    url = f"http://127.0.0.1:{health.port}/whatif"
    async with aiohttp.ClientSession() as http:
        data = raw if raw is not None else None
        kwargs: dict[str, Any] = {"data": data} if raw is not None else {"json": body}
        async with http.post(url, **kwargs) as response:
            return response.status, await response.json(content_type=None)


async def start(cluster: Cluster, start_daemon: StartDaemon) -> RunningDaemon:
    return await start_daemon(
        scheduler_config([{"schedulerName": cluster.scheduler_name}]),
        serving=Serving("127.0.0.1:0"),
    )


async def wait_unschedulable(cluster: Cluster, names: list[str]) -> None:
    for name in names:
        await cluster.wait_event(name, "FailedScheduling", within=15)


async def test_pending_pods_against_node_templates(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    running = await start(cluster, start_daemon)
    small = await cluster.create_node("small", cpu="1", memory="4Gi")
    await cluster.create_pod("big-1", cpu="2")
    await cluster.create_pod("big-2", cpu="2")
    await cluster.create_pod("accel", cpu="100m", nodeSelector={"accelerator": "gpu"})
    await wait_unschedulable(cluster, ["big-1", "big-2", "accel"])
    nodes_before = len(running.daemon.cache.table)

    status, data = await post(
        running,
        {
            "nodeTemplates": [
                {"name": f"{cluster.namespace}-large", "count": 3, "node": LARGE},
                {"name": f"{cluster.namespace}-gpu", "node": GPU},
            ]
        },
    )
    assert status == 200, data
    ns = cluster.namespace
    answers = {a["pods"][0]: a for a in data["answers"]}
    assert set(answers) == {f"{ns}/big-1", f"{ns}/accel"}  # big-1 and big-2 answered once
    big = answers[f"{ns}/big-1"]
    assert big["pods"] == [f"{ns}/big-1", f"{ns}/big-2"] and big["fits"] is True
    large, gpu = big["templates"]
    assert large == {"name": f"{ns}-large", "fits": True, "feasibleCopies": 3}
    assert (gpu["fits"], gpu["plugin"]) == (False, "TaintToleration")
    rejected = {n: g for g in big["nodes"]["rejected"] for n in g["nodes"]}
    assert rejected[small]["plugin"] == "NodeResourcesFit"
    assert rejected[small]["reasons"] == ["Insufficient cpu"]
    accel = answers[f"{ns}/accel"]
    large, gpu = accel["templates"]
    assert (large["fits"], large["plugin"]) == (False, "NodeAffinity")
    assert (gpu["fits"], gpu["plugin"]) == (False, "TaintToleration")
    assert accel["fits"] is False
    # The answer changed nothing: no node was added, the pods are still pending.
    assert len(running.daemon.cache.table) == nodes_before
    assert set((await cluster.placements()).values()) == {""}


async def test_pods_by_reference_with_a_node_removed(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    """Drain check: would the pod of a node fit elsewhere if that node went away?"""
    running = await start(cluster, start_daemon)
    a = await cluster.create_node("a", cpu="1")
    b = await cluster.create_node("b", cpu="1")
    await cluster.create_pod("web", cpu="600m")
    placed = (await cluster.wait_bound(["web"]))["web"]
    other = b if placed == a else a

    async def cached() -> bool:
        return running.daemon.cache.table.node_of_pod(f"{cluster.namespace}/web") == placed

    await wait_until(cached, message="the bound pod in the daemon's cache")
    status, data = await post(
        running, {"pods": [f"{cluster.namespace}/web"], "removeNodes": [placed]}
    )
    assert status == 200, data
    (only,) = data["answers"]
    assert other in only["nodes"]["feasible"]
    listed = only["nodes"]["feasible"] + [n for g in only["nodes"]["rejected"] for n in g["nodes"]]
    assert placed not in listed
    assert data["summary"]["removedNodes"] == [placed]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"nodeTemplates": [{"name": "x", "count": -1, "node": LARGE}]}, "nodeTemplates[0].count"),
        (
            {"nodeTemplates": [{"name": "x", "node": LARGE, "size": 3}]},
            "nodeTemplates[0]: unknown field 'size'",
        ),
        ({"removeNodes": ["no-such-node"]}, "removeNodes[0]: no node named 'no-such-node'"),
        ({"pods": ["default/no-such-pod"]}, "pods[0]: no pod 'default/no-such-pod'"),
        ({"pods": [{"metadata": {"name": "p"}}]}, "pods[0].spec: required"),
        ([], "request: must be a JSON object"),
    ],
)
async def test_bad_requests_are_400_naming_the_field(
    cluster: Cluster, start_daemon: StartDaemon, body: Any, expected: str
) -> None:
    running = await start(cluster, start_daemon)
    status, data = await post(running, body)
    assert status == 400
    assert expected in data["error"], data


async def test_not_json_and_wrong_method(cluster: Cluster, start_daemon: StartDaemon) -> None:
    running = await start(cluster, start_daemon)
    status, data = await post(running, None, raw=b"{nope")
    assert status == 400 and data["error"].startswith("request body: not valid JSON")
    health = running.daemon.health
    assert health is not None
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{health.port}/whatif") as response,
    ):
        assert response.status == 405
