"""NodeResourcesBalancedAllocation: prefer nodes whose resources fill up evenly.

A node with 90% of its cpu and 10% of its memory requested strands memory no
other pod can use. A node's balance is ``(1 - std of the requested fractions)
* 100`` over the configured resources (cpu and memory by default), counting
placed pods at their real requests; since kube 1.36 the score is the change the
pod makes to it, ``50 + (50 + balance_with_pod - balance_without_pod) / 2``
(75 = unchanged; towards 100 = better balanced). Best-effort pods (no requests
at all) are not scored: every node would look equally balanced and they would
pile up.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field, field_validator

from scheduler.api import CycleState, Plugin, Status, hookimpl
from scheduler.api.handle import Handle
from scheduler.plugins._helpers import PluginArgs, coerce_args
from scheduler.plugins.noderesources.allocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    allocation_matrices,
    balanced_allocation,
    pod_score_requests,
    validate_resource_names,
)
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME

IntArray = npt.NDArray[np.int64]


class NodeResourcesBalancedAllocationArgs(PluginArgs):
    """kube's ``NodeResourcesBalancedAllocationArgs``: resources, each with weight 1."""

    resources: list[ResourceSpec] = Field(default_factory=lambda: list(DEFAULT_RESOURCES))

    @field_validator("resources")
    @classmethod
    def _weights_are_one(cls, value: list[ResourceSpec]) -> list[ResourceSpec]:
        if not value:
            return list(DEFAULT_RESOURCES)
        for i, spec in enumerate(value):
            if spec.weight != 1:
                raise ValueError(f"resources[{i}].weight: Invalid value: {spec.weight}: must be 1")
        validate_resource_names(value)
        return value


class NodeResourcesBalancedAllocation(Plugin):
    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # results per node depend on that node only
    Args = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(coerce_args(NodeResourcesBalancedAllocationArgs, args), handle)
        parsed: NodeResourcesBalancedAllocationArgs = self.args
        self.resource_names = tuple(spec.name for spec in parsed.resources)

    @hookimpl
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        requests = pod_score_requests(pod, self.resource_names, use_requested=True)
        if not requests.any():
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, requests)
        return None

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> IntArray:
        requests = state.get(PRE_SCORE_STATE_KEY)
        if requests is None:
            requests = pod_score_requests(pod, self.resource_names, use_requested=True)
        matrices = allocation_matrices(nodes, self.resource_names, requests, use_requested=True)
        return balanced_allocation(matrices, requests)
