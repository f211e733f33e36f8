"""``explain`` in-process: one cycle on examples/explain-cluster.yaml, reported per plugin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from scheduler.api import CycleState, hookimpl
from scheduler.api.results import Diagnosis, PostFilterResult
from scheduler.api.status import Status
from scheduler.cli.explain_cmd import load_pod_file, render_text
from scheduler.cli.main import main
from scheduler.config import load_config
from scheduler.config.loading import DEFAULT_CONFIG
from scheduler.errors import UserError
from scheduler.framework.explain import explain
from scheduler.framework.loader import PluginCatalog
from scheduler.simulation.emulator.clusterfile import load_cluster_file
from scheduler.state.pod import PodInfo

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "explain-cluster.yaml"
POD = ROOT / "examples" / "explain-pod.yaml"
FEASIBLE = ["node-b1", "node-b2", "node-b3"]
TIED = ["node-b1", "node-b2"]


@pytest.fixture(scope="module")
def catalog() -> PluginCatalog:
    return PluginCatalog.discover()


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["explain", "--cluster", str(CLUSTER), "--output", "json", *args])
    out = capsys.readouterr().out
    assert code == 0, out
    data: dict[str, Any] = json.loads(out)
    return data


def small_pod(name: str, **spec: Any) -> dict[str, Any]:
    containers = [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"containers": containers, **spec},
    }


def test_json_reports_feasible_set_scores_and_ties(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--pod", str(POD))
    assert data["pod"] == "shop/web-4"
    assert data["profile"] == "pluggable-scheduler"
    assert data["feasible"] == FEASIBLE
    assert data["tied"] == TIED
    assert data["node"] in TIED
    assert data["message"] == f"Successfully assigned shop/web-4 to {data['node']}"
    assert data["summary"] == {"nodes": 8, "evaluated": 8, "feasible": 3}
    # Feasible first, best total first; then the rejected nodes.
    assert list(data["nodes"])[:3] == FEASIBLE
    assert set(data["nodes"]) == {
        *FEASIBLE,
        "node-a1",
        "node-a2",
        "node-c1",
        "node-c2",
        "gpu-1",
    }

    weights = {p["name"]: p["weight"] for p in data["score_plugins"] if not p["skipped"]}
    assert {"TaintToleration", "NodeResourcesFit", "NodeResourcesBalancedAllocation"} <= set(
        weights
    )
    assert weights["TaintToleration"] == 3
    totals = {}
    for name in FEASIBLE:
        node = data["nodes"][name]
        assert node["feasible"] is True and node["rejected_by"] is None
        assert set(node["score"]) == set(weights)
        for plugin, s in node["score"].items():
            assert s["weighted"] == s["normalized"] * weights[plugin]
            assert 0 <= s["normalized"] <= 100
        assert node["total"] == sum(s["weighted"] for s in node["score"].values())
        assert all(v["code"] in ("Success", "Skip") for v in node["filter"].values())
        assert list(node["filter"]) == data["filter_plugins"]
        totals[name] = node["total"]
    assert totals["node-b1"] == totals["node-b2"] > totals["node-b3"]
    # node-b3's PreferNoSchedule taint costs it the whole TaintToleration score.
    assert data["nodes"]["node-b3"]["score"]["TaintToleration"]["weighted"] == 0
    assert data["nodes"]["node-b1"]["score"]["TaintToleration"]["weighted"] == 300
    # Empty 4-cpu/16Gi node, pod asks 1 cpu/2Gi: LeastAllocated (75 + 87.5) / 2.
    assert data["nodes"]["node-b1"]["score"]["NodeResourcesFit"]["raw"] == 81


@pytest.mark.parametrize(
    ("node", "plugin", "code", "reasons"),
    [
        ("gpu-1", "TaintToleration", "UnschedulableAndUnresolvable", ["untolerated taint"]),
        ("node-c2", "NodeAffinity", "UnschedulableAndUnresolvable", ["node affinity"]),
        # More than the node allocates at all: kube 1.36 says no eviction can help.
        (
            "node-c1",
            "NodeResourcesFit",
            "UnschedulableAndUnresolvable",
            ["Insufficient cpu", "memory"],
        ),
        ("node-a1", "PodTopologySpread", "Unschedulable", ["topology spread"]),
        ("node-a2", "PodTopologySpread", "Unschedulable", ["topology spread"]),
    ],
)
def test_json_filter_verdicts_name_the_rejecting_plugin(
    capsys: pytest.CaptureFixture[str], node: str, plugin: str, code: str, reasons: list[str]
) -> None:
    data = run_json(capsys, "--pod", str(POD))
    report = data["nodes"][node]
    assert report["feasible"] is False
    assert report["rejected_by"] == plugin
    assert report["total"] is None and report["score"] == {}
    verdicts = report["filter"]
    # Only the plugins that saw the node: the ones it passed, then the rejecter.
    assert list(verdicts)[-1] == plugin
    order = data["filter_plugins"]
    assert list(verdicts) == order[: order.index(plugin) + 1]
    assert all(v["code"] in ("Success", "Skip") for v in list(verdicts.values())[:-1])
    assert verdicts[plugin]["code"] == code
    text = " ".join(verdicts[plugin]["reasons"])
    for fragment in reasons:
        assert fragment in text


def test_insufficient_resources_lists_both_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--pod", str(POD))
    assert data["nodes"]["node-c1"]["filter"]["NodeResourcesFit"]["reasons"] == [
        "Insufficient cpu",
        "Insufficient memory",
    ]


def test_tie_break_only_picks_among_tied(catalog: PluginCatalog) -> None:
    objects = load_cluster_file(CLUSTER)
    pod = load_pod_file(POD)
    config = load_config(DEFAULT_CONFIG)
    picked = {explain(objects, pod, config, catalog, seed=s).node for s in range(12)}
    assert picked == set(TIED)


def test_text_output_has_table_rows_rejections_and_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "--cluster", str(CLUSTER), "--pod", str(POD)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines if line.startswith("  node-b")}
    assert set(rows) == set(FEASIBLE)
    # weighted TaintToleration, NodeResourcesFit, BalancedAllocation, ImageLocality, total;
    # BalancedAllocation scores the balance the pod adds, as kube-scheduler 1.36 does
    # (checked against the live kube-scheduler in tests/fidelity, scenario "resources").
    assert rows["node-b1"][1:6] == ["300", "81", "71", "0", "452"]
    assert rows["node-b3"][-1] == "102"
    table = [line for line in lines if line.startswith("  node-b")]
    assert [line.split()[0] for line in table][2] == "node-b3"  # best first
    assert any("tied" in rows[n][-1] or "tied" in " ".join(rows[n]) for n in TIED)
    assert "TT = TaintToleration x3" in out
    assert "Rejected nodes (5)" in out
    assert "PodTopologySpread: node(s) didn't match pod topology spread constraints" in out
    assert "2 nodes: node-a1, node-a2" in out
    assert (
        "NodeResourcesFit: Insufficient cpu; Insufficient memory [UnschedulableAndUnresolvable]"
        in out
    )
    assert "TaintToleration: node(s) had untolerated taint" in out
    verdict = [line for line in lines if line.startswith("Verdict:")]
    assert len(verdict) == 1
    assert "tied with" in verdict[0] and "at random" in verdict[0]


def test_nothing_fits_gives_failed_scheduling_message(
    catalog: PluginCatalog, tmp_path: Path
) -> None:
    objects = load_cluster_file(CLUSTER)
    raw = small_pod("huge")
    raw["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "64"}
    result = explain(objects, raw, load_config(DEFAULT_CONFIG), catalog)
    assert result.node is None and result.tied == []
    assert result.message.startswith(
        "0/8 nodes are available: 1 node(s) had untolerated taint(s), 7 Insufficient cpu."
    )
    data = result.to_json()
    assert data["node"] is None and data["feasible"] == []
    assert data["status"]["code"] == "Unschedulable"
    post = data["post_filter"]
    if "DefaultPreemption" in catalog.names():
        # Every pod has priority 0: nothing to preempt, and nothing was acted on.
        assert post["ran"] is True and post["nominated_node"] is None
    else:
        assert post["ran"] is False and "no PostFilter plugin" in post["explanation"]
    text = render_text(result)
    assert "Verdict: shop/huge cannot be scheduled: 0/8 nodes are available" in text
    assert "7 nodes: node-a1" in text


class _DryRunPreemption:
    """A PostFilter plugin that tries to use the API client, then nominates a node."""

    api_version: ClassVar[str] = "1.0"
    calls: ClassVar[list[str]] = []

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    @hookimpl
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> PostFilterResult:
        try:
            self.handle.client  # noqa: B018 - must not be available in explain
        except RuntimeError as err:
            self.calls.append(str(err))
        victims = sorted(diagnosis.node_verdicts)
        return PostFilterResult(Status.success(), victims[0])


def test_post_filter_runs_as_dry_run_without_client(catalog: PluginCatalog) -> None:
    merged = catalog.merged(PluginCatalog.from_classes({"DryRunPreemption": _DryRunPreemption}))
    config = load_config(
        {
            **DEFAULT_CONFIG,
            "profiles": [
                {
                    "schedulerName": "pluggable-scheduler",
                    "plugins": {"postFilter": {"enabled": [{"name": "DryRunPreemption"}]}},
                }
            ],
        }
    )
    raw = small_pod("huge")
    raw["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "64"}
    _DryRunPreemption.calls.clear()
    result = explain(load_cluster_file(CLUSTER), raw, config, merged)
    assert result.node is None
    assert result.post_filter is not None and result.post_filter.ran
    assert result.post_filter.nominated_node == "gpu-1"
    assert "would nominate node gpu-1" in result.post_filter.explanation
    assert _DryRunPreemption.calls and "no API client" in _DryRunPreemption.calls[0]


def test_unresolvable_everywhere_says_preemption_cannot_help(catalog: PluginCatalog) -> None:
    raw = small_pod("picky", nodeSelector={"disktype": "nvme"})
    result = explain(load_cluster_file(CLUSTER), raw, load_config(DEFAULT_CONFIG), catalog)
    assert result.node is None
    assert result.post_filter is not None
    if "DefaultPreemption" in catalog.names():
        assert result.post_filter.ran and result.post_filter.nominated_node is None
    else:
        assert "no PostFilter plugin" in result.post_filter.explanation
        assert "preemption could not help" in result.post_filter.explanation
    assert {r.rejected_by for r in result.nodes.values()} == {"TaintToleration", "NodeAffinity"}


def test_single_feasible_node_is_chosen_without_scores(catalog: PluginCatalog) -> None:
    raw = small_pod("pinned", nodeSelector={"kubernetes.io/hostname": "node-b3"})
    result = explain(load_cluster_file(CLUSTER), raw, load_config(DEFAULT_CONFIG), catalog)
    assert result.node == "node-b3" and result.tied == ["node-b3"]
    assert result.nodes["node-b3"].total is None
    assert any("scoring is skipped" in n for n in result.notes)


def test_bound_pod_with_same_name_is_not_counted_against_itself(catalog: PluginCatalog) -> None:
    # shop/web-1 runs on node-a1; explaining a pod of that name leaves it out.
    raw = small_pod("web-1")
    result = explain(load_cluster_file(CLUSTER), raw, load_config(DEFAULT_CONFIG), catalog)
    assert any("bound to node-a1" in n for n in result.notes)
    assert result.node is not None


def test_pending_pod_with_same_name_is_fine(catalog: PluginCatalog) -> None:
    objects = load_cluster_file(CLUSTER)
    assert any(o["metadata"]["name"] == "web-4" and "nodeName" not in o["spec"] for o in objects)
    result = explain(objects, load_pod_file(POD), load_config(DEFAULT_CONFIG), catalog)
    assert result.notes == []
    assert result.node in TIED


def test_broken_cluster_objects_are_skipped_with_the_reason(
    catalog: PluginCatalog, tmp_path: Path
) -> None:
    objects = load_cluster_file(CLUSTER)
    bad_node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-3"},
        "status": {"allocatable": {"cpu": "abc", "memory": "1Gi", "pods": "110"}},
    }
    bad_pod = small_pod("broken", nodeName="node-b1")
    bad_pod["spec"]["containers"][0]["resources"]["requests"] = {"memory": "12xb"}
    result = explain(
        [*objects, bad_node, bad_pod], load_pod_file(POD), load_config(DEFAULT_CONFIG), catalog
    )
    assert result.feasible == FEASIBLE
    assert [(s.kind, s.name) for s in result.skipped] == [
        ("Node", "node-3"),
        ("Pod", "shop/broken"),
    ]
    assert result.skipped[0].reason.startswith(
        'node node-3: status.allocatable.cpu: invalid quantity "abc"'
    )
    assert result.skipped[1].reason.startswith('pod shop/broken: container "c" requests.memory')
    assert "node-3" not in result.nodes
    text = render_text(result)
    assert 'node node-3: status.allocatable.cpu: invalid quantity "abc"' in text


def test_unknown_profile_lists_the_profiles(catalog: PluginCatalog) -> None:
    raw = small_pod("other", schedulerName="default-scheduler")
    with pytest.raises(UserError) as info:
        explain(load_cluster_file(CLUSTER), raw, load_config(DEFAULT_CONFIG), catalog)
    assert "no profile named 'default-scheduler'" in info.value.render()
    assert "pluggable-scheduler" in info.value.render()
    result = explain(
        load_cluster_file(CLUSTER),
        raw,
        load_config(DEFAULT_CONFIG),
        catalog,
        profile_name="pluggable-scheduler",
    )
    assert result.profile == "pluggable-scheduler"


def test_priority_class_name_is_resolved_from_the_cluster_file(catalog: PluginCatalog) -> None:
    objects = [
        *load_cluster_file(CLUSTER),
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    ]
    config = load_config(DEFAULT_CONFIG)
    result = explain(objects, small_pod("vip", priorityClassName="high"), config, catalog)
    assert "spec.priority=1000 from PriorityClass high" in result.notes
    with pytest.raises(UserError, match="no PriorityClass named 'nope'"):
        explain(objects, small_pod("vip", priorityClassName="nope"), config, catalog)


class _BrokenScore:
    """A Score plugin that always raises."""

    api_version: ClassVar[str] = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: Any) -> Any:
        raise ZeroDivisionError("scores divided by zero")


def test_time_per_plugin_and_ignored_failures_in_json_and_text(
    catalog: PluginCatalog,
) -> None:
    merged = catalog.merged(PluginCatalog.from_classes({"BrokenScore": _BrokenScore}))
    config = load_config(
        {
            **DEFAULT_CONFIG,
            "profiles": [
                {
                    "schedulerName": "pluggable-scheduler",
                    "plugins": {"score": {"enabled": [{"name": "BrokenScore"}]}},
                    "pluggableScheduler": {"failurePolicy": {"BrokenScore": "Ignore"}},
                }
            ],
        }
    )
    result = explain(load_cluster_file(CLUSTER), load_pod_file(POD), config, merged)
    assert result.node in TIED  # the broken plugin had no say
    times = {(t.point, t.plugin): t.seconds for t in result.plugin_times}
    assert times[("Filter", "NodeResourcesFit")] > 0
    assert ("Score", "BrokenScore") in times
    assert [t.seconds for t in result.plugin_times] == sorted(times.values(), reverse=True)
    data = result.to_json()
    assert data["ignored_failures"] == [
        {
            "extension_point": "Score",
            "plugin": "BrokenScore",
            "reason": "error",
            "message": "running Score plugin 'BrokenScore': ZeroDivisionError: "
            "scores divided by zero",
        }
    ]
    assert {"extension_point", "plugin", "seconds"} == set(data["plugin_times"][0])
    assert next(p for p in data["score_plugins"] if p["name"] == "BrokenScore")["skipped"]
    text = render_text(result)
    assert "Left out of this decision (failurePolicy Ignore):" in text
    assert "  BrokenScore at Score (error): running Score plugin 'BrokenScore'" in text
    assert "Time per plugin in this cycle (" in text
    assert "PLUGIN" in text and "SHARE" in text


def test_explain_with_percentage_set_stops_filtering_as_kube_does(
    catalog: PluginCatalog,
) -> None:
    """300 nodes, one in three too small for the pod, percentageOfNodesToScore 40: Filter
    runs from the first node until 120 feasible nodes are found (kube's
    numFeasibleNodesToFind), so 180 nodes are evaluated and the rest are not."""
    nodes: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n-{i:03d}", "labels": {"kubernetes.io/hostname": f"n-{i:03d}"}},
            "status": {"allocatable": {"cpu": "1" if i % 3 == 2 else "8", "pods": "110"}},
        }
        for i in range(300)
    ]
    pod = small_pod("sampled")
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    config = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 40,
        }
    )
    result = explain(nodes, pod, config, catalog)
    assert (result.evaluated_nodes, result.feasible_nodes) == (179, 120)
    evaluated = [name for name, report in result.nodes.items() if report.evaluated]
    assert sorted(evaluated) == [f"n-{i:03d}" for i in range(179)]
    assert sum(report.scored for report in result.nodes.values()) == 120
    assert (
        "percentageOfNodesToScore: Filter stopped once 120 feasible nodes were found; "
        "121 of 300 nodes were not evaluated"
    ) in result.notes
    # Unset (ours): every node of a cluster this size is filtered and scored.
    unset = explain(nodes, pod, load_config(DEFAULT_CONFIG), catalog)
    assert (unset.evaluated_nodes, unset.feasible_nodes) == (300, 200)
    assert not any("percentageOfNodesToScore" in note for note in unset.notes)
