"""Turning a validated configuration into one running Framework per profile."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scheduler.api.handle import Handle
from scheduler.api.version import uses_views
from scheduler.config.models import SchedulerConfiguration
from scheduler.config.points import ExtensionPoint
from scheduler.config.resolve import ResolvedProfile, resolve_profiles
from scheduler.errors import UserError
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.loader import PluginCatalog, PluginLoadError
from scheduler.framework.pluginmanager import SchedulerPluginManager
from scheduler.framework.runtime import Framework, FrameworkRecorder

HandleFactory = Callable[[str], FrameworkHandle]
RecorderFactory = Callable[[str], FrameworkRecorder]


@dataclass
class Profile:
    resolved: ResolvedProfile
    framework: Framework
    handle: FrameworkHandle

    @property
    def scheduler_name(self) -> str:
        return self.resolved.scheduler_name


def build_profile(
    resolved: ResolvedProfile,
    catalog: PluginCatalog,
    handle: FrameworkHandle,
    recorder: FrameworkRecorder | None = None,
) -> Profile:
    """Import, instantiate and register the profile's plugins; build its Framework."""
    manager = SchedulerPluginManager()
    for name in resolved.enabled_plugins:
        loaded = catalog.load(name)
        args = resolved.plugin_args.get(name)
        try:
            # What the plugin API promises; a 2.x plugin's handle has no live table.
            plugin_handle: Handle = handle.for_plugin(
                name, legacy_table=not uses_views(loaded.api_version)
            )
            instance = loaded.plugin_class(args, plugin_handle)
        except Exception as err:  # third-party constructor
            raise PluginLoadError(
                loaded.entry,
                f"constructor failed in profile {resolved.scheduler_name!r}: "
                f"{type(err).__name__}: {err}",
            ) from err
        manager.register(instance, name=name)
    order = {
        point: [(entry.name, entry.weight) for entry in resolved.at(point)]
        for point in ExtensionPoint
    }
    framework = Framework(
        resolved.scheduler_name,
        manager,
        order,
        recorder=recorder,
        timeouts=resolved.timeouts,
        failure_policy=resolved.failure_policy,
        circuit_breaker=resolved.circuit_breaker,
        events=handle.record_event,
    )
    handle.set_framework(framework)
    return Profile(resolved, framework, handle)


def build_profiles(
    config: SchedulerConfiguration,
    catalog: PluginCatalog,
    make_handle: HandleFactory,
    recorder_for: RecorderFactory | None = None,
) -> dict[str, Profile]:
    """Every profile of ``config``, keyed by schedulerName; UserError on any problem."""
    resolved_profiles = resolve_profiles(config, catalog)
    profiles: dict[str, Profile] = {}
    problems: list[str] = []
    for resolved in resolved_profiles:
        try:
            name = resolved.scheduler_name
            recorder = recorder_for(name) if recorder_for is not None else None
            profiles[name] = build_profile(resolved, catalog, make_handle(name), recorder)
        except UserError as err:
            problems.append(err.render())
    if problems:
        raise UserError("cannot start: plugins failed to load", details=problems)
    return profiles
