"""Commands import only what they run (start-up time is paid on every command).

Every command's parser is built on each start, so a heavy import at the top of
any ``*_cmd`` module slowed ``--help`` and ``config validate`` to ~2 s. Checked
by what a fresh interpreter has imported (not by timing, which the benchmarks
measure): the API client, the HTTP stack, the emulator, the daemon and the
engine stay out of commands that do not talk to a cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLUSTER_ONLY = (
    "kubernetes_asyncio",
    "aiohttp",
    "scheduler.simulation",
    "scheduler.daemon",
    "scheduler.engine",
    "scheduler.kube",
)
PROBE = """
import contextlib, io, json, sys
from scheduler.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported(cwd: Path, *argv: str) -> tuple[int, set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=cwd,  # not the checkout: the installed (or PYTHONPATH) package, as users run it
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(result.stdout.splitlines()[-1])
    return report["code"], set(report["modules"])


def _loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_help_imports_no_command_code(tmp_path: Path) -> None:
    code, modules = _imported(tmp_path, "--help")
    assert code == 0
    heavy = ("pydantic", "numpy", "yaml", "structlog", "scheduler.framework", "scheduler.config")
    assert _loaded(modules, CLUSTER_ONLY + heavy) == []


@pytest.mark.parametrize(
    "argv",
    [["config", "validate", "FILE"], ["config", "defaults"], ["plugins", "list"]],
    ids=" ".join,
)
def test_offline_commands_import_no_client_or_emulator(tmp_path: Path, argv: list[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    )
    code, modules = _imported(tmp_path, *(str(config) if a == "FILE" else a for a in argv))
    assert code == 0
    assert _loaded(modules, CLUSTER_ONLY) == []
