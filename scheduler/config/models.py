"""Pydantic models of the ``KubeSchedulerConfiguration`` file (``kubescheduler.config.k8s.io/v1``).

The file format is kube-scheduler's, so that an existing kube-scheduler config
that only names plugins we have loads unchanged: same field names (camelCase),
same defaults (except the scheduler and lease names, which are ours), same
validation. Everything we add lives under a ``pluggableScheduler`` key, at the
top level and per profile, so no future kube field can collide with it.

Every model forbids unknown fields (kube-scheduler decodes its config strictly,
and a typo silently ignored is a misconfigured scheduler) and is strict about
types (``weight: "5"`` is an error, as it is for kube-scheduler's decoder).
Models are frozen: a loaded configuration is a value, not shared mutable state.

Checks that involve several fields or objects are in :func:`semantic_problems`
rather than in model validators, so that every problem is reported at once with
the exact path of the field at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from scheduler.config.extenders import Extender, extender_problems
from scheduler.config.points import MULTI_POINT, ExtensionPoint
from scheduler.model.durations import MAX_GO_DURATION_SECONDS, GoDuration, format_go_duration

__all__ = [
    "API_VERSION",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "CircuitBreakerConfig",
    "ClientConnectionConfiguration",
    "FailurePolicy",
    "HookTimeoutOverrides",
    "HookTimeouts",
    "LeaderElectionConfiguration",
    "Plugin",
    "PluginConfig",
    "PluginSet",
    "Plugins",
    "ProfileExtensions",
    "ProfileHookTimeouts",
    "SchedulerConfiguration",
    "SchedulerExtensions",
    "SchedulerProfile",
    "semantic_problems",
]

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "pluggable-scheduler"
"""Our default ``schedulerName`` (kube-scheduler's is ``default-scheduler``), so
that installing us next to kube-scheduler never steals its pods by default."""

INT32_MAX = 2**31 - 1
FLOAT32_MAX = 3.4028234663852886e38
"""kube's ``clientConnection.qps`` is a float32: a larger value does not decode."""
JITTER_FACTOR: Final = 1.2
"""client-go's leader-election ``JitterFactor``: retries wait ``retryPeriod * [1, 2.2)``."""
MAX_BACKOFF_SECONDS = int(MAX_GO_DURATION_SECONDS)
"""kube-scheduler turns the backoff seconds into a Go ``time.Duration``; past this
many seconds that multiplication overflows into a negative backoff."""


def _shown(seconds: float) -> dict[str, Any]:
    """JSON-schema extras showing a duration default as written in YAML (``15s``)."""
    return {"default": format_go_duration(seconds)}


_DEFAULT_SERVER_ADDRESS = "0.0.0.0:10259"


class _ConfigModel(BaseModel):
    """Common settings: camelCase aliases, strict types, unknown fields are errors."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,
        extra="forbid",
        strict=True,
        frozen=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _before(cls, data: Any) -> Any:
        # A JSON/YAML ``null`` means "unset" in kube's API conventions (Go's
        # omitempty pointers), so it must select the default rather than fail
        # as "not a valid list/object".
        if isinstance(data, Mapping):
            return cls._prepare({k: v for k, v in data.items() if v is not None})
        return data

    @classmethod
    def _prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Hook for models that default one field from another (runs before validation)."""
        return data


# --------------------------------------------------------------------------- plugins


class Plugin(_ConfigModel):
    """A plugin named in a plugin set, with its Score weight when it has one."""

    name: str = Field(
        min_length=1,
        description="Name of the plugin (its entry-point name). In `disabled`, `*` means "
        "every default plugin of that extension point.",
    )
    weight: int | None = Field(
        default=None,
        ge=0,
        le=INT32_MAX,
        description="Weight of the plugin's Score result; only used for Score plugins. "
        "Unset means 1 (or the weight from the default plugin set). An explicit 0 is "
        "rejected for a Score plugin: disable the plugin at `score` instead.",
    )


class PluginSet(_ConfigModel):
    """Plugins enabled and disabled at one extension point (or at ``multiPoint``)."""

    enabled: list[Plugin] = Field(
        default_factory=list,
        description="Plugins to enable, run after the default ones in this order "
        "(a default plugin listed here is re-configured in place instead).",
    )
    disabled: list[Plugin] = Field(
        default_factory=list,
        description='Default plugins to disable; `[{name: "*"}]` disables all of them.',
    )


class Plugins(_ConfigModel):
    """The plugin sets of a profile, one per extension point plus ``multiPoint``.

    Precedence follows kube-scheduler: a specific extension point beats
    ``multiPoint``, which beats the default plugin set.
    """

    pre_enqueue: PluginSet = Field(
        default_factory=PluginSet, description="Gate pods before they enter the active queue."
    )
    queue_sort: PluginSet = Field(
        default_factory=PluginSet,
        description="Order of the scheduling queue; exactly one plugin, the same in every profile.",
    )
    pre_filter: PluginSet = Field(
        default_factory=PluginSet, description="Pre-compute per-pod state, reject early."
    )
    filter: PluginSet = Field(
        default_factory=PluginSet, description="Rule out nodes that cannot run the pod."
    )
    post_filter: PluginSet = Field(
        default_factory=PluginSet,
        description="Run when no node fits (preemption).",
    )
    pre_score: PluginSet = Field(
        default_factory=PluginSet, description="Pre-compute state shared by Score."
    )
    score: PluginSet = Field(
        default_factory=PluginSet, description="Rank feasible nodes; weights apply here."
    )
    reserve: PluginSet = Field(
        default_factory=PluginSet,
        description="Reserve (and on failure unreserve) resources on the chosen node.",
    )
    permit: PluginSet = Field(
        default_factory=PluginSet, description="Approve, deny or delay the binding."
    )
    pre_bind: PluginSet = Field(
        default_factory=PluginSet, description="Work needed before binding (e.g. volumes)."
    )
    bind: PluginSet = Field(
        default_factory=PluginSet,
        description="Bind the pod; the first plugin that does not skip wins. At least one.",
    )
    post_bind: PluginSet = Field(
        default_factory=PluginSet, description="Informational hooks after a successful bind."
    )
    multi_point: PluginSet = Field(
        default_factory=PluginSet,
        description="Enable plugins at every extension point they implement; the default "
        "plugin set is expressed here. Disabling `*` here drops all default plugins.",
    )

    def point(self, point: ExtensionPoint | str) -> PluginSet:
        """The plugin set of ``point`` (an :class:`ExtensionPoint` or ``multiPoint``)."""
        if point == MULTI_POINT:
            return self.multi_point
        result: PluginSet = getattr(self, ExtensionPoint(point).field_name)
        return result


class PluginConfig(_ConfigModel):
    """Arguments for one plugin, validated against the plugin's own args model."""

    name: str = Field(min_length=1, description="Name of the plugin the args are for.")
    args: dict[str, Any] = Field(
        default_factory=dict,
        description="The plugin's arguments. kube-scheduler's `apiVersion` and `kind` "
        "(`<Plugin>Args`) keys are accepted and ignored; the rest is validated by the plugin.",
    )


# --------------------------------------------------------------------------- our additions


SYNC_HOOK_BUDGET: Final = 5.0
"""Default budget of a scheduling-cycle hook call: far above what a vectorised
plugin takes at 5,000 nodes (milliseconds), well under the lease's renewDeadline."""

FailurePolicy = Literal["Fail", "Ignore"]
"""What a plugin's error or overrun costs: the pod's attempt (``Fail``) or only
that plugin's say in it (``Ignore``), as admission webhooks' ``failurePolicy``."""


def _budget(seconds: float, what: str) -> Any:
    return Field(default=seconds, json_schema_extra=_shown(seconds), gt=0, description=what)


def _override(point: str) -> Any:
    return Field(
        default=None,
        gt=0,
        description=f"Replaces the `{point}` budget here.",
    )


class HookTimeoutOverrides(_ConfigModel):
    """Budgets of one plugin, replacing the extension points' budgets for its calls.

    Unset fields keep the value they override.
    """

    pre_enqueue: GoDuration | None = _override("preEnqueue")
    pre_filter: GoDuration | None = _override("preFilter")
    filter: GoDuration | None = _override("filter")
    post_filter: GoDuration | None = _override("postFilter")
    pre_score: GoDuration | None = _override("preScore")
    score: GoDuration | None = _override("score")
    reserve: GoDuration | None = _override("reserve")
    permit: GoDuration | None = _override("permit")
    permit_max_wait: GoDuration | None = _override("permitMaxWait")
    pre_bind: GoDuration | None = _override("preBind")
    bind: GoDuration | None = _override("bind")
    post_bind: GoDuration | None = _override("postBind")

    def set_fields(self) -> dict[str, float]:
        """The budgets set here, by field name."""
        return {
            name: value
            for name in type(self).model_fields
            if isinstance(value := getattr(self, name), float)
        }


class ProfileHookTimeouts(HookTimeoutOverrides):
    """A profile's budgets: overrides of ``pluggableScheduler.timeouts``, and per plugin.

    A call's budget is the first set of: this profile's budget for the plugin,
    ``pluggableScheduler.timeouts.plugins`` for the plugin, this profile's
    budget for the extension point, the top-level one.
    """

    plugins: dict[str, HookTimeoutOverrides] = Field(
        default_factory=dict,
        description="Plugin name to its own budgets in this profile; they take precedence "
        "over `pluggableScheduler.timeouts.plugins`, field by field.",
    )

    def apply_to(self, base: HookTimeouts) -> HookTimeouts:
        """``base`` with the fields set here replaced and the plugin budgets merged."""
        plugins = dict(base.plugins)
        for name, own in self.plugins.items():
            merged = plugins.get(name, HookTimeoutOverrides()).set_fields() | own.set_fields()
            plugins[name] = HookTimeoutOverrides().model_copy(update=merged)
        return base.model_copy(update={**self.set_fields(), "plugins": plugins})


class HookTimeouts(_ConfigModel):
    """Budgets of plugin hook calls, per extension point, with per-plugin overrides.

    Every call is timed against its budget. An ``async`` hook (PreBind, Bind,
    PostBind) past its budget is cancelled and abandoned at once, without
    waiting for it to acknowledge the cancellation, so it cannot hold a
    binding slot or the shutdown. A synchronous hook (every other point) cannot
    be interrupted: a call that returns past its budget fails the pod's attempt
    like an error (or is ignored under `failurePolicy: Ignore`), and a watchdog
    thread logs a warning, once per call, while a call is still running past
    its budget. A plugin that declares ``pre_bind_timeout`` (seconds) gets that
    much for PreBind when it is longer than `preBind`, unless its budget is set
    under `plugins`.
    """

    pre_enqueue: GoDuration = _budget(SYNC_HOOK_BUDGET, "Budget of each PreEnqueue call.")
    pre_filter: GoDuration = _budget(
        SYNC_HOOK_BUDGET, "Budget of each PreFilter call (and of its AddPod/RemovePod calls)."
    )
    filter: GoDuration = _budget(SYNC_HOOK_BUDGET, "Budget of each Filter call.")
    post_filter: GoDuration = _budget(
        30.0, "Budget of each PostFilter call (preemption's what-if checks included)."
    )
    pre_score: GoDuration = _budget(SYNC_HOOK_BUDGET, "Budget of each PreScore call.")
    score: GoDuration = _budget(
        SYNC_HOOK_BUDGET, "Budget of each Score call and of each NormalizeScore call."
    )
    reserve: GoDuration = _budget(
        SYNC_HOOK_BUDGET, "Budget of each Reserve call and of each Unreserve call."
    )
    permit: GoDuration = _budget(
        SYNC_HOOK_BUDGET, "Budget of each Permit call (not of the wait it may ask for)."
    )
    permit_max_wait: GoDuration = _budget(
        900.0,
        "Longest a Permit plugin may make a pod wait; longer requests are capped to this "
        "(kube-scheduler caps Permit waits at 15m too).",
    )
    pre_bind: GoDuration = _budget(30.0, "Budget of each PreBind call.")
    bind: GoDuration = _budget(30.0, "Budget of each Bind call.")
    post_bind: GoDuration = _budget(30.0, "Budget of each PostBind call.")
    plugins: dict[str, HookTimeoutOverrides] = Field(
        default_factory=dict,
        description="Plugin name to its own budgets, in every profile, e.g. "
        "`{MyPlugin: {filter: 10s}}`; a plugin's budget for a point it does not "
        "implement is an error.",
    )

    def budget(self, field: str, plugin: str) -> float:
        """The budget of ``plugin``'s calls at ``field`` (e.g. ``"filter"``), in seconds."""
        own = self.plugins.get(plugin)
        value = getattr(own, field) if own is not None else None
        return float(value if value is not None else getattr(self, field))


class CircuitBreakerConfig(_ConfigModel):
    """Taking a plugin that keeps failing out of its profile for a while.

    A plugin whose calls fail (raise, return something their hook does not
    allow, or overrun their budget; an Error status the plugin returns, such
    as an API call that failed, does not count) for `consecutiveFailures`
    different pods in a row, with no successful call in between, is out of its
    profile for `coolDown`: its hooks are skipped when its `failurePolicy` is
    `Ignore`, and pods fail at once with an error naming the open breaker when
    it is `Fail`. After the cool-down the next call runs again (half-open):
    a success closes the breaker, a failure opens it for another cool-down.
    Failures of one pod retried over and over count once, so a single pod the
    plugin cannot handle never takes the plugin out.
    """

    consecutive_failures: int = Field(
        default=5,
        ge=0,
        le=INT32_MAX,
        description="Failing pods in a row that open the breaker; 0 turns breakers off.",
    )
    cool_down: GoDuration = Field(
        default=30.0,
        json_schema_extra=_shown(30.0),
        gt=0,
        description="How long an open breaker keeps the plugin out before trying it again.",
    )


class SchedulerExtensions(_ConfigModel):
    """Top-level settings of pluggable-scheduler that kube-scheduler does not have."""

    server_address: str = Field(
        default=_DEFAULT_SERVER_ADDRESS,
        description="`host:port` serving /healthz, /livez, /readyz and /metrics "
        "(kube-scheduler's secure port is 10259). `run` serves it as kube-scheduler does: "
        "HTTPS, /metrics only for callers the API server authenticates and authorizes "
        "(its flags `--bind-address` and `--secure-port` override this address; "
        "`--plain-http` serves plain HTTP for local use). An empty host listens on all "
        "interfaces; an IPv6 host is written in brackets (`[::1]:10259`). `run` fails at "
        "start-up, naming this field, when the address cannot be bound.",
    )
    binding_concurrency: int = Field(
        default=64,
        gt=0,
        le=INT32_MAX,
        description="Most Binds (the Binding POST, or a binding extender's call) in flight "
        "at once. While that many binding cycles are binding or waiting to bind (those "
        "waiting at Permit or running PreBind, which may wait minutes for volumes, not "
        "counted), the next pod is taken from the queue only once one ends, so decisions "
        "do not run ahead of what the API server can bind.",
    )
    timeouts: HookTimeouts = Field(
        default_factory=HookTimeouts,
        description="Budgets of plugin hook calls, per extension point and per plugin.",
    )
    circuit_breaker: CircuitBreakerConfig = Field(
        default_factory=CircuitBreakerConfig,
        description="When a plugin that keeps failing is taken out of its profile, and "
        "for how long.",
    )
    shutdown_grace_period: GoDuration = Field(
        default=25.0,
        json_schema_extra=_shown(25.0),
        gt=0,
        le=3600,
        description="Longest a stop (SIGTERM, lost lease) takes, whatever plugins do: "
        "in-flight bindings get this long less a few seconds to finish; if the scheduling "
        "loop has not finished by then (a plugin holds it) `run` ends the process with "
        "exit code 3, leaving the lease to expire. Keep it below the pod's "
        "`terminationGracePeriodSeconds` (30 s by default).",
    )
    scheduling_loop_stall_limit: GoDuration = Field(
        default=60.0,
        json_schema_extra=_shown(60.0),
        gt=0,
        le=MAX_GO_DURATION_SECONDS,
        description="`/livez` and `/healthz` fail (check `scheduling-loop`) once the "
        "scheduling loop has not run for this long, e.g. a plugin hook that never "
        "returns: the kubelet then restarts the container, the only way to take such a "
        "hook out. Health and metrics keep answering meanwhile and the lease keeps being "
        "renewed (they run on a thread of their own).",
    )

    feature_gates: dict[str, bool] = Field(
        default_factory=dict,
        description="Feature gate name to on/off, as kube-scheduler's `--feature-gates` "
        "(the same flag on `run`, `simulate` and `explain` wins over this field, gate by "
        "gate). Names are kube 1.36.3's gates (their defaults, stages and locks; `AllAlpha` "
        "and `AllBeta` too) and the gates installed plugins declare. A plugin behind a gate "
        "that is off is not loaded: it drops out of the default plugins, and a profile "
        "enabling it is an error naming the gate. An unknown name, a locked gate set away "
        "from its default, or an enabled gate whose dependencies are off is an error. "
        "Read at start-up only (a reload that changes it is refused).",
    )
    config_reload_period: GoDuration = Field(
        default=5.0,
        json_schema_extra=_shown(5.0),
        ge=0,
        le=3600,
        description="How often `run` reads its `--config` file for changes (a mounted "
        "ConfigMap is updated in place by the kubelet). A changed file is validated, "
        "plugins it newly enables are loaded, and its profiles, plugin args, weights, "
        "budgets, circuit breaker and backoffs take effect between two scheduling cycles, "
        "keeping the lease and the queue; an invalid one leaves the running config in "
        "place and is reported (log, event on the scheduler's Pod, "
        "`scheduler_config_last_reload_successful`). Other fields, this one included, "
        "need a restart. `0s` turns reloading off.",
    )

    @field_validator("server_address")
    @classmethod
    def _check_address(cls, value: str) -> str:
        # The same rules as the health server's parse_address, so that an
        # address accepted here cannot fail at start-up: IPv6 needs brackets.
        if value.startswith("["):
            host, sep, port = value[1:].partition("]:")
            bad_host = not host or " " in host
        else:
            host, sep, port = value.rpartition(":")
            bad_host = ":" in host or " " in host
        if not sep or bad_host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise PydanticCustomError(
                "host_port",
                'must be "host:port" ("[host]:port" for IPv6), e.g. "{example}"',
                {"example": "0.0.0.0:10259"},
            )
        return value


class ProfileExtensions(_ConfigModel):
    """Per-profile settings of pluggable-scheduler that kube-scheduler does not have."""

    plugin_priorities: dict[str, int] = Field(
        default_factory=dict,
        description="Plugin name to priority. At every extension point plugins run in "
        "descending priority; ties keep the configured order. A plugin not listed uses "
        "the default priority it declares.",
    )
    timeouts: ProfileHookTimeouts = Field(
        default_factory=ProfileHookTimeouts,
        description="Hook budgets for this profile only (overrides of "
        "`pluggableScheduler.timeouts`).",
    )
    failure_policy: dict[str, FailurePolicy] = Field(
        default_factory=dict,
        description="Plugin name to `Fail` (the default, as kube-scheduler) or `Ignore`. "
        "With `Ignore`, a call that errors, overruns its budget or finds the plugin's "
        "circuit breaker open costs only that plugin's say in the pod's decision: a "
        "PreEnqueue, PreFilter or Filter call counts as passing (a PreFilter as Skip, so "
        "its Filter does not run either), a PreScore call as Skip, a Score or "
        "NormalizeScore call leaves the plugin's scores out (0 on every node), a "
        "PostFilter call as no opinion; each is logged, counted in "
        "`scheduler_plugin_ignored_failures_total`, shown by `explain` and reported in a "
        "`PluginIgnored` event on the pod. Reserve, Permit, PreBind and Bind failures "
        "always fail the attempt (what they do cannot be half-done safely), so `Ignore` "
        "is refused for a plugin that runs only there; Unreserve and PostBind failures "
        "never fail anything.",
    )
    shadow_of: str | None = Field(
        default=None,
        description="Makes this profile a shadow of the named profile: for every pod that "
        "profile decides, this one runs the same scheduling cycle on the same cluster "
        "snapshot (right after the primary's Binding request went out) and never reserves, "
        "permits or binds. Decisions that differ are counted in "
        "`scheduler_shadow_divergence_total` and the last ones kept as explain-style diffs "
        "(`GET /shadow`, `pluggable-scheduler shadow`). Pods asking for a shadow's "
        "schedulerName are not scheduled by it.",
    )
    shadow_budget: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Only with `shadowOf`: the largest share of the scheduling loop's time "
        "this shadow may take, e.g. 0.2 for a fifth. Its time is counted as it runs; while "
        "it is over the share (measured over the last second), the primary's decisions go "
        "unshadowed and are counted in `scheduler_shadow_skipped_total`. Unset: every "
        "decision is shadowed, whatever it costs.",
    )


# --------------------------------------------------------------------------- kube sections


class LeaderElectionConfiguration(_ConfigModel):
    """Lease-based leader election, as kube-scheduler's ``leaderElection`` section."""

    leader_elect: bool = Field(
        default=True,
        description="Run leader election so that only one replica schedules at a time.",
    )
    lease_duration: GoDuration = Field(
        default=15.0,
        json_schema_extra=_shown(15.0),
        description="How long non-leaders wait after the last renewal before taking over; "
        "at most 2147483647s (the Lease stores it as int32 seconds).",
    )
    renew_deadline: GoDuration = Field(
        default=10.0,
        json_schema_extra=_shown(10.0),
        description="How long the leader keeps retrying to renew before giving up "
        "leadership (and exiting); must be less than leaseDuration and greater than "
        "retryPeriod * 1.2 (client-go's jitter factor).",
    )
    retry_period: GoDuration = Field(
        default=2.0,
        json_schema_extra=_shown(2.0),
        description="Wait between attempts to acquire or renew the lease; greater than zero.",
    )
    resource_lock: str = Field(
        default="leases", description='Lock object type; only "leases" is supported.'
    )
    resource_name: str = Field(
        default=DEFAULT_SCHEDULER_NAME, description="Name of the Lease object."
    )
    resource_namespace: str = Field(
        default="kube-system", description="Namespace of the Lease object."
    )


class ClientConnectionConfiguration(_ConfigModel):
    """How to reach the API server, as kube-scheduler's ``clientConnection`` section."""

    kubeconfig: str = Field(
        default="",
        description="Path to a kubeconfig; empty means in-cluster config (or --kubeconfig).",
    )
    accept_content_types: str = Field(
        default="", description="Accept header sent to the API server; empty for the default."
    )
    content_type: str = Field(
        default="application/json",
        description="Content type of requests. kube-scheduler defaults to protobuf; the "
        "Python client speaks JSON, so that is the default here.",
    )
    qps: float = Field(
        default=50.0,
        allow_inf_nan=False,
        ge=-FLOAT32_MAX,
        le=FLOAT32_MAX,
        description="Client-side rate limit, requests per second (0 selects the default, 50; "
        "a negative value turns the limit off, as in client-go). NaN and infinity are "
        "rejected.",
    )
    burst: int = Field(
        default=100,
        ge=0,
        le=INT32_MAX,
        description="Extra requests allowed in a burst above qps (0 selects the default, 100).",
    )

    @field_validator("qps")
    @classmethod
    def _default_qps(cls, value: float) -> float:
        # kube-scheduler treats 0 as "use the scheduler's own default".
        return 50.0 if value == 0 else value

    @field_validator("burst")
    @classmethod
    def _default_burst(cls, value: int) -> int:
        return 100 if value == 0 else value


class SchedulerProfile(_ConfigModel):
    """A scheduling profile: the plugins that schedule pods asking for ``schedulerName``."""

    scheduler_name: str = Field(
        min_length=1,
        description="Pods whose spec.schedulerName equals this are scheduled by this profile. "
        f"Defaults to `{DEFAULT_SCHEDULER_NAME}` when there is a single profile; required "
        "otherwise.",
    )
    percentage_of_nodes_to_score: int | None = Field(
        default=None,
        ge=0,
        le=100,
        description="Overrides the top-level percentageOfNodesToScore for this profile; "
        "unset uses the top-level value. An explicit 0 here means kube's adaptive "
        "percentage, as in kube-scheduler, whatever the top-level value.",
    )
    plugins: Plugins = Field(
        default_factory=Plugins,
        description="Plugins enabled and disabled, on top of the default plugin set.",
    )
    plugin_config: list[PluginConfig] = Field(
        default_factory=list,
        description="Arguments per plugin; a plugin without an entry gets its default args.",
    )
    pluggable_scheduler: ProfileExtensions = Field(
        default_factory=ProfileExtensions,
        description="pluggable-scheduler settings for this profile (not in kube-scheduler).",
    )


class SchedulerConfiguration(_ConfigModel):
    """The whole config file: kube-scheduler's ``KubeSchedulerConfiguration`` plus our block."""

    # The file it was loaded from, so that problems found later (plugin names
    # and args, checked against the installed plugins) name it too. Private:
    # neither a config field nor part of model_dump, hence of change detection.
    _source: str | None = PrivateAttr(default=None)
    # Gates given on the command line (`--feature-gates`): they win over the
    # file's, and a reload re-applies them to the new file.
    _gate_flags: dict[str, bool] = PrivateAttr(default_factory=dict)

    @property
    def feature_gate_flags(self) -> Mapping[str, bool]:
        """The gates set by ``--feature-gates`` (already merged into the field)."""
        return self._gate_flags

    def with_feature_gate_flags(self, flags: Mapping[str, bool]) -> SchedulerConfiguration:
        """A copy whose ``pluggableScheduler.featureGates`` has ``flags`` applied on top."""
        if not flags:
            return self
        extensions = self.pluggable_scheduler.model_copy(
            update={"feature_gates": {**self.pluggable_scheduler.feature_gates, **flags}}
        )
        copy = self.model_copy(update={"pluggable_scheduler": extensions})
        copy._source = self._source
        copy._gate_flags = dict(flags)
        return copy

    @property
    def source(self) -> str | None:
        """The file this config was loaded from (None for built or default configs)."""
        return self._source

    api_version: Literal["kubescheduler.config.k8s.io/v1"] = Field(
        default=API_VERSION,
        description="Must be kubescheduler.config.k8s.io/v1 (older versions: migrate first).",
    )
    kind: Literal["KubeSchedulerConfiguration"] = Field(
        default=KIND, description="Must be KubeSchedulerConfiguration."
    )
    parallelism: int = Field(
        default=16,
        gt=0,
        le=INT32_MAX,
        description="Accepted for compatibility and not used: Filter and Score run "
        "vectorized over all candidate nodes at once on the scheduling thread instead "
        "of node by node on workers. Measured on the 2-core benchmark machine, "
        "splitting a Filter and Score pass into chunks on 2 threads (numpy releases the "
        "GIL) cost 1.6-1.8x the CPU time of one pass at 5,000-15,000 nodes (every "
        "plugin's per-call Python work repeats per chunk) and more wall time at every "
        "size up to 65,000; on large clusters the decision time is kept flat by "
        "percentageOfNodesToScore's sampling instead (BENCHMARKS.md, Decision time).",
    )
    leader_election: LeaderElectionConfiguration = Field(
        default_factory=LeaderElectionConfiguration, description="Leader election."
    )
    client_connection: ClientConnectionConfiguration = Field(
        default_factory=ClientConnectionConfiguration, description="API server connection."
    )
    percentage_of_nodes_to_score: int | None = Field(
        default=None,
        ge=0,
        le=100,
        description="How many feasible nodes to look for and score, as kube-scheduler "
        "does. Set (here, or per profile, where it wins), it has kube's meaning: a "
        "cycle filters nodes from where the previous cycle stopped and stops as soon "
        "as it has found `max(N * p / 100, 100)` feasible nodes for N candidate nodes "
        "(every node when N < 100 or p is 100), and scores only those; 0 is kube's "
        "adaptive percentage, `max(5, 50 - N / 125)`. With no Score plugin in the "
        "profile (and no HTTP extender) one feasible node is enough, as in kube. "
        "Unset (the default), every node is filtered and scored while there are at "
        "most 5000 candidate nodes, so the choice never depends on where a sample "
        "started (kube's adaptive default would score 46% of 500 nodes, 10% of "
        "5000); above 5000 the adaptive percentage applies, which keeps the decision "
        "time from growing with the cluster (BENCHMARKS.md, Decision time). A cycle "
        "an HTTP extender takes part in samples with the adaptive percentage even "
        "unset: the extender's work grows with each node sent (docs/extenders.md). "
        "Sampling turns off the reuse of results across identical pods for that "
        "cycle. Measured against kube-scheduler 1.36.3 (fidelity scenario "
        "`sampling`: 500 identical nodes, 10 pods each preferring a node of its own, "
        "so each has one best node): with the field unset on both sides, kube "
        "evaluated and scored 230 nodes per pod (46%: a window of nodes in creation "
        "order, moving on by 230 every cycle) and put 6 of the 10 pods (in each of "
        "two runs) on another node than the best one, which its sample did not hold "
        "(about 54% of pods are expected to miss), while we score all 500 and always "
        "choose it. With 50 on both sides both evaluate and score 250 nodes per pod, "
        "but not the same 250: kube's start moves on across cycles, ours too in the "
        "daemon (from its own history), while `explain` always starts at the first "
        "node, so the chosen nodes still differed for some of the 10 pods. Set 100 "
        "to score every node on both sides.",
    )
    pod_initial_backoff_seconds: int = Field(
        default=1,
        gt=0,
        le=MAX_BACKOFF_SECONDS,
        description="Initial backoff of a pod that failed to schedule.",
    )
    pod_max_backoff_seconds: int = Field(
        default=10,
        gt=0,
        le=MAX_BACKOFF_SECONDS,
        description="Longest backoff of a pod that keeps failing; at least the initial one.",
    )
    profiles: list[SchedulerProfile] = Field(
        default_factory=list,
        description=f"Scheduling profiles; defaults to one profile named "
        f"`{DEFAULT_SCHEDULER_NAME}` with the default plugins.",
    )
    extenders: list[Extender] = Field(
        default_factory=list,
        description="HTTP extenders, called as kube-scheduler calls them (see "
        "[HTTP extenders](extenders.md)); pods no extender is interested in never wait "
        "for one.",
    )
    enable_profiling: bool = Field(
        default=True, description="Accepted for compatibility (Go pprof endpoints)."
    )
    enable_contention_profiling: bool = Field(
        default=True,
        description="Accepted for compatibility; defaults to enableProfiling.",
    )
    delay_cache_until_active: bool = Field(
        default=False,
        description="With leader election, wait to list and watch the cluster until elected "
        "(slower failover, less memory on standby replicas).",
    )
    pluggable_scheduler: SchedulerExtensions = Field(
        default_factory=SchedulerExtensions,
        description="pluggable-scheduler settings that kube-scheduler does not have.",
    )

    @classmethod
    def _prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        # kube-scheduler's defaulting: no profiles means one default profile, and
        # a single profile without a name gets the default name. Done on the raw
        # input so that schedulerName can stay required for multi-profile configs.
        data = dict(data)
        profiles_key = "profiles"
        profiles = data.get(profiles_key)
        if profiles is None or (isinstance(profiles, list) and not profiles):
            data[profiles_key] = [{"schedulerName": DEFAULT_SCHEDULER_NAME}]
        elif isinstance(profiles, list) and len(profiles) == 1:
            only = profiles[0]
            if (
                isinstance(only, Mapping)
                and only.get("schedulerName", only.get("scheduler_name")) is None
            ):
                named = {k: v for k, v in only.items() if k != "scheduler_name"}
                named["schedulerName"] = DEFAULT_SCHEDULER_NAME
                data[profiles_key] = [named]
        contention = data.get("enableContentionProfiling", data.get("enable_contention_profiling"))
        profiling = data.get("enableProfiling", data.get("enable_profiling", True))
        if contention is None and isinstance(profiling, bool):
            data["enableContentionProfiling"] = profiling
        return data

    def profile(self, scheduler_name: str) -> SchedulerProfile | None:
        """The profile with ``scheduler_name``, if any."""
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)


def semantic_problems(config: SchedulerConfiguration) -> list[str]:
    """Cross-field problems of a parsed config, one ``path: message`` line each.

    These are kube-scheduler's validation rules that no single field can check
    (leader-election timing, backoff order, unique profile names). They do not
    need the plugin catalog; plugin rules are in :mod:`scheduler.config.resolve`.
    """
    problems: list[str] = []
    le = config.leader_election
    if le.leader_elect:
        for name, value in (
            ("leaseDuration", le.lease_duration),
            ("renewDeadline", le.renew_deadline),
            ("retryPeriod", le.retry_period),
        ):
            if value <= 0:
                problems.append(f"leaderElection.{name}: must be greater than zero")
        if le.lease_duration > INT32_MAX:
            # client-go writes it to Lease spec.leaseDurationSeconds, an int32:
            # the API server answers every write with 400 and we never lead.
            problems.append(
                f"leaderElection.leaseDuration: must be at most {INT32_MAX}s "
                f"(Lease spec.leaseDurationSeconds is an int32), "
                f"got {format_go_duration(le.lease_duration)}"
            )
        if le.lease_duration <= le.renew_deadline:
            problems.append(
                f"leaderElection.leaseDuration: must be greater than renewDeadline "
                f"({format_go_duration(le.lease_duration)} <= "
                f"{format_go_duration(le.renew_deadline)})"
            )
        elif le.retry_period > 0 and le.renew_deadline <= JITTER_FACTOR * le.retry_period:
            # client-go's NewLeaderElector refuses this at start-up: a renewal
            # retried with jitter could not fit in the deadline.
            problems.append(
                f"leaderElection.renewDeadline: must be greater than retryPeriod*{JITTER_FACTOR} "
                f"(client-go's JitterFactor) ({format_go_duration(le.renew_deadline)} <= "
                f"{format_go_duration(JITTER_FACTOR * le.retry_period)})"
            )
        if le.resource_lock != "leases":
            problems.append(
                f'leaderElection.resourceLock: must be "leases", got {le.resource_lock!r}'
            )
        if not le.resource_name:
            problems.append("leaderElection.resourceName: required when leaderElect is true")
        if not le.resource_namespace:
            problems.append("leaderElection.resourceNamespace: required when leaderElect is true")
    if config.pod_max_backoff_seconds < config.pod_initial_backoff_seconds:
        problems.append(
            f"podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds "
            f"({config.pod_max_backoff_seconds} < {config.pod_initial_backoff_seconds})"
        )
    problems.extend(extender_problems(config.extenders))
    first_index: dict[str, int] = {}
    for i, profile in enumerate(config.profiles):
        name = profile.scheduler_name
        if name in first_index:
            problems.append(
                f"profiles[{i}].schedulerName: duplicate {name!r}, "
                f"already used by profiles[{first_index[name]}]"
            )
        else:
            first_index[name] = i
    problems.extend(_shadow_problems(config))
    return problems


def _shadow_problems(config: SchedulerConfiguration) -> list[str]:
    """``shadowOf`` must name another profile that schedules (not a shadow itself)."""
    problems: list[str] = []
    shadow_of = {p.scheduler_name: p.pluggable_scheduler.shadow_of for p in config.profiles}
    for i, profile in enumerate(config.profiles):
        primary = profile.pluggable_scheduler.shadow_of
        if primary is None:
            if profile.pluggable_scheduler.shadow_budget is not None:
                problems.append(
                    f"profiles[{i}].pluggableScheduler.shadowBudget: only a shadow has a "
                    "budget; set shadowOf too, or remove shadowBudget"
                )
            continue
        where = f"profiles[{i}].pluggableScheduler.shadowOf"
        if primary == profile.scheduler_name:
            problems.append(f"{where}: a profile cannot be its own shadow")
        elif primary not in shadow_of:
            known = ", ".join(repr(n) for n in shadow_of)
            problems.append(f"{where}: no profile named {primary!r} (profiles: {known})")
        elif shadow_of[primary] is not None:
            problems.append(
                f"{where}: {primary!r} is itself a shadow (of {shadow_of[primary]!r}); "
                "a shadow follows a profile that schedules"
            )
        elif i == 0:
            problems.append(
                f"{where}: the first profile cannot be a shadow (its QueueSort orders the "
                "queue of every profile); list the shadow after its primary"
            )
    return problems
