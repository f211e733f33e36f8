"""``pluggable-scheduler bench perf``: scheduler_perf's workloads, ours vs kube-scheduler.

See :mod:`scheduler.tools.bench.perf.runner` for how a run is set up,
:mod:`scheduler.tools.bench.perf.workloads` for the workloads and
:mod:`scheduler.tools.bench.perf.report` for how figures are computed.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from scheduler.tools.bench.perf.runner import main as run_main

    return run_main(argv)
