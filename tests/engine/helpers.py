"""Builders for the engine's unit tests: pods, nodes, a fake clock, a queue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.api.events import ClusterEventWithHint
from scheduler.api.status import Code, Status
from scheduler.engine.queue import SchedulingQueue
from scheduler.state.pod import PodInfo, QueuedPodInfo


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def raw_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str = "100m",
    priority: int | None = None,
    labels: Mapping[str, str] | None = None,
    gates: Iterable[str] = (),
    node: str = "",
    uid: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "schedulerName": "pluggable-scheduler",
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
    }
    if priority is not None:
        pod_spec["priority"] = priority
    gate_list = [{"name": g} for g in gates]
    if gate_list:
        pod_spec["schedulingGates"] = gate_list
    if node:
        pod_spec["nodeName"] = node
    pod_spec.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "resourceVersion": "1",
            "labels": dict(labels or {}),
        },
        "spec": pod_spec,
        "status": {"phase": "Pending"},
    }


def pod(name: str, **kwargs: Any) -> PodInfo:
    return PodInfo.from_dict(raw_pod(name, **kwargs))


def raw_node(name: str, cpu: str = "4", memory: str = "8Gi", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def priority_key(info: QueuedPodInfo) -> tuple[int, float]:
    """kube's PrioritySort as a key: higher priority first, then earlier timestamp."""
    return (-info.pod.priority, info.timestamp)


class GatesPreEnqueue:
    """PreEnqueue like SchedulingGates, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, pod: PodInfo) -> Status:
        self.calls += 1
        if pod.scheduling_gates:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("gated",), "SchedulingGates")
        return Status.success()


def make_queue(
    clock: FakeClock,
    *,
    events: Mapping[str, Iterable[ClusterEventWithHint]] | None = None,
    pre_enqueue: GatesPreEnqueue | None = None,
    initial_backoff: float = 1.0,
    max_backoff: float = 10.0,
) -> SchedulingQueue:
    return SchedulingQueue(
        priority_key,
        pre_enqueue or GatesPreEnqueue(),
        initial_backoff=initial_backoff,
        max_backoff=max_backoff,
        events=events,
        clock=clock,
    )
