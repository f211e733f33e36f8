"""API objects the benchmarks create: one node builder for all of them."""

from __future__ import annotations

from typing import Any

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def bench_node(
    name: str, index: int, *, cpu: str, memory: str, pods: str = "110"
) -> dict[str, Any]:
    """A Ready node with hostname and zone labels (three zones, round-robin)."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: f"zone-{index % 3}"}},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
