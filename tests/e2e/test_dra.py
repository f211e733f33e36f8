"""End to end: Dynamic Resource Allocation (resource.k8s.io/v1), on both backends.

The scheduler's DynamicResources plugin picks devices from node-local
ResourceSlices for a pod's ResourceClaims, writes the allocation and the pod's
``reservedFor`` entry at PreBind, then binds the pod. A ResourceClaim controller
does the rest of kube's work: on the real backend kube-controller-manager's
``resourceclaim-controller`` (``dra_controllers``), on the emulator the emulated
one (``claim_controller`` runs whichever applies). It creates each pod's claims
from their ResourceClaimTemplates and, when a pod is deleted, drops it from its
claims' ``reservedFor`` and deallocates a claim nobody reserves any more, so its
devices can go to a pending pod.

The expected FailedScheduling texts are what kube-scheduler 1.36.3 wrote for
the same objects on a real kube-apiserver (run with kube-controller-manager's
resourceclaim-controller), not what this scheduler prints.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.kube.apierrors import NotFound
from tests.e2e.conftest import (
    Cluster,
    RunningDaemon,
    StartDaemon,
    pod_body,
    scheduler_config,
    wait_until,
)

RESOURCE_API = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.example.com"
GPU_CLASS = "gpu.example.com"
DEVICES_PER_NODE = 4
FINALIZER = "resource.kubernetes.io/delete-protection"

#: kube-scheduler 1.36.3's message when no node has a free device left: the
#: Filter rejection of every node, DynamicResources' PostFilter (nothing of the
#: pod's to deallocate) and DefaultPreemption (devices cannot be preempted).
NO_DEVICES_LEFT = (
    "0/{n} nodes are available: {n} cannot allocate all claims. still not schedulable, "
    "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
)
#: kube-scheduler 1.36.3's message for a request naming a DeviceClass that does
#: not exist: PreFilter rejects the pod before any claim is allocated, so the
#: PostFilter has no claim to deallocate.
NO_SUCH_CLASS = (
    "0/{n} nodes are available: request {request}: device class {klass} does not exist. "
    "no new claims to deallocate, preemption: 0/{n} nodes are available: "
    "{n} Preemption is not helpful for scheduling."
)
#: kube-scheduler 1.36.3's message for a class selector failing at run time: an
#: error from Filter ends the cycle (no FitError, no PostFilter), with the
#: framework's prefix and the allocator's wording.
CEL_RUNTIME_ERROR = (
    'running "DynamicResources" filter plugin: class {klass}: selector #0: '
    "CEL runtime error: no such key: x"
)

Device = tuple[str, str, str]  # (driver, pool, device)


class Dra:
    """DRA objects of one test; the cluster-scoped ones are deleted afterwards."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.created: list[str] = []

    @property
    def namespaced(self) -> str:
        return f"{RESOURCE_API}/namespaces/{self.cluster.namespace}"

    async def _create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        created = await self.cluster.client.request("POST", path, body=body)
        assert isinstance(created, dict)
        if "/namespaces/" not in path:
            self.created.append(f"{path}/{created['metadata']['name']}")
        return created

    async def device_class(self, name: str, expression: str) -> str:
        """A DeviceClass with one CEL selector.

        Class names are cluster-wide and ``gpu.example.com`` is every test's: one
        a failed earlier run left behind is replaced, not reused.
        """
        with contextlib.suppress(NotFound):
            await self.cluster.client.request("DELETE", f"{RESOURCE_API}/deviceclasses/{name}")
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }
        await self._create(f"{RESOURCE_API}/deviceclasses", body)
        return name

    async def gpu_class(self) -> str:
        return await self.device_class(GPU_CLASS, f'device.driver == "{DRIVER}"')

    async def node_slice(self, node: str, devices: int = DEVICES_PER_NODE) -> None:
        """The node's own pool (named after it) of ``gpu-0`` .. ``gpu-<devices-1>``."""
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": f"gpu-{i}",
                        "attributes": {"model": {"string": "a100"}, "index": {"int": i}},
                        "capacity": {"memory": {"value": "40Gi"}},
                    }
                    for i in range(devices)
                ],
            },
        }
        await self._create(f"{RESOURCE_API}/resourceslices", body)

    @staticmethod
    def _claim_spec(klass: str, request: str) -> dict[str, Any]:
        return {"devices": {"requests": [{"name": request, "exactly": {"deviceClassName": klass}}]}}

    async def template(self, name: str, klass: str, request: str = "gpu") -> str:
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"spec": self._claim_spec(klass, request)},
        }
        await self._create(f"{self.namespaced}/resourceclaimtemplates", body)
        return name

    async def claim(self, name: str, klass: str, request: str = "gpu") -> str:
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": self._claim_spec(klass, request),
        }
        await self._create(f"{self.namespaced}/resourceclaims", body)
        return name

    async def get_claim(self, name: str) -> dict[str, Any]:
        got = await self.cluster.client.get(f"{self.namespaced}/resourceclaims/{name}")
        assert isinstance(got, dict)
        return got

    async def claims(self) -> dict[str, dict[str, Any]]:
        items, _ = await self.cluster.client.list(f"{self.namespaced}/resourceclaims")
        return {c["metadata"]["name"]: c for c in items}

    async def pod_claim(self, pod: dict[str, Any], pod_claim: str = "gpu") -> dict[str, Any]:
        """The claim the ResourceClaim controller made for ``pod`` (its resourceClaimStatuses)."""
        statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
        names = [s.get("resourceClaimName") for s in statuses if s.get("name") == pod_claim]
        assert len(names) == 1 and names[0], (pod["metadata"]["name"], statuses)
        return await self.get_claim(str(names[0]))

    async def cleanup(self) -> None:
        for path in reversed(self.created):
            with contextlib.suppress(NotFound):
                await self.cluster.client.request("DELETE", path)


@pytest.fixture
async def dra(cluster: Cluster) -> AsyncIterator[Dra]:
    d = Dra(cluster)
    try:
        yield d
    finally:
        await d.cleanup()


def claim_pod(
    cluster: Cluster, name: str, *, template: str | None = None, claim: str | None = None
) -> dict[str, Any]:
    """A pod with one pod claim ``gpu`` (from ``template`` or the existing ``claim``)
    that its container uses."""
    source = {"resourceClaimTemplateName": template} if template else {"resourceClaimName": claim}
    body = pod_body(name, cluster.scheduler_name, resourceClaims=[{"name": "gpu", **source}])
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return body


def node_selector(node: str) -> dict[str, Any]:
    """The allocation's node selector for a node-local device, as kube writes it."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"nodeSelectorTerms": [term]}


def allocated_devices(claim: dict[str, Any]) -> list[Device]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return [(r["driver"], r["pool"], r["device"]) for r in results]


def reserved_for(claim: dict[str, Any]) -> list[tuple[str, str, str]]:
    refs = (claim.get("status") or {}).get("reservedFor") or []
    return [(r.get("resource", ""), r.get("name", ""), r.get("uid", "")) for r in refs]


def assert_no_device_twice(claims: dict[str, dict[str, Any]]) -> None:
    owners: dict[Device, list[str]] = {}
    for name, claim in claims.items():
        for device in allocated_devices(claim):
            owners.setdefault(device, []).append(name)
    shared = {device: names for device, names in owners.items() if len(names) > 1}
    assert not shared, f"devices allocated to more than one claim: {shared}"


async def assert_node_local_allocation(dra: Dra, pod: dict[str, Any]) -> Device:
    """The pod's own claim holds one device of the pod's node, pinned there, reserved for it."""
    name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
    claim = await dra.pod_claim(pod)
    allocation = claim["status"]["allocation"]
    [result] = allocation["devices"]["results"]
    assert result["request"] == "gpu", claim
    assert (result["driver"], result["pool"]) == (DRIVER, node), (name, result)
    assert result["device"] in {f"gpu-{i}" for i in range(DEVICES_PER_NODE)}, result
    assert allocation["nodeSelector"] == node_selector(node), (name, allocation)
    assert reserved_for(claim) == [("pods", name, pod["metadata"]["uid"])], claim["status"]
    assert FINALIZER in (claim["metadata"].get("finalizers") or []), claim["metadata"]
    return (result["driver"], result["pool"], result["device"])


async def failed_scheduling_notes(cluster: Cluster, pod: str) -> set[str]:
    return {e.get("note", "") for e in await cluster.events_for(pod, "FailedScheduling")}


async def test_fifty_pods_share_forty_node_local_gpus_then_deleted_pods_free_theirs(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra, claim_controller: None
) -> None:
    nodes = [await cluster.create_node(f"n{i}") for i in range(10)]
    for node in nodes:
        await dra.node_slice(node)
    klass = await dra.gpu_class()
    template = await dra.template("one-gpu", klass)
    running = await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    names = [f"job-{i:02d}" for i in range(50)]
    for name in names:
        await cluster.create_raw_pod(claim_pod(cluster, name, template=template))

    placed: dict[str, str] = {}

    async def forty_bound() -> bool:
        nonlocal placed
        placed = {n: node for n, node in (await cluster.placements()).items() if node}
        return len(placed) >= 40

    await wait_until(forty_bound, within=60, message="40 pods to be bound", every=0.1)
    pending = [n for n in names if n not in placed]
    assert len(pending) == 10, placed
    expected = NO_DEVICES_LEFT.format(n=10)
    for name in pending:
        event = await cluster.wait_event(name, "FailedScheduling", within=30)
        assert event["type"] == "Warning"
        assert await failed_scheduling_notes(cluster, name) == {expected}, name
    assert len({n for n, node in (await cluster.placements()).items() if node}) == 40
    await cluster.assert_bound_exactly_once(sorted(placed))
    pods = await cluster.pods()
    for name in placed:
        await assert_node_local_allocation(dra, pods[name])
    claims = await dra.claims()
    assert len(claims) == 50  # one per pod, the pending ones' unallocated
    assert sum(1 for c in claims.values() if allocated_devices(c)) == 40
    assert_no_device_twice(claims)

    # Deleting ten bound pods frees their devices (the ResourceClaim controller
    # releases and deallocates their claims); the ten pending pods take them.
    gone = sorted(placed)[:10]
    gone_claims = [(await dra.pod_claim(pods[n]))["metadata"]["name"] for n in gone]
    for name in gone:
        await cluster.client.request(
            "DELETE",
            f"/api/v1/namespaces/{cluster.namespace}/pods/{name}",
            query={"gracePeriodSeconds": "0"},
        )
    refilled = await cluster.wait_bound(pending, within=60)
    await cluster.assert_bound_exactly_once(pending)

    async def released() -> bool:
        claims = await dra.claims()
        return all(
            name not in claims
            or not (allocated_devices(claims[name]) or reserved_for(claims[name]))
            for name in gone_claims
        )

    await wait_until(released, within=30, message="the deleted pods' claims to be released")
    pods = await cluster.pods()
    assert sorted(n for n, p in pods.items() if p["spec"].get("nodeName")) == sorted(
        set(placed) - set(gone) | set(pending)
    )
    for name in pending:
        assert pods[name]["spec"]["nodeName"] == refilled[name]
        await assert_node_local_allocation(dra, pods[name])
    claims = await dra.claims()
    assert sum(1 for c in claims.values() if allocated_devices(c)) == 40
    assert_no_device_twice(claims)
    assert not running.task.done()


async def test_a_shared_claim_puts_its_pods_on_one_node_and_is_allocated_once(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra, claim_controller: None
) -> None:
    nodes = [await cluster.create_node(f"n{i}") for i in range(3)]
    for node in nodes:
        await dra.node_slice(node)
    klass = await dra.gpu_class()
    shared = await dra.claim("shared-gpu", klass)
    await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    names = [f"worker-{i}" for i in range(3)]
    for name in names:
        await cluster.create_raw_pod(claim_pod(cluster, name, claim=shared))
    placed = await cluster.wait_bound(names, within=30)
    await cluster.assert_bound_exactly_once(names)
    [node] = set(placed.values())
    claim = await dra.get_claim(shared)
    [(driver, pool, device)] = allocated_devices(claim)
    assert (driver, pool) == (DRIVER, node) and device.startswith("gpu-"), claim["status"]
    assert claim["status"]["allocation"]["nodeSelector"] == node_selector(node)
    pods = await cluster.pods()
    assert sorted(reserved_for(claim)) == sorted(
        ("pods", n, pods[n]["metadata"]["uid"]) for n in names
    )
    assert list(await dra.claims()) == [shared]  # no claim of their own


async def pod_with_missing_class(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra
) -> tuple[str, str, dict[str, Any]]:
    """Pod ``trainer`` whose claim names a DeviceClass not created yet: (class, claim, event)."""
    nodes = [await cluster.create_node(f"n{i}") for i in range(2)]
    for node in nodes:
        await dra.node_slice(node)
    late = f"{cluster.namespace}-late.example.com"
    claim = await dra.claim("gpu", late)
    await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    await cluster.create_raw_pod(claim_pod(cluster, "trainer", claim=claim))
    event = await cluster.wait_event("trainer", "FailedScheduling", within=30)
    return late, claim, event


async def test_a_missing_device_class_holds_the_pod_until_it_is_created(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra, claim_controller: None
) -> None:
    late, claim, event = await pod_with_missing_class(cluster, start_daemon, dra)
    assert f"request gpu: device class {late} does not exist." in event["note"]
    assert event["type"] == "Warning"
    assert (await cluster.placements())["trainer"] == ""
    await dra.device_class(late, f'device.driver == "{DRIVER}"')
    placed = await cluster.wait_bound(["trainer"], within=30)
    await cluster.assert_bound_exactly_once(["trainer"])
    [(driver, pool, _)] = allocated_devices(await dra.get_claim(claim))
    assert (driver, pool) == (DRIVER, placed["trainer"])


async def test_a_missing_device_class_is_reported_in_kube_scheduler_words(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra, claim_controller: None
) -> None:
    late, _, event = await pod_with_missing_class(cluster, start_daemon, dra)
    assert event["note"] == NO_SUCH_CLASS.format(n=2, request="gpu", klass=late)


async def pod_with_broken_class(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra
) -> tuple[str, RunningDaemon, dict[str, Any]]:
    """Pod ``doomed`` whose class selector fails on every device: (class, daemon, event).

    The apiserver accepts the selector (attributes of an unknown domain are an
    empty map to CEL); evaluating it fails: the map has no key "x". Every device
    is free, so the allocator does evaluate it (kube's skips devices already
    allocated before looking at selectors).
    """
    nodes = [await cluster.create_node(f"n{i}") for i in range(2)]
    for node in nodes:
        await dra.node_slice(node)
    broken = await dra.device_class(
        f"{cluster.namespace}-broken", 'device.attributes["other.example.com"].x == 1'
    )
    await dra.claim("broken-gpu", broken)
    running = await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    await cluster.create_raw_pod(claim_pod(cluster, "doomed", claim="broken-gpu"))
    event = await cluster.wait_event("doomed", "FailedScheduling", within=30)
    return broken, running, event


async def test_a_class_selector_failing_at_run_time_is_reported_and_scheduling_goes_on(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra, claim_controller: None
) -> None:
    broken, running, event = await pod_with_broken_class(cluster, start_daemon, dra)
    assert f"class {broken}: selector #0: CEL runtime error: no such key: x" in event["note"]
    assert event["type"] == "Warning"
    # The error ends that pod's cycle only: the next pod is scheduled.
    await dra.claim("good-gpu", await dra.gpu_class())
    await cluster.create_raw_pod(claim_pod(cluster, "fine", claim="good-gpu"))
    placed = await cluster.wait_bound(["fine"], within=30)
    await cluster.assert_bound_exactly_once(["fine"])
    [(_, pool, _)] = allocated_devices(await dra.get_claim("good-gpu"))
    assert pool == placed["fine"]
    assert not running.task.done()
    assert (await cluster.placements())["doomed"] == ""
    assert not allocated_devices(await dra.get_claim("broken-gpu"))


async def test_a_class_selector_failing_at_run_time_is_reported_in_kube_scheduler_words(
    cluster: Cluster, start_daemon: StartDaemon, dra: Dra, claim_controller: None
) -> None:
    broken, _, event = await pod_with_broken_class(cluster, start_daemon, dra)
    assert event["note"] == CEL_RUNTIME_ERROR.format(klass=broken)
