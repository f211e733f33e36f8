"""The pluggy PluginManager specialised for scheduler plugins."""

from __future__ import annotations

from typing import Any

import pluggy

from scheduler.api.hookspecs import PROJECT_NAME, SchedulerHookSpecs
from scheduler.api.plugin import NodePlugin
from scheduler.config.points import ExtensionPoint

# Which configured extension point each hook belongs to. The PreFilter
# extensions, NormalizeScore and Unreserve belong to their parent point, as in
# kube-scheduler; events_to_register is not a point (it is asked once).
HOOK_POINTS: dict[str, ExtensionPoint] = {
    "pre_enqueue": ExtensionPoint.PRE_ENQUEUE,
    "queue_sort_key": ExtensionPoint.QUEUE_SORT,
    "pre_filter": ExtensionPoint.PRE_FILTER,
    "pre_filter_add_pod": ExtensionPoint.PRE_FILTER,
    "pre_filter_remove_pod": ExtensionPoint.PRE_FILTER,
    "filter": ExtensionPoint.FILTER,
    "post_filter": ExtensionPoint.POST_FILTER,
    "pre_score": ExtensionPoint.PRE_SCORE,
    "score": ExtensionPoint.SCORE,
    "normalize_score": ExtensionPoint.SCORE,
    "reserve": ExtensionPoint.RESERVE,
    "unreserve": ExtensionPoint.RESERVE,
    "permit": ExtensionPoint.PERMIT,
    "pre_bind": ExtensionPoint.PRE_BIND,
    "bind": ExtensionPoint.BIND,
    "post_bind": ExtensionPoint.POST_BIND,
}

# A point is implemented by a plugin when it has this (primary) hook: the
# config field's name, except QueueSort, whose hook returns a sort key.
POINT_HOOKS: dict[ExtensionPoint, str] = {
    point: "queue_sort_key" if point is ExtensionPoint.QUEUE_SORT else point.field_name
    for point in ExtensionPoint
}


class SchedulerPluginManager(pluggy.PluginManager):
    """pluggy's manager, aware of the per-node adapter.

    A :class:`NodePlugin` subclass inherits both vectorized hooks, but only
    the ones whose per-node method it defines should count as implemented.
    """

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(SchedulerHookSpecs)

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is not None:
            cls = plugin if isinstance(plugin, type) else type(plugin)
            if issubclass(cls, NodePlugin) and not cls.overrides(name):
                return None
        return opts

    def hooks_of(self, plugin: object) -> set[str]:
        """Names of the hooks ``plugin`` implements."""
        return {caller.name for caller in self.get_hookcallers(plugin) or ()}
