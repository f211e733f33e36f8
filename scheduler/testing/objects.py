"""Builders for the Kubernetes objects plugin tests need: nodes, pods, node metrics.

They return plain API objects (dicts, as a cluster file holds them), so the
same values feed the emulator, :class:`~scheduler.state.nodetable.NodeTable`
and :meth:`~scheduler.state.pod.PodInfo.from_dict`::

    make_node("n1", cpu="4", memory="8Gi", labels={"zone": "a"})
    make_pod("web", cpu="500m", annotations={"team": "shop"})
    make_node_metrics("n1", cpu="3500m", memory="6Gi")
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config.models import DEFAULT_SCHEDULER_NAME

Obj = dict[str, Any]


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    extra_allocatable: Mapping[str, str] | None = None,
) -> Obj:
    """A Ready node with ``kubernetes.io/hostname`` set and the given allocatable.

    Examples:
        >>> gpus = {"nvidia.com/gpu": "2"}
        >>> node = make_node("n1", cpu="8", labels={"zone": "a"}, extra_allocatable=gpus)
        >>> node["metadata"]["labels"]
        {'kubernetes.io/hostname': 'n1', 'zone': 'a'}
        >>> node["status"]["allocatable"]
        {'cpu': '8', 'memory': '8Gi', 'pods': '110', 'nvidia.com/gpu': '2'}
    """
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra_allocatable or {})}
    spec: Obj = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "100m",
    memory: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    node_name: str | None = None,
    priority: int | None = None,
    spec: Mapping[str, Any] | None = None,
) -> Obj:
    """A one-container pod for our scheduler (``schedulerName: pluggable-scheduler``).

    ``node_name`` makes it an already-running pod; ``spec`` entries are merged
    into the pod spec (tolerations, affinity, ...).

    Examples:
        >>> pod = make_pod("web", cpu="500m", labels={"app": "web"},
        ...                spec={"tolerations": [{"key": "gpu", "operator": "Exists"}]})
        >>> pod["spec"]["containers"][0]["resources"]
        {'requests': {'cpu': '500m'}}
        >>> pod["spec"]["tolerations"], pod["status"]["phase"]
        ([{'key': 'gpu', 'operator': 'Exists'}], 'Pending')
    """
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: Obj = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    if requests:
        container["resources"] = {"requests": requests}
    pod_spec: Obj = {"schedulerName": scheduler_name, "containers": [container]}
    if node_name:
        pod_spec["nodeName"] = node_name
    if priority is not None:
        pod_spec["priority"] = priority
    pod_spec.update(spec or {})
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": pod_spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def rfc3339(when: dt.datetime | None = None) -> str:
    """A Kubernetes timestamp (UTC, second precision) for ``when`` (default: now)."""
    when = when or dt.datetime.now(dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_node_metrics(
    node: str,
    *,
    cpu: str = "0",
    memory: str = "0",
    age_seconds: float = 0.0,
    window: str = "20s",
) -> Obj:
    """A ``metrics.k8s.io/v1beta1`` NodeMetrics as metrics-server reports it.

    ``age_seconds`` back-dates ``timestamp`` (the end of the sampling window),
    to test how a plugin treats stale metrics.
    """
    stamp = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=age_seconds)
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": node},
        "timestamp": rfc3339(stamp),
        "window": window,
        "usage": {"cpu": cpu, "memory": memory},
    }
