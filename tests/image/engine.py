"""A Docker engine for the image tests: the one already running, or a dockerd of our own.

When ``docker info`` answers (``DOCKER_HOST`` or the default socket), that
engine is used as it is and left running. Otherwise, as root with ``dockerd``
installed (Debian's ``docker.io``, which ``.ci/run`` installs), a private
dockerd is started with its socket, data root and exec root in a temporary
directory, and stopped by its PID afterwards, its directory removed.

That dockerd changes nothing on the host's network: ``--bridge=none
--iptables=false --ip6tables=false`` (no ``docker0``, no NAT or FORWARD rules;
builds and containers use ``--network host`` to reach the loopback package
index and API server anyway). The host's links, iptables rules and forwarding
sysctls are recorded before it starts and compared after it stops; whatever
differs is put back, and reported.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Progress = Callable[[str], None]

#: How long a build may stay silent before a progress line says it still runs.
PROGRESS_INTERVAL = 20.0
_FORWARDING = ("/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding")


class EngineUnavailable(RuntimeError):
    """No Docker engine can be used here; the message says what is missing."""


@dataclass
class DockerEngine:
    """The ``docker`` CLI bound to one engine."""

    cli: str
    env: dict[str, str]
    #: PID of the dockerd started for the tests; None for an engine found running.
    pid: int | None = None
    workdir: Path | None = None

    def run(
        self, *args: str, check: bool = True, timeout: float = 300.0, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``docker ARGS``, output captured; a failure names the command and its output."""
        result = subprocess.run(
            [self.cli, *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            input=input,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"`docker {' '.join(args)}` failed (exit {result.returncode}):\n"
                f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
            )
        return result

    def stream(self, args: Sequence[str], log: Path, what: str, progress: Progress) -> float:
        """``docker ARGS`` with its output in ``log``; a progress line every so often.

        Returns the wall time in seconds. Fails with the log's tail.
        """
        started = time.monotonic()
        with open(log, "w") as out:
            process = subprocess.Popen(
                [self.cli, *args], env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
            try:
                while True:
                    try:
                        returncode = process.wait(PROGRESS_INTERVAL)
                        break
                    except subprocess.TimeoutExpired:
                        progress(
                            f"still {what}: {time.monotonic() - started:.0f} s so far, "
                            f"at: {_last_step(log)}"
                        )
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        elapsed = time.monotonic() - started
        if returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-60:])
            raise AssertionError(f"{what} failed (exit {returncode}); log {log}:\n{tail}")
        return elapsed


def _last_step(log: Path) -> str:
    """The latest ``Step N/M : ...`` line of a classic build's output (or its last line)."""
    lines = log.read_text(errors="replace").splitlines()
    steps = [line for line in lines if line.startswith("Step ")]
    last = steps[-1] if steps else (lines[-1] if lines else "(no output yet)")
    return last[:160]


# --------------------------------------------------------------------------- host network state


@dataclass(frozen=True)
class NetworkState:
    """What a dockerd may change on the host's network, as ``ip``/``iptables-save`` see it."""

    links: frozenset[str]
    sysctls: tuple[tuple[str, str], ...]
    iptables: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def capture(cls) -> NetworkState:
        links = frozenset(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else ()
        sysctls = tuple(
            (path, Path(path).read_text().strip()) for path in _FORWARDING if Path(path).exists()
        )
        rules = []
        for save in ("iptables-save", "ip6tables-save"):
            if shutil.which(save):
                out = subprocess.run([save], capture_output=True, text=True, check=False).stdout
                rules.append((save, _without_comments(out)))
        return cls(frozenset(links), sysctls, tuple(rules))

    def restore(self, now: NetworkState) -> list[str]:
        """Undo what differs between ``now`` and this earlier state; say what it was."""
        undone: list[str] = []
        for link in sorted(now.links - self.links):
            subprocess.run(["ip", "link", "delete", link], capture_output=True, check=False)
            undone.append(f"deleted network link {link}")
        for path, value in self.sysctls:
            if dict(now.sysctls).get(path) != value:
                Path(path).write_text(value + "\n")
                undone.append(f"reset {path} to {value}")
        for save, before in self.iptables:
            after = dict(now.iptables).get(save, "")
            if after == before:
                continue
            command = save.removesuffix("-save")
            kept = _tables(before)
            for table, chains in _tables(after).items():
                if table in kept:
                    continue
                # A table only the engine filled: no rules, no own chains, accept all.
                subprocess.run([command, "-t", table, "-F"], check=False)
                subprocess.run([command, "-t", table, "-X"], check=False)
                for chain in chains:
                    subprocess.run([command, "-t", table, "-P", chain, "ACCEPT"], check=False)
            if kept:
                subprocess.run([f"{command}-restore"], input=before, text=True, check=False)
            undone.append(f"restored the {command} rules")
        return undone


def _without_comments(rules: str) -> str:
    """``iptables-save`` output without comments, counters and tables that do nothing.

    An empty table (built-in chains accepting everything, no rules) filters
    nothing, and an iptables built on nftables cannot delete one once created:
    it counts as absent.
    """
    kept: list[str] = []
    table: list[str] = []
    for line in rules.splitlines():
        if line.startswith("#"):
            continue
        line = line.split(" [")[0] if line.startswith(":") else line
        table.append(line)
        if line == "COMMIT":
            body = table[1:-1]
            if not all(entry.startswith(":") and entry.endswith(" ACCEPT") for entry in body):
                kept += table
            table = []
    return "\n".join(kept)


def _tables(rules: str) -> dict[str, list[str]]:
    """Table name -> its built-in chains (those with a policy) in ``iptables-save`` output."""
    tables: dict[str, list[str]] = {}
    current = ""
    for line in rules.splitlines():
        if line.startswith("*"):
            current = line[1:]
            tables[current] = []
        elif line.startswith(":") and line.split()[1] != "-":
            tables[current].append(line[1:].split()[0])
    return tables


# --------------------------------------------------------------------------- engines


def _answers(cli: str, env: dict[str, str]) -> bool:
    try:
        result = subprocess.run(
            [cli, "info", "--format", "{{.ServerVersion}}"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        return False
    return result.returncode == 0 and bool(result.stdout.strip())


def _unmount_below(root: Path) -> None:
    """Unmount whatever a killed dockerd left mounted under ``root`` (deepest first)."""
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    for point in sorted((p for p in points if p.startswith(f"{root}/")), reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


@contextlib.contextmanager
def docker_engine(progress: Progress) -> Iterator[DockerEngine]:
    """The engine to build and run images with; see the module's docstring."""
    cli = shutil.which("docker")
    if cli is None:
        raise EngineUnavailable(
            "the `docker` CLI is not installed (Debian: apt-get install docker.io)"
        )
    env = dict(os.environ)
    # The classic builder: it is in every engine, needs no buildx plugin, and
    # takes --network host without a BuildKit entitlement.
    env["DOCKER_BUILDKIT"] = "0"
    if _answers(cli, env):
        yield DockerEngine(cli, env)
        return
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineUnavailable(
            "no Docker engine answers `docker info` and `dockerd` is not installed "
            "(Debian: apt-get install docker.io; .ci/run installs it)"
        )
    if os.geteuid() != 0:
        raise EngineUnavailable(
            "no Docker engine answers `docker info`, and starting dockerd needs root"
        )
    before = NetworkState.capture()
    workdir = Path(tempfile.mkdtemp(prefix="psched-docker-"))
    socket = workdir / "docker.sock"
    env["DOCKER_HOST"] = f"unix://{socket}"
    log = workdir / "dockerd.log"
    command = [
        dockerd,
        f"--host=unix://{socket}",
        f"--data-root={workdir / 'data'}",
        f"--exec-root={workdir / 'exec'}",
        f"--pidfile={workdir / 'dockerd.pid'}",
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-forward=false",
        "--ip-masq=false",
    ]
    progress(f"starting dockerd (data root {workdir}; log {log})")
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    engine = DockerEngine(cli, env, process.pid, workdir)
    try:
        deadline = time.monotonic() + 60
        while not _answers(cli, env):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
                # Installed but broken is a failure to see, not a reason to skip.
                raise RuntimeError(f"dockerd did not start (exit {process.poll()}):\n{tail}")
            time.sleep(0.5)
        yield engine
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        _unmount_below(workdir)
        shutil.rmtree(workdir, ignore_errors=True)
        undone = before.restore(NetworkState.capture())
        if undone:
            progress("dockerd had changed the host's network; undone: " + "; ".join(undone))
