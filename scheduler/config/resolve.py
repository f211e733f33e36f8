"""Resolution of a profile's plugin sets into ordered per-extension-point plugin lists.

This is kube-scheduler's framework logic, carried over as facts:

1. The default plugins are a ``multiPoint`` list. The user's ``multiPoint``
   merges into it: ``disabled`` removes defaults (``*`` removes all), an enabled
   plugin that is also a default replaces that default *in place* (keeping its
   position, taking the user's weight), other enabled plugins are appended.
2. Each extension point then expands ``multiPoint``: a plugin joins every point
   it implements, unless the point disables it (or disables ``*``, which skips
   the expansion for that point). A plugin enabled explicitly at a point
   overrides its ``multiPoint`` entry. The order is: overriding plugins (in the
   point's order), then ``multiPoint`` plugins, then the point's other plugins.
3. A Score plugin's weight comes from its entry at ``score`` if any, else from
   ``multiPoint``; unset means 1.
4. Exactly one QueueSort plugin per profile, the same one with the same args in
   every profile; at least one Bind plugin.

On top of that, each point's list is sorted by plugin priority, highest
first, keeping the order above among equal priorities (DESIGN: "Plugins run in
priority order ... ties keep config order").

Resolution is a pure function of the config and a :class:`PluginCatalogView`:
it never imports plugins itself, so it is testable with a fake catalog and the
loader decides what and when to import.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ValidationError

from scheduler.config.defaults import (
    KUBE_IN_TREE_PLUGINS,
    KUBE_PLUGINS,
    KUBE_VERSION,
    REMOVED_KUBE_PLUGINS,
    default_multi_point,
)
from scheduler.config.extenders import EXTENDER_PLUGIN, ignored_resources, in_call_order
from scheduler.config.loading import validation_error_lines
from scheduler.config.models import (
    CircuitBreakerConfig,
    FailurePolicy,
    HookTimeoutOverrides,
    HookTimeouts,
    Plugin,
    SchedulerConfiguration,
    SchedulerProfile,
    semantic_problems,
)
from scheduler.config.points import MULTI_POINT, ExtensionPoint
from scheduler.distributions import install_hint
from scheduler.errors import UserError
from scheduler.model.featuregates import (
    ALL_ALPHA,
    ALL_BETA,
    FeatureGates,
    FeatureSpec,
    effective_gates,
)
from scheduler.model.kubegates import KUBE_FEATURE_GATE_DEPENDENCIES, KUBE_FEATURE_GATES
from scheduler.observability.logging import get_logger

_log = get_logger("scheduler.config.resolve")

__all__ = [
    "PluginCatalogView",
    "PluginEntry",
    "ResolvedProfile",
    "resolve_profiles",
]


class PluginCatalogView(Protocol):
    """What resolution needs to know about installed plugins.

    Resolution only asks about plugins the configuration (or the default
    plugin set) names, so a catalog may import plugins lazily.
    """

    def names(self) -> Collection[str]:
        """Names of every installed plugin (entry-point names)."""
        ...

    def extension_points(self, name: str) -> Collection[str]:
        """The :class:`ExtensionPoint` values (e.g. ``"filter"``) plugin ``name`` implements."""
        ...

    def args_model(self, name: str) -> type[BaseModel] | None:
        """The pydantic model of the plugin's args, or ``None`` if it takes none.

        Default args are ``args_model(name).model_validate({})``, so a plugin
        expresses its defaults as field defaults.
        """
        ...

    def default_priority(self, name: str) -> int:
        """The priority the plugin declares; higher runs earlier at every point."""
        ...

    def gated_by(self, name: str) -> str | None:
        """The feature gate that must be on for plugin ``name`` to load, if any."""
        ...

    def declared_feature_gates(self, name: str) -> Mapping[str, FeatureSpec]:
        """The feature gates plugin ``name`` declares (beside kube's)."""
        ...


class PluginEntry(NamedTuple):
    """A plugin at one extension point. ``weight`` is the Score weight (0 at other points)."""

    name: str
    weight: int


@dataclass(frozen=True)
class ResolvedProfile:
    """A profile ready for the framework: who runs where, in which order, with what args."""

    scheduler_name: str
    percentage_of_nodes_to_score: int | None
    """Profile value, else the top-level one, with kube's meaning (0: adaptive);
    None when neither is set (see :func:`scheduler.framework.cycle.nodes_to_find`)."""
    plugins: Mapping[ExtensionPoint, tuple[PluginEntry, ...]]
    """Every extension point (all keys present), plugins in run order."""
    plugin_args: Mapping[str, BaseModel]
    """Validated args of each enabled plugin that has an args model."""
    priorities: Mapping[str, int]
    """Effective priority of each enabled plugin."""
    timeouts: HookTimeouts
    """Hook budgets, with the profile's overrides (and per-plugin ones) applied."""
    failure_policy: Mapping[str, FailurePolicy] = field(default_factory=dict)
    """Each plugin's configured failure policy; a plugin not listed has ``Fail``."""
    circuit_breaker: CircuitBreakerConfig = field(default_factory=CircuitBreakerConfig)
    """When a failing plugin is taken out of the profile, and for how long."""
    feature_gates: FeatureGates = field(
        default_factory=lambda: FeatureGates(KUBE_FEATURE_GATES, {})
    )
    """The effective feature gates (the same for every profile of a config)."""
    shadow_of: str | None = None
    """The profile this one shadows (``pluggableScheduler.shadowOf``): it then only
    re-makes that profile's decisions, never its own (scheduler.engine.shadow)."""
    shadow_budget: float | None = None
    """The share of the scheduling loop's time the shadow may take (None: no limit)."""
    warnings: tuple[str, ...] = ()
    """Accepted but noteworthy config entries (field path first), e.g. args for a
    kube-scheduler plugin we do not implement; they are also logged."""

    def at(self, point: ExtensionPoint) -> tuple[PluginEntry, ...]:
        """The plugins at ``point``, in run order."""
        return self.plugins[point]

    def names_at(self, point: ExtensionPoint) -> tuple[str, ...]:
        """The names of the plugins at ``point``, in run order."""
        return tuple(entry.name for entry in self.plugins[point])

    @property
    def enabled_plugins(self) -> tuple[str, ...]:
        """Every plugin enabled at some point, each once, in first-seen point order.

        These are the plugins to import and instantiate for this profile.
        """
        seen: dict[str, None] = {}
        for point in ExtensionPoint:
            for entry in self.plugins[point]:
                seen.setdefault(entry.name)
        return tuple(seen)

    @property
    def score_weights(self) -> dict[str, int]:
        """Score plugin name to weight."""
        return {entry.name: entry.weight for entry in self.plugins[ExtensionPoint.SCORE]}


IGNORABLE_POINTS = frozenset(
    {
        ExtensionPoint.PRE_ENQUEUE,
        ExtensionPoint.PRE_FILTER,
        ExtensionPoint.FILTER,
        ExtensionPoint.POST_FILTER,
        ExtensionPoint.PRE_SCORE,
        ExtensionPoint.SCORE,
    }
)
"""Where ``failurePolicy: Ignore`` applies: points whose failure can be read as
"no opinion". Reserve, Permit, PreBind and Bind change or gate the cluster's
state, so their failures always fail the attempt."""

_BUDGET_POINTS: dict[str, ExtensionPoint] = {
    **{point.field_name: point for point in ExtensionPoint if point != ExtensionPoint.QUEUE_SORT},
    "permit_max_wait": ExtensionPoint.PERMIT,
}


@dataclass(frozen=True, slots=True)
class _Entry:
    """A plugin entry during resolution; ``path`` is None for a default entry."""

    name: str
    weight: int | None
    path: str | None


@dataclass
class _Resolver:
    catalog: PluginCatalogView
    installed: frozenset[str]
    gates: FeatureGates = field(default_factory=lambda: FeatureGates(KUBE_FEATURE_GATES, {}))
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)
    _points: dict[str, frozenset[ExtensionPoint]] = field(default_factory=dict)

    # ------------------------------------------------------------------ helpers

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def points_of(self, name: str) -> frozenset[ExtensionPoint]:
        if name not in self._points:
            try:
                points = frozenset(ExtensionPoint(p) for p in self.catalog.extension_points(name))
            except UserError as err:
                # An installed plugin that cannot be imported: report it once and
                # keep going, so one broken plugin does not hide other problems.
                self.problems.append(err.render())
                self.broken.add(name)
                points = frozenset()
            self._points[name] = points
        return self._points[name]

    def not_installed(self, name: str) -> str:
        if name in KUBE_PLUGINS:
            # Precise, and nothing to suggest: the user meant kube's plugin.
            return (
                f"plugin {name!r} is a kube-scheduler {KUBE_VERSION} plugin that "
                f"pluggable-scheduler does not implement yet"
            )
        message = f"plugin {name!r} is not installed"
        if name in REMOVED_KUBE_PLUGINS:
            message += (
                f" (a plugin of older kube-schedulers that kube-scheduler {KUBE_VERSION} "
                f"no longer has either)"
            )
        hint = install_hint(name)
        if hint is not None:
            return f"{message}: {hint}"
        choices = sorted(self.installed)
        close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
        if not close:
            lowered = {c.lower(): c for c in choices}
            close = [lowered[c] for c in difflib.get_close_matches(name.lower(), lowered, n=3)]
        if close:
            return f"{message}; closest installed plugins: {', '.join(close)}"
        return (
            f"{message}; installed plugins: {', '.join(choices) or '(none)'} "
            "('pluggable-scheduler plugins needs CONFIG' looks for its distribution on an index)"
        )

    def validate_args(self, name: str, args: Mapping[str, Any], path: str) -> BaseModel | None:
        """Validate ``args`` for plugin ``name``; kube's ``apiVersion``/``kind`` are stripped."""
        raw = dict(args)
        api_version = raw.pop("apiVersion", None)
        kind = raw.pop("kind", None)
        if api_version is not None and not isinstance(api_version, str):
            self.problem(f"{path}.apiVersion", "must be a string")
        if kind is not None and kind != f"{name}Args":
            self.problem(f"{path}.kind", f"must be {name}Args for plugin {name!r}, got {kind!r}")
        self.points_of(name)  # loads the plugin, recording a load failure once
        if name in self.broken:
            return None
        model = self.catalog.args_model(name)
        if model is None:
            if raw:
                self.problem(
                    path,
                    f"plugin {name!r} takes no args; remove {', '.join(sorted(raw))}",
                )
            return None
        try:
            return model.model_validate(raw)
        except ValidationError as err:
            self.problems.extend(validation_error_lines(err, prefix=path, model=model))
            return None

    def check_plugin_budgets(self, path: str, plugins: Mapping[str, HookTimeoutOverrides]) -> None:
        """Per-plugin budgets name installed plugins, at points those plugins implement."""
        for name, budgets in plugins.items():
            where = f"{path}.{name}"
            if name not in self.installed:
                self.problem(where, self.not_installed(name))
                continue
            points = self.points_of(name)
            for field_name in budgets.set_fields():
                point = _BUDGET_POINTS[field_name]
                if name not in self.broken and point not in points:
                    self.problem(
                        f"{where}.{HookTimeoutOverrides.model_fields[field_name].alias}",
                        f"plugin {name!r} does not implement {point.value}",
                    )

    def gate_of(self, name: str) -> tuple[str, bool] | None:
        """The gate plugin ``name`` is behind and whether it is on (None: not gated)."""
        if name in self.broken:
            return None
        try:
            gate = self.catalog.gated_by(name)
        except UserError:
            return None  # a load failure, reported where the plugin is named
        if gate is None:
            return None
        if gate in self.gates:
            return gate, self.gates[gate]
        spec = self.catalog.declared_feature_gates(name).get(gate)
        return gate, spec.default if spec is not None else False

    def check_gated(
        self, base: str, profile: SchedulerProfile, enabled: Mapping[str, None]
    ) -> None:
        """A profile may not enable a plugin whose feature gate is off: say which to turn on."""
        for name in enabled:
            gated = self.gate_of(name)
            if gated is None or gated[1]:
                continue
            gate = gated[0]
            needs = [gate]
            needs += [
                d for d in KUBE_FEATURE_GATE_DEPENDENCIES.get(gate, ()) if not self.gates.get(d)
            ]
            turn_on = ",".join(f"{g}=true" for g in needs)
            yaml = ", ".join(f"{g}: true" for g in needs)
            self.problem(
                self.enabled_path(base, profile, name),
                f"plugin {name!r} is behind feature gate {gate}, which is off: turn it on "
                f"with pluggableScheduler.featureGates {{{yaml}}} or --feature-gates={turn_on}",
            )

    @staticmethod
    def enabled_path(base: str, profile: SchedulerProfile, name: str) -> str:
        """Where the profile enables ``name`` (the profile itself for a default plugin)."""
        for key in (MULTI_POINT, *ExtensionPoint):
            for j, plugin in enumerate(profile.plugins.point(key).enabled):
                if plugin.name == name:
                    return f"{base}.plugins.{key}.enabled[{j}].name"
        return f"{base}.plugins"

    def check_failure_policy(
        self, base: str, policies: Mapping[str, FailurePolicy], enabled: Mapping[str, None]
    ) -> None:
        """``Ignore`` must be able to matter: the plugin runs at some ignorable point."""
        for name, policy in policies.items():
            path = f"{base}.pluggableScheduler.failurePolicy.{name}"
            if name not in self.installed:
                self.problem(path, self.not_installed(name))
            elif (
                policy == "Ignore"
                and name in enabled
                and name not in self.broken
                and name != EXTENDER_PLUGIN  # its filter and prioritize step is ignorable
                and not self.points_of(name) & IGNORABLE_POINTS
            ):
                points = self.points_of(name)
                implemented = ", ".join(p.value for p in ExtensionPoint if p in points)
                self.problem(
                    path,
                    f"Ignore cannot apply to plugin {name!r}: it runs only at {implemented}, "
                    f"whose failures always fail the attempt (Reserve, Permit, PreBind, "
                    f"Bind) or never fail anything (Unreserve, PostBind)",
                )

    # ------------------------------------------------------------------ steps

    def check_names(self, base: str, profile: SchedulerProfile) -> bool:
        """Check every plugin named in ``plugins``; True when all are usable."""
        before = len(self.problems)
        for key in (MULTI_POINT, *ExtensionPoint):
            plugin_set = profile.plugins.point(key)
            first: dict[str, int] = {}
            for j, plugin in enumerate(plugin_set.enabled):
                path = f"{base}.plugins.{key}.enabled[{j}].name"
                if plugin.name == "*":
                    self.problem(path, '"*" is only meaningful in a disabled list')
                elif plugin.name not in self.installed:
                    self.problem(path, self.not_installed(plugin.name))
                elif plugin.name in first:
                    self.problem(
                        path,
                        f"plugin {plugin.name!r} is enabled twice at {key} "
                        f"(also at enabled[{first[plugin.name]}])",
                    )
                else:
                    first[plugin.name] = j
                    if key != MULTI_POINT and ExtensionPoint(key) not in self.points_of(
                        plugin.name
                    ):
                        implemented = [
                            p.value for p in ExtensionPoint if p in self.points_of(plugin.name)
                        ]
                        self.problem(
                            path,
                            f"plugin {plugin.name!r} does not implement {key}; it implements: "
                            f"{', '.join(implemented) or '(nothing)'}",
                        )
            for j, plugin in enumerate(plugin_set.disabled):
                name = plugin.name
                if name != "*" and name not in self.installed and name not in KUBE_IN_TREE_PLUGINS:
                    self.problem(
                        f"{base}.plugins.{key}.disabled[{j}].name", self.not_installed(name)
                    )
        return len(self.problems) == before

    def merged_multi_point(self, base: str, profile: SchedulerProfile) -> list[_Entry]:
        """Defaults (installed only) merged with the user's ``multiPoint``, kube's way."""
        multi = profile.plugins.multi_point
        disabled = {p.name for p in multi.disabled}
        custom: dict[str, tuple[int, Plugin]] = {
            p.name: (j, p) for j, p in enumerate(multi.enabled)
        }
        replaced: set[int] = set()
        merged: list[_Entry] = []
        if "*" not in disabled:
            for default in default_multi_point(self.installed, self.gates):
                if default.name in disabled:
                    continue
                if default.name in custom:
                    j, plugin = custom[default.name]
                    replaced.add(j)
                    merged.append(
                        _Entry(
                            plugin.name, plugin.weight, f"{base}.plugins.multiPoint.enabled[{j}]"
                        )
                    )
                else:
                    merged.append(_Entry(default.name, default.weight, None))
        for j, plugin in enumerate(multi.enabled):
            if j not in replaced:
                merged.append(
                    _Entry(plugin.name, plugin.weight, f"{base}.plugins.multiPoint.enabled[{j}]")
                )
        unique: dict[str, _Entry] = {}
        for entry in merged:
            unique.setdefault(entry.name, entry)
        return list(unique.values())

    def specific_entries(
        self, base: str, profile: SchedulerProfile, point: ExtensionPoint
    ) -> list[_Entry]:
        entries: dict[str, _Entry] = {}
        for j, plugin in enumerate(profile.plugins.point(point).enabled):
            entries.setdefault(
                plugin.name,
                _Entry(plugin.name, plugin.weight, f"{base}.plugins.{point.value}.enabled[{j}]"),
            )
        return list(entries.values())

    def expand(
        self, point: ExtensionPoint, specific: list[_Entry], disabled: set[str], multi: list[_Entry]
    ) -> list[_Entry]:
        """The plugins at ``point`` in kube's order (before priority sorting)."""
        if "*" in disabled:
            return specific
        specific_names = {e.name for e in specific}
        overrides: set[str] = set()
        from_multi: list[_Entry] = []
        for entry in multi:
            if point not in self.points_of(entry.name) or entry.name in disabled:
                continue
            if entry.name in specific_names:
                overrides.add(entry.name)
            else:
                from_multi.append(entry)
        return (
            [e for e in specific if e.name in overrides]
            + from_multi
            + [e for e in specific if e.name not in overrides]
        )

    def score_weight(self, entry: _Entry, specific: list[_Entry], multi: list[_Entry]) -> int:
        source = next((e for e in [*specific, *multi] if e.name == entry.name), entry)
        if source.weight is None:
            return 1
        if source.weight == 0:
            self.problem(
                f"{source.path or 'defaults'}.weight",
                f"score plugin {entry.name!r} has weight 0; a weight must be at least 1 "
                f"(to stop it scoring, list it in plugins.score.disabled)",
            )
        return source.weight

    def resolve(
        self, i: int, profile: SchedulerProfile, config: SchedulerConfiguration
    ) -> ResolvedProfile | None:
        base = f"profiles[{i}]"
        before = len(self.problems)
        warnings_before = len(self.warnings)
        names_ok = self.check_names(base, profile)
        multi = self.merged_multi_point(base, profile)
        multi = [e for e in multi if e.name in self.installed]

        ordered: dict[ExtensionPoint, list[PluginEntry]] = {}
        for point in ExtensionPoint:
            specific = [
                e
                for e in self.specific_entries(base, profile, point)
                if e.name in self.installed and point in self.points_of(e.name)
            ]
            disabled = {p.name for p in profile.plugins.point(point).disabled}
            entries = self.expand(point, specific, disabled, multi)
            if point is ExtensionPoint.SCORE:
                ordered[point] = [
                    PluginEntry(e.name, self.score_weight(e, specific, multi)) for e in entries
                ]
            else:
                ordered[point] = [PluginEntry(e.name, 0) for e in entries]

        enabled: dict[str, None] = {}
        for entries_at in ordered.values():
            for plugin_entry in entries_at:
                enabled.setdefault(plugin_entry.name)
        self.check_gated(base, profile, enabled)
        with_extenders = bool(config.extenders)
        if with_extenders:
            self.add_extender_plugin(ordered, enabled, config)

        extensions = profile.pluggable_scheduler
        for name in extensions.plugin_priorities:
            if name not in self.installed:
                self.problem(
                    f"{base}.pluggableScheduler.pluginPriorities.{name}", self.not_installed(name)
                )
        overrides = extensions.plugin_priorities
        priorities = {
            name: overrides[name] if name in overrides else self.catalog.default_priority(name)
            for name in enabled
        }
        if with_extenders and EXTENDER_PLUGIN in priorities:
            # kube binds through an interested binder extender before any Bind plugin.
            priorities[EXTENDER_PLUGIN] = max(priorities.values()) + 1
        plugins = {
            point: tuple(sorted(entries_at, key=lambda e: -priorities[e.name]))
            for point, entries_at in ordered.items()
        }

        if names_ok:
            queue_sort = plugins[ExtensionPoint.QUEUE_SORT]
            if len(queue_sort) != 1:
                found = ", ".join(e.name for e in queue_sort) or "none"
                self.problem(
                    f"{base}.plugins.queueSort",
                    f"exactly one QueueSort plugin must be enabled, found {len(queue_sort)} "
                    f"({found})",
                )
            if not plugins[ExtensionPoint.BIND]:
                self.problem(f"{base}.plugins.bind", "at least one Bind plugin must be enabled")

        plugin_args = self.resolve_args(base, profile, enabled)
        if with_extenders:
            self.extender_args(plugin_args, config)
        self.check_plugin_budgets(
            f"{base}.pluggableScheduler.timeouts.plugins", extensions.timeouts.plugins
        )
        self.check_failure_policy(base, extensions.failure_policy, enabled)
        if len(self.problems) != before:
            return None
        percentage = profile.percentage_of_nodes_to_score
        return ResolvedProfile(
            scheduler_name=profile.scheduler_name,
            percentage_of_nodes_to_score=(
                config.percentage_of_nodes_to_score if percentage is None else percentage
            ),
            plugins=plugins,
            plugin_args=plugin_args,
            priorities=priorities,
            timeouts=extensions.timeouts.apply_to(config.pluggable_scheduler.timeouts),
            failure_policy=dict(extensions.failure_policy),
            circuit_breaker=config.pluggable_scheduler.circuit_breaker,
            shadow_of=extensions.shadow_of,
            shadow_budget=extensions.shadow_budget,
            warnings=tuple(self.warnings[warnings_before:]),
        )

    def add_extender_plugin(
        self,
        ordered: dict[ExtensionPoint, list[PluginEntry]],
        enabled: dict[str, None],
        config: SchedulerConfiguration,
    ) -> None:
        """Enable the built-in Extender plugin, first at Bind.

        Its Bind returns Skip at once for a pod no binder extender is
        interested in; being at Bind is also what makes the profile build it.
        """
        if EXTENDER_PLUGIN not in self.installed:
            self.problem(
                "extenders",
                f"the built-in {EXTENDER_PLUGIN} plugin that runs them is not installed",
            )
            return
        enabled.setdefault(EXTENDER_PLUGIN)
        binds = ordered[ExtensionPoint.BIND]
        if all(e.name != EXTENDER_PLUGIN for e in binds):
            binds.insert(0, PluginEntry(EXTENDER_PLUGIN, 0))

    def extender_args(
        self, plugin_args: dict[str, BaseModel], config: SchedulerConfiguration
    ) -> None:
        """The Extender plugin's args, and NodeResourcesFit's ``ignoredResources``.

        As kube's ``buildExtenders``: ignorable extenders are called last, and
        the resources the extenders manage with ``ignoredByScheduler`` replace
        NodeResourcesFit's ``ignoredResources`` in every profile.
        """
        model = self.catalog.args_model(EXTENDER_PLUGIN)
        if model is not None:
            plugin_args[EXTENDER_PLUGIN] = model.model_validate(
                {"extenders": in_call_order(list(config.extenders))}
            )
        ignored = ignored_resources(list(config.extenders))
        fit = plugin_args.get("NodeResourcesFit")
        if ignored and fit is not None and "ignored_resources" in type(fit).model_fields:
            plugin_args["NodeResourcesFit"] = fit.model_copy(
                update={"ignored_resources": sorted(ignored)}
            )

    def resolve_args(
        self, base: str, profile: SchedulerProfile, enabled: Mapping[str, None]
    ) -> dict[str, BaseModel]:
        """Validate ``pluginConfig`` and fill default args of enabled plugins.

        As in kube-scheduler, args for an installed plugin that this profile
        does not enable are allowed (and still validated), but not kept.
        """
        configured: dict[str, BaseModel] = {}
        first: dict[str, int] = {}
        for k, plugin_config in enumerate(profile.plugin_config):
            path = f"{base}.pluginConfig[{k}]"
            name = plugin_config.name
            if name in first:
                self.problem(
                    f"{path}.name",
                    f"duplicate pluginConfig for plugin {name!r} "
                    f"(first at pluginConfig[{first[name]}])",
                )
                continue
            first[name] = k
            if name not in self.installed and name in KUBE_PLUGINS:
                # kube's own dumped configs carry args for its default plugins
                # (DynamicResourcesArgs ...); the plugin cannot be enabled here,
                # so its args are unused: load the config, but say so.
                self.warnings.append(
                    f"{path}.name: {self.not_installed(name)}; its args are ignored"
                )
                continue
            if name not in self.installed:
                self.problem(f"{path}.name", self.not_installed(name))
                continue
            args = self.validate_args(name, plugin_config.args, f"{path}.args")
            if args is not None:
                configured[name] = args
        result: dict[str, BaseModel] = {}
        for name in enabled:
            if name in configured:
                result[name] = configured[name]
            elif name not in first:
                model = self.catalog.args_model(name)
                if model is None:
                    continue
                try:
                    result[name] = model.model_validate({})
                except ValidationError as err:
                    details = "; ".join(validation_error_lines(err, model=model))
                    self.problem(
                        f"{base}.pluginConfig",
                        f"plugin {name!r} needs args (no defaults for: {details}); "
                        f"add a pluginConfig entry for it",
                    )
        return result


def _check_common_queue_sort(
    config: SchedulerConfiguration, resolved: list[ResolvedProfile], problems: list[str]
) -> None:
    """kube-scheduler has one scheduling queue, so every profile must sort it alike."""
    first = resolved[0]
    name = first.names_at(ExtensionPoint.QUEUE_SORT)[0]
    args = first.plugin_args.get(name)
    for i, profile in enumerate(resolved[1:], start=1):
        other = profile.names_at(ExtensionPoint.QUEUE_SORT)[0]
        if other != name:
            problems.append(
                f"profiles[{i}].plugins.queueSort: must be the same in all profiles: "
                f"{other!r} here, {name!r} in profiles[0]"
            )
            continue
        other_args = profile.plugin_args.get(name)
        if (args is None) != (other_args is None) or (
            args is not None
            and other_args is not None
            and args.model_dump() != other_args.model_dump()
        ):
            index = next(
                (k for k, pc in enumerate(config.profiles[i].plugin_config) if pc.name == name),
                None,
            )
            where = f"pluginConfig[{index}].args" if index is not None else "pluginConfig"
            problems.append(
                f"profiles[{i}].{where}: args of QueueSort plugin {name!r} must be the same "
                f"in all profiles (they differ from profiles[0])"
            )


def _gate_path(config: SchedulerConfiguration, gate: str) -> str:
    if gate in config.feature_gate_flags:
        return "--feature-gates"
    return f"pluggableScheduler.featureGates.{gate}" if gate else "pluggableScheduler.featureGates"


def _declared(catalog: PluginCatalogView, names: Collection[str]) -> dict[str, FeatureSpec]:
    """Gates the given installed plugins declare (those that fail to load declare none)."""
    out: dict[str, FeatureSpec] = {}
    for name in sorted(names):
        try:
            out.update(catalog.declared_feature_gates(name))
        except UserError:
            continue  # reported where the plugin is named, if it is
    return out


def _feature_gates(
    config: SchedulerConfiguration,
    catalog: PluginCatalogView,
    installed: Collection[str],
    problems: list[str],
) -> FeatureGates:
    """The effective gates of ``config``; refusals go to ``problems`` with their field path.

    Only a name kube does not have makes the installed plugins load, to find
    the one declaring it (installed is not enabled: plugins are not imported
    otherwise).
    """
    requested = config.pluggable_scheduler.feature_gates
    known: dict[str, FeatureSpec] = dict(KUBE_FEATURE_GATES)
    if any(n not in known and n not in (ALL_ALPHA, ALL_BETA) for n in requested):
        known.update({**_declared(catalog, installed), **KUBE_FEATURE_GATES})
    gates, errors = effective_gates(known, requested, KUBE_FEATURE_GATE_DEPENDENCIES)
    for err in errors:
        problems.append(f"{_gate_path(config, err.gate)}: {err}")
    return gates


def _with_enabled_declarations(
    catalog: PluginCatalogView,
    gates: FeatureGates,
    resolved: list[ResolvedProfile],
) -> FeatureGates:
    """The gates plugins see: kube's and requested ones, plus those enabled plugins declare."""
    names = {n for profile in resolved for n in profile.enabled_plugins}
    declared = _declared(catalog, names)
    if all(n in gates for n in declared):
        return gates
    known = {**declared, **{n: gates.spec(n) for n in gates}}
    return FeatureGates(known, dict(gates))


def resolve_profiles(
    config: SchedulerConfiguration, catalog: PluginCatalogView
) -> list[ResolvedProfile]:
    """Resolve every profile of ``config`` against the installed plugins of ``catalog``.

    Raises :class:`UserError` listing every problem (with its field path) in
    all profiles; returns the profiles in config order otherwise.
    """
    resolver = _Resolver(catalog=catalog, installed=frozenset(catalog.names()))
    resolver.problems.extend(semantic_problems(config))
    resolver.gates = _feature_gates(config, catalog, resolver.installed, resolver.problems)
    resolver.check_plugin_budgets(
        "pluggableScheduler.timeouts.plugins", config.pluggable_scheduler.timeouts.plugins
    )
    resolved: list[ResolvedProfile] = []
    all_resolved = True
    for i, profile in enumerate(config.profiles):
        result = resolver.resolve(i, profile, config)
        if result is None:
            all_resolved = False
        else:
            resolved.append(result)
    if all_resolved and resolved:
        _check_common_queue_sort(config, resolved, resolver.problems)
    if not resolver.problems:
        for warning in resolver.warnings:
            _log.warning("configuration entry ignored", detail=warning)
    if not resolver.problems and resolved:
        gates = _with_enabled_declarations(catalog, resolver.gates, resolved)
        resolved = [dataclasses.replace(profile, feature_gates=gates) for profile in resolved]
    if resolver.problems:
        count = len(resolver.problems)
        where = f" in {config.source}" if config.source else ""
        raise UserError(
            f"invalid scheduler configuration{where}: {count} problem{'s' if count != 1 else ''}",
            details=resolver.problems,
        )
    return resolved
