"""A cluster, a real Framework of the default filter plugins and DefaultPreemption, for
preemption tests; builders shaped like kube's ``st.MakePod()``/``st.MakeNode()``.

As in kube's tests, node capacities default to 32 pods, and ``smallRes`` etc.
are the quantities of kube's ``default_preemption_test.go``. Start times are
whole seconds after the epoch (API objects carry seconds), which keeps
kube's ordering of ``epochTime1`` .. ``epochTime6``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.api import Code, CycleState, Diagnosis, Status, hookimpl
from scheduler.api.results import Rejection
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.runtime import Framework
from scheduler.plugins.defaultpreemption import NAME, DefaultPreemption
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources import NodeResourcesFit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from tests.framework.helpers import make_framework

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000

SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}

# The default plugins with a Filter, in kube's default order.
DEFAULT_FILTER_PLUGINS: tuple[tuple[str, type[Any]], ...] = (
    ("NodeUnschedulable", NodeUnschedulable),
    ("NodeName", NodeName),
    ("TaintToleration", TaintToleration),
    ("NodeAffinity", NodeAffinity),
    ("NodePorts", NodePorts),
    ("NodeResourcesFit", NodeResourcesFit),
    ("PodTopologySpread", PodTopologySpread),
    ("InterPodAffinity", InterPodAffinity),
)


def epoch(seconds: int) -> str:
    return f"1970-01-01T00:00:{seconds:02d}Z"


def knode(name: str, capacity: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``st.MakeNode().Name(...).Capacity(...)``; ``a/b`` names carry hostname and zone labels."""
    parts = name.split("/")
    labels = dict(zip(("hostname", "zone", "region"), parts, strict=False))
    resources: dict[str, str] = {"pods": "32", **(capacity or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": parts[0], "labels": labels},
        "spec": {},
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def kpod(
    name: str,
    *,
    node: str | None = None,
    priority: int | None = None,
    req: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    start: int | None = None,
    namespace: str = "default",
    preemption_policy: str | None = None,
    nominated: str | None = None,
    terminating: bool = False,
    conditions: Sequence[Mapping[str, str]] = (),
    spread: Sequence[Mapping[str, Any]] = (),
    anti_affinity_exists: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """``st.MakePod()`` with the setters kube's preemption tests use; the UID is the name."""
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    if req:
        container["resources"] = {"requests": dict(req)}
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    if spread:
        spec["topologySpreadConstraints"] = [dict(c) for c in spread]
    if anti_affinity_exists:
        key, topology = anti_affinity_exists
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
                        "topologyKey": topology,
                    }
                ]
            }
        }
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": name,
        "labels": dict(labels or {}),
    }
    if terminating:
        meta["deletionTimestamp"] = epoch(59)
    status: dict[str, Any] = {}
    if start is not None:
        status["startTime"] = epoch(start)
    if nominated:
        status["nominatedNodeName"] = nominated
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def spread_exists(max_skew: int, topology_key: str, label: str) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": topology_key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": label, "operator": "Exists"}]},
    }


def pdb(
    match_labels: Mapping[str, str],
    allowed: int,
    *,
    name: str = "pdb",
    namespace: str = "default",
    disrupted: Iterable[str] = (),
) -> dict[str, Any]:
    status: dict[str, Any] = {"disruptionsAllowed": allowed}
    gone = list(disrupted)
    if gone:
        status["disruptedPods"] = {p: "2024-01-01T00:00:00Z" for p in gone}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": dict(match_labels)}},
        "status": status,
    }


class CountingFilter:
    """kube's FakeFilterPlugin: counts Filter calls, rejects every node with ``code`` if set."""

    # It reads nothing of the node, but kube's dry-run tests count its calls
    # node by node: tests of the batched dry run switch this on per instance.
    pods_via_requested = False

    def __init__(self, code: Code | None = None) -> None:
        self.code = code
        self.calls = 0

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> Status | None:
        self.calls += len(nodes)
        if self.code is None:
            return None
        return Status(self.code, ("injecting failure",))


class ErroringExtensions:
    """kube's TestPlugin: its AddPod/RemovePod fail on nodes labelled ``error=true``."""

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
        return None

    @hookimpl
    def pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: Any
    ) -> Status | None:
        if node.labels.get("error") == "true":
            return Status.error_status(f"failed to add pod: {pod.name}")
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: Any
    ) -> Status | None:
        if node.labels.get("error") == "true":
            return Status.error_status(f"failed to remove pod: {pod.name}")
        return None


class StaticNominator:
    """The scheduling queue's nominations, as the handle reads them (settable by tests)."""

    def __init__(self) -> None:
        self.nominated: dict[str, list[PodInfo]] = {}

    def nominate(self, pod: PodInfo, node: str) -> None:
        self.nominated.setdefault(node, []).append(pod)

    def nominated_pods(self) -> Mapping[str, list[PodInfo]]:
        return self.nominated


@dataclass
class FakeClient:
    """Records raw API requests; GET of pods answers ``pods``."""

    pods: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail: dict[tuple[str, str], Exception] = field(default_factory=dict)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> Any:
        self.requests.append(
            {
                "method": method,
                "path": path,
                "body": body,
                "content_type": content_type,
                "query": dict(query or {}),
            }
        )
        error = self.fail.get((method, path))
        if error is not None:
            raise error
        if method == "GET":
            return {"kind": "PodList", "items": self.pods}
        return {}


@dataclass
class Cluster:
    table: NodeTable
    handle: FrameworkHandle
    framework: Framework
    plugin: Any  # DefaultPreemption unless build_cluster was given another PostFilter
    client: Any  # a FakeClient, or a real KubeClient in API tests
    events: list[tuple[str, str, str, str, str]]
    counter: CountingFilter
    activated: list[str]
    nominator: StaticNominator

    def pod(self, raw: dict[str, Any]) -> PodInfo:
        return PodInfo.from_dict(raw)

    def pre_filter(self, pod: PodInfo) -> CycleState:
        """A cycle state after PreFilter, as preemption gets it."""
        state = self.framework.new_cycle_state()
        _, status = self.framework.run_pre_filter(state, pod, self.table.all_nodes())
        assert status.is_success(), status
        return state

    def diagnosis(self, codes: Mapping[str, Code]) -> Diagnosis:
        """kube's ``filteredNodesStatuses``: the given nodes rejected with the given codes."""
        table = self.table
        diagnosis = Diagnosis(names=table.names, total_nodes=len(table))
        names = list(codes)
        rows = np.asarray([table.row_of(n) for n in names], dtype=np.int64)
        diagnosis.add(
            Rejection(
                "Test",
                rows,
                np.asarray([codes[n] for n in names], dtype=np.int8),
                np.ones(len(names), dtype=np.uint64),
                ["rejected"],
            )
        )
        return diagnosis


def build_cluster(
    nodes: Sequence[dict[str, Any]],
    pods: Sequence[dict[str, Any]] = (),
    *,
    pdbs: Sequence[dict[str, Any]] = (),
    args: Any = None,
    filter_code: Code | None = None,
    extra: Sequence[tuple[str, object]] = (),
    client: Any = None,
    post_filter: tuple[str, Callable[[FrameworkHandle], object]] | None = None,
) -> Cluster:
    """Nodes and assigned pods in a NodeTable, and a Framework running, in order: a
    counting filter, ``extra`` plugins, the default filter plugins and DefaultPreemption
    (or ``post_filter``: a name and a factory given the plugin's handle)."""
    table = NodeTable()
    for node in nodes:
        table.upsert_node(node)
    for raw in pods:
        table.add_pod(PodInfo.from_dict(raw))
    events: list[tuple[str, str, str, str, str]] = []
    activated: list[str] = []
    fake = client if client is not None else FakeClient()
    handle = FrameworkHandle(
        "default-scheduler",
        table,
        client=fake,
        event_sink=lambda pod, kind, reason, note, action: events.append(
            (pod.key, kind, reason, note, action)
        ),
        store_provider=StaticStores(list(pdbs)),
        activator=lambda pods: activated.extend(p.key for p in pods),
    )
    counter = CountingFilter(filter_code)
    plugins: list[tuple[str, object]] = [("FakeFilter", counter), *extra]
    for name, cls in DEFAULT_FILTER_PLUGINS:
        plugins.append((name, cls(None, handle.for_plugin(name))))
    if post_filter is None:
        plugin: object = DefaultPreemption(args, handle.for_plugin(NAME))
        plugins.append((NAME, plugin))
    else:
        name, factory = post_filter
        plugin = factory(handle.for_plugin(name, legacy_table=False))
        plugins.append((name, plugin))
    framework = make_framework(plugins)
    handle.set_framework(framework)
    nominator = StaticNominator()
    handle.set_nominator(nominator)
    return Cluster(table, handle, framework, plugin, fake, events, counter, activated, nominator)


def snapshot(table: NodeTable) -> tuple[list[list[int]], list[list[str]], int]:
    """What preemption's what-if evaluation must leave unchanged."""
    rows = table.rows().tolist()
    requested = [table.requested[r].tolist() for r in rows]
    pods = [sorted(table.pods[r]) for r in rows]
    return requested, pods, len(table.pod_table)
