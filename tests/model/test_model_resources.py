"""Pod requests and node allocatable: cases from kube-scheduler / component-helpers.

Expected numbers follow ``resource.PodRequests`` + ``Resource.Add``; the general
behaviour was also cross-checked against component-helpers v0.36.3 on random pods.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.model.quantity import QuantityError
from scheduler.model.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    PodSpecError,
    is_extended_resource_name,
    is_scalar_resource_name,
    node_allocatable,
    pod_non_zero_requests,
    pod_request_totals,
    pod_requests,
)

MI = 1024 * 1024
GI = 1024 * MI


def ctr(
    name: str,
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    sidecar: bool = False,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    c: dict[str, Any] = {"name": name, "image": "busybox", "resources": resources}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def pod(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": containers, **spec}
    if init is not None:
        body["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": body}


# --- regular containers, init containers, sidecars -------------------------------


def test_sum_of_containers() -> None:
    p = pod([ctr("a", {"cpu": "1", "memory": "1G"}), ctr("b", {"cpu": "500m", "memory": "1Gi"})])
    assert pod_requests(p) == {"cpu": 1500, "memory": 10**9 + GI}


def test_fit_go_doc_example_init_larger_than_containers() -> None:
    # computePodResourceRequest's documented example: CPU 3, Memory 3G.
    p = pod(
        [ctr("c1", {"cpu": "2", "memory": "1G"}), ctr("c2", {"cpu": "1", "memory": "1G"})],
        init=[ctr("ic1", {"cpu": "2", "memory": "1G"}), ctr("ic2", {"cpu": "2", "memory": "3G"})],
    )
    assert pod_requests(p) == {"cpu": 3000, "memory": 3 * 10**9}


def test_init_container_larger_than_sum_of_containers() -> None:
    p = pod([ctr("c", {"cpu": "1", "memory": "1Gi"})], init=[ctr("i", {"cpu": "3"})])
    assert pod_requests(p) == {"cpu": 3000, "memory": GI}


def test_init_container_resource_absent_from_containers() -> None:
    p = pod([ctr("c", {"cpu": "1"})], init=[ctr("i", {"example.com/foo": "3"})])
    assert pod_requests(p) == {"cpu": 1000, "example.com/foo": 3}


def test_sidecar_adds_to_steady_state() -> None:
    p = pod(
        [ctr("c", {"cpu": "1", "memory": "1Gi"})],
        init=[ctr("side", {"cpu": "500m", "memory": "512Mi"}, sidecar=True)],
    )
    assert pod_requests(p) == {"cpu": 1500, "memory": GI + 512 * MI}


def test_init_after_sidecar_includes_the_sidecar() -> None:
    # init "big" runs while the earlier sidecar runs: 2 + 1 = 3 > steady 1 + 1.
    p = pod(
        [ctr("c", {"cpu": "1"})],
        init=[ctr("side", {"cpu": "1"}, sidecar=True), ctr("big", {"cpu": "2"})],
    )
    assert pod_requests(p) == {"cpu": 3000}


def test_init_before_sidecar_excludes_the_sidecar() -> None:
    # "big" runs before the sidecar starts: max(2, 1 + 1) = 2.
    p = pod(
        [ctr("c", {"cpu": "1"})],
        init=[ctr("big", {"cpu": "2"}), ctr("side", {"cpu": "1"}, sidecar=True)],
    )
    assert pod_requests(p) == {"cpu": 2000}


def test_kep753_example() -> None:
    # Sidecars 1 and 2 + init 3 in between; containers 1.
    p = pod(
        [ctr("c", {"cpu": "1"})],
        init=[
            ctr("s1", {"cpu": "1"}, sidecar=True),
            ctr("i1", {"cpu": "5"}),
            ctr("s2", {"cpu": "2"}, sidecar=True),
            ctr("i2", {"cpu": "3"}),
        ],
    )
    # steady = 1 + 1 + 2 = 4; i1 = 5 + 1 = 6; i2 = 3 + 3 = 6.
    assert pod_requests(p) == {"cpu": 6000}


def test_sidecar_only_growth_counts_while_starting() -> None:
    # A later sidecar sees the cumulative sidecar sum; steady state already has it.
    p = pod(
        [],
        init=[
            ctr("s1", {"memory": "1Gi"}, sidecar=True),
            ctr("s2", {"memory": "1Gi"}, sidecar=True),
        ],
    )
    assert pod_requests(p) == {"memory": 2 * GI}


# --- overhead, defaulting, units -------------------------------------------------


def test_overhead_is_added_last() -> None:
    p = pod(
        [ctr("c", {"cpu": "1", "memory": "1Gi"})],
        init=[ctr("i", {"cpu": "2"})],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    assert pod_requests(p) == {"cpu": 2250, "memory": GI + 120 * MI}


def test_limits_only_defaults_requests() -> None:
    # SetDefaults_Pod: a limit without a request becomes the request.
    p = pod([ctr("c", limits={"cpu": "2", "memory": "1Gi"})])
    assert pod_requests(p) == {"cpu": 2000, "memory": GI}


def test_limits_do_not_override_explicit_requests() -> None:
    p = pod([ctr("c", requests={"cpu": "500m"}, limits={"cpu": "2", "memory": "1Gi"})])
    assert pod_requests(p) == {"cpu": 500, "memory": GI}


def test_init_container_limits_default_too() -> None:
    p = pod([ctr("c", {"cpu": "1"})], init=[ctr("i", limits={"cpu": "4"})])
    assert pod_requests(p) == {"cpu": 4000}


def test_extended_hugepages_and_ephemeral() -> None:
    p = pod(
        [
            ctr(
                "c",
                {
                    "nvidia.com/gpu": "2",
                    "hugepages-2Mi": "4Mi",
                    "ephemeral-storage": "1Gi",
                    "example.com/foo": 1,
                },
            ),
            ctr("d", {"nvidia.com/gpu": "1"}),
        ]
    )
    assert pod_requests(p) == {
        "nvidia.com/gpu": 3,
        "hugepages-2Mi": 4 * MI,
        "ephemeral-storage": GI,
        "example.com/foo": 1,
    }


def test_untracked_resource_names_are_dropped() -> None:
    # Resource.Add ignores names that are neither native nor scalar.
    p = pod([ctr("c", {"cpu": "1", "storage": "1Gi", "foo": "3"})])
    assert pod_requests(p) == {"cpu": 1000}


def test_rounding_happens_once_on_the_sum() -> None:
    # 0.5m + 0.5m = 1m exactly; rounding per container would give 2m.
    p = pod([ctr("a", {"cpu": "0.0005"}), ctr("b", {"cpu": "0.0005"})])
    assert pod_requests(p) == {"cpu": 1}
    p = pod([ctr("a", {"cpu": "0.0001"})])
    assert pod_requests(p) == {"cpu": 1}


def test_zero_entries_omitted_and_empty_pod() -> None:
    assert pod_requests(pod([ctr("c", {"cpu": "0", "memory": "0"})])) == {}
    assert pod_requests({"spec": {}}) == {}
    assert pod_requests({}) == {}
    assert pod_requests(pod([{"name": "bare"}])) == {}


# --- pod-level resources -----------------------------------------------------------


def test_pod_level_requests_replace_aggregate_for_supported_resources() -> None:
    p = pod(
        [ctr("c", {"cpu": "1", "memory": "1Gi", "example.com/foo": "2"})],
        resources={"requests": {"cpu": "3", "example.com/foo": "7"}},
    )
    # cpu comes from the pod level; extended resources are not pod-level resources.
    assert pod_requests(p) == {"cpu": 3000, "memory": GI, "example.com/foo": 2}


def test_pod_level_requests_default_from_pod_limits() -> None:
    p = pod([ctr("c")], resources={"limits": {"cpu": "2", "memory": "1Gi"}})
    assert pod_requests(p) == {"cpu": 2000, "memory": GI}


def test_pod_level_defaulting_prefers_container_requests() -> None:
    p = pod([ctr("c", {"cpu": "500m"})], resources={"limits": {"cpu": "2", "memory": "1Gi"}})
    assert pod_requests(p) == {"cpu": 500, "memory": GI}


def test_pod_level_plus_overhead() -> None:
    p = pod(
        [ctr("c", {"cpu": "1"})],
        resources={"requests": {"cpu": "2"}},
        overhead={"cpu": "100m"},
    )
    assert pod_requests(p) == {"cpu": 2100}


# --- in-place resize (status resources) -------------------------------------------


def _resized() -> dict[str, Any]:
    p = pod([ctr("c", {"cpu": "1", "memory": "1Gi"})])
    p["status"] = {
        "containerStatuses": [
            {
                "name": "c",
                "resources": {"requests": {"cpu": "2", "memory": "512Mi"}},
                "allocatedResources": {"cpu": "1500m", "memory": "2Gi"},
            }
        ]
    }
    return p


def test_status_resources_take_the_largest() -> None:
    p = _resized()
    assert pod_requests(p) == {"cpu": 1000, "memory": GI}
    assert pod_requests(p, use_status_resources=True) == {"cpu": 2000, "memory": 2 * GI}


def test_infeasible_resize_ignores_spec() -> None:
    p = _resized()
    p["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "8", "memory": "8Gi"}
    p["status"]["conditions"] = [
        {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
    ]
    assert pod_requests(p, use_status_resources=True) == {"cpu": 2000, "memory": 2 * GI}


def test_status_ignored_for_plain_init_containers() -> None:
    p = pod([], init=[ctr("i", {"cpu": "1"})])
    p["status"] = {
        "initContainerStatuses": [{"name": "i", "resources": {"requests": {"cpu": "5"}}}]
    }
    assert pod_requests(p, use_status_resources=True) == {"cpu": 1000}


# --- non-zero requests -------------------------------------------------------------


def test_non_zero_defaults_per_container() -> None:
    p = pod([ctr("a"), ctr("b", {"cpu": "300m"})])
    assert pod_non_zero_requests(p) == (
        DEFAULT_MILLI_CPU_REQUEST + 300,
        2 * DEFAULT_MEMORY_REQUEST,
    )
    assert pod_requests(p) == {"cpu": 300}


def test_non_zero_keeps_explicit_zero() -> None:
    p = pod([ctr("a", {"cpu": "0", "memory": "0"})])
    assert pod_non_zero_requests(p) == (0, 0)


def test_non_zero_with_init_containers_and_overhead() -> None:
    p = pod([ctr("a")], init=[ctr("i", {"cpu": "2"})], overhead={"memory": "10Mi"})
    # cpu: max(100m, 2); memory: max(200Mi, 200Mi) + 10Mi
    assert pod_non_zero_requests(p) == (2000, DEFAULT_MEMORY_REQUEST + 10 * MI)


def test_non_zero_with_pod_level_requests() -> None:
    p = pod([ctr("a"), ctr("b")], resources={"requests": {"cpu": "1"}})
    # cpu from the pod level; memory unrequested by the pod -> per-container default.
    assert pod_non_zero_requests(p) == (1000, 2 * DEFAULT_MEMORY_REQUEST)


def test_non_zero_empty_pod() -> None:
    assert pod_non_zero_requests(pod([])) == (0, 0)


def test_totals_in_one_pass_equal_the_two_functions_on_random_pods() -> None:
    """The informer's one-pass totals skip the defaulted pass only where it changes nothing."""
    rng = random.Random(7)

    def resources() -> dict[str, Any] | None:
        names = [n for n in ("cpu", "memory", "example.com/gpu") if rng.random() < 0.6]
        if not names:
            return None
        return {n: rng.choice(["0", "1", "250m", "1.5", "3Gi", "100Mi"]) for n in names}

    def container(i: int, init: bool) -> dict[str, Any]:
        return ctr(f"c{i}", resources(), resources(), sidecar=init and rng.random() < 0.3)

    pods_with_defaults = 0
    for _ in range(400):
        spec: dict[str, Any] = {}
        if rng.random() < 0.2:
            spec["resources"] = {"requests": resources() or {}}
        if rng.random() < 0.2:
            spec["overhead"] = {"memory": "10Mi"}
        p = pod(
            [container(i, False) for i in range(rng.randint(0, 3))],
            init=[container(i + 10, True) for i in range(rng.randint(0, 2))],
            **spec,
        )
        totals = pod_request_totals(p)
        assert totals == (pod_requests(p), pod_non_zero_requests(p)), p
        pods_with_defaults += totals[1] != (
            pod_requests(p).get("cpu", 0),
            pod_requests(p).get("memory", 0),
        )
    assert pods_with_defaults > 100  # the defaulted pass ran on many of them


# --- errors ------------------------------------------------------------------------


def test_bad_quantity_names_container_and_resource() -> None:
    p = pod([ctr("app", {"cpu": "abc"})])
    with pytest.raises(
        QuantityError, match=r'^container "app" requests\.cpu: invalid quantity "abc"'
    ):
        pod_requests(p)


def test_bad_quantity_in_init_limits_and_overhead() -> None:
    with pytest.raises(QuantityError, match=r'^init container "i" limits\.memory: '):
        pod_requests(pod([], init=[ctr("i", limits={"memory": "1GB"})]))
    with pytest.raises(QuantityError, match=r"^pod overhead\.cpu: "):
        pod_requests(pod([], overhead={"cpu": "x"}))


@pytest.mark.parametrize(
    "bad",
    [
        {"spec": {"containers": {"name": "x"}}},
        {"spec": {"containers": [{"name": "x", "resources": []}]}},
        {"spec": {"containers": [{"name": "x", "resources": {"requests": ["cpu"]}}]}},
        {"spec": []},
    ],
)
def test_malformed_shapes(bad: dict[str, Any]) -> None:
    with pytest.raises(PodSpecError):
        pod_requests(bad)


# --- node allocatable ----------------------------------------------------------------


def test_node_allocatable() -> None:
    node = {
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "allocatable": {
                "cpu": "7910m",
                "memory": "31Gi",
                "pods": "110",
                "ephemeral-storage": "95Gi",
                "hugepages-1Gi": "0",
                "nvidia.com/gpu": "4",
                "attachable-volumes-aws-ebs": "25",
            },
        }
    }
    assert node_allocatable(node) == {
        "cpu": 7910,
        "memory": 31 * GI,
        "pods": 110,
        "ephemeral-storage": 95 * GI,
        "nvidia.com/gpu": 4,
        "attachable-volumes-aws-ebs": 25,
    }


@pytest.mark.parametrize("allocatable", [None, {}, "absent"])
def test_node_allocatable_falls_back_to_capacity(allocatable: Any) -> None:
    status: dict[str, Any] = {"capacity": {"cpu": "4", "pods": "10"}}
    if allocatable != "absent":
        status["allocatable"] = allocatable
    assert node_allocatable({"status": status}) == {"cpu": 4000, "pods": 10}


def test_node_allocatable_errors_and_empty() -> None:
    assert node_allocatable({}) == {}
    with pytest.raises(QuantityError, match=r"^status\.allocatable\.cpu: "):
        node_allocatable({"status": {"allocatable": {"cpu": "four"}}})


# --- resource names ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("nvidia.com/gpu", True, True),
        ("example.com/foo", True, True),
        ("cpu", False, False),
        ("memory", False, False),
        ("storage", False, False),
        ("kubernetes.io/foo", False, True),
        ("foo.kubernetes.io/bar", False, True),
        ("hugepages-2Mi", False, True),
        ("attachable-volumes-csi-x", False, True),
        ("requests.example.com/foo", False, False),
        ("Example.com/foo", False, False),
        ("example.com/", False, False),
        ("a/b/c", False, False),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar
