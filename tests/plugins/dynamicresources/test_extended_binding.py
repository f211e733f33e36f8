"""Extended resources backed by DRA through the binding cycle: the real daemon on the emulator.

PreBind creates the special claim in the API (kube's generateName, annotation
and owner reference), writes its allocation and ``reservedFor``, and patches
the pod's ``status.extendedResourceClaimStatus`` - which the emulator must
accept. A claim left by an earlier attempt is deleted by PostFilter.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from scheduler.plugins.dynamicresources.claims import FINALIZER
from scheduler.plugins.dynamicresources.extended import EXTENDED_CLAIM_ANNOTATION
from scheduler.testing.cluster import load_cluster_file

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "dra-extended-cluster.yaml"
RESOURCE = "resource.k8s.io/v1"
GPU = "example.com/gpu"


def _claims(cluster: Any) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in cluster.list(RESOURCE, "ResourceClaim", "default")}


async def test_prebind_creates_the_claim_and_records_the_mappings(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    cluster = await emulated_cluster(cluster_file=EXAMPLE)
    sched = await running_scheduler(cluster)
    pods = ["train-0", "web-0", "web-1", "web-2", "web-3"]
    placed = await sched.wait_for_placements(pods)
    message = await sched.wait_for_failure("big")
    assert message.startswith(
        f"0/3 nodes are available: 1 Insufficient {GPU}, 2 cannot allocate all claims. "
        "still not schedulable, preemption: "
    )
    claims = _claims(cluster)
    # node-a's device plugin has two; the four slice GPUs went through claims.
    on_dra = [key for key, node in placed.items() if node != "node-a"]
    assert sorted(placed.values()).count("node-a") + len(on_dra) == len(pods)
    assert len(claims) == len(on_dra)
    for key in on_dra:
        name = key.split("/", 1)[1]
        pod = cluster.pod(key)
        assert pod is not None
        status = pod["status"]["extendedResourceClaimStatus"]
        claim = claims[status["resourceClaimName"]]
        meta = claim["metadata"]
        assert meta["generateName"] == f"{name}-extended-resources-"
        assert meta["name"].startswith(meta["generateName"])
        assert meta["annotations"] == {EXTENDED_CLAIM_ANNOTATION: "true"}
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": name,
                "uid": pod["metadata"]["uid"],
                "controller": True,
            }
        ]
        assert FINALIZER in meta["finalizers"]
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}
        ]
        results = claim["status"]["allocation"]["devices"]["results"]
        assert {r["pool"] for r in results} == {placed[key]}
        requests = claim["spec"]["devices"]["requests"]
        if name == "train-0":
            # The init container (index 0) reuses the main container's two GPUs.
            assert [r["name"] for r in requests] == ["container-1-request-1"]
            assert requests[0]["exactly"]["count"] == 2
            assert status["requestMappings"] == [
                {"containerName": c, "resourceName": GPU, "requestName": "container-1-request-1"}
                for c in ("main", "warmup")
            ]
        else:
            assert requests == [
                {
                    "name": "container-0-request-1",
                    "exactly": {
                        "deviceClassName": "gpu.example.com",
                        "allocationMode": "ExactCount",
                        "count": 1,
                    },
                }
            ]
            assert status["requestMappings"] == [
                {"containerName": "main", "resourceName": GPU, "requestName": requests[0]["name"]}
            ]
    for key, node in placed.items():
        if node == "node-a":
            pod = cluster.pod(key)
            assert pod is not None
            assert "extendedResourceClaimStatus" not in pod["status"]
    # No two pods got the same device.
    devices = [
        (r["pool"], r["device"])
        for c in claims.values()
        for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert len(devices) == len(set(devices))


async def test_a_claim_left_by_an_earlier_attempt_is_deleted(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    objects = [
        o
        for o in load_cluster_file(EXAMPLE)
        if o["kind"] != "Pod" or o["metadata"]["name"] == "web-0"
    ]
    cluster = await emulated_cluster(objects)
    pod = cluster.pod("default/web-0")
    assert pod is not None
    stale = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {
            "name": "web-0-extended-resources-old",
            "namespace": "default",
            "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "web-0",
                    "uid": pod["metadata"]["uid"],
                    "controller": True,
                }
            ],
            "finalizers": [FINALIZER],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "container-0-request-1",
                        "exactly": {"deviceClassName": "gpu.example.com", "count": 1},
                    }
                ]
            }
        },
    }
    cluster.create(stale)
    sched = await running_scheduler(cluster)
    message = await sched.wait_for_failure("web-0")
    assert message == (
        "0/3 nodes are available: 3 cannot schedule extended resource claim. "
        "deletion of ResourceClaim completed, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
    deadline = time.monotonic() + 10
    while cluster.get(RESOURCE, "ResourceClaim", stale["metadata"]["name"], "default"):
        assert time.monotonic() < deadline, "the stale claim was not deleted"
        await asyncio.sleep(0.05)


async def test_claim_plus_device_plugin_resource_fails_prebind_like_kube(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    """kube 1.36.3's quirk, kept: a pod with a claim whose extended resource a device
    plugin covers gets a special claim without requests, which PreBind creates and
    allocates (nothing) before failing on its empty container mappings."""
    objects = [
        o for o in load_cluster_file(EXAMPLE) if o["kind"] not in ("Pod", "Node", "ResourceSlice")
    ]
    node_a = next(o for o in load_cluster_file(EXAMPLE) if o["metadata"]["name"] == "node-a")
    slice_a = {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": "node-a-gpu.example.com"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "node-a",
            "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }
    user_claim = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": "mine", "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "schedulerName": "pluggable-scheduler",
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "mine"}],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {
                        "requests": {GPU: "1"},
                        "limits": {GPU: "1"},
                        "claims": [{"name": "gpu"}],
                    },
                }
            ],
        },
    }
    cluster = await emulated_cluster([*objects, node_a, slice_a, user_claim, pod])
    sched = await running_scheduler(cluster)
    message = await sched.wait_for_failure("p")
    assert message.endswith(
        "nil or empty request mappings, no update of pod default/p ExtendedResourceClaimStatus"
    )
