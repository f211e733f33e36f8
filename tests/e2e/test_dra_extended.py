"""End to end: extended resources backed by DRA (kube 1.36's DRAExtendedResource), both backends.

A DeviceClass maps an extended resource to its devices. One node advertises the
resource in its allocatable (a device plugin), another publishes devices in a
ResourceSlice. Pods asking for the resource the device-plugin way land on
either; on the DRA node PreBind creates the pod's extended-resource claim and
records the container mappings in ``status.extendedResourceClaimStatus`` - which
a real kube-apiserver validates as well as the emulator.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Cluster, StartDaemon, pod_body, scheduler_config, wait_until
from tests.e2e.test_dra import DRIVER, FINALIZER, RESOURCE_API, Dra, allocated_devices, dra

__all__ = ["dra"]  # the fixture, imported for pytest

EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


async def _mapping_class(dra: Dra, resource: str) -> str:
    name = f"{DRIVER}-extended"
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {
            "extendedResourceName": resource,
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
        },
    }
    created = await dra._create(f"{RESOURCE_API}/deviceclasses", body)
    assert created["spec"].get("extendedResourceName") == resource, "the gate strips it"
    return name


def _gpu_pod(cluster: Cluster, name: str, resource: str) -> dict[str, Any]:
    body = pod_body(name, cluster.scheduler_name)
    resources = body["spec"]["containers"][0]["resources"]
    resources["requests"][resource] = "1"
    resources["limits"] = {resource: "1"}
    return body


async def test_extended_resource_from_a_device_plugin_or_a_dra_claim(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra, claim_controller: None
) -> None:
    resource = f"example.com/{cluster.namespace}"
    plugin_node = await cluster.create_node("plugin")
    await cluster.client.request(
        "PATCH",
        f"/api/v1/nodes/{plugin_node}/status",
        body={"status": {"capacity": {resource: "1"}, "allocatable": {resource: "1"}}},
        content_type="application/strategic-merge-patch+json",
    )
    dra_node = await cluster.create_node("dra")
    await dra.node_slice(dra_node, devices=2)
    klass = await _mapping_class(dra, resource)
    await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    names = ["gpu-0", "gpu-1", "gpu-2"]
    for name in names:
        await cluster.create_raw_pod(_gpu_pod(cluster, name, resource))

    placed: dict[str, str] = {}

    async def all_bound() -> bool:
        nonlocal placed
        placed = {n: node for n, node in (await cluster.placements()).items() if node}
        return len(placed) == len(names)

    await wait_until(all_bound, within=30, message="three pods to be bound", every=0.1)
    assert sorted(placed.values()) == sorted([plugin_node, dra_node, dra_node])
    claims = await dra.claims()
    assert len(claims) == 2, claims
    for name in names:
        pod = await cluster.pod(name)
        status = pod.get("status") or {}
        if placed[name] == plugin_node:
            assert "extendedResourceClaimStatus" not in status
            continue
        recorded = status["extendedResourceClaimStatus"]
        claim = claims[recorded["resourceClaimName"]]
        assert recorded["requestMappings"] == [
            {
                "containerName": "main",
                "resourceName": resource,
                "requestName": "container-0-request-1",
            }
        ]
        meta = claim["metadata"]
        assert meta["generateName"] == f"{name}-extended-resources-"
        assert meta["annotations"][EXTENDED_CLAIM_ANNOTATION] == "true"
        [owner] = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Pod",
            name,
            pod["metadata"]["uid"],
            True,
        )
        assert FINALIZER in meta["finalizers"]
        [request] = claim["spec"]["devices"]["requests"]
        assert request["name"] == "container-0-request-1"
        assert request["exactly"]["deviceClassName"] == klass
        assert request["exactly"]["count"] == 1
        [device] = allocated_devices(claim)
        assert device[:2] == (DRIVER, dra_node)
        [reserved] = claim["status"]["reservedFor"]
        assert (reserved["resource"], reserved["name"]) == ("pods", name)
    # The fourth finds neither a device plugin slot nor a device left.
    await cluster.create_raw_pod(_gpu_pod(cluster, "gpu-3", resource))
    event = await cluster.wait_event("gpu-3", "FailedScheduling", within=15)
    assert event["note"] == (
        f"0/2 nodes are available: 1 Insufficient {resource}, 1 cannot allocate all claims. "
        "still not schedulable, preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )
