"""The real control plane: pinned binaries, readiness, kubeconfigs, RBAC and teardown."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from scheduler.tools import controlplane
from scheduler.tools.controlplane import (
    KUBE_SCHEDULER,
    SCHEDULER_SERVICE_ACCOUNT,
    UNPRIVILEGED,
    ControlPlane,
    ControlPlaneError,
    RestClient,
    StaticUser,
    ensure_binaries,
    pinned_versions,
    start_control_plane,
)


def test_binaries_are_the_pinned_releases() -> None:
    kubernetes_version, etcd_version = pinned_versions()
    bin_dir = ensure_binaries()
    assert bin_dir.parent.name.startswith(f"{kubernetes_version}-{etcd_version}-")
    for binary in ("kube-apiserver", "kube-scheduler", "kube-controller-manager"):
        out = subprocess.run(
            [bin_dir / binary, "--version"], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == f"Kubernetes {kubernetes_version}"
    out = subprocess.run(
        [bin_dir / "etcd", "--version"], capture_output=True, text=True, check=True
    )
    assert f"etcd Version: {etcd_version.removeprefix('v')}" in out.stdout


def test_cached_binaries_are_reused_without_go(monkeypatch: pytest.MonkeyPatch) -> None:
    first = ensure_binaries()
    mtime = (first / "kube-apiserver").stat().st_mtime_ns
    # With the cache warm, a machine without Go still gets the binaries.
    monkeypatch.setattr(controlplane, "GO_CANDIDATES", ())
    monkeypatch.setenv("PATH", "")
    assert ensure_binaries() == first
    assert (first / "kube-apiserver").stat().st_mtime_ns == mtime


def test_missing_go_fails_fast_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty cache: must build
    monkeypatch.delenv(controlplane.BIN_DIR_ENV, raising=False)
    monkeypatch.setattr(controlplane, "GO_CANDIDATES", ())
    monkeypatch.delenv("GO", raising=False)
    monkeypatch.setenv("PATH", "")
    started = time.monotonic()
    with pytest.raises(ControlPlaneError, match=r"Go toolchain .* not found"):
        ensure_binaries()
    assert time.monotonic() - started < 2


def test_apiserver_is_ready_with_system_namespaces(real_control_plane: ControlPlane) -> None:
    admin = real_control_plane.client()
    readyz = admin.get("/readyz?verbose")
    assert readyz.status == 200
    assert "readyz check passed" in readyz.body
    assert "[+]etcd ok" in readyz.body
    version = admin.get("/version").body
    assert version["gitVersion"] == pinned_versions()[0]
    namespaces = {
        item["metadata"]["name"] for item in admin.get("/api/v1/namespaces").body["items"]
    }
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= namespaces
    assert real_control_plane.server.startswith("https://127.0.0.1:")


async def test_admin_kubeconfig_works_with_our_client(real_control_plane: ControlPlane) -> None:
    """The product talks through kubernetes-asyncio: it must accept the kubeconfig (TLS, token)."""
    api_client = await k8s_config.new_client_from_config(
        config_file=str(real_control_plane.kubeconfig)
    )
    async with api_client:
        namespaces = await k8s_client.CoreV1Api(api_client).list_namespace()
    assert "kube-system" in {namespace.metadata.name for namespace in namespaces.items}


def test_unprivileged_token_is_denied_by_rbac(real_control_plane: ControlPlane) -> None:
    client = real_control_plane.client(UNPRIVILEGED.name)
    denied = client.get("/api/v1/pods", check=False)
    assert denied.status == 403
    assert denied.reason == "Forbidden"
    assert 'User "unprivileged" cannot list resource "pods"' in denied.body["message"]
    # Authenticated users may still read discovery, as in any RBAC cluster.
    assert client.get("/api/v1", check=False).status == 200

    stranger = RestClient(
        real_control_plane.server, token="not-a-token", ca_file=real_control_plane.ca_file
    )
    assert stranger.get("/api/v1/pods", check=False).status == 401


def test_service_account_identity_gains_access_through_a_binding(
    real_control_plane: ControlPlane,
) -> None:
    """A static token named system:serviceaccount:... is matched by ServiceAccount subjects."""
    admin = real_control_plane.client()
    scheduler = real_control_plane.client(SCHEDULER_SERVICE_ACCOUNT.name)
    assert scheduler.get("/api/v1/nodes", check=False).status == 403

    name = "test-pluggable-scheduler-node-reader"
    admin.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
        },
    )
    admin.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": "pluggable-scheduler",
                    "namespace": "kube-system",
                }
            ],
        },
    )
    try:
        deadline = time.monotonic() + 10
        while (status := scheduler.get("/api/v1/nodes", check=False).status) == 403:
            assert time.monotonic() < deadline, "binding never took effect"
            time.sleep(0.1)
        assert status == 200
        assert scheduler.get("/api/v1/pods", check=False).status == 403  # only what was granted
    finally:
        admin.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}")
        admin.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")


async def test_user_kubeconfig_carries_that_users_identity(
    real_control_plane: ControlPlane, tmp_path: Path
) -> None:
    path = real_control_plane.write_user_kubeconfig(KUBE_SCHEDULER.name, tmp_path / "sched.yaml")
    api_client = await k8s_config.new_client_from_config(config_file=str(path))
    async with api_client:
        review = await k8s_client.AuthenticationV1Api(api_client).create_self_subject_review(
            k8s_client.V1SelfSubjectReview()
        )
    assert review.status.user_info.username == "system:kube-scheduler"
    with pytest.raises(ControlPlaneError, match="no static token for 'nobody'"):
        real_control_plane.write_user_kubeconfig("nobody")


def test_teardown_happens_when_the_body_fails(tmp_path: Path) -> None:
    """A failing test must not leave etcd or kube-apiserver running or their files behind."""
    extra = StaticUser("system:serviceaccount:team-a:robot", ("system:serviceaccounts",))
    with (
        pytest.raises(RuntimeError, match="test body failed"),
        start_control_plane(users=[extra], namespaces=["team-a"]) as plane,
    ):
        pids = [process.popen.pid for process in plane._processes]
        workdir = plane.workdir
        assert plane.client().get("/api/v1/namespaces/team-a").status == 200
        assert plane.client(extra.name).get("/api/v1/pods", check=False).status == 403
        raise RuntimeError("test body failed")
    assert len(pids) == 2
    for pid in pids:
        assert not _alive(pid), f"process {pid} survived teardown"
    assert not workdir.exists()


def test_processes_die_with_a_killed_test_process(tmp_path: Path) -> None:
    """A CI timeout may SIGKILL pytest: etcd and kube-apiserver must not outlive it."""
    pid_file = tmp_path / "pids"
    script = (
        "import pathlib, time\n"
        "from scheduler.tools.controlplane import start_control_plane\n"
        f"with start_control_plane(workdir=pathlib.Path({str(tmp_path / 'cp')!r})) as plane:\n"
        f"    pathlib.Path({str(pid_file)!r}).write_text("
        "' '.join(str(p.popen.pid) for p in plane._processes))\n"
        "    time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists():
            assert holder.poll() is None, holder.communicate()[1]
            assert time.monotonic() < deadline, "control plane did not start"
            time.sleep(0.1)
        pids = [int(pid) for pid in pid_file.read_text().split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"orphans survived: {[p for p in pids if _alive(p)]}"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for whoever adopted it to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_a_long_build_reports_progress_until_it_ends(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A stand-in for `go` that takes a while: the build must keep saying so.
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\nsleep 1.2\nexit 3\n")
    fake_go.chmod(0o755)
    monkeypatch.setattr(controlplane, "BUILD_PROGRESS_INTERVAL", 0.25)
    caplog.set_level("WARNING", logger=controlplane.__name__)
    with (
        open(tmp_path / "build.log", "w") as log_file,
        pytest.raises(ControlPlaneError, match=r"`go build example.com/cmd/x` failed \(exit 3\)"),
    ):
        controlplane._go_build(
            str(fake_go), tmp_path, ["example.com/cmd/x"], "x", "", log_file, "x"
        )
    progress = [r.getMessage() for r in caplog.records if "still building x" in r.getMessage()]
    assert 3 <= len(progress) <= 5, progress
    assert f"(log: {tmp_path / 'build.log'})" in progress[-1]


def test_error_message_without_go_names_every_binary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(controlplane, "GO_CANDIDATES", ())
    monkeypatch.delenv("GO", raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ControlPlaneError) as failure:
        controlplane._find_go()
    assert "build kube-apiserver, kube-scheduler, kube-controller-manager and etcd" in str(
        failure.value
    )


def test_cache_directory_is_keyed_by_the_pin_and_the_set_of_binaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A cache built before kube-controller-manager was added must neither count as
    # current nor share this one's directory: a checkout still on the old pin
    # (same ~/.cache) then never rebuilds over this checkout's binaries.
    monkeypatch.delenv(controlplane.BIN_DIR_ENV, raising=False)
    bin_dir = ensure_binaries()
    assert bin_dir.parent.name.endswith("-" + controlplane._pin_digest()[:12])
    without = tuple(name for name in controlplane.BINARIES if name != "kube-controller-manager")
    monkeypatch.setattr(controlplane, "BINARIES", without)
    assert controlplane._pin_digest()[:12] not in bin_dir.parent.name
