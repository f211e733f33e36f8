"""The ElasticQuota example (examples/capacity-cluster.yaml) does what its comment says.

Run as a user runs it: ``pluggable-scheduler simulate`` with the example's
config, in a subprocess, on the installed CapacityScheduling distribution.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = EXAMPLES / "capacity-cluster.yaml"
CONFIG = EXAMPLES / "capacity-config.yaml"


def test_team_b_reclaims_its_lent_min_and_team_a_stays_within_max() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler",
            "simulate",
            "--cluster",
            str(CLUSTER),
            "--config",
            str(CONFIG),
            "--output",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    placements = {p["pod"]: p for p in report["placements"]}
    assert set(placements) == {"team-a/a-big", *(f"team-b/b-{i}" for i in range(1, 5))}
    # The cluster has 8 CPUs and team-a ran 6 of them: the last two of team-b's
    # four bound only because two of team-a's pods were preempted.
    for i in range(1, 5):
        assert placements[f"team-b/b-{i}"]["reason"] == "scheduled"
    objects = yaml.safe_load(CLUSTER.read_text())["items"]
    cpus = sum(int(o["status"]["allocatable"]["cpu"]) for o in objects if o["kind"] == "Node")
    running = [o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    assert cpus == 8 and len(running) == 6
    # Reclaimed by preemption: exactly the two CPUs team-a borrowed, from team-a only.
    evicted = report["evicted"]
    assert len(evicted) == 2 and all(key.startswith("team-a/a-") for key in evicted), evicted
    big = placements["team-a/a-big"]
    assert big["node"] is None
    assert big["reason"].startswith(
        "0/2 nodes are available: Pod team-a/a-big is rejected in PreFilter because "
        "ElasticQuota team-a is more than Max."
    )
