"""``pluggable-scheduler run``: the daemon, against a real cluster."""

from __future__ import annotations

import argparse
import asyncio

from scheduler.cli.common import (
    add_config_option,
    add_logging_options,
    load_config_option,
    setup_logging,
)
from scheduler.config.models import SchedulerConfiguration
from scheduler.framework.loader import PluginCatalog


async def run_daemon(config: SchedulerConfiguration, kubeconfig: str | None) -> int:
    from scheduler.engine.daemon import Daemon
    from scheduler.kube.client import KubeClient

    conn = config.client_connection
    client = await KubeClient.from_kubeconfig(
        kubeconfig or conn.kubeconfig or None,
        qps=conn.qps,
        burst=conn.burst,
        content_type=conn.content_type,
    )
    try:
        daemon = Daemon(config, PluginCatalog.discover(), client)
        return await daemon.run()
    finally:
        await client.close()


def _cmd_run(args: argparse.Namespace) -> int:
    setup_logging(args)
    config = load_config_option(args)
    return asyncio.run(run_daemon(config, args.kubeconfig))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the scheduler daemon against a cluster",
        description="Run the scheduler against the cluster of --kubeconfig (or "
        "clientConnection.kubeconfig, or in-cluster config). Exits non-zero when "
        "it loses its leader lease, as kube-scheduler does.",
    )
    add_config_option(parser)
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig to use")
    add_logging_options(parser)
    parser.set_defaults(func=_cmd_run)
