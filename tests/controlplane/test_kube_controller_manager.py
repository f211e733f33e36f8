"""kube-controller-manager's volume controllers on the real control plane.

The scheduler's volume handling (VolumeBinding, generic ephemeral volumes) relies
on two controllers it does not implement: the PersistentVolume binder, which binds
claims and completes a binding the scheduler started by writing a PV's
``spec.claimRef``, and the ephemeral-volume controller, which creates a pod's
``<pod>-<volume>`` claim. These tests pin down what those controllers do, so the
emulator's equivalent can be checked against them.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scheduler.tools.controlplane import (
    VOLUME_CONTROLLERS,
    ControlPlane,
    KubeControllerManagerProcess,
    RestClient,
    run_kube_controller_manager,
)

STORAGE_CLASS = "manual"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


@dataclass
class Volumes:
    """Uniquely named volume objects of one test, deleted afterwards.

    Every PV carries the test's label and every claim selects it, so a claim can
    only ever bind to this test's volumes even though the session's tests share
    one apiserver and one binder.
    """

    client: RestClient
    namespace: str
    suffix: str = field(default_factory=lambda: secrets.token_hex(3))
    pvs: list[str] = field(default_factory=list)

    @property
    def label(self) -> dict[str, str]:
        return {"volume-test": self.suffix}

    def create_pv(
        self, name: str, size: str, claim_ref: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": f"{name}-{self.suffix}", "labels": self.label}
        spec: dict[str, Any] = {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": STORAGE_CLASS,
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": f"/tmp/{metadata['name']}"},
        }
        if claim_ref is not None:
            spec["claimRef"] = claim_ref
            # What kube-scheduler's VolumeBinding PreBind writes along with the claimRef.
            metadata["annotations"] = {BOUND_BY_CONTROLLER: "yes"}
        pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": metadata, "spec": spec}
        body: dict[str, Any] = self.client.post("/api/v1/persistentvolumes", pv).body
        self.pvs.append(metadata["name"])
        return body

    def claim_spec(self, size: str) -> dict[str, Any]:
        return {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": STORAGE_CLASS,
            "selector": {"matchLabels": self.label},
            "resources": {"requests": {"storage": size}},
        }

    def create_pvc(self, name: str, size: str) -> dict[str, Any]:
        pvc = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": self.claim_spec(size),
        }
        body: dict[str, Any] = self.client.post(self.pvcs_path, pvc).body
        return body

    @property
    def pvcs_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims"

    def delete(self) -> None:
        """Claims first (their pods are gone with the namespace), then the volumes."""
        for pvc in self.client.get(self.pvcs_path).body["items"]:
            self.client.delete(f"{self.pvcs_path}/{pvc['metadata']['name']}", check=False)
        for name in self.pvs:
            self.client.delete(f"/api/v1/persistentvolumes/{name}", check=False)


@pytest.fixture
def volumes(real_control_plane: ControlPlane) -> Iterator[Volumes]:
    client = real_control_plane.client()
    # An Immediate class without a provisioner: static PVs only, bound on sight.
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "Immediate",
    }
    response = client.post("/apis/storage.k8s.io/v1/storageclasses", storage_class, check=False)
    assert response.status in (201, 409), response.body
    created = Volumes(client, namespace="")
    created.namespace = f"volumes-{created.suffix}"
    real_control_plane.ensure_namespace(created.namespace)
    try:
        yield created
    finally:
        created.delete()


def wait_for(
    client: RestClient,
    path: str,
    done: Callable[[dict[str, Any]], bool],
    controller_manager: KubeControllerManagerProcess,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Poll `path` until `done` holds; on timeout show the object and the controllers' log."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(path, check=False)
        if response.status == 200 and done(response.body):
            result: dict[str, Any] = response.body
            return result
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{path} not as expected within {timeout:.0f} s: {response.body}\n"
                f"kube-controller-manager running={controller_manager.running()}, log:\n"
                f"{controller_manager.log_tail()}"
            )
        time.sleep(0.2)


def bound(pvc: dict[str, Any]) -> bool:
    return bool(pvc.get("status", {}).get("phase") == "Bound")


def test_binder_binds_a_claim_to_the_matching_volume(
    real_control_plane: ControlPlane,
    kube_controller_manager: KubeControllerManagerProcess,
    volumes: Volumes,
) -> None:
    client = real_control_plane.client()
    pv = volumes.create_pv("pv", "1Gi")
    pvc = volumes.create_pvc("data", "1Gi")

    pvc = wait_for(client, f"{volumes.pvcs_path}/data", bound, kube_controller_manager)
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pvc["metadata"]["annotations"][BIND_COMPLETED] == "yes"
    pv_path = f"/api/v1/persistentvolumes/{pv['metadata']['name']}"
    pv = wait_for(
        client, pv_path, lambda pv: pv["status"]["phase"] == "Bound", kube_controller_manager
    )
    claim_ref = pv["spec"]["claimRef"]
    assert (claim_ref["namespace"], claim_ref["name"], claim_ref["uid"]) == (
        volumes.namespace,
        "data",
        pvc["metadata"]["uid"],
    )
    # The binder chose this volume itself, and says so.
    assert pv["metadata"]["annotations"][BOUND_BY_CONTROLLER] == "yes"


def test_binder_completes_a_binding_prebound_by_the_scheduler(
    real_control_plane: ControlPlane,
    kube_controller_manager: KubeControllerManagerProcess,
    volumes: Volumes,
) -> None:
    client = real_control_plane.client()
    pvc = volumes.create_pvc("data", "1Gi")
    # kube-scheduler's PreBind: the chosen PV's claimRef names the claim, uid included.
    claim_ref = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": volumes.namespace,
        "name": "data",
        "uid": pvc["metadata"]["uid"],
    }
    chosen = volumes.create_pv("chosen", "2Gi", claim_ref=claim_ref)
    # A smaller volume that also fits: the binder's own best match, had the claim
    # not been pre-bound, so binding to `chosen` shows the claimRef decided it.
    volumes.create_pv("smaller", "1Gi")

    pvc = wait_for(client, f"{volumes.pvcs_path}/data", bound, kube_controller_manager)
    assert pvc["spec"]["volumeName"] == chosen["metadata"]["name"]
    assert pvc["metadata"]["annotations"][BIND_COMPLETED] == "yes"
    assert pvc["status"]["capacity"]["storage"] == "2Gi"
    pv = client.get(f"/api/v1/persistentvolumes/{chosen['metadata']['name']}").body
    assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    smaller = client.get(f"/api/v1/persistentvolumes/smaller-{volumes.suffix}").body
    assert "claimRef" not in smaller["spec"]
    assert smaller["status"]["phase"] == "Available"


def test_ephemeral_volume_controller_creates_the_pods_claim(
    real_control_plane: ControlPlane,
    kube_controller_manager: KubeControllerManagerProcess,
    volumes: Volumes,
) -> None:
    client = real_control_plane.client()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": volumes.namespace},
        "spec": {
            "schedulerName": "nobody",  # stays pending: only the controller acts on it
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
            "volumes": [
                {
                    "name": "scratch",
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "metadata": {"labels": {"from": "template"}},
                            "spec": volumes.claim_spec("1Gi"),
                        }
                    },
                }
            ],
        },
    }
    created = client.post(f"/api/v1/namespaces/{volumes.namespace}/pods", pod).body

    pvc = wait_for(
        client, f"{volumes.pvcs_path}/web-scratch", lambda pvc: True, kube_controller_manager
    )
    owners = pvc["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o["uid"], o.get("controller")) for o in owners] == [
        ("Pod", "web", created["metadata"]["uid"], True)
    ]
    assert pvc["metadata"]["labels"] == {"from": "template"}
    assert pvc["spec"]["storageClassName"] == STORAGE_CLASS
    assert pvc["spec"]["resources"]["requests"]["storage"] == "1Gi"
    pod_now = client.get(f"/api/v1/namespaces/{volumes.namespace}/pods/web").body
    assert "nodeName" not in pod_now["spec"]


def test_controller_manager_is_loopback_only_and_stopped_by_pid_when_the_body_fails(
    real_control_plane: ControlPlane, control_plane_binaries: Path
) -> None:
    pid = 0
    with (
        pytest.raises(RuntimeError, match="test body failed"),
        run_kube_controller_manager(
            real_control_plane.kubeconfig, bin_dir=control_plane_binaries
        ) as process,
    ):
        pid = process.pid
        assert process.running()
        assert process.controllers == VOLUME_CONTROLLERS
        assert 0 < process.startup_seconds < 90
        listening = Path("/proc/net/tcp").read_text()
        port = f":{process.secure_port:04X} "
        lines = [line.split() for line in listening.splitlines()[1:] if port in line]
        # state 0A is LISTEN; 0100007F is 127.0.0.1
        assert [fields[1] for fields in lines if fields[3] == "0A"] == [
            f"0100007F:{process.secure_port:04X}"
        ]
        raise RuntimeError("test body failed")
    assert pid and not _alive(pid), f"kube-controller-manager {pid} survived"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"
