"""The ``emulator`` command and the emulator benchmark, run as a user would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import yaml


def test_emulator_command_serves_cluster_and_writes_kubeconfig(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: cli-node}\n")
    kubeconfig = tmp_path / "out" / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scheduler",
            "emulator",
            "--cluster",
            str(cluster),
            "--port",
            "0",
            "--kubeconfig-out",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("Kubernetes API emulator serving at http://127.0.0.1:"), first
        url = first.rsplit(" ", 1)[-1].strip()
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server == url
        with urllib.request.urlopen(url + "/api/v1/nodes", timeout=10) as resp:
            nodes = json.loads(resp.read())
        assert [n["metadata"]["name"] for n in nodes["items"]] == ["cli-node"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_emulator_kubeconfig_defaults_to_state_dir_and_goes_on_exit(tmp_path: Path) -> None:
    """Without --kubeconfig-out nothing lands in the current directory (a checkout, often)."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "scheduler", "emulator", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=checkout,
        env=env,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().rsplit(" ", 1)[-1].strip()
        written = proc.stdout.readline()
        port = url.rsplit(":", 1)[-1]
        expected = tmp_path / "state" / "pluggable-scheduler" / f"emulator-{port}.kubeconfig"
        assert written == f"kubeconfig written to {expected} (removed on exit)\n"
        server = yaml.safe_load(expected.read_text())["clusters"][0]["cluster"]["server"]
        assert server == url
        assert list(checkout.iterdir()) == []
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert not expected.exists()


def test_emulator_command_reports_bad_cluster_file(tmp_path: Path) -> None:
    cluster = tmp_path / "broken.yaml"
    cluster.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nkind: Pod\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler",
            "emulator",
            "--cluster",
            str(cluster),
            "--kubeconfig-out",
            str(tmp_path / "kc"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{cluster}: document 1: missing 'apiVersion'" in result.stderr


def test_benchmark_runs_and_reports_figures() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler.tools.bench.emulator",
            "--nodes",
            "20",
            "--pods",
            "200",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["bindings"] == 200 and figures["binding_failures"] == 0
    assert figures["watch_events"] == 600 and figures["all_events_delivered"] is True
    assert figures["bindings_per_s"] > 0 and figures["watch_events_per_s"] > 0
