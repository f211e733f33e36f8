"""The container image, built and run as users get it.

Built from the repository's Dockerfile on a base image made without a registry
(debootstrap + ``docker import``), with every package from loopback; run with
the Deployment's own security context (read from the rendered ``deploy/base``:
non-root UID, read-only root, no capabilities, no privilege escalation, its
volumes and limits) against a real kube-apiserver, authenticated by a real
ServiceAccount token mounted where in-cluster config looks for it. It must
schedule pods, hold the Lease, report healthy through the image's own
HEALTHCHECK on a non-default ``serverAddress``, and stop cleanly. The
derived-image pattern (``FROM pluggable-scheduler`` + ``pip install`` by name)
and the coscheduling overlay's Dockerfile are built for real, and the overlay
image schedules a gang.

Image build time and size and the scheduler's memory while scheduling are
printed as ``[image]`` lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from scheduler.model.quantity import parse_quantity
from scheduler.testing.objects import make_node
from scheduler.tools.controlplane import ADMIN, ControlPlane
from tests.deploy.conftest import (
    BASE,
    DEPLOY,
    NAMESPACE,
    SERVICE_ACCOUNT,
    find,
    kubectl,
    render_text,
    scheduler_config_text,
)
from tests.image.conftest import BuiltImage, Docker, build_image
from tests.image.engine import Progress
from tests.image.packages import REPO, PipSource

COSCHEDULING = DEPLOY / "overlays" / "coscheduling"
#: Where in-cluster config (client-go's and kubernetes-asyncio's) reads its credentials.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/pluggable-scheduler"

T = TypeVar("T")


def wait_for(
    what: str, probe: Callable[[], T | None], timeout: float = 90.0, log: Callable[[], str] = str
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{log()[-4000:]}")
        time.sleep(0.25)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# ----------------------------------------------------------------- the Deployment, in docker


def deployment_run_options(deployment: dict[str, Any], host_dirs: dict[str, Path]) -> list[str]:
    """``docker run`` options that give the container what the Deployment gives the pod.

    ``host_dirs`` maps the names of the pod's configMap volumes to host
    directories holding their files. Fails on a setting it cannot translate,
    so a manifest change cannot silently weaken what the test runs.
    """
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    pod_security = pod.get("securityContext", {})
    security = {**pod_security, **container.get("securityContext", {})}
    assert security.get("runAsNonRoot") is True and security["runAsUser"] != 0
    options = ["--user", f"{security['runAsUser']}:{security['runAsGroup']}"]
    if "fsGroup" in pod_security:
        options += ["--group-add", str(pod_security["fsGroup"])]
    if security.get("readOnlyRootFilesystem"):
        options.append("--read-only")
    if security.get("allowPrivilegeEscalation") is False:
        options += ["--security-opt", "no-new-privileges"]
    assert not security.get("privileged"), "the Deployment must not be privileged"
    capabilities = security.get("capabilities", {})
    options += [f"--cap-drop={name}" for name in capabilities.get("drop", [])]
    options += [f"--cap-add={name}" for name in capabilities.get("add", [])]
    # RuntimeDefault is the engine's default seccomp profile: nothing to pass.
    assert security.get("seccompProfile", {}).get("type") == "RuntimeDefault"
    limits = container.get("resources", {}).get("limits", {})
    if "memory" in limits:
        options += ["--memory", str(int(parse_quantity(limits["memory"])))]
    if "cpu" in limits:
        options += ["--cpus", str(float(parse_quantity(limits["cpu"])))]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "emptyDir" in volume:
            size = volume["emptyDir"].get("sizeLimit")
            tmpfs = f"{mount['mountPath']}:rw,mode=1777"
            options += ["--tmpfs", tmpfs + (f",size={int(parse_quantity(size))}" if size else "")]
        elif "configMap" in volume:
            mode = "ro" if mount.get("readOnly") else "rw"
            options += ["--volume", f"{host_dirs[mount['name']]}:{mount['mountPath']}:{mode}"]
        else:
            raise AssertionError(f"volume {mount['name']}: no docker translation for {volume}")
    return options


@dataclass
class Container:
    docker: Docker
    name: str
    port: int
    #: A token allowed to read /metrics (the secure port reviews it in-cluster).
    metrics_token: str

    def inspect(self) -> dict[str, Any]:
        data: list[dict[str, Any]] = json.loads(self.docker.run("inspect", self.name))
        return data[0]

    def logs(self) -> str:
        result = self.docker.engine.run("logs", self.name, check=False)
        return result.stdout + result.stderr

    def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        """GET ``path`` over HTTPS (the self-signed certificate of its start, not verified)."""
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}")
        token = self.metrics_token if token is None else token
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as reply:
                return reply.status, reply.read().decode()
        except OSError as error:
            return getattr(error, "code", 0), str(error)

    def leading(self) -> bool:
        assert self.inspect()["State"]["Running"], f"container exited:\n{self.logs()[-4000:]}"
        return "scheduler_leader 1.0" in self.get("/metrics")[1]


def apply(plane: ControlPlane, manifests: str) -> None:
    result = subprocess.run(
        [kubectl(), f"--kubeconfig={plane.kubeconfig}", "apply", "--server-side",
         "--field-manager=image-tests", "-f", "-"],
        input=manifests, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def service_account_token(plane: ControlPlane) -> str:
    """A bound token of the Deployment's ServiceAccount from the TokenRequest API, as kubelet's."""
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token"
    token: str = plane.client().post(path, request).body["status"]["token"]
    return token


@contextlib.contextmanager
def run_scheduler(
    docker: Docker, plane: ControlPlane, image: str, manifests: str, workdir: Path
) -> Iterator[Container]:
    """The image run as the rendered Deployment says, in-cluster, against ``plane``."""
    apply(plane, manifests)
    docs = [doc for doc in yaml.safe_load_all(manifests) if doc]
    deployment = find(docs, "Deployment", "pluggable-scheduler")
    pod = deployment["spec"]["template"]["spec"]
    (spec,) = pod["containers"]
    fs_group = pod["securityContext"]["fsGroup"]

    # The ServiceAccount volume as kubelet projects it: readable through fsGroup only.
    account = workdir / "serviceaccount"
    account.mkdir()
    files = {
        "token": service_account_token(plane),
        "ca.crt": plane.ca_file.read_text(),
        "namespace": NAMESPACE,
    }
    for name, text in files.items():
        (account / name).write_text(text)
    for path in (account, *(account / name for name in files)):
        path.chmod(0o750 if path.is_dir() else 0o440)
        os.chown(path, 0, fs_group)

    # The ConfigMap's config.yaml, health server moved off the default port: the
    # container shares the host's network, and the HEALTHCHECK must follow it.
    port = free_port()
    config = yaml.safe_load(scheduler_config_text(docs))
    config["pluggableScheduler"]["serverAddress"] = f"127.0.0.1:{port}"
    (config_volume,) = [v["name"] for v in pod["volumes"] if "configMap" in v]
    config_dir = workdir / "config"
    config_dir.mkdir()
    (config_dir / "config.yaml").write_text(yaml.safe_dump(config))
    (config_dir / "config.yaml").chmod(0o444)
    config_dir.chmod(0o755)

    server_host, server_port = plane.server.removeprefix("https://").rsplit(":", 1)
    name = docker.new_name("pluggable-scheduler")
    options = [
        "run", "--detach", "--name", name, "--network", "host",
        *deployment_run_options(deployment, {config_volume: config_dir}),
        "--volume", f"{account}:{SERVICE_ACCOUNT_DIR}:ro",
        "--env", f"KUBERNETES_SERVICE_HOST={server_host}",
        "--env", f"KUBERNETES_SERVICE_PORT={server_port}",
        # The image's HEALTHCHECK command, probed more often than its 30 s.
        "--health-interval=2s", "--health-start-period=60s",
        image, *spec.get("args", []),
    ]  # fmt: skip
    docker.containers.append(name)
    docker.run(*options)
    container = Container(docker, name, port, plane.tokens[ADMIN.name])
    try:
        yield container
    finally:
        (workdir / f"{name}.log").write_text(container.logs())
        docker.run("rm", "--force", name, check=False)


def healthy(container: Container) -> bool:
    state = container.inspect()["State"]
    assert state["Running"], f"container exited ({state}):\n{container.logs()[-4000:]}"
    return bool(state.get("Health", {}).get("Status") == "healthy")


def pod(name: str, cpu: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "schedulerName": "pluggable-scheduler",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
        },
    }  # fmt: skip


def make_namespace(plane: ControlPlane, prefix: str) -> str:
    namespace = f"{prefix}-{secrets.token_hex(3)}"
    plane.client().post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": namespace}})  # fmt: skip
    return namespace


class MemorySampler:
    """The largest resident set of a process, sampled from ``/proc`` on a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


# --------------------------------------------------------------------------- tests


def test_image_builds_without_a_registry(docker: Docker, scheduler_image: BuiltImage) -> None:
    config = json.loads(docker.run("image", "inspect", scheduler_image.tag))[0]["Config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["pluggable-scheduler"]
    assert config["Healthcheck"]["Test"][-3:] == [
        "python3",
        "-m",
        "scheduler.daemon.healthcheck",
    ]
    # pip's build arguments pointed at loopback; none of them stays in the image.
    assert not [
        v
        for v in config["Env"]
        if v.startswith(("PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_INDEX_URL"))
    ]
    listing = json.loads(
        docker.run(
            "run",
            "--rm",
            "--network",
            "none",
            scheduler_image.tag,
            "plugins",
            "list",
            "--output",
            "json",
        )
    )
    plugins = {p["name"]: p for p in listing["plugins"]}
    assert plugins["NodeResourcesFit"]["error"] is None
    assert not [p for p in plugins.values() if p["error"]]
    # Installed as from an index, so a derived image's `pip freeze` is a usable constraint.
    frozen = docker.run(
        "run", "--rm", "--network", "none", "--entrypoint", "pip", scheduler_image.tag, "freeze"
    )
    (scheduler,) = [line for line in frozen.splitlines() if line.startswith("pluggable-scheduler")]
    assert scheduler.startswith("pluggable-scheduler=="), frozen


def test_container_schedules_and_holds_the_lease_as_the_deployment_runs_it(
    docker: Docker,
    scheduler_image: BuiltImage,
    plane: ControlPlane,
    tmp_path: Path,
    progress: Progress,
) -> None:
    admin = plane.client()
    namespace = make_namespace(plane, "image")
    nodes = [f"image-node-{secrets.token_hex(3)}" for _ in range(3)]
    for name in nodes:
        admin.post("/api/v1/nodes", make_node(name, cpu="8", memory="16Gi"))
    pods = f"/api/v1/namespaces/{namespace}/pods"
    with run_scheduler(
        docker, plane, scheduler_image.tag, render_text(BASE), tmp_path
    ) as container:
        state = container.inspect()
        pid = state["State"]["Pid"]
        # What the kernel enforces, read from the host: the Deployment's UID/GID
        # and fsGroup, no capabilities at all, no privilege escalation.
        status = dict(
            line.split(":\t", 1)
            for line in Path(f"/proc/{pid}/status").read_text().splitlines()
            if ":\t" in line
        )
        assert status["Uid"].split() == ["65532"] * 4
        assert status["Gid"].split() == ["65532"] * 4
        assert "65532" in status["Groups"].split()
        assert (
            int(status["CapEff"], 16) == int(status["CapPrm"], 16) == int(status["CapBnd"], 16) == 0
        )
        assert status["NoNewPrivs"].strip() == "1"
        assert state["HostConfig"]["ReadonlyRootfs"] is True
        denied = docker.engine.run(
            "exec", "--user", "0", container.name, "touch", "/opt/x", check=False
        )
        assert "Read-only file system" in denied.stderr, denied

        wait_for("the container to lead", container.leading, log=container.logs)
        lease = admin.get(LEASE).body["spec"]
        assert lease["holderIdentity"].endswith("_1"), lease  # the container's PID 1
        wait_for(
            "the image's HEALTHCHECK to report healthy",
            lambda: healthy(container),
            log=container.logs,
        )
        last = container.inspect()["State"]["Health"]["Log"][-1]
        assert last["ExitCode"] == 0 and f"127.0.0.1:{container.port}/livez" in last["Output"], last

        count = 60
        with MemorySampler(pid) as memory:
            started = time.monotonic()
            for index in range(count):
                admin.post(pods, pod(f"web-{index}", cpu="250m"))
            admin.post(pods, pod("too-big", cpu="64"))

            def bound() -> int | None:
                items = admin.get(pods).body["items"]
                done = sum(1 for p in items if p["spec"].get("nodeName"))
                return done if done == count else None

            wait_for(f"{count} pods bound", bound, log=container.logs)
            elapsed = time.monotonic() - started
            stats = docker.run(
                "stats", "--no-stream", "--format", "{{.MemUsage}}", container.name
            ).strip()
        placed = {
            p["spec"]["nodeName"]
            for p in admin.get(pods).body["items"]
            if p["spec"].get("nodeName")
        }
        assert placed == set(nodes)  # spread by the default scoring, all three used
        too_big = admin.get(f"{pods}/too-big").body
        assert not too_big["spec"].get("nodeName")
        progress(
            f"container scheduled {count} pods in {elapsed:.1f} s; scheduler RSS peak "
            f"{memory.peak_kib / 1024:.0f} MiB (VmRSS of the container's PID 1), "
            f"docker stats after: {stats}"
        )
        assert memory.peak_kib > 0
        assert container.get("/readyz", token="")[0] == 200
        # Reviewed in-cluster as the ServiceAccount: anonymous and unknown callers refused.
        assert container.get("/metrics", token="")[0] == 403
        assert container.get("/metrics", token="no-such-token")[0] == 401

        # `kubectl delete` of the pod: SIGTERM, the lease is released, exit 0.
        docker.run("stop", "--time", "30", container.name)
        state = container.inspect()["State"]
        assert state["ExitCode"] == 0, container.logs()[-4000:]
        assert not admin.get(LEASE).body["spec"].get("holderIdentity")
    text = (tmp_path / f"{container.name}.log").read_text()
    assert "Forbidden" not in text and "Traceback" not in text, text[-4000:]


def test_derived_image_installs_a_plugin_by_name(
    docker: Docker,
    scheduler_image: BuiltImage,
    pip_source: PipSource,
    progress: Progress,
    tmp_path: Path,
) -> None:
    """The pattern of docs/deploying.md: FROM the scheduler image, pip install a plugin."""
    (tmp_path / "Dockerfile").write_text(
        f"FROM {scheduler_image.tag}\n"
        "ARG PIP_INDEX_URL\nARG PIP_FIND_LINKS\nARG PIP_NO_INDEX\n"
        "USER 0\n"
        "RUN pip freeze > /tmp/constraints.txt \\\n"
        "    && pip install --no-cache-dir -c /tmp/constraints.txt "
        "scheduler-plugin-loadaware==0.1.0 \\\n"
        "    && rm /tmp/constraints.txt \\\n"
        "    && pluggable-scheduler plugins list\n"
        "USER 65532:65532\n"
    )
    derived = build_image(
        docker, progress, tmp_path, tag=f"scheduler-with-loadaware:test-{secrets.token_hex(4)}",
        context=tmp_path, build_args={}, pip=pip_source,
    )  # fmt: skip
    listing = json.loads(
        docker.run(
            "run", "--rm", "--network", "none", derived.tag, "plugins", "list", "--output", "json"
        )
    )
    plugins = {p["name"]: p for p in listing["plugins"]}
    assert plugins["LoadAware"]["distribution"] == "scheduler-plugin-loadaware"
    assert plugins["LoadAware"]["error"] is None
    progress(f"the derived image adds {(derived.size - scheduler_image.size) / 1e3:.0f} kB")


def test_coscheduling_overlay_builds_and_schedules_a_gang(
    docker: Docker,
    scheduler_image: BuiltImage,
    pip_source: PipSource,
    plane: ControlPlane,
    progress: Progress,
    tmp_path: Path,
) -> None:
    tag = f"pluggable-scheduler-coscheduling:test-{secrets.token_hex(4)}"
    overlay = build_image(
        docker, progress, tmp_path, tag=tag, context=COSCHEDULING,
        build_args={"BASE_IMAGE": scheduler_image.tag}, pip=pip_source,
    )  # fmt: skip
    manifests = render_text(COSCHEDULING)
    admin = plane.client()
    apply(plane, manifests)
    crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.x-k8s.io"

    def established() -> bool:
        conditions = admin.get(crd).body.get("status", {}).get("conditions", [])
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for("the PodGroup CRD", established)
    namespace = make_namespace(plane, "gang")
    for index in range(2):
        admin.post(
            "/api/v1/nodes",
            make_node(f"gang-node-{secrets.token_hex(3)}-{index}", cpu="2", memory="16Gi"),
        )
    groups = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"
    admin.post(groups, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                        "metadata": {"name": "gang"}, "spec": {"minMember": 3}})  # fmt: skip
    pods = f"/api/v1/namespaces/{namespace}/pods"
    label = {"scheduling.x-k8s.io/pod-group": "gang"}
    with run_scheduler(docker, plane, overlay.tag, manifests, tmp_path) as container:
        wait_for("the container to lead", container.leading, log=container.logs)
        for index in range(2):
            admin.post(pods, pod(f"member-{index}", cpu="500m", labels=label))
        # Two of three: the gang waits at Permit, nobody is bound.
        time.sleep(3)
        assert not [p for p in admin.get(pods).body["items"] if p["spec"].get("nodeName")]
        admin.post(pods, pod("member-2", cpu="500m", labels=label))

        def all_bound() -> bool:
            items = admin.get(pods).body["items"]
            return len(items) == 3 and all(p["spec"].get("nodeName") for p in items)

        wait_for("the gang bound together", all_bound, log=container.logs)
        wait_for(
            "the PodGroup's status written by the plugin",
            lambda: admin.get(f"{groups}/gang").body.get("status", {}).get("phase"),
            log=container.logs,
        )


def test_extra_plugins_build_argument_installs_a_plugin_by_name(
    docker: Docker,
    scheduler_image: BuiltImage,
    base_image: str,
    pip_source: PipSource,
    progress: Progress,
    tmp_path: Path,
) -> None:
    """The other way of docs/deploying.md: the main Dockerfile's EXTRA_PLUGINS."""
    tag = f"scheduler-with-annotation-gate:test-{secrets.token_hex(4)}"
    image = build_image(
        docker, progress, tmp_path, tag=tag, context=REPO, pip=pip_source,
        build_args={"BASE_IMAGE": base_image,
                    "EXTRA_PLUGINS": "scheduler-plugin-annotation-gate==0.1.0"},
    )  # fmt: skip
    listing = json.loads(
        docker.run(
            "run", "--rm", "--network", "none", image.tag, "plugins", "list", "--output", "json"
        )
    )
    plugins = {p["distribution"]: p for p in listing["plugins"]}
    gate = plugins["scheduler-plugin-annotation-gate"]
    assert gate["error"] is None, gate
