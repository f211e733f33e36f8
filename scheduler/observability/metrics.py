"""Prometheus metrics with kube-scheduler's names, labels and bucket boundaries.

Operators already have dashboards and alerts written against kube-scheduler's
``scheduler_*`` series; keeping the names, label names, label values and
histogram buckets identical lets those work unchanged against this daemon.
The few series kube-scheduler has no equivalent for (plugin errors, binding
errors, leadership) are ours and say so in their help text.

Every :class:`SchedulerMetrics` owns a private ``CollectorRegistry``: the
global registry would make two schedulers in one process (the simulator runs
the daemon next to tests) collide on registration, and would leak counts
between tests.

The hot paths (one call per plugin per pod) go through :class:`ProfileRecorder`
and the small caches in :class:`SchedulerMetrics`, which resolve a labelled
child once and reuse it: ``.labels()`` validates and hashes its arguments
under a lock on every call, which is several times the cost of the
observation itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final, Literal, get_args

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector

from scheduler.api.status import Code

__all__ = [
    "EXTENSION_POINT_BUCKETS",
    "PLUGIN_EXECUTION_BUCKETS",
    "POD_SCHEDULING_ATTEMPTS_BUCKETS",
    "POD_SCHEDULING_SLI_BUCKETS",
    "PREEMPTION_VICTIMS_BUCKETS",
    "SCHEDULING_ATTEMPT_BUCKETS",
    "PendingQueue",
    "ProfileRecorder",
    "ScheduleResult",
    "SchedulerMetrics",
    "attempts_label",
    "exponential_buckets",
]

ScheduleResult = Literal["scheduled", "unschedulable", "error"]
"""Values of the ``result`` label, as kube-scheduler spells them."""

PendingQueue = Literal["active", "backoff", "unschedulable", "gated"]
"""Values of ``scheduler_pending_pods``'s ``queue`` label."""

SCHEDULE_RESULTS: Final[tuple[str, ...]] = get_args(ScheduleResult)
PENDING_QUEUES: Final[tuple[str, ...]] = get_args(PendingQueue)

MAX_ATTEMPTS_LABEL: Final = 15
"""Attempt counts at or above this share one ``attempts`` label value ("15+"),
as in kube-scheduler, so the SLI histogram's cardinality stays bounded."""


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """``count`` bucket upper bounds, ``start`` then each ``factor`` times the last.

    Computed by repeated multiplication, as Go's ``prometheus.ExponentialBuckets``
    does, so every ``le`` label is the same float (and so the same text) as
    kube-scheduler exposes: ``start * factor**i`` rounds differently for some
    ``i`` and would split a dashboard's series.
    """
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError(f"invalid exponential buckets ({start}, {factor}, {count})")
    out: list[float] = []
    bound = float(start)
    for _ in range(count):
        out.append(bound)
        bound *= factor
    return tuple(out)


SCHEDULING_ATTEMPT_BUCKETS: Final = exponential_buckets(0.001, 2, 15)
"""1 ms up to ~16 s: one attempt, algorithm plus binding."""

EXTENSION_POINT_BUCKETS: Final = exponential_buckets(0.0001, 2, 12)
"""0.1 ms up to ~200 ms: all plugins of one extension point."""

PLUGIN_EXECUTION_BUCKETS: Final = exponential_buckets(0.00001, 1.5, 20)
"""10 µs up to ~22 ms with a small factor: single plugin calls are short and
their differences are what an operator looks for."""

POD_SCHEDULING_SLI_BUCKETS: Final = exponential_buckets(0.01, 2, 20)
"""10 ms up to ~88 min: from first entering the queue to scheduled."""

POD_SCHEDULING_ATTEMPTS_BUCKETS: Final = exponential_buckets(1, 2, 5)
"""1 to 16 attempts before a pod was scheduled."""

PREEMPTION_VICTIMS_BUCKETS: Final = exponential_buckets(1, 2, 7)
"""1 to 64 victims; more than 64 is rare enough to share the +Inf bucket."""


def attempts_label(attempts: int) -> str:
    """The ``attempts`` label value: the count, capped at "15+" (kube-scheduler's cap)."""
    if attempts >= MAX_ATTEMPTS_LABEL:
        return f"{MAX_ATTEMPTS_LABEL}+"
    return str(attempts)


class _WithoutCreated:
    """A view of a registry without prometheus-client's ``*_created`` samples.

    Those samples are an OpenMetrics notion kube-scheduler does not expose; in
    the text format they would appear as extra gauge families that no
    kube-scheduler dashboard expects. Filtering at render time avoids
    ``prometheus_client.disable_created_metrics()``, which flips a
    process-wide switch under every other registry in the process.
    """

    __slots__ = ("_registry",)

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        for metric in self._registry.collect():
            created = metric.name + "_created"
            if any(s.name == created for s in metric.samples):
                copy = Metric(metric.name, metric.documentation, metric.type, metric.unit)
                copy.samples = [s for s in metric.samples if s.name != created]
                yield copy
            else:
                yield metric


class SchedulerMetrics:
    """The scheduler's metrics, in a registry of their own.

    The metric objects are public attributes (named after kube-scheduler's
    variables) for callers that need the full prometheus-client API; the
    methods cover the daemon's usual updates and cache labelled children so
    that repeated updates of the same series do not pay for ``.labels()``.
    """

    CONTENT_TYPE: Final = CONTENT_TYPE_PLAIN_0_0_4
    """What :meth:`render` produces: the Prometheus text format kube-scheduler serves."""

    def __init__(self, *, process_metrics: bool = True) -> None:
        """Create every series; ``process_metrics`` adds ``process_*`` (CPU, memory, fds).

        The process collector is optional because several schedulers in one
        process (simulations, tests) would all report the same process.
        """
        self.registry = CollectorRegistry()
        reg = self.registry

        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Scheduling attempts by result: 'unschedulable' means the pod fits no node "
            "(now), 'error' means the scheduler failed internally.",
            ["result", "profile"],
            registry=reg,
        )
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Duration of one scheduling attempt, in seconds: the scheduling algorithm "
            "plus binding.",
            ["result", "profile"],
            buckets=SCHEDULING_ATTEMPT_BUCKETS,
            registry=reg,
        )
        self.scheduling_algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Duration of the scheduling algorithm alone (filter, score, select), in seconds.",
            buckets=SCHEDULING_ATTEMPT_BUCKETS,
            registry=reg,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Pods waiting to be scheduled, by queue: 'active' are ready to be tried, "
            "'backoff' wait out their backoff, 'unschedulable' were tried and wait for a "
            "cluster change, 'gated' were never tried because a PreEnqueue plugin holds them.",
            ["queue"],
            registry=reg,
        )
        self.framework_extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Duration of running every plugin at one extension point, in seconds.",
            ["extension_point", "status", "profile"],
            buckets=EXTENSION_POINT_BUCKETS,
            registry=reg,
        )
        self.plugin_execution_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration of one plugin call at one extension point, in seconds.",
            ["plugin", "extension_point", "status"],
            buckets=PLUGIN_EXECUTION_BUCKETS,
            registry=reg,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Preemption attempts since the scheduler started.",
            registry=reg,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of victims chosen by a preemption.",
            buckets=PREEMPTION_VICTIMS_BUCKETS,
            registry=reg,
        )
        self.pod_scheduling_sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "End-to-end latency of scheduling a pod, in seconds, from when it first "
            "entered the scheduling queue; may span several attempts.",
            ["attempts"],
            buckets=POD_SCHEDULING_SLI_BUCKETS,
            registry=reg,
        )
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts a pod needed before it was scheduled.",
            buckets=POD_SCHEDULING_ATTEMPTS_BUCKETS,
            registry=reg,
        )
        self.queue_incoming_pods = Counter(
            "scheduler_queue_incoming_pods",
            "Pods added to the scheduling queues, by queue and by the event that moved them.",
            ["queue", "event"],
            registry=reg,
        )
        self.permit_wait_duration = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Time pods spent waiting at Permit, in seconds, by the final status.",
            ["result"],
            buckets=SCHEDULING_ATTEMPT_BUCKETS,
            registry=reg,
        )
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "Unschedulable pods by the plugin that rejected them. A pod rejected by "
            "several plugins counts once for each, so only per-plugin values are meaningful.",
            ["plugin", "profile"],
            registry=reg,
        )
        self.plugin_errors = Counter(
            "scheduler_plugin_errors",
            "Plugin calls that raised, timed out or returned something their hook does "
            "not allow (not in kube-scheduler). Each failed only that pod's attempt.",
            ["plugin", "extension_point", "profile"],
            registry=reg,
        )
        self.binding_errors = Counter(
            "scheduler_binding_errors",
            "Binding cycles that failed, by reason (not in kube-scheduler).",
            ["reason"],
            registry=reg,
        )
        self.shadow_divergences = Counter(
            "scheduler_shadow_divergence",
            "Decisions a shadow profile made differently from its primary, by shadow profile "
            "and the plugin that explains the difference (not in kube-scheduler).",
            ["profile", "plugin"],
            registry=reg,
        )
        self.shadow_decisions = Counter(
            "scheduler_shadow_decisions",
            "Decisions a shadow profile re-made after its primary, by shadow profile "
            "(not in kube-scheduler).",
            ["profile"],
            registry=reg,
        )
        self.shadow_skipped = Counter(
            "scheduler_shadow_skipped",
            "Decisions a shadow profile did not re-make because it was over its "
            "pluggableScheduler.shadowBudget, by shadow profile (not in kube-scheduler).",
            ["profile"],
            registry=reg,
        )
        self.plugin_overruns = Counter(
            "scheduler_plugin_overruns",
            "Plugin calls that ran past their budget (pluggableScheduler.timeouts); each is "
            "also a plugin error (not in kube-scheduler).",
            ["plugin", "extension_point", "profile"],
            registry=reg,
        )
        self.plugin_ignored_failures = Counter(
            "scheduler_plugin_ignored_failures",
            "Plugin calls whose failure only left that plugin out of the pod's decision "
            "(failurePolicy Ignore), by reason: error, overrun or circuit_open "
            "(not in kube-scheduler).",
            ["plugin", "extension_point", "profile", "reason"],
            registry=reg,
        )
        self.plugin_circuit_open = Gauge(
            "scheduler_plugin_circuit_open",
            "1 while the plugin's circuit breaker keeps it out of the profile, else 0 "
            "(not in kube-scheduler).",
            ["plugin", "profile"],
            registry=reg,
        )
        self.plugin_abandoned_calls = Counter(
            "scheduler_plugin_abandoned_calls",
            "Async plugin calls cancelled at their budget (or at shutdown) and not waited "
            "for (not in kube-scheduler).",
            ["plugin", "extension_point", "profile"],
            registry=reg,
        )
        self.plugin_abandoned_calls_running = Gauge(
            "scheduler_plugin_abandoned_calls_running",
            "Abandoned async plugin calls still running: calls that ignored their "
            "cancellation (not in kube-scheduler).",
            ["plugin", "extension_point", "profile"],
            registry=reg,
        )
        self.plugin_times = _PluginTimes()
        reg.register(self.plugin_times)
        self.stuck_calls = _StuckCalls()
        reg.register(self.stuck_calls)
        self.leader = Gauge(
            "scheduler_leader",
            "1 while this instance holds the leader lease (or runs without leader "
            "election), 0 while it stands by (not in kube-scheduler).",
            registry=reg,
        )
        self.config_last_reload_successful = Gauge(
            "scheduler_config_last_reload_successful",
            "1 when the config file's last version was applied (or none was tried since "
            "start-up), 0 while the running configuration differs from the file because "
            "its last version was refused (not in kube-scheduler).",
            registry=reg,
        )
        self.config_last_reload_success_time = Gauge(
            "scheduler_config_last_reload_success_timestamp_seconds",
            "When the running configuration was loaded, at start-up or by a reload "
            "(not in kube-scheduler).",
            registry=reg,
        )
        self.config_reloads = Counter(
            "scheduler_config_reloads",
            "Config file changes tried, by result (success, failure) (not in kube-scheduler).",
            ["result"],
            registry=reg,
        )
        if process_metrics:
            ProcessCollector(registry=reg)

        # Queue gauges are set on every queue change; resolve them once, and
        # expose all four at 0 from the start so a dashboard sees the series.
        self._pending: dict[str, Gauge] = {q: self.pending_pods.labels(q) for q in PENDING_QUEUES}
        for gauge in self._pending.values():
            gauge.set(0)
        self._attempts: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        self._incoming: dict[tuple[str, str], Counter] = {}
        self._sli: dict[str, Histogram] = {}
        self._unschedulable: dict[tuple[str, str], Gauge] = {}
        self._binding_errors: dict[str, Counter] = {}

    # -- scheduling attempts ------------------------------------------------------

    def observe_attempt(self, result: ScheduleResult, profile: str, seconds: float) -> None:
        """Count one attempt and record its duration, as kube-scheduler does in one step."""
        key = (result, profile)
        children = self._attempts.get(key)
        if children is None:
            if result not in SCHEDULE_RESULTS:
                raise ValueError(f"unknown schedule result {result!r}; want {SCHEDULE_RESULTS}")
            children = (
                self.schedule_attempts.labels(result, profile),
                self.scheduling_attempt_duration.labels(result, profile),
            )
            self._attempts[key] = children
        counter, histogram = children
        counter.inc()
        histogram.observe(seconds)

    def observe_algorithm(self, seconds: float) -> None:
        """Record how long the scheduling algorithm took for one pod."""
        self.scheduling_algorithm_duration.observe(seconds)

    def pod_scheduled(self, attempts: int, seconds_since_queued: float) -> None:
        """Record a pod's successful scheduling: its attempts and its end-to-end latency.

        ``seconds_since_queued`` is measured from the pod's *first* entry into
        the queue, not from this attempt, which is what makes it an SLI.
        """
        self.pod_scheduling_attempts.observe(attempts)
        label = attempts_label(attempts)
        child = self._sli.get(label)
        if child is None:
            child = self._sli[label] = self.pod_scheduling_sli_duration.labels(label)
        child.observe(seconds_since_queued)

    def observe_permit_wait(self, code: Code, seconds: float) -> None:
        """Record how long a pod waited at Permit, under the final status (``code.title``)."""
        self.permit_wait_duration.labels(code.title).observe(seconds)

    # -- queue ------------------------------------------------------------------

    def pending(self, queue: PendingQueue) -> Gauge:
        """The gauge of one queue, for a queue that prefers ``inc()``/``dec()``."""
        try:
            return self._pending[queue]
        except KeyError:
            raise ValueError(f"unknown queue {queue!r}; want one of {PENDING_QUEUES}") from None

    def set_pending(self, queue: PendingQueue, count: int) -> None:
        """Set the number of pods in one queue."""
        self.pending(queue).set(count)

    def queue_incoming(self, queue: PendingQueue, event: str, count: int = 1) -> None:
        """Count pods moved into ``queue`` by ``event`` (e.g. "PodAdd", "NodeAdd")."""
        key = (queue, event)
        child = self._incoming.get(key)
        if child is None:
            if queue not in PENDING_QUEUES:
                raise ValueError(f"unknown queue {queue!r}; want one of {PENDING_QUEUES}")
            child = self._incoming[key] = self.queue_incoming_pods.labels(queue, event)
        child.inc(count)

    def unschedulable(self, plugin: str, profile: str) -> Gauge:
        """The unschedulable-pods gauge of one plugin; the queue incs and decs it."""
        key = (plugin, profile)
        child = self._unschedulable.get(key)
        if child is None:
            child = self._unschedulable[key] = self.unschedulable_pods.labels(plugin, profile)
        return child

    # -- preemption, binding, leadership ------------------------------------------

    def preemption_attempt(self, victims: int | None = None) -> None:
        """Count a preemption attempt and, when it chose victims, how many."""
        self.preemption_attempts.inc()
        if victims is not None:
            self.preemption_victims.observe(victims)

    def observe_preemption_victims(self, victims: int) -> None:
        """Record the victims of a chosen preemption candidate (kube's prepareCandidate)."""
        self.preemption_victims.observe(victims)

    def shadow_decision(self, profile: str, diverged: str | None) -> None:
        """Count a shadow decision; ``diverged``: the plugin that explains a difference."""
        self.shadow_decisions.labels(profile).inc()
        if diverged is not None:
            self.shadow_divergences.labels(profile, diverged).inc()

    def shadow_skip(self, profile: str) -> None:
        """Count a decision a shadow left out to stay within its budget."""
        self.shadow_skipped.labels(profile).inc()

    def binding_error(self, reason: str) -> None:
        """Count a failed binding cycle; ``reason`` should be a small fixed vocabulary."""
        child = self._binding_errors.get(reason)
        if child is None:
            child = self._binding_errors[reason] = self.binding_errors.labels(reason)
        child.inc()

    def config_loaded(self) -> None:
        """The configuration in force was loaded (at start-up): reloads start from here."""
        self.config_last_reload_successful.set(1)
        self.config_last_reload_success_time.set_to_current_time()

    def config_reload(self, *, success: bool) -> None:
        """Count one reload of a changed config file and whether it was applied."""
        self.config_reloads.labels("success" if success else "failure").inc()
        self.config_last_reload_successful.set(1 if success else 0)
        if success:
            self.config_last_reload_success_time.set_to_current_time()

    def set_leader(self, leading: bool) -> None:
        """Record whether this instance currently leads."""
        self.leader.set(1 if leading else 0)

    # -- framework ----------------------------------------------------------------

    def recorder(self, profile: str) -> ProfileRecorder:
        """A :class:`ProfileRecorder` for the framework runner of ``profile``."""
        return ProfileRecorder(self, profile)

    # -- exposition ---------------------------------------------------------------

    def render(self) -> bytes:
        """Every series in the Prometheus text format (:attr:`CONTENT_TYPE`)."""
        return generate_latest(_WithoutCreated(self.registry))

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """The current value of one sample, or None; for tests and diagnostics."""
        return self.registry.get_sample_value(name, labels)


class ProfileRecorder:
    """The framework runner's recorder for one profile (``FrameworkRecorder``).

    It is called for every plugin call of every pod, so each distinct
    (point, plugin, code) resolves its histogram child once and keeps it in a
    dict; after warm-up a call is a tuple hash, a dict hit and an observation.
    """

    __slots__ = ("_errors", "_metrics", "_plugin", "_point", "profile")

    # Failures, breakers and abandoned calls are rare: they resolve their
    # labelled children on each call rather than caching them.

    def __init__(self, metrics: SchedulerMetrics, profile: str) -> None:
        self._metrics = metrics
        self.profile = profile
        self._plugin: dict[tuple[str, str, Code], Histogram] = {}
        self._point: dict[tuple[str, Code], Histogram] = {}
        self._errors: dict[tuple[str, str], Counter] = {}

    def plugin_duration(self, point: str, plugin: str, code: Code, seconds: float) -> None:
        """Record one plugin call's duration under its status (``code.title``)."""
        key = (point, plugin, code)
        child = self._plugin.get(key)
        if child is None:
            child = self._metrics.plugin_execution_duration.labels(plugin, point, code.title)
            self._plugin[key] = child
        child.observe(seconds)

    def point_duration(self, point: str, code: Code, seconds: float) -> None:
        """Record the duration of all plugins at one extension point, under its status."""
        key = (point, code)
        child = self._point.get(key)
        if child is None:
            child = self._metrics.framework_extension_point_duration.labels(
                point, code.title, self.profile
            )
            self._point[key] = child
        child.observe(seconds)

    def plugin_error(self, point: str, plugin: str) -> None:
        """Count a plugin call that failed (raised, timed out or returned garbage)."""
        key = (point, plugin)
        child = self._errors.get(key)
        if child is None:
            child = self._metrics.plugin_errors.labels(plugin, point, self.profile)
            self._errors[key] = child
        child.inc()

    def plugin_overrun(self, point: str, plugin: str) -> None:
        """Count a plugin call that ran past its budget."""
        self._metrics.plugin_overruns.labels(plugin, point, self.profile).inc()

    def plugin_ignored(self, point: str, plugin: str, reason: str) -> None:
        """Count a failure that only left the plugin out of a decision (``Ignore``)."""
        self._metrics.plugin_ignored_failures.labels(plugin, point, self.profile, reason).inc()

    def circuit_open(self, plugin: str, is_open: bool) -> None:
        """Record whether the plugin's circuit breaker is open."""
        self._metrics.plugin_circuit_open.labels(plugin, self.profile).set(1 if is_open else 0)

    def abandoned_call(self, point: str, plugin: str, delta: int) -> None:
        """An async call was abandoned (``delta`` 1) or an abandoned call ended (-1)."""
        labels = (plugin, point, self.profile)
        if delta > 0:
            self._metrics.plugin_abandoned_calls.labels(*labels).inc(delta)
        self._metrics.plugin_abandoned_calls_running.labels(*labels).inc(delta)

    def plugin_times(self, labels: Sequence[tuple[str, str]], seconds: list[float]) -> None:
        """Export a framework's running per-call totals (read at scrape time)."""
        self._metrics.plugin_times.add(self.profile, labels, seconds)

    def stuck_calls(self, source: Callable[[], list[tuple[str, str]]]) -> None:
        """Export the (point, plugin) of calls running past their budget, at scrape time."""
        self._metrics.stuck_calls.add(self.profile, source)

    def retire_stuck_calls(self, source: Callable[[], list[tuple[str, str]]]) -> None:
        """``source``'s framework was replaced: drop it once it has no stuck call left."""
        self._metrics.stuck_calls.retire(source)

    def warm(self, points: Iterable[tuple[str, str]]) -> None:
        """Pre-resolve the Success series of known (point, plugin) pairs.

        Optional: lets the daemon create the common series at start-up so
        the first pods do not pay for resolution and dashboards see zeroes.
        """
        for point, plugin in points:
            key = (point, plugin, Code.SUCCESS)
            if key not in self._plugin:
                self._plugin[key] = self._metrics.plugin_execution_duration.labels(
                    plugin, point, Code.SUCCESS.title
                )


class _PluginTimes:
    """``scheduler_plugin_duration_seconds_total``: every plugin call's time, summed.

    kube-scheduler's histogram samples one cycle in ten because observing a
    histogram per call costs more than most plugins take. The framework
    instead adds each call's seconds to a plain list (one add per call), and
    this collector reads the lists only when scraped, so a plugin that slows
    every cycle shows in ``rate()`` without a per-call metrics cost.
    """

    def __init__(self) -> None:
        self._sources: list[tuple[str, Sequence[tuple[str, str]], list[float]]] = []

    def add(self, profile: str, labels: Sequence[tuple[str, str]], seconds: list[float]) -> None:
        self._sources.append((profile, labels, seconds))

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        totals: dict[tuple[str, str, str], float] = {}
        for profile, labels, seconds in list(self._sources):
            # A copy first: the scheduling thread may be adding to the list.
            for (point, plugin), total in zip(list(labels), list(seconds), strict=False):
                key = (plugin, point, profile)
                totals[key] = totals.get(key, 0.0) + total
        for key, total in totals.items():
            family.add_metric(list(key), total)
        yield family

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            "scheduler_plugin_duration_seconds",
            "Seconds spent in each plugin at each extension point, every call counted "
            "(scheduler_plugin_execution_duration_seconds samples 10 % of cycles); its "
            "rate is the share of a core the plugin takes (not in kube-scheduler).",
            labels=["plugin", "extension_point", "profile"],
        )


class _StuckCalls:
    """``scheduler_plugin_calls_over_budget``: calls running past their budget *now*.

    The overrun counter moves only when a call returns; a call that never
    does would not show at all. This gauge asks the frameworks at scrape
    time (the watchdog's view), so a stuck plugin is named while it is stuck.
    """

    def __init__(self) -> None:
        self._sources: list[tuple[str, Callable[[], list[tuple[str, str]]]]] = []
        self._retired: list[Callable[[], list[tuple[str, str]]]] = []
        # Scrapes run on the control thread, adds and retires on the scheduling one.
        self._lock = threading.Lock()

    def add(self, profile: str, source: Callable[[], list[tuple[str, str]]]) -> None:
        with self._lock:
            self._sources.append((profile, source))

    def retire(self, source: Callable[[], list[tuple[str, str]]]) -> None:
        # Compared with ==: each access to a bound method makes a new object.
        with self._lock:
            if any(s == source for _, s in self._sources):
                self._retired.append(source)

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        counts: dict[tuple[str, str, str], int] = {}
        with self._lock:
            sources = list(self._sources)
        for profile, source in sources:
            stuck = source()
            if not stuck:
                with self._lock:
                    if any(r == source for r in self._retired):
                        # Replaced by a reload, and nothing of it runs any more.
                        self._sources = [(p, s) for p, s in self._sources if s != source]
                        self._retired = [r for r in self._retired if r != source]
            for point, plugin in stuck:
                key = (plugin, point, profile)
                counts[key] = counts.get(key, 0) + 1
        for key, count in counts.items():
            family.add_metric(list(key), count)
        yield family

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "scheduler_plugin_calls_over_budget",
            "Plugin calls running past their budget right now, synchronous ones "
            "included (not in kube-scheduler).",
            labels=["plugin", "extension_point", "profile"],
        )
