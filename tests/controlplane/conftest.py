"""Fixtures for the tests of the real control plane itself.

These tests always use the real kube-apiserver + etcd, whatever backend the rest
of the suite runs on: they test the control plane and kube-scheduler as a peer,
not the scheduler. The binaries are built on first use (see ensure_binaries), so
the tests run on a fresh machine too instead of being skipped.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scheduler.tools.controlplane import (
    ControlPlane,
    KubeControllerManagerProcess,
    RestClient,
    start_control_plane,
)


@pytest.fixture(scope="session")
def real_control_plane(control_plane_binaries: Path) -> Iterator[ControlPlane]:
    """One etcd + kube-apiserver for all tests in this directory."""
    with start_control_plane(bin_dir=control_plane_binaries) as plane:
        yield plane


@pytest.fixture(scope="session")
def kube_controller_manager(
    real_control_plane: ControlPlane,
) -> Iterator[KubeControllerManagerProcess]:
    """kube-controller-manager with the volume controllers, on `real_control_plane`.

    Session-scoped: its controllers only react to objects, so tests that create
    their own uniquely named objects can share one (and its informers stay warm).
    """
    with real_control_plane.run_controller_manager() as process:
        yield process


def node_manifest(name: str, *, cpu: str, labels: dict[str, str]) -> dict[str, Any]:
    """A node as a kubelet would register it: capacity, allocatable and Ready."""
    resources = {"cpu": cpu, "memory": "4Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"capacity": resources, "allocatable": resources, "conditions": [ready()]},
    }


def ready() -> dict[str, str]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "created by the test, no kubelet",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def pod_manifest(
    name: str, namespace: str, *, cpu: str, node_selector: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }
        ],
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


@dataclass
class SpreadScenario:
    """Three 1-CPU nodes and five pods whose placement is fully determined.

    ``fit-0..2`` request 600m CPU each, so no node can hold two of them: they must
    land on three different nodes (NodeResourcesFit). ``pinned`` selects the one
    node labelled ``zone=b`` (NodeAffinity). ``too-big`` requests 2 CPUs and must
    stay pending with ``PodScheduled=False/Unschedulable`` and kube-scheduler's
    "Insufficient cpu" message. The same scenario runs against the real
    kube-apiserver and against the emulator, so the two must agree.
    """

    suffix: str = field(default_factory=lambda: secrets.token_hex(3))

    @property
    def namespace(self) -> str:
        return f"spread-{self.suffix}"

    @property
    def nodes(self) -> list[str]:
        return [f"spread-{self.suffix}-{index}" for index in range(3)]

    fit_pods: tuple[str, ...] = ("fit-0", "fit-1", "fit-2")
    pinned_pod: str = "pinned"
    unschedulable_pod: str = "too-big"

    @property
    def pods(self) -> list[str]:
        return [*self.fit_pods, self.pinned_pod, self.unschedulable_pod]

    def create(self, client: RestClient) -> None:
        client.post(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}},
        )
        for index, name in enumerate(self.nodes):
            zone = "b" if index == 2 else "a"
            client.post("/api/v1/nodes", node_manifest(name, cpu="1", labels={"zone": zone}))
            # kube-apiserver keeps the status given on create, but set it again through
            # the status subresource, as a kubelet does, so the test does not rely on it.
            client.patch_status(f"/api/v1/nodes/{name}", {"status": {"conditions": [ready()]}})
        pods_path = f"/api/v1/namespaces/{self.namespace}/pods"
        for name in self.fit_pods:
            client.post(pods_path, pod_manifest(name, self.namespace, cpu="600m"))
        client.post(
            pods_path,
            pod_manifest(self.pinned_pod, self.namespace, cpu="100m", node_selector={"zone": "b"}),
        )
        client.post(pods_path, pod_manifest(self.unschedulable_pod, self.namespace, cpu="2"))

    def wait_for_outcome(self, client: RestClient, timeout: float = 60.0) -> dict[str, Any]:
        """Wait until every pod is bound or marked unschedulable; return pods by name."""
        deadline = time.monotonic() + timeout
        while True:
            listing = client.get(f"/api/v1/namespaces/{self.namespace}/pods").body
            pods = {pod["metadata"]["name"]: pod for pod in listing["items"]}
            if set(pods) == set(self.pods) and all(_decided(pod) for pod in pods.values()):
                return pods
            if time.monotonic() > deadline:
                summary = {name: _summary(pod) for name, pod in pods.items()}
                raise AssertionError(f"pods not scheduled within {timeout} s: {summary}")
            time.sleep(0.2)

    def check(self, pods: dict[str, Any]) -> None:
        """Assert the one correct outcome (see the class docstring)."""
        fit_nodes = [pods[name]["spec"].get("nodeName") for name in self.fit_pods]
        assert sorted(fit_nodes) == sorted(self.nodes), fit_nodes
        assert pods[self.pinned_pod]["spec"].get("nodeName") == self.nodes[2]
        for name in (*self.fit_pods, self.pinned_pod):
            condition = _pod_scheduled(pods[name])
            assert condition is not None and condition["status"] == "True", condition
        too_big = pods[self.unschedulable_pod]
        assert "nodeName" not in too_big["spec"]
        condition = _pod_scheduled(too_big)
        assert condition is not None, too_big["status"]
        assert condition["status"] == "False"
        assert condition["reason"] == "Unschedulable"
        assert "0/3 nodes are available" in condition["message"], condition["message"]
        assert "3 Insufficient cpu" in condition["message"], condition["message"]

    def wait_for_events(self, client: RestClient, timeout: float = 30.0) -> None:
        """kube-scheduler reports through events.k8s.io/v1: Scheduled / FailedScheduling."""
        expected = {(name, "Scheduled") for name in (*self.fit_pods, self.pinned_pod)}
        expected.add((self.unschedulable_pod, "FailedScheduling"))
        deadline = time.monotonic() + timeout
        while True:
            listing = client.get(f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
            seen = {
                (event["regarding"]["name"], event["reason"]) for event in listing.body["items"]
            }
            if expected <= seen:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"missing events {expected - seen}; seen {seen}")
            time.sleep(0.2)

    def delete(self, client: RestClient) -> None:
        """Remove pods and nodes so later tests on the same API server start clean.

        Bound pods are deleted with a zero grace period: without a kubelet nothing
        would ever confirm a graceful deletion. The namespace is left behind
        (without kube-controller-manager it would stay Terminating); names are
        unique per run.
        """
        for name in self.pods:
            client.delete(
                f"/api/v1/namespaces/{self.namespace}/pods/{name}?gracePeriodSeconds=0",
                check=False,
            )
        for name in self.nodes:
            client.delete(f"/api/v1/nodes/{name}", check=False)


def _pod_scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition.get("type") == "PodScheduled":
            return dict(condition)
    return None


def _decided(pod: dict[str, Any]) -> bool:
    condition = _pod_scheduled(pod)
    return bool(pod["spec"].get("nodeName")) or (
        condition is not None and condition.get("reason") == "Unschedulable"
    )


def _summary(pod: dict[str, Any]) -> dict[str, Any]:
    return {"node": pod["spec"].get("nodeName"), "PodScheduled": _pod_scheduled(pod)}


@pytest.fixture
def spread_scenario() -> SpreadScenario:
    return SpreadScenario()
