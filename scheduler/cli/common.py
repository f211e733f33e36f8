"""Options and loading steps shared by the commands that run the scheduler.

Like every ``*_cmd`` module it imports nothing heavy at module level: the
CLI builds every command's parser on each start, so whatever these modules
import, ``--help`` and ``config validate`` pay for too. Each command imports
what it runs (the config models, the engine, the client, the emulator) in
its own function.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.config.models import SchedulerConfiguration


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="KubeSchedulerConfiguration file (default: the default profile)",
    )


def add_feature_gates_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        default="",
        help="feature gates as kube-scheduler's flag (e.g. GenericWorkload=true,"
        "GangScheduling=true); each wins over the config's pluggableScheduler.featureGates",
    )


def add_logging_options(parser: argparse.ArgumentParser, default_format: str = "json") -> None:
    parser.add_argument(
        "--log-format", choices=["json", "text"], default=default_format, help="log output format"
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-v, -vv for debug)"
    )


def load_config_option(args: argparse.Namespace) -> SchedulerConfiguration:
    from scheduler.config import load_config
    from scheduler.config.loading import DEFAULT_CONFIG

    if getattr(args, "config", None):
        config = load_config(Path(args.config))
    else:
        config = load_config(DEFAULT_CONFIG)
    flag = getattr(args, "feature_gates", "") or ""
    if flag:
        from scheduler.errors import UserError
        from scheduler.model.featuregates import FeatureGateError, parse_feature_gates_flag

        try:
            gates = parse_feature_gates_flag(flag)
        except FeatureGateError as err:
            raise UserError(f"--feature-gates: {err}") from None
        config = config.with_feature_gate_flags(gates)
    return config


def setup_logging(args: argparse.Namespace) -> None:
    from scheduler.observability.logging import configure_logging

    configure_logging(args.log_format, args.verbose)


def print_result(output: str, as_json: Callable[[], Any], as_text: Callable[[], str]) -> None:
    """Print a command's result as indented JSON (``--output json``) or as text."""
    if output == "json":
        json.dump(as_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(as_text())
