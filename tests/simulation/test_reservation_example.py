"""examples/reservation-cluster.yaml: what its header says happens, happens."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = EXAMPLES / "reservation-cluster.yaml"
CONFIG = EXAMPLES / "reservation-config.yaml"


def simulate(*extra: str) -> dict[str, str | None]:
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", "simulate", "--cluster", str(CLUSTER),
         "--output", "json", *extra],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return {p["pod"]: p["node"] for p in json.loads(result.stdout)["placements"]}


def test_the_reservation_holds_its_room_for_its_owners() -> None:
    assert simulate("--config", str(CONFIG)) == {
        "shop/web-0": "node-1",
        "shop/batch-0": "node-2",
        "shop/batch-1": None,
    }


def test_without_the_plugin_nothing_is_held() -> None:
    placed = simulate()
    assert all(placed.values()), placed
