"""Real ``pluggable-scheduler run`` processes for end-to-end tests.

The CLI's own wiring, signal handling included; only the plugin catalog has
the test plugins (tests/e2e/plugins.py) added.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Cluster

ROOT = Path(__file__).resolve().parents[2]

RUN_WITH_TEST_PLUGINS = """
import sys
from scheduler.framework.loader import PluginCatalog
from tests.e2e.plugins import catalog_with_test_plugins

catalog = catalog_with_test_plugins()
PluginCatalog.discover = classmethod(lambda cls, group="": catalog)  # type: ignore
from scheduler.cli.main import main

sys.exit(main(["run", "--config", sys.argv[1], "--kubeconfig", sys.argv[2], *sys.argv[3:]]))
"""


#: ``run``'s flag for the plain-HTTP health and metrics the tests that scrape without TLS use.
PLAIN = ("--plain-http",)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start_run(
    cluster: Cluster,
    config: dict[str, Any],
    tmp: Path,
    name: str,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
) -> Any:
    """A ``run`` process with the test plugins, its config in ``tmp/name.json``.

    Its output goes to ``tmp/name.log``; ``env`` adds to the environment and
    ``args`` to ``run``'s command line (e.g. ``--plain-http``).
    """
    config_file = tmp / f"{name}.json"
    config_file.write_text(json.dumps(config))
    script = tmp / "run.py"
    script.write_text(RUN_WITH_TEST_PLUGINS)
    with (tmp / f"{name}.log").open("wb") as log:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            str(config_file),
            str(cluster.backend.kubeconfig),
            *args,
            stdout=log,
            stderr=log,
            cwd=ROOT,
            env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
        )
