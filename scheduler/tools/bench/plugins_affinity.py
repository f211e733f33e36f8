"""Micro-benchmark: per-pod cost of InterPodAffinity and PodTopologySpread hooks.

Shows whether the column-wise implementation pays at kube-scheduler's
scheduler_perf scale: 5,000 nodes and 10,000 assigned pods. The workloads
follow scheduler_perf's:

- SchedulingPodAntiAffinity: incoming pods labelled ``color: green`` with
  required anti-affinity to ``color: green`` on ``kubernetes.io/hostname``
  (namespaces sched-0 and sched-1). The 10,000 existing pods (namespace
  sched-0) carry the same kind of term for one of 20 colours, two per node,
  so symmetry has to be checked against 20 distinct terms on every node.
- SchedulingPreferredPodAntiAffinity: the same with a preferred (weight 1) term.
- TopologySpreading: incoming pods ``foo: bar`` with a DoNotSchedule zone
  constraint (maxSkew 5) over 3 zones; 10,000 existing ``foo: bar`` pods.
- PreferredTopologySpreading: the same constraint as ScheduleAnyway.

Each measured pod runs PreFilter+Filter (or PreScore+Score+NormalizeScore)
over all nodes, then is added to the table on a feasible node, as the
scheduler's assume step would, so incremental upkeep is part of the figure.
A pure-Python per-node loop doing nothing but reading each node's labels is
printed alongside as the floor of any node-by-node implementation.

Run: ``python -m scheduler.tools.bench.plugins_affinity [--nodes N] [--pods N] [--measure N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from scheduler.api import CycleState, Status
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
COLORS = ["green", *(f"color-{i}" for i in range(19))]


class _NoStores:
    """A handle offering nothing: the benchmark pods need no namespace or owner lookups."""


def _node(i: int) -> dict[str, Any]:
    name = f"node-{i}"
    return {
        "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: f"zone{i % 3 + 1}"}},
        "spec": {},
        "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}},
    }


def _anti_affinity_term(color: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": HOSTNAME,
        "namespaces": ["sched-1", "sched-0"],
    }


def _pod(
    name: str,
    namespace: str,
    labels: dict[str, str],
    spec: dict[str, Any],
    node: str | None = None,
) -> PodInfo:
    full_spec = {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}], **spec}
    if node is not None:
        full_spec["nodeName"] = node
    return PodInfo.from_dict(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": name, "labels": labels},
            "spec": full_spec,
        }
    )


def _cluster(nodes: int, pods: int, make: Callable[[int, str], PodInfo]) -> NodeTable:
    table = NodeTable(capacity=nodes)
    for i in range(nodes):
        table.upsert_node(_node(i))
    for i in range(pods):
        table.add_pod(make(i, f"node-{i % nodes}"))
    return table


def _anti_affinity_existing(nodes: int) -> Callable[[int, str], PodInfo]:
    def make(i: int, node: str) -> PodInfo:
        # Two pods of different colours per node, so the cluster respects its own rules.
        color = COLORS[(i + i // nodes) % len(COLORS)]
        spec = {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_anti_affinity_term(color)]
                }
            }
        }
        return _pod(f"init-{i}", "sched-0", {"color": color, "name": "test"}, spec, node)

    return make


def _spread_existing(i: int, node: str) -> PodInfo:
    return _pod(f"init-{i}", "sched-0", {"foo": "bar"}, {}, node)


def _anti_affinity_pod(i: int, preferred: bool) -> PodInfo:
    term = _anti_affinity_term("green")
    section = (
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term}
            ]
        }
        if preferred
        else {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    )
    labels = {"color": "green", "name": "test"}
    return _pod(f"measured-{i}", "sched-1", labels, {"affinity": {"podAntiAffinity": section}})


def _spread_pod(i: int, when: str) -> PodInfo:
    constraint = {
        "maxSkew": 5,
        "topologyKey": ZONE,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"foo": "bar"}},
    }
    return _pod(
        f"measured-{i}", "sched-0", {"foo": "bar"}, {"topologySpreadConstraints": [constraint]}
    )


def _filter_cycle(plugin: Any, pod: PodInfo, nodes: NodeSet) -> np.ndarray[Any, Any]:
    state = CycleState()
    status = plugin.pre_filter(state, pod, nodes)
    if isinstance(status, Status) and status.is_skip():
        return np.ones(len(nodes), dtype=np.bool_)
    result = plugin.filter(state, pod, nodes)
    if isinstance(result, Status):
        raise RuntimeError(f"filter failed: {result}")
    feasible: np.ndarray[Any, Any] = result.feasible
    return feasible


def _score_cycle(plugin: Any, pod: PodInfo, nodes: NodeSet) -> np.ndarray[Any, Any]:
    state = CycleState()
    status = plugin.pre_score(state, pod, nodes)
    if isinstance(status, Status):
        return np.zeros(len(nodes), dtype=np.int64)
    scores = plugin.score(state, pod, nodes)
    normalized = plugin.normalize_score(state, pod, nodes, scores)
    out: np.ndarray[Any, Any] = scores if normalized is None else normalized
    return out


def _measure(
    table: NodeTable,
    plugin: Any,
    pods: list[PodInfo],
    cycle: Callable[[Any, PodInfo, NodeSet], np.ndarray[Any, Any]],
) -> list[float]:
    """Per-pod wall time (ms) of ``cycle``; each pod is then placed like an assumed pod."""
    times = []
    for pod in pods:
        nodes = table.all_nodes()
        start = time.perf_counter()
        verdict = cycle(plugin, pod, nodes)
        times.append((time.perf_counter() - start) * 1000.0)
        best = int(np.argmax(verdict)) if len(verdict) else 0
        table.add_pod(pod, nodes.names[best])
    return times


def _per_node_floor(table: NodeTable) -> float:
    """ms for a Python loop that only reads each node's labels: a per-node plugin's floor."""
    nodes = table.all_nodes()
    start = time.perf_counter()
    hits = sum(1 for node in nodes if ZONE in node.labels)
    elapsed = (time.perf_counter() - start) * 1000.0
    assert hits == len(nodes)
    return elapsed


def _report(name: str, times: list[float]) -> None:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    print(
        f"{name:62s} mean {statistics.fmean(times):7.3f} ms   "
        f"p50 {statistics.median(times):7.3f} ms   p99 {p99:7.3f} ms"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000, help="existing (assigned) pods")
    parser.add_argument("--measure", type=int, default=200, help="measured pods per workload")
    args = parser.parse_args(argv)
    n, existing, count = args.nodes, args.pods, args.measure
    print(f"{n} nodes, {existing} existing pods, {count} measured pods per workload\n")

    workloads: list[
        tuple[str, Callable[[int, str], PodInfo], Any, Callable[[int], PodInfo], Any]
    ] = [
        (
            "InterPodAffinity  filter  (SchedulingPodAntiAffinity)",
            _anti_affinity_existing(n),
            InterPodAffinity(None, _NoStores()),  # type: ignore[arg-type]
            lambda i: _anti_affinity_pod(i, preferred=False),
            _filter_cycle,
        ),
        (
            "InterPodAffinity  score   (SchedulingPreferredPodAntiAffinity)",
            _anti_affinity_existing(n),
            InterPodAffinity(None, _NoStores()),  # type: ignore[arg-type]
            lambda i: _anti_affinity_pod(i, preferred=True),
            _score_cycle,
        ),
        (
            "PodTopologySpread filter  (TopologySpreading)",
            _spread_existing,
            PodTopologySpread({"defaultingType": "List"}, _NoStores()),  # type: ignore[arg-type]
            lambda i: _spread_pod(i, "DoNotSchedule"),
            _filter_cycle,
        ),
        (
            "PodTopologySpread score   (PreferredTopologySpreading)",
            _spread_existing,
            PodTopologySpread({"defaultingType": "List"}, _NoStores()),  # type: ignore[arg-type]
            lambda i: _spread_pod(i, "ScheduleAnyway"),
            _score_cycle,
        ),
    ]
    floor = None
    for name, make_existing, plugin, make_pod, cycle in workloads:
        table = _cluster(n, existing, make_existing)
        if floor is None:
            floor = _per_node_floor(table)
        # The first cycle builds the incremental indexes; it is reported apart.
        start = time.perf_counter()
        cycle(plugin, make_pod(-1), table.all_nodes())
        warm = (time.perf_counter() - start) * 1000.0
        times = _measure(table, plugin, [make_pod(i) for i in range(count)], cycle)
        _report(name, times)
        print(f"{'':62s} first cycle (cold indexes) {warm:.3f} ms")
    print(f"\nper-node Python loop reading labels only, {n} nodes: {floor:.3f} ms per pod")


if __name__ == "__main__":
    main()
