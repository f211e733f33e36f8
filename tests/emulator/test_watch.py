"""Watch: event streams, resourceVersion replay, bookmarks, timeouts, selector transitions."""

from __future__ import annotations

import asyncio
import time

from kubernetes_asyncio import client, watch

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
        events = [await stream.next_of({"ADDED", "MODIFIED", "DELETED"}) for _ in range(3)]
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
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


async def test_bookmarks_and_timeout(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    rv = await _list_rv(core, namespace)
    started = time.monotonic()
    async with await WatchStream.open(
        api_client,
        f"/api/v1/namespaces/{namespace}/pods",
        resourceVersion=rv,
        allowWatchBookmarks="true",
        timeoutSeconds="3",
    ) as stream:
        bookmark = await stream.next_of({"BOOKMARK"}, wait=5)
        assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(rv)
        assert bookmark["object"]["kind"] == "Pod"
        assert await stream.next(wait=5) is None, "stream ends at timeoutSeconds"
    assert time.monotonic() - started < 6


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
