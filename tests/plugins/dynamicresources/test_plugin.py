"""DynamicResources through a whole scheduling cycle (`explain`): kube's verdicts and texts."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import Code
from scheduler.config import load_config
from scheduler.config.loading import DEFAULT_CONFIG
from scheduler.framework.explain import Explanation, explain
from scheduler.framework.loader import PluginCatalog

DRIVER = "gpu.example.com"
NS = "default"


@pytest.fixture(scope="module")
def catalog() -> PluginCatalog:
    return PluginCatalog.discover()


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def device_class(name: str = DRIVER, expression: str | None = None) -> dict[str, Any]:
    cel = expression or f'device.driver == "{DRIVER}"'
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": cel}}]},
    }


def slice_on(node_name: str, gpus: int, *, memory: str = "40Gi") -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": "a100"}, "index": {"int": i}},
            "capacity": {"memory": {"value": memory}},
        }
        for i in range(gpus)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def claim(
    name: str,
    *,
    count: int = 1,
    klass: str = DRIVER,
    selectors: list[str] = (),  # type: ignore[assignment]
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": klass, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }
    if status is not None:
        obj["status"] = status
    return obj


def allocated_on(node_name: str, *devices: str) -> dict[str, Any]:
    return {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": d}
                    for d in devices
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            },
        }
    }


def pod(name: str, *claims: str, template: str | None = None) -> dict[str, Any]:
    entries: list[dict[str, Any]] = [{"name": c, "resourceClaimName": c} for c in claims]
    if template is not None:
        entries.append({"name": "gpu", "resourceClaimTemplateName": template})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "resources": {"claims": [{"name": e["name"]} for e in entries]},
                }
            ],
            "resourceClaims": entries,
        },
    }


CLUSTER = [node("node-a"), node("node-b"), node("node-c"), slice_on("node-a", 1)]
CLUSTER += [slice_on("node-b", 2), device_class()]


def run(
    catalog: PluginCatalog, objects: list[dict[str, Any]], the_pod: dict[str, Any]
) -> Explanation:
    return explain(objects, the_pod, load_config(DEFAULT_CONFIG), catalog)


def reasons(result: Explanation) -> dict[str, str]:
    """Each rejected node: the rejecting plugin and its reasons."""
    out: dict[str, str] = {}
    for name, report in result.nodes.items():
        if not report.feasible and report.rejected_by is not None:
            verdict = report.filter[report.rejected_by]
            out[name] = f"{report.rejected_by}: {'; '.join(verdict.reasons)}"
    return out


def test_one_device_fits_where_a_slice_has_one(catalog: PluginCatalog) -> None:
    result = run(catalog, [*CLUSTER, claim("c1")], pod("p", "c1"))
    assert sorted(result.feasible) == ["node-a", "node-b"]
    assert reasons(result) == {"node-c": "DynamicResources: cannot allocate all claims"}


def test_count_two_needs_two_devices_on_one_node(catalog: PluginCatalog) -> None:
    result = run(catalog, [*CLUSTER, claim("c2", count=2)], pod("p", "c2"))
    assert result.feasible == ["node-b"]


def test_allocated_devices_are_taken(catalog: PluginCatalog) -> None:
    other = claim("other", status=allocated_on("node-a", "gpu-0"))
    result = run(catalog, [*CLUSTER, other, claim("c1")], pod("p", "c1"))
    assert result.feasible == ["node-b"]


def test_admin_access_results_do_not_take_the_device(catalog: PluginCatalog) -> None:
    status = allocated_on("node-a", "gpu-0")
    status["allocation"]["devices"]["results"][0]["adminAccess"] = True
    result = run(catalog, [*CLUSTER, claim("other", status=status), claim("c1")], pod("p", "c1"))
    assert sorted(result.feasible) == ["node-a", "node-b"]


def test_cel_selector_on_attributes_and_capacity(catalog: PluginCatalog) -> None:
    objects = [*CLUSTER[:3], slice_on("node-a", 1, memory="80Gi"), slice_on("node-b", 2)]
    objects.append(device_class())
    wanted = claim(
        "big",
        selectors=[
            f'device.attributes["{DRIVER}"].model == "a100"',
            f'device.capacity["{DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0',
        ],
    )
    result = run(catalog, [*objects, wanted], pod("p", "big"))
    assert result.feasible == ["node-a"]


def test_allocated_claim_pins_its_node(catalog: PluginCatalog) -> None:
    mine = claim("mine", status=allocated_on("node-b", "gpu-1"))
    result = run(catalog, [*CLUSTER, mine], pod("p", "mine"))
    assert result.feasible == ["node-b"]
    assert reasons(result) == {
        "node-a": "DynamicResources: resourceclaim not available on the node",
        "node-c": "DynamicResources: resourceclaim not available on the node",
    }


def test_missing_device_class_is_unresolvable(catalog: PluginCatalog) -> None:
    result = run(catalog, [*CLUSTER, claim("c", klass="nope")], pod("p", "c"))
    assert result.status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.pre_filter_message == "request gpu: device class nope does not exist"


def test_missing_claim_and_uncreated_template_claim(catalog: PluginCatalog) -> None:
    result = run(catalog, CLUSTER, pod("p", "absent"))
    assert result.pre_filter_message == 'could not find ResourceClaim "default/absent"'
    result = run(catalog, CLUSTER, pod("q", template="gpu-template"))
    assert result.pre_filter_message == 'pod "default/q": ResourceClaim not created yet'


def test_generated_claim_must_be_owned_by_the_pod(catalog: PluginCatalog) -> None:
    the_pod = pod("q", template="gpu-template")
    the_pod["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "q-gpu"}]}
    result = run(catalog, [*CLUSTER, claim("q-gpu")], the_pod)
    assert result.pre_filter_message == (
        "ResourceClaim default/q-gpu was not created for Pod default/q (Pod is not owner)"
    )
    owned = claim("q-gpu")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "q", "uid": "uid-q", "controller": True}
    ]
    result = run(catalog, [*CLUSTER, owned], the_pod)
    assert sorted(result.feasible) == ["node-a", "node-b"]


def test_cel_runtime_error_aborts_the_cycle_with_kube_text(catalog: PluginCatalog) -> None:
    broken = device_class("broken", 'device.attributes["other.example.com"].x == 1')
    result = run(catalog, [*CLUSTER, broken, claim("c", klass="broken")], pod("p", "c"))
    assert result.status.code is Code.ERROR
    assert "CEL runtime error" in result.message
    assert "no such key" in result.message


def test_pod_without_claims_is_untouched(catalog: PluginCatalog) -> None:
    plain = pod("plain")
    plain["spec"].pop("resourceClaims")
    plain["spec"]["containers"][0]["resources"] = {}
    result = run(catalog, CLUSTER, plain)
    assert sorted(result.feasible) == ["node-a", "node-b", "node-c"]


def with_binding_conditions(
    status: dict[str, Any], conditions: list[dict[str, Any]], stamp: str
) -> dict[str, Any]:
    result = status["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = ["Attached"]
    result["bindingFailureConditions"] = ["AttachFailed"]
    status["allocation"]["allocationTimestamp"] = stamp
    status["devices"] = [
        {
            "driver": DRIVER,
            "pool": result["pool"],
            "device": result["device"],
            "conditions": conditions,
        }
    ]
    return status


def condition(kind: str, value: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": value,
        "reason": "Fabric",
        "message": "no path",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


NOW = "2099-01-01T00:00:00Z"  # an allocation that cannot have timed out yet


@pytest.mark.parametrize(
    ("conditions", "stamp", "usable"),
    [
        ([condition("Attached", "False")], NOW, True),  # still waiting, within the timeout
        ([condition("AttachFailed", "True")], NOW, False),  # failed: free it for PostFilter
        ([condition("Attached", "False")], "2020-01-01T00:00:00Z", False),  # timed out
        ([condition("Attached", "True")], "2020-01-01T00:00:00Z", True),  # ready
    ],
)
def test_binding_conditions_of_an_allocated_claim(
    catalog: PluginCatalog, conditions: list[dict[str, Any]], stamp: str, usable: bool
) -> None:
    status = with_binding_conditions(allocated_on("node-b", "gpu-1"), conditions, stamp)
    result = run(catalog, [*CLUSTER, claim("mine", status=status)], pod("p", "mine"))
    assert result.feasible == (["node-b"] if usable else [])


def test_explain_says_per_node_why_devices_did_not_fit(catalog: PluginCatalog) -> None:
    taken = claim("other", status=allocated_on("node-a", "gpu-0"))
    result = run(catalog, [*CLUSTER, taken, claim("c2", count=2)], pod("p", "c2"))
    assert result.feasible == ["node-b"]
    assert result.nodes["node-a"].details == [
        "claim default/c2, request gpu: wants 2; the node sees 1 device(s), "
        f"1 in class {DRIVER}, 1 matching the request's selectors, 0 of them free"
    ]
    assert "the node sees 0 device(s)" in result.nodes["node-c"].details[0]
    assert result.nodes["node-b"].details == []
