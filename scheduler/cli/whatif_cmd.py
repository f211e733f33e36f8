"""``pluggable-scheduler whatif``: which pending pods would fit on which node templates."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scheduler.cli.common import add_config_option, load_config_option, print_result
from scheduler.errors import UserError

if TYPE_CHECKING:
    from scheduler.framework.whatif import PodAnswer, WhatIfAnswer

MAX_LISTED = 8  # pod and node names listed before "and N more"


def load_request_file(path: str | Path) -> Any:
    """The request body (YAML or JSON, one document)."""
    from scheduler.config.yamlfiles import load_yaml_documents, read_text

    file = Path(path)
    documents = load_yaml_documents(
        read_text(file, "request file"), str(file), expected="YAML or JSON"
    )
    if len(documents) != 1:
        raise UserError(f"{file}: expected one request document, found {len(documents)}")
    return documents[0]


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    if len(names) > MAX_LISTED:
        shown += f", and {len(names) - MAX_LISTED} more"
    return shown


def _render_one(item: PodAnswer, nodes: int) -> list[str]:
    lines = [f"{_listed(item.pods)}  [profile {item.profile}]"]
    if item.error is not None:
        return [*lines, f"  error: {item.error}"]
    fit = len(item.feasible_nodes)
    line = f"  existing nodes: {fit} of {nodes} fit"
    if fit:
        line += f" ({_listed(item.feasible_nodes)})"
    lines.append(line)
    for verdict, names in item.rejected_nodes:
        reasons = "; ".join(verdict.reasons) or "(no reason given)"
        lines.append(f"    {verdict.plugin}: {reasons} [{verdict.code}]: {len(names)} node(s)")
    for template in item.templates:
        if template.feasible:
            lines.append(
                f"  template {template.name}: fits ({template.feasible} of {template.count} copies)"
            )
        elif template.rejected is not None:
            v = template.rejected
            reasons = "; ".join(v.reasons) or "(no reason given)"
            lines.append(f"  template {template.name}: no - {v.plugin}: {reasons} [{v.code}]")
    return lines


def render_text(result: WhatIfAnswer) -> str:
    lines: list[str] = []
    for item in result.answers:
        lines.extend(_render_one(item, result.nodes))
        lines.append("")
    fitting = sum(len(a.pods) for a in result.answers if a.fits)
    removed = f", {len(result.removed)} removed" if result.removed else ""
    lines.append(
        f"{fitting}/{result.pods} pods fit somewhere ({len(result.answers)} distinct pods; "
        f"{result.nodes} nodes{removed}, {result.template_nodes} template copies; "
        f"{result.seconds:.3f}s)"
    )
    return "\n".join(lines)


def _cmd_whatif(args: argparse.Namespace) -> int:
    from scheduler.framework.loader import PluginCatalog
    from scheduler.framework.whatif import parse_request
    from scheduler.framework.whatif_offline import answer_cluster_file
    from scheduler.observability.logging import QUIET, configure_logging
    from scheduler.simulation.emulator.clusterfile import load_cluster_file

    configure_logging("text", QUIET)
    objects = load_cluster_file(Path(args.cluster))
    try:
        request = parse_request(load_request_file(args.request) if args.request else {})
    except UserError as err:
        raise UserError(f"{args.request}: {err.message}", details=err.details) from None
    config = load_config_option(args)
    result = answer_cluster_file(objects, request, config, PluginCatalog.discover())
    print_result(args.output, result.to_json, lambda: render_text(result))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "whatif",
        help="which pending pods would fit on which node templates (an autoscaler's question)",
        description="Load a cluster file and answer a what-if request (docs/whatif.md): for "
        "each pending pod (or the request's pods), which node templates and existing nodes "
        "would pass every PreFilter and Filter plugin of its profile, and the rejecting "
        "plugin and reason for the others. Template nodes are added, and removeNodes "
        "taken away, in a copy of the cluster; identical pods are answered once. The "
        "daemon answers the same request at POST /whatif.",
    )
    parser.add_argument("--cluster", metavar="FILE", required=True, help="cluster file")
    parser.add_argument(
        "--request",
        metavar="FILE",
        help="the request (YAML or JSON: pods, profile, nodeTemplates, removeNodes); "
        "without it, every pending pod against the existing nodes",
    )
    add_config_option(parser)
    parser.add_argument("--output", choices=["text", "json"], default="text")
    parser.set_defaults(func=_cmd_whatif)
