"""End to end: pods with volumes, on both backends, with a PV controller completing bindings.

On the real backend kube-controller-manager's PV binder and ephemeral-volume
controller run (``volume_controllers``); on the emulator its emulated volume
controller does the same work. The scheduler's part is kube-scheduler's:
choose a node where every claim can be satisfied, write the PV ``claimRef``
(or the claim's ``selected-node``), wait for the binding, then bind the pod.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.kube.apierrors import NotFound
from tests.e2e.conftest import Cluster, StartDaemon, scheduler_config, wait_until

LOCAL_PROVISIONER = "kubernetes.io/no-provisioner"


class Storage:
    """Cluster-scoped storage objects of one test, deleted afterwards."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.created: list[str] = []

    def name(self, short: str) -> str:
        return f"{self.cluster.namespace}-{short}"

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        created = await self.cluster.client.request("POST", path, body=body)
        assert isinstance(created, dict)
        if "/namespaces/" not in path:
            self.created.append(f"{path}/{created['metadata']['name']}")
        return created

    async def storage_class(self, short: str, provisioner: str = LOCAL_PROVISIONER) -> str:
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": self.name(short)},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        await self.create("/apis/storage.k8s.io/v1/storageclasses", body)
        return self.name(short)

    async def local_pv(self, short: str, node: str, klass: str, size: str = "10Gi") -> str:
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": self.name(short)},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": klass,
                "local": {"path": f"/mnt/{short}"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": [node],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
        }
        await self.create("/api/v1/persistentvolumes", body)
        return self.name(short)

    async def claim(self, name: str, klass: str, size: str = "5Gi") -> None:
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": klass,
                "resources": {"requests": {"storage": size}},
            },
        }
        await self.create(
            f"/api/v1/namespaces/{self.cluster.namespace}/persistentvolumeclaims", body
        )

    async def get_claim(self, name: str) -> dict[str, Any]:
        got = await self.cluster.client.get(
            f"/api/v1/namespaces/{self.cluster.namespace}/persistentvolumeclaims/{name}"
        )
        assert isinstance(got, dict)
        return got

    async def get_pv(self, name: str) -> dict[str, Any]:
        got = await self.cluster.client.get(f"/api/v1/persistentvolumes/{name}")
        assert isinstance(got, dict)
        return got

    async def cleanup(self) -> None:
        for path in reversed(self.created):
            with contextlib.suppress(NotFound):
                await self.cluster.client.request("DELETE", path)


@pytest.fixture
async def storage(cluster: Cluster) -> AsyncIterator[Storage]:
    s = Storage(cluster)
    try:
        yield s
    finally:
        await s.cleanup()


def claim_volume(claim: str) -> dict[str, Any]:
    return {"name": "data", "persistentVolumeClaim": {"claimName": claim}}


def pv_hostname(pv: dict[str, Any]) -> str:
    term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    return str(term["matchExpressions"][0]["values"][0])


async def test_statefulset_claims_bind_to_local_volumes_on_the_chosen_nodes(
    cluster: Cluster, start_daemon: StartDaemon, storage: Storage, pv_controller: None
) -> None:
    nodes = [await cluster.create_node(f"n{i}") for i in range(3)]
    klass = await storage.storage_class("local")
    for i, node in enumerate(nodes):
        await storage.local_pv(f"disk-{i}", node, klass)
    await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    names = [f"db-{i}" for i in range(3)]
    for name in names:
        await storage.claim(f"data-{name}", klass)
        await cluster.create_pod(name, volumes=[claim_volume(f"data-{name}")])
    placed = await cluster.wait_bound(names, within=60)
    await cluster.assert_bound_exactly_once(names)
    used: set[str] = set()
    for name in names:
        claim = await storage.get_claim(f"data-{name}")
        assert claim["status"]["phase"] == "Bound"
        assert claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        pv = await storage.get_pv(claim["spec"]["volumeName"])
        assert pv_hostname(pv) == placed[name]  # the pod went where its volume is
        assert pv["spec"]["claimRef"]["name"] == f"data-{name}"
        used.add(pv["metadata"]["name"])
    assert len(used) == 3  # one disk each: never two pods on one PV


async def test_unsatisfiable_claim_waits_with_kube_reason_then_binds_when_a_pv_appears(
    cluster: Cluster, start_daemon: StartDaemon, storage: Storage, pv_controller: None
) -> None:
    nodes = [await cluster.create_node(f"n{i}") for i in range(2)]
    klass = await storage.storage_class("local")
    await storage.local_pv("small", nodes[0], klass, size="1Gi")  # too small
    await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    await storage.claim("data", klass, size="5Gi")
    await cluster.create_pod("db", volumes=[claim_volume("data")])
    event = await cluster.wait_event("db", "FailedScheduling", within=30)
    assert event["note"].startswith(
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
    )
    await storage.local_pv("big", nodes[1], klass, size="20Gi")
    placed = await cluster.wait_bound(["db"], within=60)
    assert placed["db"] == nodes[1]
    claim = await storage.get_claim("data")
    assert claim["spec"]["volumeName"] == storage.name("big")


async def test_generic_ephemeral_volume_waits_for_its_claim_then_binds(
    cluster: Cluster, start_daemon: StartDaemon, storage: Storage, pv_controller: None
) -> None:
    nodes = [await cluster.create_node(f"n{i}") for i in range(2)]
    klass = await storage.storage_class("local")
    await storage.local_pv("scratch-disk", nodes[1], klass)
    await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    template = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": klass,
            "resources": {"requests": {"storage": "1Gi"}},
        }
    }
    volume = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}
    await cluster.create_pod("runner", volumes=[volume])
    placed = await cluster.wait_bound(["runner"], within=60)
    assert placed["runner"] == nodes[1]  # where the only volume is, not anywhere
    claim = await storage.get_claim("runner-scratch")
    owner = claim["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "Pod" and owner["name"] == "runner" and owner["controller"] is True
    assert claim["spec"]["volumeName"] == storage.name("scratch-disk")


async def test_bad_storage_input_costs_only_its_pod(
    cluster: Cluster, start_daemon: StartDaemon, storage: Storage, pv_controller: None
) -> None:
    await cluster.create_node("n0")
    await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    # A claim naming a class that does not exist binds immediately or never: kube's reason.
    await storage.claim("orphan", storage.name("no-such-class"))
    await cluster.create_pod("stuck", volumes=[claim_volume("orphan")])
    await cluster.create_pod("missing-claim", volumes=[claim_volume("never-created")])
    await cluster.create_pod("fine")
    await cluster.wait_bound(["fine"], within=30)
    stuck = await cluster.wait_event("stuck", "FailedScheduling", within=30)
    assert "pod has unbound immediate PersistentVolumeClaims" in stuck["note"]
    missing = await cluster.wait_event("missing-claim", "FailedScheduling", within=30)
    assert 'persistentvolumeclaim "never-created" not found' in missing["note"]

    async def still_pending() -> bool:
        placed = await cluster.placements()
        return placed["stuck"] == "" and placed["missing-claim"] == ""

    await wait_until(still_pending, within=2)
