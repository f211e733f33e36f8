"""NodeResourcesFit: does the node have room for the pod's requests, and how full is it.

Filter compares, for every candidate at once, the pod's effective requests
(``PodInfo.requests``: init containers, sidecars and overhead already folded
in) with allocatable minus what placed pods request, resource by resource, and
rejects with kube's reasons ("Insufficient cpu", "Too many pods", ...). Score
ranks the feasible nodes with the configured ``scoringStrategy``.

An extended resource a DeviceClass maps (kube's DRAExtendedResource, beta
and on by default in 1.36) is checked here only on nodes whose allocatable
has some of it (a device plugin); elsewhere it is delegated to
DynamicResources, which allocates devices of the class for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from scheduler.api import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    Plugin,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.api.handle import Handle
from scheduler.model.devicecel import SelectorCache
from scheduler.plugins._helpers import FromStore, PluginArgs, coerce_args
from scheduler.plugins.dynamicresources.claims import CLAIMS, CLASSES, SLICES
from scheduler.plugins.dynamicresources.extended import (
    DEVICE_CLASS_PREFIX,
    DeviceClassResolver,
    is_dra_extended_resource_name,
)
from scheduler.plugins.dynamicresources.tracker import ClaimTracker
from scheduler.plugins.noderesources.allocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    WeightedResources,
    allocation_matrices,
    is_extended_resource_name,
    is_scalar_resource_name,
    least_allocated,
    most_allocated,
    pod_score_requests,
    requested_to_capacity_ratio,
)
from scheduler.plugins.noderesources.draextended import DeviceTotals, SliceSet
from scheduler.state.nodetable import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, NodeSet
from scheduler.state.pod import PodInfo

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
DRA_PRE_SCORE_STATE_KEY = "PreScoreDRA" + NAME

IntArray = npt.NDArray[np.int64]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


class UtilizationShapePoint(PluginArgs):
    utilization: int = Field(ge=0, le=100)
    score: int = Field(ge=0, le=10)


class RequestedToCapacityRatioParam(PluginArgs):
    shape: list[UtilizationShapePoint] = Field(min_length=1)

    @model_validator(mode="after")
    def _increasing(self) -> RequestedToCapacityRatioParam:
        for i in range(1, len(self.shape)):
            if self.shape[i].utilization <= self.shape[i - 1].utilization:
                raise ValueError(
                    f"shape[{i}].utilization: Invalid value: {self.shape[i].utilization}: "
                    "utilization values must be sorted in increasing order"
                )
        return self


class ScoringStrategy(WeightedResources):
    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    resources: list[ResourceSpec] = Field(default_factory=lambda: list(DEFAULT_RESOURCES))
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @model_validator(mode="after")
    def _defaults_and_shape(self) -> ScoringStrategy:
        if not self.resources:
            # kube's v1 defaulting: an empty list means cpu and memory, weight 1.
            object.__setattr__(self, "resources", list(DEFAULT_RESOURCES))
        if self.type == REQUESTED_TO_CAPACITY_RATIO and self.requested_to_capacity_ratio is None:
            raise ValueError(
                "requestedToCapacityRatio: Required value: "
                "requestedToCapacityRatio is required for RequestedToCapacityRatio"
            )
        return self


class NodeResourcesFitArgs(PluginArgs):
    """kube's ``NodeResourcesFitArgs`` (v1) with its defaults."""

    ignored_resources: list[str] = Field(default_factory=list)
    ignored_resource_groups: list[str] = Field(default_factory=list)
    scoring_strategy: ScoringStrategy = Field(default_factory=ScoringStrategy)

    @model_validator(mode="after")
    def _groups_have_no_slash(self) -> NodeResourcesFitArgs:
        for i, group in enumerate(self.ignored_resource_groups):
            if "/" in group:
                raise ValueError(
                    f"ignoredResourceGroups[{i}]: Invalid value: {group!r}: "
                    "resource group name can't contain '/'"
                )
        return self


@dataclass(frozen=True, slots=True)
class _PodRequest:
    """The pod's requests checked by Filter (PreFilter state; read-only, so shared on clone)."""

    cpu: int
    memory: int
    ephemeral_storage: int
    scalars: tuple[tuple[str, int], ...]

    @property
    def empty(self) -> bool:
        return not (self.cpu or self.memory or self.ephemeral_storage or self.scalars)


def compute_pod_request(pod: PodInfo) -> _PodRequest:
    """kube's computePodResourceRequest over the parsed requests (only resources kube checks)."""
    scalars = tuple(
        (name, amount)
        for name, amount in sorted(pod.requests.items())
        if amount > 0 and is_scalar_resource_name(name)
    )
    return _PodRequest(
        cpu=pod.requests.get("cpu", 0),
        memory=pod.requests.get("memory", 0),
        ephemeral_storage=pod.requests.get("ephemeral-storage", 0),
        scalars=scalars,
    )


def _deleted_pod_was_placed(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Deleting a pod frees room only if it was on (or nominated to) a node."""
    if new is not None:
        return QueueingHint.QUEUE
    if isinstance(old, dict):
        spec = old.get("spec") or {}
        status = old.get("status") or {}
        placed = spec.get("nodeName") or status.get("nominatedNodeName")
    else:
        placed = getattr(old, "node_name", "") or getattr(old, "nominated_node_name", "")
    return QueueingHint.QUEUE if placed else QueueingHint.SKIP


class NodeResourcesFit(Plugin):
    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # results per node depend on that node only
    pods_via_requested: ClassVar[bool] = True  # Filter sees pods only via `requested`
    # DeviceClasses say which extended resources DRA may provide. Verdicts that
    # depend on them stay batch-safe: a pod requesting a mapped resource has
    # DynamicResources (not node-local) active, so it never takes the batch path.
    # Scoring a DRA-backed resource counts devices: slices and allocated claims.
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (CLASSES, SLICES, CLAIMS)
    Args = NodeResourcesFitArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(coerce_args(NodeResourcesFitArgs, args), handle)
        parsed: NodeResourcesFitArgs = self.args
        self.ignored_resources = frozenset(parsed.ignored_resources)
        self.ignored_resource_groups = frozenset(parsed.ignored_resource_groups)
        strategy = parsed.scoring_strategy
        self.strategy = strategy.type
        self.resource_names = tuple(spec.name for spec in strategy.resources)
        self.weights = np.array([spec.weight for spec in strategy.resources], dtype=np.int64)
        ratio = strategy.requested_to_capacity_ratio
        self.shape = tuple((p.utilization, p.score) for p in ratio.shape) if ratio else ()
        self._resolver = FromStore(lambda: handle.store(*CLASSES), DeviceClassResolver)
        self._slices = FromStore(lambda: handle.store(*SLICES), SliceSet)
        self._claims: ClaimTracker | None = None
        self._cel = SelectorCache()
        # Scored resources that may be DRA-backed (kube's getDRAPreScoredParams
        # looks only at those): the others never need the device counts.
        self._dra_scored = [
            (j, name)
            for j, name in enumerate(self.resource_names)
            if is_dra_extended_resource_name(name)
        ]

    def resolver(self) -> DeviceClassResolver:
        """kube's DeviceClassResolver, rebuilt when the DeviceClasses change."""
        return self._resolver.get()

    # -- filter ---------------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> None:
        state.write(PRE_FILTER_STATE_KEY, compute_pod_request(pod))

    def _ignored(self, name: str) -> bool:
        if not is_extended_resource_name(name):
            return False
        group = name.split("/", 1)[0]
        return name in self.ignored_resources or group in self.ignored_resource_groups

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        request = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(request, _PodRequest):
            request = compute_pod_request(pod)
        table = nodes.table
        rows = nodes.rows
        result = FilterResult(len(rows))
        # One gather of the candidates' rows, then column views: ``m[:, col].take(rows)``
        # copies the whole strided column first, whatever the number of candidates.
        allocatable = table.allocatable.take(rows, axis=0)
        requested = table.requested.take(rows, axis=0)
        result.reject(requested[:, PODS] + 1 > allocatable[:, PODS], "Too many pods")
        if request.empty:
            return result
        for amount, col, reason in (
            (request.cpu, CPU, "Insufficient cpu"),
            (request.memory, MEMORY, "Insufficient memory"),
            (request.ephemeral_storage, EPHEMERAL_STORAGE, "Insufficient ephemeral-storage"),
        ):
            if amount > 0:
                offered = allocatable[:, col]
                _reject(result, amount, offered, offered - requested[:, col], reason)
        resolver: DeviceClassResolver | None = None
        for name, amount in request.scalars:
            if self._ignored(name):
                continue
            col_or_none = table.resource_index.get(name)
            delegated = False
            if is_dra_extended_resource_name(name):
                if resolver is None:
                    resolver = self.resolver()
                # kube's shouldDelegateResourceToDRA: where the node has none.
                delegated = resolver.get(name) is not None
            if col_or_none is None:
                if delegated:
                    continue  # no node has any: DynamicResources decides everywhere
                # No node has ever offered it: every candidate lacks it, for good.
                result.reject_unresolvable(
                    np.ones(len(rows), dtype=np.bool_), f"Insufficient {name}"
                )
                continue
            offered = allocatable[:, col_or_none]
            free = offered - requested[:, col_or_none]
            if delegated:
                # Where the node has none, DynamicResources allocates devices instead.
                free = np.where(offered > 0, free, amount)
            _reject(result, amount, offered, free, f"Insufficient {name}")
        return result

    # -- score ----------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> None:
        state.write(
            PRE_SCORE_STATE_KEY,
            pod_score_requests(pod, self.resource_names, use_requested=False),
        )
        state.write(DRA_PRE_SCORE_STATE_KEY, self._dra_pre_score())

    def _dra_pre_score(self) -> tuple[list[tuple[int, Any]], DeviceTotals] | None:
        """kube's getDRAPreScoredParams: device counts, if a scored resource is DRA-backed."""
        if not self._dra_scored:
            return None
        resolver = self.resolver()
        classes = [(j, resolver.get(name)) for j, name in self._dra_scored]
        backed = [(j, klass) for j, klass in classes if klass is not None]
        if not backed:
            return None
        if self._claims is None:
            self._claims = ClaimTracker(lambda: self.handle.store(*CLAIMS))
        return backed, DeviceTotals(self._slices.get(), self._claims.taken(), self._cel)

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> IntArray | Status:
        pod_requests = state.get(PRE_SCORE_STATE_KEY)
        if pod_requests is None:
            pod_requests = pod_score_requests(pod, self.resource_names, use_requested=False)
            state.write(DRA_PRE_SCORE_STATE_KEY, self._dra_pre_score())
        matrices = allocation_matrices(nodes, self.resource_names, pod_requests, False)
        dra = state.get(DRA_PRE_SCORE_STATE_KEY)
        if dra is not None:
            _count_dra_devices(nodes, pod_requests, matrices.allocatable, matrices.requested, *dra)
        if self.strategy == MOST_ALLOCATED:
            scores = most_allocated(matrices, self.weights)
        elif self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            scores = requested_to_capacity_ratio(matrices, self.weights, self.shape)
        else:
            scores = least_allocated(matrices, self.weights)
        # np.clip's Python-level checks cost twice these two ufuncs per pod.
        clipped: IntArray = np.minimum(np.maximum(scores, 0), MAX_NODE_SCORE)
        return clipped

    # -- requeueing -----------------------------------------------------------------

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                _deleted_pod_was_placed,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)
            ),
            # A class may come to map an extended resource the pod waits for.
            ClusterEventWithHint(
                ClusterEvent("DeviceClass", ActionType.ADD | ActionType.UPDATE),
                _device_class_changed,
            ),
        ]


def _reject(
    result: FilterResult, amount: int, offered: IntArray, free: IntArray, reason: str
) -> None:
    """Reject where ``amount`` exceeds what is free; for good where it exceeds the node.

    kube 1.36's InsufficientResource.Unresolvable: a request larger than the
    node's allocatable cannot be met by preempting anything, so the node is
    UnschedulableAndUnresolvable and preemption does not consider it.
    """
    insufficient = amount > free
    if not insufficient.any():
        return
    beyond = insufficient & (amount > offered)
    result.reject(insufficient & ~beyond, reason)
    result.reject_unresolvable(beyond, reason)


def _count_dra_devices(
    nodes: NodeSet,
    pod_requests: IntArray,
    allocatable: IntArray,
    requested: IntArray,
    backed: list[tuple[int, Any]],
    totals: DeviceTotals,
) -> None:
    """kube's calculateResourceAllocatableRequest for DRA-backed resources, in place.

    Where the node's allocatable has none of a requested DRA-backed resource,
    the devices of its class count instead (when the node has any).
    """
    table = nodes.table
    rows = nodes.rows
    for j, klass in backed:
        amount = int(pod_requests[j])
        if amount == 0:
            continue
        for k in np.flatnonzero(allocatable[j] == 0).tolist():
            row = int(rows[k])
            node = {"metadata": {"name": table.names[row], "labels": table.node_info(row).labels}}
            capacity, used = totals.totals(node, klass)
            if capacity > 0:
                allocatable[j, k] = capacity
                requested[j, k] = used + amount


def _device_class_changed(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """kube's isSchedulableAfterDeviceClassEvent: does the class now map a requested name?"""
    if not isinstance(new, dict):
        return QueueingHint.QUEUE
    wanted = (new.get("spec") or {}).get("extendedResourceName") or ""
    if isinstance(old, dict):
        if ((old.get("spec") or {}).get("extendedResourceName") or "") == wanted:
            return QueueingHint.SKIP
    else:
        name = str((new.get("metadata") or {}).get("name") or "")
        if DEVICE_CLASS_PREFIX + name in pod.requests:
            return QueueingHint.QUEUE
    if wanted and wanted in pod.requests:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
