"""The pluggy PluginManager specialised for scheduler plugins.

pluggy registers and validates plugins; the runtime then calls each plugin's
implementation itself, one plugin at a time, with the extension point's
kube-scheduler semantics (Filter narrows the candidates plugin by plugin,
Score weighs each plugin, PostFilter and Bind stop at the first plugin that
decides). pluggy's own hook call never runs, so the pluggy options that
change how a hook call is made are refused when a plugin is loaded
(:meth:`SchedulerPluginManager.refusal`), never silently ignored:

- ``wrapper=True`` / ``hookwrapper=True``: there is no single hook call over
  all plugins to wrap;
- ``tryfirst`` / ``trylast``: the order at an extension point is the
  profile's (kube-scheduler's config order; plugin ``priority`` by default);
- an unmarked generator, or ``async def`` outside the binding cycle, would
  fail every pod at run time.

``specname`` works (the implementation answers the named hook) and
``optionalhook`` works (an implementation of a hook this framework does not
have is never called, instead of failing the load); ``historic`` and
``firstresult`` are hookspec options, which are the framework's.
"""

from __future__ import annotations

import inspect
from typing import Any

import pluggy

from scheduler.api.hookspecs import PROJECT_NAME, SchedulerHookSpecs
from scheduler.api.plugin import NodePlugin
from scheduler.config.points import ExtensionPoint

# Which configured extension point each hook belongs to. The PreFilter
# extensions, NormalizeScore and Unreserve belong to their parent point, as in
# kube-scheduler, and the transformers (API 2.1) to the point they run before
# (a plugin's ``before_filter`` runs when it is enabled at Filter);
# events_to_register is not a point (it is asked once).
HOOK_POINTS: dict[str, ExtensionPoint] = {
    "pre_enqueue": ExtensionPoint.PRE_ENQUEUE,
    "queue_sort_key": ExtensionPoint.QUEUE_SORT,
    "before_pre_filter": ExtensionPoint.PRE_FILTER,
    "after_pre_filter": ExtensionPoint.PRE_FILTER,
    "pre_filter": ExtensionPoint.PRE_FILTER,
    "before_filter": ExtensionPoint.FILTER,
    "before_score": ExtensionPoint.SCORE,
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


#: Hooks of the binding cycle, which the framework awaits: only they may be ``async def``.
ASYNC_HOOKS: frozenset[str] = frozenset({"pre_bind", "bind", "post_bind"})


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

    def refusal(self, plugin: object) -> str | None:
        """Why ``plugin``'s hook implementations cannot run as their author expects, or None.

        Checked once at load (see the module doc), so the hot path never
        has to look at pluggy options.
        """
        for caller in self.get_hookcallers(plugin) or ():
            for impl in caller.get_hookimpls():
                if impl.plugin is not plugin:
                    continue
                problem = _impl_problem(caller.name, impl)
                if problem is not None:
                    method = getattr(impl.function, "__qualname__", impl.function)
                    return f"hook {caller.name!r} ({method}) {problem}"
        return None


def _impl_problem(hook: str, impl: pluggy.HookImpl) -> str | None:
    point = HOOK_POINTS.get(hook)
    where = f"the {point.value} extension point" if point is not None else f"hook {hook!r}"
    if impl.wrapper or impl.hookwrapper:
        flag = "wrapper=True" if impl.wrapper else "hookwrapper=True"
        return (
            f"is a pluggy hook wrapper ({flag}), which this framework does not support: "
            "it calls each plugin's implementation on its own, with kube-scheduler's "
            f"semantics for {where}, so there is no hook call over all plugins to wrap; "
            "implement the hook itself instead"
        )
    if impl.tryfirst or impl.trylast:
        flag = "tryfirst=True" if impl.tryfirst else "trylast=True"
        return (
            f"is marked {flag}, which this framework does not support: the order of "
            f"plugins at {where} is the profile's (kube-scheduler's config order; the "
            "plugins' `priority` by default); remove the flag and order the plugin in the "
            "configuration or with its `priority` class attribute"
        )
    function = impl.function
    if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
        return (
            "is a generator function: a hook returns its result (pluggy wrappers are not supported)"
        )
    if inspect.iscoroutinefunction(function) and hook not in ASYNC_HOOKS:
        return (
            f"is async def, but {where} runs in the synchronous scheduling cycle; only "
            f"{', '.join(sorted(ASYNC_HOOKS))} may be async"
        )
    return None
