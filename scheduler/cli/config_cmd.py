"""``pluggable-scheduler config validate FILE`` and ``config defaults``.

``validate`` runs everything start-up would run on a config short of
connecting to a cluster (schema, cross-field rules, plugin names against the
installed plugins, plugin args), so a config can be checked in CI before it is
deployed. ``defaults`` prints the effective default config, a starting point
that is itself valid.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scheduler.errors import UserError

if TYPE_CHECKING:
    from scheduler.config import PluginCatalogView, ResolvedProfile

__all__ = ["discover_catalog", "register", "validate_file"]


def discover_catalog() -> PluginCatalogView:
    """The catalog of installed plugins (the plugin loader's ``PluginCatalog.discover()``).

    Imported lazily so that ``--help`` and the config models do not pay for
    scanning entry points.
    """
    from scheduler.framework.loader import PluginCatalog

    return PluginCatalog.discover()


def validate_file(path: Path, catalog: PluginCatalogView) -> list[ResolvedProfile]:
    """Load ``path`` and resolve its profiles; ``UserError`` names the file and every problem."""
    from scheduler.config import load_config, resolve_profiles

    config = load_config(path)
    try:
        return resolve_profiles(config, catalog)
    except UserError as err:
        raise UserError(f"invalid scheduler configuration in {path}", details=err.details) from None


def _summary(profile: ResolvedProfile) -> str:
    from scheduler.config import ExtensionPoint

    queue_sort = ", ".join(profile.names_at(ExtensionPoint.QUEUE_SORT))
    return (
        f"  profile {profile.scheduler_name!r}: {len(profile.enabled_plugins)} plugins, "
        f"queueSort {queue_sort}, bind {', '.join(profile.names_at(ExtensionPoint.BIND))}"
    )


def _cmd_validate(args: argparse.Namespace) -> int:
    path = Path(args.file)
    profiles = validate_file(path, discover_catalog())
    print(f"{path}: valid ({len(profiles)} profile{'s' if len(profiles) != 1 else ''})")
    for profile in profiles:
        print(_summary(profile))
    return 0


def _cmd_defaults(args: argparse.Namespace) -> int:
    import yaml

    from scheduler.config import default_config_document

    document = default_config_document(discover_catalog())
    if args.output == "json":
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(document, sys.stdout, sort_keys=False)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``config`` command and its ``validate`` and ``defaults`` sub-commands."""
    parser = subparsers.add_parser(
        "config",
        help="validate a config file or print the default config",
        description="Work with KubeSchedulerConfiguration files offline.",
    )
    actions = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    validate = actions.add_parser(
        "validate",
        help="check a config file against the installed plugins (exit 0 valid, 1 invalid)",
        description="Check a KubeSchedulerConfiguration file: fields, plugin names, plugin "
        "args. Every problem is printed with its field path.",
    )
    validate.add_argument("file", metavar="FILE", help="YAML or JSON config file")
    validate.set_defaults(func=_cmd_validate)
    defaults = actions.add_parser(
        "defaults",
        help="print the effective default configuration",
        description="Print the default configuration for the installed plugins.",
    )
    defaults.add_argument("--output", choices=("yaml", "json"), default="yaml")
    defaults.set_defaults(func=_cmd_defaults)
