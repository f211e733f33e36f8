"""kube-scheduler's default plugin set, kept as data, and the effective default config.

The defaults are kube-scheduler 1.36's list (``getDefaultPlugins`` with the
feature gates that are on by default applied), expressed as ``multiPoint``
entries exactly as kube does, so the precedence rules treat them the same way.
Plugins of this list that are not installed are dropped from the *defaults
only* (silently: a user who never named, say, GangScheduling should not be
told about it); a plugin the user enables that is not installed is always an
error.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.config.models import SchedulerConfiguration
from scheduler.model.featuregates import FeatureGates
from scheduler.model.kubegates import KUBE_FEATURE_GATES

if TYPE_CHECKING:
    from scheduler.config.resolve import PluginCatalogView

__all__ = [
    "DEFAULT_MULTI_POINT",
    "KUBE_IN_TREE_PLUGINS",
    "KUBE_PLUGINS",
    "KUBE_VERSION",
    "REMOVED_KUBE_PLUGINS",
    "DefaultPlugin",
    "default_config_document",
    "default_multi_point",
]


@dataclass(frozen=True, slots=True)
class DefaultPlugin:
    """One entry of the default ``multiPoint`` list; ``weight`` only matters for Score."""

    name: str
    weight: int | None = None
    gate: str | None = None
    """The feature gate kube's ``applyFeatureGates`` adds it under (None: always a default)."""


DEFAULT_MULTI_POINT: tuple[DefaultPlugin, ...] = (
    DefaultPlugin("SchedulingGates"),
    DefaultPlugin("PrioritySort"),
    DefaultPlugin("NodeUnschedulable"),
    DefaultPlugin("NodeName"),
    DefaultPlugin("TaintToleration", 3),
    DefaultPlugin("NodeAffinity", 2),
    DefaultPlugin("NodePorts"),
    DefaultPlugin("NodeResourcesFit", 1),
    DefaultPlugin("VolumeRestrictions"),
    DefaultPlugin("NodeVolumeLimits"),
    DefaultPlugin("VolumeBinding"),
    DefaultPlugin("VolumeZone"),
    DefaultPlugin("PodTopologySpread", 2),
    DefaultPlugin("InterPodAffinity", 2),
    # applyFeatureGates: DynamicResourceAllocation (GA, locked on) inserts it
    # just before DefaultPreemption, so that PostFilter frees an idle claim
    # before it evicts a pod.
    DefaultPlugin("DynamicResources", 2),
    DefaultPlugin("DefaultPreemption"),
    DefaultPlugin("NodeResourcesBalancedAllocation", 1),
    DefaultPlugin("ImageLocality", 1),
    DefaultPlugin("DefaultBinder"),
    # applyFeatureGates: NodeDeclaredFeatures (beta, on by default since 1.36)
    # appends it after the static list, then GangScheduling (alpha, off by
    # default) follows when its gate is on. (TopologyAwareWorkloadScheduling's
    # plugins would come next; we do not implement them.)
    DefaultPlugin("NodeDeclaredFeatures", gate="NodeDeclaredFeatures"),
    DefaultPlugin("GangScheduling", gate="GangScheduling"),
)
"""kube-scheduler 1.36's default plugins, in kube's order, as ``multiPoint`` entries."""

KUBE_VERSION = "1.36"
"""The kube-scheduler release whose plugin set and defaults these are."""

KUBE_PLUGINS: frozenset[str] = frozenset(
    {
        # pkg/scheduler/framework/plugins/names/names.go of kube 1.36.3, in its order.
        "PrioritySort",
        "DefaultBinder",
        "DefaultPreemption",
        "DynamicResources",
        "GangScheduling",
        "ImageLocality",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeDeclaredFeatures",
        "NodeName",
        "NodePorts",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "NodeUnschedulable",
        "NodeVolumeLimits",
        "PodTopologySpread",
        "SchedulingGates",
        "TaintToleration",
        "VolumeBinding",
        "VolumeRestrictions",
        "VolumeZone",
        "TopologyPlacementGenerator",
        "PodGroupPodsCount",
    }
)
"""Every plugin kube-scheduler 1.36 registers (its in-tree registry), so that a
kube 1.36 config naming any of them is understood: disabling one we do not
install is accepted silently, enabling one is an error that says we do not
implement it yet."""

REMOVED_KUBE_PLUGINS: frozenset[str] = frozenset(
    {
        "SelectorSpread",
        "ServiceAffinity",
        "AzureDiskLimits",
        "CinderLimits",
        "EBSLimits",
        "GCEPDLimits",
    }
)
"""Plugins older kube-schedulers had and 1.36 no longer registers. Old configs still
list them under ``disabled``, which is harmless, so disabling them is accepted."""

KUBE_IN_TREE_PLUGINS: frozenset[str] = KUBE_PLUGINS | REMOVED_KUBE_PLUGINS
"""Names of kube-scheduler's own plugins, past and present. Disabling one that is
not installed is accepted (it is not running either way), so kube configs load
unchanged."""


def default_multi_point(
    installed: Collection[str], gates: Mapping[str, bool] | None = None
) -> tuple[DefaultPlugin, ...]:
    """The default ``multiPoint`` list restricted to ``installed`` plugins whose gate is on.

    ``gates`` are the effective feature gates (None: kube's defaults).
    """
    if gates is None:
        gates = FeatureGates(KUBE_FEATURE_GATES, {})
    return tuple(
        p
        for p in DEFAULT_MULTI_POINT
        if p.name in installed and (p.gate is None or gates.get(p.gate, False))
    )


def _prune(value: Any) -> Any:
    """Drop empty plugin sets, lists and mappings, so the printed defaults stay readable."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def default_config_document(catalog: PluginCatalogView | None = None) -> dict[str, Any]:
    """The effective default configuration as a JSON/YAML-ready mapping.

    This is what ``pluggable-scheduler config defaults`` prints: a valid config
    file a user can start from. With a ``catalog`` the default plugin list is
    restricted to installed plugins and each one's default args are written out
    as ``pluginConfig``; without one, kube's full default list is shown.
    """
    config = SchedulerConfiguration()
    document: dict[str, Any] = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    names = catalog.names() if catalog is not None else [p.name for p in DEFAULT_MULTI_POINT]
    enabled: list[dict[str, Any]] = []
    for plugin in default_multi_point(set(names)):
        entry: dict[str, Any] = {"name": plugin.name}
        if plugin.weight is not None:
            entry["weight"] = plugin.weight
        enabled.append(entry)
    plugin_config: list[dict[str, Any]] = []
    if catalog is not None:
        for plugin in default_multi_point(set(names)):
            model = catalog.args_model(plugin.name)
            if model is not None:
                args = model.model_validate({}).model_dump(mode="json", by_alias=True)
                plugin_config.append({"name": plugin.name, "args": args})
    pruned: dict[str, Any] = _prune(document)
    for profile in pruned["profiles"]:
        profile["plugins"] = {"multiPoint": {"enabled": enabled}}
        if plugin_config:
            profile["pluginConfig"] = plugin_config
    return pruned
