"""``pluggable-scheduler bench perf`` run in-process for a test, its JSON report read back.

One way for the tiny end-to-end runs: the same timeout, output and work
directory for each, so a test names only the workload and sizes it is about.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scheduler.cli.main import main as cli_main


def run_perf(tmp_path: Path, *args: str, schedulers: str = "ours") -> dict[str, Any]:
    """The report of ``bench perf *args`` with ``schedulers``; the run must succeed."""
    out = tmp_path / "report.json"
    code = cli_main(
        [
            "bench",
            "perf",
            *args,
            *("--schedulers", schedulers, "--timeout", "60", "--output", "json"),
            *("--json-file", str(out), "--workdir", str(tmp_path / "work")),
        ]
    )
    data = json.loads(out.read_text())
    assert code == 0, data
    assert isinstance(data, dict)
    return data
