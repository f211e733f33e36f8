"""HTTP extenders: our decisions against kube-scheduler 1.36's with the very same extender.

One toy extender (``scheduler.testing.extender``, on loopback) serves both
sides. kube-scheduler runs on the real control plane with an ``extenders:``
config; our side runs ``explain`` with the same config on the objects the
API server holds. Compared, per case:

- a pod the extender accepts: the feasible set (the nodes kube scored at
  ``-v=10``), every node's final score (plugins plus ``score * weight * 10``),
  kube's node among our tied best, and the ``ExtenderBindingArgs`` kube sent
  to ``bindVerb`` equal to the ones our Extender plugin sends for that node;
- a pod the extender rejects everywhere: the "0/N nodes are available" text;
- an extender that answers 500, an ``error``, garbage, too slowly, or is
  down: non-ignorable, the pod fails with the same SchedulerError text
  (garbage: the same reason; Go's JSON decoder words its error its own way);
  ignorable, the extender is skipped and both sides place the pod alike;
- ``preemptVerb`` (nodeCacheCapable or not), the extender dropping a
  candidate or narrowing its victims: the same candidates and victims sent
  to the extender, the same nominated node, and on kube's side exactly the
  victims the extender allowed on it deleted.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.config.models import DEFAULT_SCHEDULER_NAME
from scheduler.framework.explain import Explanation, explain
from scheduler.framework.loader import PluginCatalog
from scheduler.plugins.extender.wire import binding_args
from scheduler.testing.extender import Mode, ThreadedExtender, ToyExtender
from scheduler.tools.controlplane import (
    KUBE_SCHEDULER,
    ControlPlane,
    RestClient,
    run_kube_scheduler,
    start_control_plane,
)
from tests.fidelity.harness import (
    HOLD_GATE,
    KUBE_DEFAULT_SCHEDULER,
    KubeSide,
    availability,
    plain_copy,
)

pytestmark = pytest.mark.fidelity

VGPU = "example.com/vgpu"
DECIDE_WITHIN = 30.0


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    with start_control_plane() as running:
        yield running


@pytest.fixture(scope="module")
def toy(plane: ControlPlane) -> Iterator[ThreadedExtender]:
    client = plane.client()

    async def bind(namespace: str, name: str, uid: str, node: str) -> str:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        got = await asyncio.to_thread(client.post, path, body, check=False)
        return "" if got.status < 300 else f"binding failed: {got.status}"

    with ThreadedExtender(ToyExtender(require_label="ext-ok", binder=bind, delay=3.0)) as ext:
        yield ext


def extenders(url: str, *, ignorable: bool) -> list[dict[str, Any]]:
    return [
        {
            "urlPrefix": url,
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "bindVerb": "bind",
            "weight": 3,
            "httpTimeout": "1s",
            "ignorable": ignorable,
            "managedResources": [{"name": VGPU, "ignoredByScheduler": True}],
        }
    ]


def dead_url() -> str:
    """A loopback URL nobody listens on (an extender that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class Sides:
    """kube-scheduler with ``extenders:`` and our ``explain`` with the same list."""

    def __init__(self, kube: KubeSide, client: RestClient, ext: list[dict[str, Any]]) -> None:
        self.kube = kube
        self.client = client
        self.config = load_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "extenders": ext,
            }
        )
        self.catalog = PluginCatalog.discover()
        self.namespace = ""

    def load(self) -> None:
        """A fresh namespace and four nodes: ext-ok on n1, n2, n4; scores 2, 7, 10, 5."""
        self.kube.reset()
        self.namespace = f"ext-{uuid.uuid4().hex[:8]}"
        self.client.post(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}},
        )
        self.kube.namespaces.append(self.namespace)
        labels = {
            "n1": {"ext-ok": "true", "extender-score": "2"},
            "n2": {"ext-ok": "true", "extender-score": "7"},
            "n3": {"extender-score": "10"},
            "n4": {"ext-ok": "true", "extender-score": "5"},
        }
        for short, extra in labels.items():
            name = f"{self.namespace}-{short}"
            self.client.post(
                "/api/v1/nodes",
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {"kubernetes.io/hostname": name, **extra},
                    },
                },
            )
            resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
            self.client.patch_status(
                f"/api/v1/nodes/{name}",
                {
                    "status": {
                        "capacity": resources,
                        "allocatable": resources,
                        "conditions": [{"type": "Ready", "status": "True"}],
                    }
                },
            )
        self.kube.sync(self.namespace, f"{self.namespace}-n4")

    def pod(self, name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "schedulerName": KUBE_DEFAULT_SCHEDULER,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "256Mi", VGPU: "1"},
                            "limits": {VGPU: "1"},
                        },
                    }
                ],
            },
        }

    def kube_decides(self, name: str) -> dict[str, Any]:
        """The pod once kube-scheduler bound it or set PodScheduled=False."""
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        deadline = time.monotonic() + DECIDE_WITHIN
        while time.monotonic() < deadline:
            pod: dict[str, Any] = self.client.get(path).body
            if pod["spec"].get("nodeName"):
                return pod
            for cond in (pod.get("status") or {}).get("conditions") or ():
                if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                    return pod
            time.sleep(0.05)
        raise AssertionError(f"kube-scheduler did not decide {name} in {DECIDE_WITHIN}s")

    def ours(self, pod: dict[str, Any]) -> Explanation:
        return explain(
            self.kube.objects(), pod, self.config, self.catalog, profile_name=DEFAULT_SCHEDULER_NAME
        )


@pytest.fixture
def strict(plane: ControlPlane, toy: ThreadedExtender, tmp_path: Path) -> Iterator[Sides]:
    yield from _sides(plane, tmp_path, extenders(toy.url, ignorable=False))


@pytest.fixture
def lenient(plane: ControlPlane, toy: ThreadedExtender, tmp_path: Path) -> Iterator[Sides]:
    yield from _sides(plane, tmp_path, extenders(toy.url, ignorable=True))


def _sides(plane: ControlPlane, tmp_path: Path, ext: list[dict[str, Any]]) -> Iterator[Sides]:
    kubeconfig = plane.write_user_kubeconfig(KUBE_SCHEDULER.name)
    config = {"profiles": [{"schedulerName": KUBE_DEFAULT_SCHEDULER}], "extenders": ext}
    with run_kube_scheduler(
        kubeconfig, config, workdir=tmp_path, extra_args=["--vmodule=schedule_one=10"]
    ) as scheduler:
        sides = Sides(KubeSide(plane.client(), scheduler.log_path), plane.client(), ext)
        sides.load()
        yield sides


def condition(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def assert_same_placement(sides: Sides, name: str, toy: ToyExtender | None) -> None:
    pod = sides.pod(name)
    ours = sides.ours(pod)
    if toy is not None:
        toy.calls.clear()
    sides.kube.create_pod(sides.namespace, pod)
    decided = sides.kube_decides(name)
    node = decided["spec"].get("nodeName")
    assert node, f"kube-scheduler did not bind {name}: {decided['status']}"
    _, kube_totals = sides.kube.scores(f"{sides.namespace}/{name}")
    our_totals = {n: r.total for n, r in ours.nodes.items() if r.feasible}
    assert set(kube_totals) == set(ours.feasible)
    assert kube_totals == our_totals
    assert node in ours.tied
    if toy is not None:
        binds = [body for verb, body in toy.calls if verb == "bind"]
        uid = decided["metadata"]["uid"]
        assert binds == [binding_args(sides.namespace, name, uid, node)]


def test_filter_prioritize_and_bind_match(strict: Sides, toy: ThreadedExtender) -> None:
    toy.toy.mode = "ok"
    assert_same_placement(strict, "gpu-1", toy.toy)
    # What each side sent to filterVerb: the same ExtenderArgs shape and nodes.
    toy.toy.calls.clear()
    ours = strict.ours(strict.pod("gpu-2"))
    assert ours.node == f"{strict.namespace}-n2"
    ours_filter = next(body for verb, body in toy.toy.calls if verb == "filter")
    toy.toy.calls.clear()
    strict.kube.create_pod(strict.namespace, strict.pod("gpu-2"))
    strict.kube_decides("gpu-2")
    kube_filter = next(body for verb, body in toy.toy.calls if verb == "filter")
    assert set(kube_filter) == set(ours_filter) == {"Pod", "Nodes", "NodeNames"}
    assert kube_filter["NodeNames"] is None and ours_filter["NodeNames"] is None
    names = [n["metadata"]["name"] for n in kube_filter["Nodes"]["items"]]
    assert sorted(names) == sorted(n["metadata"]["name"] for n in ours_filter["Nodes"]["items"])


def test_rejected_everywhere_same_message(strict: Sides, toy: ThreadedExtender) -> None:
    toy.toy.mode = "ok"
    toy.toy.unresolvable = {f"{strict.namespace}-n1": "node(s) have no vGPU left"}
    toy.toy.require_label = "nobody-has-this"
    try:
        pod = strict.pod("nowhere")
        ours = strict.ours(pod)
        strict.kube.create_pod(strict.namespace, pod)
        decided = strict.kube_decides("nowhere")
    finally:
        toy.toy.unresolvable = {}
        toy.toy.require_label = "ext-ok"
    assert condition(decided)["reason"] == "Unschedulable"
    assert ours.node is None
    assert availability(condition(decided)["message"]) == availability(ours.message)


@pytest.mark.parametrize("mode", ["error", "error-field", "slow", "garbage"])
def test_failing_extender_not_ignorable(strict: Sides, toy: ThreadedExtender, mode: Mode) -> None:
    toy.toy.mode = mode
    try:
        pod = strict.pod(f"bad-{mode}")
        ours = strict.ours(pod)
        strict.kube.create_pod(strict.namespace, pod)
        decided = strict.kube_decides(f"bad-{mode}")
    finally:
        toy.toy.mode = "ok"
    kube_condition = condition(decided)
    assert kube_condition["reason"] == "SchedulerError"
    assert ours.node is None and ours.status.code.name == "ERROR"
    if mode != "garbage":
        assert ours.message == kube_condition["message"]


@pytest.mark.parametrize("mode", ["error", "slow", "garbage"])
def test_failing_extender_ignorable(lenient: Sides, toy: ThreadedExtender, mode: Mode) -> None:
    toy.toy.mode = mode
    try:
        assert_same_placement(lenient, f"skip-{mode}", None)
    finally:
        toy.toy.mode = "ok"


@pytest.mark.parametrize("ignorable", [False, True])
def test_extender_down(plane: ControlPlane, tmp_path: Path, ignorable: bool) -> None:
    for sides in _sides(plane, tmp_path, extenders(dead_url(), ignorable=ignorable)):
        if ignorable:
            assert_same_placement(sides, "down", None)
            continue
        pod = sides.pod("down")
        ours = sides.ours(pod)
        sides.kube.create_pod(sides.namespace, pod)
        kube_condition = condition(sides.kube_decides("down"))
        assert kube_condition["reason"] == "SchedulerError"
        assert ours.message == kube_condition["message"]


# -- preemptVerb -------------------------------------------------------------------------

PRIORITIES = {"fid-ext-10": 10, "fid-ext-15": 15, "fid-ext-16": 16, "fid-ext-18": 18}
PRIORITIES |= {"fid-ext-20": 20, "fid-ext-1000": 1000}


class OnePreemption(ToyExtender):
    """The toy, answering only its first preempt call (then: no candidate).

    kube-scheduler retries a preemptor that still does not fit after its
    (narrowed) victims are gone; the first preemption is the one compared.
    """

    answered = 0

    async def _preempt(self, body: Any) -> dict[str, Any]:
        self.answered += 1
        if self.answered > 1:
            return {"NodeNameToMetaVictims": {}}
        return await super()._preempt(body)


@pytest.fixture(scope="module")
def preempting(plane: ControlPlane) -> Iterator[ThreadedExtender]:
    client = plane.client()
    for name, value in PRIORITIES.items():
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        client.post("/apis/scheduling.k8s.io/v1/priorityclasses", body, check=False)
    with ThreadedExtender(OnePreemption()) as ext:
        yield ext
    for name in PRIORITIES:
        client.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}", check=False)


def priority_pod(name: str, cpu: str, priority: int, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": KUBE_DEFAULT_SCHEDULER,
        "terminationGracePeriodSeconds": 0,
        "priorityClassName": f"fid-ext-{priority}",
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu}},
            }
        ],
    }
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def sent_victims(body: dict[str, Any]) -> dict[str, list[str]]:
    """The candidates and their victims' UIDs (in order) of an ExtenderPreemptionArgs."""
    meta = body["NodeNameToMetaVictims"]
    if meta is not None:
        return {node: [p["UID"] for p in v["Pods"]] for node, v in meta.items()}
    full = body["NodeNameToVictims"]
    return {node: [p["metadata"]["uid"] for p in v["Pods"]] for node, v in full.items()}


# Victims (cpu, priority) per node; every node has 4 CPUs, the preemptor wants 3 at
# priority 1000. kube's choice without an extender: n2 (lowest highest-priority victim).
VICTIMS = {
    "n1": {"a-mid": ("2", 20), "a-low": ("2", 10)},
    "n2": {"b": ("4", 15)},
    "n3": {"c": ("4", 16)},
    "n4": {"d": ("4", 18)},
}


@pytest.mark.parametrize(
    ("cache_capable", "drop", "spare", "expected"),
    [
        (True, set(), set(), "n2"),
        (False, {"n2"}, set(), "n3"),
        (True, {"n2"}, {"a-mid"}, "n1"),
        (False, {"n2", "n3"}, {"a-mid"}, "n1"),
    ],
    ids=["as-is", "drop-node", "narrow-cached", "narrow-full"],
)
def test_preempt_verb_same_victims_and_nominated_node(
    plane: ControlPlane,
    preempting: ThreadedExtender,
    tmp_path: Path,
    cache_capable: bool,
    drop: set[str],
    spare: set[str],
    expected: str,
) -> None:
    toy = preempting.toy
    assert isinstance(toy, OnePreemption)
    ext = [
        {"urlPrefix": preempting.url, "preemptVerb": "preempt", "nodeCacheCapable": cache_capable}
    ]
    for sides in _sides(plane, tmp_path, ext):
        try:
            compare_preemption(sides, toy, cache_capable, drop, spare, expected)
        finally:
            # A preemptor left pending would take the next case's nodes.
            sides.client.delete(
                f"/api/v1/namespaces/{sides.namespace}/pods?gracePeriodSeconds=0", check=False
            )


def compare_preemption(
    sides: Sides,
    toy: OnePreemption,
    cache_capable: bool,
    drop: set[str],
    spare: set[str],
    expected: str,
) -> None:
    ns, client = sides.namespace, sides.client
    uids: dict[str, str] = {}
    for short, pods in VICTIMS.items():
        for name, (cpu, priority) in pods.items():
            created = sides.kube.create_pod(ns, priority_pod(name, cpu, priority, f"{ns}-{short}"))
            uids[name] = created["metadata"]["uid"]
    sides.kube.sync(ns, f"{ns}-n4")
    toy.drop_nodes = {f"{ns}-{short}" for short in drop}
    toy.spare = {uids[name] for name in spare} | spare
    held = priority_pod("high", "3", 1000)
    held["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
    server_pod = sides.kube.create_pod(ns, held)
    assert server_pod["spec"]["priority"] == 1000

    toy.calls.clear()
    toy.answered = 0
    ours = sides.ours(plain_copy(server_pod, "high"))
    assert ours.post_filter is not None and ours.post_filter.ran
    our_node = ours.post_filter.nominated_node
    [(verb, our_call)] = toy.calls
    assert verb == "preempt"
    assert (our_call["NodeNameToMetaVictims"] is None) is not cache_capable

    toy.calls.clear()
    toy.answered = 0
    sides.kube.set_gates(ns, "high", [])
    path = f"/api/v1/namespaces/{ns}/pods"
    deadline = time.monotonic() + DECIDE_WITHIN
    kube_node = None
    while time.monotonic() < deadline and kube_node is None:
        pod = client.get(f"{path}/high").body
        kube_node = (pod.get("status") or {}).get("nominatedNodeName") or pod["spec"].get(
            "nodeName"
        )
        time.sleep(0.05)
    assert kube_node, "kube-scheduler did not preempt for the pod"
    kube_call = next(body for verb, body in toy.calls if verb == "preempt")
    assert sent_victims(kube_call) == sent_victims(our_call)
    assert kube_node == our_node == f"{ns}-{expected}"

    # kube deleted exactly the victims the extender allowed on that node.
    allowed = set(sent_victims(our_call)[our_node]) - toy.spare
    names = {uid: name for name, uid in uids.items()}
    deadline = time.monotonic() + DECIDE_WITHIN
    while time.monotonic() < deadline:
        left = {p["metadata"]["uid"] for p in client.get(path).body["items"]}
        if not allowed & left:
            break
        time.sleep(0.05)
    gone = set(uids.values()) - left
    assert sorted(names[u] for u in gone) == sorted(names[u] for u in allowed)
