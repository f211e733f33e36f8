"""The what-if API's answer time: pending pods x node templates on a big cluster.

Cluster Autoscaler's maintainers turned down a remote scheduling simulation
because one request per scenario is too slow (autoscaler#1406). This measures
the one request that replaces them all: by default 1,000 pending pods (as pod
objects, in ``--distinct`` shapes: several Deployments' replicas) against 50
node templates on a 5,000-node cluster with 1,000 bound pods, with the
default profile built as the daemon builds it.

What is timed is what ``POST /whatif`` does once the body is read: parse the
JSON, check the request, parse the pods, copy the table with the template
rows, run PreFilter and Filter per distinct pod, and serialize the answer.
The HTTP round trip and the authorization review are not included.

Run: ``pluggable-scheduler bench whatif [--nodes N] [--pods N] [--templates N]
[--distinct N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

import orjson

from scheduler.config import load_config
from scheduler.config.loading import DEFAULT_CONFIG
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import build_profiles
from scheduler.framework.whatif import answer, parse_request, resolve_pods
from scheduler.observability.logging import QUIET, configure_logging
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from scheduler.tools.bench.objects import ZONE, bench_node

PAUSE = "registry.k8s.io/pause:3.10"


def pod_object(name: str, shape: int, node: str | None = None) -> dict[str, Any]:
    """A pod of one of many shapes: requests grow with the shape; some select a zone,
    some tolerate a taint, some spread over zones."""
    cpu = f"{100 * (1 + shape % 40)}m"
    memory = f"{256 * (1 + shape % 16)}Mi"
    spec: dict[str, Any] = {
        "schedulerName": "pluggable-scheduler",
        "containers": [
            {
                "name": "main",
                "image": PAUSE,
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if shape % 5 == 1:
        spec["nodeSelector"] = {ZONE: f"zone-{shape % 3}"}
    if shape % 7 == 2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if shape % 11 == 3:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": f"app-{shape}"}},
            }
        ]
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "labels": {"app": f"app-{shape}"}},
        "spec": spec,
    }


def template(i: int) -> dict[str, Any]:
    """Node groups of many sizes, zones, some tainted; one to three copies each."""
    node = bench_node(f"t{i}", i, cpu=str(2 ** (1 + i % 6)), memory=f"{4 * 2 ** (i % 6)}Gi")
    node["metadata"] = {"labels": node["metadata"]["labels"] | {"group": f"g{i}"}}
    if i % 4 == 0:
        node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
    return {"name": f"group-{i}", "count": 1 + i % 3, "node": node}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pluggable-scheduler bench whatif")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--bound-pods", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=1000, help="pending pods in the request")
    parser.add_argument("--distinct", type=int, default=50, help="distinct pod shapes")
    parser.add_argument("--templates", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    configure_logging("text", QUIET)

    table = NodeTable()
    for i in range(args.nodes):
        table.upsert_node(bench_node(f"node-{i}", i, cpu="4", memory="32Gi"))
    for i in range(args.bound_pods):
        table.add_pod(PodInfo.from_dict(pod_object(f"bound-{i}", i % 7, f"node-{i % args.nodes}")))
    stores = StaticStores()
    profiles = build_profiles(
        load_config(DEFAULT_CONFIG),
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=stores),
    )
    body = orjson.dumps(
        {
            "pods": [pod_object(f"p-{i}", i % args.distinct) for i in range(args.pods)],
            "nodeTemplates": [template(i) for i in range(args.templates)],
        }
    )
    copies = sum(template(i)["count"] for i in range(args.templates))
    print(
        f"what-if: {args.pods} pending pods ({args.distinct} distinct) x {args.templates} "
        f"templates ({copies} template nodes) on {args.nodes} nodes "
        f"({args.bound_pods} bound pods); request {len(body) / 1e6:.1f} MB"
    )
    seconds: list[float] = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        request = parse_request(orjson.loads(body))
        pods = resolve_pods(request, lambda _key: None, list)
        result = answer(request, profiles, table, pods)
        out = orjson.dumps(result.to_json())
        seconds.append(time.perf_counter() - start)
    fits = sum(len(a.pods) for a in result.answers if a.fits)
    print(
        f"  answers: {len(result.answers)}, pods that fit somewhere: {fits}, "
        f"answer {len(out) / 1e6:.1f} MB"
    )
    print(
        f"  time per request: median {statistics.median(seconds):.3f}s, "
        f"best {min(seconds):.3f}s, worst {max(seconds):.3f}s ({args.repeat} runs)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
