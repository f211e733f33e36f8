"""What a shadow profile costs its primary, per pod, without the daemon around it.

The default profile decides SchedulingBasic pods (:mod:`.decision`'s nodes
and pods) and assumes each on its node, as the daemon does; after each, the
shadows follow the decision exactly as the daemon runs them
(:meth:`Shadows.follow` with the pod assumed on its node). Timed apart:
the primary's decision and the shadows' step. Shadows compared:

- ``weight``: NodeResourcesBalancedAllocation's weight changed;
- ``args``: NodeResourcesFit with the MostAllocated strategy;
- ``args, full cycle``: the same shadow with derived decisions turned off,
  i.e. a second full cycle per pod (what ``args`` cost before
  :mod:`scheduler.engine.shadow_reuse`).

Run: ``pluggable-scheduler bench shadow [--nodes N] [--init-pods N] [--pods N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

from scheduler.config import load_config
from scheduler.engine.shadow import Shadows
from scheduler.framework.cycle import Algorithm
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import build_profiles
from scheduler.observability.logging import QUIET, configure_logging
from scheduler.state.nodetable import NodeTable
from scheduler.tools.bench.decision import WARMUP, basic_pod, node_object

PRIMARY = "pluggable-scheduler"

MOST_ALLOCATED = {
    "type": "MostAllocated",
    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
}

#: NodeResourcesFit scoring by MostAllocated instead of LeastAllocated.
FIT_MOST_ALLOCATED: dict[str, Any] = {
    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": MOST_ALLOCATED}}]
}

#: (label, the shadow profile's changes, derive decisions)
VARIANTS: list[tuple[str, dict[str, Any], bool]] = [
    (
        "weight",
        {
            "plugins": {
                "score": {"enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 20}]}
            }
        },
        True,
    ),
    (
        "args",
        FIT_MOST_ALLOCATED,
        True,
    ),
    (
        "args, full cycle",
        FIT_MOST_ALLOCATED,
        False,
    ),
]


def run(
    change: dict[str, Any] | None, reuse: bool, nodes: int, init_pods: int, pods: int
) -> tuple[float, float, int]:
    """Mean milliseconds per pod (the primary's decision, the shadows' step) and the
    number of shadow decisions derived from the primary's."""
    table = NodeTable(capacity=max(64, nodes))
    for i in range(nodes):
        table.upsert_node(node_object(i))
    for i in range(init_pods):
        table.add_pod(basic_pod(f"init-{i}", "sched-0", f"node-{i % nodes}"))
    profiles_config: list[dict[str, Any]] = [{"schedulerName": PRIMARY}]
    if change is not None:
        profiles_config.append(
            {"schedulerName": "shadow", **change, "pluggableScheduler": {"shadowOf": PRIMARY}}
        )
    config = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": profiles_config,
        }
    )
    stores = StaticStores()
    profiles = build_profiles(
        config,
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=stores),
    )
    shadows = Shadows()
    scheduling = shadows.configure(profiles, seed=0, nominator=None, reuse=reuse)
    primary = scheduling[PRIMARY]
    algorithm = Algorithm(primary.framework, seed=0, batching=True)
    decide, follow = [], []
    clock = time.process_time
    for i in range(pods + WARMUP):
        pod = basic_pod(f"pod-{i}", "sched-1")
        start = clock()
        result = algorithm.schedule(primary.framework.new_cycle_state(), pod, table)
        decided = clock()
        if result.node is None:
            raise RuntimeError(f"pod {pod.key} did not fit: {result.status}")
        table.add_pod(pod, result.node)  # assumed, as the daemon does before its shadows
        assumed = clock()
        shadows.follow(primary, pod, result, table)
        done = clock()
        if i >= WARMUP:
            decide.append(decided - start)
            follow.append(done - assumed)
    derived = sum(d for d, _, _ in shadows.counts().values())
    return statistics.fmean(decide) * 1000, statistics.fmean(follow) * 1000, derived


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pluggable-scheduler bench shadow",
        description="CPU per pod of a shadow profile's step next to its primary's decision.",
    )
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--init-pods", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    args = parser.parse_args(argv)
    configure_logging("text", QUIET)
    print(
        f"CPU ms per pod, default profile, batching on, {args.nodes} nodes, "
        f"{args.init_pods} existing pods, {args.pods} measured pods (+{WARMUP} warm-up):"
    )
    decision, _, _ = run(None, True, args.nodes, args.init_pods, args.pods)
    print(f"  {'no shadow':<18} decision {decision:6.3f}")
    for label, change, reuse in VARIANTS:
        decision, shadow, derived = run(change, reuse, args.nodes, args.init_pods, args.pods)
        print(
            f"  {label:<18} decision {decision:6.3f}  shadow {shadow:6.3f}  "
            f"(shadow / decision {shadow / decision:.2f}; "
            f"{derived} of {args.pods + WARMUP} derived)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
