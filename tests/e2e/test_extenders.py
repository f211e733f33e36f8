"""End to end: HTTP extenders (``extenders:``) through the real daemon.

A toy extender on loopback (``scheduler.testing.extender``) filters by a
node label, scores from another, binds through the test's own API client,
and misbehaves on demand. Backend-agnostic (emulator or real apiserver).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.kube.client import KubeClient
from scheduler.testing.extender import RunningExtender, ToyExtender
from tests.e2e.conftest import Cluster, StartDaemon, pod_body, scheduler_config, wait_until

VGPU = "example.com/vgpu"


@pytest.fixture
async def toy() -> AsyncIterator[RunningExtender]:
    running = await RunningExtender(ToyExtender(require_label="ext-ok")).start()
    try:
        yield running
    finally:
        await running.stop()


def binder_for(client: KubeClient) -> Any:
    async def bind(namespace: str, name: str, uid: str, node: str) -> str:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await client.request(
                "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body
            )
        except Exception as err:
            return str(err)
        return ""

    return bind


def extender(url: str, **fields: Any) -> dict[str, Any]:
    return {"urlPrefix": url, **fields}


async def three_nodes(cluster: Cluster) -> None:
    await cluster.create_node("n1", labels={"ext-ok": "true", "extender-score": "2"})
    await cluster.create_node("n2", labels={"ext-ok": "true", "extender-score": "7"})
    await cluster.create_node("n3", labels={"extender-score": "10"})


def vgpu_pod(name: str, scheduler: str) -> dict[str, Any]:
    body = pod_body(name, scheduler)
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "100m", VGPU: "1"},
        "limits": {VGPU: "1"},
    }
    return body


async def test_filter_and_prioritize_decide_with_full_node_objects(
    cluster: Cluster, start_daemon: StartDaemon, toy: RunningExtender
) -> None:
    await three_nodes(cluster)
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        extenders=[extender(toy.url, filterVerb="filter", prioritizeVerb="prioritize", weight=5)],
    )
    await start_daemon(config)
    await cluster.create_pod("p")
    placed = await cluster.wait_bound(["p"])
    # n3 fails the extender's filter although it scores highest; n2 outscores n1.
    assert placed["p"] == cluster.node_name("n2")
    verbs = toy.toy.verbs()
    assert verbs[:2] == ["filter", "prioritize"]
    sent = toy.toy.calls[0][1]
    assert sent["NodeNames"] is None
    names = {n["metadata"]["name"] for n in sent["Nodes"]["items"]}
    assert names == {cluster.node_name(s) for s in ("n1", "n2", "n3")}
    assert toy.toy.calls[1][1]["Nodes"]["items"][0]["metadata"]["name"] in {
        cluster.node_name("n1"),
        cluster.node_name("n2"),
    }
    assert sent["Pod"]["metadata"]["name"] == "p"


async def test_managed_resources_node_cache_and_bind_verb(
    cluster: Cluster, start_daemon: StartDaemon, toy: RunningExtender
) -> None:
    await three_nodes(cluster)
    toy.toy.binder = binder_for(cluster.client)
    toy.toy.known_nodes = {
        cluster.node_name("n1"): {"metadata": {"labels": {"ext-ok": "true"}}},
        cluster.node_name("n2"): {"metadata": {"labels": {}}},
        cluster.node_name("n3"): {"metadata": {"labels": {}}},
    }
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        extenders=[
            extender(
                toy.url,
                filterVerb="filter",
                bindVerb="bind",
                nodeCacheCapable=True,
                managedResources=[{"name": VGPU, "ignoredByScheduler": True}],
            )
        ],
    )
    await start_daemon(config)
    await cluster.create_pod("plain")
    await cluster.wait_bound(["plain"])
    assert toy.toy.calls == []  # not interested: the fast path, and DefaultBinder binds
    await cluster.create_raw_pod(vgpu_pod("gpu", cluster.scheduler_name))
    placed = await cluster.wait_bound(["gpu"])
    assert placed["gpu"] == cluster.node_name("n1")
    assert toy.toy.verbs() == ["filter", "bind"]
    assert sorted(toy.toy.calls[0][1]["NodeNames"]) == sorted(
        cluster.node_name(s) for s in ("n1", "n2", "n3")
    )
    assert toy.toy.calls[0][1]["Nodes"] is None
    bind = toy.toy.calls[1][1]
    assert (bind["PodName"], bind["PodNamespace"], bind["Node"]) == (
        "gpu",
        cluster.namespace,
        cluster.node_name("n1"),
    )
    await cluster.assert_bound_exactly_once(["plain", "gpu"])


async def test_rejections_carry_the_extenders_reasons(
    cluster: Cluster, start_daemon: StartDaemon, toy: RunningExtender
) -> None:
    await cluster.create_node("n1")
    await cluster.create_node("n2")
    toy.toy.unresolvable = {cluster.node_name("n2"): "node(s) have no vGPU left"}
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        extenders=[extender(toy.url, filterVerb="filter")],
    )
    await start_daemon(config)
    await cluster.create_pod("p")
    event = await cluster.wait_event("p", "FailedScheduling")
    # kube's FitError text; then what PostFilter (DRA, preemption) added, as kube's.
    assert event["note"].startswith(
        "0/2 nodes are available: 1 node(s) have no vGPU left, "
        "1 node(s) refused by the toy extender. "
    )
    assert event["note"].endswith(
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
        "pod, 1 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize("mode", ["error", "garbage", "error-field", "slow"])
async def test_a_failing_extender_fails_the_pod_unless_ignorable(
    cluster: Cluster, start_daemon: StartDaemon, toy: RunningExtender, mode: str
) -> None:
    await cluster.create_node("n1", labels={"ext-ok": "true"})
    toy.toy.mode = mode  # type: ignore[assignment]
    toy.toy.delay = 3.0
    down = "http://127.0.0.1:1"
    config = scheduler_config(
        [
            {"schedulerName": cluster.scheduler_name},
        ],
        extenders=[
            extender(toy.url, filterVerb="filter", httpTimeout="500ms"),
            extender(down, filterVerb="filter", ignorable=True),
        ],
    )
    await start_daemon(config)
    await cluster.create_pod("p")
    event = await cluster.wait_event("p", "FailedScheduling")
    expected = {
        "error": f"failed filter with extender at URL {toy.url}/filter, code 500",
        "error-field": "toy extender says no",
    }
    if mode in expected:
        assert event["note"] == expected[mode]
    elif mode == "slow":
        assert "context deadline exceeded" in event["note"]
    else:
        assert "decoding the answer" in event["note"]
    condition = next(
        c for c in (await cluster.pod("p"))["status"]["conditions"] if c["type"] == "PodScheduled"
    )
    assert condition["reason"] == "SchedulerError"


async def test_ignorable_extenders_that_fail_are_skipped(
    cluster: Cluster, start_daemon: StartDaemon, toy: RunningExtender
) -> None:
    await cluster.create_node("n1")
    toy.toy.mode = "error"
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        extenders=[
            extender(toy.url, filterVerb="filter", ignorable=True),
            extender("http://127.0.0.1:1", filterVerb="filter", ignorable=True),
        ],
    )
    await start_daemon(config)
    await cluster.create_pod("p")
    await cluster.wait_bound(["p"])
    await wait_until(lambda: toy.toy.verbs() == ["filter"], message="one filter call")
