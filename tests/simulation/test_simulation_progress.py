"""``simulate`` ends when no pod can make progress, errors included.

A pod whose attempts end in Error backs off and is retried forever by the
daemon; the simulation must still end, report that pod with its last error,
and place everything else - without cutting short pods that recover or are
still progressing. The plugins below are ordinary in-process plugins run by
the real daemon against the emulator; the ``ErrorStreaks``/``ClusterChanges``
tests pin the stopping rule itself.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

from scheduler.api import CycleState, Plugin, hookimpl
from scheduler.api.results import FilterResult
from scheduler.config.loading import load_config
from scheduler.config.models import SchedulerConfiguration
from scheduler.framework.loader import PluginCatalog
from scheduler.simulation.emulator.store import Store
from scheduler.simulation.simulate import (
    ERROR_LIMIT,
    ERROR_REPEATS,
    ClusterChanges,
    ErrorStreaks,
    SimulationResult,
    simulate,
)
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo

PROFILE = "pluggable-scheduler"


class BrokenFilter(Plugin):
    """Raises for pods labelled ``broken=always`` on every attempt."""

    api_version: ClassVar[str] = "1.0"

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        if pod.labels.get("broken") == "always":
            raise RuntimeError(f"cannot handle {pod.name}")
        return FilterResult(len(nodes))


class ChattyFilter(Plugin):
    """Raises for pods labelled ``broken=chatty``, with a new message every time."""

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.calls = 0

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        if pod.labels.get("broken") == "chatty":
            self.calls += 1
            raise RuntimeError(f"failure number {self.calls}")
        return FilterResult(len(nodes))


class FlakyFilter(Plugin):
    """Raises on the first two attempts of pods labelled ``flaky=filter``, then passes."""

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.calls: dict[str, int] = {}

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        if pod.labels.get("flaky") == "filter":
            self.calls[pod.name] = self.calls.get(pod.name, 0) + 1
            if self.calls[pod.name] <= 2:
                raise RuntimeError("warming up")
        return FilterResult(len(nodes))


class FlakyPreBind(Plugin):
    """PreBind raising twice for pods labelled ``flaky=prebind``; sleeps 1.5 s for
    ``slow=yes`` (a pod in flight that long is progressing, not stuck)."""

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.calls: dict[str, int] = {}

    @hookimpl
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        if pod.labels.get("slow") == "yes":
            await asyncio.sleep(1.5)
        if pod.labels.get("flaky") == "prebind":
            self.calls[pod.name] = self.calls.get(pod.name, 0) + 1
            if self.calls[pod.name] <= 2:
                raise RuntimeError("volume not attached yet")


CATALOG = PluginCatalog.discover().merged(
    PluginCatalog.from_classes(
        {
            "BrokenFilter": BrokenFilter,
            "ChattyFilter": ChattyFilter,
            "FlakyFilter": FlakyFilter,
            "FlakyPreBind": FlakyPreBind,
        }
    )
)


def config(*, max_backoff: int = 10) -> SchedulerConfiguration:
    return load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "podInitialBackoffSeconds": 1,
            "podMaxBackoffSeconds": max_backoff,
            "profiles": [
                {
                    "schedulerName": PROFILE,
                    "plugins": {
                        "filter": {
                            "enabled": [
                                {"name": "BrokenFilter"},
                                {"name": "ChattyFilter"},
                                {"name": "FlakyFilter"},
                            ]
                        },
                        "preBind": {"enabled": [{"name": "FlakyPreBind"}]},
                    },
                }
            ],
        }
    )


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {
            "schedulerName": PROFILE,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
            **spec,
        },
    }


def by_pod(result: SimulationResult) -> dict[str, tuple[str | None, str]]:
    return {p.pod: (p.node, p.reason) for p in result.placements}


async def test_a_pod_failing_with_an_error_on_every_attempt_ends_the_run() -> None:
    objects = [
        node("n1"),
        node("n2"),
        pod("a"),
        pod("b"),
        pod("c"),
        pod("broken", {"broken": "always"}),
        pod("idle"),
    ]
    started = time.monotonic()
    result = await simulate(objects, config(), CATALOG, max_seconds=30)
    elapsed = time.monotonic() - started
    placed = by_pod(result)
    assert {k: v[0] is not None for k, v in placed.items()} == {
        "default/a": True,
        "default/b": True,
        "default/c": True,
        "default/idle": True,
        "default/broken": False,
    }
    assert placed["default/broken"][1] == (
        "running Filter plugin 'BrokenFilter': RuntimeError: cannot handle broken"
    )
    # Backoffs of 1 s then 2 s: the third identical error comes about 3 s in
    # (7 s if the other bindings landed between its first attempts).
    assert elapsed < 10, elapsed
    assert result.to_json()["summary"]["unscheduled"] == 1


async def test_an_error_with_a_new_message_every_time_still_ends_the_run() -> None:
    # Never the same message twice: only the ERROR_LIMIT bound can end it.
    objects = [node("n1"), pod("ok"), pod("chatty", {"broken": "chatty"})]
    started = time.monotonic()
    result = await simulate(objects, config(max_backoff=1), CATALOG, max_seconds=30)
    elapsed = time.monotonic() - started
    placed = by_pod(result)
    assert placed["default/ok"] == ("n1", "scheduled")
    assert placed["default/chatty"] == (
        None,
        f"running Filter plugin 'ChattyFilter': RuntimeError: failure number {ERROR_LIMIT}",
    )
    assert elapsed < ERROR_LIMIT + 5, elapsed


async def test_pods_that_fail_twice_and_then_recover_are_placed() -> None:
    objects = [
        node("n1"),
        pod("flaky-filter", {"flaky": "filter"}),
        pod("flaky-prebind", {"flaky": "prebind"}),
        pod("slow", {"slow": "yes"}),
    ]
    result = await simulate(objects, config(), CATALOG, max_seconds=30)
    assert by_pod(result) == {
        "default/flaky-filter": ("n1", "scheduled"),
        "default/flaky-prebind": ("n1", "scheduled"),
        "default/slow": ("n1", "scheduled"),
    }
    # Each flaky pod: two errors and the attempt that succeeds.
    assert result.attempts == 3 + 3 + 1


async def test_a_wait_for_first_consumer_volume_is_provisioned_and_the_pod_placed() -> None:
    objects = [
        node("n1"),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "local.csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]),
    ]
    result = await simulate(objects, config(), CATALOG, max_seconds=30)
    assert by_pod(result) == {"default/db": ("n1", "scheduled")}


# -- the rule itself --------------------------------------------------------------


def test_the_same_error_repeated_in_an_unchanged_cluster_is_stuck() -> None:
    streaks = ErrorStreaks()
    seen = [streaks.stuck("p", n, n, "boom", changes=7) for n in range(1, ERROR_REPEATS + 1)]
    assert seen == [False] * (ERROR_REPEATS - 1) + [True]


def test_a_cluster_change_restarts_the_count() -> None:
    streaks = ErrorStreaks()
    assert not streaks.stuck("p", 1, 1, "boom", changes=0)
    assert not streaks.stuck("p", 2, 2, "boom", changes=1)  # changed: counts from here
    assert not streaks.stuck("p", 3, 3, "boom", changes=1)
    assert streaks.stuck("p", 4, 4, "boom", changes=1)


def test_a_new_message_or_a_rejection_in_between_restarts_the_count() -> None:
    streaks = ErrorStreaks()
    assert not streaks.stuck("p", 1, 1, "boom", changes=0)
    assert not streaks.stuck("p", 2, 2, "bang", changes=0)
    assert not streaks.stuck("p", 3, 3, "bang", changes=0)
    # Attempt 4 was a rejection (the error count restarted), 5 an error again.
    assert not streaks.stuck("p", 5, 1, "bang", changes=0)
    assert not streaks.stuck("p", 6, 2, "bang", changes=0)
    assert streaks.stuck("p", 7, 3, "bang", changes=0)


def test_errors_in_a_row_are_stuck_at_the_limit_whatever_changes() -> None:
    streaks = ErrorStreaks()
    seen = [streaks.stuck("p", n, n, f"boom {n}", changes=n) for n in range(1, ERROR_LIMIT + 1)]
    assert seen == [False] * (ERROR_LIMIT - 1) + [True]


def test_cluster_changes_leave_out_events_and_pending_pods_status() -> None:
    store = Store()
    changes = ClusterChanges()
    store.listeners.append(changes)
    pods = store.type("", "v1", "pods")
    events = store.type("", "v1", "events")
    store.create(pods, pod("p"), namespace="default")
    assert changes.count == 1
    store.create(
        events,
        {
            "metadata": {"name": "p.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "FailedScheduling",
            "message": "boom",
            "type": "Warning",
        },
        namespace="default",
    )
    assert changes.count == 1
    current = store.get(pods, "default", "p")
    current["status"] = {
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]
    }
    store.update(pods, "default", "p", current, subresource="status")
    assert changes.count == 1
    assert store.get(pods, "default", "p")["status"]["conditions"][0]["reason"] == "SchedulerError"
    current = store.get(pods, "default", "p")
    current["metadata"]["labels"] = {"fixed": "yes"}
    store.update(pods, "default", "p", current)
    assert changes.count == 2
