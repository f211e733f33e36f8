"""examples/gang-preemption-cluster.yaml does what its comment and docs/gang-preemption.md say.

Run as a user runs it (``pluggable-scheduler simulate --output json``), with
GangPreemption's config and, for the comparison the comment draws, with
DefaultPreemption's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "examples" / "gang-preemption-cluster.yaml"
GANG_CONFIG = REPO / "examples" / "gang-preemption-config.yaml"
DEFAULT_CONFIG = REPO / "deploy" / "overlays" / "coscheduling" / "config.yaml"


def simulate(config: Path) -> dict[str, Any]:
    args = ["simulate", "--cluster", str(CLUSTER), "--config", str(config), "--output", "json"]
    out = subprocess.run(
        [sys.executable, "-m", "scheduler", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_the_low_gang_started_last_goes_whole_and_the_huge_gang_evicts_nothing() -> None:
    result = simulate(GANG_CONFIG)
    placed = {p["pod"]: p for p in result["placements"]}
    assert all(placed[f"ml/train-{i}"]["node"] for i in range(4)), placed
    for i in range(3):
        huge = placed[f"ml/huge-{i}"]
        assert huge["node"] is None
        assert "ml/huge: its 3 pending pod(s) do not all fit" in huge["reason"]
    assert result["evicted"] == [f"ml/batch-b-{i}" for i in range(4)]


def test_with_default_preemption_both_low_gangs_are_broken() -> None:
    result = simulate(DEFAULT_CONFIG)
    evicted = set(result["evicted"])
    assert any(p.startswith("ml/batch-a-") for p in evicted)
    assert any(p.startswith("ml/batch-b-") for p in evicted)
