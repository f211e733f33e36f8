"""``pluggable-scheduler plugins list``: what is installed, and what is enabled where.

(``plugins needs``, the distributions a config needs, is in :mod:`needs_cmd`.)

It imports every installed plugin (start-up imports only enabled ones) so
that a broken plugin shows its load error here, before anyone enables it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scheduler.cli import needs_cmd
from scheduler.errors import UserError

if TYPE_CHECKING:
    from scheduler.config.models import SchedulerConfiguration
    from scheduler.framework.loader import PluginCatalog


def _enabled_in(config: SchedulerConfiguration, catalog: PluginCatalog) -> dict[str, list[str]]:
    """Plugin name -> schedulerNames of the profiles enabling it (empty if config is broken)."""
    from scheduler.config import resolve_profiles

    try:
        profiles = resolve_profiles(config, catalog)
    except UserError:
        return {}
    out: dict[str, list[str]] = {}
    for profile in profiles:
        for name in profile.enabled_plugins:
            out.setdefault(name, []).append(profile.scheduler_name)
    return out


def collect(config_path: Path | None = None) -> list[dict[str, Any]]:
    from scheduler.config import load_config
    from scheduler.framework.loader import PluginCatalog

    catalog = PluginCatalog.discover()
    descriptions = catalog.describe_all()
    config = (
        load_config(config_path)
        if config_path
        else load_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
            }
        )
    )
    enabled = _enabled_in(config, catalog)
    rows = []
    for d in descriptions:
        row = asdict(d)
        row["enabled_in"] = enabled.get(d.name, [])
        rows.append(row)
    return rows


def _print_table(rows: list[dict[str, Any]]) -> None:
    headers = ["NAME", "DISTRIBUTION", "VERSION", "API", "EXTENSION POINTS", "ENABLED IN"]
    table = [
        [
            r["name"],
            r["distribution"],
            r["version"],
            r["api_version"] or "-",
            ",".join(r["extension_points"]) or "-",
            ",".join(r["enabled_in"]) or "-",
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    errors = [r for r in rows if r["error"]]
    if errors:
        print()
        for r in errors:
            print(f"load error: {r['name']} ({r['distribution']} {r['version']}): {r['error']}")


def _cmd_list(args: argparse.Namespace) -> int:
    rows = collect(Path(args.config) if args.config else None)
    if args.output == "json":
        json.dump({"plugins": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        if not rows:
            print("no plugins installed (entry-point group 'scheduler.plugins')")
            return 0
        _print_table(rows)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("plugins", help="inspect installed plugins")
    sub = parser.add_subparsers(dest="plugins_command", metavar="SUBCOMMAND", required=True)
    lister = sub.add_parser(
        "list",
        help="every installed plugin: distribution, version, extension points, API "
        "version, profiles enabling it, load error",
    )
    lister.add_argument("--config", help="scheduler config to report enablement for")
    lister.add_argument("--output", choices=["text", "json"], default="text")
    lister.set_defaults(func=_cmd_list)
    needs_cmd.register(sub)
