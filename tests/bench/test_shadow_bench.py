"""``bench shadow`` runs every variant through the daemon's own shadow code."""

from __future__ import annotations

import pytest

from scheduler.cli.main import main


def test_bench_shadow_reports_each_variant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "shadow", "--nodes", "20", "--init-pods", "10", "--pods", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("CPU ms per pod, default profile, batching on, 20 nodes")
    labels = [line.split("decision")[0].strip() for line in lines[1:]]
    assert labels == ["no shadow", "weight", "args", "args, full cycle"]
    assert all("shadow / decision" in line for line in lines[2:])
    assert lines[2].endswith("50 of 50 derived)") and lines[4].endswith("0 of 50 derived)")
