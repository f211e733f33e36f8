"""The batch workloads of ``bench perf`` (Coscheduling gangs, CapacityScheduling
quotas) and their peer, scheduler-plugins' own kube-scheduler built from Go modules.

The workload definitions and the measurements are checked on their own; the
tiny variants run end to end against the emulator with our daemon, and with the
peer too when its binary is already built (building it is not this test's
business: ``python -m scheduler.tools.schedulerplugins build``).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli.main import main as cli_main
from scheduler.tools import controlplane, schedulerplugins
from scheduler.tools.bench.perf import batch, report, runner, workloads
from tests.bench.perfrun import run_perf

# -- workload definitions ------------------------------------------------------------------


def test_gang_workload_sizes_and_objects() -> None:
    """100 gangs of 10 on 5,000 nodes (small: 50 on 500); one PodGroup per gang
    with minMember 10, members labelled, in order."""
    full = workloads.build("SchedulingGangs")
    small = workloads.build("SchedulingGangs", "small")
    assert (full.nodes, [p.count for p in full.phases]) == (5000, [1000, 1000])
    assert (small.nodes, [p.count for p in small.phases]) == (500, [500, 500])
    assert full.plugins == ("Coscheduling",)
    init, measured = full.phases
    assert init.gang_size is None and measured.gang_size == 10
    groups = [o for o in workloads.batch_objects(full) if o["kind"] == "PodGroup"]
    assert len(groups) == 100
    assert {g["spec"]["minMember"] for g in groups} == {10}
    assert {g["apiVersion"] for g in groups} == {"scheduling.x-k8s.io/v1alpha1"}
    pods = [group[0] for group in workloads.phase_objects(measured)]
    labels = [p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in pods]
    assert labels[:10] == ["gang-0000"] * 10 and labels[10] == "gang-0001"
    assert labels[-1] == "gang-0099"
    assert all("labels" not in g[0]["metadata"] for g in workloads.phase_objects(init))
    assert "100 gangs of 10" in full.describe()
    with pytest.raises(ValueError, match="multiple of 10"):
        workloads.build("SchedulingGangs", pods=25)


def test_quota_workload_quotas_and_admitted_pods() -> None:
    """Ten ElasticQuotas: even ones borrow above min and are capped by max (80 %
    of their demand), odd ones lend; 900 of 1,000 pods fit (small: 450 of 500)."""
    full = workloads.build("SchedulingElasticQuota")
    measured = full.phases[-1]
    assert (full.nodes, measured.count, measured.expected) == (5000, 1000, 900)
    assert workloads.build("SchedulingElasticQuota", "small").phases[-1].expected == 450
    assert measured.namespaces == tuple(f"quota-{i}" for i in range(10))
    even, odd = full.quotas[0], full.quotas[1]
    # 100 pods of 100m a namespace: demand 10 cpu.
    assert (even.min_milli_cpu, even.max_milli_cpu) == (5000, 8000)
    assert (odd.min_milli_cpu, odd.max_milli_cpu) == (15000, 20000)
    [quota] = [o for o in workloads.batch_objects(full) if o["kind"] == "ElasticQuota"][:1]
    assert quota["metadata"] == {"name": "quota", "namespace": "quota-0"}
    assert quota["spec"]["max"]["cpu"] == "8000m" and quota["spec"]["min"]["cpu"] == "5000m"
    namespaces = [o["metadata"]["name"] for o in workloads.batch_objects(full)]
    assert namespaces[:10] == list(measured.namespaces)
    pods = [group[0] for group in workloads.phase_objects(measured)]
    assert [p["metadata"]["namespace"] for p in pods[:11]] == [
        *measured.namespaces,
        "quota-0",
    ]
    # Uneven overrides still give an order-independent figure...
    # (55 pods: 6 or 5 a namespace; even ones fit 4 under a max of 80 %, odd ones all.)
    assert workloads.build("SchedulingElasticQuota", pods=55).phases[-1].expected == 47
    # ...and quotas whose aggregate min would bind are refused.
    tight = workloads.ElasticQuota("quota-0", 100, 1000, 10**12, 10**12)
    with pytest.raises(ValueError, match="aggregate min"):
        workloads.quota_admitted(10, [tight])


def test_batch_profiles_are_scheduler_plugins_documented_configs() -> None:
    gangs = workloads.scheduler_profile(workloads.build("SchedulingGangs"))
    assert gangs["plugins"] == {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
    }
    quota = workloads.scheduler_profile(workloads.build("SchedulingElasticQuota"))
    assert quota["plugins"] == {
        "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
        "postFilter": {"enabled": [{"name": "CapacityScheduling"}], "disabled": [{"name": "*"}]},
    }
    assert "plugins" not in workloads.scheduler_profile(workloads.build("SchedulingBasic"))
    assert set(workloads.BATCH_WORKLOADS).isdisjoint(workloads.DEFAULT_WORKLOADS)
    assert runner._workload_names(["batch"]) == list(workloads.BATCH_WORKLOADS)


def test_bad_gang_size_is_a_clear_error() -> None:
    with pytest.raises(SystemExit, match=r"SchedulingGangs: .*multiple of 10"):
        cli_main(["bench", "perf", "--workload", "SchedulingGangs", "--pods", "15"])


# -- measurements ------------------------------------------------------------------------


def _key(phase: workloads.Phase, i: int) -> str:
    return f"{phase.namespace_of(i)}/{workloads.pod_name(phase.name, i)}"


def test_a_gang_counts_when_its_last_member_binds() -> None:
    phase = workloads.Phase("measured", 30, "default", "sched-1", measure=True, gang_size=10)
    bound = {_key(phase, i): 1.0 + i * 0.01 for i in range(10)}  # gang 0 complete at 1.09
    bound |= {_key(phase, i): 2.0 for i in range(10, 20)}  # gang 1 complete at 2.0
    bound |= {_key(phase, i): 2.5 for i in range(20, 25)}  # gang 2: 5 of 10, partial
    times, figures = batch.gang_figures(phase, bound, start=0.5)
    assert sorted(times) == [1.09] * 10 + [2.0] * 10
    assert figures["complete"] == 2 and figures["partial"] == 1 and figures["gangs"] == 3
    assert figures["all_bound_seconds"] is None  # not every gang made it
    assert figures["member_span_ms_max"] == pytest.approx(90.0)
    bound |= {_key(phase, i): 3.0 for i in range(25, 30)}
    _, figures = batch.gang_figures(phase, bound, start=0.5)
    assert figures["partial"] == 0 and figures["all_bound_seconds"] == pytest.approx(2.5)


def _pod(namespace: str, name: str, cpu: str, memory: str = "500Mi") -> dict[str, Any]:
    return workloads.pod("default", name, namespace) | {
        "spec": {"containers": [{"resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    }


def test_quota_audit_catches_a_binding_over_max() -> None:
    quotas = workloads.elastic_quotas(20, 2)  # quota-0: max 800m; quota-1: max 2 cpu
    audit = batch.QuotaAudit(quotas)
    for i in range(8):
        audit.bound("quota-0", _pod("quota-0", f"p{i}", "100m"))
    audit.bound("sched-0", _pod("sched-0", "elsewhere", "4"))  # no quota: not counted
    assert audit.figures()["over_max_events"] == 0
    assert audit.figures()["peak_used_over_max"] == pytest.approx(1.0)
    audit.bound("quota-0", _pod("quota-0", "p8", "100m"))
    figures = audit.figures()
    assert figures["over_max_events"] == 1
    assert (
        "quota-0/p8" in figures["violations"][0] and "900m / max 800m" in figures["violations"][0]
    )
    assert figures["used_milli_cpu"] == {"quota-0": 900, "quota-1": 0}


def test_pod_requests_as_capacity_scheduling_counts_them() -> None:
    pod = _pod("ns", "p", "250m", "1Gi")
    pod["spec"]["containers"].append({"resources": {"requests": {"cpu": "250m"}}})
    pod["spec"]["initContainers"] = [{"resources": {"requests": {"cpu": "2"}}}]
    pod["spec"]["overhead"] = {"cpu": "10m", "memory": "1Mi"}
    assert batch.pod_requests(pod) == (2010, 2**30 + 2**20)


def test_report_names_the_peer_and_flags_broken_invariants() -> None:
    outcome = {
        "throughput": {"avg": 10.0},
        "scheduled": 19,
        "gangs": {"complete": 1, "partial": 1},
        "quota": {"over_max_events": 1, "violations": ["quota-0/p8 bound with ..."]},
    }
    result = {
        "workload": "SchedulingGangs",
        "backend": "emulator",
        "description": "d",
        "peer": "scheduler-plugins v0.35.4-devel",
        "schedulers": {"ours": outcome, "kube": outcome},
    }
    text = report.render_workload(result)
    assert "sched-plugins" in text and "scheduler-plugins v0.35.4-devel" in text
    assert "PARTIAL GANGS: 1" in text and "QUOTA EXCEEDED: quota-0/p8" in text


# -- the peer build -------------------------------------------------------------------


def test_peer_pin_is_scheduler_plugins_nearest_kube_136() -> None:
    """The pin is a scheduler-plugins release built on Kubernetes 1.35 (the newest
    before our control plane's 1.36), and its replace block selects the same
    Kubernetes for every k8s.io module, as the release's own go.mod does."""
    plugins, kubernetes = schedulerplugins.pinned_versions()
    assert plugins == "v0.35.4-devel" and kubernetes == "v1.35.4"
    control_plane = controlplane.pinned_versions()[0]
    assert control_plane.startswith("v1.36.")
    text = (schedulerplugins.MODULE_DIR / "go.mod").read_text()
    assert re.search(r"^tool sigs.k8s.io/scheduler-plugins/cmd/scheduler$", text, re.M)
    replaced = re.findall(r"^\s*(k8s\.io/\S+) => k8s\.io/\S+ (v\S+)$", text, re.M)
    assert len(replaced) > 20
    staging = {m: v for m, v in replaced if m != "k8s.io/legacy-cloud-providers"}
    assert set(staging.values()) == {"v0.35.4", "v1.35.4"}
    assert staging["k8s.io/kubernetes"] == "v1.35.4"
    assert (schedulerplugins.MODULE_DIR / "go.sum").stat().st_size > 0


def test_peer_binary_override_and_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "kube-scheduler"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv(schedulerplugins.BIN_ENV, str(fake))
    with pytest.raises(schedulerplugins.SchedulerPluginsBuildError, match="not an executable"):
        schedulerplugins.ensure_binary()
    fake.chmod(0o755)
    assert schedulerplugins.ensure_binary() == fake

    # No Go and nothing cached: the error says what is missing and how to get past it.
    monkeypatch.delenv(schedulerplugins.BIN_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GO", raising=False)
    monkeypatch.setattr(controlplane, "GO_CANDIDATES", ("no-such-go",))
    with pytest.raises(schedulerplugins.SchedulerPluginsBuildError) as error:
        schedulerplugins.ensure_binary()
    message = str(error.value)
    assert "scheduler-plugins v0.35.4-devel" in message and "Go toolchain" in message
    assert schedulerplugins.BIN_ENV in message
    assert schedulerplugins.main(["build"]) == 1


def test_peer_build_error_is_reported_per_scheduler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A peer that cannot be built fails only its own column, with the reason."""
    monkeypatch.setenv(schedulerplugins.BIN_ENV, str(tmp_path / "missing"))
    options = runner.Options(schedulers=("kube",), workdir=tmp_path)
    workload = workloads.build("SchedulingGangs", nodes=2, init_pods=0, pods=10)
    entry = runner.run_workload(workload, options, tmp_path)
    error = entry["schedulers"]["kube"]["error"]
    assert error.startswith("SchedulerPluginsBuildError") and "missing" in error
    assert entry["peer"] == "scheduler-plugins v0.35.4-devel"


def _peer_built() -> bool:
    return os.environ.get(schedulerplugins.BIN_ENV) is not None or os.access(
        schedulerplugins.binary_path(), os.X_OK
    )


def test_built_peer_is_kube_scheduler_of_the_pin() -> None:
    if not _peer_built():
        pytest.skip("scheduler-plugins' kube-scheduler is not built (schedulerplugins build)")
    import subprocess

    out = subprocess.run(
        [str(schedulerplugins.ensure_binary()), "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert out.strip() == f"Kubernetes {schedulerplugins.pinned_versions()[1]}"


# -- end to end, tiny ----------------------------------------------------------------------


def _run_tiny(tmp_path: Path, workload: str, schedulers: str, pods: int) -> dict[str, Any]:
    data = run_perf(
        tmp_path,
        *("--workload", workload, "--nodes", "20", "--init-pods", "10", "--pods", str(pods)),
        schedulers=schedulers,
    )
    [result] = data["results"]
    assert sorted(result["schedulers"]) == sorted(schedulers.split(","))
    return dict(result)


def test_tiny_gang_workload_end_to_end(tmp_path: Path) -> None:
    """4 gangs of 10: every gang complete, none partial, throughput counted per gang."""
    schedulers = "ours,kube" if _peer_built() else "ours"
    result = _run_tiny(tmp_path, "SchedulingGangs", schedulers, 40)
    assert result["params"]["plugins"] == ["Coscheduling"]
    for kind, outcome in result["schedulers"].items():
        assert "error" not in outcome, (kind, outcome)
        assert (outcome["expected"], outcome["scheduled"], outcome["incomplete"]) == (40, 40, False)
        gangs = outcome["gangs"]
        assert (gangs["gangs"], gangs["complete"], gangs["partial"]) == (4, 4, 0), kind
        assert 0 < gangs["all_bound_seconds"] < 60
        assert outcome["throughput"]["avg"] > 0
        # Every pod's offset is its gang's completion: ten equal offsets per gang.
        offsets = outcome["bound_offsets"]
        assert len(offsets) == 40 and len(set(offsets)) <= 4


def test_tiny_quota_workload_end_to_end(tmp_path: Path) -> None:
    """100 pods over 10 quotas: exactly the 90 within max are bound, and no quota's
    used ever exceeded its max, for each scheduler that can run it here."""
    schedulers = []
    if importlib.util.find_spec("scheduler_plugin_capacityscheduling") is not None:
        schedulers.append("ours")
    if _peer_built():
        schedulers.append("kube")
    if not schedulers:
        pytest.skip("neither CapacityScheduling distribution nor the peer binary available")
    result = _run_tiny(tmp_path, "SchedulingElasticQuota", ",".join(schedulers), 100)
    for kind, outcome in result["schedulers"].items():
        assert "error" not in outcome, (kind, outcome)
        assert (outcome["expected"], outcome["scheduled"], outcome["incomplete"]) == (90, 90, False)
        quota = outcome["quota"]
        assert quota["over_max_events"] == 0, (kind, quota["violations"])
        assert quota["peak_used_over_max"] == pytest.approx(1.0)
        assert (
            quota["used_milli_cpu"]["quota-0"] == 800 and quota["used_milli_cpu"]["quota-1"] == 1000
        )
