"""kube-scheduler's default plugin set, kept as data, and the effective default config.

The defaults are kube-scheduler v1's list (``getDefaultPlugins``), expressed as
``multiPoint`` entries exactly as kube does, so the precedence rules treat them
the same way. Plugins of this list that are not installed are dropped from the
*defaults only* (silently: we do not ship the volume plugins yet, and a user who
never named them should not be told about them); a plugin the user names that
is not installed is always an error.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.config.models import SchedulerConfiguration

if TYPE_CHECKING:
    from scheduler.config.resolve import PluginCatalogView

__all__ = [
    "DEFAULT_MULTI_POINT",
    "KUBE_IN_TREE_PLUGINS",
    "DefaultPlugin",
    "default_config_document",
    "default_multi_point",
]


@dataclass(frozen=True, slots=True)
class DefaultPlugin:
    """One entry of the default ``multiPoint`` list; ``weight`` only matters for Score."""

    name: str
    weight: int | None = None


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
    DefaultPlugin("DefaultPreemption"),
    DefaultPlugin("NodeResourcesBalancedAllocation", 1),
    DefaultPlugin("ImageLocality", 1),
    DefaultPlugin("DefaultBinder"),
)
"""kube-scheduler v1's default plugins, in kube's order, as ``multiPoint`` entries."""

KUBE_IN_TREE_PLUGINS: frozenset[str] = frozenset(
    {p.name for p in DEFAULT_MULTI_POINT}
    | {
        "DynamicResources",
        "SelectorSpread",
        "ServiceAffinity",
        # Removed in v1 but still seen in old configs' disabled lists.
        "AzureDiskLimits",
        "CinderLimits",
        "EBSLimits",
        "GCEPDLimits",
    }
)
"""Names of kube-scheduler's own plugins. Disabling one that is not installed is
accepted (it is not running either way), so kube configs load unchanged."""


def default_multi_point(installed: Collection[str]) -> tuple[DefaultPlugin, ...]:
    """The default ``multiPoint`` list restricted to ``installed`` plugins."""
    return tuple(p for p in DEFAULT_MULTI_POINT if p.name in installed)


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
