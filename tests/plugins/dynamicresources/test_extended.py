"""Extended resources backed by DeviceClasses (kube's DRAExtendedResource), through `explain`.

A DeviceClass maps ``example.com/gpu`` to its devices. node-a advertises two
in its allocatable (a device plugin); node-b publishes two GPUs in a
ResourceSlice, node-c none and advertises nothing. Plus kube's unit cases for
the resolver and for the requests/mappings of the special claim.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.api import Code
from scheduler.api.events import QueueingHint
from scheduler.config import load_config
from scheduler.config.loading import DEFAULT_CONFIG
from scheduler.framework.explain import Explanation, explain
from scheduler.framework.loader import PluginCatalog
from scheduler.plugins.dynamicresources.extended import (
    EXTENDED_CLAIM_ANNOTATION,
    DeviceClassResolver,
    find_extended_claim,
    requests_and_mappings,
)
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.state.pod import PodInfo
from tests.plugins.dynamicresources.test_plugin import (
    DRIVER,
    allocated_on,
    claim,
    device_class,
    node,
    pod,
    reasons,
    slice_on,
)

GPU = "example.com/gpu"
IMPLICIT = f"deviceclass.resource.kubernetes.io/{DRIVER}"


@pytest.fixture(scope="module")
def catalog() -> PluginCatalog:
    return PluginCatalog.discover()


def mapping_class(name: str = DRIVER, resource: str | None = GPU) -> dict[str, Any]:
    klass = device_class(name)
    if resource is not None:
        klass["spec"]["extendedResourceName"] = resource
    return klass


def gpu_node(name: str, gpus: int) -> dict[str, Any]:
    obj = node(name)
    obj["status"]["allocatable"][GPU] = str(gpus)
    return obj


CLUSTER = [gpu_node("node-a", 2), node("node-b"), node("node-c"), slice_on("node-b", 2)]


def gpu_pod(name: str, *claims: str, gpu: str = "", **other: str) -> dict[str, Any]:
    """A pod whose one container requests ``gpu`` example.com/gpu plus ``other``."""
    obj = pod(name, *claims)
    if not claims:
        obj["spec"].pop("resourceClaims")
        obj["spec"]["containers"][0]["resources"] = {}
    wanted = dict(other)
    if gpu:
        wanted[GPU] = gpu
    obj["spec"]["containers"][0]["resources"]["requests"] = wanted
    return obj


def run(
    catalog: PluginCatalog,
    objects: list[dict[str, Any]],
    the_pod: dict[str, Any],
    config: Any = DEFAULT_CONFIG,
) -> Explanation:
    return explain(objects, the_pod, load_config(config), catalog)


def test_device_plugin_nodes_fit_as_usual_and_others_get_devices(catalog: PluginCatalog) -> None:
    result = run(catalog, [*CLUSTER, mapping_class()], gpu_pod("p", gpu="2"))
    assert sorted(result.feasible) == ["node-a", "node-b"]
    # Fit left node-c to DynamicResources, which finds no device there.
    assert reasons(result) == {"node-c": "DynamicResources: cannot allocate all claims"}


def test_without_a_mapping_class_only_device_plugins_count(catalog: PluginCatalog) -> None:
    result = run(catalog, [*CLUSTER, mapping_class(resource=None)], gpu_pod("p", gpu="2"))
    assert result.feasible == ["node-a"]
    assert reasons(result) == {
        "node-b": f"NodeResourcesFit: Insufficient {GPU}",
        "node-c": f"NodeResourcesFit: Insufficient {GPU}",
    }


def test_more_than_anyone_has_gets_kube_texts(catalog: PluginCatalog) -> None:
    result = run(catalog, [*CLUSTER, mapping_class()], gpu_pod("p", gpu="3"))
    assert result.feasible == []
    # node-a has a device plugin: Fit judges it; the others are DRA's.
    assert reasons(result) == {
        "node-a": f"NodeResourcesFit: Insufficient {GPU}",
        "node-b": "DynamicResources: cannot allocate all claims",
        "node-c": "DynamicResources: cannot allocate all claims",
    }
    # DynamicResources' PostFilter has nothing to deallocate, and node-a has
    # fewer than 3 at all: kube-scheduler 1.36.3's text, word for word.
    assert result.message == (
        f"0/3 nodes are available: 1 Insufficient {GPU}, 2 cannot allocate all claims. "
        "still not schedulable, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )


def test_implicit_class_name(catalog: PluginCatalog) -> None:
    objects = [*CLUSTER, mapping_class(resource=None)]
    result = run(catalog, objects, gpu_pod("p", **{IMPLICIT: "1"}))
    # No node advertises the implicit name: only node-b's slice can serve it.
    assert result.feasible == ["node-b"]


def test_devices_taken_by_other_claims_are_not_given(catalog: PluginCatalog) -> None:
    taken = claim("other", status=allocated_on("node-b", "gpu-0"))
    result = run(catalog, [*CLUSTER, mapping_class(), taken], gpu_pod("p", gpu="2"))
    assert result.feasible == ["node-a"]
    result = run(catalog, [*CLUSTER, mapping_class(), taken], gpu_pod("p", gpu="1"))
    assert sorted(result.feasible) == ["node-a", "node-b"]


def test_a_device_plugin_node_short_of_it_is_fits_business(catalog: PluginCatalog) -> None:
    busy = gpu_pod("busy", gpu="2")
    busy["spec"]["nodeName"] = "node-a"
    result = run(catalog, [*CLUSTER, mapping_class(), busy], gpu_pod("p", gpu="1"))
    assert result.feasible == ["node-b"]
    assert reasons(result)["node-a"] == f"NodeResourcesFit: Insufficient {GPU}"


def test_user_claim_and_extended_resource_share_the_node(catalog: PluginCatalog) -> None:
    objects = [*CLUSTER, mapping_class(), claim("c1")]
    # One device for the claim, one for the extended resource: only node-b has two.
    result = run(catalog, objects, gpu_pod("p", "c1", gpu="1"))
    assert result.feasible == ["node-b"]
    result = run(catalog, objects, gpu_pod("p", "c1", gpu="2"))
    assert result.feasible == []


def test_extended_claim_left_by_an_earlier_attempt_is_deleted_first(
    catalog: PluginCatalog,
) -> None:
    stale = claim("p-extended-resources-abcde", status=allocated_on("node-b", "gpu-0"))
    stale["metadata"]["annotations"] = {EXTENDED_CLAIM_ANNOTATION: "true"}
    stale["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}
    ]
    result = run(catalog, [*CLUSTER, mapping_class(), stale], gpu_pod("p", gpu="1"))
    assert result.feasible == []
    assert set(reasons(result).values()) == {
        "DynamicResources: cannot schedule extended resource claim"
    }
    # kube's text: PostFilter deletes the claim (the next attempt starts afresh).
    assert result.message == (
        "0/3 nodes are available: 3 cannot schedule extended resource claim. "
        "deletion of ResourceClaim completed, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )


def test_unmapped_extended_resource_the_node_does_not_list(catalog: PluginCatalog) -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "pluggable-scheduler",
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {"ignoredResources": ["example.com/fpga"]},
                    }
                ],
            }
        ],
    }
    fpga_node = node("node-b")
    fpga_node["status"]["allocatable"]["example.com/fpga"] = "0"
    objects = [gpu_node("node-a", 2), fpga_node, node("node-c"), slice_on("node-b", 2)]
    objects.append(mapping_class())
    the_pod = gpu_pod("p", gpu="1", **{"example.com/fpga": "1"})
    result = run(catalog, objects, the_pod, config)
    # Fit ignores fpga; DynamicResources wants it at least listed where it
    # allocates the GPU (node-b lists it, at zero); node-a gets its GPU from
    # the device plugin but does not list fpga either.
    assert result.feasible == ["node-b"]
    assert reasons(result) == {
        "node-a": "DynamicResources: cannot fit resource",
        "node-c": "DynamicResources: cannot fit resource",
    }


def test_pod_without_mapped_resources_skips_dynamic_resources(catalog: PluginCatalog) -> None:
    result = run(catalog, [*CLUSTER, mapping_class()], gpu_pod("p", cpu="1"))
    assert sorted(result.feasible) == ["node-a", "node-b", "node-c"]
    verdicts = result.nodes["node-a"].filter
    assert verdicts["DynamicResources"].code is Code.SKIP


# -- the resolver ---------------------------------------------------------------------


def test_resolver_explicit_implicit_and_newest_class_wins() -> None:
    older = mapping_class("old")
    older["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    newer = mapping_class("new")
    newer["metadata"]["creationTimestamp"] = "2026-02-01T00:00:00Z"
    resolver = DeviceClassResolver([newer, older])
    assert resolver.class_name(GPU) == "new"
    assert resolver.class_name("deviceclass.resource.kubernetes.io/old") == "old"
    assert resolver.class_name("example.com/other") is None
    # Same creation time: the lower name.
    tie = mapping_class("a-class")
    tie["metadata"]["creationTimestamp"] = newer["metadata"]["creationTimestamp"]
    assert DeviceClassResolver([newer, tie]).class_name(GPU) == "a-class"
    assert not DeviceClassResolver([])


def test_find_extended_claim_needs_annotation_and_controller_owner() -> None:
    the_pod = PodInfo.from_dict(gpu_pod("p", gpu="1"))
    owned = claim("x")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}
    ]
    assert find_extended_claim(the_pod, [owned]) is None
    annotated = copy.deepcopy(owned)
    annotated["metadata"]["annotations"] = {EXTENDED_CLAIM_ANNOTATION: "true"}
    assert find_extended_claim(the_pod, [owned, annotated]) is annotated
    annotated["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    assert find_extended_claim(the_pod, [annotated]) is None


# -- requests and mappings (kube's Test_createRequestsAndMappings_*) -------------------

ER = GPU
CLASSES = [
    mapping_class("class", ER),
    mapping_class("class1", ER + "1"),
    mapping_class("classInit", ER + "init"),
]


def containers(*specs: tuple[str, dict[str, str]]) -> dict[str, Any]:
    """kube's st.MakePod().Res/InitReq/SidecarReq: names con<N>, init-con<N>, sidecar-con<N>."""
    spec: dict[str, Any] = {"containers": [], "initContainers": []}
    for kind, requests in specs:
        entry: dict[str, Any] = {"resources": {"requests": requests}}
        if kind == "con":
            entry["name"] = f"con{len(spec['containers'])}"
            spec["containers"].append(entry)
        else:
            entry["name"] = f"{kind}{len(spec['initContainers'])}"
            if kind == "sidecar-con":
                entry["restartPolicy"] = "Always"
            spec["initContainers"].append(entry)
    return {"spec": spec}


POD1 = containers(("con", {ER: "1", ER + "1": "2"}))
POD2 = containers(("con", {ER: "1"}), ("con", {ER + "1": "2"}))
POD_INIT = containers(("con", {ER: "1"}), ("init-con", {ER + "init": "2"}))
POD_INIT2 = containers(
    ("con", {ER: "1"}), ("init-con", {ER + "init": "1"}), ("init-con", {ER + "init": "2"})
)
POD_INIT3 = containers(
    ("con", {ER: "1"}),
    ("init-con", {ER + "init": "1"}),
    ("sidecar-con", {ER + "init": "1"}),
    ("init-con", {ER + "init": "2"}),
)


def req(name: str, klass: str, count: int) -> tuple[str, str, int]:
    return (name, klass, count)


@pytest.mark.parametrize(
    ("the_pod", "resources", "classes", "want"),
    [
        (POD1, [ER], CLASSES[:1], [req("container-0-request-0", "class", 1)]),
        (POD1, [ER, ER + "1"], CLASSES[:1], [req("container-0-request-0", "class", 1)]),
        (
            POD1,
            [ER, ER + "1"],
            CLASSES[:2],
            [req("container-0-request-0", "class", 1), req("container-0-request-1", "class1", 2)],
        ),
        (
            POD2,
            [ER, ER + "1"],
            CLASSES[:2],
            [req("container-0-request-0", "class", 1), req("container-1-request-0", "class1", 2)],
        ),
        (
            POD_INIT,
            [ER, ER + "init"],
            [CLASSES[0], CLASSES[2]],
            [
                req("container-0-request-0", "classInit", 2),
                req("container-1-request-0", "class", 1),
            ],
        ),
        (
            POD_INIT2,
            [ER, ER + "init"],
            [CLASSES[0], CLASSES[2]],
            [
                req("container-1-request-0", "classInit", 2),
                req("container-2-request-0", "class", 1),
            ],
        ),
        (
            POD_INIT3,
            [ER, ER + "init"],
            [CLASSES[0], CLASSES[2]],
            [
                req("container-1-request-0", "classInit", 1),
                req("container-2-request-0", "classInit", 2),
                req("container-3-request-0", "class", 1),
            ],
        ),
    ],
    ids=["one", "one-match-one-not", "two", "two-containers", "init", "two-init", "sidecar"],
)
def test_requests(
    the_pod: dict[str, Any],
    resources: list[str],
    classes: list[dict[str, Any]],
    want: list[tuple[str, str, int]],
) -> None:
    requests, _ = requests_and_mappings(the_pod, resources, DeviceClassResolver(classes))
    got = [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests]
    assert got == want
    assert all(r["exactly"]["allocationMode"] == "ExactCount" for r in requests)


IMPLICIT_INIT = "deviceclass.resource.kubernetes.io/classInit"
POD1_INIT_IMPLICIT = containers(("init-con", {ER + "init": "1", IMPLICIT_INIT: "2"}))
POD_INIT_IMPLICIT = containers(
    ("con", {ER: "1"}), ("init-con", {ER + "init": "1"}), ("init-con", {IMPLICIT_INIT: "2"})
)


def m(container: str, resource: str, request: str) -> tuple[str, str, str]:
    return (request, container, resource)


@pytest.mark.parametrize(
    ("the_pod", "resources", "want"),
    [
        (
            POD1,
            [ER, ER + "1"],
            [m("con0", ER, "container-0-request-0"), m("con0", ER + "1", "container-0-request-1")],
        ),
        (
            POD1_INIT_IMPLICIT,
            [ER, ER + "init", IMPLICIT_INIT],
            [
                m("init-con0", IMPLICIT_INIT, "container-0-request-0"),
                m("init-con0", ER + "init", "container-0-request-1"),
            ],
        ),
        (
            POD2,
            [ER, ER + "1"],
            [m("con0", ER, "container-0-request-0"), m("con1", ER + "1", "container-1-request-0")],
        ),
        (
            POD_INIT,
            [ER, ER + "init"],
            [
                m("init-con0", ER + "init", "container-0-request-0"),
                m("con0", ER, "container-1-request-0"),
            ],
        ),
        (
            POD_INIT2,
            [ER, ER + "init"],
            [
                m("init-con0", ER + "init", "container-1-request-0"),
                m("init-con1", ER + "init", "container-1-request-0"),
                m("con0", ER, "container-2-request-0"),
            ],
        ),
        (
            POD_INIT_IMPLICIT,
            [ER, ER + "init", IMPLICIT_INIT],
            [
                m("init-con0", ER + "init", "container-0-request-0"),
                m("init-con1", IMPLICIT_INIT, "container-1-request-0"),
                m("con0", ER, "container-2-request-0"),
            ],
        ),
        (
            POD_INIT3,
            [ER, ER + "init"],
            [
                m("init-con0", ER + "init", "container-1-request-0"),
                m("sidecar-con1", ER + "init", "container-1-request-0"),
                m("init-con2", ER + "init", "container-2-request-0"),
                m("con0", ER, "container-3-request-0"),
            ],
        ),
    ],
    ids=["one-container", "implicit", "two-containers", "init", "two-init", "mixed", "sidecar"],
)
def test_mappings(
    the_pod: dict[str, Any], resources: list[str], want: list[tuple[str, str, str]]
) -> None:
    classes = [CLASSES[0], CLASSES[1], CLASSES[2]]
    _, mappings = requests_and_mappings(the_pod, resources, DeviceClassResolver(classes))
    got = sorted((x["requestName"], x["containerName"], x["resourceName"]) for x in mappings)
    assert got == want


# -- NodeResourcesFit's DeviceClass hint -----------------------------------------------


def test_fit_requeues_when_a_class_comes_to_map_a_requested_resource() -> None:
    from tests.plugins.builders import FakeHandle

    plugin = NodeResourcesFit(None, FakeHandle())
    event = next(e for e in plugin.events_to_register() if e.event.resource == "DeviceClass")
    assert event.hint is not None
    the_pod = PodInfo.from_dict(gpu_pod("p", gpu="1"))
    plain = mapping_class(resource=None)
    assert event.hint(the_pod, None, mapping_class()) is QueueingHint.QUEUE
    assert event.hint(the_pod, None, plain) is QueueingHint.SKIP
    assert event.hint(the_pod, plain, mapping_class()) is QueueingHint.QUEUE
    assert event.hint(the_pod, mapping_class(), mapping_class()) is QueueingHint.SKIP
    implicit = PodInfo.from_dict(gpu_pod("q", **{IMPLICIT: "1"}))
    assert event.hint(implicit, None, plain) is QueueingHint.QUEUE


# -- NodeResourcesFit scoring a DRA-backed resource -----------------------------------


def scoring_config(kind: str = "LeastAllocated") -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "pluggable-scheduler",
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {
                            "scoringStrategy": {
                                "type": kind,
                                "resources": [{"name": GPU, "weight": 1}],
                            }
                        },
                    }
                ],
            }
        ],
    }


def test_fit_scores_dra_backed_resource_by_device_counts(catalog: PluginCatalog) -> None:
    busy = claim("busy", count=3, status=allocated_on("node-b", "gpu-0", "gpu-1", "gpu-2"))
    objects = [gpu_node("node-a", 4), node("node-b"), node("node-c")]
    objects += [slice_on("node-b", 4), slice_on("node-c", 4), mapping_class(), busy]
    result = run(catalog, objects, gpu_pod("p", gpu="1"), scoring_config())
    raw = {name: report.score["NodeResourcesFit"].raw for name, report in result.nodes.items()}
    # node-a: its device plugin's 4, none used; node-b: 4 devices, 3 allocated;
    # node-c: 4 free devices. (4 - used - 1) * 100 / 4.
    assert raw == {"node-a": 75, "node-b": 0, "node-c": 75}
    result = run(catalog, objects, gpu_pod("p", gpu="1"), scoring_config("MostAllocated"))
    raw = {name: report.score["NodeResourcesFit"].raw for name, report in result.nodes.items()}
    assert raw == {"node-a": 25, "node-b": 100, "node-c": 25}


def test_fit_counts_only_the_devices_the_class_admits(catalog: PluginCatalog) -> None:
    klass = mapping_class()
    klass["spec"]["selectors"] = [
        {"cel": {"expression": f'device.attributes["{DRIVER}"].index < 2'}}
    ]
    objects = [node("node-b"), node("node-c"), slice_on("node-b", 4), slice_on("node-c", 8)]
    result = run(catalog, [*objects, klass], gpu_pod("p", gpu="1"), scoring_config())
    # Two of each node's devices are of the class: (2 - 1) * 100 / 2.
    raw = {name: report.score["NodeResourcesFit"].raw for name, report in result.nodes.items()}
    assert raw == {"node-b": 50, "node-c": 50}


def test_limits_stand_in_for_missing_requests() -> None:
    """The API server defaults requests from limits; a cluster file may not have."""
    the_pod = {
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {GPU: "2"}}}
            ]
        }
    }
    requests, mappings = requests_and_mappings(the_pod, [GPU], DeviceClassResolver(CLASSES))
    # Sorted names: cpu, example.com/gpu.
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [("container-0-request-1", 2)]
    assert mappings == [
        {"containerName": "c", "resourceName": GPU, "requestName": "container-0-request-1"}
    ]
