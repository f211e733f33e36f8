"""The image's HEALTHCHECK probe: it follows the daemon's configured address."""

from __future__ import annotations

import asyncio
import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.daemon.healthcheck import (
    config_path_of,
    main,
    probe_url,
    process_command_line,
    served_address,
    serving_of,
)
from scheduler.errors import UserError
from scheduler.observability.delegated_auth import DelegatedAuthOptions
from scheduler.observability.server import HealthServer, Serving
from scheduler.observability.tls import server_context

CONFIG_HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class _Livez(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/livez" else 404)
        self.end_headers()
        self.wfile.write(b"[-]scheduling-loop failed" if self.status != 200 else b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Livez)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    _Livez.status = 200


def _config(tmp_path: Path, address: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(f"{CONFIG_HEADER}pluggableScheduler:\n  serverAddress: {address}\n")
    return path


def test_config_path_is_read_from_the_daemons_command_line() -> None:
    run = ["/opt/venv/bin/python", "/opt/venv/bin/pluggable-scheduler", "run"]
    assert config_path_of([*run, "--config", "/etc/c.yaml"]) == Path("/etc/c.yaml")
    assert config_path_of([*run, "--config=/etc/c.yaml", "-v"]) == Path("/etc/c.yaml")
    assert config_path_of(run) is None


def test_wildcard_hosts_are_probed_on_loopback() -> None:
    assert probe_url("0.0.0.0:10259") == "https://127.0.0.1:10259/livez"
    assert probe_url(":8080") == "https://127.0.0.1:8080/livez"
    assert probe_url("[::]:9000") == "https://[::1]:9000/livez"
    assert probe_url("10.1.2.3:9000", "/readyz", "http") == "http://10.1.2.3:9000/readyz"
    with pytest.raises(UserError, match="any free port"):
        probe_url("127.0.0.1:0")


def test_healthy_at_the_configured_port(
    health_server: http.server.ThreadingHTTPServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = health_server.server_address[1]
    assert main(["--config", str(_config(tmp_path, f"0.0.0.0:{port}")), "--plain-http"]) == 0
    assert f"healthy: http://127.0.0.1:{port}/livez" in capsys.readouterr().out


def test_unhealthy_says_why(
    health_server: http.server.ThreadingHTTPServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _Livez.status = 503
    port = health_server.server_address[1]
    assert main(["--config", str(_config(tmp_path, f"127.0.0.1:{port}")), "--plain-http"]) == 1
    assert "HTTP 503: [-]scheduling-loop failed" in capsys.readouterr().err


def test_the_config_of_a_running_process_is_followed(
    health_server: http.server.ThreadingHTTPServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As in the container: no --config given, the daemon's (here: a stand-in's) is read."""
    port = health_server.server_address[1]
    config = _config(tmp_path, f"127.0.0.1:{port}")
    stand_in = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
            "run",
            "--config",
            str(config),
            "--plain-http",
        ]
    )
    try:
        # Until the child has exec'd, /proc shows the parent's command line.
        deadline = time.monotonic() + 10
        while "--config" not in process_command_line(stand_in.pid):
            assert time.monotonic() < deadline, "the stand-in did not start"
            time.sleep(0.01)
        assert main(["--pid", str(stand_in.pid)]) == 0
    finally:
        stand_in.kill()
        stand_in.wait()
    assert f"127.0.0.1:{port}/livez" in capsys.readouterr().out


def test_nothing_listening_and_bad_config_fail_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # closed again: nothing listens there
    assert main(["--config", str(_config(tmp_path, f"127.0.0.1:{port}"))]) == 1
    assert "unhealthy: https://127.0.0.1" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"{CONFIG_HEADER}pluggableScheduler:\n  serverAddress: nowhere\n")
    assert main(["--config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "pluggableScheduler.serverAddress" in err and "Traceback" not in err


def test_the_serving_flags_of_the_daemons_command_line_are_followed() -> None:
    run = ["pluggable-scheduler", "run", "--config", "/etc/c.yaml"]
    assert serving_of(run) == (False, None, None)
    assert serving_of([*run, "--plain-http"]) == (True, None, None)
    assert serving_of([*run, "--secure-port=9443", "--bind-address", "::"]) == (False, "::", 9443)
    assert served_address("0.0.0.0:10259", "::", 9443) == "[::]:9443"
    assert served_address("127.0.0.1:10259", None, None) == "127.0.0.1:10259"
    with pytest.raises(UserError, match="--secure-port 0"):
        served_address("0.0.0.0:10259", None, 0)


async def test_the_secure_port_is_probed_over_https_without_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in the image: a self-signed certificate, /livez always allowed, /metrics not."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # no in-cluster delegation
    serving = Serving("127.0.0.1:0", tls=server_context(), auth=DelegatedAuthOptions())
    async with HealthServer(serving=serving) as server:
        config = str(_config(tmp_path, f"0.0.0.0:{server.port}"))
        assert await asyncio.to_thread(main, ["--config", config]) == 0
        assert await asyncio.to_thread(main, ["--config", config, "--path", "/metrics"]) == 1
        # The same port over plain HTTP does not answer.
        assert await asyncio.to_thread(main, ["--config", config, "--plain-http"]) == 1
