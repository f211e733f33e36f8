"""Output into a pipe whose reader has gone (``config defaults | head -1``).

Every command ends quietly with 141 (what a shell reports for a program that
SIGPIPE ended), never with a traceback or an "unexpected BrokenPipeError".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["config", "defaults"],
        ["config", "defaults", "--output", "json"],
        ["plugins", "list"],
        ["plugins", "list", "--output", "json"],
        ["simulate", "--cluster", str(EXAMPLES / "small-cluster.yaml")],
        [
            "explain",
            "--cluster",
            str(EXAMPLES / "explain-cluster.yaml"),
            "--pod",
            str(EXAMPLES / "explain-pod.yaml"),
        ],
    ],
    ids=lambda argv: " ".join(a for a in argv if not a.startswith("/")),
)
def test_closed_pipe_ends_quietly(argv: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write fails
    try:
        result = subprocess.run(
            [sys.executable, "-m", "scheduler", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    # argparse's help printer ignores write errors itself and exits 0.
    assert result.returncode == (0 if argv == ["--help"] else 141), result.stderr
    assert result.stderr == ""
