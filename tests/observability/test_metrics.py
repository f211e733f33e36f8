"""SchedulerMetrics: kube-scheduler's names, labels and buckets, and the per-plugin recorder."""

from __future__ import annotations

from typing import Any

import numpy as np
import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from scheduler.api import Code, CycleState, FilterResult, hookimpl
from scheduler.framework.pluginmanager import POINT_HOOKS, SchedulerPluginManager
from scheduler.framework.runtime import Framework, FrameworkRecorder
from scheduler.observability.metrics import (
    EXTENSION_POINT_BUCKETS,
    PLUGIN_EXECUTION_BUCKETS,
    POD_SCHEDULING_ATTEMPTS_BUCKETS,
    POD_SCHEDULING_SLI_BUCKETS,
    PREEMPTION_VICTIMS_BUCKETS,
    SCHEDULING_ATTEMPT_BUCKETS,
    ProfileRecorder,
    SchedulerMetrics,
    attempts_label,
    exponential_buckets,
)
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo


def exercise(m: SchedulerMetrics) -> None:
    """Touch every labelled series once so each appears in the exposition."""
    m.observe_attempt("scheduled", "default", 0.02)
    m.observe_algorithm(0.01)
    m.set_pending("active", 3)
    m.config_reload(success=False)
    rec = m.recorder("default")
    rec.plugin_duration("Filter", "NodeResourcesFit", Code.SUCCESS, 0.0001)
    rec.point_duration("Filter", Code.SUCCESS, 0.001)
    rec.plugin_error("Score", "Broken")
    rec.plugin_overrun("Filter", "Slow")
    rec.plugin_ignored("Score", "Broken", "error")
    rec.circuit_open("Broken", True)
    rec.abandoned_call("PreBind", "Stubborn", 1)
    rec.plugin_times([("Filter", "NodeResourcesFit")], [0.25])
    rec.stuck_calls(lambda: [("Filter", "Stuck")])
    m.preemption_attempt(victims=2)
    m.pod_scheduled(attempts=1, seconds_since_queued=0.5)
    m.queue_incoming("active", "PodAdd")
    m.observe_permit_wait(Code.SUCCESS, 0.1)
    m.unschedulable("NodeResourcesFit", "default").inc()
    m.binding_error("conflict")
    m.shadow_decision("shadow", "NodeResourcesFit")
    m.shadow_skip("shadow")
    m.set_leader(True)


def families(m: SchedulerMetrics) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(m.render().decode())}


def label_names(family: Any) -> set[str]:
    names: set[str] = set()
    for s in family.samples:
        names |= set(s.labels) - {"le"}
    return names


# name (as parsed, counters without _total) -> (type, label names); kube's, plus ours
EXPECTED = {
    "scheduler_schedule_attempts": ("counter", {"result", "profile"}),
    "scheduler_scheduling_attempt_duration_seconds": ("histogram", {"result", "profile"}),
    "scheduler_scheduling_algorithm_duration_seconds": ("histogram", set()),
    "scheduler_pending_pods": ("gauge", {"queue"}),
    "scheduler_framework_extension_point_duration_seconds": (
        "histogram",
        {"extension_point", "status", "profile"},
    ),
    "scheduler_plugin_execution_duration_seconds": (
        "histogram",
        {"plugin", "extension_point", "status"},
    ),
    "scheduler_preemption_attempts": ("counter", set()),
    "scheduler_preemption_victims": ("histogram", set()),
    "scheduler_pod_scheduling_sli_duration_seconds": ("histogram", {"attempts"}),
    "scheduler_pod_scheduling_attempts": ("histogram", set()),
    "scheduler_queue_incoming_pods": ("counter", {"queue", "event"}),
    "scheduler_permit_wait_duration_seconds": ("histogram", {"result"}),
    "scheduler_unschedulable_pods": ("gauge", {"plugin", "profile"}),
    "scheduler_plugin_errors": ("counter", {"plugin", "extension_point", "profile"}),
    "scheduler_binding_errors": ("counter", {"reason"}),
    "scheduler_shadow_divergence": ("counter", {"profile", "plugin"}),
    "scheduler_shadow_decisions": ("counter", {"profile"}),
    "scheduler_shadow_skipped": ("counter", {"profile"}),
    "scheduler_plugin_overruns": ("counter", {"plugin", "extension_point", "profile"}),
    "scheduler_plugin_ignored_failures": (
        "counter",
        {"plugin", "extension_point", "profile", "reason"},
    ),
    "scheduler_plugin_circuit_open": ("gauge", {"plugin", "profile"}),
    "scheduler_plugin_abandoned_calls": ("counter", {"plugin", "extension_point", "profile"}),
    "scheduler_plugin_abandoned_calls_running": (
        "gauge",
        {"plugin", "extension_point", "profile"},
    ),
    "scheduler_plugin_duration_seconds": ("counter", {"plugin", "extension_point", "profile"}),
    "scheduler_config_last_reload_successful": ("gauge", set()),
    "scheduler_config_last_reload_success_timestamp_seconds": ("gauge", set()),
    "scheduler_config_reloads": ("counter", {"result"}),
    "scheduler_plugin_calls_over_budget": ("gauge", {"plugin", "extension_point", "profile"}),
    "scheduler_leader": ("gauge", set()),
}


def test_every_series_has_kube_scheduler_name_type_and_labels() -> None:
    m = SchedulerMetrics(process_metrics=False)
    exercise(m)
    found = families(m)
    assert set(found) == set(EXPECTED)
    for name, (kind, labels) in EXPECTED.items():
        assert found[name].type == kind, name
        assert label_names(found[name]) == labels, name


def test_counters_are_exposed_with_total_suffix_and_no_created_series() -> None:
    m = SchedulerMetrics(process_metrics=False)
    exercise(m)
    text = m.render().decode()
    assert "# TYPE scheduler_schedule_attempts_total counter" in text
    assert "scheduler_preemption_attempts_total 1.0" in text
    assert 'scheduler_plugin_errors_total{extension_point="Score"' in text
    assert "_created" not in text


def test_bucket_boundaries_match_kube_scheduler() -> None:
    assert exponential_buckets(0.001, 2, 15) == SCHEDULING_ATTEMPT_BUCKETS
    assert SCHEDULING_ATTEMPT_BUCKETS[0] == 0.001 and SCHEDULING_ATTEMPT_BUCKETS[-1] == 16.384
    assert len(SCHEDULING_ATTEMPT_BUCKETS) == 15
    assert EXTENSION_POINT_BUCKETS[0] == 0.0001 and EXTENSION_POINT_BUCKETS[-1] == 0.2048
    assert len(EXTENSION_POINT_BUCKETS) == 12
    assert len(PLUGIN_EXECUTION_BUCKETS) == 20
    assert PLUGIN_EXECUTION_BUCKETS[0] == 0.00001
    assert PLUGIN_EXECUTION_BUCKETS[-1] == pytest.approx(0.00001 * 1.5**19)
    assert POD_SCHEDULING_SLI_BUCKETS[0] == 0.01 and len(POD_SCHEDULING_SLI_BUCKETS) == 20
    assert POD_SCHEDULING_SLI_BUCKETS[-1] == pytest.approx(5242.88)
    assert POD_SCHEDULING_ATTEMPTS_BUCKETS == (1, 2, 4, 8, 16)
    assert PREEMPTION_VICTIMS_BUCKETS == (1, 2, 4, 8, 16, 32, 64)


def test_exponential_buckets_multiply_like_go() -> None:
    # Go computes each bound from the previous one; a power would round
    # differently here and put a different ``le`` string on the wire.
    assert PLUGIN_EXECUTION_BUCKETS[1] == 1.5000000000000002e-05
    with pytest.raises(ValueError):
        exponential_buckets(0, 2, 3)
    with pytest.raises(ValueError):
        exponential_buckets(1, 1, 3)
    with pytest.raises(ValueError):
        exponential_buckets(1, 2, 0)


@pytest.mark.parametrize(
    ("family", "buckets"),
    [
        ("scheduler_scheduling_attempt_duration_seconds", SCHEDULING_ATTEMPT_BUCKETS),
        ("scheduler_scheduling_algorithm_duration_seconds", SCHEDULING_ATTEMPT_BUCKETS),
        ("scheduler_framework_extension_point_duration_seconds", EXTENSION_POINT_BUCKETS),
        ("scheduler_plugin_execution_duration_seconds", PLUGIN_EXECUTION_BUCKETS),
        ("scheduler_pod_scheduling_sli_duration_seconds", POD_SCHEDULING_SLI_BUCKETS),
        ("scheduler_pod_scheduling_attempts", POD_SCHEDULING_ATTEMPTS_BUCKETS),
        ("scheduler_preemption_victims", PREEMPTION_VICTIMS_BUCKETS),
        ("scheduler_permit_wait_duration_seconds", SCHEDULING_ATTEMPT_BUCKETS),
    ],
)
def test_exposed_histograms_use_the_kube_buckets(family: str, buckets: tuple[float, ...]) -> None:
    m = SchedulerMetrics(process_metrics=False)
    exercise(m)
    samples: list[Sample] = families(m)[family].samples
    bounds = [s.labels["le"] for s in samples if s.name.endswith("_bucket")]
    assert [float(b) for b in bounds] == [*buckets, float("inf")]


def test_registries_are_private_so_instances_do_not_clash() -> None:
    a = SchedulerMetrics()
    b = SchedulerMetrics()
    a.observe_attempt("error", "default", 0.1)
    labels = {"result": "error", "profile": "default"}
    assert a.sample("scheduler_schedule_attempts_total", labels) == 1.0
    assert b.sample("scheduler_schedule_attempts_total", labels) is None
    default = prometheus_client.REGISTRY.get_sample_value(
        "scheduler_schedule_attempts_total", labels
    )
    assert default is None


def test_process_metrics_are_optional() -> None:
    assert b"process_cpu_seconds_total" in SchedulerMetrics().render()
    assert b"process_" not in SchedulerMetrics(process_metrics=False).render()


def test_attempts_increment_counter_and_histogram_together() -> None:
    m = SchedulerMetrics(process_metrics=False)
    m.observe_attempt("unschedulable", "batch", 0.003)
    m.observe_attempt("unschedulable", "batch", 0.003)
    labels = {"result": "unschedulable", "profile": "batch"}
    assert m.sample("scheduler_schedule_attempts_total", labels) == 2.0
    hist = "scheduler_scheduling_attempt_duration_seconds"
    assert m.sample(f"{hist}_count", labels) == 2.0
    assert m.sample(f"{hist}_bucket", {**labels, "le": "0.002"}) == 0.0
    assert m.sample(f"{hist}_bucket", {**labels, "le": "0.004"}) == 2.0
    with pytest.raises(ValueError, match="unknown schedule result"):
        m.observe_attempt("lost", "batch", 0.1)  # type: ignore[arg-type]


def test_pending_pod_gauges_start_at_zero_and_are_settable_by_the_queue() -> None:
    m = SchedulerMetrics(process_metrics=False)
    for queue in ("active", "backoff", "unschedulable", "gated"):
        assert m.sample("scheduler_pending_pods", {"queue": queue}) == 0.0
    m.set_pending("backoff", 7)
    m.pending("gated").inc()
    m.pending("gated").inc()
    m.pending("gated").dec()
    assert m.sample("scheduler_pending_pods", {"queue": "backoff"}) == 7.0
    assert m.sample("scheduler_pending_pods", {"queue": "gated"}) == 1.0
    with pytest.raises(ValueError, match="unknown queue"):
        m.set_pending("waiting", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown queue"):
        m.queue_incoming("waiting", "PodAdd")  # type: ignore[arg-type]


def test_queue_incoming_counts_by_queue_and_event() -> None:
    m = SchedulerMetrics(process_metrics=False)
    m.queue_incoming("active", "PodAdd")
    m.queue_incoming("active", "PodAdd", 2)
    m.queue_incoming("backoff", "NodeAdd")
    name = "scheduler_queue_incoming_pods_total"
    assert m.sample(name, {"queue": "active", "event": "PodAdd"}) == 3.0
    assert m.sample(name, {"queue": "backoff", "event": "NodeAdd"}) == 1.0


def test_attempts_label_is_capped_like_kube() -> None:
    assert attempts_label(1) == "1"
    assert attempts_label(14) == "14"
    assert attempts_label(15) == "15+"
    assert attempts_label(400) == "15+"


def test_pod_scheduled_records_attempts_and_sli_latency() -> None:
    m = SchedulerMetrics(process_metrics=False)
    m.pod_scheduled(attempts=3, seconds_since_queued=1.5)
    m.pod_scheduled(attempts=20, seconds_since_queued=60.0)
    assert m.sample("scheduler_pod_scheduling_attempts_bucket", {"le": "2.0"}) == 0.0
    assert m.sample("scheduler_pod_scheduling_attempts_bucket", {"le": "4.0"}) == 1.0
    assert m.sample("scheduler_pod_scheduling_attempts_count") == 2.0
    sli = "scheduler_pod_scheduling_sli_duration_seconds"
    assert m.sample(f"{sli}_sum", {"attempts": "3"}) == 1.5
    assert m.sample(f"{sli}_sum", {"attempts": "15+"}) == 60.0


def test_preemption_binding_leader_and_unschedulable_series() -> None:
    m = SchedulerMetrics(process_metrics=False)
    m.preemption_attempt()
    m.preemption_attempt(victims=3)
    assert m.sample("scheduler_preemption_attempts_total") == 2.0
    assert m.sample("scheduler_preemption_victims_count") == 1.0
    assert m.sample("scheduler_preemption_victims_bucket", {"le": "4.0"}) == 1.0

    m.binding_error("timeout")
    m.binding_error("timeout")
    assert m.sample("scheduler_binding_errors_total", {"reason": "timeout"}) == 2.0

    assert m.sample("scheduler_leader") == 0.0
    m.set_leader(True)
    assert m.sample("scheduler_leader") == 1.0
    m.set_leader(False)
    assert m.sample("scheduler_leader") == 0.0

    gauge = m.unschedulable("TaintToleration", "default")
    assert gauge is m.unschedulable("TaintToleration", "default")
    gauge.inc(2)
    gauge.dec()
    labels = {"plugin": "TaintToleration", "profile": "default"}
    assert m.sample("scheduler_unschedulable_pods", labels) == 1.0


def test_permit_wait_is_labelled_by_status_title() -> None:
    m = SchedulerMetrics(process_metrics=False)
    m.observe_permit_wait(Code.UNSCHEDULABLE, 2.0)
    labels = {"result": "Unschedulable"}
    assert m.sample("scheduler_permit_wait_duration_seconds_count", labels) == 1.0


# -- ProfileRecorder ------------------------------------------------------------


def test_recorder_is_a_framework_recorder() -> None:
    recorder: FrameworkRecorder = ProfileRecorder(SchedulerMetrics(process_metrics=False), "p")
    assert isinstance(recorder, ProfileRecorder)
    assert SchedulerMetrics(process_metrics=False).recorder("x").profile == "x"


def test_recorder_writes_the_right_series() -> None:
    m = SchedulerMetrics(process_metrics=False)
    rec = ProfileRecorder(m, "gpu")
    rec.plugin_duration("Filter", "NodeAffinity", Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 0.00002)
    rec.plugin_duration("Filter", "NodeAffinity", Code.SUCCESS, 0.00002)
    rec.plugin_duration("Filter", "NodeAffinity", Code.SUCCESS, 0.00002)
    rec.point_duration("PreFilter", Code.SKIP, 0.0003)
    rec.plugin_error("Bind", "CustomBinder")

    plugin = "scheduler_plugin_execution_duration_seconds_count"
    base = {"plugin": "NodeAffinity", "extension_point": "Filter"}
    assert m.sample(plugin, {**base, "status": "Success"}) == 2.0
    assert m.sample(plugin, {**base, "status": "UnschedulableAndUnresolvable"}) == 1.0
    point = "scheduler_framework_extension_point_duration_seconds_count"
    point_labels = {"extension_point": "PreFilter", "status": "Skip", "profile": "gpu"}
    assert m.sample(point, point_labels) == 1.0
    err_labels = {"plugin": "CustomBinder", "extension_point": "Bind", "profile": "gpu"}
    assert m.sample("scheduler_plugin_errors_total", err_labels) == 1.0


def test_recorder_resolves_each_series_once(monkeypatch: pytest.MonkeyPatch) -> None:
    m = SchedulerMetrics(process_metrics=False)
    calls: list[tuple[str, ...]] = []
    for attr in ("plugin_execution_duration", "framework_extension_point_duration"):
        metric = getattr(m, attr)
        original = metric.labels

        def counting(*values: str, _original: Any = original) -> Any:
            calls.append(values)
            return _original(*values)

        monkeypatch.setattr(metric, "labels", counting)
    rec = m.recorder("default")
    for _ in range(500):
        rec.plugin_duration("Score", "ImageLocality", Code.SUCCESS, 0.0001)
        rec.plugin_duration("Score", "ImageLocality", Code.ERROR, 0.0001)
        rec.point_duration("Score", Code.SUCCESS, 0.001)
    assert len(calls) == 3
    labels = {"plugin": "ImageLocality", "extension_point": "Score", "status": "Success"}
    assert m.sample("scheduler_plugin_execution_duration_seconds_count", labels) == 500.0


def test_recorder_warm_creates_zero_series() -> None:
    m = SchedulerMetrics(process_metrics=False)
    m.recorder("default").warm([("Filter", "NodePorts")])
    labels = {"plugin": "NodePorts", "extension_point": "Filter", "status": "Success"}
    assert m.sample("scheduler_plugin_execution_duration_seconds_count", labels) == 0.0


def test_profiles_share_plugin_series_but_not_point_series() -> None:
    # kube's plugin histogram has no profile label; the point histogram does.
    m = SchedulerMetrics(process_metrics=False)
    for profile in ("a", "b"):
        rec = m.recorder(profile)
        rec.plugin_duration("Filter", "P", Code.SUCCESS, 0.001)
        rec.point_duration("Filter", Code.SUCCESS, 0.001)
    labels = {"plugin": "P", "extension_point": "Filter", "status": "Success"}
    assert m.sample("scheduler_plugin_execution_duration_seconds_count", labels) == 2.0
    point = "scheduler_framework_extension_point_duration_seconds_count"
    for profile in ("a", "b"):
        labels = {"extension_point": "Filter", "status": "Success", "profile": profile}
        assert m.sample(point, labels) == 1.0


# -- with the real framework runner -------------------------------------------------


class RejectOdd:
    """Rejects every other node; raises for a pod named "bad"."""

    @hookimpl
    def filter(self, state: Any, pod: Any, nodes: Any) -> FilterResult:
        if pod.name == "bad":
            raise RuntimeError("kaput")
        mask = np.array([i % 2 == 1 for i in range(len(nodes))], dtype=bool)
        return FilterResult(len(nodes)).reject(mask, "odd node")


def _framework(recorder: FrameworkRecorder) -> Framework:
    manager = SchedulerPluginManager()
    plugin = RejectOdd()
    manager.register(plugin, name="RejectOdd")
    hooks = manager.hooks_of(plugin)
    order = {
        point: [("RejectOdd", 1)] if hook in hooks else [] for point, hook in POINT_HOOKS.items()
    }
    return Framework("default-scheduler", manager, order, recorder=recorder)


def _pod(name: str) -> PodInfo:
    return PodInfo.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c"}]},
        }
    )


def _table() -> NodeTable:
    table = NodeTable()
    for name in ("n1", "n2", "n3"):
        table.upsert_node(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        )
    return table


def test_framework_runner_feeds_the_recorder() -> None:
    m = SchedulerMetrics(process_metrics=False)
    fw = _framework(m.recorder("default-scheduler"))
    nodes = _table().all_nodes()
    assert fw.run_filter(CycleState(), _pod("good"), nodes).status.is_success()
    assert fw.run_filter(CycleState(), _pod("bad"), nodes).status.code is Code.ERROR

    plugin = "scheduler_plugin_execution_duration_seconds_count"
    base = {"plugin": "RejectOdd", "extension_point": "Filter"}
    assert m.sample(plugin, {**base, "status": "Success"}) == 1.0
    assert m.sample(plugin, {**base, "status": "Error"}) == 1.0
    point = "scheduler_framework_extension_point_duration_seconds_count"
    ok = {"extension_point": "Filter", "status": "Success", "profile": "default-scheduler"}
    failed = {**ok, "status": "Error"}
    assert m.sample(point, ok) == 1.0
    assert m.sample(point, failed) == 1.0
    errors = {"plugin": "RejectOdd", "extension_point": "Filter", "profile": "default-scheduler"}
    assert m.sample("scheduler_plugin_errors_total", errors) == 1.0
