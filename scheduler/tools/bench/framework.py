"""The framework's own overhead per pod: 5,000 nodes, 10 no-op plugins.

The plugins do (almost) nothing, so what is measured is the runner itself:
building candidate sets, dispatching hooks, timing them, validating and
summing score arrays, picking the best node and running Reserve/Permit. The
target is <= 100 µs per pod, so that plugin work, not the framework, dominates
a real scheduling cycle.

``--api-version`` picks what the no-op plugins declare: 2.x plugins are
handed the read-only views (one wrapper call and, per candidate set, one
view object), 1.x plugins the framework's own objects; both are measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scheduler.api import PLUGIN_API_VERSION, CycleState, Nodes, Pod, hookimpl
from scheduler.config.points import ExtensionPoint
from scheduler.framework.cycle import Algorithm
from scheduler.framework.pluginmanager import POINT_HOOKS, SchedulerPluginManager
from scheduler.framework.runtime import Framework
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo


class NoOp:
    """Implements every scheduling-cycle hook and does nothing in each."""

    def __init__(self) -> None:
        self._zeros: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> None:
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> None:
        return None

    @hookimpl
    def pre_score(self, state: CycleState, pod: Pod, nodes: Nodes) -> None:
        return None

    @hookimpl
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> npt.NDArray[np.int64]:
        if len(self._zeros) != len(nodes):
            self._zeros = np.zeros(len(nodes), dtype=np.int64)
        return self._zeros

    @hookimpl
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    @hookimpl
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None


def build(
    num_nodes: int, num_plugins: int, api_version: str = PLUGIN_API_VERSION
) -> tuple[Algorithm, NodeTable]:
    table = NodeTable()
    for i in range(num_nodes):
        table.upsert_node(
            {
                "metadata": {"name": f"node-{i}", "labels": {"zone": f"z{i % 3}"}},
                "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
            }
        )
    manager = SchedulerPluginManager()
    names = [f"NoOp{i}" for i in range(num_plugins)]
    plugin_class = type("NoOp", (NoOp,), {"api_version": api_version})
    for name in names:
        manager.register(plugin_class(), name=name)
    order = {p: [(n, 1) for n in names] if p in POINT_HOOKS else [] for p in ExtensionPoint}
    return Algorithm(Framework("bench", manager, order), seed=0), table


def run(
    num_nodes: int, num_plugins: int, pods: int, api_version: str = PLUGIN_API_VERSION
) -> dict[str, float]:
    algorithm, table = build(num_nodes, num_plugins, api_version)
    pod = PodInfo.from_dict(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }
    )
    framework = algorithm.framework
    samples = []
    for i in range(pods + 50):
        start = time.perf_counter()
        state = framework.new_cycle_state()
        result = algorithm.schedule(state, pod, table)
        assert result.node is not None
        framework.run_reserve(state, pod, result.node)
        framework.run_permit(state, pod, result.node)
        if i >= 50:  # warm-up
            samples.append(time.perf_counter() - start)
    samples.sort()
    return {
        "nodes": num_nodes,
        "plugins": num_plugins,
        "pods": pods,
        "mean_us": statistics.fmean(samples) * 1e6,
        "p50_us": samples[len(samples) // 2] * 1e6,
        "p99_us": samples[int(len(samples) * 0.99)] * 1e6,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pluggable-scheduler bench framework")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--plugins", type=int, default=10)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument(
        "--api-version",
        default=PLUGIN_API_VERSION,
        help=f"plugin API the no-op plugins declare (default {PLUGIN_API_VERSION}; 1.3: 1.x path)",
    )
    args = parser.parse_args(argv)
    r = run(args.nodes, args.plugins, args.pods, args.api_version)
    print(
        f"framework overhead per pod, {r['nodes']:.0f} nodes, {r['plugins']:.0f} no-op "
        f"API {args.api_version} plugins (PreFilter, Filter, PreScore, Score, Reserve, Permit), "
        f"{r['pods']:.0f} pods:"
    )
    print(f"  mean {r['mean_us']:.1f} µs   p50 {r['p50_us']:.1f} µs   p99 {r['p99_us']:.1f} µs")
    print(f"  target <= 100 µs: {'met' if r['p50_us'] <= 100 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
