"""``pluggable-scheduler replay``: re-run recorded decisions, report the changed ones."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from scheduler.cli.common import print_result
from scheduler.errors import UserError

if TYPE_CHECKING:
    from scheduler.engine.replay import ReplayReport

MAX_LISTED = 50  # changed decisions printed as text (--output json lists all)


def render_text(report: ReplayReport) -> str:
    lines: list[str] = []
    for change in report.changes[:MAX_LISTED]:
        lines.append(
            f"{change.pod}: recorded {change.recorded or '<none>'}, now "
            f"{change.replayed or '<none>'}  [{change.plugin}]"
        )
    if len(report.changes) > MAX_LISTED:
        lines.append(f"and {len(report.changes) - MAX_LISTED} more (--output json lists all)")
    for skipped in report.skipped:
        lines.append(f"skipped: {skipped}")
    if lines:
        lines.append("")
    lines.append(
        f"{report.decisions} decisions replayed: {report.reproduced} the same, "
        f"{len(report.changes)} changed"
    )
    return "\n".join(lines)


def _cmd_replay(args: argparse.Namespace) -> int:
    from scheduler.config import load_config
    from scheduler.engine.replay import recorded_config, replay
    from scheduler.framework.loader import PluginCatalog
    from scheduler.observability.logging import QUIET, configure_logging

    configure_logging("text", QUIET)
    path = Path(args.recording)
    document = recorded_config(path)
    try:
        recorded = load_config(document)
    except UserError as err:
        raise UserError(
            f"{path}: the recorded configuration: {err.message}", details=err.details
        ) from None
    config = load_config(Path(args.config)) if args.config else recorded
    report = replay(
        path, PluginCatalog.discover(), config=config, recorded=recorded, profile=args.profile
    )
    print_result(args.output, report.to_json, lambda: render_text(report))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="re-run the decisions of a recording ('run --record') and report changed ones",
        description="Rebuild the cluster of a decision recording record by record and make "
        "every recorded decision again, with the recorded configuration or --config: each "
        "decision whose node would change is reported with the plugin that explains it.",
    )
    parser.add_argument("recording", metavar="RECORDING", help="a file written by run --record")
    parser.add_argument(
        "--config", metavar="FILE", help="the configuration to replay with (default: recorded)"
    )
    parser.add_argument("--profile", metavar="NAME", help="replay every decision with this profile")
    parser.add_argument("--output", choices=["text", "json"], default="text")
    parser.set_defaults(func=_cmd_replay)
