"""Turning a validated configuration into one running Framework per profile."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from scheduler.framework.runtime import (
    Framework,
    FrameworkRecorder,
    NoticeSink,
    RegistrationError,
)

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

    def activate(self) -> None:
        """Make this the framework the profile's plugins reach through their handle.

        Separate from building: a config reload builds the new profiles while
        the old ones keep scheduling, and switches only once all are ready.
        """
        self.handle.set_framework(self.framework)

    def reusable(self, name: str, args: object, plugin_class: type) -> object | None:
        """This profile's instance of plugin ``name``, if a reload may keep it.

        Kept when its class and args are unchanged: plugins hold state across
        a pod's scheduling and binding cycles (assumed volumes, allocated
        devices, waiting gangs), which a fresh instance would not know about.
        """
        instance = self.framework.plugins.get(name)
        if type(instance) is plugin_class and self.resolved.plugin_args.get(name) == args:
            return instance
        return None


def build_profile(
    resolved: ResolvedProfile,
    catalog: PluginCatalog,
    handle: FrameworkHandle,
    recorder: FrameworkRecorder | None = None,
    *,
    previous: Profile | None = None,
    notices: NoticeSink | None = None,
) -> Profile:
    """Import, instantiate and register the profile's plugins; build its Framework.

    With ``previous`` (the profile a reload replaces), plugins whose class and
    args are unchanged keep their instance. The result is not active yet.
    """
    manager = SchedulerPluginManager()
    handle.set_feature_gates(resolved.feature_gates)
    for name in resolved.enabled_plugins:
        loaded = catalog.load(name)
        args = resolved.plugin_args.get(name)
        instance = (
            previous.reusable(name, args, loaded.plugin_class) if previous is not None else None
        )
        if instance is None:
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
        notices=notices,
    )
    try:
        framework.events_to_register()  # the queue asks again; a broken hook fails here
    except RegistrationError as err:
        framework.retire()
        raise PluginLoadError(
            catalog.entry(err.plugin), f"{err.message} (profile {resolved.scheduler_name!r})"
        ) from err
    return Profile(resolved, framework, handle)


def build_profiles(
    config: SchedulerConfiguration,
    catalog: PluginCatalog,
    make_handle: HandleFactory,
    recorder_for: RecorderFactory | None = None,
    *,
    previous: Mapping[str, Profile] | None = None,
    notices: NoticeSink | None = None,
    activate: bool = True,
) -> dict[str, Profile]:
    """Every profile of ``config``, keyed by schedulerName; UserError on any problem.

    ``previous`` and ``activate=False`` are for a config reload: see
    :func:`build_profile` and :meth:`Profile.activate`.
    """
    resolved_profiles = resolve_profiles(config, catalog)
    profiles: dict[str, Profile] = {}
    problems: list[str] = []
    for resolved in resolved_profiles:
        try:
            name = resolved.scheduler_name
            recorder = recorder_for(name) if recorder_for is not None else None
            profiles[name] = build_profile(
                resolved,
                catalog,
                make_handle(name),
                recorder,
                previous=(previous or {}).get(name),
                notices=notices,
            )
        except UserError as err:
            problems.append(err.render())
    if problems:
        for profile in profiles.values():
            profile.framework.retire()
        what = "cannot start" if previous is None else "cannot apply the new config"
        source = f" ({config.source})" if config.source else ""
        raise UserError(f"{what}{source}: plugins failed to load", details=problems)
    if activate:
        for profile in profiles.values():
            profile.activate()
    return profiles
