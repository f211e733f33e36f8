"""A real Kubernetes control plane for tests: etcd + kube-apiserver, kube-scheduler and
kube-controller-manager.

The emulator is the suite's default backend, but users run real clusters, so the
same tests must also pass against a real kube-apiserver on a real etcd, the way
kube-scheduler's own integration tests and scheduler_perf run (no kubelets: nodes
are plain API objects). The binaries are built from the Go modules pinned in
``tools/controlplane/`` (there are no binary downloads on CI machines, only the
Go module proxy) and cached outside the repository, keyed by the pinned versions
and a digest of the pin.

Entry points:

- :func:`ensure_binaries` builds (or reuses) ``kube-apiserver``, ``kube-scheduler``,
  ``kube-controller-manager`` and ``etcd`` and returns their directory.
- :func:`start_control_plane` starts etcd and kube-apiserver on loopback ports with
  generated certificates, static tokens and RBAC, waits for ``/readyz`` and yields a
  :class:`ControlPlane`; everything is torn down on exit, also when the body raises.
- :func:`run_kube_scheduler` runs the built kube-scheduler against any kubeconfig
  (the real apiserver or the emulator) with a JSON content type, as the peer for
  benchmarks and the oracle for fidelity tests.
- :func:`run_kube_controller_manager` runs the built kube-controller-manager against
  a control plane, with only the controllers a test asks for (by default the
  PersistentVolume binder and the ephemeral-volume controller; :data:`DRA_CONTROLLERS`
  for ResourceClaims). It is *not* part of :func:`start_control_plane`: a control
  plane runs without any controllers unless a test (or the ``volume_controllers``
  and ``dra_controllers`` fixtures) starts them.
- :class:`RestClient` is a small synchronous JSON client for test set-up, so that
  starting a control plane needs neither an event loop nor generated models.

``python -m scheduler.tools.controlplane build`` pre-builds the binaries (CI does
this before the suite so the build time is visible on its own);
``python -m scheduler.tools.controlplane up`` runs a control plane until Ctrl-C.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final

import yaml

__all__ = [
    "ADMIN",
    "DEFAULT_USERS",
    "DRA_CONTROLLERS",
    "FEATURE_GATES",
    "KUBE_SCHEDULER",
    "RUNTIME_CONFIG",
    "SCHEDULER_SERVICE_ACCOUNT",
    "UNPRIVILEGED",
    "VOLUME_CONTROLLERS",
    "ApiError",
    "ApiResponse",
    "ControlPlane",
    "ControlPlaneError",
    "KubeControllerManagerProcess",
    "KubeSchedulerProcess",
    "RestClient",
    "StaticUser",
    "cache_root",
    "ensure_binaries",
    "pinned_versions",
    "run_kube_controller_manager",
    "run_kube_scheduler",
    "start_control_plane",
]

log = logging.getLogger(__name__)

#: The Go modules that pin what gets built. Found relative to this file, because
#: they live in the repository (``tools/`` is not part of the wheel).
TOOLS_DIR: Final = Path(__file__).resolve().parents[2] / "tools" / "controlplane"
KUBERNETES_MODULE_DIR: Final = TOOLS_DIR / "kubernetes"
ETCD_MODULE_DIR: Final = TOOLS_DIR / "etcd"

KUBE_APISERVER: Final = "kube-apiserver"

#: The feature gates the test control plane runs with, on kube-apiserver and on
#: kube-scheduler alike: kube 1.36's native Workload API (Workload, PodGroup and
#: pods' ``spec.schedulingGroup``, behind GenericWorkload) and the
#: GangScheduling plugin that schedules it.
FEATURE_GATES: Final = "GenericWorkload=true,GangScheduling=true"
#: The alpha API those gates serve (alpha groups are off unless asked for).
RUNTIME_CONFIG: Final = "scheduling.k8s.io/v1alpha2=true"
KUBE_SCHEDULER_BINARY: Final = "kube-scheduler"
KUBE_CONTROLLER_MANAGER: Final = "kube-controller-manager"
ETCD: Final = "etcd"
#: The ``k8s.io/kubernetes/cmd/...`` binaries, built together in one ``go build``
#: so that the packages they share are compiled once.
KUBE_BINARIES: Final = (KUBE_APISERVER, KUBE_SCHEDULER_BINARY, KUBE_CONTROLLER_MANAGER)
BINARIES: Final = (*KUBE_BINARIES, ETCD)
#: How often a running ``go build`` reports that it is still going, so that a cold
#: build (many minutes) never looks like a hung test session.
BUILD_PROGRESS_INTERVAL: Final = 30.0

#: Where to look for ``go`` after ``$GO``: PATH, then the official tarball's location.
GO_CANDIDATES: tuple[str, ...] = ("go", "/usr/local/go/bin/go")
#: Use these binaries instead of building (a directory holding all of BINARIES).
BIN_DIR_ENV: Final = "SCHEDULER_CONTROLPLANE_BIN_DIR"
#: Keep the control plane's work directory (certificates, logs, etcd data) after stop.
KEEP_WORKDIR_ENV: Final = "SCHEDULER_CONTROLPLANE_KEEP"

#: Admission plugins that only make sense with kube-controller-manager running all
#: its default controllers. The control plane runs none unless a test starts
#: :func:`run_kube_controller_manager`, and even then only a few (see
#: :data:`VOLUME_CONTROLLERS`), so these stay disabled always. Without the
#: controllers, ServiceAccount admission rejects every pod (the ``default``
#: ServiceAccount is created by a controller), TaintNodesByCondition leaves a
#: ``node.kubernetes.io/not-ready:NoSchedule`` taint on every new node (the node
#: lifecycle controller removes it) and StorageObjectInUseProtection adds
#: finalizers to PVCs/PVs that nothing would ever remove (only the pvc-protection
#: and pv-protection controllers do; StorageObjectInUseProtection could be enabled
#: only if every run also started those). Kubernetes' own
#: integration tests disable ServiceAccount and TaintNodesByCondition the same way.
#: Priority, DefaultTolerationSeconds, NodeRestriction and the rest stay on, as in
#: a real cluster.
DISABLED_ADMISSION_PLUGINS: Final = (
    "ServiceAccount",
    "TaintNodesByCondition",
    "StorageObjectInUseProtection",
)

SERVICE_ACCOUNT_ISSUER: Final = "https://kubernetes.default.svc.cluster.local"
SERVICE_CLUSTER_IP_RANGE: Final = "10.0.0.0/24"


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached."""


# --------------------------------------------------------------------------- versions


def _require_version(go_mod: Path, module: str) -> str:
    """Read the version `go_mod` requires of `module`, the single source of the pin."""
    try:
        text = go_mod.read_text()
    except FileNotFoundError:
        raise ControlPlaneError(
            f"{go_mod} not found: the control plane is built from the repository's "
            f"tools/controlplane/ modules, run from a source checkout"
        ) from None
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.MULTILINE)
    if match is None:
        raise ControlPlaneError(f"{go_mod} does not require {module}")
    return match.group(1)


def pinned_versions() -> tuple[str, str]:
    """The pinned ``(kubernetes, etcd)`` versions, e.g. ``("v1.36.3", "v3.6.8")``."""
    return (
        _require_version(KUBERNETES_MODULE_DIR / "go.mod", "k8s.io/kubernetes"),
        _require_version(ETCD_MODULE_DIR / "go.mod", "go.etcd.io/etcd/server/v3"),
    )


def cache_root() -> Path:
    """Where built binaries are cached: outside the repository, shared by checkouts."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pluggable-scheduler" / "controlplane"


# --------------------------------------------------------------------------- building


def _find_go() -> str:
    """Locate the Go toolchain, failing fast with a useful message when it is absent."""
    for candidate in (os.environ.get("GO", ""), *GO_CANDIDATES):
        if candidate and (found := shutil.which(candidate)):
            return found
    raise ControlPlaneError(
        f"the Go toolchain is needed to build {_names(BINARIES)} "
        "(go 1.26 or newer, with access to the Go module proxy) but `go` was not found "
        f"on PATH or at /usr/local/go/bin/go; install Go, set GO=/path/to/go, or set "
        f"{BIN_DIR_ENV} to a directory that already holds {', '.join(BINARIES)}"
    )


def _names(names: Sequence[str]) -> str:
    """``a, b and c``: binary names for messages, kept in step with :data:`BINARIES`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _pin_digest() -> str:
    """Hash the module files and the set of binaries, so that any change rebuilds.

    Any change to the pin (not only the version) changes go.mod/go.sum; the
    binary names are hashed too so that a cache built before a binary was added
    is rebuilt rather than found incomplete binary by binary.
    """
    digest = hashlib.sha256()
    digest.update(" ".join(BINARIES).encode())
    for module_dir in (KUBERNETES_MODULE_DIR, ETCD_MODULE_DIR):
        for name in ("go.mod", "go.sum"):
            digest.update(name.encode())
            digest.update((module_dir / name).read_bytes())
    return digest.hexdigest()


def _kubernetes_ldflags(version: str) -> str:
    """Version stamps as Kubernetes' own build sets them (hack/lib/version.sh).

    Without them the binaries call themselves ``v0.0.0-master`` in ``/version`` and
    in their compatibility-version checks, which clients and our tests would see.
    """
    match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+.*", version)
    if match is None:
        raise ControlPlaneError(f"cannot parse Kubernetes version {version!r}")
    values = {
        "gitVersion": version,
        "gitMajor": match.group(1),
        "gitMinor": match.group(2),
        "gitTreeState": "clean",
        "buildDate": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.{key}={value}" for key, value in values.items()]
    return " ".join(flags)


def _go_build(
    go: str,
    module_dir: Path,
    packages: Sequence[str],
    output: str,
    ldflags: str,
    log_file: IO[str],
    what: str,
) -> None:
    """``go build`` `packages` of the module in `module_dir` to `output` (file, or ``dir/``).

    Logs that `what` is still being built every :data:`BUILD_PROGRESS_INTERVAL`
    seconds, and how long it took.
    """
    env = dict(os.environ)
    # Static binaries, and go.sum is authoritative: a build never edits the pin.
    env.update(CGO_ENABLED="0", GOFLAGS="-mod=readonly")
    command = [go, "build", "-trimpath", f"-ldflags={ldflags}", "-o", output, *packages]
    log_file.write(f"$ (cd {module_dir} && {' '.join(command)})\n")
    log_file.flush()
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=module_dir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    try:
        while True:
            try:
                returncode = process.wait(BUILD_PROGRESS_INTERVAL)
                break
            except subprocess.TimeoutExpired:
                log.warning(
                    "still building %s: %.0f s so far (log: %s)",
                    what,
                    time.monotonic() - started,
                    log_file.name,
                )
    finally:
        if process.poll() is None:  # interrupted (Ctrl-C): do not leave the compiler running
            process.kill()
            process.wait()
    if returncode != 0:
        packages_text = " ".join(packages)
        raise ControlPlaneError(f"`go build {packages_text}` failed (exit {returncode})")
    log.warning("built %s in %.0f s", what, time.monotonic() - started)


def _binaries_present(bin_dir: Path) -> bool:
    return all(os.access(bin_dir / name, os.X_OK) for name in BINARIES)


def ensure_binaries() -> Path:
    """Return a directory with :data:`BINARIES` (the three kube binaries and ``etcd``).

    Builds them on first use (10-20 minutes on two cores, most of it compiling
    kube-apiserver and kube-controller-manager) and reuses them afterwards until
    the pin in ``tools/controlplane/`` or the set of binaries changes. A running
    build logs a line every :data:`BUILD_PROGRESS_INTERVAL` seconds. A file lock
    serialises concurrent callers (parallel test processes) so only one builds and
    the others wait for it.
    """
    override = os.environ.get(BIN_DIR_ENV)
    if override:
        bin_dir = Path(override)
        if not _binaries_present(bin_dir):
            raise ControlPlaneError(f"{BIN_DIR_ENV}={override} lacks one of {', '.join(BINARIES)}")
        return bin_dir

    kubernetes_version, etcd_version = pinned_versions()
    stamp = _pin_digest()
    # The digest is part of the directory, not only of the stamp: checkouts whose
    # pins differ for the same versions (another branch, another binary set) then
    # each keep their own binaries instead of rebuilding over the other's, which
    # would also replace binaries under that checkout's running tests.
    key_dir = cache_root() / f"{kubernetes_version}-{etcd_version}-{stamp[:12]}"
    bin_dir = key_dir / "bin"
    stamp_file = key_dir / "stamp"

    def up_to_date() -> bool:
        return (
            stamp_file.is_file()
            and stamp_file.read_text().strip() == stamp
            and _binaries_present(bin_dir)
        )

    if up_to_date():
        return bin_dir
    go = _find_go()
    key_dir.mkdir(parents=True, exist_ok=True)
    with open(key_dir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if up_to_date():  # another process built it while we waited for the lock
            return bin_dir
        build_log = key_dir / "build.log"
        staging = Path(tempfile.mkdtemp(prefix="bin.", dir=key_dir))
        started = time.monotonic()
        log.warning(
            "building Kubernetes %s (%s) and etcd %s into %s "
            "(a cold build takes 10-20 minutes on two cores; log: %s)",
            kubernetes_version,
            _names(KUBE_BINARIES),
            etcd_version,
            bin_dir,
            build_log,
        )
        try:
            with open(build_log, "w") as log_file:
                etcd_main = ["go.etcd.io/etcd/server/v3"]
                _go_build(
                    go, ETCD_MODULE_DIR, etcd_main, str(staging / ETCD), "-s -w", log_file, ETCD
                )
                _go_build(
                    go,
                    KUBERNETES_MODULE_DIR,
                    [f"k8s.io/kubernetes/cmd/{name}" for name in KUBE_BINARIES],
                    f"{staging}/",
                    _kubernetes_ldflags(kubernetes_version),
                    log_file,
                    _names(KUBE_BINARIES),
                )
            staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared
            shutil.rmtree(bin_dir, ignore_errors=True)
            staging.rename(bin_dir)
        except ControlPlaneError as error:
            raise ControlPlaneError(f"{error}; build log:\n{_tail(build_log, 40)}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        stamp_file.write_text(stamp + "\n")
        log.warning("built control plane binaries in %.0f s", time.monotonic() - started)
    return bin_dir


# --------------------------------------------------------------------------- REST client


@dataclasses.dataclass(frozen=True)
class ApiResponse:
    """One API response: status code and the decoded JSON body (or text, if not JSON)."""

    status: int
    body: Any

    @property
    def reason(self) -> str | None:
        """The ``reason`` of a ``Status`` body (``Forbidden``, ``NotFound``, ...), if any."""
        if isinstance(self.body, dict) and self.body.get("kind") == "Status":
            reason = self.body.get("reason")
            return reason if isinstance(reason, str) else None
        return None


class ApiError(ControlPlaneError):
    """A request that had to succeed did not."""

    def __init__(self, method: str, url: str, response: ApiResponse) -> None:
        super().__init__(f"{method} {url} -> {response.status}: {response.body}")
        self.response = response


class RestClient:
    """A minimal synchronous JSON client for setting up and inspecting test clusters.

    Deliberately independent of the product's async client, so that control-plane
    start-up and test fixtures work outside an event loop and test the wire
    protocol rather than a client library. Works for the real apiserver (TLS,
    bearer token) and for the emulator (plain HTTP).
    """

    def __init__(
        self,
        server: str,
        *,
        token: str | None = None,
        ca_file: Path | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._ssl: ssl.SSLContext | None = None
        if self.server.startswith("https:"):
            self._ssl = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        check: bool = True,
    ) -> ApiResponse:
        """Send one request; with `check`, any status >= 400 raises :class:`ApiError`."""
        url = self.server + path
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._ssl) as reply:
                response = ApiResponse(reply.status, _decode(reply.read()))
        except urllib.error.HTTPError as error:
            response = ApiResponse(error.code, _decode(error.read()))
        if check and response.status >= 400:
            raise ApiError(method, url, response)
        return response

    def get(self, path: str, *, check: bool = True) -> ApiResponse:
        return self.request("GET", path, check=check)

    def post(self, path: str, body: Any, *, check: bool = True) -> ApiResponse:
        return self.request("POST", path, body, check=check)

    def delete(self, path: str, *, check: bool = True) -> ApiResponse:
        return self.request("DELETE", path, check=check)

    def patch_status(self, path: str, patch: Mapping[str, Any]) -> ApiResponse:
        """Merge-patch the ``status`` subresource (e.g. a node's Ready condition)."""
        return self.request(
            "PATCH", path + "/status", patch, content_type="application/merge-patch+json"
        )


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


# --------------------------------------------------------------------------- users


@dataclasses.dataclass(frozen=True)
class StaticUser:
    """An identity in kube-apiserver's ``--token-auth-file``.

    The token file is read once at start-up, so every identity a test may need is
    declared before the control plane starts. A username of the form
    ``system:serviceaccount:<ns>:<name>`` is matched by RBAC exactly like a real
    ServiceAccount's token, so RBAC tests need no token controller.
    """

    name: str
    groups: tuple[str, ...] = ()


#: cluster-admin through the ``system:masters`` group.
ADMIN: Final = StaticUser("admin", ("system:masters",))
#: Authenticated, bound to nothing: sees discovery, is denied everything else.
UNPRIVILEGED: Final = StaticUser("unprivileged")
#: kube-scheduler's own identity, bound by the bootstrap RBAC policy to the
#: ``system:kube-scheduler`` and ``system:volume-scheduler`` ClusterRoles.
KUBE_SCHEDULER: Final = StaticUser("system:kube-scheduler")
#: Our scheduler as a ServiceAccount would be in a deployment; no roles bound until
#: a test binds them (e.g. the ClusterRole shipped in ``deploy/``).
SCHEDULER_SERVICE_ACCOUNT: Final = StaticUser(
    "system:serviceaccount:kube-system:pluggable-scheduler",
    ("system:serviceaccounts", "system:serviceaccounts:kube-system"),
)
DEFAULT_USERS: Final = (ADMIN, UNPRIVILEGED, KUBE_SCHEDULER, SCHEDULER_SERVICE_ACCOUNT)


# --------------------------------------------------------------------------- processes


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, lines: int, skip: re.Pattern[str] | None = None) -> str:
    """The last `lines` lines of a log, without those matching `skip` (our own probes)."""
    try:
        kept = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"({path} does not exist)"
    if skip is not None:
        kept = [line for line in kept if not skip.search(line)]
    return "\n".join(kept[-lines:])


def _die_with_parent() -> list[str]:
    """A command prefix that kills the child when this process dies without cleaning up.

    ``finally`` and :mod:`atexit` cover failing tests and normal exits, but not a
    SIGKILL or a CI timeout's SIGTERM, after which etcd and kube-apiserver would
    linger. ``setpriv --pdeathsig`` (util-linux) sets PR_SET_PDEATHSIG without a
    ``preexec_fn`` (unsafe with the emulator's threads). SIGKILL, because an
    orphaned kube-apiserver's graceful shutdown hangs once etcd is gone. The signal
    follows the *thread* that forked, so it is used only from the main thread.
    """
    setpriv = shutil.which("setpriv")
    if setpriv is None or threading.current_thread() is not threading.main_thread():
        return []
    return [setpriv, "--pdeathsig", "KILL", "--"]


class _Process:
    """A child process with its output in a log file; stopping is idempotent."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        log_path: Path,
        cwd: Path,
        *,
        explain: Callable[[Path], str] | None = None,
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.explain = explain or (lambda path: f"last lines of {path}:\n{_tail(path, 40)}")
        with open(log_path, "ab") as log_file:
            log_file.write(f"$ {' '.join(command)}\n".encode())
            log_file.flush()
            self.popen = subprocess.Popen(
                [*_die_with_parent(), *command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                # Own process group: Ctrl-C in a terminal goes to pytest, which then
                # tears the children down in order instead of having them die first.
                start_new_session=True,
            )

    def failure(self, what: str) -> ControlPlaneError:
        return ControlPlaneError(
            f"{self.name} {what} (exit code {self.popen.poll()}); {self.explain(self.log_path)}"
        )

    def stop(self, timeout: float = 15.0) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def _wait_until(
    what: str, probe: Callable[[], bool], process: _Process, timeout: float, interval: float = 0.2
) -> None:
    """Poll `probe` until it returns true; fail early if `process` died meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        if process.popen.poll() is not None:
            raise process.failure(f"exited while waiting for {what}")
        with contextlib.suppress(OSError, ssl.SSLError):
            if probe():
                return
        if time.monotonic() > deadline:
            raise process.failure(f"did not reach {what} within {timeout:.0f} s")
        time.sleep(interval)


def _exists(client: RestClient, path: str) -> bool:
    return client.get(path, check=False).status == 200


def _http_ok(url: str, *, context: ssl.SSLContext | None = None, token: str | None = None) -> bool:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as reply:
            status: int = reply.status
            return status == 200
    except urllib.error.HTTPError:
        return False


# --------------------------------------------------------------------------- certificates


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ControlPlaneError("the `openssl` command is needed to generate test certificates")
    result = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def _generate_pki(pki: Path) -> None:
    """A throwaway CA, a serving certificate for loopback, and a ServiceAccount key.

    ECDSA P-256 for TLS (fast to generate), RSA for the ServiceAccount signing key
    (what kubeadm uses; every token verifier supports it). Valid for a week, far
    longer than any test session.
    """
    pki.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    _openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "7",
        "-subj", "/CN=pluggable-scheduler-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=pki,
    )  # fmt: skip
    _openssl(
        "req", "-new", *ec, "-keyout", "apiserver.key", "-out", "apiserver.csr",
        "-subj", "/CN=kube-apiserver",
        cwd=pki,
    )  # fmt: skip
    (pki / "apiserver.ext").write_text(
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc,"
        "DNS:kubernetes.default.svc.cluster.local\n"
    )
    _openssl(
        "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-set_serial", str(secrets.randbits(63)), "-days", "7",
        "-extfile", "apiserver.ext", "-out", "apiserver.crt",
        cwd=pki,
    )  # fmt: skip
    _openssl(
        "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key",
        cwd=pki,
    )  # fmt: skip
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


# --------------------------------------------------------------------------- control plane


def write_kubeconfig(
    path: Path, *, server: str, user: str, token: str | None, ca_file: Path | None = None
) -> Path:
    """Write a one-context kubeconfig for `server` (token and CA optional, as for the emulator)."""
    cluster: dict[str, Any] = {"server": server}
    if ca_file is not None:
        cluster["certificate-authority"] = str(ca_file)
    credentials: dict[str, Any] = {"token": token} if token else {}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": cluster}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
        "current-context": "test",
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@dataclasses.dataclass
class ControlPlane:
    """A running etcd + kube-apiserver. Made by :func:`start_control_plane`."""

    server: str
    ca_file: Path
    token: str
    kubeconfig: Path
    bin_dir: Path
    workdir: Path
    etcd_url: str
    tokens: dict[str, str]
    users: dict[str, StaticUser]
    _processes: list[_Process]
    _remove_workdir: bool

    def client(self, user: str = ADMIN.name) -> RestClient:
        """A :class:`RestClient` authenticated as one of the declared static users."""
        return RestClient(self.server, token=self._token_of(user), ca_file=self.ca_file)

    def write_user_kubeconfig(self, user: str, path: Path | None = None) -> Path:
        """Write a kubeconfig for a static-token user declared at start.

        Default path: ``<workdir>/kubeconfig/<user>.yaml`` (``:`` replaced by ``_``).
        """
        token = self._token_of(user)
        if path is None:
            path = self.workdir / "kubeconfig" / f"{user.replace(':', '_')}.yaml"
        return write_kubeconfig(
            path, server=self.server, user=user, token=token, ca_file=self.ca_file
        )

    def ensure_namespace(self, name: str) -> None:
        """Create namespace `name` unless it exists."""
        response = self.client().post(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            check=False,
        )
        if response.status not in (201, 409):
            raise ApiError("POST", self.server + "/api/v1/namespaces", response)

    def run_controller_manager(
        self, controllers: Sequence[str] | None = None, **options: Any
    ) -> contextlib.AbstractContextManager[KubeControllerManagerProcess]:
        """:func:`run_kube_controller_manager` against this control plane, as admin.

        Its work directory and log go under this control plane's `workdir`
        (``kube-controller-manager-<n>/``), kept with it when
        ``SCHEDULER_CONTROLPLANE_KEEP`` is set. `options` are passed on.
        """
        index = len(list(self.workdir.glob("kube-controller-manager-*")))
        return run_kube_controller_manager(
            self.kubeconfig,
            controllers=VOLUME_CONTROLLERS if controllers is None else controllers,
            workdir=self.workdir / f"kube-controller-manager-{index}",
            bin_dir=self.bin_dir,
            **options,
        )

    @property
    def pids(self) -> dict[str, int]:
        """PID per component (etcd, kube-apiserver): to read what each one costs."""
        return {process.name: process.popen.pid for process in self._processes}

    def log_paths(self) -> dict[str, Path]:
        """Log file per component, for failure messages."""
        return {process.name: process.log_path for process in self._processes}

    def stop(self) -> None:
        """Stop kube-apiserver, then etcd; remove the work directory unless kept.

        Safe to call more than once, and registered with :mod:`atexit` as a last
        resort so an interrupted session does not leave processes behind.
        """
        for process in reversed(self._processes):
            process.stop()
        self._processes.clear()
        keep = os.environ.get(KEEP_WORKDIR_ENV, "") not in ("", "0")
        if self._remove_workdir and not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _token_of(self, user: str) -> str:
        try:
            return self.tokens[user]
        except KeyError:
            raise ControlPlaneError(
                f"no static token for {user!r}: the token file is read once at start-up, "
                f"so pass StaticUser({user!r}, groups) in users= to start_control_plane "
                f"(declared: {', '.join(sorted(self.tokens))})"
            ) from None


def _start_etcd(bin_dir: Path, workdir: Path, timeout: float) -> tuple[_Process, str]:
    data_dir = workdir / "etcd-data"
    for attempt in range(3):
        shutil.rmtree(data_dir, ignore_errors=True)
        client_url = f"http://127.0.0.1:{_free_port()}"
        peer_url = f"http://127.0.0.1:{_free_port()}"
        process = _Process(
            ETCD,
            [
                str(bin_dir / ETCD),
                "--name=controlplane",
                f"--data-dir={data_dir}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=controlplane={peer_url}",
                # Test data need no durability; fsync dominates etcd latency on CI disks.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            workdir / "logs" / "etcd.log",
            workdir,
        )
        try:
            _wait_until(
                "health", functools.partial(_http_ok, f"{client_url}/health"), process, timeout
            )
            return process, client_url
        except ControlPlaneError:
            process.stop()
            if attempt == 2 or "address already in use" not in _tail(process.log_path, 40):
                raise
    raise AssertionError("unreachable")


def _start_apiserver(
    bin_dir: Path, workdir: Path, etcd_url: str, admin_token: str, timeout: float
) -> tuple[_Process, str]:
    pki = workdir / "pki"
    for attempt in range(3):
        port = _free_port()
        server = f"https://127.0.0.1:{port}"
        process = _Process(
            KUBE_APISERVER,
            [
                str(bin_dir / KUBE_APISERVER),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={workdir / 'apiserver-certs'}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--token-auth-file={workdir / 'tokens.csv'}",
                "--authorization-mode=Node,RBAC",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                f"--disable-admission-plugins={','.join(DISABLED_ADMISSION_PLUGINS)}",
                f"--feature-gates={FEATURE_GATES}",
                f"--runtime-config={RUNTIME_CONFIG}",
                "--allow-privileged=true",
                "--profiling=false",
                "--v=1",
            ],
            workdir / "logs" / "kube-apiserver.log",
            workdir,
        )
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        try:
            _wait_until(
                "/readyz",
                functools.partial(_http_ok, f"{server}/readyz", context=context, token=admin_token),
                process,
                timeout,
                interval=0.25,
            )
            return process, server
        except ControlPlaneError:
            process.stop()
            if attempt == 2 or "address already in use" not in _tail(process.log_path, 40):
                raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def start_control_plane(
    *,
    workdir: Path | None = None,
    users: Iterable[StaticUser] = (),
    namespaces: Iterable[str] = (),
    bin_dir: Path | None = None,
    timeout: float = 120.0,
) -> Iterator[ControlPlane]:
    """Run etcd + kube-apiserver on loopback for the duration of the ``with`` block.

    Generates a CA and serving certificate, a ServiceAccount signing key and one
    static token per user (:data:`DEFAULT_USERS` plus `users`), starts etcd and
    kube-apiserver (RBAC + Node authorization, as in a real cluster), waits for
    ``/readyz`` and for the system namespaces, creates `namespaces`, and writes an
    admin kubeconfig. Teardown runs however the block exits. `workdir` (default: a
    fresh temporary directory, removed afterwards) holds certificates, tokens,
    kubeconfigs, logs and the etcd data.
    """
    bin_dir = bin_dir or ensure_binaries()
    remove_workdir = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="controlplane-")) if workdir is None else workdir
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "logs").mkdir(exist_ok=True)

    declared = {user.name: user for user in (*DEFAULT_USERS, *users)}
    tokens = {name: secrets.token_hex(24) for name in declared}
    token_lines = [
        f'{tokens[name]},{name},{name},"{",".join(user.groups)}"' for name, user in declared.items()
    ]
    (workdir / "tokens.csv").write_text("\n".join(token_lines) + "\n")

    processes: list[_Process] = []
    plane: ControlPlane | None = None

    def cleanup() -> None:
        for process in reversed(processes):
            process.stop()
        if plane is not None:
            plane.stop()
        elif remove_workdir and os.environ.get(KEEP_WORKDIR_ENV, "") in ("", "0"):
            shutil.rmtree(workdir, ignore_errors=True)

    atexit.register(cleanup)
    try:
        _generate_pki(workdir / "pki")
        etcd, etcd_url = _start_etcd(bin_dir, workdir, timeout)
        processes.append(etcd)
        admin_token = tokens[ADMIN.name]
        apiserver, server = _start_apiserver(bin_dir, workdir, etcd_url, admin_token, timeout)
        processes.append(apiserver)
        ca_file = workdir / "pki" / "ca.crt"
        plane = ControlPlane(
            server=server,
            ca_file=ca_file,
            token=admin_token,
            kubeconfig=workdir / "kubeconfig" / "admin.yaml",
            bin_dir=bin_dir,
            workdir=workdir,
            etcd_url=etcd_url,
            tokens=tokens,
            users=declared,
            _processes=processes,
            _remove_workdir=remove_workdir,
        )
        plane.write_user_kubeconfig(ADMIN.name, plane.kubeconfig)
        admin = plane.client()
        # /readyz does not wait for the system namespaces controller; clients do.
        for name in ("default", "kube-system"):
            _wait_until(
                f"namespace {name}",
                functools.partial(_exists, admin, f"/api/v1/namespaces/{name}"),
                apiserver,
                timeout,
            )
        for name in namespaces:
            plane.ensure_namespace(name)
        yield plane
    finally:
        cleanup()
        atexit.unregister(cleanup)


# --------------------------------------------------------------------------- kube-scheduler


class _RunningComponent:
    """What every component process started here offers: its PID and liveness."""

    _process: _Process

    @property
    def pid(self) -> int:
        return self._process.popen.pid

    def running(self) -> bool:
        return self._process.popen.poll() is None


@dataclasses.dataclass
class KubeSchedulerProcess(_RunningComponent):
    """A running kube-scheduler. Made by :func:`run_kube_scheduler`."""

    config_path: Path
    log_path: Path
    healthz_port: int
    _process: _Process

    def log_tail(self, lines: int = 60) -> str:
        """The end of the log, without the lines our own readiness probes cause."""
        return _tail(self.log_path, lines, _KUBE_SCHEDULER_PROBE_NOISE)

    def failed_requests(self) -> list[str]:
        """Requests the API server answered with an error (needs ``verbosity >= 6``)."""
        return _failed_requests(self.log_path)

    def stop(self) -> None:
        """Stop kube-scheduler now (the ``with`` block also stops it on exit)."""
        self._process.stop()


#: Log lines caused by polling kube-scheduler's /readyz, hidden from failure reports.
_KUBE_SCHEDULER_PROBE_NOISE: Final = re.compile(
    r"readyz|sched-handler-sync|pathrecorder\.go|healthz\.go|^\s*\[[+-]\]"
)
_CLIENT_RESPONSE: Final = re.compile(
    r'"Response" (?:\w+="[^"]*" )*?verb="(?P<verb>\w+)" url="(?P<url>[^"]+)" '
    r'status="(?P<status>\d+)[^"]*"'
)


def _failed_requests(log_path: Path) -> list[str]:
    """Distinct ``VERB path?query -> status`` of client-go requests that got >= 400.

    Server address and per-request values (resourceVersion, timeouts) are dropped,
    so a request retried by an informer appears once.
    """
    seen: dict[str, None] = {}
    try:
        text = log_path.read_text(errors="replace")
    except FileNotFoundError:
        return []
    for match in _CLIENT_RESPONSE.finditer(text):
        if int(match["status"]) < 400:
            continue
        url = re.sub(r"^https?://[^/]+", "", match["url"])
        url = re.sub(r"(resourceVersion|timeoutSeconds|timeout)=[^&]*", r"\1=…", url)
        seen[f"{match['verb']} {url} -> {match['status']}"] = None
    return list(seen)


def _explain_kube_scheduler(log_path: Path) -> str:
    failed = _failed_requests(log_path)
    requests = "".join(f"\n  {line}" for line in failed) or " none (or --v below 6)"
    tail = _tail(log_path, 40, _KUBE_SCHEDULER_PROBE_NOISE)
    return f"requests answered with an error:{requests}\nlast lines of {log_path}:\n{tail}"


def kube_scheduler_configuration(
    kubeconfig: Path, config: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Complete `config` for running against `kubeconfig`.

    Fills in ``clientConnection.kubeconfig``, JSON as the content type (the
    default is protobuf, which the emulator does not speak, and JSON keeps the
    peer comparable with our JSON-only client) and leader election off, unless
    `config` sets them.
    """
    result: dict[str, Any] = json.loads(json.dumps(dict(config or {})))  # deep copy
    result.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
    result.setdefault("kind", "KubeSchedulerConfiguration")
    connection = result.setdefault("clientConnection", {})
    connection.setdefault("kubeconfig", str(kubeconfig))
    connection.setdefault("contentType", "application/json")
    result.setdefault("leaderElection", {}).setdefault("leaderElect", False)
    return result


@contextlib.contextmanager
def run_kube_scheduler(
    kubeconfig: Path,
    config: Mapping[str, Any] | None = None,
    *,
    workdir: Path | None = None,
    bin_dir: Path | None = None,
    binary: Path | None = None,
    verbosity: int = 2,
    extra_args: Sequence[str] = (),
    ready_timeout: float = 90.0,
    feature_gates: str | None = FEATURE_GATES,
) -> Iterator[KubeSchedulerProcess]:
    """Run the built kube-scheduler against `kubeconfig` until the block exits.

    `config` is a ``KubeSchedulerConfiguration`` as a mapping, completed by
    :func:`kube_scheduler_configuration`. Waits until kube-scheduler's ``/readyz``
    passes, which includes the sync of all its informers, so on return it is
    scheduling. Its log (``--v=<verbosity>``; 6 shows every request) is in
    ``<workdir>/kube-scheduler.log``. `binary` runs another build of
    kube-scheduler with the same flags (scheduler-plugins' ``cmd/scheduler``,
    the peer of the batch workloads) instead of the control plane's.
    `feature_gates` defaults to the control plane's (:data:`FEATURE_GATES`,
    the Workload API on); None runs with the binary's own defaults, as a
    benchmark's peer on another kube release must (scheduler-plugins' 1.35
    build would wait for a ``scheduling.k8s.io/v1alpha1`` Workload informer
    that a 1.36 API server never syncs).
    """
    if binary is None:
        binary = (bin_dir or ensure_binaries()) / KUBE_SCHEDULER_BINARY
    owned_workdir = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="kube-scheduler-")) if workdir is None else workdir
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "kube-scheduler-config.json"
    config_path.write_text(json.dumps(kube_scheduler_configuration(kubeconfig, config), indent=2))
    log_path = workdir / "kube-scheduler.log"
    process: _Process | None = None
    try:
        port = _free_port()
        process = _Process(
            KUBE_SCHEDULER_BINARY,
            [
                str(binary),
                f"--config={config_path}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={workdir / 'certs'}",
                f"--v={verbosity}",
                # A --feature-gates in extra_args adds to these (kube merges
                # repeated --feature-gates flags).
                *([f"--feature-gates={feature_gates}"] if feature_gates else []),
                *extra_args,
            ],
            log_path,
            workdir,
            explain=_explain_kube_scheduler,
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # its serving certificate is self-signed
        _wait_until(
            "/readyz (informers synced)",
            lambda: _http_ok(f"https://127.0.0.1:{port}/readyz", context=insecure),
            process,
            ready_timeout,
        )
        yield KubeSchedulerProcess(config_path, log_path, port, process)
    finally:
        if process is not None:
            process.stop()
        if owned_workdir and os.environ.get(KEEP_WORKDIR_ENV, "") in ("", "0"):
            shutil.rmtree(workdir, ignore_errors=True)


# ----------------------------------------------------------------------- kube-controller-manager

#: The controllers a scheduler test needs: the PersistentVolume binder (binds PVCs
#: to PVs, and completes a binding that kube-scheduler's VolumeBinding PreBind
#: started by setting a PV's claimRef) and the ephemeral-volume controller (creates
#: the ``<pod>-<volume>`` PVC of a generic ephemeral volume). Names as
#: kube-controller-manager 1.36 accepts them in ``--controllers``.
VOLUME_CONTROLLERS: Final = ("persistentvolume-binder-controller", "ephemeral-volume-controller")

#: The controller a Dynamic Resource Allocation test needs: the ResourceClaim
#: controller creates a pod's claims from its ResourceClaimTemplates (recording
#: them in ``status.resourceClaimStatuses``, which the scheduler waits for) and,
#: once a pod is gone, drops it from its claims' ``reservedFor`` and deallocates a
#: claim nobody reserves, so that its devices are free again. The garbage collector
#: is not run, so a deleted pod's generated claim stays, deallocated. kube-apiserver
#: 1.36 serves resource.k8s.io/v1 by default and DynamicResourceAllocation is GA
#: (locked on), so no flags are needed.
DRA_CONTROLLERS: Final = ("resourceclaim-controller",)


@dataclasses.dataclass
class KubeControllerManagerProcess(_RunningComponent):
    """A running kube-controller-manager. Made by :func:`run_kube_controller_manager`."""

    controllers: tuple[str, ...]
    log_path: Path
    secure_port: int
    #: Seconds from starting the process to its first ``/healthz`` 200.
    startup_seconds: float
    _process: _Process

    @property
    def pid(self) -> int:
        return self._process.popen.pid

    def log_tail(self, lines: int = 60) -> str:
        """The end of the log, for failure messages of tests that wait on a controller."""
        return _tail(self.log_path, lines)

    def stop(self) -> None:
        """Stop it now, by PID (the ``with`` block also stops it on exit)."""
        self._process.stop()


@contextlib.contextmanager
def run_kube_controller_manager(
    kubeconfig: Path,
    *,
    controllers: Sequence[str] = VOLUME_CONTROLLERS,
    workdir: Path | None = None,
    bin_dir: Path | None = None,
    verbosity: int = 2,
    extra_args: Sequence[str] = (),
    ready_timeout: float = 90.0,
) -> Iterator[KubeControllerManagerProcess]:
    """Run the built kube-controller-manager against `kubeconfig` until the block exits.

    Only `controllers` run (default :data:`VOLUME_CONTROLLERS`): the suite creates
    nodes without kubelets, so e.g. the node lifecycle controller would taint and
    evict everything, and each test opts into exactly the controllers whose
    behaviour it checks. Every controller uses the kubeconfig's identity
    (``--use-service-account-credentials=false``), so neither ServiceAccount
    tokens nor the token controller are needed; use an admin kubeconfig. It
    serves only on loopback (a free ``--secure-port``; ``/healthz`` is allowed
    without credentials by default), runs without leader election, and is waited
    for until ``/healthz`` passes. Its log (``--v=<verbosity>``) is in
    ``<workdir>/kube-controller-manager.log``. The process is stopped by PID when
    the block exits, also when it raises, and dies with this process otherwise.

    The apiserver keeps StorageObjectInUseProtection admission disabled (see
    :data:`DISABLED_ADMISSION_PLUGINS`): the PVC/PV protection controllers that
    would remove its finalizers are not among the default controllers, and tests
    that never start this process must still be able to delete their PVCs.
    """
    bin_dir = bin_dir or ensure_binaries()
    owned_workdir = workdir is None
    workdir = (
        Path(tempfile.mkdtemp(prefix="kube-controller-manager-")) if workdir is None else workdir
    )
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "kube-controller-manager.log"
    process: _Process | None = None
    try:
        port = _free_port()
        started = time.monotonic()
        process = _Process(
            KUBE_CONTROLLER_MANAGER,
            [
                str(bin_dir / KUBE_CONTROLLER_MANAGER),
                f"--kubeconfig={kubeconfig}",
                f"--controllers={','.join(controllers)}",
                "--use-service-account-credentials=false",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={workdir / 'certs'}",
                "--profiling=false",
                f"--v={verbosity}",
                *extra_args,
            ],
            log_path,
            workdir,
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # its serving certificate is self-signed
        _wait_until(
            "/healthz",
            lambda: _http_ok(f"https://127.0.0.1:{port}/healthz", context=insecure),
            process,
            ready_timeout,
        )
        yield KubeControllerManagerProcess(
            tuple(controllers), log_path, port, time.monotonic() - started, process
        )
    finally:
        if process is not None:
            process.stop()
        if owned_workdir and os.environ.get(KEEP_WORKDIR_ENV, "") in ("", "0"):
            shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``build``: build or reuse the binaries; ``up``: run a control plane until Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m scheduler.tools.controlplane")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help=f"build (or reuse) {_names(BINARIES)}")
    up = commands.add_parser("up", help="run etcd + kube-apiserver until interrupted")
    up.add_argument("--workdir", type=Path, default=None)
    up.add_argument(
        "--volume-controllers",
        action="store_true",
        help=f"also run kube-controller-manager with {', '.join(VOLUME_CONTROLLERS)}",
    )
    up.add_argument(
        "--dra-controllers",
        action="store_true",
        help=f"also run kube-controller-manager with {', '.join(DRA_CONTROLLERS)}",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    started = time.monotonic()
    if args.command == "build":
        bin_dir = ensure_binaries()
        print(f"{bin_dir} ({time.monotonic() - started:.0f} s)")
        return 0
    with contextlib.ExitStack() as stack:
        plane = stack.enter_context(start_control_plane(workdir=args.workdir))
        controllers = [
            *(VOLUME_CONTROLLERS if args.volume_controllers else ()),
            *(DRA_CONTROLLERS if args.dra_controllers else ()),
        ]
        if controllers:
            stack.enter_context(plane.run_controller_manager(controllers))
        print(f"ready in {time.monotonic() - started:.1f} s: {plane.server}")
        print(f"export KUBECONFIG={plane.kubeconfig}")
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop cleanly on SIGTERM too
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
