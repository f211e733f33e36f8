"""Watch: event streams, resourceVersion replay, bookmarks, timeouts, selector transitions."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kubernetes_asyncio import client, config, watch

from scheduler.simulation.emulator import EmulatorServer

from .kube_helpers import WatchStream, binding, pod, read_json


async def _list_rv(core: client.CoreV1Api, namespace: str) -> str:
    body = await read_json(await core.list_namespaced_pod(namespace, _preload_content=False))
    return str(body["metadata"]["resourceVersion"])


async def test_watch_from_list_version_sees_changes_in_order(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    rv = await _list_rv(core, namespace)
    async with await WatchStream.open(
        api_client, f"/api/v1/namespaces/{namespace}/pods", resourceVersion=rv
    ) as stream:
        await core.create_namespaced_pod(namespace, pod("p"))
        await core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"a": "b"}}})
        await core.delete_namespaced_pod("p", namespace)
        events = [await stream.next_of({"ADDED", "MODIFIED", "DELETED"}) for _ in range(4)]
    # A pod delete first marks it (deletionTimestamp, grace 0 when unbound), then removes it.
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    assert events[2]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)
    assert events[1]["object"]["metadata"]["labels"] == {"a": "b"}


async def test_watch_replays_from_resource_version(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    rv = await _list_rv(core, namespace)
    await core.create_namespaced_pod(namespace, pod("before-watch"))
    async with await WatchStream.open(
        api_client, f"/api/v1/namespaces/{namespace}/pods", resourceVersion=rv
    ) as stream:
        event = await stream.next_of({"ADDED"})
    assert event["object"]["metadata"]["name"] == "before-watch"


async def test_watch_without_version_starts_with_current_state(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("existing"))
    async with await WatchStream.open(api_client, f"/api/v1/namespaces/{namespace}/pods") as stream:
        event = await stream.next_of({"ADDED"})
    assert event["object"]["metadata"]["name"] == "existing"


async def test_timeout_seconds_ends_the_stream(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    rv = await _list_rv(core, namespace)
    started = time.monotonic()
    async with await WatchStream.open(
        api_client,
        f"/api/v1/namespaces/{namespace}/pods",
        resourceVersion=rv,
        allowWatchBookmarks="true",
        timeoutSeconds="2",
    ) as stream:
        while (event := await stream.next(wait=5)) is not None:
            assert event["type"] == "BOOKMARK"
    assert 1.5 < time.monotonic() - started < 5


async def test_periodic_bookmarks(tmp_path: Path) -> None:
    """Emulator-only: kube-apiserver bookmarks about once a minute, too slow for a test."""
    async with EmulatorServer(bookmark_interval=0.2) as server:
        configuration = client.Configuration()
        kubeconfig = server.write_kubeconfig(tmp_path / "kc")
        await config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration
        )
        async with client.ApiClient(configuration) as api:
            core = client.CoreV1Api(api)
            rv = await _list_rv(core, "default")
            async with await WatchStream.open(
                api, "/api/v1/pods", resourceVersion=rv, allowWatchBookmarks="True"
            ) as stream:
                first = await stream.next(wait=5)
                await core.create_namespaced_pod("default", pod("p"))
                added = await stream.next_of({"ADDED"})
                second = await stream.next_of({"BOOKMARK"})
    assert first is not None and first["type"] == "BOOKMARK"
    assert first["object"]["kind"] == "Pod" and first["object"]["apiVersion"] == "v1"
    assert first["object"]["metadata"]["resourceVersion"] == rv
    # A bookmark promises every earlier event was sent: its version covers the ADDED.
    assert (
        second["object"]["metadata"]["resourceVersion"]
        == (added["object"]["metadata"]["resourceVersion"])
    )


async def test_send_initial_events_ends_with_marked_bookmark(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("a"))
    async with await WatchStream.open(
        api_client,
        f"/api/v1/namespaces/{namespace}/pods",
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        allowWatchBookmarks="true",
        timeoutSeconds="10",
    ) as stream:
        added = await stream.next_of({"ADDED"})
        assert added["object"]["metadata"]["name"] == "a"
        marker = await stream.next_of({"BOOKMARK"})
    assert marker["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"


async def test_field_selector_watch_sees_pod_leave_when_bound(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    rv = await _list_rv(core, namespace)
    path = f"/api/v1/namespaces/{namespace}/pods"
    async with (
        await WatchStream.open(
            api_client, path, resourceVersion=rv, fieldSelector="spec.nodeName="
        ) as unassigned,
        await WatchStream.open(
            api_client, path, resourceVersion=rv, fieldSelector="spec.nodeName=node-9"
        ) as on_node,
    ):
        await core.create_namespaced_pod_binding(
            "p", namespace, binding("p", "node-9"), _preload_content=False
        )
        left = await unassigned.next_of({"ADDED", "MODIFIED", "DELETED"})
        arrived = await on_node.next_of({"ADDED", "MODIFIED", "DELETED"})
    assert left["type"] == "DELETED"
    assert arrived["type"] == "ADDED" and arrived["object"]["spec"]["nodeName"] == "node-9"
    assert (
        left["object"]["metadata"]["resourceVersion"]
        == arrived["object"]["metadata"]["resourceVersion"]
    )


async def test_label_selector_transitions(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p", labels={"team": "a"}))
    rv = await _list_rv(core, namespace)
    async with await WatchStream.open(
        api_client,
        f"/api/v1/namespaces/{namespace}/pods",
        resourceVersion=rv,
        labelSelector="team=b",
    ) as stream:
        await core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"team": "b"}}})
        await core.patch_namespaced_pod(
            "p", namespace, {"metadata": {"labels": {"team": "b", "x": "1"}}}
        )
        await core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"team": "c"}}})
        kinds = [(await stream.next_of({"ADDED", "MODIFIED", "DELETED"}))["type"] for _ in range(3)]
    assert kinds == ["ADDED", "MODIFIED", "DELETED"]


async def test_boolean_query_values_in_any_case(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("p"))
    for value in ("True", "1", "true"):
        session_stream = await WatchStream.open(
            api_client, f"/api/v1/namespaces/{namespace}/pods", timeoutSeconds="5", watch=value
        )
        async with session_stream:
            event = await session_stream.next_of({"ADDED"})
        assert event["object"]["metadata"]["name"] == "p", value


async def test_kubernetes_asyncio_watch_client(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    rv = await _list_rv(core, namespace)
    w = watch.Watch()
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async for event in w.stream(
            core.list_namespaced_pod, namespace, resource_version=rv, timeout_seconds=10
        ):
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 2:
                w.stop()

    task = asyncio.create_task(consume())
    await core.create_namespaced_pod(namespace, pod("one"))
    await core.create_namespaced_pod(namespace, pod("two"))
    async with asyncio.timeout(10):
        await task
    assert seen == [("ADDED", "one"), ("ADDED", "two")]
