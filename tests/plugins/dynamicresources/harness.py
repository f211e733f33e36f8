"""Runs one ported allocator case the way kube's ``RunTestAllocator`` does."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.plugins.dynamicresources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    SelectorCache,
    SliceIndex,
)
from tests.plugins.dynamicresources.builders import NODE1, REGION1, Obj, node

__all__ = ["Case", "SelectorCache", "results_of", "run_case"]


@dataclass
class Case:
    """One test case: inputs plus kube's expectation (results, or an error substring)."""

    claims: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    slices: list[Obj] = field(default_factory=list)
    node: Obj | None = None
    allocated: list[tuple[str, str, str]] = field(default_factory=list)
    allocated_state: AllocatedState | None = None
    expect: list[Obj] | None = None
    error: str | None = None
    invocations: int = 0


def _sorted_results(allocation: Obj) -> Obj:
    out = copy.deepcopy(allocation)
    results = out.get("devices", {}).get("results")
    if results:
        results.sort(key=lambda r: json.dumps(r, sort_keys=True))
        for r in results:
            if "shareID" in r:
                r["shareID"] = "fixed"
    return out


def run_case(case: Case) -> None:
    inputs = copy.deepcopy((case.claims, case.classes, case.slices))
    state = case.allocated_state or AllocatedState(devices=set(case.allocated))
    allocator = Allocator(
        SliceIndex(case.slices),
        {c["metadata"]["name"]: c for c in case.classes},
        state,
        SelectorCache(),
    )
    target = case.node or node(NODE1, REGION1)
    if case.error is not None:
        with pytest.raises(AllocationError) as info:
            allocator.allocate(target, case.claims)
        assert case.error in str(info.value)
    else:
        got = allocator.allocate(target, case.claims)
        if not case.expect:
            assert got is None or got == []
        else:
            assert got is not None
            assert [_sorted_results(a) for a in got] == [_sorted_results(a) for a in case.expect]
    if case.invocations:
        assert allocator.num_allocate_one_invocations == case.invocations
    # The allocator must not modify its inputs.
    assert (case.claims, case.classes, case.slices) == inputs


def results_of(allocation: Any) -> list[Obj]:
    return list(allocation["devices"].get("results", []))
