"""Resource-allocation scoring shared by NodeResourcesFit and BalancedAllocation.

kube-scheduler's ``resourceAllocationScorer``: for each configured resource
it pairs the node's allocatable amount with what would be requested on it
once the pod lands, then hands both vectors to a strategy. Here the pairs are
``(resources, nodes)`` matrices and the strategies work on all nodes at once
with kube's integer arithmetic.

Two kube rules shape the matrices:

- cpu and memory count already-placed pods at their *non-zero* requests
  (100m / 200MiB for containers that request nothing) for Fit's strategies,
  and at their real requests for BalancedAllocation (``use_requested``);
- a scalar (extended, hugepages, ...) resource the pod does not request, or
  one the node does not have, is left out of that node's score entirely.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from pydantic import Field, field_validator

from scheduler.api import MAX_NODE_SCORE
from scheduler.model.resources import (
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_non_zero_requests,
    pod_requests,
)
from scheduler.plugins._helpers import PluginArgs
from scheduler.state.nodetable import CPU, EPHEMERAL_STORAGE, MEMORY, NodeSet
from scheduler.state.pod import PodInfo

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")


class ResourceSpec(PluginArgs):
    """A resource and its weight in a score (kube's ``ResourceSpec``)."""

    name: str = Field(min_length=1)
    weight: int = 1


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (
    ResourceSpec(name="cpu", weight=1),
    ResourceSpec(name="memory", weight=1),
)


def validate_resource_names(specs: Sequence[ResourceSpec]) -> None:
    seen: set[str] = set()
    for i, spec in enumerate(specs):
        if spec.name in seen:
            raise ValueError(f"resources[{i}].name: Duplicate value: {spec.name!r}")
        seen.add(spec.name)


class WeightedResources(PluginArgs):
    """Mixin validator: weights in kube's (0, 100] range."""

    @field_validator("resources", check_fields=False)
    @classmethod
    def _weights_in_range(cls, value: list[ResourceSpec]) -> list[ResourceSpec]:
        for i, spec in enumerate(value):
            if not 0 < spec.weight <= MAX_NODE_SCORE:
                raise ValueError(
                    f"resources[{i}].weight: Invalid value: {spec.weight}: "
                    f"resource weight of {spec.name} should be in range (0, {MAX_NODE_SCORE}]"
                )
        validate_resource_names(value)
        return value


def pod_score_requests(pod: PodInfo, names: Sequence[str], use_requested: bool) -> IntArray:
    """The pod's request per scored resource (cpu in millicores), kube's PreScore state.

    ``use_requested=False`` is NodeResourcesFit's scorer. kube 1.36 builds that
    scorer without the PodLevelResources feature flag (``getScorer`` in fit.go
    never sets it; BalancedAllocation's scorer has it), so the *incoming* pod is
    scored by its containers' requests (+ overhead) even when ``spec.resources``
    sets pod-level requests; pods already on the node count at their pod-level
    requests (NodeInfo). Fidelity scenario ``pod-level-resources`` (tests/fidelity)
    shows the live kube-scheduler doing so.
    """
    requests: Mapping[str, int] = pod.requests
    non_zero = pod.non_zero_requests
    if not use_requested and _pod_level_resources_set(pod):
        spec = pod.raw.get("spec") or {}
        containers_only = {
            **pod.raw,
            "spec": {k: v for k, v in spec.items() if k != "resources"},
        }
        requests = pod_requests(containers_only)
        non_zero = pod_non_zero_requests(containers_only)
    out = np.zeros(len(names), dtype=np.int64)
    for i, name in enumerate(names):
        if not use_requested and name == "cpu":
            out[i] = non_zero[0]
        elif not use_requested and name == "memory":
            out[i] = non_zero[1]
        else:
            out[i] = requests.get(name, 0)
    return out


def _pod_level_resources_set(pod: PodInfo) -> bool:
    spec = pod.raw.get("spec") or {}
    resources = spec.get("resources") if isinstance(spec, Mapping) else None
    return isinstance(resources, Mapping) and bool(
        resources.get("requests") or resources.get("limits")
    )


@dataclass(frozen=True, slots=True)
class AllocationMatrices:
    """Allocatable and would-be-requested amounts, ``(resources, nodes)``; 0/0 = not scored.

    One row per resource: numpy runs each operation over a row of candidates
    as one contiguous loop, where ``(nodes, resources)`` made it loop over two
    or three elements per node (an add over 750 nodes took 4 us, not 0.5).
    """

    allocatable: IntArray
    requested: IntArray

    @property
    def scored(self) -> BoolArray:
        scored: BoolArray = self.allocatable != 0
        return scored


_CPU_AND_MEMORY: Final = ("cpu", "memory")
_CPU_AND_MEMORY_COLUMNS: Final = np.array([[CPU], [MEMORY]], dtype=np.int64)


def _gather(matrix: IntArray, rows: IntArray, columns: IntArray) -> IntArray:
    """``matrix[rows][:, columns].T`` in one C-contiguous take (a row per column).

    ``columns`` is a column vector of column numbers.
    """
    gathered: IntArray = matrix.ravel().take(rows * matrix.shape[1] + columns)
    return gathered


def allocation_matrices(
    nodes: NodeSet, names: Sequence[str], pod_requests: IntArray, use_requested: bool
) -> AllocationMatrices:
    """kube's calculateResourceAllocatableRequest for every candidate and resource at once."""
    table = nodes.table
    rows = nodes.rows
    # cpu and memory: the requests placed on each node, or (Fit's strategies)
    # with kube's non-zero defaults for pods that request none.
    placed = table.requested if use_requested else table.non_zero_requested
    if tuple(names) == _CPU_AND_MEMORY:  # the default resources
        alloc = _gather(table.allocatable, rows, _CPU_AND_MEMORY_COLUMNS)
        req = _gather(placed, rows, _CPU_AND_MEMORY_COLUMNS)
        req += pod_requests[:, np.newaxis]
    else:
        alloc = np.zeros((len(names), len(rows)), dtype=np.int64)
        req = np.zeros((len(names), len(rows)), dtype=np.int64)
        for j, name in enumerate(names):
            pod_request = int(pod_requests[j])
            if name in _CPU_AND_MEMORY:
                column = _CPU_AND_MEMORY_COLUMNS[_CPU_AND_MEMORY.index(name)]
                alloc[j] = _gather(table.allocatable, rows, column)
                req[j] = _gather(placed, rows, column) + pod_request
                continue
            if name == "ephemeral-storage":
                column_or_none: int | None = EPHEMERAL_STORAGE
            elif is_scalar_resource_name(name) and pod_request != 0:
                column_or_none = table.resource_index.get(name)
            else:
                # A scalar resource the pod does not ask for does not count for
                # it; anything else (e.g. "pods") is not scored in kube: 0/0.
                column_or_none = None
            if column_or_none is not None:
                column = np.array(column_or_none, dtype=np.int64)
                alloc[j] = _gather(table.allocatable, rows, column)
                req[j] = _gather(table.requested, rows, column) + pod_request
    # Where the node has none of a resource (0 allocatable) it is not scored: 0/0.
    if not alloc.all():
        np.multiply(req, alloc != 0, out=req)
    return AllocationMatrices(alloc, req)


def _column_sums(matrix: IntArray) -> IntArray:
    """``matrix.sum(axis=0)`` over a few resource rows, row by row (exact for integers)."""
    k, n = matrix.shape
    if k == 0:
        return np.zeros(n, dtype=np.int64)
    total: IntArray = matrix[0].copy()
    for j in range(1, k):
        total += matrix[j]
    return total


def least_allocated(m: AllocationMatrices, weights: IntArray) -> IntArray:
    """Favour free capacity: mean over resources of ``(alloc - req) * 100 / alloc``."""
    scored = m.scored
    if scored.all():
        # The usual case (every node has every scored resource): no masking needed.
        per_resource = (m.allocatable - m.requested) * MAX_NODE_SCORE // m.allocatable
        per_resource[m.requested > m.allocatable] = 0
        return _all_scored_mean(per_resource, weights)
    safe_alloc = np.where(scored, m.allocatable, 1)
    per_resource = np.where(
        scored & (m.requested <= m.allocatable),
        (m.allocatable - m.requested) * MAX_NODE_SCORE // safe_alloc,
        0,
    )
    return _weighted_floor_mean(per_resource, scored, weights)


def most_allocated(m: AllocationMatrices, weights: IntArray) -> IntArray:
    """Favour packed nodes: mean of ``min(req, alloc) * 100 / alloc``."""
    scored = m.scored
    safe_alloc = np.where(scored, m.allocatable, 1)
    requested = np.minimum(m.requested, m.allocatable)
    per_resource = np.where(scored, requested * MAX_NODE_SCORE // safe_alloc, 0)
    return _weighted_floor_mean(per_resource, scored, weights)


def _all_scored_mean(per_resource: IntArray, weights: IntArray) -> IntArray:
    """:func:`_weighted_floor_mean` when every resource is scored on every node."""
    weight_sum = int(weights.sum())
    if weight_sum <= 0:
        return np.zeros(per_resource.shape[1], dtype=np.int64)
    node_score = _column_sums(per_resource * weights[:, np.newaxis])
    node_score //= weight_sum
    return node_score


def _weighted_floor_mean(per_resource: IntArray, scored: BoolArray, weights: IntArray) -> IntArray:
    weight_matrix = np.where(scored, weights[:, np.newaxis], 0)
    node_score = _column_sums(per_resource * weight_matrix)
    weight_sum = _column_sums(weight_matrix)
    return np.where(weight_sum > 0, node_score // np.maximum(weight_sum, 1), 0).astype(np.int64)


MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


def broken_linear(utilization: IntArray, points: Sequence[tuple[int, int]]) -> IntArray:
    """kube's BuildBrokenLinearFunction, with Go's truncating division on falling segments."""
    p = np.asarray(utilization, dtype=np.int64)
    out = np.full(p.shape, points[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=np.bool_)
    for i, (u, s) in enumerate(points):
        here = ~done & (p <= u)
        if i == 0:
            value = np.full(p.shape, s, dtype=np.int64)
        else:
            u0, s0 = points[i - 1]
            num = (s - s0) * (p - u0)
            quotient = np.abs(num) // (u - u0)
            value = s0 + np.where(num < 0, -quotient, quotient)
        out = np.where(here, value, out)
        done |= here
    return out


def requested_to_capacity_ratio(
    m: AllocationMatrices, weights: IntArray, shape: Sequence[tuple[int, int]]
) -> IntArray:
    """Score each resource's utilization through the user's piecewise-linear shape.

    Shape scores are on kube's 0-10 scale and are multiplied by 10; resources
    scoring 0 drop out of the weighted mean, which is rounded half away from
    zero (Go's math.Round).
    """
    points = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
    scored = m.scored
    safe_alloc = np.where(scored, m.allocatable, 1)
    utilization = np.where(
        m.requested > m.allocatable,
        MAX_UTILIZATION,
        m.requested * MAX_UTILIZATION // safe_alloc,
    )
    per_resource = broken_linear(utilization, points)
    counted = scored & (per_resource > 0)
    weight_matrix = np.where(counted, weights[:, np.newaxis], 0)
    node_score = (per_resource * weight_matrix).sum(axis=0)
    weight_sum = weight_matrix.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = node_score / np.maximum(weight_sum, 1)
    return np.where(weight_sum > 0, np.floor(mean + 0.5), 0).astype(np.int64)


def balanced_allocation(m: AllocationMatrices, pod_requests: IntArray) -> IntArray:
    """kube 1.36's score: how much placing the pod improves the node's balance.

    ``balance`` is ``(1 - std) * 100`` of the per-resource requested fractions
    (see :func:`resource_balance`), in [50, 100]. kube scores the change it
    makes, mapped back to [50, 100]: ``50 + (50 + with_pod - without_pod) / 2``
    (Go integer division; the numerator is never negative). An unchanged
    balance scores 75, better balance moves towards 100, worse towards 50.
    Resources left out with the pod (0/0) are left out without it too.
    """
    scored = m.scored
    half = MAX_NODE_SCORE // 2
    if len(scored) == 2 and scored.all():
        # The usual case, both balances in one pass of resource_balance's formula.
        requested = np.empty((2, *m.requested.shape), dtype=np.int64)
        requested[0] = m.requested
        np.subtract(m.requested, pod_requests[:, np.newaxis], out=requested[1])
        fractions = np.minimum(requested / m.allocatable, 1.0)
        std = np.abs((fractions[:, 0] - fractions[:, 1]) / 2)
        balance = np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
        two: IntArray = half + (half + balance[0] - balance[1]) // 2
        return two
    without_pod = m.requested - pod_requests[:, np.newaxis]
    if not scored.all():
        without_pod *= scored
    with_pod = resource_balance(m.requested, m.allocatable, scored)
    before = resource_balance(without_pod, m.allocatable, scored)
    out: IntArray = half + (half + with_pod - before) // 2
    return out


def resource_balance(requested: IntArray, allocatable: IntArray, scored: BoolArray) -> IntArray:
    """``(1 - std) * 100`` of the per-resource fractions (capped at 1), as kube computes it.

    With exactly two scored resources kube uses ``|f0 - f1| / 2``; with more
    the population standard deviation; with fewer, zero. Sums run resource by
    resource in order so the float results equal Go's. Arrays are
    ``(resources, nodes)``.
    """
    n_res, n_nodes = scored.shape
    if n_res == 2 and scored.all():
        # The usual case (cpu and memory on every node): kube's two-resource formula.
        fractions = np.minimum(requested / allocatable, 1.0)
        std = np.abs((fractions[0] - fractions[1]) / 2)
        balance: IntArray = np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
        return balance
    safe_alloc = np.where(scored, allocatable, 1).astype(np.float64)
    fractions = np.minimum(requested.astype(np.float64) / safe_alloc, 1.0)
    count = _column_sums(scored.astype(np.int64))
    total = np.zeros(n_nodes, dtype=np.float64)
    for j in range(n_res):
        total = total + np.where(scored[j], fractions[j], 0.0)
    std = np.zeros(n_nodes, dtype=np.float64)
    # Two scored resources: the first and second in resource order.
    first = np.full(n_nodes, np.nan)
    second = np.full(n_nodes, np.nan)
    for j in range(n_res):
        take_first = scored[j] & np.isnan(first)
        take_second = scored[j] & ~np.isnan(first) & ~take_first & np.isnan(second)
        first = np.where(take_first, fractions[j], first)
        second = np.where(take_second, fractions[j], second)
    two = count == 2
    std = np.where(two, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        mean = total / np.maximum(count, 1)
        acc = np.zeros(n_nodes, dtype=np.float64)
        for j in range(n_res):
            dev = fractions[j] - mean
            acc = acc + np.where(scored[j], dev * dev, 0.0)
        std = np.where(many, np.sqrt(acc / np.maximum(count, 1)), std)
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


__all__ = [
    "DEFAULT_RESOURCES",
    "STANDARD_RESOURCES",
    "AllocationMatrices",
    "ResourceSpec",
    "allocation_matrices",
    "balanced_allocation",
    "broken_linear",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "least_allocated",
    "most_allocated",
    "pod_score_requests",
    "requested_to_capacity_ratio",
    "resource_balance",
]
