"""Multi-host pools (kube's cases) and the per-node cost of gathering pools."""

from __future__ import annotations

import time

import pytest

from scheduler.plugins.dynamicresources.allocator import AllocatedState, Allocator, SliceIndex
from tests.plugins.dynamicresources.builders import (
    ALL_NODES,
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    NODE1,
    NODE2,
    POOL1,
    REQ0,
    SLICE1,
    SLICE2,
    all_request,
    allocation,
    claim,
    claim_with_request,
    device,
    device_class,
    local_node_selector,
    node,
    pool,
    request,
    result,
    slice_,
    slice_with_one_device,
)
from tests.plugins.dynamicresources.harness import Case, SelectorCache, run_case

A = device_class(CLASS_A, DRIVER_A)
LOCAL1 = local_node_selector(NODE1)

CASES: dict[str, Case] = {
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_(SLICE2, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
            slice_(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2)),
        ],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
            slice_(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
            slice_(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kube_case(name: str) -> None:
    run_case(CASES[name])


def test_prefilter_summary_and_node_check() -> None:
    index = SliceIndex(
        [
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE2, ALL_NODES, "shared", DRIVER_A),
        ]
    )
    summary = index.nodes_with_devices()
    assert summary.local_nodes == frozenset({NODE1})
    assert summary.non_local
    assert index.node_may_have_devices(node(NODE2))
    only_local = SliceIndex([slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)])
    assert not only_local.node_may_have_devices(node(NODE2))


def test_many_nodes_cost_is_per_node() -> None:
    """5,000 nodes with 8 devices each: one allocator answers every node quickly."""
    nodes = [f"node-{i}" for i in range(5000)]
    slices = [
        slice_(f"slice-{n}", n, f"pool-{n}", DRIVER_A, *(device(f"gpu-{d}") for d in range(8)))
        for n in nodes
    ]
    index = SliceIndex(slices)
    allocated = AllocatedState.from_claims([])
    allocator = Allocator(index, {CLASS_A: A}, allocated, SelectorCache())
    claims = [claim(CLAIM0, request(REQ0, CLASS_A, 2))]
    started = time.perf_counter()
    for name in nodes:
        got = allocator.allocate(node(name), claims)
        assert got is not None
        assert [r["device"] for r in got[0]["devices"]["results"]] == ["gpu-0", "gpu-1"]
    assert time.perf_counter() - started < 10


def test_allocated_state_from_claims_follows_kube() -> None:
    """Admin access is not "allocated"; shares add capacity instead of blocking."""

    def allocated(*results: dict) -> dict:  # type: ignore[type-arg]
        return {"status": {"allocation": {"devices": {"results": list(results)}}}}

    state = AllocatedState.from_claims(
        [
            allocated(result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocated(result(REQ0, DRIVER_A, POOL1, DEVICE2, True)),
            allocated(
                result(REQ0, DRIVER_A, POOL1, "gpu", shareID="u1", consumedCapacity={"mem": "1Gi"}),
                result(REQ0, DRIVER_A, POOL1, "gpu", shareID="u2", consumedCapacity={"mem": "1Gi"}),
            ),
            {"status": {}},
        ]
    )
    assert state.devices == {(DRIVER_A, POOL1, DEVICE1)}
    assert state.aggregated_capacity == {(DRIVER_A, POOL1, "gpu"): {"mem": 2 * 1024**3}}
    assert state.is_allocated((DRIVER_A, POOL1, "gpu"))
    assert not state.is_allocated((DRIVER_A, POOL1, DEVICE2))


def test_cel_compile_error_names_the_class() -> None:
    broken = {"metadata": {"name": CLASS_A}, "spec": {"selectors": [{"cel": {"expression": "("}}]}}
    run_case(
        Case(
            claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes=[broken],
            slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            error="class class-a: selector #0: CEL compile error: ",
        )
    )
