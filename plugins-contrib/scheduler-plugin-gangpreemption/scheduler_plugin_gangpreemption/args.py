"""``pluginConfig`` args of GangPreemption.

The candidate-count fields are kube-scheduler's ``DefaultPreemptionArgs``
(same names, defaults and rule), so a profile that swaps DefaultPreemption
for GangPreemption keeps its tuning.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator
from scheduler.api import PluginArgs


class GangPreemptionArgs(PluginArgs):
    min_candidate_nodes_percentage: int = Field(
        default=10,
        ge=0,
        le=100,
        description="As DefaultPreemption's: the share of nodes a single pod's dry run "
        "looks for candidates on.",
    )
    min_candidate_nodes_absolute: int = Field(
        default=100,
        ge=0,
        description="As DefaultPreemption's: at least this many candidates (at most all nodes).",
    )
    respect_disruption_mode: bool = Field(
        default=False,
        description="Evict the pods of a native PodGroup whose spec.disruptionMode is "
        "'Pod' one by one, as kube's workload-aware preemption does. Off: every gang "
        "(minMember / minCount above 1) is evicted whole or not at all, whatever its "
        "disruptionMode (which kube-apiserver defaults to 'Pod').",
    )
    preemption_hold_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How long, at most, the members of a gang that preempted are held "
        "back (PreEnqueue) while its victims terminate.",
    )

    @model_validator(mode="after")
    def _not_both_zero(self) -> Self:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage cannot be zero at the same time as "
                "minCandidateNodesAbsolute"
            )
        return self
