"""HeteroBasic, the 15k and 65k scales and the harness's progress lines (issue #22).

The large scales run here shrunk with ``--nodes/--init-pods/--pods``: what is
checked is that the workloads and the harness paths they take work end to
end, never how fast.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from scheduler.tools.bench.perf import progress, report, runner, workloads
from scheduler.tools.bench.perf.workloads import Workload
from tests.bench.perfrun import run_perf

LARGE = ("15k", "65k")
LARGE_WORKLOADS = {
    "SchedulingBasic",
    "HeteroBasic",
    "SchedulingPodAntiAffinity",
    "TopologySpreading",
    "SchedulingCSIPVs",
    "SchedulingWithResourceClaimTemplate",
}


def _pods(workload: Workload) -> list[dict[str, object]]:
    return [
        obj
        for phase in workload.phases
        for group in workloads.phase_objects(phase)
        for obj in group
        if obj["kind"] == "Pod"
    ]


def _requests(pod: dict[str, object]) -> tuple[str, str]:
    [container] = pod["spec"]["containers"]  # type: ignore[index]
    requests = container["resources"]["requests"]
    assert container["resources"]["limits"] == requests  # as pod-default.yaml
    return requests["cpu"], requests["memory"]


@pytest.mark.parametrize("scale", ["full", *LARGE])
def test_hetero_basic_pods_are_all_different(scale: str) -> None:
    """Every pod of the workload, init and measured, has its own labels and its own
    cpu/memory pair (so no two could share a batch), and the largest fits a node."""
    workload = workloads.build("HeteroBasic", scale)
    basic = workloads.build("SchedulingBasic", scale)
    assert workload.nodes == basic.nodes
    assert [p.count for p in workload.phases] == [p.count for p in basic.phases]
    assert [p.namespace for p in workload.phases] == [p.namespace for p in basic.phases]
    pods = _pods(workload)
    assert len(pods) == sum(p.count for p in workload.phases)
    ids = {p["metadata"]["labels"][workloads.HETERO_LABEL] for p in pods}  # type: ignore[index]
    assert len(ids) == len(pods)
    apps = {p["metadata"]["labels"]["app"] for p in pods}  # type: ignore[index]
    assert apps == {f"hetero-{i}" for i in range(workloads.HETERO_APPS)}
    pairs = {_requests(p) for p in pods}
    assert len(pairs) == len(pods)
    cpus = {workloads.hetero_requests(i)[0] for i in range(len(pods))}
    assert len(cpus) == min(len(pods), workloads.HETERO_CPU_STEPS)  # varied, not a ramp of 1
    milli, mebi = max(workloads.hetero_requests(i) for i in range(len(pods)))
    assert milli < 4000 and mebi < 32 * 1024  # node-default.yaml: 4 cpu, 32Gi


def test_hetero_basic_is_the_same_for_both_schedulers() -> None:
    """The pods come from their numbers alone: two builds give the same objects."""
    assert _pods(workloads.build("HeteroBasic", "small")) == _pods(
        workloads.build("HeteroBasic", "small")
    )


def test_large_scales_cover_the_issue_workloads() -> None:
    for scale, nodes in zip(LARGE, (15000, 65000), strict=True):
        assert set(workloads.SCALES[scale]) - {"Memory"} == LARGE_WORKLOADS
        for name in LARGE_WORKLOADS:
            workload = workloads.build(name, scale)
            full = workloads.build(name, "full")
            assert workload.nodes == nodes, (scale, name)
            # The 5000Nodes variant's pods: only the cluster grows.
            assert [p.count for p in workload.phases] == [p.count for p in full.phases]
        assert set(runner._workload_names(["all"], scale)) == LARGE_WORKLOADS
        assert runner._workload_names(["volumes", "dra"], scale) == [
            "SchedulingCSIPVs",
            "SchedulingWithResourceClaimTemplate",
        ]
    memory = workloads.build("Memory", "65k")
    assert (memory.nodes, memory.bound_pods, memory.memory_only) == (65000, 200000, True)
    assert workloads.node_name(64999) == "perf-node-64999"
    dra = workloads.build("SchedulingWithResourceClaimTemplate", "65k").dra
    assert dra is not None and dra.devices_per_node == 10


def test_a_workload_without_a_large_variant_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no 15k variant of Unschedulable; 15k has: "):
        workloads.build("Unschedulable", "15k")
    with pytest.raises(SystemExit, match="bench perf: PreemptionBasic: no 65k variant"):
        runner.main(["--scale", "65k", "--workload", "PreemptionBasic"])
    with pytest.raises(SystemExit, match="no workload of batch has a 15k variant"):
        runner.parse_args(["--scale", "15k", "--workload", "batch"])


def test_progress_lines_are_throttled_and_skip_short_phases() -> None:
    out = io.StringIO()
    line = progress.Progress("creating nodes", 65000, interval=0.0, stream=out)
    line.update(1000)
    line.update(2000)
    line.finish(65000)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[perf]   creating nodes ... 1,000/65,000 in ")
    assert lines[1].startswith("[perf]   creating nodes ... 2,000/65,000 in ")
    assert lines[2].startswith("[perf]   creating nodes done: 65,000/65,000 in ")
    throttled = io.StringIO()
    slow = progress.Progress("creating nodes", 65000, interval=3600.0, stream=throttled)
    slow.update(1)
    slow.finish(65000)  # a phase shorter than one interval prints nothing at all
    assert throttled.getvalue() == ""


def _result(name: str, nodes: int, ours: Any, kube: Any) -> dict[str, Any]:
    schedulers = {"ours": ours, "kube": kube}
    return {"workload": name, "params": {"nodes": nodes}, "schedulers": schedulers}


def test_targets_follow_the_cluster_size() -> None:
    """Issue #22: >= 2.0 at 15k nodes, >= 1.5 at 65k, attempt p50 <= kube's there,
    and at 65k the Memory workload's RSS against kube-scheduler's."""
    ours = {"throughput": {"avg": 300.0}, "attempt_ms": {"p50_ms": 9.0}}
    kube = {"throughput": {"avg": 170.0}, "attempt_ms": {"p50_ms": 6.0}}
    assert report.target_verdicts(_result("HeteroBasic", 5000, ours, kube)) == [
        "HeteroBasic: throughput ours/kube 1.76 (target >= 0.8): met"
    ]
    assert report.target_verdicts(_result("HeteroBasic", 15000, ours, kube)) == [
        "HeteroBasic: throughput ours/kube 1.76 (target >= 2.0): MISSED",
        "HeteroBasic: attempt p50 9.00 ms (target <= kube-scheduler's 6.00 ms): MISSED",
    ]
    assert report.target_verdicts(_result("HeteroBasic", 65000, ours, kube))[0].endswith(
        "(target >= 1.5): met"
    )
    memory = _result(
        "Memory",
        65000,
        {"process": {"rss_after_sync_mib": 900.0}},
        {"process": {"rss_after_sync_mib": 1800.0}},
    )
    assert report.target_verdicts(memory) == [
        "Memory: RSS after sync 900 MiB (target <= kube-scheduler's 1800 MiB): met"
    ]


def test_tiny_hetero_basic_at_the_15k_scale_runs_on_ours(tmp_path: Path) -> None:
    data = run_perf(
        tmp_path,
        *("--scale", "15k", "--workload", "HeteroBasic"),
        *("--nodes", "20", "--init-pods", "10", "--pods", "40"),
    )
    assert data["scale"] == "15k"
    [result] = data["results"]
    assert result["workload"] == "HeteroBasic"
    assert [p["index_base"] for p in result["params"]["phases"]] == [0, 10]
    outcome = result["schedulers"]["ours"]
    assert "error" not in outcome, outcome
    assert (outcome["expected"], outcome["scheduled"], outcome["incomplete"]) == (40, 40, False)
    assert outcome["algorithm_ms"]["count"] >= 40


def test_tiny_memory_workload_at_the_65k_scale_reports_rss(tmp_path: Path) -> None:
    data = run_perf(
        tmp_path, *("--scale", "65k", "--workload", "Memory", "--nodes", "10", "--init-pods", "300")
    )
    [result] = data["results"]
    assert (result["params"]["nodes"], result["params"]["bound_pods"]) == (10, 300)
    process = result["schedulers"]["ours"]["process"]
    assert process["rss_after_sync_mib"] > 0 and process["peak_rss_mib"] > 0
