"""A fake plugin catalog for configuration tests.

Resolution talks to installed plugins only through the catalog protocol, so a
table of names, extension points, args models and priorities is a faithful
stand-in. The table mirrors kube-scheduler's default plugins (minus the volume
plugins, and minus DynamicResources, so that the handling of kube plugins a
catalog lacks can be tested) plus a few third-party style plugins.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from scheduler.config import ExtensionPoint
from scheduler.errors import UserError
from scheduler.model.featuregates import FeatureSpec

P = ExtensionPoint


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ResourceSpec(_Args):
    name: str
    weight: int = 1


class ScoringStrategy(_Args):
    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    resources: list[ResourceSpec] = Field(
        default_factory=lambda: [ResourceSpec(name="cpu"), ResourceSpec(name="memory")]
    )


class NodeResourcesFitArgs(_Args):
    ignored_resources: list[str] = Field(default_factory=list, alias="ignoredResources")
    scoring_strategy: ScoringStrategy = Field(
        default_factory=ScoringStrategy, alias="scoringStrategy"
    )


class InterPodAffinityArgs(_Args):
    hard_pod_affinity_weight: int = Field(default=1, ge=0, le=100, alias="hardPodAffinityWeight")


class DefaultPreemptionArgs(_Args):
    min_candidate_nodes_percentage: int = Field(default=10, alias="minCandidateNodesPercentage")
    min_candidate_nodes_absolute: int = Field(default=100, alias="minCandidateNodesAbsolute")


class PodTopologySpreadArgs(_Args):
    defaulting_type: Literal["System", "List"] = Field(default="System", alias="defaultingType")


class CoschedulingArgs(_Args):
    permit_waiting_time_seconds: int = Field(default=60, alias="permitWaitingTimeSeconds")


class NeedsEndpointArgs(_Args):
    endpoint: str


@dataclass(frozen=True)
class FakePlugin:
    points: frozenset[ExtensionPoint]
    args: type[BaseModel] | None = None
    priority: int = 0
    gated_by: str | None = None
    feature_gates: Mapping[str, FeatureSpec] = field(default_factory=dict)


def _p(
    *points: ExtensionPoint, args: type[BaseModel] | None = None, priority: int = 0
) -> FakePlugin:
    return FakePlugin(frozenset(points), args, priority)


KUBE_LIKE: dict[str, FakePlugin] = {
    "SchedulingGates": _p(P.PRE_ENQUEUE),
    "PrioritySort": _p(P.QUEUE_SORT),
    "NodeUnschedulable": _p(P.FILTER),
    "NodeName": _p(P.FILTER),
    "TaintToleration": _p(P.FILTER, P.PRE_SCORE, P.SCORE),
    "NodeAffinity": _p(P.PRE_FILTER, P.FILTER, P.PRE_SCORE, P.SCORE),
    "NodePorts": _p(P.PRE_FILTER, P.FILTER),
    "NodeResourcesFit": _p(P.PRE_FILTER, P.FILTER, P.PRE_SCORE, P.SCORE, args=NodeResourcesFitArgs),
    "PodTopologySpread": _p(
        P.PRE_FILTER, P.FILTER, P.PRE_SCORE, P.SCORE, args=PodTopologySpreadArgs
    ),
    "InterPodAffinity": _p(P.PRE_FILTER, P.FILTER, P.PRE_SCORE, P.SCORE, args=InterPodAffinityArgs),
    "DefaultPreemption": _p(P.POST_FILTER, args=DefaultPreemptionArgs),
    "NodeResourcesBalancedAllocation": _p(P.PRE_SCORE, P.SCORE),
    "ImageLocality": _p(P.SCORE),
    "DefaultBinder": _p(P.BIND),
    "NodeDeclaredFeatures": _p(P.PRE_FILTER, P.FILTER),
}

THIRD_PARTY: dict[str, FakePlugin] = {
    "Coscheduling": _p(
        P.QUEUE_SORT, P.PRE_FILTER, P.POST_FILTER, P.RESERVE, P.PERMIT, args=CoschedulingArgs
    ),
    "FifoSort": _p(P.QUEUE_SORT),
    "GpuBinPack": _p(P.FILTER, P.SCORE, priority=5),
    "NetworkAware": _p(P.FILTER, P.SCORE),
    "NeedsEndpoint": _p(P.FILTER, args=NeedsEndpointArgs),
    "AsyncBinder": _p(P.PRE_BIND, P.BIND, P.POST_BIND),
    # Implements every point: kube's framework tests use such a "testPlugin".
    "Everything": _p(*ExtensionPoint),
}


@dataclass
class FakeCatalog:
    """Implements :class:`scheduler.config.PluginCatalogView` from a table."""

    plugins: Mapping[str, FakePlugin] = field(default_factory=lambda: {**KUBE_LIKE, **THIRD_PARTY})
    broken: Mapping[str, str] = field(default_factory=dict)
    queried: list[str] = field(default_factory=list)

    def names(self) -> Collection[str]:
        return [*self.plugins, *self.broken]

    def _get(self, name: str) -> FakePlugin:
        self.queried.append(name)
        if name in self.broken:
            raise UserError(f"plugin {name!r} failed to load: {self.broken[name]}")
        return self.plugins[name]

    def extension_points(self, name: str) -> Collection[str]:
        return {p.value for p in self._get(name).points}

    def args_model(self, name: str) -> type[BaseModel] | None:
        return self._get(name).args

    def default_priority(self, name: str) -> int:
        return self._get(name).priority

    def gated_by(self, name: str) -> str | None:
        return self._get(name).gated_by

    def declared_feature_gates(self, name: str) -> Mapping[str, FeatureSpec]:
        return self._get(name).feature_gates
