"""Decision recording and replay on the real daemon, both backends.

A 1,000-pod run is recorded (``DecisionRecorder``, what ``run --record``
installs); ``pluggable-scheduler replay`` of it under the recorded
configuration reproduces every decision, and under a configuration with
another Score weight reports the decisions that change, each with the
plugin that explains it, and nothing else.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli.main import main
from scheduler.engine.recording import DecisionRecorder
from tests.e2e.conftest import Cluster, StartDaemon, pod_body, scheduler_config
from tests.e2e.processes import PLAIN, free_port, start_run

PODS = int(__import__("os").environ.get("REPLAY_PODS", "1000"))
SHAPES = [("10m", "64Mi"), ("25m", "256Mi"), ("50m", "128Mi"), ("5m", "512Mi"), ("100m", "128Mi")]


async def create_pods(cluster: Cluster, names: list[str]) -> None:
    for start in range(0, len(names), 50):
        await asyncio.gather(
            *(
                cluster.create_raw_pod(
                    pod_body(
                        n, cluster.scheduler_name, cpu=SHAPES[i % 5][0], memory=SHAPES[i % 5][1]
                    )
                )
                for i, n in enumerate(names[start : start + 50], start)
            )
        )


def replay(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["replay", *args, "--output", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


async def test_a_recorded_run_replays_exactly_and_a_new_weight_reports_its_changes(
    cluster: Cluster, start_daemon: StartDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = scheduler_config([{"schedulerName": cluster.scheduler_name}])
    running = await start_daemon(config)
    recording = tmp_path / "decisions.jsonl"
    running.daemon.scheduler.recorder = DecisionRecorder(recording, config)
    for i in range(12):
        cpu, memory = (("8", "16Gi"), ("16", "16Gi"), ("8", "64Gi"))[i % 3]
        await cluster.create_node(f"n{i}", cpu=cpu, memory=memory)
    names = [f"p{i}" for i in range(PODS)]
    await create_pods(cluster, names)
    placed = await cluster.wait_bound(names, within=120)
    assert await running.stop() == 0

    same = replay(capsys, str(recording))
    assert (same["decisions"], same["same"], same["changed"]) == (PODS, PODS, 0)

    changed_config = scheduler_config(
        [
            {
                "schedulerName": cluster.scheduler_name,
                "plugins": {
                    "score": {
                        "enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 30}]
                    }
                },
            }
        ]
    )
    new_file = tmp_path / "new.json"
    new_file.write_text(json.dumps(changed_config))
    changed = replay(capsys, str(recording), "--config", str(new_file))
    assert changed["decisions"] == PODS
    with capsys.disabled():
        print(f"replay: {changed['changed']} of {PODS} decisions changed")
    assert 0 < changed["changed"] < PODS
    assert changed["same"] + changed["changed"] == PODS
    for change in changed["changes"]:
        pod = change["pod"].split("/", 1)[1]
        assert change["recorded"] == placed[pod]
        assert change["replayed"] != change["recorded"]
        assert change["recorded"] not in change["replayed_tied"]
        # The weight that changed moved the scores: it is what explains the change.
        assert change["plugin"] in {"NodeResourcesBalancedAllocation", "NodeResourcesFit"}
        assert set(change["nodes"]) == {change["recorded"], change["replayed"]}
    capsys.readouterr()
    assert main(["replay", str(recording), "--config", str(new_file)]) == 0
    assert f"{PODS} decisions replayed: {changed['same']} the same" in capsys.readouterr().out


def test_a_broken_recording_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "start", "config": {}}\n{nope\n')
    assert main(["replay", str(bad)]) == 1
    assert f"{bad}: the recorded configuration: " in capsys.readouterr().err
    bad.write_text(
        '{"kind": "start", "config": {"apiVersion": "kubescheduler.config.k8s.io/v1",'
        ' "kind": "KubeSchedulerConfiguration"}}\n{nope\n'
    )
    assert main(["replay", str(bad)]) == 1
    assert f"{bad}:2: not a recording line" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing")]) == 1
    assert "cannot read recording" in capsys.readouterr().err


async def test_run_record_writes_a_recording_that_replays(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --record FILE`` (a real process, stopped by SIGTERM), then ``replay FILE``."""
    config = scheduler_config([{"schedulerName": cluster.scheduler_name}])
    config["pluggableScheduler"] = {"serverAddress": f"127.0.0.1:{free_port()}"}
    recording = tmp_path / "run.jsonl"
    await cluster.create_node("a", cpu="2")
    await cluster.create_node("b", cpu="4")
    proc = await start_run(
        cluster, config, tmp_path, "daemon", args=["--record", str(recording), *PLAIN]
    )
    try:
        names = [f"r{i}" for i in range(20)]
        await create_pods(cluster, names)
        await cluster.wait_bound(names, within=60)
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    data = replay(capsys, str(recording))
    assert (data["decisions"], data["same"], data["changed"]) == (20, 20, 0)
