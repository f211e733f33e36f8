"""``pluggable-scheduler run``: the daemon, against a real cluster."""

from __future__ import annotations

import argparse
import asyncio
import gc

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

    # The daemon keeps every pod of the cluster: millions of long-lived
    # container objects. With the default gen0 threshold (700), the initial
    # list of 150,000 pods ran 14 full collections (6.8 s of a 21 s sync);
    # with 10,000 it runs 3 (3.2 s). The daemon also freezes what it holds
    # after the first sync (see Daemon.start_informers).
    gc.set_threshold(10_000, 10, 10)
    conn = config.client_connection
    client = await KubeClient.from_kubeconfig(
        kubeconfig or conn.kubeconfig or None,
        qps=conn.qps,
        burst=conn.burst,
        content_type=conn.content_type,
    )
    try:
        daemon = Daemon(config, PluginCatalog.discover(), client, freeze_gc_after_sync=True)
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
