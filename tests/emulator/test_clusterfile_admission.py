"""Cluster files are snapshots of admitted state: loaded as they are, never re-admitted."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from scheduler.errors import UserError
from scheduler.simulation.emulator import EmulatorServer
from scheduler.simulation.emulator.clusterfile import parse_cluster_text

from .kube_helpers import pod, raw

SNAPSHOT = """
apiVersion: v1
kind: List
items:
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: system-node-critical}
  value: 2000001000
  preemptionPolicy: PreemptLowerPriority
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: high}
  value: 1000
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    capacity: {cpu: 4, memory: 8Gi, pods: "110"}
- apiVersion: v1
  kind: Pod
  metadata: {name: resolved, namespace: team}
  spec:
    priorityClassName: high
    priority: 1000
    preemptionPolicy: Never
    nodeName: n1
    containers: [{name: c, image: i, resources: {requests: {cpu: 500m}}}]
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: gone-class, namespace: team}
  spec:
    priorityClassName: deleted-since
    priority: 42
    containers: [{name: c, image: i}]
"""


def pods(server: EmulatorServer) -> dict[str, Any]:
    rt = server.store.type("", "v1", "pods")
    return {key[1]: entry.obj for key, entry in server.store.collection(rt).objects.items()}


def test_snapshot_pods_keep_their_priority() -> None:
    server = EmulatorServer(parse_cluster_text(SNAPSHOT, "snapshot.yaml"))
    loaded = pods(server)
    assert loaded["resolved"]["spec"]["priority"] == 1000
    assert loaded["resolved"]["spec"]["preemptionPolicy"] == "Never"
    assert loaded["resolved"]["status"]["phase"] == "Running"
    # Not re-admitted: a class that no longer exists is no reason to refuse the snapshot.
    assert loaded["gone-class"]["spec"]["priority"] == 42
    node = server.store.get(server.store.type("", "v1", "nodes"), "", "n1")
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}


def test_snapshot_objects_are_still_decoded_and_validated() -> None:
    text = (
        SNAPSHOT
        + """
- apiVersion: v1
  kind: Pod
  metadata: {name: broken, namespace: team}
  spec:
    containers: [{name: c, image: i, resources: {requests: {cpu: lots}}}]
"""
    )
    with pytest.raises(UserError, match="quantities must match the regular expression"):
        EmulatorServer(parse_cluster_text(text, "snapshot.yaml"))


async def test_without_validation_stores_what_it_is_given(
    api_client: client.ApiClient, namespace: str, emulator: EmulatorServer
) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    body = pod("lax")
    body["spec"]["priority"] = "high"
    body["spec"]["tolerations"] = "x"
    status, _, _ = await raw(api_client, "POST", path, body=body)
    assert status == 400
    with emulator.without_validation():
        status, created, _ = await raw(api_client, "POST", path, body=body)
    assert status == 201, created
    assert created["spec"]["priority"] == "high" and created["spec"]["tolerations"] == "x"
    status, _, _ = await raw(api_client, "POST", path, body={**body, "metadata": {"name": "x"}})
    assert status == 400, "validation is back after the block"
