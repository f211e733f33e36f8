"""Informer against the emulator: list+watch, resume, bookmarks, 410 re-list deltas."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import pytest

from scheduler.daemon.adapters import InformerStore
from scheduler.kube.client import KubeClient
from scheduler.kube.informer import Informer, object_key, strip_managed_fields
from scheduler.simulation.emulator import EmulatorServer
from tests.kube.helpers import eventually, node, pod

PODS = "/api/v1/pods"


class Recorder:
    """Collects handler calls as (kind, key, resourceVersion) tuples."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.calls.append(("add", object_key(obj), obj["metadata"]["resourceVersion"]))

    async def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        assert object_key(old) == object_key(new)
        self.calls.append(("update", object_key(new), new["metadata"]["resourceVersion"]))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.calls.append(("delete", object_key(obj), obj["metadata"]["resourceVersion"]))

    def kinds(self) -> list[tuple[str, str]]:
        return [(kind, key) for kind, key, _ in self.calls]


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(informer.run())
    try:
        async with asyncio.timeout(5):
            await informer.has_synced.wait()
        yield task
    finally:
        informer.stop()
        async with asyncio.timeout(5):
            await task


def make_informer(
    client: KubeClient, recorder: Recorder, path: str = PODS, **kwargs: Any
) -> Informer:
    kwargs.setdefault("backoff_initial", 0.05)
    kwargs.setdefault("backoff_max", 0.2)
    return Informer(
        client,
        path,
        on_add=recorder.on_add,
        on_update=recorder.on_update,
        on_delete=recorder.on_delete,
        **kwargs,
    )


def spy_watches(client: KubeClient) -> list[dict[str, str]]:
    """Record the query of every watch the client opens.

    The emulator logs a request when its answer ends, which for a live watch
    is too late to assert on, so the queries are captured client-side.
    """
    queries: list[dict[str, str]] = []
    original = client.watch

    def watch(path: str, query: Any = None, **kwargs: Any) -> Any:
        queries.append(dict(query or {}))
        return original(path, query, **kwargs)

    client.watch = watch  # type: ignore[method-assign]
    return queries


def watching(emulator: EmulatorServer, count: int = 1) -> bool:
    return len(emulator.store.all_watchers()) == count


async def create(client: KubeClient, name: str, namespace: str = "default") -> dict[str, Any]:
    result = await client.request(
        "POST", f"/api/v1/namespaces/{namespace}/pods", body=pod(name, namespace)
    )
    assert isinstance(result, dict)
    return result


async def test_lists_then_watches_adds_updates_deletes(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    await create(client, "a")
    await create(client, "b", "kube-system")
    recorder = Recorder()
    informer = make_informer(client, recorder, page_size=1)
    watches = spy_watches(client)
    async with running(informer):
        assert sorted(informer.store) == ["default/a", "kube-system/b"]
        assert sorted(recorder.kinds()) == [("add", "default/a"), ("add", "kube-system/b")]
        lists = [
            parse_qs(r.query)
            for r in emulator.request_log
            if r.path == PODS and "watch" not in r.query
        ]
        assert len(lists) == 2 and lists[0]["limit"] == ["1"], "paged by page_size"
        # A consistent, paged list: resourceVersion=0 would be answered whole.
        assert "resourceVersion" not in lists[0]
        listed_rv = informer.resource_version

        await create(client, "c")
        await client.request(
            "PATCH",
            "/api/v1/namespaces/default/pods/a",
            body={"metadata": {"labels": {"x": "1"}}},
            content_type="application/merge-patch+json",
        )
        await client.request("DELETE", "/api/v1/namespaces/kube-system/pods/b")
        # As kube-apiserver does, deleting a pod first sets deletionTimestamp
        # (MODIFIED) and then removes it (DELETED).
        await eventually(lambda: len(recorder.calls) == 6, message="four watch events")

    assert recorder.kinds()[2:] == [
        ("add", "default/c"),
        ("update", "default/a"),
        ("update", "kube-system/b"),
        ("delete", "kube-system/b"),
    ]
    assert sorted(informer.store) == ["default/a", "default/c"]
    assert informer.store["default/a"]["metadata"]["labels"] == {"x": "1"}
    query = watches[0]
    assert query["allowWatchBookmarks"] == "true"
    assert query["resourceVersion"] == listed_rv, "the watch starts where the list ended"
    assert 300 <= int(query["timeoutSeconds"]) <= 600
    assert informer.lists == 1


async def test_cluster_scoped_keys_are_names(client: KubeClient) -> None:
    await client.request("POST", "/api/v1/nodes", body=node("n1"))
    informer = Informer(client, "/api/v1/nodes")
    async with running(informer):
        assert list(informer.store) == ["n1"]


async def test_bookmarks_advance_the_resume_version(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    recorder = Recorder()
    informer = make_informer(client, recorder, path="/api/v1/nodes")
    watches = spy_watches(client)
    async with running(informer):
        await eventually(lambda: watching(emulator), message="the watch")
        start = int(informer.resource_version)
        # Writes to another collection move the global version; only a
        # BOOKMARK can tell the node informer about them.
        for i in range(3):
            await create(client, f"p{i}")
        target = emulator.store.rv
        await eventually(
            lambda: int(informer.resource_version) >= target,
            message="a bookmark carrying the new version",
        )
        assert target > start and recorder.calls == []

        assert emulator.faults.drop_watches(abrupt=True) == 1
        await eventually(lambda: len(watches) >= 2 and watching(emulator), message="a re-watch")
        assert emulator.store.all_watchers()[0].after_rv >= target
    assert int(watches[1]["resourceVersion"]) >= target
    assert informer.lists == 1


@pytest.mark.parametrize("abrupt", [True, False])
async def test_dropped_stream_resumes_without_relist(
    client: KubeClient, emulator: EmulatorServer, abrupt: bool
) -> None:
    await create(client, "a")
    recorder = Recorder()
    informer = make_informer(client, recorder)
    watches = spy_watches(client)
    async with running(informer):
        await eventually(lambda: watching(emulator), message="the watch")
        before = informer.resource_version
        # Keep the re-watch failing so the next change happens while disconnected.
        blocker = emulator.faults.fail(500, verb="watch", count=None)
        assert emulator.faults.drop_watches(abrupt=abrupt) == 1
        await eventually(lambda: blocker.hits >= 1, message="a failed re-watch")
        await create(client, "b")
        emulator.faults.rules.remove(blocker)
        await eventually(lambda: "default/b" in informer.store, message="the missed add")

    assert informer.lists == 1, "a resumable drop must not re-list"
    assert recorder.kinds() == [("add", "default/a"), ("add", "default/b")]
    resumed = [q for q in watches if q["resourceVersion"] == before]
    assert len(resumed) >= 2, "the re-watch resumes from the last seen version"


async def test_410_relists_and_emits_deltas_including_missed_delete(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    for name in ("stay", "change", "vanish"):
        await create(client, name)
    recorder = Recorder()
    informer = make_informer(client, recorder)
    async with running(informer):
        await eventually(lambda: watching(emulator), message="the watch")
        recorder.calls.clear()
        blocker = emulator.faults.fail(500, verb="watch", count=None)
        emulator.faults.drop_watches(abrupt=True)
        await eventually(lambda: blocker.hits >= 1, message="a failed re-watch")

        # While disconnected: one delete, one update, one add; then history is lost.
        await client.request("DELETE", "/api/v1/namespaces/default/pods/vanish")
        changed = await client.request(
            "PATCH",
            "/api/v1/namespaces/default/pods/change",
            body={"metadata": {"labels": {"v": "2"}}},
            content_type="application/merge-patch+json",
        )
        await create(client, "new")
        emulator.store.compact()
        emulator.faults.rules.remove(blocker)

        await eventually(lambda: informer.lists == 2, message="a re-list after 410")
        await eventually(lambda: len(recorder.calls) == 3, message="three deltas")

    assert sorted(recorder.kinds()) == [
        ("add", "default/new"),
        ("delete", "default/vanish"),
        ("update", "default/change"),
    ]
    update = next(c for c in recorder.calls if c[0] == "update")
    assert update[2] == changed["metadata"]["resourceVersion"]
    assert sorted(informer.store) == ["default/change", "default/new", "default/stay"]
    relist = [
        parse_qs(r.query) for r in emulator.request_log if r.path == PODS and "watch" not in r.query
    ][-1]
    assert "resourceVersion" not in relist, "a re-list after 410 reads the latest state"


async def test_expired_open_watch_relists(client: KubeClient, emulator: EmulatorServer) -> None:
    await create(client, "a")
    recorder = Recorder()
    informer = make_informer(client, recorder)
    async with running(informer):
        await eventually(lambda: watching(emulator), message="the watch")
        assert emulator.faults.expire_watches() == 1
        await eventually(lambda: informer.lists == 2, message="a re-list")
        await create(client, "b")
        await eventually(lambda: "default/b" in informer.store, message="watching again")
    # The re-list found nothing new for "a": no duplicate add, no spurious update.
    assert recorder.kinds() == [("add", "default/a"), ("add", "default/b")]


async def test_list_errors_back_off_and_retry(client: KubeClient, emulator: EmulatorServer) -> None:
    await create(client, "a")
    emulator.faults.fail(503, verb="list", resource="pods", count=6)
    recorder = Recorder()
    informer = make_informer(client, recorder)
    async with running(informer):
        assert list(informer.store) == ["default/a"]
    failed = [r for r in emulator.request_log if r.path == PODS and r.status == 503]
    assert len(failed) == 6


async def test_handler_errors_do_not_stop_the_informer(client: KubeClient) -> None:
    seen: list[str] = []

    def flaky(obj: dict[str, Any]) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("plugin bug")

    informer = Informer(client, PODS, on_add=flaky)
    await create(client, "bad")
    async with running(informer):
        await create(client, "good")
        await eventually(lambda: "good" in seen, message="the next add")
    assert seen == ["bad", "good"]


async def test_stop_ends_run_and_cancel_propagates(client: KubeClient) -> None:
    informer = Informer(client, PODS)
    task = asyncio.create_task(informer.run())
    async with asyncio.timeout(5):
        await informer.has_synced.wait()
    informer.stop()
    async with asyncio.timeout(5):
        await task
    assert task.done() and not task.cancelled()

    other = Informer(client, PODS)
    task = asyncio.create_task(other.run())
    async with asyncio.timeout(5):
        await other.has_synced.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(5):
            await task


async def test_stop_from_a_handler(client: KubeClient) -> None:
    informer: Informer

    def stop_on_second(obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "second":
            informer.stop()

    informer = Informer(client, PODS, on_add=stop_on_second)
    task = asyncio.create_task(informer.run())
    async with asyncio.timeout(5):
        await informer.has_synced.wait()
        await create(client, "second")
        await task
    assert "default/second" in informer.store


def test_strip_managed_fields_drops_only_managed_fields() -> None:
    obj = {"metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}]}, "spec": {}}
    assert strip_managed_fields(obj) is obj
    assert obj == {"metadata": {"name": "a"}, "spec": {}}
    assert strip_managed_fields({"kind": "Pod"}) == {"kind": "Pod"}


async def test_transform_applies_page_by_page_and_to_watch_events(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    for i in range(5):
        await create(client, f"p{i}")
    original = client.request
    pages = 0

    async def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal pages
        pages += 1
        return await original(*args, **kwargs)

    client.request = counting  # type: ignore[method-assign]
    seen_at_page: dict[str, int] = {}

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        seen_at_page[obj["metadata"]["name"]] = pages
        obj["metadata"]["annotations"] = {"transformed": "yes"}
        return obj

    added: list[dict[str, Any]] = []
    informer = Informer(client, PODS, on_add=added.append, transform=transform, page_size=2)
    async with running(informer):
        # Each page is transformed as it arrives, before the next is asked for.
        assert seen_at_page == {"p0": 1, "p1": 1, "p2": 2, "p3": 2, "p4": 3}
        assert pages == 3
        await create(client, "late")
        await eventually(lambda: len(added) == 6, message="the watch event")
    assert all(obj["metadata"]["annotations"] == {"transformed": "yes"} for obj in added)
    assert all(
        obj["metadata"]["annotations"] == {"transformed": "yes"} for obj in informer.store.values()
    )
    assert "late" in seen_at_page


def _by_label(informer: Informer, label: str, value: str) -> list[str]:
    return sorted(object_key(o) for o in informer.by_label(label, value))


def _scan(informer: Informer, label: str, value: str) -> list[str]:
    return sorted(
        key
        for key, o in informer.store.items()
        if (o["metadata"].get("labels") or {}).get(label) == value
    )


async def test_label_index_follows_events_and_relists(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    """by_label answers what a scan of the store would, through adds, relabels, deletes, 410s."""
    for name, group in (("a", "g1"), ("b", "g1"), ("c", "g2"), ("d", "")):
        labels = {"group": group} if group else {}
        await client.request("POST", "/api/v1/namespaces/default/pods", body=pod(name, **labels))
    informer = make_informer(client, Recorder())
    async with running(informer):
        assert _by_label(informer, "group", "g1") == ["default/a", "default/b"]

        async def relabel(name: str, value: str | None) -> None:
            await client.request(
                "PATCH",
                f"/api/v1/namespaces/default/pods/{name}",
                body={"metadata": {"labels": {"group": value}}},
                content_type="application/merge-patch+json",
            )

        await relabel("b", "g2")  # moves between values
        await relabel("a", None)  # loses the label
        await relabel("d", "g1")  # gains it
        await client.request("DELETE", "/api/v1/namespaces/default/pods/c")
        await client.request("POST", "/api/v1/namespaces/default/pods", body=pod("e", group="g2"))

        def agrees() -> bool:
            return (
                all(
                    _by_label(informer, "group", v) == _scan(informer, "group", v)
                    for v in ("g1", "g2")
                )
                and "default/e" in informer.store
                and "default/c" not in informer.store
            )

        await eventually(agrees, message="the index to follow the watch")
        assert _by_label(informer, "group", "g1") == ["default/d"]
        assert _by_label(informer, "group", "g2") == ["default/b", "default/e"]

        # History lost (410): the re-list rebuilds the index from the fresh list.
        blocker = emulator.faults.fail(500, verb="watch", count=None)
        emulator.faults.drop_watches(abrupt=True)
        await eventually(lambda: blocker.hits >= 1, message="a failed re-watch")
        await relabel("e", "g1")
        emulator.store.compact()
        emulator.faults.rules.remove(blocker)
        await eventually(lambda: informer.lists == 2, message="a re-list after 410")
        assert _by_label(informer, "group", "g1") == ["default/d", "default/e"]
        assert _by_label(informer, "group", "g2") == ["default/b"]
        assert _by_label(informer, "other", "x") == []


async def test_change_log_names_what_changed_and_forgets_at_a_relist(
    client: KubeClient, emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ObjectStore.changed_since: the keys changed after a revision, None once not remembered."""
    monkeypatch.setattr("scheduler.kube.informer._LOG_MIN", 4)
    for name in ("a", "b"):
        await create(client, name)
    await client.request("POST", "/api/v1/nodes", body=node("n1"))
    informer = make_informer(client, Recorder())
    nodes = Informer(client, "/api/v1/nodes")
    store, node_store = InformerStore(informer), InformerStore(nodes)
    async with running(informer), running(nodes):
        start = store.revision()
        assert store.changed_since(start) == set()
        await client.request("DELETE", "/api/v1/namespaces/default/pods/a")
        await create(client, "c", "kube-system")
        await eventually(lambda: "kube-system/c" in informer.store, message="the watch")
        # A delete is a MODIFIED (deletionTimestamp) then a DELETED: both logged.
        assert store.changed_since(start) == {("default", "a"), ("kube-system", "c")}
        middle = store.revision() - 1
        assert store.changed_since(middle) == {("kube-system", "c")}
        assert store.changed_since(store.revision() + 1) is None, "a revision not yet reached"

        seen = node_store.revision()
        await client.request(
            "PATCH",
            "/api/v1/nodes/n1",
            body={"metadata": {"labels": {"x": "1"}}},
            content_type="application/merge-patch+json",
        )
        await eventually(lambda: node_store.revision() > seen, message="the node's update")
        assert node_store.changed_since(seen) == {("", "n1")}, "cluster-scoped: no namespace"

        # The log keeps max(4, objects) changes once it outgrows twice that.
        for i in range(8):
            await client.request(
                "PATCH",
                "/api/v1/namespaces/default/pods/b",
                body={"metadata": {"labels": {"i": str(i)}}},
                content_type="application/merge-patch+json",
            )
        await eventually(
            lambda: informer.store["default/b"]["metadata"]["labels"] == {"i": "7"},
            message="eight updates",
        )
        assert store.changed_since(start) is None, "older than the log remembers"
        assert store.changed_since(store.revision() - 2) == {("default", "b")}

        # History lost (410): the re-list may have changed anything.
        before = store.revision()
        blocker = emulator.faults.fail(500, verb="watch", count=None)
        emulator.faults.drop_watches(abrupt=True)
        await eventually(lambda: blocker.hits >= 1, message="a failed re-watch")
        await create(client, "d")
        emulator.store.compact()
        emulator.faults.rules.remove(blocker)
        await eventually(lambda: informer.lists == 2, message="a re-list after 410")
        assert store.changed_since(before) is None
        assert store.changed_since(store.revision()) == set()
