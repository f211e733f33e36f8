"""Decision recording rotates into files that each replay on their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scheduler.config import load_config
from scheduler.config.loading import DEFAULT_CONFIG
from scheduler.engine.recording import DecisionRecorder
from scheduler.engine.replay import replay
from scheduler.framework.cycle import Algorithm
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import build_profiles
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo


def node(i: int) -> dict[str, Any]:
    alloc = {"cpu": str(2 + i % 3), "memory": f"{4 + 2 * (i % 4)}Gi", "pods": "110"}
    return {
        "metadata": {"name": f"n{i}", "labels": {"zone": f"z{i % 2}"}},
        "status": {"allocatable": alloc},
    }


def pod(i: int) -> PodInfo:
    requests = {"cpu": f"{50 + 25 * (i % 4)}m", "memory": f"{128 * (1 + i % 3)}Mi"}
    return PodInfo.from_dict(
        {
            "metadata": {"name": f"p{i}", "namespace": "ns"},
            "spec": {
                "schedulerName": "pluggable-scheduler",
                "containers": [{"name": "c", "resources": {"requests": requests}}],
            },
        }
    )


def test_rotated_files_each_replay_every_decision(tmp_path: Path) -> None:
    catalog = PluginCatalog.discover()
    config = load_config(DEFAULT_CONFIG)
    table = NodeTable()
    for i in range(8):
        table.upsert_node(node(i))
    stores = StaticStores()
    profile = build_profiles(
        config, catalog, lambda n: FrameworkHandle(n, table, store_provider=stores)
    )["pluggable-scheduler"]
    algorithm = Algorithm(profile.framework, seed=7)
    path = tmp_path / "rec.jsonl"
    recorder = DecisionRecorder(path, DEFAULT_CONFIG, max_bytes=20_000, backups=2)
    for i in range(120):
        p = pod(i)
        result = algorithm.schedule(profile.framework.new_cycle_state(), p, table)
        recorder.decision("pluggable-scheduler", p, result, table)
        assert result.node is not None
        table.add_pod(p, result.node)
        if i == 60:  # a node changes and one goes away mid-run
            table.upsert_node({**node(1), "metadata": {"name": "n1", "labels": {"zone": "z9"}}})
            table.remove_node("n7")
    recorder.close()
    files = [path, path.with_name("rec.jsonl.1"), path.with_name("rec.jsonl.2")]
    assert all(f.exists() for f in files)
    assert not path.with_name("rec.jsonl.3").exists()
    total = 0
    for f in files:
        report = replay(f, catalog, config=config, recorded=config)
        assert report.decisions > 0 and report.reproduced == report.decisions, f
        assert report.changes == []
        total += report.decisions
    assert total < 120  # the oldest rotated file was dropped


def test_sampled_decisions_replay_from_the_recorded_start(tmp_path: Path) -> None:
    """With percentageOfNodesToScore set, a cycle sees the nodes from where the previous
    one stopped; a replay of one rotated file (which starts mid-run) starts each
    decision where the recorded one did, so every decision reproduces."""
    catalog = PluginCatalog.discover()
    doc = {**DEFAULT_CONFIG, "percentageOfNodesToScore": 20}
    config = load_config(doc)
    table = NodeTable()
    for i in range(300):
        table.upsert_node(node(i))
    stores = StaticStores()
    profile = build_profiles(
        config, catalog, lambda n: FrameworkHandle(n, table, store_provider=stores)
    )["pluggable-scheduler"]
    assert profile.resolved.percentage_of_nodes_to_score == 20
    algorithm = Algorithm(profile.framework, seed=7)
    path = tmp_path / "rec.jsonl"
    recorder = DecisionRecorder(path, doc, max_bytes=60_000, backups=1)
    for i in range(60):
        p = pod(i)
        result = algorithm.schedule(profile.framework.new_cycle_state(), p, table, 20)
        assert result.evaluated_nodes < 300  # sampled: 100 feasible nodes are enough
        recorder.decision("pluggable-scheduler", p, result, table)
        assert result.node is not None
        table.add_pod(p, result.node)
    recorder.close()
    rotated = path.with_name("rec.jsonl.1")
    assert rotated.exists()
    for f in (path, rotated):
        report = replay(f, catalog, config=config, recorded=config)
        assert report.decisions > 0 and report.reproduced == report.decisions, f
