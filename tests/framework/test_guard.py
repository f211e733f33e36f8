"""Budgets, failurePolicy, circuit breakers and the watchdog, through the real framework."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
import structlog

from scheduler.api import Code, CycleState, FilterResult, Status, hookimpl
from scheduler.config.models import CircuitBreakerConfig, FailurePolicy
from scheduler.framework.cycle import Algorithm
from scheduler.framework.guard import WATCHDOG, Breaker, abandoned_count
from scheduler.framework.runtime import IGNORED_KEY, SLOW_WINDOW_CYCLES, Framework
from scheduler.observability.metrics import SchedulerMetrics
from scheduler.state.pod import PodInfo
from tests.framework.helpers import budgets, make_framework, node, pod, table_of


def three_nodes() -> Any:
    return table_of(node("n1"), node("n2"), node("n3"))


class SlowFilter:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
        self.calls += 1
        time.sleep(self.seconds)


class Raising:
    """Raises at Filter and Score for pods whose name starts with ``bad``."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> FilterResult:
        self.calls += 1
        if pod.name.startswith("bad"):
            raise RuntimeError("filter exploded")
        return FilterResult(len(nodes)).reject(np.array([n == "n1" for n in nodes.names]), "not n1")

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: Any) -> Any:
        if pod.name.startswith("bad"):
            raise RuntimeError("score exploded")
        return np.zeros(len(nodes), dtype=np.int64)


class PreferN3:
    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: Any) -> Any:
        return np.array([100 if n == "n3" else 0 for n in nodes.names], dtype=np.int64)


class Recorder(list[tuple[str, str, str]]):
    """An event sink: (pod, reason, note) per event."""

    def __call__(self, pod: PodInfo, type_: str, reason: str, note: str, action: str) -> None:
        self.append((pod.key, reason, note))


class Notices(list[tuple[str, str, str]]):
    """A sink of events about the scheduler itself: (type, reason, note) per event."""

    def __call__(self, type_: str, reason: str, note: str) -> None:
        self.append((type_, reason, note))


def with_metrics(fw: Framework) -> SchedulerMetrics:
    metrics = SchedulerMetrics(process_metrics=False)
    recorder = metrics.recorder(fw.profile_name)
    fw.recorder = recorder
    recorder.plugin_times(fw.call_labels, fw.call_seconds)
    recorder.stuck_calls(fw.stuck_calls)
    return metrics


# ----------------------------------------------------------------- sync budgets


def test_sync_call_past_its_budget_fails_the_attempt_naming_plugin_hook_pod_and_time() -> None:
    fw = make_framework([("Slow", SlowFilter(0.05))], timeouts=budgets(filter="10ms"))
    metrics = with_metrics(fw)
    out = fw.run_filter(fw.new_cycle_state(), pod("p"), three_nodes().all_nodes())
    assert out.status.code is Code.ERROR and out.status.plugin == "Slow"
    message = out.status.message()
    assert message.startswith("Filter plugin 'Slow' on pod default/p ran for 0.0")
    assert message.endswith("s, over its 0.01s budget")
    labels = {"plugin": "Slow", "extension_point": "Filter", "profile": "test-profile"}
    assert metrics.sample("scheduler_plugin_overruns_total", labels) == 1.0
    assert metrics.sample("scheduler_plugin_errors_total", labels) == 1.0


def test_a_plugin_budget_overrides_the_point_budget() -> None:
    timeouts = budgets(filter="10ms", plugins={"Patient": {"filter": "5s"}})
    fw = make_framework(
        [("Patient", SlowFilter(0.03)), ("Slow", SlowFilter(0.03))], timeouts=timeouts
    )
    out = fw.run_filter(CycleState(), pod("p"), three_nodes().all_nodes())
    assert out.status.plugin == "Slow"
    assert [c.budget for c in fw.filter_calls] == [5.0, 0.01]


def test_watchdog_reports_a_call_still_running_past_its_budget_once() -> None:
    seen: list[int] = []

    class Stuck:
        @hookimpl
        def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
            before = WATCHDOG.reported
            deadline = time.monotonic() + 5
            while WATCHDOG.reported == before and time.monotonic() < deadline:
                time.sleep(0.01)  # the watchdog's thread must see us while we run
            time.sleep(0.3)  # several more looks: still one report
            seen.append(WATCHDOG.reported - before)

    fw = make_framework([("Stuck", Stuck())], timeouts=budgets(filter="50ms"))
    with structlog.testing.capture_logs() as logs:
        out = fw.run_filter(CycleState(), pod("p"), three_nodes().all_nodes())
    assert seen == [1]
    assert out.status.code is Code.ERROR
    (warning,) = [e for e in logs if e.get("plugin") == "Stuck" and "running for" in e["event"]]
    assert warning["log_level"] == "warning"
    assert warning["event"].startswith("plugin Stuck hook Filter on pod default/p running for ")
    assert warning["event"].endswith("s (budget 0.05s)")


def test_a_call_past_its_budget_shows_in_metrics_while_it_runs() -> None:
    seen: list[float | None] = []
    labels = {"plugin": "Stuck", "extension_point": "Filter", "profile": "test-profile"}

    class Stuck:
        @hookimpl
        def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
            seen.append(metrics.sample("scheduler_plugin_calls_over_budget", labels))
            time.sleep(0.03)
            seen.append(metrics.sample("scheduler_plugin_calls_over_budget", labels))

    fw = make_framework([("Stuck", Stuck())], timeouts=budgets(filter="20ms"))
    metrics = with_metrics(fw)
    fw.run_filter(CycleState(), pod("p"), three_nodes().all_nodes())
    assert seen == [None, 1.0]
    assert metrics.sample("scheduler_plugin_calls_over_budget", labels) is None


def test_nested_calls_restore_the_watched_call() -> None:
    inner_seen: list[Any] = []

    class Outer:
        @hookimpl
        def post_filter(self, state: CycleState, pod: PodInfo, diagnosis: Any) -> None:
            before = WATCHDOG.current
            fw.run_filter(state, pod, three_nodes().all_nodes())
            inner_seen.append(WATCHDOG.current is before)

    class PassAll:
        @hookimpl
        def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
            return None

    fw = make_framework([("Outer", Outer()), ("PassAll", PassAll())])
    fw.run_post_filter(
        CycleState(),
        pod("p"),
        Algorithm(fw).schedule(CycleState(), pod("p"), three_nodes()).diagnosis,
    )
    assert inner_seen == [True]
    assert WATCHDOG.current is None


# ----------------------------------------------------------------- async budgets


class Stubborn:
    """A PreBind that swallows its cancellation and goes on until released."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.cancellations = 0
        self.finished = 0

    @hookimpl
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        while not self.release.is_set():
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancellations += 1
        self.finished += 1


async def test_async_hook_swallowing_cancellation_is_abandoned_at_its_budget() -> None:
    plugin = Stubborn()
    fw = make_framework([("Stubborn", plugin)], timeouts=budgets(preBind="50ms"))
    metrics = with_metrics(fw)
    started = time.perf_counter()
    status = await fw.run_pre_bind(CycleState(), pod("p"), "n1")
    assert time.perf_counter() - started < 1.0
    assert status.code is Code.ERROR and status.plugin == "Stubborn"
    assert "on pod default/p timed out after 0.05s" in status.message()
    await asyncio.sleep(0)
    assert plugin.cancellations == 1
    assert fw.abandoned_calls() == 1 and abandoned_count() >= 1
    # asyncio.run would cancel and then await it forever at exit: it is not listed.
    assert not [t for t in asyncio.all_tasks() if "pre_bind" in repr(t.get_coro())]
    labels = {"plugin": "Stubborn", "extension_point": "PreBind", "profile": "test-profile"}
    assert metrics.sample("scheduler_plugin_abandoned_calls_total", labels) == 1.0
    assert metrics.sample("scheduler_plugin_abandoned_calls_running", labels) == 1.0
    assert metrics.sample("scheduler_plugin_overruns_total", labels) == 1.0
    plugin.release.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert plugin.finished == 1
    assert fw.abandoned_calls() == 0
    assert metrics.sample("scheduler_plugin_abandoned_calls_running", labels) == 0.0


async def test_cancelling_the_binding_cycle_leaves_the_hook_behind_at_once() -> None:
    plugin = Stubborn()
    fw = make_framework([("Stubborn", plugin)])  # 30 s budget: never reached here
    binding = asyncio.ensure_future(fw.run_pre_bind(CycleState(), pod("p"), "n1"))
    await asyncio.sleep(0.02)
    binding.cancel()
    done, _ = await asyncio.wait({binding}, timeout=1)
    assert binding in done and binding.cancelled()
    assert fw.abandoned_calls() == 1
    plugin.release.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert fw.abandoned_calls() == 0


async def test_sync_implementation_of_an_async_hook_past_its_budget_is_an_overrun() -> None:
    class BlockingBinder:
        @hookimpl
        def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
            time.sleep(0.03)
            return Status.success()

    fw = make_framework([("BlockingBinder", BlockingBinder())], timeouts=budgets(bind="10ms"))
    status = await fw.run_bind(CycleState(), pod("p"), "n1")
    assert status.code is Code.ERROR and "over its 0.01s budget" in status.message()


# ----------------------------------------------------------------- failurePolicy


def test_ignored_score_failure_leaves_the_plugin_out_and_says_so() -> None:
    events = Recorder()
    fw = make_framework(
        [("Raising", Raising()), ("PreferN3", PreferN3())], failure_policy={"Raising": "Ignore"}
    )
    fw._events = events
    metrics = with_metrics(fw)
    state = fw.new_cycle_state()
    algorithm = Algorithm(fw, seed=0)
    # Raising's Filter raises for this pod too: ignored, it lets every node through.
    result = algorithm.schedule(state, pod("bad-p"), three_nodes())
    assert result.status.is_success() and result.node == "n3"
    assert result.score_outcome is not None
    assert set(result.score_outcome.by_plugin) == {"PreferN3"}
    ignored = state.get(IGNORED_KEY)
    assert [(f.point, f.plugin, f.reason) for f in ignored] == [
        ("Filter", "Raising", "error"),
        ("Score", "Raising", "error"),
    ]
    assert "RuntimeError: score exploded" in ignored[1].message
    assert [e[1] for e in events] == ["PluginIgnored", "PluginIgnored"]
    assert events[1][2].startswith("Score plugin Raising left out (failurePolicy Ignore): ")
    labels = {"plugin": "Raising", "profile": "test-profile", "reason": "error"}
    assert (
        metrics.sample(
            "scheduler_plugin_ignored_failures_total", {**labels, "extension_point": "Score"}
        )
        == 1.0
    )


def test_filter_failure_fails_the_pod_under_the_default_policy() -> None:
    fw = make_framework([("Raising", Raising())])
    result = Algorithm(fw, seed=0).schedule(CycleState(), pod("bad-p"), three_nodes())
    assert result.status.code is Code.ERROR
    assert "RuntimeError: filter exploded" in result.status.message()


def test_ignored_filter_overrun_counts_as_passing() -> None:
    fw = make_framework(
        [("Slow", SlowFilter(0.03))],
        timeouts=budgets(filter="5ms"),
        failure_policy={"Slow": "Ignore"},
    )
    state = CycleState()
    out = fw.run_filter(state, pod("p"), three_nodes().all_nodes())
    assert out.status.is_success() and out.feasible.names == ["n1", "n2", "n3"]
    assert state.get(IGNORED_KEY)[0].reason == "overrun"


def test_ignored_prefilter_failure_skips_the_plugins_filter_and_prescore_its_score() -> None:
    class Broken:
        def __init__(self) -> None:
            self.filtered = self.scored = 0

        @hookimpl
        def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
            raise ValueError("no state for you")

        @hookimpl
        def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
            self.filtered += 1

        @hookimpl
        def pre_score(self, state: CycleState, pod: PodInfo, nodes: Any) -> Status:
            return Status.error_status("pre-score broke")

        @hookimpl
        def score(self, state: CycleState, pod: PodInfo, nodes: Any) -> Any:
            self.scored += 1
            return np.zeros(len(nodes), dtype=np.int64)

    plugin = Broken()
    fw = make_framework([("Broken", plugin)], failure_policy={"Broken": "Ignore"})
    state = CycleState()
    result = Algorithm(fw, seed=0).schedule(state, pod("p"), three_nodes())
    assert result.status.is_success() and result.node is not None
    assert plugin.filtered == 0 and plugin.scored == 0
    assert state.skip_filter_plugins == {"Broken"} and state.skip_score_plugins == {"Broken"}
    assert [f.point for f in state.get(IGNORED_KEY)] == ["PreFilter", "PreScore"]


def test_ignored_normalize_score_failure_leaves_the_plugin_out() -> None:
    class BadNormalize(PreferN3):
        @hookimpl
        def normalize_score(self, state: CycleState, pod: PodInfo, nodes: Any, scores: Any) -> Any:
            return [1] * (len(nodes) + 1)  # wrong length

    class PreferN2:
        @hookimpl
        def score(self, state: CycleState, pod: PodInfo, nodes: Any) -> Any:
            return np.array([10 if n == "n2" else 0 for n in nodes.names], dtype=np.int64)

    fw = make_framework(
        [("BadNormalize", BadNormalize()), ("PreferN2", PreferN2())],
        failure_policy={"BadNormalize": "Ignore"},
    )
    state = CycleState()
    result = Algorithm(fw, seed=0).schedule(state, pod("p"), three_nodes())
    assert result.node == "n2"
    (failure,) = state.get(IGNORED_KEY)
    assert (failure.point, failure.plugin) == ("NormalizeScore", "BadNormalize")


def test_ignore_does_not_apply_to_reserve() -> None:
    class BadReserve:
        @hookimpl
        def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
            raise RuntimeError("cannot reserve")

    fw = make_framework([("BadReserve", BadReserve())], failure_policy={"BadReserve": "Ignore"})
    status = fw.run_reserve(CycleState(), pod("p"), "n1")
    assert status.code is Code.ERROR


def test_an_ignored_failure_drops_batched_results() -> None:
    fw = make_framework([("Raising", Raising())], failure_policy={"Raising": "Ignore"})
    algorithm = Algorithm(fw, seed=0, batching=True)
    table = three_nodes()
    assert algorithm.batch is not None
    algorithm.schedule(fw.new_cycle_state(), pod("good-0"), table)
    algorithm.schedule(fw.new_cycle_state(), pod("bad-0"), table)
    assert len(algorithm.batch) == 0


# ----------------------------------------------------------------- circuit breaker


def breaker_framework(policy: FailurePolicy = "Fail", **plugins: Any) -> Framework:
    return make_framework(
        list(plugins.items()) or [("Raising", Raising())],
        failure_policy=dict.fromkeys(plugins or ["Raising"], policy),
        circuit_breaker=CircuitBreakerConfig.model_validate(
            {"consecutiveFailures": 3, "coolDown": "10s"}
        ),
    )


def test_breaker_opens_after_failures_for_different_pods_and_fails_fast() -> None:
    fw = breaker_framework()
    plugin: Any = fw.plugins["Raising"]
    metrics = with_metrics(fw)
    events, notices = Recorder(), Notices()
    fw._events, fw._notices = events, notices
    nodes = three_nodes().all_nodes()
    for name in ("bad-0", "bad-1", "bad-2"):
        assert fw.run_filter(CycleState(), pod(name), nodes).status.code is Code.ERROR
    assert fw.breakers["Raising"].is_open
    assert (
        metrics.sample(
            "scheduler_plugin_circuit_open", {"plugin": "Raising", "profile": "test-profile"}
        )
        == 1.0
    )
    # On the scheduler's own object, not on the pod that happened to trip it.
    assert events == []
    assert [(t, r) for t, r, _ in notices] == [("Warning", "PluginCircuitOpen")]
    assert notices[0][2].startswith("plugin Raising is out of profile test-profile for 10s")
    calls = plugin.calls
    out = fw.run_filter(CycleState(), pod("good"), nodes)
    assert plugin.calls == calls  # not even called
    assert out.status.code is Code.ERROR
    assert "circuit breaker is open" in out.status.message()


def test_breaker_half_opens_after_the_cool_down_and_a_success_closes_it() -> None:
    fw = breaker_framework()
    metrics = with_metrics(fw)
    clock = [0.0]
    breaker = fw.breakers["Raising"]
    breaker.clock = lambda: clock[0]
    nodes = three_nodes().all_nodes()
    for name in ("bad-0", "bad-1", "bad-2"):
        fw.run_filter(CycleState(), pod(name), nodes)
    clock[0] = 11.0
    # Half-open: a failure re-opens it for another cool-down.
    assert "filter exploded" in fw.run_filter(CycleState(), pod("bad-3"), nodes).status.message()
    assert breaker.refuses()
    clock[0] = 22.0
    assert fw.run_filter(CycleState(), pod("good"), nodes).status.is_success()
    assert not breaker.is_open and not breaker.failing
    assert (
        metrics.sample(
            "scheduler_plugin_circuit_open", {"plugin": "Raising", "profile": "test-profile"}
        )
        == 0.0
    )


def test_one_pod_failing_over_and_over_never_opens_the_breaker() -> None:
    fw = breaker_framework()
    nodes = three_nodes().all_nodes()
    for _ in range(10):
        fw.run_filter(CycleState(), pod("bad-0"), nodes)
    assert not fw.breakers["Raising"].is_open
    assert fw.breakers["Raising"].failures == 1


def test_a_success_resets_the_count() -> None:
    fw = breaker_framework()
    nodes = three_nodes().all_nodes()
    for name in ("bad-0", "bad-1", "good", "bad-2", "bad-3"):
        fw.run_filter(CycleState(), pod(name), nodes)
    assert not fw.breakers["Raising"].is_open


def test_open_breaker_under_ignore_skips_the_plugin() -> None:
    fw = breaker_framework("Ignore")
    table = three_nodes()
    for name in ("bad-0", "bad-1", "bad-2"):
        Algorithm(fw, seed=0).schedule(CycleState(), pod(name), table)
    state = CycleState()
    result = Algorithm(fw, seed=0).schedule(state, pod("good"), table)
    # Raising would have rejected n1: while it is out, n1 is feasible.
    assert result.feasible_nodes == 3
    assert {f.reason for f in state.get(IGNORED_KEY)} == {"circuit_open"}


async def test_error_statuses_a_plugin_returns_never_open_its_breaker() -> None:
    class Refused:
        @hookimpl
        def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
            return Status.error_status("the API server answered 500")

    fw = breaker_framework(Refused=Refused())
    for i in range(5):
        status = await fw.run_bind(CycleState(), pod(f"p{i}"), "n1")
        assert status.message() == 'running Bind plugin "Refused": the API server answered 500'
    assert not fw.breakers["Refused"].failing


def test_unreserve_runs_even_while_the_breaker_is_open() -> None:
    class Both:
        def __init__(self) -> None:
            self.unreserved = 0

        @hookimpl
        def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
            raise RuntimeError("nope")

        @hookimpl
        def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
            self.unreserved += 1

    plugin = Both()
    fw = breaker_framework(Both=plugin)
    for i in range(4):
        fw.run_reserve(CycleState(), pod(f"p{i}"), "n1")
    assert fw.breakers["Both"].is_open
    assert plugin.unreserved == 4


def test_breaker_counts_distinct_pods() -> None:
    breaker = Breaker(2, 5.0, clock=lambda: 0.0)
    assert not breaker.failed("a") and not breaker.failed("a")
    assert breaker.failed("b") and breaker.refuses()
    assert not Breaker(0, 5.0).failed("a")


# ----------------------------------------------------------------- time per plugin


def test_every_call_adds_to_the_plugin_time_totals_not_only_sampled_cycles() -> None:
    fw = make_framework([("Slow", SlowFilter(0.002))])
    metrics = with_metrics(fw)
    table = three_nodes()
    for _ in range(3):
        state = fw.new_cycle_state()
        assert not state.record_plugin_metrics  # none of these cycles is sampled
        Algorithm(fw, seed=0).schedule(state, pod("p"), table)
    labels = {"plugin": "Slow", "extension_point": "Filter", "profile": "test-profile"}
    total = metrics.sample("scheduler_plugin_duration_seconds_total", labels)
    assert total is not None and total >= 0.006
    assert fw.cycle_plugin_seconds()[("Filter", "Slow")] >= 0.002


def test_a_plugin_taking_most_of_slow_cycles_is_named_once_a_minute() -> None:
    fw = make_framework([("Slow", SlowFilter(0.012))])
    table = three_nodes()
    with structlog.testing.capture_logs() as logs:
        for _ in range(2 * SLOW_WINDOW_CYCLES):
            Algorithm(fw, seed=0).schedule(fw.new_cycle_state(), pod("p"), table)
    slow = [e for e in logs if e.get("plugin") == "Slow"]
    assert len(slow) == 1
    assert slow[0]["log_level"] == "warning"
    assert slow[0]["event"].startswith("plugin Slow took ")
    assert f"of the last {SLOW_WINDOW_CYCLES} scheduling cycles" in slow[0]["event"]
    assert "at Filter); at this pace the profile schedules at most" in slow[0]["event"]


def test_one_slow_cycle_is_not_enough() -> None:
    fw = make_framework([("Slow", SlowFilter(0.0))])
    table = three_nodes()
    with structlog.testing.capture_logs() as logs:
        fw.plugins["Slow"].seconds = 0.05  # type: ignore[attr-defined]
        Algorithm(fw, seed=0).schedule(fw.new_cycle_state(), pod("p"), table)
        fw.plugins["Slow"].seconds = 0.0  # type: ignore[attr-defined]
        for _ in range(SLOW_WINDOW_CYCLES * 3):
            Algorithm(fw, seed=0).schedule(fw.new_cycle_state(), pod("p"), table)
    assert not [e for e in logs if e.get("plugin") == "Slow"]


# ------------------------------------------------ queue sort and event registration


class SortByLabel:
    """A QueueSort whose key raises, or cannot be compared, for some pods."""

    @hookimpl
    def queue_sort_key(self, queued: Any) -> Any:
        how = queued.pod.labels.get("key")
        if how == "raise":
            raise KeyError("no priority")
        if how == "dict":
            return {"not": "comparable"}
        return (int(queued.pod.labels.get("prio", "0")),)


def test_a_queue_sort_key_that_fails_orders_the_pod_last_and_counts_against_the_plugin() -> None:
    from scheduler.engine.queue import SchedulingQueue

    fw = make_framework([("SortByLabel", SortByLabel())])
    metrics = with_metrics(fw)
    queue = SchedulingQueue(fw.queue_sort_key, lambda p: Status())
    for name, labels in (
        ("broken", {"key": "raise"}),
        ("dict", {"key": "dict"}),
        ("late", {"prio": "5"}),
        ("early", {"prio": "1"}),
    ):
        raw = pod(name).raw
        queue.add(PodInfo.from_dict({**raw, "metadata": {**raw["metadata"], "labels": labels}}))
    order = [queue.pop_nowait() for _ in range(4)]
    assert [i.pod.name for i in order if i is not None] == ["early", "late", "broken", "dict"]
    errors = metrics.sample(
        "scheduler_plugin_errors_total",
        {"plugin": "SortByLabel", "extension_point": "QueueSort", "profile": "test-profile"},
    )
    assert errors == 2.0


class BadRegistration:
    def __init__(self, how: str) -> None:
        self.how = how

    @hookimpl
    def events_to_register(self) -> Any:
        if self.how == "raise":
            raise RuntimeError("no informer for that")
        return ["Node/Add"]


def test_events_to_register_failures_name_the_plugin() -> None:
    from scheduler.framework.runtime import RegistrationError

    for how, expected in (
        ("raise", "events_to_register raised RuntimeError: no informer for that"),
        ("garbage", "events_to_register returned str in its list, expected ClusterEventWithHint"),
    ):
        fw = make_framework([("Bad", BadRegistration(how))])
        try:
            fw.events_to_register()
        except RegistrationError as err:
            assert err.plugin == "Bad"
            assert err.message.startswith(expected), err.message
        else:
            raise AssertionError("no RegistrationError")
