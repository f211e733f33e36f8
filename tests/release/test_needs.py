"""``plugins needs`` without an index round trip: installed plugins, errors, output formats.

The index lookups themselves run against a real index in test_install_by_name.py.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from scheduler import __version__
from scheduler.cli.main import main

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: pluggable-scheduler
  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
      disabled: [{name: PrioritySort}]
    score:
      enabled: [{name: NodeResourcesFit, weight: 2}]
"""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_installed_plugins_as_requirements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    assert main(["plugins", "needs", str(config), "--no-index", "--output", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    by_plugin = {p["plugin"]: p for p in document["plugins"]}
    assert by_plugin["NodeResourcesFit"]["distribution"] == "pluggable-scheduler"
    assert by_plugin["Coscheduling"]["where"] == "profiles[0].plugins.multiPoint.enabled[0]"
    assert by_plugin["Coscheduling"]["source"] == "installed"
    assert document["requirements"][0] == f"pluggable-scheduler=={__version__}"
    assert "scheduler-plugin-coscheduling==0.1.0" in document["requirements"]


def test_unreachable_index_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.replace("{name: Coscheduling}", "{name: ZoneGate}"))
    url = f"http://127.0.0.1:{closed_port()}/simple/"
    assert main(["plugins", "needs", str(config), "--index-url", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: cannot reach the package index at {url}scheduler-plugin-zone-gate/"
    )
    assert "Traceback" not in err


def test_kube_plugins_we_do_not_implement_have_no_distribution(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.replace("{name: Coscheduling}", "{name: PodGroupPodsCount}"))
    assert main(["plugins", "needs", str(config), "--no-index"]) == 1
    err = capsys.readouterr().err
    assert (
        "profiles[0].plugins.multiPoint.enabled[0]: plugin 'PodGroupPodsCount': a kube-scheduler"
        in err
    )


def test_unreadable_config_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("kind: Nope\n")
    assert main(["plugins", "needs", str(config), "--no-index"]) == 1
    assert str(config) in capsys.readouterr().err
