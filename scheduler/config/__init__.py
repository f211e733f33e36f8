"""The configuration layer: kube-scheduler's config file, our additions, plugin resolution.

Typical use::

    config = load_config(path)                      # schema + cross-field checks
    profiles = resolve_profiles(config, catalog)    # plugin rules, args, ordering

Both raise :class:`scheduler.errors.UserError` whose ``details`` are one line
per problem, each starting with the path of the field at fault.
"""

from scheduler.config.defaults import (
    DEFAULT_MULTI_POINT,
    KUBE_IN_TREE_PLUGINS,
    KUBE_PLUGINS,
    KUBE_VERSION,
    DefaultPlugin,
    default_config_document,
)
from scheduler.config.loading import format_path, load_config, validation_error_lines
from scheduler.config.models import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    CircuitBreakerConfig,
    ClientConnectionConfiguration,
    FailurePolicy,
    HookTimeoutOverrides,
    HookTimeouts,
    LeaderElectionConfiguration,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
    ProfileExtensions,
    ProfileHookTimeouts,
    SchedulerConfiguration,
    SchedulerExtensions,
    SchedulerProfile,
    semantic_problems,
)
from scheduler.config.points import MULTI_POINT, ExtensionPoint
from scheduler.config.resolve import (
    PluginCatalogView,
    PluginEntry,
    ResolvedProfile,
    resolve_profiles,
)
from scheduler.model.durations import GoDuration, format_go_duration, parse_go_duration

__all__ = [
    "API_VERSION",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "KUBE_IN_TREE_PLUGINS",
    "KUBE_PLUGINS",
    "KUBE_VERSION",
    "MULTI_POINT",
    "CircuitBreakerConfig",
    "ClientConnectionConfiguration",
    "DefaultPlugin",
    "ExtensionPoint",
    "FailurePolicy",
    "GoDuration",
    "HookTimeoutOverrides",
    "HookTimeouts",
    "LeaderElectionConfiguration",
    "Plugin",
    "PluginCatalogView",
    "PluginConfig",
    "PluginEntry",
    "PluginSet",
    "Plugins",
    "ProfileExtensions",
    "ProfileHookTimeouts",
    "ResolvedProfile",
    "SchedulerConfiguration",
    "SchedulerExtensions",
    "SchedulerProfile",
    "default_config_document",
    "format_go_duration",
    "format_path",
    "load_config",
    "parse_go_duration",
    "resolve_profiles",
    "semantic_problems",
    "validation_error_lines",
]
