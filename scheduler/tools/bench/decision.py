"""Decision time per pod with the default profile at scheduler_perf scale.

What is timed is one :meth:`Algorithm.schedule` call: PreFilter, Filter,
PreScore, Score, NormalizeScore and the pick, i.e. what kube-scheduler's
``scheduling_algorithm_duration_seconds`` measures. The profile is the
default one, built through :func:`build_profiles` from the default config
with every installed default plugin, exactly as the daemon builds it.

Workloads follow kube-scheduler's ``test/integration/scheduler_perf``:

- SchedulingBasic: nodes as ``node-default.yaml`` (4 cpu, 32Gi, 110 pods),
  labelled with a hostname and one of three zones; pods as
  ``pod-default.yaml`` (one pause container requesting and limited to 100m
  cpu and 500Mi memory, container port 80).
- HeteroBasic: SchedulingBasic with every pod distinct (its own labels,
  cpu and memory requests), so reuse across identical pods never applies.
- SchedulingPodAntiAffinity: pods as ``pod-with-pod-anti-affinity.yaml``
  (labelled ``color: green``, required anti-affinity to ``color: green`` on
  ``kubernetes.io/hostname`` over namespaces sched-0 and sched-1, same
  requests), so every pod needs a node of its own.

The existing pods (1,000 by default, namespace sched-0) are placed first,
one per node, as scheduler_perf's init pods end up. Each measured pod
(namespace sched-1) is then added to the table on the node chosen for it,
as the scheduler's assume step does, so the cluster fills as in a real run.

Run: ``python -m scheduler.tools.bench.decision [--nodes N] [--init-pods N]
[--pods N] [--workload NAME] [--percentage P] [--clock wall|cpu] [--cprofile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.config import load_config
from scheduler.config.loading import DEFAULT_CONFIG
from scheduler.daemon.allocator import keep_freed_memory
from scheduler.framework.cycle import Algorithm
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import Profile, build_profiles
from scheduler.observability.logging import QUIET, configure_logging
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from scheduler.tools.bench.objects import HOSTNAME, bench_node

PAUSE = "registry.k8s.io/pause:3.10"
WARMUP = 20


def node_object(i: int) -> dict[str, Any]:
    """scheduler_perf's node template: 4 cpu, 32Gi, 110 pods."""
    return bench_node(f"node-{i}", i, cpu="4", memory="32Gi")


def _container(cpu: str = "100m", memory: str = "500Mi") -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory}
    return {
        "name": "pause",
        "image": PAUSE,
        "ports": [{"containerPort": 80}],
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }


def _pod(
    name: str,
    namespace: str,
    node: str | None,
    spec: dict[str, Any],
    labels: dict[str, str] | None = None,
) -> PodInfo:
    """A pod of ``spec`` for the bench's scheduler, bound to ``node`` if given."""
    spec = {**spec, "schedulerName": "pluggable-scheduler"}
    if node is not None:
        spec["nodeName"] = node
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"{namespace}-{name}"}
    if labels:
        metadata["labels"] = labels
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    return PodInfo.from_dict(raw)


def basic_pod(name: str, namespace: str, node: str | None = None) -> PodInfo:
    return _pod(name, namespace, node, {"containers": [_container()]})


def anti_affinity_pod(name: str, namespace: str, node: str | None = None) -> PodInfo:
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": HOSTNAME,
        "namespaces": ["sched-1", "sched-0"],
    }
    spec = {
        "containers": [_container()],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    }
    return _pod(name, namespace, node, spec, {"color": "green"})


def hetero_pod(name: str, namespace: str, node: str | None = None) -> PodInfo:
    """A SchedulingBasic pod made unlike every other: its own labels and cpu/memory.

    The number in the name picks the sizes (50m..249m cpu, 100Mi..999Mi memory,
    spread so that neighbours differ) and the labels, so no two pods share a
    batching signature: every decision filters and scores from scratch.
    """
    number = int(name.rsplit("-", 1)[-1])
    cpu = f"{50 + (number * 37) % 200}m"
    memory = f"{100 + (number * 53) % 900}Mi"
    labels = {"app": f"hetero-{number}", "size": f"{cpu}-{memory}"}
    return _pod(name, namespace, node, {"containers": [_container(cpu, memory)]}, labels)


PodFactory = Callable[[str, str, "str | None"], PodInfo]
WORKLOADS: dict[str, PodFactory] = {
    "SchedulingBasic": basic_pod,
    "HeteroBasic": hetero_pod,
    "SchedulingPodAntiAffinity": anti_affinity_pod,
}


@dataclass
class Setup:
    table: NodeTable
    profile: Profile
    algorithm: Algorithm


def build(num_nodes: int, init_pods: int, make_pod: PodFactory, batching: bool = False) -> Setup:
    """The default profile over ``num_nodes`` nodes with ``init_pods`` pods placed.

    ``batching`` turns on the daemon's reuse of node-local results across
    identical pods; off, every decision filters and scores every node.
    """
    table = NodeTable(capacity=max(64, num_nodes))
    for i in range(num_nodes):
        table.upsert_node(node_object(i))
    for i in range(init_pods):
        node = f"node-{i % num_nodes}"
        table.add_pod(make_pod(f"init-{i}", "sched-0", node))
    stores = StaticStores()
    config = load_config(DEFAULT_CONFIG)
    profiles = build_profiles(
        config,
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=stores),
    )
    profile = profiles["pluggable-scheduler"]
    return Setup(table, profile, Algorithm(profile.framework, seed=0, batching=batching))


#: ``--percentage`` value for "as the profile says" (the default config leaves it unset).
PROFILE_PERCENTAGE = "profile"
#: What a decision is timed with: wall time, or CPU time of the deciding thread,
#: which other processes on a shared machine do not inflate.
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}


def run_pods(
    setup: Setup,
    pods: list[PodInfo],
    percentage: int | str | None = PROFILE_PERCENTAGE,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Decide each pod, assume it onto its node; returns the decision times (seconds).

    ``percentage``: the percentageOfNodesToScore to decide with (None: unset),
    or the profile's own.
    """
    table, algorithm = setup.table, setup.algorithm
    framework = setup.profile.framework
    if isinstance(percentage, str):  # PROFILE_PERCENTAGE
        percentage = setup.profile.resolved.percentage_of_nodes_to_score
    samples = []
    for pod in pods:
        state = framework.new_cycle_state()
        start = clock()
        result = algorithm.schedule(state, pod, table, percentage)
        samples.append(clock() - start)
        if result.node is None:
            raise RuntimeError(f"pod {pod.key} did not fit: {result.status}")
        table.add_pod(pod, result.node)
    return samples


@dataclass
class Figures:
    workload: str
    nodes: int
    init_pods: int
    pods: int
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float

    def line(self) -> str:
        return (
            f"{self.workload:<26} mean {self.mean_ms:7.3f} ms  p50 {self.p50_ms:7.3f} ms  "
            f"p90 {self.p90_ms:7.3f} ms  p99 {self.p99_ms:7.3f} ms  "
            f"(~{1000 / self.mean_ms:,.0f} decisions/s)"
        )


def _percentile(sorted_samples: list[float], q: float) -> float:
    index = min(len(sorted_samples) - 1, max(0, round(q * (len(sorted_samples) - 1))))
    return sorted_samples[index]


def measure(
    workload: str,
    num_nodes: int,
    init_pods: int,
    pods: int,
    batching: bool = False,
    percentage: int | str | None = PROFILE_PERCENTAGE,
    clock: str = "wall",
) -> Figures:
    make_pod = WORKLOADS[workload]
    setup = build(num_nodes, init_pods, make_pod, batching)
    measured = [make_pod(f"pod-{i}", "sched-1", None) for i in range(pods + WARMUP)]
    # As the daemon does after its first sync (Daemon.start_informers): the
    # cluster's objects move to the permanent generation, so that a collection
    # triggered inside a decision does not scan 65,000 nodes' worth of them.
    gc.collect()
    gc.freeze()
    try:
        samples = run_pods(setup, measured, percentage, CLOCKS[clock])[WARMUP:]
    finally:
        gc.unfreeze()
    ms = sorted(s * 1000 for s in samples)
    return Figures(
        workload + (" (batched)" if batching else ""),
        num_nodes,
        init_pods,
        len(ms),
        statistics.fmean(ms),
        _percentile(ms, 0.50),
        _percentile(ms, 0.90),
        _percentile(ms, 0.99),
    )


def profile_workload(
    workload: str, num_nodes: int, init_pods: int, pods: int, top: int = 25
) -> str:
    """cProfile of the decisions of ``pods`` pods; the top entries by own time."""
    make_pod = WORKLOADS[workload]
    setup = build(num_nodes, init_pods, make_pod)
    measured = [make_pod(f"pod-{i}", "sched-1", None) for i in range(pods)]
    gc.collect()
    gc.freeze()  # as in measure()
    profiler = cProfile.Profile()
    profiler.enable()
    run_pods(setup, measured)
    profiler.disable()
    gc.unfreeze()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def _percentage_arg(value: str) -> int | str | None:
    if value in (PROFILE_PERCENTAGE, "unset"):
        return None if value == "unset" else value
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 100:
        raise argparse.ArgumentTypeError(
            f"--percentage must be profile, unset or 0..100, not {value!r}"
        )
    return number


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scheduler.tools.bench.decision",
        description="Decision time per pod (Algorithm.schedule) with the default profile.",
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--init-pods", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=1000, help="measured pods per workload")
    parser.add_argument(
        "--workload", choices=[*WORKLOADS, "all"], default="all", help="default: all"
    )
    parser.add_argument(
        "--cprofile",
        action="store_true",
        help="also print a cProfile of each workload's decisions, unbatched (top by own time)",
    )
    parser.add_argument(
        "--batching",
        choices=["off", "on", "both"],
        default="both",
        help="reuse node-local results across identical pods, as the daemon does (default: both)",
    )
    parser.add_argument(
        "--percentage",
        type=_percentage_arg,
        default=PROFILE_PERCENTAGE,
        metavar="{profile,unset,0..100}",
        help="percentageOfNodesToScore to decide with (default: the profile's, unset)",
    )
    parser.add_argument(
        "--clock",
        choices=list(CLOCKS),
        default="wall",
        help="time decisions by wall clock or by the deciding thread's CPU time, which "
        "other processes on a shared machine do not inflate (default: wall)",
    )
    args = parser.parse_args(argv)
    configure_logging("text", QUIET)
    keep_freed_memory()  # as `pluggable-scheduler run` does
    names = list(WORKLOADS) if args.workload == "all" else [args.workload]
    print(
        f"decision time per pod (PreFilter..pick), default profile, {args.nodes} nodes, "
        f"{args.init_pods} existing pods, {args.pods} measured pods (+{WARMUP} warm-up), "
        f"percentageOfNodesToScore {'unset' if args.percentage is None else args.percentage}, "
        f"{args.clock} time:"
    )
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.batching]
    for name in names:
        for batching in modes:
            figures = measure(
                name, args.nodes, args.init_pods, args.pods, batching, args.percentage, args.clock
            )
            print("  " + figures.line())
    if args.cprofile:
        for name in names:
            print(f"\ncProfile of {name}:")
            print(profile_workload(name, args.nodes, args.init_pods, args.pods))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
