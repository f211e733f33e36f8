"""``pluggable-scheduler new-plugin NAME``: scaffold a plugin distribution."""

from __future__ import annotations

import argparse
from pathlib import Path

from scheduler.errors import UserError


def _cmd_new_plugin(args: argparse.Namespace) -> int:
    from scheduler.framework.loader import PluginCatalog
    from scheduler.tools.scaffold import scaffold, validate_plugin_name

    names = validate_plugin_name(args.name)
    catalog = PluginCatalog.discover()
    if names.plugin in catalog.names():
        entry = catalog.entry(names.plugin)
        raise UserError(
            f"a plugin named {names.plugin!r} is already installed "
            f"(distribution {entry.distribution} {entry.version}); plugin names must be unique",
            details=["pick another name"],
        )
    directory = Path(args.directory) if args.directory else None
    names, target, written = scaffold(names.plugin, directory, repository_url=args.repository_url)
    print(f"created {names.dist} in {target}:")
    for path in written:
        print(f"  {path.relative_to(target)}")
    print()
    print("next steps:")
    print(f"  cd {target}")
    print("  pip install -e '.[test]'")
    print("  pytest")
    print("  pluggable-scheduler plugins list")
    print("to publish: python -m build && twine check --strict dist/* && twine upload dist/*")
    print("  (or push to GitHub: .github/workflows/publish.yml publishes each release)")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "new-plugin",
        help="scaffold a plugin distribution (entry point, args model, README, passing test)",
        description="Create a plugin distribution for plugin NAME (a CamelCase name such "
        "as ZoneGate, used to enable it in the configuration): pyproject.toml with the "
        "scheduler.plugins entry point, the plugin module and its args model, a README "
        "and tests using the emulated-cluster pytest fixtures. Install it with "
        "pip install -e '.[test]' and it shows up in 'plugins list'.",
    )
    parser.add_argument("name", metavar="NAME", help="plugin name, e.g. ZoneGate")
    parser.add_argument(
        "--directory",
        metavar="DIR",
        help="directory to create (default: ./scheduler-plugin-<name>); must not exist",
    )
    parser.add_argument(
        "--repository-url",
        metavar="URL",
        help="https:// URL of the plugin's source repository, for the index page's "
        "project links (pyproject.toml [project.urls])",
    )
    parser.set_defaults(func=_cmd_new_plugin)
