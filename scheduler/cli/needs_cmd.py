"""``pluggable-scheduler plugins needs CONFIG``: the distributions a config needs installed.

For building the scheduler's image for a given config (like mkdocs'
``get-deps``): every plugin the config names is mapped to the distribution
providing it, from installed metadata first, then from a package index
(:mod:`scheduler.distributions`), and printed as a table plus pip
requirements, or as requirements only (``--output requirements``, for
``pip install -r``). A plugin nobody provides is an error naming it and
where it is named.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scheduler import __version__
from scheduler.errors import UserError

if TYPE_CHECKING:
    from scheduler.config.models import SchedulerConfiguration
    from scheduler.framework.loader import PluginCatalog


@dataclass
class Need:
    """One plugin the config names, and where it comes from."""

    plugin: str
    where: str  # the first config field naming it
    distribution: str | None = None
    version: str | None = None
    source: str | None = None  # "installed", "index", "known"
    problem: str | None = None

    @property
    def requirement(self) -> str | None:
        if self.distribution is None:
            return None
        return f"{self.distribution}=={self.version}" if self.version else self.distribution


def referenced_plugins(config: SchedulerConfiguration) -> dict[str, str]:
    """Plugin name -> the first field path naming it, for every plugin the config needs.

    Enabled plugins at every point, ``pluginConfig`` entries, and the
    plugins our ``pluggableScheduler`` blocks configure; ``disabled`` names
    need nothing installed.
    """
    from scheduler.config.models import Plugins

    found: dict[str, str] = {}
    for name in config.pluggable_scheduler.timeouts.plugins:
        found.setdefault(name, f"pluggableScheduler.timeouts.plugins.{name}")
    for i, profile in enumerate(config.profiles):
        base = f"profiles[{i}]"
        for field, info in Plugins.model_fields.items():
            key = info.alias or field
            for j, plugin in enumerate(getattr(profile.plugins, field).enabled):
                found.setdefault(plugin.name, f"{base}.plugins.{key}.enabled[{j}]")
        for j, entry in enumerate(profile.plugin_config):
            found.setdefault(entry.name, f"{base}.pluginConfig[{j}]")
        extensions = profile.pluggable_scheduler
        for name in extensions.plugin_priorities:
            found.setdefault(name, f"{base}.pluggableScheduler.pluginPriorities.{name}")
        for name in extensions.failure_policy:
            found.setdefault(name, f"{base}.pluggableScheduler.failurePolicy.{name}")
        for name in extensions.timeouts.plugins:
            found.setdefault(name, f"{base}.pluggableScheduler.timeouts.plugins.{name}")
    return found


def resolve_needs(
    config: SchedulerConfiguration, catalog: PluginCatalog, index_url: str | None
) -> list[Need]:
    """Where each referenced plugin comes from; ``index_url`` None: installed and known only."""
    from scheduler.config.defaults import KUBE_PLUGINS, KUBE_VERSION
    from scheduler.distributions import (
        KNOWN_DISTRIBUTIONS,
        conventional_distribution,
        find_on_index,
    )

    needs = []
    installed = set(catalog.names())
    for plugin, where in referenced_plugins(config).items():
        need = Need(plugin, where)
        needs.append(need)
        if plugin in installed:
            entry = catalog.entry(plugin)
            need.distribution, need.version, need.source = (
                entry.distribution,
                entry.version,
                "installed",
            )
            continue
        if plugin in KUBE_PLUGINS:
            need.problem = (
                f"a kube-scheduler {KUBE_VERSION} plugin that pluggable-scheduler does not "
                "implement yet; no distribution provides it"
            )
            continue
        release = find_on_index(plugin, index_url) if index_url else None
        if release is not None and release.compatible:
            need.distribution, need.version, need.source = (
                release.distribution,
                release.version,
                "index",
            )
        elif release is not None:
            need.problem = (
                f"{release.distribution} {release.version} on {index_url} provides it but "
                f"requires pluggable-scheduler{release.requires_core}, and this is {__version__}"
            )
        elif plugin in KNOWN_DISTRIBUTIONS:
            need.distribution, need.source = KNOWN_DISTRIBUTIONS[plugin], "known"
        elif index_url and conventional_distribution(plugin):
            need.problem = (
                f"not installed, and {index_url} has no {conventional_distribution(plugin)} "
                "providing it (the naming convention: scheduler-plugin-<name-in-kebab-case>)"
            )
        elif index_url:
            need.problem = "not installed, and not a CamelCase name to look up on an index"
        else:
            need.problem = "not installed (no index was asked: --no-index)"
    return needs


def requirements(needs: list[Need]) -> list[str]:
    """pip requirement lines: the scheduler first, then each distribution once, by name."""
    from scheduler.distributions import CORE_DISTRIBUTION

    others = {
        need.requirement
        for need in needs
        if need.requirement is not None and need.distribution != CORE_DISTRIBUTION
    }
    return [f"{CORE_DISTRIBUTION}=={__version__}", *sorted(r for r in others if r)]


def _print_table(needs: list[Need]) -> None:
    headers = ("PLUGIN", "DISTRIBUTION", "VERSION", "FROM")
    rows = [
        (n.plugin, n.distribution or "-", n.version or "-", n.source or "-")
        for n in needs
        if n.problem is None
    ]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    for row in [headers, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _cmd_needs(args: argparse.Namespace) -> int:
    from scheduler.config import load_config
    from scheduler.framework.loader import PluginCatalog

    path = Path(args.config)
    try:
        config = load_config(path)
    except UserError as err:
        if str(path) in err.message:
            raise
        raise UserError(f"{path}: {err.message}", details=err.details) from None
    from scheduler.distributions import DEFAULT_INDEX_URL

    index_url = (
        None
        if args.no_index
        else args.index_url or os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX_URL
    )
    needs = resolve_needs(config, PluginCatalog.discover(), index_url)
    lines = requirements(needs)
    if args.output == "json":
        document = {"plugins": [asdict(n) for n in needs], "requirements": lines}
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.output == "requirements":
        print("\n".join(lines))
    else:
        _print_table(needs)
        print()
        print("pip requirements:")
        for line in lines:
            print(f"  {line}")
    problems = [n for n in needs if n.problem is not None]
    if problems:
        raise UserError(
            f"{path} names {len(problems)} plugin{'s' if len(problems) != 1 else ''} "
            "that no distribution was found for",
            details=[f"{n.where}: plugin {n.plugin!r}: {n.problem}" for n in problems],
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``needs`` to the ``plugins`` command's sub-commands."""
    parser = sub.add_parser(
        "needs",
        help="the distributions a config needs installed (for building an image)",
        description="Print which distributions provide the plugins CONFIG names: installed "
        "ones from their metadata, others from a package index (a distribution named "
        "scheduler-plugin-<name-in-kebab-case> whose wheel declares the plugin's entry "
        "point and admits this pluggable-scheduler). Exit 1 naming every plugin no "
        "distribution was found for.",
    )
    parser.add_argument("config", metavar="CONFIG", help="KubeSchedulerConfiguration file")
    parser.add_argument(
        "--index-url",
        help="simple API of the index to look plugins up on (default: $PIP_INDEX_URL, else PyPI's)",
    )
    parser.add_argument(
        "--no-index", action="store_true", help="installed metadata only; ask no index"
    )
    parser.add_argument(
        "--output",
        choices=["text", "json", "requirements"],
        default="text",
        help="requirements: only the pip requirement lines (pip install -r)",
    )
    parser.set_defaults(func=_cmd_needs)
