"""The perf harness end to end on a tiny workload: the report's shape, never its timings.

Runs ``pluggable-scheduler bench perf`` on 20 nodes and 30 measured pods
against the emulator (in its own process), with our daemon as a separate
process; kube-scheduler joins only when its binary is already built (building
it takes many minutes and is not this test's business).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scheduler.bench.perf import report, runner, workloads
from scheduler.cli.main import main as cli_main
from scheduler.testing import controlplane


def _kube_scheduler_built() -> bool:
    override = os.environ.get(controlplane.BIN_DIR_ENV)
    if override:
        bin_dir = Path(override)
    else:
        kubernetes, etcd = controlplane.pinned_versions()
        bin_dir = controlplane.cache_root() / f"{kubernetes}-{etcd}" / "bin"
    return os.access(bin_dir / controlplane.KUBE_SCHEDULER_BINARY, os.X_OK)


def test_tiny_workload_report_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schedulers = "ours,kube" if _kube_scheduler_built() else "ours"
    out = tmp_path / "report.json"
    code = cli_main(
        [
            "bench",
            "perf",
            "--workload",
            "SchedulingBasic",
            "--nodes",
            "20",
            "--init-pods",
            "10",
            "--pods",
            "30",
            "--schedulers",
            schedulers,
            "--timeout",
            "60",
            "--output",
            "json",
            "--json-file",
            str(out),
            "--workdir",
            str(tmp_path / "work"),
        ]
    )
    printed = json.loads(capsys.readouterr().out)
    data = json.loads(out.read_text())
    assert printed == data
    assert code == 0, data
    assert set(data) >= {"machine", "scale", "backend", "schedulers", "results"}
    assert data["backend"] == "emulator"
    assert {"nproc", "cpu_model", "memory_gib"} <= set(data["machine"])
    [result] = data["results"]
    assert result["workload"] == "SchedulingBasic"
    assert result["params"]["nodes"] == 20
    assert sorted(result["schedulers"]) == sorted(schedulers.split(","))
    for outcome in result["schedulers"].values():
        assert "error" not in outcome, outcome
        assert outcome["expected"] == 30
        assert outcome["scheduled"] == 30
        assert outcome["incomplete"] is False
        assert set(outcome["throughput"]) == {"avg", "p50", "p90", "p99"}
        assert outcome["throughput"]["avg"] > 0
        assert set(outcome["latency_ms"]) == {"avg", "p50", "p90", "p99"}
        process = outcome["process"]
        assert process["cpu_seconds"] > 0
        assert process["peak_rss_mib"] > 0
        assert outcome["algorithm_ms"]["count"] >= 30
    text = report.render(data)
    assert "SchedulingBasic" in text and "throughput avg" in text


def test_throughput_samples_follow_scheduler_perf() -> None:
    """Ticks at 1, 2, 3, ... s: the first tick seeing pods is the baseline, empty
    intervals are merged into the next sample, pods after the last tick are dropped."""
    times = [0.5] * 3 + [1.5] * 10 + [3.5] * 20 + [4.2] * 7 + [4.9] * 100
    samples = report.throughput_samples(0.0, times)
    # tick 1: baseline (3 pods); tick 2: +10; tick 3: nothing (skipped);
    # tick 4: +20 over 2 s, recorded twice; the 107 pods after tick 4 fall in no sample.
    assert samples == [10.0, 10.0, 10.0]
    summary = report.summarize(samples)
    assert summary["avg"] == 10.0 and summary["p99"] == 10.0
    assert report.throughput_samples(0.0, [0.2, 0.9, 1.5]) == []  # too short to measure
    assert report.throughput_samples(0.0, [2.5, 2.6, 3.5, 5.5], end=6.0) == [1.0, 0.5, 0.5]


def test_histogram_quantile_interpolates_within_buckets() -> None:
    text = "\n".join(
        [
            'x_bucket{le="0.001"} 50',
            'x_bucket{le="0.002"} 100',
            'x_bucket{le="+Inf"} 100',
        ]
    )
    buckets = report.histogram(text, "x")
    assert report.histogram_quantile(0.5, buckets) == pytest.approx(0.001)
    assert report.histogram_quantile(0.75, buckets) == pytest.approx(0.0015)


def test_workloads_match_scheduler_perf_sizes() -> None:
    basic = workloads.build("SchedulingBasic")
    assert basic.nodes == 5000
    assert [p.count for p in basic.phases] == [1000, 10000]
    assert workloads.build("PreemptionBasic").nodes == 500
    memory = workloads.build("Memory")
    assert (memory.nodes, memory.bound_pods) == (5000, 150000)
    small = workloads.build("SchedulingBasic", "small")
    assert small.nodes == 500
    unschedulable = workloads.build("Unschedulable")
    assert unschedulable.phases[0].wait is False


def test_proc_sample_reads_this_process() -> None:
    sample = runner.proc_sample(os.getpid())
    assert sample is not None
    assert sample.cpu_seconds > 0 and sample.peak_rss_mib >= sample.rss_mib > 0


def test_bench_command_reports_a_missing_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "no-such-bench"]) == 1
    assert "unknown benchmark" in capsys.readouterr().err


# -- the volume workloads ----------------------------------------------------------------


def test_volume_workloads_match_scheduler_perf() -> None:
    """Sizes of the 5000Nodes / 500Nodes variants (PreemptionPVs: 1000Nodes), which
    phases carry volumes, and the CSINodes of volumes/performance-config.yaml."""
    assert set(workloads.VOLUME_WORKLOADS) <= set(workloads.DEFAULT_WORKLOADS)
    for name in ("SchedulingInTreePVs", "SchedulingMigratedInTreePVs", "SchedulingCSIPVs"):
        full = workloads.build(name)
        assert (full.nodes, *(p.count for p in full.phases)) == (5000, 5000, 1000)
        small = workloads.build(name, "small")
        assert (small.nodes, *(p.count for p in small.phases)) == (500, 500, 1000)
        assert all(p.volume for p in full.phases)
    assert workloads.build("SchedulingInTreePVs").csi_nodes is None
    migrated = workloads.build("SchedulingMigratedInTreePVs").csi_nodes
    assert migrated is not None and migrated.migrated_plugins == ("kubernetes.io/aws-ebs",)
    csi = workloads.build("SchedulingCSIPVs")
    assert csi.csi_nodes is not None and csi.csi_nodes.migrated_plugins == ()
    assert [p.volume for p in csi.phases] == ["csi", "csi"]
    preemption = workloads.build("PreemptionPVs")
    assert (preemption.nodes, *(p.count for p in preemption.phases)) == (1000, 4000, 1000)
    assert [(p.template, p.volume) for p in preemption.phases] == [
        ("low-priority", None),
        ("high-priority", "aws"),
    ]


def test_volume_objects_are_bound_pairs_as_upstream_makes_them() -> None:
    phase = workloads.build("SchedulingCSIPVs", pods=2).phases[1]
    [pvc, pv, pod] = workloads.phase_objects(phase)[1]
    assert pvc["metadata"]["name"] == "pvc-1"
    assert pvc["metadata"]["annotations"] == {"pv.kubernetes.io/bind-completed": "true"}
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"] == "sched-1-vol-1"
    assert pv["spec"]["csi"] == {"driver": "ebs.csi.aws.com", "volumeHandle": "sched-1-vol-1"}
    assert pv["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "sched-1",
        "name": "pvc-1",
        "apiVersion": "v1",
    }
    assert pv["status"] == pvc["status"] == {"phase": "Bound"}
    claim = {"claimName": "pvc-1"}
    assert pod["spec"]["volumes"] == [{"name": "vol", "persistentVolumeClaim": claim}]
    aws = workloads.persistent_volume("aws", "sched-0", 7)
    assert aws["spec"]["awsElasticBlockStore"] == {"volumeID": "vol-7"}  # not prefixed upstream
    [csi_node] = workloads.csi_nodes(workloads.build("SchedulingMigratedInTreePVs", nodes=1))
    assert csi_node["metadata"] == {
        "name": workloads.node_name(0),
        "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"},
    }
    assert csi_node["spec"]["drivers"] == [
        {"name": "ebs.csi.aws.com", "nodeID": workloads.node_name(0), "allocatable": {"count": 39}}
    ]


async def test_volume_objects_are_valid_on_the_emulator() -> None:
    """The emulator validates storage objects as kube-apiserver does (422 on
    invalid): every volume workload's objects, created with the harness's own
    client (status writes included), end up Bound."""
    from scheduler.emulator import EmulatorServer

    for name in workloads.VOLUME_WORKLOADS:
        workload = workloads.build(name, nodes=3, init_pods=2, pods=2)
        server = EmulatorServer(workloads.preloaded_objects(workload), record_requests=False)
        await server.start()
        api = runner.Api(runner.ApiServer(server.url, Path(os.devnull)), 4)
        try:
            for phase in workload.phases:
                await api.create_groups(workloads.phase_objects(phase), 4)
            pvs = (await api.request("GET", "/api/v1/persistentvolumes"))["items"]
            pvcs = (await api.request("GET", "/api/v1/persistentvolumeclaims"))["items"]
            csi_nodes = (await api.request("GET", "/apis/storage.k8s.io/v1/csinodes"))["items"]
        finally:
            await api.close()
            await server.stop()
        with_volumes = sum(p.count for p in workload.phases if p.volume)
        assert len(pvs) == len(pvcs) == with_volumes, name
        assert {o["status"]["phase"] for o in pvs + pvcs} == {"Bound"}, name
        assert len(csi_nodes) == (3 if workload.csi_nodes else 0), name


def test_tiny_volume_workload_runs_on_ours(tmp_path: Path) -> None:
    """SchedulingMigratedInTreePVs end to end against our daemon only: migrated
    in-tree PVs counted against CSINode limits, every pod placed."""
    out = tmp_path / "report.json"
    code = cli_main(
        [
            "bench",
            "perf",
            *("--workload", "SchedulingMigratedInTreePVs"),
            *("--nodes", "10", "--init-pods", "10", "--pods", "20"),
            *("--schedulers", "ours", "--timeout", "60", "--output", "json"),
            *("--json-file", str(out), "--workdir", str(tmp_path / "work")),
        ]
    )
    data = json.loads(out.read_text())
    assert code == 0, data
    [result] = data["results"]
    assert result["params"]["csi_nodes"]["migrated_plugins"] == ["kubernetes.io/aws-ebs"]
    outcome = result["schedulers"]["ours"]
    assert "error" not in outcome, outcome
    assert (outcome["expected"], outcome["scheduled"], outcome["incomplete"]) == (20, 20, False)
