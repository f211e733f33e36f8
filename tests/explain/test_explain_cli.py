"""``pluggable-scheduler explain`` as a user runs it: bad inputs end in a message, exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "explain-cluster.yaml"
POD = ROOT / "examples" / "explain-pod.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", "explain", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_json_output_from_the_command_line() -> None:
    proc = run("--cluster", str(CLUSTER), "--pod", str(POD), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["node"] in data["tied"] == ["node-b1", "node-b2"]
    for report in data["nodes"].values():
        assert {"filter", "score", "total"} <= set(report)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("pod_text", "expected"),
    [
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {}\n",
            "expected a Pod (kind: Pod), got 'Deployment'",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - {name: c, resources: {requests: {cpu: abc}}}\n",
            'pod default/p: container "c" requests.cpu: invalid quantity "abc"',
        ),
        ("{not yaml: [", "not valid YAML or JSON"),
        ("- 1\n- 2\n", "expected a Pod object (a mapping), got list"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n---\n"
            "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec: {containers: []}\n",
            "expected exactly one Pod, found 2 objects",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
            "spec: {schedulerName: other, containers: []}\n",
            "no profile named 'other'",
        ),
    ],
)
def test_bad_pod_file(tmp_path: Path, pod_text: str, expected: str) -> None:
    pod = write(tmp_path, "pod.yaml", pod_text)
    proc = run("--cluster", str(CLUSTER), "--pod", str(pod))
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ")
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_missing_files(tmp_path: Path) -> None:
    proc = run("--cluster", str(CLUSTER), "--pod", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 1
    assert "cannot read pod file" in proc.stderr and "No such file" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run("--cluster", str(tmp_path / "nope.yaml"), "--pod", str(POD))
    assert proc.returncode == 1
    assert "cannot read cluster file" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run(
        "--cluster", str(CLUSTER), "--pod", str(POD), "--config", str(tmp_path / "nope.yaml")
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr


def test_unknown_profile_option() -> None:
    proc = run("--cluster", str(CLUSTER), "--pod", str(POD), "--profile", "nope")
    assert proc.returncode == 1
    assert "no profile named 'nope' (--profile)" in proc.stderr
    assert "pluggable-scheduler" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_malformed_node_in_cluster_file_is_skipped_not_fatal(tmp_path: Path) -> None:
    cluster = write(
        tmp_path,
        "cluster.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-3}\n"
        "status: {allocatable: {cpu: abc, memory: 8Gi, pods: '110'}}\n",
    )
    proc = run("--cluster", str(cluster), "--pod", str(POD))
    assert proc.returncode == 0, proc.stderr
    assert 'node node-3: status.allocatable.cpu: invalid quantity "abc"' in proc.stdout
    assert "Traceback" not in proc.stderr
    proc = run("--cluster", str(cluster), "--pod", str(POD), "--output", "json")
    data = json.loads(proc.stdout)
    assert data["skipped"][0]["name"] == "node-3"
    assert list(data["nodes"]) == ["node-1"]
