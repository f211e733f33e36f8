"""``pluggable-scheduler simulate``: where would every pod of a cluster file go, and why."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scheduler.cli.common import (
    add_config_option,
    add_feature_gates_option,
    load_config_option,
    print_result,
)

if TYPE_CHECKING:
    from scheduler.simulation.simulate import SimulationResult


def render_text(result: SimulationResult) -> str:
    rows = [(p.pod, p.node or "<none>", p.reason) for p in result.placements]
    headers = ("POD", "NODE", "REASON")
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers[:2])]
    lines = [f"{headers[0]:<{widths[0]}}  {headers[1]:<{widths[1]}}  {headers[2]}"]
    lines += [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows]
    total = len(result.placements)
    if result.evicted:
        lines.append("")
        lines.append(f"evicted (preempted): {', '.join(result.evicted)}")
    lines.append("")
    lines.append(
        f"{result.scheduled}/{total} pods scheduled, {total - result.scheduled} not scheduled "
        f"({result.attempts} attempts, {result.seconds:.2f}s)"
    )
    return "\n".join(lines)


def _cmd_simulate(args: argparse.Namespace) -> int:
    import asyncio

    from scheduler.framework.loader import PluginCatalog
    from scheduler.observability.logging import QUIET, configure_logging
    from scheduler.simulation.emulator.clusterfile import load_cluster_file
    from scheduler.simulation.simulate import print_progress, simulate

    configure_logging("text", args.verbose if args.verbose else QUIET)
    objects = load_cluster_file(Path(args.cluster))
    config = load_config_option(args)
    progress = print_progress if sys.stderr.isatty() else None
    result = asyncio.run(
        simulate(objects, config, PluginCatalog.discover(), seed=args.seed, progress=progress)
    )
    if progress is not None:
        print(file=sys.stderr)
    print_result(args.output, result.to_json, lambda: render_text(result))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="schedule a cluster file's pending pods on the embedded emulator",
        description="Start the built-in API server emulator with the objects of a cluster "
        "file (kubectl get nodes,pods -A -o yaml, or multi-document YAML), run the "
        "scheduler against it until no pod can make progress, and print where every "
        "pending pod went and why the others did not.",
    )
    parser.add_argument("--cluster", metavar="FILE", required=True, help="cluster file")
    add_config_option(parser)
    add_feature_gates_option(parser)
    parser.add_argument("--output", choices=["text", "json"], default="text")
    parser.add_argument(
        "--seed", type=int, default=0, help="tie-break seed, for reproducible runs (default 0)"
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="show daemon logs")
    parser.set_defaults(func=_cmd_simulate)
