"""The emulated PV controller, driven over HTTP as the scheduler and users drive a cluster.

Each flow the scheduler's volume binding depends on: ephemeral volume claims,
completing a binding the scheduler started, Immediate binding, and provisioning
for WaitForFirstConsumer and Immediate classes. Off unless asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from scheduler.simulation.emulator import EmulatorServer

from .kube_helpers import api_client, get, pod, post, raw

Obj = dict[str, Any]
NS = "default"
CLAIMS = f"/api/v1/namespaces/{NS}/persistentvolumeclaims"
VOLUMES = "/api/v1/persistentvolumes"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    async with (
        EmulatorServer(volume_controller=True) as server,
        await api_client(server, tmp_path) as connected,
    ):
        yield connected


async def until(
    api: client.ApiClient, path: str, check: Callable[[Obj], bool], wait: float = 5.0
) -> Obj:
    """The object at ``path`` once ``check`` holds for it."""
    async with asyncio.timeout(wait):
        while True:
            status, answer, _ = await raw(api, "GET", path)
            if status == 200 and check(answer):
                result: Obj = answer
                return result
            await asyncio.sleep(0.02)


async def settle() -> None:
    """Long enough for a running controller to have acted several times over."""
    await asyncio.sleep(0.3)


def storage_class(
    name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner", **more: Any
) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **more,
    }


def volume(
    name: str, size: str, cls: str = "", labels: dict[str, str] | None = None, **spec: Any
) -> Obj:
    body: Obj = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": f"/data/{name}"},
        **spec,
    }
    if cls:
        body["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": body,
    }


def claim(name: str, size: str, cls: str | None = None, **spec: Any) -> Obj:
    body: Obj = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
        **spec,
    }
    if cls is not None:
        body["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": body,
    }


def node(name: str, zone: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": f"host-{name}",
                "topology.kubernetes.io/zone": zone,
            },
        },
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def with_ephemeral(name: str) -> Obj:
    body = pod(name, scheduler="pluggable-scheduler")
    body["spec"]["volumes"] = [
        {
            "name": "scratch",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "metadata": {"labels": {"app": "db"}, "annotations": {"note": "tmp"}},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "fast",
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            },
        }
    ]
    return body


def bound(obj: Obj) -> bool:
    return (obj.get("status") or {}).get("phase") == "Bound"


async def test_off_by_default(tmp_path: Path) -> None:
    async with EmulatorServer() as server, await api_client(server, tmp_path) as api:
        await post(api, CLASSES, storage_class("manual", "Immediate"))
        await post(api, VOLUMES, volume("pv-1", "1Gi", "manual"))
        await post(api, CLAIMS, claim("c", "1Gi", "manual"))
        await post(api, f"/api/v1/namespaces/{NS}/pods", with_ephemeral("p"))
        await settle()
        assert (await get(api, f"{VOLUMES}/pv-1"))["status"]["phase"] == "Pending"
        pending = await get(api, f"{CLAIMS}/c")
        assert pending["status"]["phase"] == "Pending" and "volumeName" not in pending["spec"]
        status, _, _ = await raw(api, "GET", f"{CLAIMS}/p-scratch")
        assert status == 404


async def test_ephemeral_volume_claims_are_created_for_their_pod(api: client.ApiClient) -> None:
    created = await post(api, f"/api/v1/namespaces/{NS}/pods", with_ephemeral("db"))
    made = await until(api, f"{CLAIMS}/db-scratch", lambda _: True)
    assert made["metadata"]["labels"] == {"app": "db"}
    assert made["metadata"]["annotations"] == {"note": "tmp"}
    assert made["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "db",
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert made["spec"]["storageClassName"] == "fast"
    assert made["spec"]["resources"]["requests"]["storage"] == "1Gi"


async def test_a_claim_of_that_name_owned_by_someone_else_is_left_alone(
    api: client.ApiClient,
) -> None:
    mine = await post(api, CLAIMS, claim("web-scratch", "5Gi", "other"))
    await post(api, f"/api/v1/namespaces/{NS}/pods", with_ephemeral("web"))
    await settle()
    after = await get(api, f"{CLAIMS}/web-scratch")
    assert after["metadata"]["resourceVersion"] == mine["metadata"]["resourceVersion"]
    assert "ownerReferences" not in after["metadata"]


async def test_binding_started_by_the_scheduler_is_completed(api: client.ApiClient) -> None:
    await post(api, CLASSES, storage_class("local", "WaitForFirstConsumer"))
    await post(api, VOLUMES, volume("local-1", "10Gi", "local"))
    await until(api, f"{VOLUMES}/local-1", lambda v: v["status"]["phase"] == "Available")
    pvc = await post(api, CLAIMS, claim("data", "5Gi", "local"))
    await settle()
    assert "volumeName" not in (await get(api, f"{CLAIMS}/data"))["spec"], "WaitForFirstConsumer"
    # What VolumeBinding's PreBind writes for a static volume.
    pv = await get(api, f"{VOLUMES}/local-1")
    pv["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": NS,
        "name": "data",
        "uid": pvc["metadata"]["uid"],
    }
    pv["metadata"]["annotations"] = {"pv.kubernetes.io/bound-by-controller": "yes"}
    status, answer, _ = await raw(api, "PUT", f"{VOLUMES}/local-1", body=pv)
    assert status == 200, answer
    done = await until(api, f"{CLAIMS}/data", bound)
    assert done["spec"]["volumeName"] == "local-1"
    assert done["metadata"]["annotations"] == {
        "pv.kubernetes.io/bind-completed": "yes",
        "pv.kubernetes.io/bound-by-controller": "yes",
    }
    assert done["status"]["capacity"] == {"storage": "10Gi"}
    assert done["status"]["accessModes"] == ["ReadWriteOnce"]
    assert (await until(api, f"{VOLUMES}/local-1", bound))["spec"]["claimRef"]["name"] == "data"


async def test_immediate_claims_bind_to_the_smallest_matching_volume(
    api: client.ApiClient,
) -> None:
    await post(api, CLASSES, storage_class("manual", "Immediate"))
    await post(api, VOLUMES, volume("big", "5Gi", "manual", {"tier": "fast"}))
    await post(api, VOLUMES, volume("small", "1Gi", "manual", {"tier": "fast"}))
    await post(api, VOLUMES, volume("slow", "2Gi", "manual", {"tier": "slow"}))
    await post(api, VOLUMES, volume("fits", "2Gi", "manual", {"tier": "fast"}))
    await post(api, VOLUMES, volume("other-class", "2Gi", "", {"tier": "fast"}))
    await post(
        api, VOLUMES, volume("rox", "2Gi", "manual", {"tier": "fast"}, accessModes=["ReadOnlyMany"])
    )
    for name in ("big", "small", "slow", "fits", "other-class", "rox"):
        await until(api, f"{VOLUMES}/{name}", lambda v: v["status"]["phase"] == "Available")
    selector = {"matchLabels": {"tier": "fast"}}
    await post(api, CLAIMS, claim("c", "1500Mi", "manual", selector=selector))
    done = await until(api, f"{CLAIMS}/c", bound)
    assert done["spec"]["volumeName"] == "fits"
    assert done["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    fits = await until(api, f"{VOLUMES}/fits", bound)
    assert fits["spec"]["claimRef"]["uid"] == done["metadata"]["uid"]
    assert fits["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
    # No class on either side: a class-less volume.
    await post(api, CLAIMS, claim("plain", "1Gi"))
    assert (await until(api, f"{CLAIMS}/plain", bound))["spec"]["volumeName"] == "other-class"
    # A claim nothing fits stays Pending, and binds once a volume shows up.
    await post(api, CLAIMS, claim("huge", "50Gi", "manual"))
    await settle()
    assert (await get(api, f"{CLAIMS}/huge"))["status"]["phase"] == "Pending"
    await post(api, VOLUMES, volume("huge-1", "64Gi", "manual"))
    assert (await until(api, f"{CLAIMS}/huge", bound))["spec"]["volumeName"] == "huge-1"


async def test_wait_for_first_consumer_provisions_on_the_selected_node(
    api: client.ApiClient,
) -> None:
    for name, zone in (("n1", "zone-a"), ("n2", "zone-b")):
        await post(api, "/api/v1/nodes", node(name, zone))
    await post(api, CLASSES, storage_class("csi", "WaitForFirstConsumer", "csi.example.com"))
    zoned = storage_class(
        "csi-zoned",
        "WaitForFirstConsumer",
        "csi.example.com",
        reclaimPolicy="Retain",
        allowedTopologies=[
            {
                "matchLabelExpressions": [
                    {"key": "topology.kubernetes.io/zone", "values": ["zone-a", "zone-b"]}
                ]
            }
        ],
    )
    await post(api, CLASSES, zoned)
    pvc = await post(api, CLAIMS, claim("data", "3Gi", "csi"))
    zoned_pvc = await post(api, CLAIMS, claim("zoned", "1Gi", "csi-zoned"))
    await settle()
    volumes = await get(api, VOLUMES)
    assert volumes["items"] == [], "nothing is provisioned before the scheduler picks a node"
    for name, target in (("data", "n2"), ("zoned", "n1")):
        current = await get(api, f"{CLAIMS}/{name}")
        current["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": target}
        status, answer, _ = await raw(api, "PUT", f"{CLAIMS}/{name}", body=current)
        assert status == 200, answer

    done = await until(api, f"{CLAIMS}/data", bound)
    pv_name = f"pvc-{pvc['metadata']['uid']}"
    assert done["spec"]["volumeName"] == pv_name
    annotations = done["metadata"]["annotations"]
    assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert annotations["volume.kubernetes.io/storage-provisioner"] == "csi.example.com"
    pv = await until(api, f"{VOLUMES}/{pv_name}", bound)
    assert pv["metadata"]["annotations"] == {"pv.kubernetes.io/provisioned-by": "csi.example.com"}
    spec = pv["spec"]
    assert spec["capacity"] == {"storage": "3Gi"}
    assert spec["storageClassName"] == "csi"
    assert spec["persistentVolumeReclaimPolicy"] == "Delete"
    assert spec["csi"] == {"driver": "csi.example.com", "volumeHandle": pv_name}
    assert spec["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert spec["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["host-n2"]}
            ]
        }
    ]

    await until(api, f"{CLAIMS}/zoned", bound)
    zoned_pv = await until(api, f"{VOLUMES}/pvc-{zoned_pvc['metadata']['uid']}", bound)
    assert zoned_pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert zoned_pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}
            ]
        }
    ]


async def test_immediate_classes_with_a_provisioner_provision_at_once(
    api: client.ApiClient,
) -> None:
    await post(api, CLASSES, storage_class("net", "Immediate", "csi.example.com"))
    pvc = await post(api, CLAIMS, claim("c", "2Gi", "net"))
    done = await until(api, f"{CLAIMS}/c", bound)
    assert done["spec"]["volumeName"] == f"pvc-{pvc['metadata']['uid']}"
    pv = await get(api, f"{VOLUMES}/{done['spec']['volumeName']}")
    assert "nodeAffinity" not in pv["spec"]


async def test_a_claim_of_a_missing_class_binds_like_immediate_and_is_never_provisioned(
    api: client.ApiClient,
) -> None:
    """kube's binder: a class that does not exist is not delayed binding."""
    await post(api, CLAIMS, claim("lost", "1Gi", "ghost"))
    await post(api, CLASSES, storage_class("net", "Immediate", "csi.example.com"))
    await post(api, CLAIMS, claim("fine", "1Gi", "net"))
    await until(api, f"{CLAIMS}/fine", bound)
    assert (await get(api, f"{CLAIMS}/lost"))["status"]["phase"] == "Pending"
    await post(api, VOLUMES, volume("ghost-disk", "2Gi", "ghost"))
    done = await until(api, f"{CLAIMS}/lost", bound)
    assert done["spec"]["volumeName"] == "ghost-disk"
