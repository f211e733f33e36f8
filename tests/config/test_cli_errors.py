"""Every start-up input error ends the CLI with exit 1 and a short message, no traceback.

Each case is one a user can hit (a config, cluster, pod or kubeconfig file
that is not UTF-8, nested absurdly deep or malformed; values Kubernetes would
refuse; a port already taken). The message must name the file, field path or
port so that the user knows what to fix; the traceback is for ``--debug``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.cli.main import main

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
DEEP = "a: " + "[" * 600 + "]" * 600 + "\n"
NOT_UTF8 = b"apiVersion: v1\nkind: List\n# caf\xe9\n"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Run the CLI in-process; its exit code and stderr."""
    code = main(list(argv))
    return code, capsys.readouterr().err


def one_line(err: str) -> str:
    assert err.startswith("error: "), err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    return err.strip()


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another socket is listening on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


# ----------------------------------------------------------------- config values


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            "leaderElection:\n  leaseDuration: 99999999999h\n",
            "  - leaderElection.leaseDuration: duration '99999999999h' is out of range",
        ),
        (
            "leaderElection:\n  leaseDuration: 1000000h\n",
            "  - leaderElection.leaseDuration: must be at most 2147483647s",
        ),
        ("clientConnection:\n  qps: .nan\n", "  - clientConnection.qps: "),
        ("clientConnection:\n  qps: .inf\n", "  - clientConnection.qps: "),
        (
            "leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n",
            "  - leaderElection.leaseDuration: must be greater than renewDeadline",
        ),
        ("podInitialBackoffSeconds: 0\n", "  - podInitialBackoffSeconds: "),
        (
            "podInitialBackoffSeconds: 20\npodMaxBackoffSeconds: 10\n",
            "  - podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds",
        ),
    ],
)
def test_config_values_kube_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, problem: str
) -> None:
    path = write(tmp_path, "config.yaml", HEADER + body)
    code, err = cli(capsys, "config", "validate", path)
    assert code == 1
    # The config convention: a header naming the file, then one line per problem.
    header, *details = err.splitlines()
    assert header == f"error: invalid scheduler configuration in {path}"
    assert all(line.startswith("  - ") for line in details), err
    assert any(line.startswith(problem) for line in details), err


# ----------------------------------------------------------------- unreadable files


def test_config_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "config.yaml", NOT_UTF8)
    code, err = cli(capsys, "config", "validate", path)
    assert code == 1
    assert one_line(err) == (
        f"error: config file {path} is not UTF-8 text: invalid continuation byte "
        "at byte 31 (line 3)"
    )


def test_config_nested_too_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "config.yaml", DEEP)
    code, err = cli(capsys, "config", "validate", path)
    assert code == 1
    assert one_line(err).startswith(
        f"error: config file {path} is not valid YAML: nested more than 100 levels deep"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (DEEP, "{path}: not valid YAML: nested more than 100 levels deep (line 1, column 103)"),
        (NOT_UTF8, "cluster file {path} is not UTF-8 text: invalid continuation byte"),
    ],
)
@pytest.mark.parametrize("command", ["simulate", "explain"])
def test_cluster_file_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    content: str | bytes,
    expected: str,
) -> None:
    path = write(tmp_path, "cluster.yaml", content)
    extra = ["--pod", path] if command == "explain" else []
    code, err = cli(capsys, command, "--cluster", path, *extra)
    assert code == 1
    assert one_line(err).startswith("error: " + expected.format(path=path))


@pytest.mark.parametrize("command", ["simulate", "explain", "config validate", "run"])
def test_plugin_problems_name_the_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Problems found against the installed plugins name the file, as schema problems do."""
    config = write(
        tmp_path,
        "bad.yaml",
        HEADER + "profiles:\n- plugins:\n    filter:\n      enabled: [{name: NoSuchPlugin}]\n",
    )
    cluster = write(tmp_path, "cluster.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
    pod = write(
        tmp_path,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
    )
    argv = {
        "simulate": ["simulate", "--cluster", cluster, "--config", config],
        "explain": ["explain", "--cluster", cluster, "--pod", pod, "--config", config],
        "config validate": ["config", "validate", config],
        # run refuses the plugin before it connects: the kubeconfig does not exist.
        "run": ["run", "--config", config, "--kubeconfig", str(tmp_path / "none"), "--plain-http"],
    }[command]
    code, err = cli(capsys, *argv)
    assert code == 1
    first, *details = err.splitlines()
    assert first.startswith(f"error: invalid scheduler configuration in {config}"), err
    assert any("profiles[0].plugins.filter.enabled[0].name" in line for line in details), err


def test_pod_file_nested_too_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write(tmp_path, "cluster.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
    pod = write(tmp_path, "pod.yaml", DEEP)
    code, err = cli(capsys, "explain", "--cluster", cluster, "--pod", pod)
    assert code == 1
    assert one_line(err).startswith(f"error: {pod}: not valid YAML or JSON: nested more than")


# ----------------------------------------------------------------- run: kubeconfig


@pytest.fixture
def quiet_config(tmp_path: Path) -> str:
    """A config whose health server takes any free port, so only the kubeconfig matters."""
    return write(
        tmp_path, "config.yaml", HEADER + "pluggableScheduler:\n  serverAddress: 127.0.0.1:0\n"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read kubeconfig {path}: No such file or directory"),
        (b"\xff\xfe\x00", "kubeconfig {path} is not UTF-8 text: invalid start byte at byte 0"),
        (DEEP, "kubeconfig {path}: not valid YAML: nested more than 100 levels deep"),
        ("garbage: [\n", "kubeconfig {path}: not valid YAML: while parsing a flow node"),
        ("- a\n- b\n", "kubeconfig {path} must hold one mapping"),
        ("apiVersion: v1\nkind: Config\n", "cannot use kubeconfig {path}: Invalid kube-config"),
        (
            "apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters: 5\n",
            "cannot use kubeconfig {path}: TypeError: ",
        ),
    ],
)
def test_run_with_a_bad_kubeconfig(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    quiet_config: str,
    content: str | bytes | None,
    expected: str,
) -> None:
    path = str(tmp_path / "kubeconfig")
    if content is not None:
        write(tmp_path, "kubeconfig", content)
    code, err = cli(capsys, "run", "--config", quiet_config, "--kubeconfig", path)
    assert code == 1
    assert one_line(err).startswith("error: " + expected.format(path=path)), err


def test_run_without_any_kubeconfig_says_where_one_comes_from(
    tmp_path: Path, quiet_config: str
) -> None:
    # A subprocess: the kube client reads KUBECONFIG and HOME when imported.
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env.update(HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "none"))
    proc = subprocess.run(
        [sys.executable, "-m", "scheduler", "run", "--config", quiet_config],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("error: no usable kubeconfig: "), proc.stderr
    assert last.endswith(
        "(pass --kubeconfig, set clientConnection.kubeconfig or KUBECONFIG, or run in a pod)"
    )
    assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------- ports


def test_run_with_server_address_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], taken_port: int
) -> None:
    config = write(
        tmp_path,
        "config.yaml",
        HEADER + f"pluggableScheduler:\n  serverAddress: 127.0.0.1:{taken_port}\n",
    )
    # The kubeconfig does not exist: the port is checked before the cluster.
    code, err = cli(capsys, "run", "--config", config, "--kubeconfig", str(tmp_path / "none"))
    assert code == 1
    assert one_line(err) == (
        f"error: pluggableScheduler.serverAddress: cannot listen on 127.0.0.1:{taken_port}: "
        "Address already in use"
    )


def test_run_with_secure_port_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet_config: str, taken_port: int
) -> None:
    code, err = cli(
        capsys, "run", "--config", quiet_config, "--secure-port", str(taken_port),
        "--kubeconfig", str(tmp_path / "none"),
    )  # fmt: skip
    assert code == 1
    assert one_line(err) == (
        f"error: --secure-port: cannot listen on 127.0.0.1:{taken_port}: Address already in use"
    )


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["--plain-http", "--secure-port", "9443", "--authorization-kubeconfig", "k"],
            "error: --plain-http serves without TLS or authentication; --secure-port, "
            "--authorization-kubeconfig are for secure serving only: drop them or --plain-http",
        ),
        (["--secure-port", "70000"], "error: --secure-port: 70000 is not a port (0-65535)"),
        (
            ["--authentication-token-webhook-cache-ttl", "10"],
            "error: --authentication-token-webhook-cache-ttl: invalid duration '10'",
        ),
        (
            ["--authorization-webhook-cache-unauthorized-ttl=-1s"],
            "error: --authorization-webhook-cache-unauthorized-ttl: '-1s' is negative",
        ),
        (
            ["--authorization-always-allow-paths", "/healthz,/a*b"],
            "error: --authorization-always-allow-paths: only a trailing * is allowed in '/a*b'",
        ),
        (
            ["--tls-cert-file", "{tmp}/tls.crt"],
            "error: --tls-cert-file needs --tls-private-key-file as well",
        ),
        (
            ["--tls-cert-file", "{tmp}/none.crt", "--tls-private-key-file", "{tmp}/tls.key"],
            "error: --tls-cert-file: {tmp}/none.crt does not exist or is not a file",
        ),
        (
            ["--tls-cert-file", "{tmp}/tls.key", "--tls-private-key-file", "{tmp}/tls.key"],
            "error: --tls-cert-file {tmp}/tls.key / --tls-private-key-file {tmp}/tls.key: "
            "cannot use them as a serving certificate and its key: ",
        ),
        (
            ["--authentication-kubeconfig", "{tmp}/none"],
            "error: cannot read --authentication-kubeconfig {tmp}/none: No such file or directory",
        ),
        (
            ["--authorization-kubeconfig", "{tmp}/tls.key"],
            "error: --authorization-kubeconfig {tmp}/tls.key must hold one mapping",
        ),
    ],
)
def test_run_with_bad_serving_flags(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    quiet_config: str,
    flags: list[str],
    expected: str,
) -> None:
    """Each is refused before anything starts (the kubeconfig does not even exist)."""
    from scheduler.observability.tls import self_signed_pem

    cert, key = self_signed_pem()
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    argv = [f.format(tmp=tmp_path) for f in flags]
    code, err = cli(
        capsys, "run", "--config", quiet_config, "--kubeconfig", str(tmp_path / "none"), *argv
    )
    assert code == 1
    assert one_line(err).startswith(expected.format(tmp=tmp_path)), err


def test_run_with_an_authentication_kubeconfig_the_client_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet_config: str
) -> None:
    """Well-formed YAML but no context: found when the secure port starts, still one line."""
    from scheduler.tools.controlplane import write_kubeconfig

    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig", server="http://127.0.0.1:1", user="u", token=None
    )
    broken = write(tmp_path, "broken", "apiVersion: v1\nkind: Config\n")
    code, err = cli(
        capsys, "run", "--config", quiet_config, "--kubeconfig", str(kubeconfig),
        "--authentication-kubeconfig", broken,
    )  # fmt: skip
    assert code == 1
    assert one_line(err).startswith(
        f"error: --authentication-kubeconfig: cannot use {broken}: Invalid kube-config"
    ), err


def test_emulator_port_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], taken_port: int
) -> None:
    out = str(tmp_path / "emulator.kubeconfig")
    code, err = cli(capsys, "emulator", "--port", str(taken_port), "--kubeconfig-out", out)
    assert code == 1
    line = one_line(err)
    assert line.startswith(f"error: cannot listen on 127.0.0.1:{taken_port}: "), line
    assert line.endswith("address already in use")
    assert not Path(out).exists()


# ----------------------------------------------------------------- --debug


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback(tmp_path: Path, where: str) -> None:
    path = write(tmp_path, "config.yaml", DEEP)
    argv = ["config", "validate", path]
    argv = ["--debug", *argv] if where == "before" else [*argv[:2], "--debug", path]
    proc = subprocess.run(
        [sys.executable, "-m", "scheduler", *argv], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"error: config file {path} is not valid")
