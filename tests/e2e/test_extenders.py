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


async def test_preempt_verb_drops_a_candidate_and_narrows_the_victims(
    cluster: Cluster,
    start_daemon: StartDaemon,
    toy: RunningExtender,
    priorities: dict[str, str],
) -> None:
    await cluster.create_node("n1", cpu="2")
    await cluster.create_node("n2", cpu="2")
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    low = priorities["low"]
    placed = {"l1": (n1, "1"), "l2": (n1, "1"), "l3": (n2, "2")}
    uids = {}
    for name, (node, cpu) in placed.items():
        body = pod_body(
            name,
            cluster.scheduler_name,
            cpu=cpu,
            nodeName=node,
            priorityClassName=low,
            terminationGracePeriodSeconds=0,
        )
        uids[name] = (await cluster.create_raw_pod(body))["metadata"]["uid"]
    # Candidates: n1 (victims l1, l2) and n2 (l3). The extender drops n2 and
    # spares l1: the pod is nominated to n1 and only l2 is evicted.
    toy.toy.drop_nodes = {n2}
    toy.toy.spare = {uids["l1"]}
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        extenders=[extender(toy.url, preemptVerb="preempt", nodeCacheCapable=True)],
    )
    await start_daemon(config)
    await cluster.create_pod("high", cpu="2", priorityClassName=priorities["high"])

    async def nominated() -> bool:
        status = (await cluster.pod("high")).get("status") or {}
        return bool(status.get("nominatedNodeName") == n1)

    await wait_until(nominated, message="the high-priority pod nominated to n1")

    async def l2_evicted() -> bool:
        pods = await cluster.pods()
        return "l2" not in pods or bool(pods["l2"]["metadata"].get("deletionTimestamp"))

    await wait_until(l2_evicted, message="l2 evicted")
    pods = await cluster.pods()
    for kept in ("l1", "l3"):
        assert not pods[kept]["metadata"].get("deletionTimestamp"), kept
    preempts = [body for verb, body in toy.toy.calls if verb == "preempt"]
    assert preempts, toy.toy.verbs()
    first = preempts[0]
    assert first["NodeNameToVictims"] is None
    assert first["Pod"]["metadata"]["name"] == "high"
    sent = {
        node: {p["UID"] for p in v["Pods"]} for node, v in first["NodeNameToMetaVictims"].items()
    }
    assert sent == {n1: {uids["l1"], uids["l2"]}, n2: {uids["l3"]}}
    # Only preemption called the extender (no filter or prioritize verb).
    assert set(toy.toy.verbs()) == {"preempt"}


async def test_a_failing_preempt_verb_fails_the_preemption(
    cluster: Cluster,
    start_daemon: StartDaemon,
    toy: RunningExtender,
    priorities: dict[str, str],
) -> None:
    await cluster.create_node("n1", cpu="1")
    body = pod_body(
        "low",
        cluster.scheduler_name,
        cpu="800m",
        nodeName=cluster.node_name("n1"),
        priorityClassName=priorities["low"],
    )
    await cluster.create_raw_pod(body)
    toy.toy.mode = "error"
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        extenders=[extender(toy.url, preemptVerb="preempt")],
    )
    await start_daemon(config)
    await cluster.create_pod("high", cpu="800m", priorityClassName=priorities["high"])
    event = await cluster.wait_event("high", "FailedScheduling")
    assert event["note"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: failed preempt with "
        f"extender at URL {toy.url}/preempt, code 500"
    )
    pods = await cluster.pods()
    assert not pods["low"]["metadata"].get("deletionTimestamp")
    assert not ((pods["high"].get("status") or {}).get("nominatedNodeName"))


async def test_filter_calls_ahead_never_place_a_pod_where_an_earlier_one_went(
    cluster: Cluster, start_daemon: StartDaemon, toy: RunningExtender
) -> None:
    # Six one-pod nodes and six pods queued together: each pod's filter call
    # goes out while the pod before it is decided, with that pod's node still
    # free; at its turn the node is full and must not be chosen. The extender
    # is slow to filter, so the loop would wait: calls go ahead.
    toy.toy.require_label = None
    toy.toy.mode, toy.toy.mode_verbs, toy.toy.delay = "slow", {"filter"}, 0.05
    for i in range(6):
        await cluster.create_node(f"n{i}", cpu="1")
    names = [f"p{i}" for i in range(6)]
    for name in names:
        await cluster.create_pod(name, cpu="800m")
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        extenders=[extender(toy.url, filterVerb="filter", nodeCacheCapable=True)],
    )
    running = await start_daemon(config)
    placed = await cluster.wait_bound(names)
    assert sorted(placed.values()) == sorted(cluster.node_name(f"n{i}") for i in range(6))
    prefetch = running.daemon.scheduler.profiles[cluster.scheduler_name].framework.extenders
    assert prefetch is not None
    assert prefetch.prefetch.hits >= 1, (prefetch.prefetch.hits, prefetch.prefetch.misses)
    # Each pod's early call named a node an earlier pod then took; none was chosen twice.
    filters = [body for verb, body in toy.toy.calls if verb == "filter"]
    assert len(filters) >= len(names)
    await cluster.assert_bound_exactly_once(names)
