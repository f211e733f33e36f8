"""Dynamic resource allocation in the emulator, driven over HTTP as clients drive a cluster.

resource.k8s.io/v1 objects answer with kube-apiserver's defaults, 422 causes and
status rules; the claim controller creates claims from templates, releases
reservations of pods that are gone or done, deallocates and deletes what a pod
no longer needs; cluster files load the four kinds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from scheduler.errors import UserError
from scheduler.simulation.emulator import EmulatorServer
from scheduler.simulation.emulator.claimcontroller import ClaimsByPod, generate_name
from scheduler.simulation.emulator.clusterfile import load_cluster_file, parse_cluster_text

from .kube_helpers import api_client, get, pod, post, raw

Obj = dict[str, Any]
NS = "default"
RES = "/apis/resource.k8s.io/v1"
CLAIMS = f"{RES}/namespaces/{NS}/resourceclaims"
TEMPLATES = f"{RES}/namespaces/{NS}/resourceclaimtemplates"
SLICES = f"{RES}/resourceslices"
CLASSES = f"{RES}/deviceclasses"
PODS = f"/api/v1/namespaces/{NS}/pods"
FINALIZER = "resource.kubernetes.io/delete-protection"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-cluster.yaml"


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    async with (
        EmulatorServer(claim_controller=True) as server,
        await api_client(server, tmp_path) as connected,
    ):
        yield connected


async def refused(api: client.ApiClient, method: str, path: str, body: Obj) -> list[str]:
    """The ``field: message`` causes of a 422 answer."""
    status, answer, _ = await raw(api, method, path, body=body)
    assert status == 422, answer
    return [f"{c['field']}: {c['message']}" for c in answer["details"]["causes"]]


async def until(
    api: client.ApiClient, path: str, check: Callable[[Obj | None], bool], wait: float = 5.0
) -> Obj | None:
    """The object at ``path`` (None once it is gone) as soon as ``check`` holds for it."""
    async with asyncio.timeout(wait):
        while True:
            status, answer, _ = await raw(api, "GET", path)
            current = answer if status == 200 else None
            if check(current):
                return current
            await asyncio.sleep(0.02)


def claim(name: str, requests: list[Obj], **devices: Any) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": requests, **devices}},
    }


def gpu(name: str = "gpu", **exactly: Any) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": "gpu.example.com", **exactly}}


def device_slice(name: str, devices: list[Obj], **spec: Any) -> Obj:
    body: Obj = {"driver": "gpu.example.com", "pool": {"name": "node-1", "resourceSliceCount": 1}}
    body.update(spec)
    body["devices"] = devices
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": body,
    }


def template(template_name: str, **meta: Any) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": template_name},
        "spec": {"metadata": meta, "spec": {"devices": {"requests": [gpu()]}}},
    }


def claim_pod(name: str, node: str = "", **claim_ref: str) -> Obj:
    body = pod(name, node=node)
    body["spec"]["resourceClaims"] = [{"name": "gpu", **claim_ref}]
    body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return body


def allocation(request: str = "gpu") -> Obj:
    return {
        "devices": {
            "results": [
                {
                    "request": request,
                    "driver": "gpu.example.com",
                    "pool": "node-1",
                    "device": "gpu-0",
                }
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
            ]
        },
    }


async def set_status(api: client.ApiClient, name: str, status: Obj) -> tuple[int, Any]:
    current = await get(api, f"{CLAIMS}/{name}")
    current["status"] = status
    code, answer, _ = await raw(api, "PUT", f"{CLAIMS}/{name}/status", body=current)
    return code, answer


# -- objects and defaults ---------------------------------------------------------------


async def test_claim_defaults_and_status_reset(api: client.ApiClient) -> None:
    body = claim("c", [gpu(tolerations=[{"key": "example.com/dirty"}])])
    body["status"] = {"allocation": allocation()}
    created = await post(api, CLAIMS, body)
    exactly = created["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["allocationMode"] == "ExactCount"
    assert exactly["count"] == 1
    assert exactly["tolerations"] == [{"key": "example.com/dirty", "operator": "Equal"}]
    assert "status" not in created or not created["status"]


async def test_template_and_class_round_trip(api: client.ApiClient) -> None:
    made = await post(api, TEMPLATES, template("t", labels={"app": "x"}))
    assert made["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    await post(
        api,
        CLASSES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
    )
    listed = await get(api, CLASSES)
    assert [c["metadata"]["name"] for c in listed["items"]] == ["gpu.example.com"]


async def test_slice_generation_and_immutable_driver(api: client.ApiClient) -> None:
    made = await post(api, SLICES, device_slice("s", [{"name": "gpu-0"}], nodeName="node-1"))
    assert made["metadata"]["generation"] == 1
    made["spec"]["devices"].append({"name": "gpu-1"})
    status, updated, _ = await raw(api, "PUT", f"{SLICES}/s", body=made)
    assert status == 200, updated
    assert updated["metadata"]["generation"] == 2
    updated["spec"]["driver"] = "other.example.com"
    assert await refused(api, "PUT", f"{SLICES}/s", updated) == [
        'spec.driver: Invalid value: "other.example.com": field is immutable'
    ]


# -- validation ----------------------------------------------------------------------------


async def test_claim_request_rules(api: client.ApiClient) -> None:
    body = claim(
        "c",
        [
            {"name": "a"},
            {"name": "b", "exactly": {"deviceClassName": "x"}, "firstAvailable": [{"name": "s"}]},
            gpu("c", count=-1),
            gpu("d", allocationMode="All", count=2),
            gpu("e", allocationMode="Some"),
            gpu("c"),
        ],
        constraints=[{"requests": ["nope"], "matchAttribute": "model"}],
    )
    assert await refused(api, "POST", CLAIMS, body) == [
        "spec.devices.requests[0]: Required value: exactly one of `exactly` or "
        "`firstAvailable` is required",
        "spec.devices.requests[1]: Invalid value: null: exactly one of `exactly` or "
        "`firstAvailable` is required, but multiple fields are set",
        "spec.devices.requests[2].exactly.count: Invalid value: -1: must be greater than zero",
        "spec.devices.requests[3].exactly.count: Invalid value: 2: must not be specified when "
        "allocationMode is 'All'",
        'spec.devices.requests[4].exactly.allocationMode: Unsupported value: "Some": '
        'supported values: "All", "ExactCount"',
        'spec.devices.requests[5]: Duplicate value: "c"',
        'spec.devices.constraints[0].requests[0]: Invalid value: "nope": must be the name of a '
        "request in the claim or the name of a request and a subrequest separated by '/'",
        'spec.devices.constraints[0].matchAttribute: Invalid value: "model": a fully qualified '
        "name must be a domain and a name separated by a slash",
    ]


async def test_claim_selectors_tolerations_config(api: client.ApiClient) -> None:
    body = claim(
        "c",
        [gpu(selectors=[{}], tolerations=[{"operator": "Exists", "value": "v", "effect": "Bad"}])],
        config=[{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": [1]}}],
    )
    assert await refused(api, "POST", CLAIMS, body) == [
        "spec.devices.requests[0].exactly.selectors[0].cel: Required value",
        'spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be '
        "empty for operator `Exists`",
        'spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: "Bad": '
        'supported values: "NoExecute", "NoSchedule", "None"',
        'spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a '
        "valid JSON object",
    ]


async def test_claim_spec_is_immutable(api: client.ApiClient) -> None:
    made = await post(api, CLAIMS, claim("c", [gpu()]))
    made["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    assert await refused(api, "PUT", f"{CLAIMS}/c", made) == [
        'spec: Invalid value: {"Devices":{"Requests":[{"Name":"gpu","Exactly":'
        '{"DeviceClassName":"gpu.example.com","Selectors":null,"AllocationMode":"ExactCount",'
        '"Count":2,"AdminAccess":null,"Tolerations":null,"Capacity":null},'
        '"FirstAvailable":null}],"Constraints":null,"Config":null}}: field is immutable'
    ]


async def test_slice_rules(api: client.ApiClient) -> None:
    devices: list[Obj] = [
        {
            "name": "gpu-0",
            "attributes": {"bad key": {"int": 1}, "model": {"int": 1, "bool": True}},
            "taints": [{"key": "example.com/t", "effect": "Sometimes"}],
        },
        {"name": "gpu-0", "attributes": {"driverVersion": {"version": "v1"}}},
    ]
    body = device_slice("s", devices, nodeName="node-1", allNodes=True)
    body["spec"]["pool"]["resourceSliceCount"] = 0
    assert await refused(api, "POST", SLICES, body) == [
        "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
        "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields "
        "are set",
        'spec.devices[0].attributes: Invalid value: "bad key": a valid C identifier must start '
        "with alphabetic character or '_', followed by a string of alphanumeric characters or "
        "'_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
        "'[A-Za-z_][A-Za-z0-9_]*')",
        'spec.devices[0].attributes[model]: Invalid value: {"IntValue":1,"BoolValue":true,'
        '"StringValue":null,"VersionValue":null,"IntValues":null,"BoolValues":null,'
        '"StringValues":null,"VersionValues":null}: exactly one value must be specified',
        'spec.devices[0].taints[0].effect: Unsupported value: "Sometimes": supported values: '
        '"NoExecute", "NoSchedule", "None"',
        'spec.devices[1].attributes[driverVersion].version: Invalid value: "v1": must be a '
        "string compatible with semver.org spec 2.0.0",
        'spec.devices[1]: Duplicate value: "gpu-0"',
    ]
    none_chosen = device_slice("s", [{"name": "gpu-0"}])
    assert await refused(api, "POST", SLICES, none_chosen) == [
        "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
        "`perDeviceNodeSelection` is required"
    ]


async def test_device_class_rules(api: client.ApiClient) -> None:
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "Bad_Name"},
        "spec": {"selectors": [{"cel": {"expression": "x" * 10241}}], "config": [{}]},
    }
    causes = await refused(api, "POST", CLASSES, body)
    assert causes[0].startswith('metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123')
    assert causes[1:] == [
        "spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes",
        "spec.config[0].opaque: Required value",
    ]


async def test_template_metadata_may_only_set_labels_and_annotations(
    api: client.ApiClient,
) -> None:
    body = template("t", name="x", labels={"a": "b"})
    assert await refused(api, "POST", TEMPLATES, body) == [
        "spec.metadata.name: Forbidden: cannot be set"
    ]


async def test_pod_claim_references(api: client.ApiClient) -> None:
    body = claim_pod("p", resourceClaimName="c", resourceClaimTemplateName="t")
    body["spec"]["resourceClaims"].append({"name": "gpu"})
    body["spec"]["containers"][0]["resources"]["claims"].append({"name": "other"})
    assert await refused(api, "POST", PODS, body) == [
        'spec.resourceClaims[0]: Invalid value: {"Name":"gpu","ResourceClaimName":"c",'
        '"ResourceClaimTemplateName":"t"}: at most one of `resourceClaimName` or '
        "`resourceClaimTemplateName` may be specified",
        'spec.resourceClaims[1].name: Duplicate value: "gpu"',
        'spec.resourceClaims[1]: Invalid value: {"Name":"gpu","ResourceClaimName":null,'
        '"ResourceClaimTemplateName":null}: must specify one of: `resourceClaimName`, '
        "`resourceClaimTemplateName`",
        'spec.containers[0].resources.claims[1]: Not found: "other": must be one of the names '
        "in pod.spec.resourceClaims: gpu",
    ]


# -- status rules ----------------------------------------------------------------------------


async def test_claim_status_rules(api: client.ApiClient) -> None:
    await post(api, CLAIMS, claim("c", [gpu()]))
    consumer = {"resource": "pods", "name": "p", "uid": "u1"}
    code, answer = await set_status(api, "c", {"reservedFor": [consumer]})
    assert code == 422
    assert answer["details"]["causes"][0]["message"] == (
        "Forbidden: may not be specified when `allocated` is not set"
    )
    code, answer = await set_status(api, "c", {"allocation": allocation("other")})
    assert code == 422
    assert [c["field"] for c in answer["details"]["causes"]] == [
        "status.allocation.devices.results[0].request"
    ]
    code, answer = await set_status(
        api, "c", {"allocation": allocation(), "reservedFor": [consumer, {**consumer, "name": "q"}]}
    )
    assert code == 422
    assert answer["details"]["causes"][0]["message"] == 'Duplicate value: "u1"'
    many = [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(257)]
    code, answer = await set_status(api, "c", {"allocation": allocation(), "reservedFor": many})
    assert code == 422
    assert answer["details"]["causes"][0]["message"] == "Too many: 257: must have at most 256 items"
    code, answer = await set_status(
        api, "c", {"allocation": allocation(), "reservedFor": [consumer]}
    )
    assert code == 200, answer
    changed = allocation()
    changed["devices"]["results"][0]["device"] = "gpu-1"
    code, answer = await set_status(api, "c", {"allocation": changed, "reservedFor": [consumer]})
    assert code == 422
    assert answer["details"]["causes"][0]["field"] == "status.allocation"
    assert answer["details"]["causes"][0]["message"].endswith(": field is immutable")
    code, answer = await set_status(api, "c", {})
    assert code == 200, answer  # clearing the allocation (and reservations) is allowed


# -- the claim controller ------------------------------------------------------------------


async def _claims_recorded(api: client.ApiClient, path: str) -> Obj | None:
    """The pod at ``path`` once the controller has recorded its claims in its status."""
    return await until(
        api, path, lambda p: bool(p and (p.get("status") or {}).get("resourceClaimStatuses"))
    )


async def test_controller_creates_claim_from_template(api: client.ApiClient) -> None:
    await post(api, TEMPLATES, template("t", labels={"app": "train"}, annotations={"a": "b"}))
    made = await post(api, PODS, claim_pod("trainer", resourceClaimTemplateName="t"))
    current = await _claims_recorded(api, f"{PODS}/trainer")
    assert current is not None
    [entry] = current["status"]["resourceClaimStatuses"]
    assert entry["name"] == "gpu"
    name = entry["resourceClaimName"]
    assert name.startswith("trainer-gpu-") and len(name) == len("trainer-gpu-") + 5
    generated = await get(api, f"{CLAIMS}/{name}")
    meta = generated["metadata"]
    assert meta["annotations"] == {"a": "b", "resource.kubernetes.io/pod-claim-name": "gpu"}
    assert meta["labels"] == {"app": "train"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": made["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert generated["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


async def test_controller_waits_for_a_missing_template(api: client.ApiClient) -> None:
    await post(api, PODS, claim_pod("early", resourceClaimTemplateName="later"))
    await asyncio.sleep(0.2)
    assert (await get(api, CLAIMS))["items"] == []
    await post(api, TEMPLATES, template("later"))
    await _claims_recorded(api, f"{PODS}/early")


def test_generate_name_truncates_both_parts() -> None:
    name = generate_name("p" * 60, "c" * 20)
    # 82 characters cut to 57 in proportion (60 * 57 // 82, 20 * 57 // 82), no final "-".
    assert name == "p" * 41 + "-" + "c" * 13
    assert generate_name("pod", "gpu") == "pod-gpu-"


def _indexed_claim(owner: str, reserved_for: list[str]) -> Obj:
    return {
        "metadata": {
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner, "controller": True},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "rs-1"},
            ]
        },
        "status": {
            "reservedFor": [{"resource": "pods", "name": "x", "uid": u} for u in reserved_for]
        },
    }


def test_claims_by_pod_follow_owners_and_reservations() -> None:
    """The controller's index (kube's claimPodOwnerIndex): a claim moves with its changes."""
    index = ClaimsByPod()
    index.put(("ns", "a"), _indexed_claim("pod-1", ["pod-2"]))
    index.put(("ns", "b"), _indexed_claim("pod-1", []))
    assert index.owned_by("pod-1") == [("ns", "a"), ("ns", "b")]
    assert index.owned_by("rs-1") == []  # only controller references to pods count
    assert index.of("pod-2") == {("ns", "a")}
    index.put(("ns", "a"), _indexed_claim("pod-3", []))  # updated: owner and reservation gone
    assert index.owned_by("pod-1") == [("ns", "b")]
    assert index.of("pod-2") == set() and index.owned_by("pod-3") == [("ns", "a")]
    index.drop(("ns", "b"))
    assert index.of("pod-1") == set()


async def test_controller_adopts_a_claim_the_pod_already_owns(api: client.ApiClient) -> None:
    """handleClaim: a generated claim found through the owner index is recorded, not made
    again, when the pod's status lost it."""
    await post(api, TEMPLATES, template("t"))
    await post(api, PODS, claim_pod("keeper", resourceClaimTemplateName="t"))
    current = await _claims_recorded(api, f"{PODS}/keeper")
    assert current is not None
    name = current["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    current["status"]["resourceClaimStatuses"] = []
    status, answer, _ = await raw(api, "PUT", f"{PODS}/keeper/status", body=current)
    assert status == 200, answer
    again = await _claims_recorded(api, f"{PODS}/keeper")
    assert again is not None
    assert again["status"]["resourceClaimStatuses"][0]["resourceClaimName"] == name
    assert [c["metadata"]["name"] for c in (await get(api, CLAIMS))["items"]] == [name]


async def _reserved_claim(api: client.ApiClient, name: str, pod_body: Obj) -> Obj:
    """A claim allocated and reserved for a new bound pod, as the scheduler leaves it."""
    body = claim(name, [gpu()])
    body["metadata"]["finalizers"] = [FINALIZER]
    await post(api, CLAIMS, body)
    made = await post(api, PODS, pod_body)
    consumer = {
        "resource": "pods",
        "name": made["metadata"]["name"],
        "uid": made["metadata"]["uid"],
    }
    code, answer = await set_status(
        api, name, {"allocation": allocation(), "reservedFor": [consumer]}
    )
    assert code == 200, answer
    return made


async def test_deleted_pod_releases_and_deallocates(api: client.ApiClient) -> None:
    await _reserved_claim(
        api, "shared", claim_pod("user", node="node-1", resourceClaimName="shared")
    )
    status, answer, _ = await raw(api, "DELETE", f"{PODS}/user", body={"gracePeriodSeconds": 0})
    assert status == 200, answer
    released = await until(
        api,
        f"{CLAIMS}/shared",
        lambda c: bool(c and not (c.get("status") or {}).get("reservedFor")),
    )
    assert released is not None
    assert "allocation" not in (released.get("status") or {})
    assert FINALIZER not in (released["metadata"].get("finalizers") or [])


async def test_release_keeps_allocation_without_the_finalizer(api: client.ApiClient) -> None:
    await post(api, CLAIMS, claim("plain", [gpu()]))
    made = await post(api, PODS, claim_pod("user", node="node-1", resourceClaimName="plain"))
    consumer = {"resource": "pods", "name": "user", "uid": made["metadata"]["uid"]}
    code, _ = await set_status(
        api, "plain", {"allocation": allocation(), "reservedFor": [consumer]}
    )
    assert code == 200
    await raw(api, "DELETE", f"{PODS}/user", body={"gracePeriodSeconds": 0})
    released = await until(
        api, f"{CLAIMS}/plain", lambda c: bool(c and not (c.get("status") or {}).get("reservedFor"))
    )
    assert released is not None and released["status"]["allocation"] == allocation()


async def test_finished_pod_loses_its_generated_claim(api: client.ApiClient) -> None:
    await post(api, TEMPLATES, template("t"))
    await post(api, PODS, claim_pod("job", node="node-1", resourceClaimTemplateName="t"))
    current = await _claims_recorded(api, f"{PODS}/job")
    assert current is not None
    name = current["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    generated = await get(api, f"{CLAIMS}/{name}")
    generated["metadata"]["finalizers"] = [FINALIZER]
    status, answer, _ = await raw(api, "PUT", f"{CLAIMS}/{name}", body=generated)
    assert status == 200, answer
    consumer = {"resource": "pods", "name": "job", "uid": current["metadata"]["uid"]}
    code, answer = await set_status(
        api, name, {"allocation": allocation(), "reservedFor": [consumer]}
    )
    assert code == 200, answer
    current = await get(api, f"{PODS}/job")
    current["status"]["phase"] = "Succeeded"
    status, answer, _ = await raw(api, "PUT", f"{PODS}/job/status", body=current)
    assert status == 200, answer
    assert await until(api, f"{CLAIMS}/{name}", lambda c: c is None) is None


async def test_deleted_pod_loses_its_generated_claim(api: client.ApiClient) -> None:
    await post(api, TEMPLATES, template("t"))
    await post(api, PODS, claim_pod("gone", resourceClaimTemplateName="t"))
    current = await _claims_recorded(api, f"{PODS}/gone")
    assert current is not None
    name = current["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    await raw(api, "DELETE", f"{PODS}/gone", body={"gracePeriodSeconds": 0})
    assert await until(api, f"{CLAIMS}/{name}", lambda c: c is None) is None


async def test_controller_is_off_unless_asked(tmp_path: Path) -> None:
    async with EmulatorServer() as server, await api_client(server, tmp_path) as api:
        await post(api, TEMPLATES, template("t"))
        await post(api, PODS, claim_pod("p", resourceClaimTemplateName="t"))
        await asyncio.sleep(0.2)
        assert (await get(api, CLAIMS))["items"] == []


# -- cluster files ---------------------------------------------------------------------------


async def test_example_cluster_file_loads(tmp_path: Path) -> None:
    objects = load_cluster_file(EXAMPLE)
    async with (
        EmulatorServer(objects, claim_controller=True) as server,
        await api_client(server, tmp_path) as api,
    ):
        slices = (await get(api, SLICES))["items"]
        assert sorted(s["spec"]["nodeName"] for s in slices) == ["node-a", "node-b", "node-c"]
        assert [c["metadata"]["name"] for c in (await get(api, CLASSES))["items"]] == [
            "gpu.example.com"
        ]
        assert len((await get(api, TEMPLATES))["items"]) == 1
        trainer = await _claims_recorded(api, f"{PODS}/train-0")
        assert trainer is not None


def test_cluster_file_refuses_invalid_slice() -> None:
    text = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.example.com
  pool: {name: p, resourceSliceCount: 1}
  allNodes: true
  devices: [{name: gpu-0}, {name: gpu-0}]
"""
    objects = parse_cluster_text(text, "cluster.yaml")
    with pytest.raises(UserError, match=r'spec.devices\[1\]: Duplicate value: "gpu-0"'):
        EmulatorServer(objects)
