"""The ``status.used`` reconciler: what it writes, when, and what it never writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from scheduler.testing import PluginTestKit
from test_capacityscheduling_unit import Store, pod, quota

from scheduler_plugin_capacityscheduling.book import QuotaBook
from scheduler_plugin_capacityscheduling.status import StatusWriter


class RecordingApi:
    """The API client boundary: records the requests and applies status patches to the store."""

    def __init__(self, quotas: Store) -> None:
        self.quotas = quotas
        self.requests: list[tuple[str, str, Any]] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> Any:
        self.requests.append((method, path, body))
        return {}

    def apply_last(self) -> None:
        """What the informer shows once the last patch went through (merge-patch rules)."""
        _, path, body = self.requests[-1]
        namespace, name = path.split("/")[5], path.split("/")[7]
        obj = dict(self.quotas.get(namespace, name) or {})
        used = dict((obj.get("status") or {}).get("used") or {})
        for key, value in body["status"]["used"].items():
            if value is None:
                used.pop(key, None)
            else:
                used[key] = value
        obj["status"] = {"used": used}
        self.quotas.put(obj)


def setup(*pods: dict[str, Any]) -> tuple[StatusWriter, RecordingApi, Store, QuotaBook]:
    quotas = Store([quota("a", min={"cpu": "2"}, max={"cpu": "4", "memory": "4Gi"})])
    store = Store(pods)
    book = QuotaBook(store, quotas)
    api = RecordingApi(quotas)
    writer = StatusWriter(book, quotas, lambda: api, structlog.get_logger(), 0.2)
    return writer, api, store, book


async def test_writes_once_per_change_and_not_again_until_it_changes() -> None:
    writer, api, store, book = setup(pod("p1", "a", node="n0"), pod("p2", "a", node="n0"))
    book.sync()
    assert await writer.flush() == 1
    method, path, body = api.requests[0]
    assert method == "PATCH"
    assert path == "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/a/elasticquotas/quota/status"
    assert body == {"status": {"used": {"cpu": "2", "memory": str(2 * 2**30)}}}
    assert await writer.flush() == 0  # written, the informer has not shown it yet
    api.apply_last()
    assert await writer.flush() == 0  # shown: nothing to do
    store.remove("a", "p2")
    book.sync()
    assert await writer.flush() == 1
    assert api.requests[-1][2] == {"status": {"used": {"cpu": "1", "memory": str(2**30)}}}


async def test_pods_in_flight_are_not_reported_and_stale_resources_are_removed() -> None:
    gpu = pod("gpu", "a", node="n0")
    gpu["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    writer, api, store, book = setup(gpu, pod("waiting", "a"))
    book.sync()
    book.reserve(PluginTestKit().pod(store.get("a", "waiting")))  # in flight, not bound
    await writer.flush()
    assert api.requests[-1][2]["status"]["used"] == {
        "cpu": "1",
        "memory": str(2**30),
        "nvidia.com/gpu": "1",
    }
    api.apply_last()
    store.remove("a", "gpu")
    book.sync()
    await writer.flush()
    # No longer requested: the gpu entry is removed, min/max's resources stay at 0.
    used = api.requests[-1][2]["status"]["used"]
    assert used == {"cpu": "0", "memory": "0", "nvidia.com/gpu": None}


async def test_a_usage_above_max_is_written_as_max() -> None:
    # Bound past this scheduler (or max lowered): the status never claims more than max.
    writer, api, _, book = setup(*(pod(f"p{i}", "a", node="n0") for i in range(6)))
    book.sync()
    await writer.flush()
    assert api.requests[-1][2]["status"]["used"] == {"cpu": "4", "memory": str(4 * 2**30)}
