"""Running a profile's plugins at each extension point, with kube-scheduler's semantics.

One :class:`Framework` per profile. Hook implementations are resolved once,
at construction, into ordered lists of direct calls, so a scheduling cycle
pays neither pluggy's dispatch nor a per-call lookup. Every call is guarded:
a plugin that raises, returns something that is not what its hook promises,
or runs past its budget produces an Error status naming the plugin for this
pod's attempt only, or, under ``failurePolicy: Ignore`` at the points where
that is safe, only loses that plugin's say in the decision. Repeated failures
open the plugin's circuit breaker (:mod:`scheduler.framework.guard`).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, cast

import numpy as np
import numpy.typing as npt

from scheduler.api.cyclestate import CycleState
from scheduler.api.events import ClusterEventWithHint
from scheduler.api.results import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Diagnosis,
    FilterResult,
    PostFilterResult,
    PreFilterResult,
    Rejection,
)
from scheduler.api.status import Code, Status
from scheduler.api.transform import NodeAdjustment
from scheduler.api.views import Node, Nodes, Pod
from scheduler.config.extenders import EXTENDER_PLUGIN
from scheduler.config.models import CircuitBreakerConfig, FailurePolicy, HookTimeouts
from scheduler.config.points import ExtensionPoint
from scheduler.eager import start_eagerly
from scheduler.framework import promises
from scheduler.framework.apiviews import hook_function
from scheduler.framework.extenders import ExtenderRunner, ExtenderStep
from scheduler.framework.guard import WATCHDOG, Breaker, IgnoredFailure, Running, abandon
from scheduler.framework.overlay import Overlay
from scheduler.framework.pluginmanager import HOOK_POINTS, SchedulerPluginManager
from scheduler.observability.logging import get_logger
from scheduler.state.nodetable import NodeInfo, NodeSet, node_info_of
from scheduler.state.pod import PodInfo, QueuedPodInfo
from scheduler.state.views import NodesView

ScoreArray = npt.NDArray[np.int64]
_INT64 = np.dtype(np.int64)
_now = time.perf_counter
_SUCCESS = Status.success()
PREFILTER_NARROWING_KEY = "framework/prefilter-narrowing"
FILTER_OVERLAY_KEY = "framework/filter-overlay"
"""CycleState key of the :class:`~.overlay.Overlay` the ``before_filter`` transformers
asked for (absent: none); every Filter run of the attempt applies it."""
IGNORED_KEY = "framework/ignored-failures"
"""CycleState key of the :class:`IgnoredFailure` list of the attempt (absent: none)."""

log = get_logger("scheduler.framework")

#: Seconds the extender step may run past its extenders' own timeouts.
EXTENDER_BUDGET_SLACK: Final = 1.0

#: The extension point label of each hook, as metrics and messages name it.
HOOK_LABELS: Final[dict[str, str]] = {
    "pre_enqueue": "PreEnqueue",
    "queue_sort_key": "QueueSort",
    "before_pre_filter": "PreFilter",
    "after_pre_filter": "PreFilter",
    "pre_filter": "PreFilter",
    "before_filter": "Filter",
    "before_score": "Score",
    "pre_filter_add_pod": "PreFilter",
    "pre_filter_remove_pod": "PreFilter",
    "filter": "Filter",
    "post_filter": "PostFilter",
    "pre_score": "PreScore",
    "score": "Score",
    "normalize_score": "NormalizeScore",
    "reserve": "Reserve",
    "unreserve": "Unreserve",
    "permit": "Permit",
    "pre_bind": "PreBind",
    "bind": "Bind",
    "post_bind": "PostBind",
}

#: How kube-scheduler's framework wraps an Error a plugin returns at each point
#: (framework.go), so events and conditions read as kube's do.
KUBE_ERROR_WRAP: Final[dict[str, str]] = {
    "PreFilter": 'running PreFilter plugin "{plugin}": {message}',
    "Filter": 'running "{plugin}" filter plugin: {message}',
    "PreScore": 'running PreScore plugin "{plugin}": {message}',
    "Score": 'running Score plugins: plugin "{plugin}" failed with: {message}',
    "NormalizeScore": (
        'running Normalize on Score plugins: plugin "{plugin}" failed with: {message}'
    ),
    "Reserve": 'running Reserve plugin "{plugin}": {message}',
    "Permit": 'running Permit plugin "{plugin}": {message}',
    "PreBind": 'running PreBind plugin "{plugin}": {message}',
    "Bind": 'running Bind plugin "{plugin}": {message}',
}


def kube_wrapped(call: PluginCall, status: Status) -> Status:
    """An Error status a plugin returned, with kube's framework prefix."""
    template = KUBE_ERROR_WRAP.get(call.point)
    if template is None or call.hook in ("pre_filter_add_pod", "pre_filter_remove_pod"):
        return status.with_plugin(call.plugin)
    message = template.format(plugin=call.plugin, message=status.message())
    return Status(Code.ERROR, (message,), call.plugin, status.error)


#: Hooks whose failure ``failurePolicy: Ignore`` may turn into "no opinion".
IGNORABLE_HOOKS: Final = frozenset(
    {
        "pre_enqueue",
        "before_pre_filter",
        "after_pre_filter",
        "before_filter",
        "before_score",
        "pre_filter",
        "pre_filter_add_pod",
        "pre_filter_remove_pod",
        "filter",
        "post_filter",
        "pre_score",
        "score",
        "normalize_score",
    }
)

SLOW_CYCLE_SECONDS: Final = 0.01
"""Cycles this long on average cap throughput near 100 pods/s: only then is a
plugin's share of them worth a warning."""
SLOW_PLUGIN_SHARE: Final = 0.5
"""A plugin taking more than this share of such cycles is named in a warning."""
SLOW_WINDOW_CYCLES: Final = 20
SLOW_WINDOW_SECONDS: Final = 2.0
"""Shares are judged over a window of this many cycles or this much cycle time,
whichever comes first: one cycle is too noisy (the process descheduled, a
garbage collection, both charged to whichever plugin was running)."""
SLOW_PLUGIN_WARN_EVERY: Final = 60.0
"""Seconds between two slow-plugin warnings about the same plugin of a profile."""

EventSink = Callable[[PodInfo, str, str, str, str], None]
#: Events about the scheduler itself (type, reason, note), e.g. a breaker opening:
#: they go on the scheduler's own object, not on whichever pod tripped it.
NoticeSink = Callable[[str, str, str], None]


class FrameworkRecorder(Protocol):
    """Where durations and plugin failures go (Prometheus in the daemon)."""

    def plugin_duration(self, point: str, plugin: str, code: Code, seconds: float) -> None: ...

    def point_duration(self, point: str, code: Code, seconds: float) -> None: ...

    def plugin_error(self, point: str, plugin: str) -> None: ...

    def plugin_overrun(self, point: str, plugin: str) -> None: ...

    def plugin_ignored(self, point: str, plugin: str, reason: str) -> None: ...

    def circuit_open(self, plugin: str, is_open: bool) -> None: ...

    def abandoned_call(self, point: str, plugin: str, delta: int) -> None: ...

    def plugin_times(self, labels: Sequence[tuple[str, str]], seconds: list[float]) -> None: ...

    def stuck_calls(self, source: Callable[[], list[tuple[str, str]]]) -> None: ...

    def retire_stuck_calls(self, source: Callable[[], list[tuple[str, str]]]) -> None: ...


class NullRecorder:
    def plugin_duration(self, point: str, plugin: str, code: Code, seconds: float) -> None:
        pass

    def point_duration(self, point: str, code: Code, seconds: float) -> None:
        pass

    def plugin_error(self, point: str, plugin: str) -> None:
        pass

    def plugin_overrun(self, point: str, plugin: str) -> None:
        pass

    def plugin_ignored(self, point: str, plugin: str, reason: str) -> None:
        pass

    def circuit_open(self, plugin: str, is_open: bool) -> None:
        pass

    def abandoned_call(self, point: str, plugin: str, delta: int) -> None:
        pass

    def plugin_times(self, labels: Sequence[tuple[str, str]], seconds: list[float]) -> None:
        pass

    def stuck_calls(self, source: Callable[[], list[tuple[str, str]]]) -> None:
        pass

    def retire_stuck_calls(self, source: Callable[[], list[tuple[str, str]]]) -> None:
        pass


@dataclass(slots=True)
class PluginCall:
    """One plugin's implementation of one hook, ready to call.

    Callers pass the hook's arguments as a tuple in hookspec order;
    ``indices`` picks the subset this implementation declared (None: all of
    them, in order), which is cheaper than building keyword dicts per call.
    """

    plugin: str
    fn: Callable[..., Any]
    indices: tuple[int, ...] | None
    weight: int = 1
    #: The extension point label (``"Filter"``, ``"NormalizeScore"`` ...).
    point: str = ""
    #: The hookspec's name (``"filter"``, ``"pre_filter_add_pod"`` ...).
    hook: str = ""
    #: Seconds a call may take (see :class:`~scheduler.config.models.HookTimeouts`).
    budget: float = math.inf
    #: ``failurePolicy: Ignore`` at a point where it applies.
    ignore: bool = False
    breaker: Breaker = field(default_factory=lambda: Breaker(0, 1.0))
    #: Index of this call's time totals in the framework's lists.
    slot: int = 0
    profile: str = ""

    def __call__(self, args: tuple[Any, ...]) -> Any:
        if self.indices is None:
            return self.fn(*args)
        return self.fn(*[args[i] for i in self.indices])


# kube-scheduler times individual plugins on a sample of cycles only
# (pluginMetricsSamplePercent = 10): timing every call would cost more than
# the plugins themselves. Extension points are always timed.
PLUGIN_METRICS_SAMPLE_EVERY = 10


class RegistrationError(Exception):
    """A plugin's ``events_to_register`` failed: it cannot be run (names the plugin)."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.message = message


class PluginFailure(Exception):
    """Internal: carries the Error status of a failed plugin call up to the point.

    ``reason`` is what failed: ``error`` (raised, returned an error or
    garbage), ``overrun`` (past its budget) or ``circuit_open`` (not called).
    """

    def __init__(self, status: Status, reason: str = "error") -> None:
        super().__init__(str(status))
        self.status = status
        self.reason = reason


@dataclass(slots=True)
class FilterOutcome:
    feasible: NodeSet
    diagnosis: Diagnosis
    status: Status  # Error aborts the attempt; otherwise Success


@dataclass(slots=True)
class PluginScores:
    raw: ScoreArray
    normalized: ScoreArray
    weighted: ScoreArray


@dataclass(slots=True)
class ScoreOutcome:
    nodes: NodeSet
    total: ScoreArray
    by_plugin: dict[str, PluginScores] = field(default_factory=dict)
    status: Status = field(default_factory=Status.success)


def _describe(value: Any) -> str:
    return type(value).__name__ if value is not None else "None"


class _PostFilterRun:
    """The PostFilter plugins' answers so far: the last meaningful one, and the messages."""

    def __init__(self) -> None:
        self.result = PostFilterResult(Status.unschedulable())
        self.messages: list[str] = []

    def take(self, candidate: PostFilterResult | None) -> bool:
        """Record one plugin's answer; True when no further plugin runs."""
        if candidate is None:
            return False
        self.result = candidate
        status = candidate.status
        if status.is_success():
            return True
        if status.message():
            self.messages.append(status.message())
        return False


def _discard(awaitable: Any) -> None:
    """Close a coroutine that will not be awaited (no "never awaited" warning)."""
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


async def _done_within(task: asyncio.Future[Any], seconds: float) -> bool:
    """Wait up to ``seconds`` for ``task``; never cancel it, never wait longer.

    ``asyncio.wait(..., timeout=)`` without its set and closure bookkeeping:
    this runs for every binding-cycle hook call.
    """
    if task.done():
        return True
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(_: object = None) -> None:
        if not waiter.done():
            waiter.set_result(None)

    timer = asyncio.get_running_loop().call_later(seconds, wake)
    task.add_done_callback(wake)
    try:
        await waiter
    finally:
        timer.cancel()
        task.remove_done_callback(wake)
    return task.done()


def _result_code(result: Any) -> Code:
    return result.code if isinstance(result, Status) else Code.SUCCESS


class Framework:
    """A profile's plugins, in order, per extension point."""

    def __init__(
        self,
        profile_name: str,
        manager: SchedulerPluginManager,
        order: dict[ExtensionPoint, list[tuple[str, int]]],
        *,
        recorder: FrameworkRecorder | None = None,
        timeouts: HookTimeouts | None = None,
        failure_policy: Mapping[str, FailurePolicy] | None = None,
        circuit_breaker: CircuitBreakerConfig | None = None,
        events: EventSink | None = None,
        notices: NoticeSink | None = None,
    ) -> None:
        self.profile_name = profile_name
        self.manager = manager
        self.recorder: FrameworkRecorder = recorder or NullRecorder()
        self.timeouts = timeouts or HookTimeouts()
        self.failure_policy = dict(failure_policy or {})
        breaker_config = circuit_breaker or CircuitBreakerConfig()
        self._events = events
        self._notices = notices
        self.order = order
        self._cycles = 0
        self.plugins: dict[str, object] = {}
        for name, plugin in manager.list_name_plugin():
            if name is not None:
                self.plugins[name] = plugin
        #: Plugins declaring ``pods_via_requested`` (checked in promise-checking mode).
        self._via_requested = frozenset(
            name for name, p in self.plugins.items() if getattr(p, "pods_via_requested", False)
        )
        #: One breaker per plugin: failures at any of its hooks count.
        self.breakers = {
            name: Breaker(breaker_config.consecutive_failures, breaker_config.cool_down)
            for name in self.plugins
        }
        #: Plugins whose breaker counts failures or is open: the only ones
        #: whose calls need a look at their breaker (an empty set is falsy).
        self._troubled: set[str] = set()
        #: Every call's (point, plugin) label and seconds so far, by ``PluginCall.slot``.
        self.call_labels: list[tuple[str, str]] = []
        self.call_seconds: list[float] = []
        #: ``call_seconds`` when the current scheduling cycle started.
        self._cycle_mark: list[float] = []
        #: Abandoned async calls still running, by call slot.
        self._abandoned: list[int] = []
        self._slow_warned: dict[str, float] = {}
        self._window_mark: list[float] = []
        self._window_cycles = 0
        self._window_seconds = 0.0

        def calls(point: ExtensionPoint, hook: str) -> list[PluginCall]:
            return self._calls(hook, order.get(point, []))

        self.pre_enqueue_calls = calls(ExtensionPoint.PRE_ENQUEUE, "pre_enqueue")
        self.queue_sort_calls = calls(ExtensionPoint.QUEUE_SORT, "queue_sort_key")
        self.before_pre_filter_calls = calls(ExtensionPoint.PRE_FILTER, "before_pre_filter")
        self.after_pre_filter_calls = calls(ExtensionPoint.PRE_FILTER, "after_pre_filter")
        self.before_filter_calls = calls(ExtensionPoint.FILTER, "before_filter")
        self.before_score_calls = calls(ExtensionPoint.SCORE, "before_score")
        self.pre_filter_calls = calls(ExtensionPoint.PRE_FILTER, "pre_filter")
        self.add_pod_calls = calls(ExtensionPoint.PRE_FILTER, "pre_filter_add_pod")
        self.remove_pod_calls = calls(ExtensionPoint.PRE_FILTER, "pre_filter_remove_pod")
        self.filter_calls = calls(ExtensionPoint.FILTER, "filter")
        self.post_filter_calls = calls(ExtensionPoint.POST_FILTER, "post_filter")
        self.pre_score_calls = calls(ExtensionPoint.PRE_SCORE, "pre_score")
        self.score_calls = calls(ExtensionPoint.SCORE, "score")
        normalize = calls(ExtensionPoint.SCORE, "normalize_score")
        self.normalize_calls = {c.plugin: c for c in normalize}
        self.reserve_calls = calls(ExtensionPoint.RESERVE, "reserve")
        self.unreserve_calls = calls(ExtensionPoint.RESERVE, "unreserve")
        self.permit_calls = calls(ExtensionPoint.PERMIT, "permit")
        self.pre_bind_calls = calls(ExtensionPoint.PRE_BIND, "pre_bind")
        self.bind_calls = calls(ExtensionPoint.BIND, "bind")
        self.post_bind_calls = calls(ExtensionPoint.POST_BIND, "post_bind")
        #: The HTTP extenders' step between Filter and Score; None without extenders.
        self.extenders = self._extender_runner()
        self._cycle_mark = list(self.call_seconds)
        self._window_mark = list(self.call_seconds)
        self.recorder.plugin_times(self.call_labels, self.call_seconds)
        self.recorder.stuck_calls(self.stuck_calls)
        self.publish_breakers()
        WATCHDOG.ensure_started()

    def restricted_to(self, plugins: Iterable[str]) -> Framework:
        """This framework's decision hooks (PreFilter to NormalizeScore) for ``plugins`` only.

        A shadow profile that shares all other plugins with its primary
        computes only what differs (:mod:`scheduler.engine.shadow_reuse`).
        The copy shares this framework's plugins and breakers, so the calls
        it makes are guarded and budgeted like any other; it records no
        durations (an extension point's time would be that of a few of its
        plugins, not the point's).
        """
        keep = frozenset(plugins)
        view = copy.copy(self)
        view.recorder = NullRecorder()
        view.pre_filter_calls = [c for c in self.pre_filter_calls if c.plugin in keep]
        view.filter_calls = [c for c in self.filter_calls if c.plugin in keep]
        view.pre_score_calls = [c for c in self.pre_score_calls if c.plugin in keep]
        view.score_calls = [c for c in self.score_calls if c.plugin in keep]
        view.normalize_calls = {p: c for p, c in self.normalize_calls.items() if p in keep}
        return view

    def publish_breakers(self) -> None:
        """Set each plugin's ``scheduler_plugin_circuit_open`` from its breaker.

        At construction, and again by a config reload that built a framework
        for this profile and then did not switch to it: the gauges are per
        profile, so the new framework's closed breakers had overwritten them.
        """
        for name, breaker in self.breakers.items():
            self.recorder.circuit_open(name, breaker.is_open)

    def retire(self) -> None:
        """This framework decides no more pods (a reload replaced it, or was abandoned).

        Its calls still running past their budget stay visible until they
        end; then the metrics forget it, and with it its plugins.
        """
        self.recorder.retire_stuck_calls(self.stuck_calls)

    def _calls(self, hook: str, plugins: Sequence[tuple[str, int]]) -> list[PluginCall]:
        caller = getattr(self.manager.hook, hook)
        spec_args = tuple(caller.spec.argnames)
        impls = {impl.plugin_name: impl for impl in caller.get_hookimpls()}
        label = HOOK_LABELS[hook]
        budget_field = HOOK_POINTS[hook].field_name
        out = []
        for name, weight in plugins:
            impl = impls.get(name)
            if impl is not None:
                indices = tuple(spec_args.index(a) for a in impl.argnames)
                positional = indices == tuple(range(len(spec_args)))
                out.append(
                    PluginCall(
                        name,
                        hook_function(impl.plugin, impl.function, impl.argnames),
                        None if positional else indices,
                        weight,
                        point=label,
                        hook=hook,
                        budget=self._budget(hook, budget_field, name),
                        ignore=hook in IGNORABLE_HOOKS
                        and self.failure_policy.get(name) == "Ignore",
                        breaker=self.breakers[name],
                        slot=len(self.call_labels),
                        profile=self.profile_name,
                    )
                )
                self.call_labels.append((label, name))
                self.call_seconds.append(0.0)
                self._abandoned.append(0)
        return out

    def _extender_runner(self) -> ExtenderRunner | None:
        """The Extender plugin's filter and prioritize step, as calls under its guards."""
        step = self.plugins.get(EXTENDER_PLUGIN)
        if not isinstance(step, ExtenderStep) or not getattr(step, "extenders", None):
            return None
        # Its own timeouts bound each call; the budget only catches a hung step.
        budget = step.step_budget() + EXTENDER_BUDGET_SLACK
        ignore = self.failure_policy.get(EXTENDER_PLUGIN) == "Ignore"

        def call(
            point: str, hook: str, fn: Callable[..., Any], budget: float = budget
        ) -> PluginCall:
            made = PluginCall(
                EXTENDER_PLUGIN,
                fn,
                None,
                point=point,
                hook=hook,
                budget=budget,
                ignore=ignore,
                breaker=self.breakers[EXTENDER_PLUGIN],
                slot=len(self.call_labels),
                profile=self.profile_name,
            )
            self.call_labels.append((point, EXTENDER_PLUGIN))
            self.call_seconds.append(0.0)
            self._abandoned.append(0)
            return made

        return ExtenderRunner(
            self,
            step,
            call("Filter", "filter", step.filter_nodes),
            call("Score", "score", step.prioritize_nodes),
            call(
                "PostFilter",
                "post_filter",
                step.process_preemption,
                step.preempt_budget() + EXTENDER_BUDGET_SLACK,
            ),
        )

    def _budget(self, hook: str, field_name: str, plugin: str) -> float:
        """The configured budget; for PreBind, more when the plugin declares a longer wait.

        kube-scheduler puts no limit on PreBind; VolumeBinding legitimately
        waits up to its ``bindTimeoutSeconds`` (600 s by default) for the PV
        controller, so a plugin may declare ``pre_bind_timeout`` (seconds). A
        budget set for the plugin itself in the config wins over both.
        """
        if hook == "queue_sort_key":
            return math.inf
        budget = self.timeouts.budget(field_name, plugin)
        own = self.timeouts.plugins.get(plugin)
        if hook == "pre_bind" and (own is None or own.pre_bind is None):
            declared = getattr(self.plugins.get(plugin), "pre_bind_timeout", None)  # API 1.2
            if isinstance(declared, (int, float)) and declared > budget:
                return float(declared)
        return budget

    def stuck_calls(self) -> list[tuple[str, str]]:
        """(point, plugin) of this profile's calls running past their budget right now.

        Read when metrics are scraped, from whatever thread serves them: a
        call that never returns is visible without waiting for it.
        """
        return [
            (call.point, call.plugin)
            for call, _, _ in WATCHDOG.over_budget()
            if call.profile == self.profile_name
        ]

    def permit_max_wait(self, plugin: str) -> float:
        """Longest wait ``plugin``'s Permit may ask for."""
        return self.timeouts.budget("permit_max_wait", plugin)

    def new_cycle_state(self) -> CycleState:
        """A CycleState for one attempt, deciding whether its plugin calls are timed."""
        state = CycleState()
        self._cycles += 1
        state.record_plugin_metrics = self._cycles % PLUGIN_METRICS_SAMPLE_EVERY == 0
        self._cycle_mark = self.call_seconds.copy()
        return state

    def _cycle_seconds(self) -> list[float]:
        """Seconds per call slot since :meth:`new_cycle_state`."""
        return [now - then for now, then in zip(self.call_seconds, self._cycle_mark, strict=True)]

    def cycle_plugin_seconds(self) -> dict[tuple[str, str], float]:
        """Seconds each plugin took at each point since :meth:`new_cycle_state`."""
        out: dict[tuple[str, str], float] = {}
        for label, seconds in zip(self.call_labels, self._cycle_seconds(), strict=True):
            if seconds:
                out[label] = out.get(label, 0.0) + seconds
        return out

    def end_cycle(self, pod: PodInfo, seconds: float) -> None:
        """Close a scheduling cycle of ``seconds``; now and then, name a plugin that slows them.

        Judged over a window of cycles (:data:`SLOW_WINDOW_CYCLES`), and
        rate-limited per plugin: a plugin that is slow for every pod is named
        once a minute, not once a pod.
        """
        self._window_cycles += 1
        self._window_seconds += seconds
        if self._window_cycles < SLOW_WINDOW_CYCLES and self._window_seconds < SLOW_WINDOW_SECONDS:
            return
        cycles, total = self._window_cycles, self._window_seconds
        spent = [now - then for now, then in zip(self.call_seconds, self._window_mark, strict=True)]
        self._window_mark = list(self.call_seconds)
        self._window_cycles, self._window_seconds = 0, 0.0
        average = total / cycles
        if average < SLOW_CYCLE_SECONDS:
            return
        by_plugin: dict[str, float] = {}
        for (_, plugin), seconds_spent in zip(self.call_labels, spent, strict=True):
            by_plugin[plugin] = by_plugin.get(plugin, 0.0) + seconds_spent
        plugin, worst = max(by_plugin.items(), key=lambda item: item[1], default=("", 0.0))
        if worst <= SLOW_PLUGIN_SHARE * total:
            return
        now = time.monotonic()
        if now - self._slow_warned.get(plugin, -math.inf) < SLOW_PLUGIN_WARN_EVERY:
            return
        self._slow_warned[plugin] = now
        labels = zip(self.call_labels, spent, strict=True)
        points = sorted({point for (point, name), t in labels if name == plugin and t})
        log.warning(
            f"plugin {plugin} took {worst / total:.0%} of the last {cycles} scheduling cycles "
            f"({worst / cycles * 1000:.1f} ms of {average * 1000:.1f} ms per cycle, at "
            f"{', '.join(points)}); at this pace the profile schedules at most "
            f"{1 / average:.0f} pods/s",
            plugin=plugin,
            profile=self.profile_name,
            last_pod=pod.key,
        )

    # -- guarded invocation -----------------------------------------------------

    def _invoke(
        self,
        call: PluginCall,
        args: tuple[Any, ...],
        pod: PodInfo,
        sampled: bool = True,
        always: bool = False,
    ) -> Any:
        """Call a synchronous hook under its budget, breaker and the watchdog's eye.

        A call cannot be interrupted on its own thread: it is timed, and one
        that returns past its budget is a failure (after the fact). Every call
        adds to the per-plugin time totals; ``sampled`` calls also go to the
        duration histogram (kube-scheduler's 10 % sample). ``always``: make
        the call even when the plugin's breaker is open, as a rollback is
        owed; its success then says nothing about the plugin's health.
        """
        troubled = self._troubled
        if troubled and call.plugin in troubled and not always and call.breaker.refuses():
            raise self._refused(call)
        watchdog = WATCHDOG
        outer = watchdog.current
        start = _now()
        watchdog.current = (call, pod, start)
        try:
            result = call.fn(*args) if call.indices is None else call(args)
        except Exception as err:
            self._timed(call, _now() - start, Code.ERROR if sampled else None)
            raise self._raised(call, pod, err) from err
        finally:
            watchdog.current = outer
        elapsed = _now() - start
        self.call_seconds[call.slot] += elapsed
        if sampled:
            self.recorder.plugin_duration(call.point, call.plugin, _result_code(result), elapsed)
        if elapsed > call.budget:
            raise self._overrun(call, pod, elapsed)
        if troubled and call.plugin in troubled and not always:
            self._succeeded(call)
        return result

    def _timed(self, call: PluginCall, elapsed: float, code: Code | None) -> None:
        """Add one call to the totals; ``code`` (unless None) also to the histogram."""
        self.call_seconds[call.slot] += elapsed
        if code is not None:
            self.recorder.plugin_duration(call.point, call.plugin, code, elapsed)

    def _succeeded(self, call: PluginCall) -> None:
        self._troubled.discard(call.plugin)
        if call.breaker.succeeded():
            self.recorder.circuit_open(call.plugin, False)
            log.warning(
                f"plugin {call.plugin} is back in profile {self.profile_name}: "
                "its circuit breaker closed after a successful call",
                plugin=call.plugin,
                profile=self.profile_name,
            )

    def _failed(
        self, call: PluginCall, pod: PodInfo, status: Status, reason: str = "error"
    ) -> PluginFailure:
        """Count a misbehaving call for ``pod`` (metrics, breaker) and wrap its status.

        For calls that raised, returned what their hook does not allow, or
        overran. An Error *status* a plugin returns is not counted here: it
        reports the cluster (an API call that failed), not a broken plugin,
        and taking DefaultBinder out because the API server answered 500
        would only stop every binding.
        """
        self.recorder.plugin_error(call.point, call.plugin)
        breaker = call.breaker
        opened = breaker.failed(pod.key)
        if breaker.failing:
            self._troubled.add(call.plugin)
        if opened:
            self.recorder.circuit_open(call.plugin, True)
            message = (
                f"plugin {call.plugin} is out of profile {self.profile_name} for "
                f"{breaker.cool_down:g}s: its calls failed for {breaker.threshold} pods in a "
                f"row (last: {status.message()})"
            )
            log.warning(
                message,
                plugin=call.plugin,
                profile=self.profile_name,
                extension_point=call.point,
                pod=pod.key,
            )
            if self._notices is not None:
                self._notices("Warning", "PluginCircuitOpen", message)
        return PluginFailure(status, reason)

    def _refused(self, call: PluginCall) -> PluginFailure:
        breaker = call.breaker
        message = (
            f"{call.point} plugin {call.plugin!r} is out of profile {self.profile_name!r}: its "
            f"circuit breaker is open after failures for {breaker.threshold} pods in a row "
            f"(tried again in {breaker.retry_in():.0f}s)"
        )
        return PluginFailure(Status(Code.ERROR, (message,), call.plugin), "circuit_open")

    def _raised(self, call: PluginCall, pod: PodInfo, err: Exception) -> PluginFailure:
        message = f"running {call.point} plugin {call.plugin!r}: {type(err).__name__}: {err}"
        return self._failed(call, pod, Status(Code.ERROR, (message,), call.plugin, err))

    def _overrun(self, call: PluginCall, pod: PodInfo, elapsed: float) -> PluginFailure:
        self.recorder.plugin_overrun(call.point, call.plugin)
        message = (
            f"{call.point} plugin {call.plugin!r} on pod {pod.key} ran for {elapsed:.3g}s, "
            f"over its {call.budget:g}s budget"
        )
        return self._failed(call, pod, Status(Code.ERROR, (message,), call.plugin), "overrun")

    def _garbage(self, call: PluginCall, pod: PodInfo, got: Any, expected: str) -> PluginFailure:
        message = (
            f"{call.point} plugin {call.plugin!r} returned {_describe(got)}, expected {expected}"
        )
        return self._failed(call, pod, Status(Code.ERROR, (message,), call.plugin))

    def _status(self, call: PluginCall, pod: PodInfo, result: Any) -> Status:
        """The call's Status; an Error status is raised, as a failure of the call.

        Ignorable under ``failurePolicy: Ignore``, but not counted against the
        plugin's breaker (see :meth:`_failed`).
        """
        if result is None:
            return _SUCCESS
        if isinstance(result, Status):
            if result.code is Code.ERROR:
                raise PluginFailure(kube_wrapped(call, result))
            return result.with_plugin(call.plugin)
        raise self._garbage(call, pod, result, "Status or None")

    def _ignored(
        self, state: CycleState | None, call: PluginCall, pod: PodInfo, failure: PluginFailure
    ) -> None:
        """Record that ``call``'s failure only cost its say (``failurePolicy: Ignore``)."""
        self.recorder.plugin_ignored(call.point, call.plugin, failure.reason)
        message = failure.status.message()
        if state is not None:
            ignored: list[IgnoredFailure] | None = state.get(IGNORED_KEY)
            if ignored is None:
                ignored = []
                state.write(IGNORED_KEY, ignored)
            ignored.append(IgnoredFailure(call.point, call.plugin, failure.reason, message))
        if failure.reason == "circuit_open":
            return  # said once, when the breaker opened
        note = f"{call.point} plugin {call.plugin} left out (failurePolicy Ignore): {message}"
        log.warning(
            "plugin failure ignored",
            plugin=call.plugin,
            extension_point=call.point,
            pod=pod.key,
            profile=self.profile_name,
            reason=failure.reason,
            error=message,
        )
        if self._events is not None:
            self._events(pod, "Warning", "PluginIgnored", note, "Scheduling")

    # -- queue ------------------------------------------------------------------

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        args = (pod,)
        for call in self.pre_enqueue_calls:
            try:
                status = self._status(call, pod, self._invoke(call, args, pod))
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(None, call, pod, failure)
                    continue
                return failure.status
            if not status.is_success():
                return status
        return Status.success()

    def queue_sort_key(self, queued: QueuedPodInfo) -> Any:
        """The QueueSort plugin's key (the queue falls back to FIFO without one).

        Called by the queue for every pod it activates, from informer
        handlers: a key that raises, or that cannot be compared, must cost
        the pod its place in the order, never the handler or the heap. Such
        a pod sorts after every well-keyed one, in arrival order, and the
        failure is counted against the plugin like any hook's.
        """
        if not self.queue_sort_calls:
            return (0, queued.timestamp)
        call = self.queue_sort_calls[0]
        try:
            key = call((queued,))
            key < key  # noqa: B015 - comparable, or the heap would raise later
        except Exception as err:
            failure = self._raised(call, queued.pod, err)
            log.warning(
                "queue sort key failed; the pod is ordered last",
                plugin=call.plugin,
                pod=queued.pod.key,
                profile=self.profile_name,
                error=failure.status.message(),
            )
            return (1, queued.timestamp)
        return (0, key)

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Each enabled plugin's requeue events (plugins without the hook: all events).

        Raises :class:`RegistrationError` naming the plugin whose hook raised
        or returned something else than ``ClusterEventWithHint`` items.
        """
        out: dict[str, list[ClusterEventWithHint]] = {}
        impls = {i.plugin_name: i for i in self.manager.hook.events_to_register.get_hookimpls()}
        for name in self.plugins:
            impl = impls.get(name)
            if impl is None:
                continue
            try:
                events = list(cast("Iterable[Any] | None", impl.function()) or ())
            except Exception as err:
                raise RegistrationError(
                    name, f"events_to_register raised {type(err).__name__}: {err}"
                ) from err
            for event in events:
                if not isinstance(event, ClusterEventWithHint):
                    raise RegistrationError(
                        name,
                        f"events_to_register returned {_describe(event)} in its list, "
                        "expected ClusterEventWithHint items",
                    )
            out[name] = events
        return out

    # -- transformers (API 2.1) -----------------------------------------------------

    def _transformed(self, call: PluginCall, pod: PodInfo, got: Any, expected: str) -> Status:
        """A transformer's Status (Skip counts as success); anything else is garbage."""
        if isinstance(got, Status):
            status = self._status(call, pod, got)
            return _SUCCESS if status.is_skip() else status
        raise self._garbage(call, pod, got, expected)

    def run_before_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> tuple[PodInfo, Status]:
        """The pod this cycle's PreFilter .. Score see, and the first failure.

        Each transformer gets the pod the previous one returned. An ignored
        failure keeps the pod as it was before that plugin.
        """
        current = pod
        sampled = state.record_plugin_metrics
        for call in self.before_pre_filter_calls:
            try:
                got = self._invoke(call, (state, current, nodes), pod, sampled)
                if got is None:
                    continue
                if isinstance(got, PodInfo):
                    if got.uid != pod.uid or got.key != pod.key:
                        raise self._garbage(
                            call, pod, got, f"pod {pod.key} (same namespace, name and uid)"
                        )
                    current = got
                    continue
                status = self._transformed(call, pod, got, "a Pod, Status or None")
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    continue
                return current, failure.status
            if not status.is_success():
                return current, status
        return current, _SUCCESS

    def run_after_pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status:
        """Run the ``after_pre_filter`` transformers; the first failure stops them."""
        sampled = state.record_plugin_metrics
        for call in self.after_pre_filter_calls:
            try:
                got = self._invoke(call, (state, pod, nodes), pod, sampled)
                if got is None:
                    continue
                status = self._transformed(call, pod, got, "Status or None")
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    continue
                return failure.status
            if not status.is_success():
                return status
        return _SUCCESS

    def _adjustments(
        self, calls: list[PluginCall], state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> tuple[Overlay | None, Status]:
        """The overlay the transformers at ``calls`` ask for over ``nodes`` (None: no change)."""
        adjustments: list[NodeAdjustment] = []
        sampled = state.record_plugin_metrics
        for call in calls:
            try:
                got = self._invoke(call, (state, pod, nodes), pod, sampled)
                if got is None:
                    continue
                if isinstance(got, NodeAdjustment):
                    if got:
                        try:
                            Overlay.of(nodes, [got])
                        except ValueError as err:
                            raise self._garbage(call, pod, got, str(err)) from err
                        adjustments.append(got)
                    continue
                status = self._transformed(call, pod, got, "a NodeAdjustment, Status or None")
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    continue
                return None, failure.status
            if not status.is_success():
                return None, status
        if not adjustments:
            return None, _SUCCESS
        return Overlay.of(nodes, adjustments), _SUCCESS

    def run_before_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status:
        """Ask the ``before_filter`` transformers once; their overlay goes into ``state``.

        Every later :meth:`run_filter` of this attempt (on the live table or a
        what-if copy, e.g. preemption's) applies it.
        """
        if not self.before_filter_calls:
            return _SUCCESS
        overlay, status = self._adjustments(self.before_filter_calls, state, pod, nodes)
        if overlay is None:
            state.delete(FILTER_OVERLAY_KEY)
        else:
            state.write(FILTER_OVERLAY_KEY, overlay)
        return status

    def run_before_score(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> tuple[NodeSet, bool, Status]:
        """The feasible nodes as PreScore and Score see them, whether adjusted, and the status."""
        if not self.before_score_calls:
            return nodes, False, _SUCCESS
        overlay, status = self._adjustments(self.before_score_calls, state, pod, nodes)
        if overlay is None:
            return nodes, False, status
        return overlay.apply(nodes), True, status

    def pod_from_object(self, raw: Mapping[str, Any]) -> Pod:
        """Parse a pod object for a plugin (API 2.1; see FrameworkRunner)."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"a pod object must be a mapping, got {_describe(raw)}")
        return PodInfo.from_dict(dict(raw))

    def find_node(self, pod: Pod, nodes: Nodes) -> tuple[str | None, Status]:
        """Where ``pod``, which is not in the queue, would go (API 2.1; see FrameworkRunner)."""
        from scheduler.framework.cycle import Algorithm  # the cycle is built on this module

        info = cast(PodInfo, pod)
        if not isinstance(info, PodInfo):
            raise TypeError(f"find_node needs a pod from pod_from_object, got {_describe(pod)}")
        given: object = nodes
        if isinstance(given, NodesView):
            node_set = given.node_set
        elif isinstance(given, NodeSet):  # a 1.x plugin's, or the framework's own
            node_set = given
        else:
            raise TypeError(f"find_node needs handle.nodes(), got {_describe(nodes)}")
        result = Algorithm(self).schedule(self.new_cycle_state(), info, node_set.table)
        return result.node, result.status

    # -- scheduling cycle ---------------------------------------------------------

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> tuple[PreFilterResult, Status]:
        """Run PreFilter; returns the merged node subset and the first failure.

        A Skip status disables the same plugin's Filter for this pod; so does
        an ignored failure (its Filter would read what PreFilter did not write).
        """
        start = time.perf_counter()
        merged = PreFilterResult()
        narrowing: list[str] = []
        args = (state, pod, nodes)
        status = Status.success()
        for call in self.pre_filter_calls:
            try:
                result = self._invoke(call, args, pod, state.record_plugin_metrics)
                if isinstance(result, PreFilterResult):
                    if result.node_names is not None:
                        narrowing.append(call.plugin)
                    merged = merged.merge(result)
                    continue
                call_status = self._status(call, pod, result)
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    state.skip_filter_plugins.add(call.plugin)
                    continue
                status = failure.status
                break
            if call_status.is_skip():
                state.skip_filter_plugins.add(call.plugin)
            elif not call_status.is_success():
                status = call_status
                break
        if status.is_success() and merged.node_names is not None and not merged.node_names:
            status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{', '.join(narrowing)}] simultaneously",),
                narrowing[0] if narrowing else None,
            )
        self.recorder.point_duration("PreFilter", status.code, time.perf_counter() - start)
        if narrowing:
            state.write(PREFILTER_NARROWING_KEY, narrowing)
        return merged, status

    def run_filter(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeSet,
        diagnosis: Diagnosis | None = None,
        *,
        observe: bool = True,
    ) -> FilterOutcome:
        """Narrow ``nodes`` plugin by plugin; each node is charged to the first rejecter.

        Rejections are added to ``diagnosis`` (a new one if not given). An
        ignored failure lets every candidate through that plugin. ``observe``:
        record the Filter point's duration (False when the caller runs Filter
        over several windows of one cycle and records the cycle's total).
        """
        start = time.perf_counter()
        if diagnosis is None:
            diagnosis = Diagnosis(names=nodes.table.names, total_nodes=len(nodes.table))
        table = nodes.table
        overlay: Overlay | None = (
            state.get(FILTER_OVERLAY_KEY) if self.before_filter_calls else None
        )
        if overlay is not None:
            nodes = overlay.apply(nodes)
        candidates = nodes
        sampled = state.record_plugin_metrics
        for call in self.filter_calls:
            if not len(candidates):
                break
            if call.plugin in state.skip_filter_plugins:
                continue
            try:
                result = self._invoke(call, (state, pod, candidates), pod, sampled)
                if promises.CHECK_PROMISES and call.plugin in self._via_requested:
                    promises.check_pods_via_requested(
                        call.plugin, call, state, pod, candidates, result
                    )
                if isinstance(result, FilterResult):
                    if len(result) != len(candidates):
                        raise self._garbage(
                            call,
                            pod,
                            result,
                            f"a FilterResult of {len(candidates)} nodes (got {len(result)})",
                        )
                    feasible = result.feasible
                    if feasible.all():
                        continue
                    rejected = ~feasible
                    diagnosis.add(
                        Rejection(
                            call.plugin,
                            candidates.rows[rejected],
                            result.codes[rejected],
                            result.reason_bits[rejected],
                            list(result.reasons),
                        )
                    )
                    candidates = candidates.subset(feasible)
                else:
                    status = self._status(call, pod, result)
                    if status.is_success():
                        continue
                    if not status.is_rejected() or status.code is Code.PENDING:
                        raise self._garbage(
                            call, pod, result, "Success, Unschedulable(AndUnresolvable)"
                        )
                    n = len(candidates)
                    code = (
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                        else Code.UNSCHEDULABLE
                    )
                    reasons = list(status.reasons) or [f"node(s) rejected by {call.plugin}"]
                    diagnosis.add(
                        Rejection(
                            call.plugin,
                            candidates.rows,
                            np.full(n, code, dtype=np.int8),
                            np.full(n, (1 << len(reasons)) - 1, dtype=np.uint64),
                            reasons,
                        )
                    )
                    candidates = candidates.subset(np.zeros(n, dtype=np.bool_))
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    continue
                if observe:
                    self.recorder.point_duration("Filter", Code.ERROR, time.perf_counter() - start)
                if overlay is not None:
                    candidates = NodeSet(table, candidates.rows)
                return FilterOutcome(candidates, diagnosis, failure.status)
        diagnosis.unschedulable_plugins = {r.plugin for r in diagnosis.rejections}
        if observe:
            self.recorder.point_duration("Filter", Code.SUCCESS, time.perf_counter() - start)
        if overlay is not None:  # the caller's nodes, not the what-if copy's
            candidates = NodeSet(table, candidates.rows)
        return FilterOutcome(candidates, diagnosis, Status.success())

    def filters_read_requested_only(self, state: CycleState) -> bool:
        """Whether a what-if may add or remove pods by editing ``requested`` rows alone.

        True when no PreFilter AddPod/RemovePod extension runs for the pod and
        every Filter plugin that runs declares ``pods_via_requested``. As a
        Filter verdict for a node depends on that node alone, one Filter run
        then judges many nodes, each in its own what-if state.
        """
        skip = state.skip_filter_plugins
        for call in (*self.add_pod_calls, *self.remove_pod_calls):
            if call.plugin not in skip:
                return False
        plugins = self.plugins
        return all(
            getattr(plugins.get(c.plugin), "pods_via_requested", False)
            for c in self.filter_calls
            if c.plugin not in skip
        )

    def run_filter_with_nominated(self, state: CycleState, pod: Pod, node: Node) -> Status:
        """Filter one node (preemption's what-if check); the first rejection wins."""
        info = node_info_of(node)
        pod = cast(PodInfo, pod)
        nodes = NodeSet(info.table, np.asarray([info.row], dtype=np.int64))
        outcome = self.run_filter(state, pod, nodes)
        if not outcome.status.is_success():
            return outcome.status
        if len(outcome.feasible):
            return Status.success()
        verdict = outcome.diagnosis.node_verdicts.get(info.name)
        if verdict is None:
            return Status.unschedulable()
        return Status(verdict.code, tuple(verdict.reasons), verdict.plugin)

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node: Node
    ) -> Status:
        return self._run_extension(
            self.add_pod_calls, state, cast(PodInfo, pod), pod_to_add, node_info_of(node)
        )

    def run_pre_filter_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node: Node
    ) -> Status:
        return self._run_extension(
            self.remove_pod_calls, state, cast(PodInfo, pod), pod_to_remove, node_info_of(node)
        )

    def _run_extension(
        self,
        calls: Iterable[PluginCall],
        state: CycleState,
        pod: PodInfo,
        other: Pod,
        node: NodeInfo,
    ) -> Status:
        args = (state, pod, other, node)
        for call in calls:
            if call.plugin in state.skip_filter_plugins:
                continue
            try:
                status = self._status(call, pod, self._invoke(call, args, pod))
            except PluginFailure as failure:
                if call.ignore:
                    # Its state for this what-if is now unknown: its Filter sits it out.
                    self._ignored(state, call, pod, failure)
                    state.skip_filter_plugins.add(call.plugin)
                    continue
                return failure.status
            if not status.is_success():
                return status
        return Status.success()

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> PostFilterResult:
        """Run PostFilter plugins until one succeeds (or one errors).

        A plugin that answers with an awaitable (preemption an HTTP extender
        takes part in) needs :meth:`run_post_filter_async`: here that is its error.
        """
        start = time.perf_counter()
        args = (state, pod, diagnosis)
        run = _PostFilterRun()
        for call in self.post_filter_calls:
            try:
                got = self._invoke(call, args, pod)
                if inspect.isawaitable(got):
                    _discard(got)
                    raise PluginFailure(
                        Status(
                            Code.ERROR,
                            (
                                f"PostFilter plugin {call.plugin!r} on pod {pod.key} must be "
                                "awaited (an HTTP extender's preemptVerb takes part) and this "
                                "cycle does not await",
                            ),
                            call.plugin,
                        )
                    )
                candidate = self._post_filter_answer(call, pod, got)
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    continue  # as no opinion
                run.result = PostFilterResult(failure.status)
                break
            if run.take(candidate):
                break
        return self._post_filter_end(run, diagnosis, start)

    async def run_post_filter_async(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> PostFilterResult:
        """:meth:`run_post_filter` awaiting a plugin's awaitable answer under its budget."""
        start = time.perf_counter()
        args = (state, pod, diagnosis)
        run = _PostFilterRun()
        for call in self.post_filter_calls:
            try:
                got = await self._invoke_async(call, args, pod)
                candidate = self._post_filter_answer(call, pod, got)
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    continue  # as no opinion
                run.result = PostFilterResult(failure.status)
                break
            if run.take(candidate):
                break
        return self._post_filter_end(run, diagnosis, start)

    def _post_filter_answer(
        self, call: PluginCall, pod: PodInfo, got: Any
    ) -> PostFilterResult | None:
        """A PostFilter plugin's answer as a result (None: no opinion); Error raises."""
        if got is None:
            return None  # no opinion: let the next PostFilter plugin try
        if isinstance(got, PostFilterResult):
            if got.status.code is Code.ERROR:
                raise PluginFailure(got.status.with_plugin(call.plugin))
            return PostFilterResult(got.status.with_plugin(call.plugin), got.nominated_node_name)
        return PostFilterResult(self._status(call, pod, got))

    def _post_filter_end(
        self, run: _PostFilterRun, diagnosis: Diagnosis, start: float
    ) -> PostFilterResult:
        result = run.result
        if not result.status.is_success():
            if result.status.code is Code.ERROR:
                # kube's FitError carries the error's message as PostFilterMsg too.
                diagnosis.post_filter_message = result.status.message()
            elif run.messages:
                diagnosis.post_filter_message = ", ".join(run.messages)  # kube: Status.Message()
        self.recorder.point_duration("PostFilter", result.status.code, time.perf_counter() - start)
        return result

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status:
        """Run PreScore; a Skip (or an ignored failure) leaves the plugin's Score out."""
        start = time.perf_counter()
        args = (state, pod, nodes)
        sampled = state.record_plugin_metrics
        status = Status.success()
        for call in self.pre_score_calls:
            try:
                call_status = self._status(call, pod, self._invoke(call, args, pod, sampled))
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    state.skip_score_plugins.add(call.plugin)
                    continue
                status = failure.status
                break
            if call_status.is_skip():
                state.skip_score_plugins.add(call.plugin)
            elif not call_status.is_success():
                status = call_status
                break
        self.recorder.point_duration("PreScore", status.code, time.perf_counter() - start)
        return status

    def active_score_plugins(self, state: CycleState) -> list[str]:
        """Score plugins that run for this pod (PreScore did not skip them), in order."""
        return [c.plugin for c in self.score_calls if c.plugin not in state.skip_score_plugins]

    def run_raw_scores(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> tuple[dict[str, ScoreArray], Status]:
        """Only the Score hooks (no normalizing): raw scores per active plugin, and the status.

        A plugin whose failure is ignored is left out and added to the pod's
        skipped Score plugins.
        """
        n = len(nodes)
        args = (state, pod, nodes)
        sampled = state.record_plugin_metrics
        raw: dict[str, ScoreArray] = {}
        for call in self.score_calls:
            if call.plugin in state.skip_score_plugins:
                continue
            try:
                got = self._invoke(call, args, pod, sampled)
                raw[call.plugin] = self._scores(call, pod, got, n)
            except PluginFailure as failure:
                if call.ignore:
                    self._ignored(state, call, pod, failure)
                    state.skip_score_plugins.add(call.plugin)
                    continue
                return raw, failure.status
        return raw, Status.success()

    def run_score(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeSet,
        raw_scores: Mapping[str, ScoreArray] | None = None,
    ) -> ScoreOutcome:
        """Score, normalize to [0, 100], weight and sum per node.

        ``raw_scores`` (every active plugin's raw scores aligned with
        ``nodes``, see :meth:`run_raw_scores`) replaces the Score calls: the
        batching cache supplies them for identical pods. A plugin whose Score
        or NormalizeScore failure is ignored adds nothing to any node.
        """
        start = time.perf_counter()
        n = len(nodes)
        total = np.zeros(n, dtype=np.int64)
        outcome = ScoreOutcome(nodes, total)
        args = (state, pod, nodes)
        sampled = state.record_plugin_metrics
        for call in self.score_calls:
            if call.plugin in state.skip_score_plugins:
                continue
            current = call
            try:
                if raw_scores is None:
                    got = self._invoke(call, args, pod, sampled)
                    raw = self._scores(call, pod, got, n)
                else:
                    raw = raw_scores[call.plugin]
                normalized = raw
                normalize = self.normalize_calls.get(call.plugin)
                if normalize is not None:
                    current = normalize
                    normalized = raw.copy()  # keep the raw scores for `explain`
                    got = self._invoke(normalize, (state, pod, nodes, normalized), pod, sampled)
                    if got is not None:
                        normalized = self._scores(normalize, pod, got, n)
                # One reduction checks both bounds: negatives wrap to huge unsigned values.
                if n and normalized.view(np.uint64).max() > MAX_NODE_SCORE:
                    raise self._garbage(
                        current,
                        pod,
                        normalized,
                        f"scores in [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                        f"(got {int(normalized.min())}..{int(normalized.max())})",
                    )
            except PluginFailure as failure:
                if current.ignore:
                    self._ignored(state, current, pod, failure)
                    state.skip_score_plugins.add(call.plugin)
                    continue
                outcome.status = failure.status
                break
            weighted = normalized * call.weight if call.weight != 1 else normalized
            total += weighted
            outcome.by_plugin[call.plugin] = PluginScores(raw, normalized, weighted)
        self.recorder.point_duration("Score", outcome.status.code, time.perf_counter() - start)
        return outcome

    def _scores(self, call: PluginCall, pod: PodInfo, got: Any, n: int) -> ScoreArray:
        if isinstance(got, Status):
            status = got.with_plugin(call.plugin)
            if status.is_success():
                raise self._garbage(call, pod, got, "an array of scores")
            raise PluginFailure(
                kube_wrapped(
                    call,
                    status
                    if status.code is Code.ERROR
                    else Status(Code.ERROR, status.reasons, call.plugin),
                )
            )
        if type(got) is np.ndarray and got.dtype is _INT64 and got.shape == (n,):
            return got
        if isinstance(got, np.ndarray) and got.shape == (n,) and got.dtype.kind in "iu":
            return got.astype(np.int64, copy=False)
        if (
            isinstance(got, (list, tuple))
            and len(got) == n
            and all(isinstance(v, int) for v in got)
        ):
            return np.asarray(got, dtype=np.int64)
        raise self._garbage(call, pod, got, f"an integer array of {n} scores")

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Reserve in order; on failure, Unreserve every Reserve plugin in reverse."""
        start = time.perf_counter()
        args = (state, pod, node_name)
        status = Status.success()
        for call in self.reserve_calls:
            try:
                got = self._invoke(call, args, pod, state.record_plugin_metrics)
                status = self._status(call, pod, got)
            except PluginFailure as failure:
                status = failure.status
            if not status.is_success():
                break
        self.recorder.point_duration("Reserve", status.code, time.perf_counter() - start)
        if not status.is_success():
            self.run_unreserve(state, pod, node_name)
        return status

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> list[Status]:
        """Unreserve in reverse order; errors are collected, never stop the rollback.

        An open breaker does not skip Unreserve: a rollback is owed to every
        plugin whose Reserve may have run.
        """
        args = (state, pod, node_name)
        errors = []
        for call in reversed(self.unreserve_calls):
            try:
                self._invoke(call, args, pod, always=True)
            except PluginFailure as failure:
                errors.append(failure.status)
        return errors

    def run_permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status, dict[str, float]]:
        """Permit: returns the overall status and, for Wait, each waiting plugin's timeout."""
        start = time.perf_counter()
        args = (state, pod, node_name)
        waits: dict[str, float] = {}
        status = Status.success()
        for call in self.permit_calls:
            try:
                call_status = self._status(
                    call, pod, self._invoke(call, args, pod, state.record_plugin_metrics)
                )
            except PluginFailure as failure:
                status = failure.status
                break
            if call_status.is_wait():
                timeout = call_status.timeout if call_status.timeout is not None else 0.0
                waits[call.plugin] = min(max(timeout, 0.0), self.permit_max_wait(call.plugin))
            elif not call_status.is_success():
                status = call_status
                if call_status.is_rejected():
                    status = Status(Code.UNSCHEDULABLE, call_status.reasons, call.plugin)
                break
        if status.is_success() and waits:
            status = Status(Code.WAIT, (), next(iter(waits)))
        self.recorder.point_duration("Permit", status.code, time.perf_counter() - start)
        return status, waits

    # -- binding cycle -----------------------------------------------------------

    async def _invoke_async(self, call: PluginCall, args: tuple[Any, ...], pod: PodInfo) -> Any:
        """Call a binding-cycle hook; abandon it, without waiting, past its budget.

        ``asyncio.wait_for`` would wait for the cancelled hook to finish, and a
        hook that swallows ``CancelledError`` never does: it would hold the
        pod's binding slot forever. Here the hook runs as its own task; at the
        budget it is cancelled and left behind (:func:`guard.abandon`), counted
        until it ends. The same happens when the binding cycle itself is
        cancelled (shutdown, lost lease).
        """
        if call.plugin in self._troubled and call.breaker.refuses():
            raise self._refused(call)
        start = time.perf_counter()
        running: Running = (call, pod, start)
        WATCHDOG.watch(running)
        task: asyncio.Future[Any] | None = None
        abandoned = False
        try:
            result = call(args)
            if inspect.isawaitable(result):
                # A hook with nothing to do returns in its first step: no task
                # hand-off, no loop iteration (see scheduler.eager).
                task = (
                    start_eagerly(result)
                    if inspect.iscoroutine(result)
                    else asyncio.ensure_future(result)
                )
                if not await _done_within(task, call.budget):
                    abandoned = True
                    self._abandon(call, task, running)
                    raise self._async_overrun(call, pod, time.perf_counter() - start)
                result = task.result()
        except asyncio.CancelledError:
            if task is not None and not task.done():
                # Our binding cycle was cancelled, not the hook: leave it behind.
                abandoned = True
                self._abandon(call, task, running)
            raise
        except PluginFailure:
            raise
        except Exception as err:
            self._timed(call, time.perf_counter() - start, Code.ERROR)
            raise self._raised(call, pod, err) from err
        finally:
            if not abandoned:
                WATCHDOG.unwatch(running)
        elapsed = time.perf_counter() - start
        self._timed(call, elapsed, _result_code(result))
        if elapsed > call.budget:  # a synchronous implementation blocked the loop
            raise self._overrun(call, pod, elapsed)
        if call.plugin in self._troubled:
            self._succeeded(call)
        return result

    def _async_overrun(self, call: PluginCall, pod: PodInfo, elapsed: float) -> PluginFailure:
        self._timed(call, elapsed, Code.ERROR)
        self.recorder.plugin_overrun(call.point, call.plugin)
        message = (
            f"{call.point} plugin {call.plugin!r} on pod {pod.key} timed out after "
            f"{call.budget:g}s (its budget); the call was abandoned"
        )
        return self._failed(call, pod, Status(Code.ERROR, (message,), call.plugin), "overrun")

    def _abandon(self, call: PluginCall, task: asyncio.Future[Any], running: Running) -> None:
        """Cancel ``task`` and leave it; count it while it keeps running."""
        self._abandoned[call.slot] += 1
        self.recorder.abandoned_call(call.point, call.plugin, 1)
        log.warning(
            f"abandoned {call.point} plugin {call.plugin} on pod {running[1].key}: "
            f"cancelled at its {call.budget:g}s budget, not waited for",
            plugin=call.plugin,
            extension_point=call.point,
            pod=running[1].key,
            profile=self.profile_name,
        )

        def ended() -> None:
            WATCHDOG.unwatch(running)
            self._abandoned[call.slot] -= 1
            self.recorder.abandoned_call(call.point, call.plugin, -1)

        abandon(task, ended)

    def abandoned_calls(self) -> int:
        """Abandoned hook calls of this profile still running."""
        return sum(self._abandoned)

    async def _run_binding_point(
        self, point: str, calls: list[PluginCall], args: tuple[Any, ...]
    ) -> Status | None:
        """Run plugins until one neither succeeds nor skips; return its status.

        Rejections pass through unchanged (the pod goes back as unschedulable),
        anything else is an error, as in kube-scheduler.
        """
        pod: PodInfo = args[1]
        for call in calls:
            try:
                got = await self._invoke_async(call, args, pod)
                status = self._status(call, pod, got)
            except PluginFailure as failure:
                return failure.status
            if status.is_skip():
                continue
            if point == "Bind" or not status.is_success():
                if status.is_success() or status.is_rejected():
                    return status
                return Status(Code.ERROR, status.reasons, call.plugin)
        return None

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        args = (state, pod, node_name)
        failed = await self._run_binding_point("PreBind", self.pre_bind_calls, args)
        return failed or Status.success()

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """The first Bind plugin that does not Skip binds the pod."""
        args = (state, pod, node_name)
        result = await self._run_binding_point("Bind", self.bind_calls, args)
        if result is None:
            return Status(Code.ERROR, ("no Bind plugin bound the pod (all returned Skip)",))
        return result

    async def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> list[Status]:
        """PostBind is informational: failures are returned for logging, nothing else."""
        args = (state, pod, node_name)
        errors = []
        for call in self.post_bind_calls:
            try:
                await self._invoke_async(call, args, pod)
            except PluginFailure as failure:
                errors.append(failure.status)
        return errors
