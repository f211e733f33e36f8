"""Finding and loading plugins from installed distributions.

Plugins are entry points in the ``scheduler.plugins`` group; the entry-point
name is the plugin name used in the config. Discovery reads only metadata;
a plugin's code is imported when a profile enables it (or when ``plugins
list`` asks about everything). Load failures are tiered, each message naming
the plugin, its distribution and version, and the cause:

1. the import fails (or the entry point does not name a class);
2. the plugin declares no, or an incompatible, ``api_version``;
3. its hook implementations do not match the hookspecs (pluggy validation),
   or use a pluggy option this framework refuses (hook wrappers,
   ``tryfirst``/``trylast``: see :mod:`scheduler.framework.pluginmanager`);
4. two distributions claim the same plugin name.
"""

from __future__ import annotations

import difflib
import importlib.metadata as md
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy
from pydantic import BaseModel

from scheduler.api.version import PLUGIN_API_VERSION, is_compatible, parse_api_version
from scheduler.config.points import ExtensionPoint
from scheduler.errors import UserError
from scheduler.framework.pluginmanager import HOOK_POINTS, SchedulerPluginManager
from scheduler.model.featuregates import ALL_ALPHA, ALL_BETA, FeatureSpec
from scheduler.model.kubegates import KUBE_FEATURE_GATES

ENTRY_POINT_GROUP = "scheduler.plugins"


class PluginLoadError(UserError):
    """A plugin that cannot be used; ``plugin`` and ``distribution`` say which."""

    def __init__(self, entry: PluginEntry, cause: str) -> None:
        super().__init__(f"plugin {entry.name!r} ({entry.origin}): {cause}")
        self.plugin = entry.name
        self.distribution = entry.distribution
        self.cause = cause


def _gate_declaration_problem(plugin_class: type) -> str | None:
    """What is wrong with a plugin's ``feature_gates`` / ``gated_by`` declaration, if anything."""
    declared = getattr(plugin_class, "feature_gates", None) or {}
    if not isinstance(declared, Mapping):
        return f"feature_gates must map gate names to FeatureSpec, got {type(declared).__name__}"
    for gate, spec in declared.items():
        if not isinstance(gate, str) or not gate:
            return f"feature_gates: gate names must be non-empty strings, got {gate!r}"
        if not isinstance(spec, FeatureSpec):
            return f"feature_gates[{gate!r}] must be a FeatureSpec, got {type(spec).__name__}"
        if gate in KUBE_FEATURE_GATES or gate in (ALL_ALPHA, ALL_BETA):
            return (
                f"feature_gates declares {gate!r}, which is already a kube feature gate; "
                f"use gated_by = {gate!r} to depend on it"
            )
    gated_by = getattr(plugin_class, "gated_by", None)
    if gated_by is not None and (
        not isinstance(gated_by, str)
        or (gated_by not in KUBE_FEATURE_GATES and gated_by not in declared)
    ):
        return (
            f"gated_by must name a kube feature gate or one the plugin declares in "
            f"feature_gates, got {gated_by!r}"
        )
    return None


@dataclass
class PluginEntry:
    """One plugin as found: where it comes from and, once loaded, its class."""

    name: str
    distribution: str
    version: str
    target: str
    entry_point: md.EntryPoint | None = None
    plugin_class: type | None = None
    duplicates: list[str] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return f"distribution {self.distribution} {self.version}, entry point {self.target}"


@dataclass(frozen=True)
class LoadedPlugin:
    entry: PluginEntry
    plugin_class: type
    hooks: frozenset[str]
    api_version: str

    @property
    def extension_points(self) -> frozenset[ExtensionPoint]:
        """Every point any of its hooks belongs to (a lone ``unreserve`` is Reserve)."""
        return frozenset(HOOK_POINTS[h] for h in self.hooks if h in HOOK_POINTS)

    @property
    def args_model(self) -> type[BaseModel] | None:
        model = getattr(self.plugin_class, "Args", None)
        return model if isinstance(model, type) and issubclass(model, BaseModel) else None

    @property
    def default_priority(self) -> int:
        priority = getattr(self.plugin_class, "priority", 0)
        return priority if isinstance(priority, int) else 0

    @property
    def gated_by(self) -> str | None:
        gate = getattr(self.plugin_class, "gated_by", None)
        return gate if isinstance(gate, str) else None

    @property
    def declared_feature_gates(self) -> Mapping[str, FeatureSpec]:
        gates = getattr(self.plugin_class, "feature_gates", None)
        return gates if isinstance(gates, Mapping) else {}


@dataclass
class PluginDescription:
    """What ``plugins list`` reports for one installed plugin."""

    name: str
    distribution: str
    version: str
    target: str
    api_version: str | None
    extension_points: list[str]
    error: str | None


class PluginCatalog:
    """The installed plugins; loads each on first use and remembers the outcome."""

    def __init__(self, entries: Iterable[PluginEntry]) -> None:
        self._entries: dict[str, PluginEntry] = {}
        for entry in entries:
            existing = self._entries.get(entry.name)
            if existing is None:
                self._entries[entry.name] = entry
            else:
                existing.duplicates.append(entry.origin)
        self._loaded: dict[str, LoadedPlugin | PluginLoadError] = {}

    @classmethod
    def discover(cls, group: str = ENTRY_POINT_GROUP) -> PluginCatalog:
        """Every plugin entry point of every installed distribution."""
        entries = []
        seen: set[tuple[str, str]] = set()
        for ep in md.entry_points(group=group):
            dist = ep.dist
            dist_name = dist.metadata["Name"] if dist is not None else "<unknown>"
            version = dist.version if dist is not None else "?"
            # The same distribution can be visible twice on sys.path (e.g. an
            # editable install plus a build dir); that is not a name clash.
            if (ep.name, dist_name) in seen:
                continue
            seen.add((ep.name, dist_name))
            entries.append(PluginEntry(ep.name, dist_name, version, ep.value, entry_point=ep))
        return cls(entries)

    @classmethod
    def from_classes(
        cls, classes: dict[str, type], distribution: str = "<in-process>"
    ) -> PluginCatalog:
        """A catalog of classes given directly (the test kit, embedding)."""
        return cls(
            PluginEntry(name, distribution, "", f"{c.__module__}:{c.__qualname__}", plugin_class=c)
            for name, c in classes.items()
        )

    def merged(self, other: PluginCatalog) -> PluginCatalog:
        return PluginCatalog([*self._entries.values(), *other._entries.values()])

    # -- the catalog protocol the config resolver uses ---------------------------

    def names(self) -> Collection[str]:
        return self._entries.keys()

    def extension_points(self, name: str) -> Collection[str]:
        return {str(p) for p in self.load(name).extension_points}

    def args_model(self, name: str) -> type[BaseModel] | None:
        return self.load(name).args_model

    def default_priority(self, name: str) -> int:
        return self.load(name).default_priority

    def gated_by(self, name: str) -> str | None:
        return self.load(name).gated_by

    def declared_feature_gates(self, name: str) -> Mapping[str, FeatureSpec]:
        return self.load(name).declared_feature_gates

    # -- loading ---------------------------------------------------------------

    def entry(self, name: str) -> PluginEntry:
        try:
            return self._entries[name]
        except KeyError:
            raise UserError(self.unknown_plugin_message(name)) from None

    def unknown_plugin_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self._entries), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        installed = ", ".join(sorted(self._entries)) or "none"
        return f"plugin {name!r} is not installed{hint} (installed: {installed})"

    def load(self, name: str) -> LoadedPlugin:
        """Import and validate a plugin; raise :class:`PluginLoadError` naming the cause."""
        cached = self._loaded.get(name)
        if cached is None:
            try:
                cached = self._load(self.entry(name))
            except PluginLoadError as err:
                cached = err
            self._loaded[name] = cached
        if isinstance(cached, PluginLoadError):
            raise cached
        return cached

    def _load(self, entry: PluginEntry) -> LoadedPlugin:
        if entry.duplicates:
            others = "; ".join(entry.duplicates)
            raise PluginLoadError(entry, f"plugin name is also provided by {others}")
        plugin_class = entry.plugin_class
        if plugin_class is None:
            assert entry.entry_point is not None
            try:
                obj: Any = entry.entry_point.load()
            except Exception as err:  # any import-time failure of third-party code
                raise PluginLoadError(entry, f"import failed: {type(err).__name__}: {err}") from err
            if not isinstance(obj, type):
                raise PluginLoadError(
                    entry, f"entry point must name a plugin class, got {type(obj).__name__}"
                )
            plugin_class = obj
        declared = getattr(plugin_class, "api_version", None)
        if declared is None:
            raise PluginLoadError(
                entry,
                f"class {plugin_class.__qualname__} does not declare api_version "
                f"(this framework provides plugin API {PLUGIN_API_VERSION})",
            )
        try:
            parse_api_version(declared)
        except ValueError as err:
            raise PluginLoadError(entry, str(err)) from None
        if not is_compatible(declared):
            raise PluginLoadError(
                entry,
                f"written for plugin API {declared}, incompatible with this framework's "
                f"plugin API {PLUGIN_API_VERSION}",
            )
        gate_problem = _gate_declaration_problem(plugin_class)
        if gate_problem is not None:
            raise PluginLoadError(entry, gate_problem)
        manager = SchedulerPluginManager()
        try:
            manager.register(plugin_class, name=entry.name)
            manager.check_pending()
        except pluggy.PluginValidationError as err:
            raise PluginLoadError(entry, f"invalid hook implementation: {err}") from None
        refused = manager.refusal(plugin_class)
        if refused is not None:
            raise PluginLoadError(entry, f"unsupported hook implementation: {refused}")
        hooks = manager.hooks_of(plugin_class)
        if not hooks:
            raise PluginLoadError(entry, "implements no hook (mark methods with @hookimpl)")
        return LoadedPlugin(entry, plugin_class, frozenset(hooks), str(declared))

    def describe_all(self) -> list[PluginDescription]:
        """Load every plugin (errors captured, not raised), for ``plugins list``."""
        out = []
        for name in sorted(self._entries):
            entry = self._entries[name]
            try:
                loaded = self.load(name)
            except PluginLoadError as err:
                out.append(
                    PluginDescription(
                        name, entry.distribution, entry.version, entry.target, None, [], err.cause
                    )
                )
                continue
            points = [str(p) for p in ExtensionPoint if p in loaded.extension_points]
            out.append(
                PluginDescription(
                    name,
                    entry.distribution,
                    entry.version,
                    entry.target,
                    loaded.api_version,
                    points,
                    None,
                )
            )
        return out
