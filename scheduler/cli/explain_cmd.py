"""``pluggable-scheduler explain``: one scheduling cycle for one pod, per node and plugin."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from scheduler.cli.common import (
    add_config_option,
    add_feature_gates_option,
    load_config_option,
    print_result,
)

if TYPE_CHECKING:
    from scheduler.framework.explain import Explanation, NodeReport

MAX_WIDTH = 120  # above this the score columns use abbreviated plugin names
MAX_LISTED = 8  # node names listed per rejection group before "and N more"
MAX_TIMED = 8  # plugins listed under "Time per plugin", slowest first


def load_pod_file(path: str | Path) -> dict[str, object]:
    from scheduler.config.yamlfiles import load_yaml_documents, read_text
    from scheduler.framework.explain import parse_pod_text

    file = Path(path)
    text = read_text(file, "pod file")
    # parse_pod_text's plain safe_load recurses once per nesting level: check
    # the depth first (a pod file is small) so deep nesting is a message too.
    load_yaml_documents(text, str(file), expected="YAML or JSON")
    return parse_pod_text(text, str(file))


def _abbreviation(name: str, taken: set[str]) -> str:
    short = "".join(c for c in name if c.isupper()) or name[:3]
    candidate, n = short, 2
    while candidate in taken:
        candidate, n = f"{short}{n}", n + 1
    taken.add(candidate)
    return candidate


def _table(headers: list[str], rows: list[list[str]], right_from: int) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        parts = [
            c.rjust(widths[i]) if i >= right_from else c.ljust(widths[i])
            for i, c in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def _score_table(result: Explanation) -> list[str]:
    scored = [r for r in result.nodes.values() if r.feasible]
    if not scored:
        return []
    plugins = [p for p in result.score_plugins if not p.skipped]
    tied = set(result.tied)

    def mark(report: NodeReport) -> str:
        if report.name == result.node:
            return "<- chosen" + (" (tied)" if len(tied) > 1 else "")
        if report.name in tied:
            return "<- tied"
        return ""

    def rows(headers: list[str]) -> list[list[str]]:
        out = []
        for report in scored:
            cells = [report.name]
            for plugin in plugins:
                entry = report.score.get(plugin.name)
                cells.append(str(entry.weighted) if entry is not None else "-")
            cells.append(str(report.total) if report.total is not None else "-")
            cells.append(mark(report))
            out.append(cells)
        return out

    full = ["NODE", *(f"{p.name} x{p.weight}" for p in plugins), "TOTAL", ""]
    lines = _table(full, rows(full), 1)
    legend: list[str] = []
    if max(len(line) for line in lines) > MAX_WIDTH:
        taken: set[str] = set()
        short = [_abbreviation(p.name, taken) for p in plugins]
        headers = ["NODE", *short, "TOTAL", ""]
        lines = _table(headers, rows(headers), 1)
        text = ", ".join(f"{s} = {p.name} x{p.weight}" for s, p in zip(short, plugins, strict=True))
        legend = textwrap.wrap(text, MAX_WIDTH - 2, initial_indent="  ", subsequent_indent="  ")
    title = "Feasible nodes (weighted score per Score plugin, best first):"
    out = [title, *("  " + line for line in lines), *legend]
    skipped = [p.name for p in result.score_plugins if p.skipped]
    if skipped:
        out.append(f"  skipped by PreScore for this pod: {', '.join(skipped)}")
    if all(r.total is None for r in scored):
        out.append("  (not scored)")
    return out


def _rejections(result: Explanation) -> list[str]:
    groups: dict[tuple[str, str, str, tuple[str, ...]], list[str]] = {}
    for report in result.nodes.values():
        if report.rejected_by is None:
            continue
        verdict = report.filter[report.rejected_by]
        key = (report.rejected_by, report.stage, verdict.code.title, tuple(verdict.reasons))
        groups.setdefault(key, []).append(report.name)
    if not groups:
        return []
    count = sum(len(v) for v in groups.values())
    out = [f"Rejected nodes ({count}), by plugin and reason:"]
    for (plugin, stage, code, reasons), names in sorted(
        groups.items(), key=lambda kv: (-len(kv[1]), kv[0])
    ):
        where = f"{plugin} ({stage})" if stage == "PreFilter" else plugin
        listed = ", ".join(names[:MAX_LISTED])
        if len(names) > MAX_LISTED:
            listed += f", and {len(names) - MAX_LISTED} more"
        noun = "node" if len(names) == 1 else "nodes"
        out.append(f"  {where}: {'; '.join(reasons) or '(no reason given)'} [{code}]")
        out.append(f"      {len(names)} {noun}: {listed}")
    detailed = [r for r in result.nodes.values() if r.details]
    if detailed:
        out.append("Why, as the rejecting plugins explain it:")
        for report in detailed[:MAX_LISTED]:
            out.append(f"  {report.name}:")
            out.extend(f"      {line}" for line in report.details)
        if len(detailed) > MAX_LISTED:
            out.append(f"  and {len(detailed) - MAX_LISTED} more nodes (see --output json)")
    return out


def _plugin_times(result: Explanation) -> list[str]:
    if not result.plugin_times:
        return []
    total = sum(t.seconds for t in result.plugin_times)
    shown = result.plugin_times[:MAX_TIMED]
    rows = [
        [t.plugin, t.point, f"{t.seconds * 1000:.3f}", f"{t.seconds / total:.0%}" if total else ""]
        for t in shown
    ]
    title = f"Time per plugin in this cycle ({total * 1000:.3f} ms in plugins, slowest first):"
    lines = _table(["PLUGIN", "POINT", "MS", "SHARE"], rows, 2)
    out = [title, *("  " + line for line in lines)]
    if len(result.plugin_times) > MAX_TIMED:
        out.append(f"  and {len(result.plugin_times) - MAX_TIMED} more (--output json lists all)")
    return out


def _ignored(result: Explanation) -> list[str]:
    if not result.ignored:
        return []
    out = ["Left out of this decision (failurePolicy Ignore):"]
    for failure in result.ignored:
        why = {"overrun": "over its budget", "circuit_open": "circuit breaker open"}.get(
            failure.reason, "error"
        )
        out.append(f"  {failure.plugin} at {failure.point} ({why}): {failure.message}")
    return out


def render_text(result: Explanation) -> str:
    from scheduler.framework.explain import TIE_NOTE

    lines = [
        f"Pod {result.pod}, profile {result.profile}: {result.total_nodes} nodes, "
        f"{result.evaluated_nodes} evaluated, {result.feasible_nodes} feasible"
    ]
    for item in result.skipped:
        lines.append(f"  skipped (cannot be parsed): {item.reason}")
    for note in result.notes:
        lines.append(f"  note: {note}")
    if result.pre_filter_message:
        lines.append(f"  PreFilter rejected the pod: {result.pre_filter_message}")
    blocks = (_score_table(result), _rejections(result), _ignored(result), _plugin_times(result))
    for block in blocks:
        if block:
            lines.append("")
            lines.extend(block)
    not_evaluated = [r.name for r in result.nodes.values() if not r.evaluated]
    if not_evaluated and result.total_nodes:
        lines.append("")
        listed = ", ".join(not_evaluated[:MAX_LISTED])
        if len(not_evaluated) > MAX_LISTED:
            listed += f", and {len(not_evaluated) - MAX_LISTED} more"
        lines.append(f"Not evaluated ({len(not_evaluated)}): {listed}")
    lines.append("")
    if result.node is not None:
        verdict = f"Verdict: {result.pod} -> {result.node}"
        others = [n for n in result.tied if n != result.node]
        if others:
            verdict += (
                f" (tied with {', '.join(others)}: {TIE_NOTE}; this run picked {result.node})"
            )
        lines.append(verdict)
    else:
        lines.append(f"Verdict: {result.pod} cannot be scheduled: {result.message}")
        if result.post_filter is not None:
            lines.append(f"PostFilter: {result.post_filter.explanation}")
    return "\n".join(lines)


def _cmd_explain(args: argparse.Namespace) -> int:
    from scheduler.framework.explain import explain
    from scheduler.framework.loader import PluginCatalog
    from scheduler.observability.logging import QUIET, configure_logging
    from scheduler.simulation.emulator.clusterfile import load_cluster_file

    configure_logging("text", QUIET)
    objects = load_cluster_file(Path(args.cluster))
    pod = load_pod_file(args.pod)
    config = load_config_option(args)
    result = explain(
        objects, pod, config, PluginCatalog.discover(), profile_name=args.profile, seed=args.seed
    )
    print_result(args.output, result.to_json, lambda: render_text(result))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="run one scheduling cycle for one pod and show every plugin's verdict",
        description="Load a cluster file (kubectl get nodes,pods -A -o yaml, or multi-document "
        "YAML) and run one scheduling cycle for the pod of --pod, exactly as the daemon "
        "would: per node and per plugin, the Filter verdicts with reasons, the raw, "
        "normalized and weighted scores, the totals, the chosen node and every tied node. "
        "No API server is needed; PostFilter (preemption) runs as a dry run.",
    )
    parser.add_argument("--cluster", metavar="FILE", required=True, help="cluster file")
    parser.add_argument("--pod", metavar="FILE", required=True, help="the pod (YAML or JSON)")
    add_config_option(parser)
    add_feature_gates_option(parser)
    parser.add_argument("--output", choices=["text", "json"], default="text")
    parser.add_argument(
        "--profile",
        metavar="NAME",
        help="profile (schedulerName) to use (default: the pod's schedulerName, "
        "else pluggable-scheduler)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="tie-break seed, for reproducible runs (default 0)"
    )
    parser.set_defaults(func=_cmd_explain)
