"""deploy/ against a real kube-apiserver (RBAC on): accepted, sufficient, and no more.

The manifests are applied server-side; then the daemon runs exactly as in the
Deployment - `pluggable-scheduler run` with the ConfigMap's config - but
authenticated as the ServiceAccount (a static token for
``system:serviceaccount:pluggable-scheduler:pluggable-scheduler`` with the
ServiceAccount groups, which RBAC matches exactly like a real ServiceAccount
token), so every request it makes is checked against deploy/'s roles alone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from scheduler.testing.objects import make_node
from scheduler.tools.controlplane import (
    UNPRIVILEGED,
    ControlPlane,
    RestClient,
    StaticUser,
    start_control_plane,
)
from tests.deploy.conftest import (
    BASE,
    DEPLOY,
    NAMESPACE,
    REPO,
    kubectl,
    render_text,
    scheduler_config_text,
)

SA_USER = StaticUser(
    f"system:serviceaccount:{NAMESPACE}:pluggable-scheduler",
    ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"),
)
#: A scraper as Prometheus would be: in the group the bootstrap ClusterRole
#: system:monitoring is bound to (get on /metrics and the health paths).
SCRAPER = StaticUser("metrics-scraper", ("system:monitoring",))
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/pluggable-scheduler"
COSCHEDULING = DEPLOY / "overlays" / "coscheduling"

T = TypeVar("T")


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    with start_control_plane(users=[SA_USER, SCRAPER]) as control_plane:
        yield control_plane


def _apply(
    plane: ControlPlane, manifests: str, *, dry_run: bool
) -> subprocess.CompletedProcess[str]:
    command = [
        kubectl(),
        f"--kubeconfig={plane.kubeconfig}",
        "apply",
        "--server-side",
        "--field-manager=deploy-tests",
        "-f",
        "-",
    ]
    if dry_run:
        command.append("--dry-run=server")
    return subprocess.run(command, input=manifests, capture_output=True, text=True, check=False)


def _wait(
    what: str, probe: Callable[[], T | None], timeout: float = 60.0, *, log: Path | None = None
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            tail = log.read_text()[-4000:] if log is not None and log.exists() else ""
            raise AssertionError(f"timed out waiting for {what}\n{tail}")
        time.sleep(0.2)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


#: The daemon's certificate is the self-signed one of its start, as in the Deployment.
UNVERIFIED = ssl.create_default_context()
UNVERIFIED.check_hostname = False
UNVERIFIED.verify_mode = ssl.CERT_NONE


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    scraper_token: str

    def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        """GET ``path`` of the secure port; /metrics with the scraper's token."""
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}")
        token = token if token is not None else self.scraper_token
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=5, context=UNVERIFIED) as reply:
                return reply.status, reply.read().decode()
        except OSError as error:
            return getattr(error, "code", 0), str(error)

    def ready(self) -> bool:
        assert self.process.poll() is None, f"daemon exited:\n{self.log.read_text()[-4000:]}"
        return self.get("/readyz")[0] == 200

    def leading(self) -> bool:
        return "scheduler_leader 1.0" in self.get("/metrics")[1]


@contextlib.contextmanager
def run_daemon(plane: ControlPlane, config_text: str, workdir: Path, name: str) -> Iterator[Daemon]:
    """`pluggable-scheduler run` as the ServiceAccount with `config_text`, health on a free port.

    The ServiceAccount's kubeconfig stands in for the in-cluster config the
    secure port uses in the Deployment to review scrapers' tokens and access.
    """
    config = yaml.safe_load(config_text)
    port = _free_port()
    config.setdefault("pluggableScheduler", {})["serverAddress"] = f"127.0.0.1:{port}"
    config_path = workdir / f"{name}.yaml"
    config_path.write_text(yaml.safe_dump(config))
    kubeconfig = plane.write_user_kubeconfig(SA_USER.name, workdir / f"{name}-kubeconfig.yaml")
    log = workdir / f"{name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "scheduler", "run", "--config", str(config_path),
             "--kubeconfig", str(kubeconfig), "--log-format", "json",
             "--authentication-kubeconfig", str(kubeconfig),
             "--authorization-kubeconfig", str(kubeconfig)],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env,
        )  # fmt: skip
    daemon = Daemon(process, port, log, plane.tokens[SCRAPER.name])
    try:
        _wait(f"{name} /readyz", daemon.ready, log=log)
        yield daemon
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _pod(
    name: str, namespace: str, cpu: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "schedulerName": "pluggable-scheduler",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
        },
    }  # fmt: skip


def _condition(pod: dict[str, Any]) -> dict[str, Any]:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled":
            return dict(condition)
    return {}


def _events(admin: RestClient, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = admin.get(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    ).body["items"]
    return items


def _access(client: RestClient, attributes: dict[str, str]) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    response = client.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    return bool(response.body["status"].get("allowed"))


def _no_forbidden(log: Path) -> None:
    text = log.read_text()
    assert "Forbidden" not in text and " 403" not in text, text[-4000:]


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("kustomization", [BASE, COSCHEDULING], ids=["base", "coscheduling"])
def test_rendered_manifests_pass_server_side_dry_run(
    plane: ControlPlane, kustomization: Path
) -> None:
    manifests = render_text(kustomization)
    # Namespaced objects of a dry run need their namespace to exist for real.
    plane.ensure_namespace(NAMESPACE)
    result = _apply(plane, manifests, dry_run=True)
    assert result.returncode == 0, result.stderr
    assert "PodSecurity" not in result.stderr, result.stderr  # restricted profile holds
    assert "(server dry run)" in result.stdout
    assert "deployment.apps/pluggable-scheduler serverside-applied" in result.stdout


def test_service_account_schedules_elects_and_records_events(
    plane: ControlPlane, tmp_path: Path
) -> None:
    manifests = render_text(BASE)
    applied = _apply(plane, manifests, dry_run=False)
    assert applied.returncode == 0, applied.stderr
    admin = plane.client()
    suffix = secrets.token_hex(3)
    namespace, node = f"rbac-{suffix}", f"rbac-node-{suffix}"
    admin.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": namespace}})  # fmt: skip
    admin.post("/api/v1/nodes", make_node(node, cpu="2", memory="4Gi"))
    pods = f"/api/v1/namespaces/{namespace}/pods"
    config = scheduler_config_text(list(yaml.safe_load_all(manifests)))
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(run_daemon(plane, config, tmp_path, "replica-a"))
        _wait("replica-a to lead", first.leading, log=first.log)
        second = stack.enter_context(run_daemon(plane, config, tmp_path, "replica-b"))

        admin.post(pods, _pod("fits", namespace, cpu="500m"))
        admin.post(pods, _pod("too-big", namespace, cpu="8"))
        bound = _wait("pod bound", lambda: admin.get(f"{pods}/fits").body["spec"].get("nodeName"),
                      log=first.log)  # fmt: skip
        assert bound == node
        pending = _wait(
            "PodScheduled=False",
            lambda: _condition(admin.get(f"{pods}/too-big").body).get("reason") == "Unschedulable",
            log=first.log,
        )
        assert pending
        # A node change that still leaves it too small: the pod is retried and fails
        # the same way, so the recorder PATCHes the event's series (events patch).
        admin.request("PATCH", f"/api/v1/nodes/{node}/status",
                      {"status": {"allocatable": {"cpu": "3", "memory": "4Gi", "pods": "110"},
                                  "capacity": {"cpu": "3", "memory": "4Gi", "pods": "110"}}},
                      content_type="application/merge-patch+json")  # fmt: skip

        def recorded() -> dict[tuple[str, str], dict[str, Any]] | None:
            events = {(e["regarding"]["name"], e["reason"]): e for e in _events(admin, namespace)}
            failed = events.get(("too-big", "FailedScheduling"))
            if ("fits", "Scheduled") in events and failed and failed.get("series"):
                return events
            return None

        events = _wait("Scheduled and repeated FailedScheduling events", recorded, log=first.log)
        failed = events[("too-big", "FailedScheduling")]
        assert failed["reportingController"] == "pluggable-scheduler"
        assert failed["series"]["count"] >= 2
        assert "Insufficient cpu" in failed["note"]

        lease = admin.get(LEASE).body["spec"]
        assert lease["holderIdentity"]
        assert not second.leading()
        # The secure port, reviewing as the ServiceAccount (system:auth-delegator):
        # the scraper reads /metrics (leading() above), others do not; probes need no token.
        unprivileged = plane.tokens[UNPRIVILEGED.name]
        assert first.get("/metrics", token=unprivileged)[0] == 403
        assert first.get("/metrics", token="")[0] == 403  # system:anonymous
        assert first.get("/metrics", token="no-such-token")[0] == 401
        assert first.get("/livez", token="")[0] == 200
        # The leader steps down on SIGTERM, releasing the lease; the standby takes it.
        first.process.send_signal(signal.SIGTERM)
        assert first.process.wait(20) == 0, first.log.read_text()[-4000:]
        _wait("replica-b to lead", second.leading, log=second.log)
        assert admin.get(LEASE).body["spec"]["holderIdentity"] != lease["holderIdentity"]
        admin.post(pods, _pod("after-failover", namespace, cpu="100m"))
        _wait("pod bound by the new leader",
              lambda: admin.get(f"{pods}/after-failover").body["spec"].get("nodeName"),
              log=second.log)  # fmt: skip
    _no_forbidden(first.log)
    _no_forbidden(second.log)


def test_service_account_is_denied_what_the_daemon_does_not_need(plane: ControlPlane) -> None:
    applied = _apply(plane, render_text(BASE), dry_run=False)
    assert applied.returncode == 0, applied.stderr
    sa = plane.client(SA_USER.name)
    allowed = [
        {"verb": "list", "resource": "nodes"},
        {"verb": "watch", "resource": "pods"},
        {"verb": "create", "resource": "pods", "subresource": "binding", "namespace": "any"},
        {"verb": "patch", "resource": "pods", "subresource": "status", "namespace": "any"},
        {"verb": "delete", "resource": "pods", "namespace": "any"},
        {"verb": "create", "group": "events.k8s.io", "resource": "events", "namespace": "any"},
        {"verb": "patch", "group": "events.k8s.io", "resource": "events", "namespace": "any"},
        {"verb": "list", "group": "policy", "resource": "poddisruptionbudgets"},
        {"verb": "watch", "resource": "namespaces"},
        {"verb": "list", "resource": "services"},
        {"verb": "watch", "group": "apps", "resource": "replicasets"},
        {"verb": "update", "group": "coordination.k8s.io", "resource": "leases",
         "namespace": NAMESPACE, "name": "pluggable-scheduler"},
        {"verb": "create", "group": "coordination.k8s.io", "resource": "leases",
         "namespace": NAMESPACE},
        {"verb": "watch", "group": "resource.k8s.io", "resource": "resourceslices"},
        {"verb": "update", "group": "resource.k8s.io", "resource": "resourceclaims",
         "subresource": "status", "namespace": "any"},
        # The secure port's reviews (system:auth-delegator).
        {"verb": "create", "group": "authentication.k8s.io", "resource": "tokenreviews"},
        {"verb": "create", "group": "authorization.k8s.io",
         "resource": "subjectaccessreviews"},
    ]  # fmt: skip
    denied = [
        {"verb": "delete", "resource": "nodes"},
        {"verb": "update", "resource": "nodes"},
        {"verb": "get", "resource": "nodes", "name": "any"},
        {"verb": "create", "resource": "pods", "namespace": "any"},
        {"verb": "update", "resource": "pods", "namespace": "any"},
        {"verb": "get", "resource": "secrets", "namespace": NAMESPACE},
        {"verb": "list", "resource": "secrets"},
        {"verb": "list", "resource": "configmaps"},
        {"verb": "get", "resource": "configmaps", "namespace": "kube-system",
         "name": "extension-apiserver-authentication"},
        {"verb": "list", "group": "apps", "resource": "deployments"},
        {"verb": "update", "group": "apps", "resource": "replicasets", "namespace": "any"},
        {"verb": "create", "resource": "events", "namespace": "any"},  # core/v1 events
        {"verb": "delete", "group": "events.k8s.io", "resource": "events", "namespace": "any"},
        {"verb": "update", "group": "coordination.k8s.io", "resource": "leases",
         "namespace": NAMESPACE, "name": "someone-elses-lease"},
        {"verb": "update", "group": "coordination.k8s.io", "resource": "leases",
         "namespace": "kube-system", "name": "pluggable-scheduler"},
        {"verb": "create", "group": "coordination.k8s.io", "resource": "leases",
         "namespace": "kube-system"},
        {"verb": "delete", "group": "coordination.k8s.io", "resource": "leases",
         "namespace": NAMESPACE, "name": "pluggable-scheduler"},
        {"verb": "create", "group": "rbac.authorization.k8s.io", "resource": "clusterrolebindings"},
        {"verb": "list", "group": "scheduling.x-k8s.io", "resource": "podgroups"},
        {"verb": "delete", "group": "resource.k8s.io", "resource": "resourceslices",
         "name": "any"},
        {"verb": "update", "group": "resource.k8s.io", "resource": "deviceclasses",
         "name": "any"},
    ]  # fmt: skip
    assert [a for a in allowed if not _access(sa, a)] == []
    assert [d for d in denied if _access(sa, d)] == []
    # Not only the review: the real request is refused.
    admin = plane.client()
    node = f"victim-{secrets.token_hex(3)}"
    admin.post("/api/v1/nodes", make_node(node, cpu="1", memory="4Gi"))
    response = sa.delete(f"/api/v1/nodes/{node}", check=False)
    assert response.status == 403, response
    assert response.reason == "Forbidden"
    assert admin.get(f"/api/v1/nodes/{node}").status == 200
    # And as an operator would check it.
    kubeconfig = plane.write_user_kubeconfig(SA_USER.name)
    can_i = subprocess.run(
        [kubectl(), f"--kubeconfig={kubeconfig}", "auth", "can-i", "delete", "nodes"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert can_i.returncode == 1 and can_i.stdout.strip() == "no", can_i


def test_coscheduling_overlay_rbac_lets_the_plugin_watch_podgroups(
    plane: ControlPlane, tmp_path: Path
) -> None:
    manifests = render_text(COSCHEDULING)
    applied = _apply(plane, manifests, dry_run=False)
    assert applied.returncode == 0, applied.stderr
    admin = plane.client()
    crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.x-k8s.io"

    def established() -> bool:
        conditions = admin.get(crd).body.get("status", {}).get("conditions", [])
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    _wait("PodGroup CRD established", established)
    sa = plane.client(SA_USER.name)
    for verb in ("get", "list", "watch"):
        assert _access(sa, {"verb": verb, "group": "scheduling.x-k8s.io", "resource": "podgroups"})
    assert _access(sa, {"verb": "patch", "group": "scheduling.x-k8s.io", "resource": "podgroups",
                        "subresource": "status", "namespace": "any"})  # fmt: skip
    assert not _access(sa, {"verb": "delete", "group": "scheduling.x-k8s.io",
                            "resource": "podgroups", "namespace": "any"})  # fmt: skip

    suffix = secrets.token_hex(3)
    namespace = f"gang-{suffix}"
    admin.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": namespace}})  # fmt: skip
    for index in range(2):
        admin.post("/api/v1/nodes", make_node(f"gang-node-{suffix}-{index}", cpu="2", memory="4Gi"))
    group_path = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"
    admin.post(group_path, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                            "metadata": {"name": "gang", "namespace": namespace},
                            "spec": {"minMember": 2}})  # fmt: skip
    config = scheduler_config_text(list(yaml.safe_load_all(manifests)))
    pods = f"/api/v1/namespaces/{namespace}/pods"
    with run_daemon(plane, config, tmp_path, "coscheduling") as daemon:
        _wait("leading", daemon.leading, log=daemon.log)
        label = {"scheduling.x-k8s.io/pod-group": "gang"}
        for index in range(2):
            admin.post(pods, _pod(f"member-{index}", namespace, cpu="500m", labels=label))

        def all_bound() -> bool:
            items = admin.get(pods).body["items"]
            return len(items) == 2 and all(p["spec"].get("nodeName") for p in items)

        _wait("both gang members bound", all_bound, log=daemon.log)
        _wait("PodGroup status written by the plugin",
              lambda: admin.get(f"{group_path}/gang").body.get("status", {}).get("phase"),
              log=daemon.log)  # fmt: skip
    _no_forbidden(daemon.log)
