"""Unit-testing a plugin's hooks without a daemon: ``PluginTestKit``.

A plugin author's unit tests need a cluster to run hooks on, a handle to
construct the plugin with, and the hook arguments the framework would pass.
The kit builds all three from plain API objects (``make_node``,
``make_pod``) and calls hooks the way the framework does: a 2.0 plugin gets
the read-only views, a 1.x plugin the objects API 1.x promised::

    kit = PluginTestKit(nodes=[make_node("a"), make_node("b", labels={"ssd": "1"})])
    plugin = kit.build(MyPlugin, {"label": "ssd"})
    result = kit.call(plugin, "filter", make_pod("web"))
    assert kit.feasible_names(result) == ["b"]

For whole-scheduler tests on an emulated cluster, use the pytest fixtures of
:mod:`scheduler.testing.pytest_plugin` instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel

from scheduler.api.args import coerce_args
from scheduler.api.cyclestate import CycleState
from scheduler.api.handle import ApiClient, FrameworkRunner, Handle
from scheduler.api.hookspecs import SchedulerHookSpecs
from scheduler.api.results import Diagnosis, FilterResult, PostFilterResult
from scheduler.api.status import Status
from scheduler.api.version import uses_views
from scheduler.api.views import Node, Nodes, Pod, QueuedPod
from scheduler.config.points import ExtensionPoint
from scheduler.framework.apiviews import hook_function
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import LoadedPlugin, PluginCatalog
from scheduler.framework.pluginmanager import HOOK_POINTS, POINT_HOOKS, SchedulerPluginManager
from scheduler.framework.runtime import Framework
from scheduler.framework.waiting import WaitingPodEntry
from scheduler.model.featuregates import effective_gates
from scheduler.model.kubegates import KUBE_FEATURE_GATE_DEPENDENCIES, KUBE_FEATURE_GATES
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo, QueuedPodInfo

Obj = Mapping[str, Any]
PluginT = TypeVar("PluginT")

#: kube-scheduler's default plugins with a Filter, in its order: the profile
#: :meth:`PluginTestKit.post_filter` runs a PostFilter plugin in.
DEFAULT_FILTERS: tuple[str, ...] = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
)


@dataclass
class RecordingClient:
    """An API client that answers every request with ``{}`` and records it.

    Give it to the kit (``PluginTestKit(client=RecordingClient())``) to see
    what a plugin sends, e.g. the victims a preemption deletes.
    """

    requests: list[tuple[str, str, Any]] = field(default_factory=list)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> Any:
        """Record ``(method, path, body)``; every request succeeds with ``{}``."""
        self.requests.append((method, path, body))
        return {}

    def deleted(self) -> list[str]:
        """``namespace/name`` of every pod DELETE sent, in order."""
        out = []
        for method, path, _ in self.requests:
            parts = path.split("/")
            if method == "DELETE" and len(parts) == 7 and parts[5] == "pods":
                out.append(f"{parts[4]}/{parts[6]}")
        return out


@dataclass
class PostFilterOutcome:
    """What :meth:`PluginTestKit.post_filter` saw: the nodes Filter let through, the
    diagnosis PostFilter got, and its result (None: a node fit, PostFilter did not run)."""

    feasible: list[str]
    diagnosis: Diagnosis
    result: PostFilterResult | None


def installed_plugin(name: str) -> LoadedPlugin:
    """Load plugin ``name`` from the installed entry points, as the scheduler would.

    Raises ``PluginLoadError`` naming the plugin and the cause (import
    failure, incompatible ``api_version``, invalid hook implementation).
    """
    return PluginCatalog.discover().load(name)


class PluginTestKit:
    """A small cluster, a handle, and hook calls as the framework makes them."""

    def __init__(
        self,
        nodes: Iterable[Obj] = (),
        pods: Iterable[Obj] = (),
        objects: Iterable[Obj] = (),
        *,
        profile: str = "default-scheduler",
        client: ApiClient | None = None,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        """``nodes`` and bound ``pods`` (``spec.nodeName`` set) make the cluster;
        ``objects`` fill the stores plugins read with ``handle.store(...)``;
        ``client`` answers API calls (e.g. a :class:`RecordingClient`);
        ``feature_gates`` are what ``handle.feature_gates`` shows (kube's gates
        at their defaults, with these set)."""
        self._table = NodeTable()
        self._handle = FrameworkHandle(
            profile, self._table, client=client, store_provider=StaticStores(list(objects))
        )
        self._requested_gates = dict(feature_gates or {})
        self._frameworks: dict[int, Framework] = {}
        for node in nodes:
            self.add_node(node)
        for pod in pods:
            self.add_pod(pod)

    # -- the cluster ----------------------------------------------------------

    def add_node(self, node: Obj) -> None:
        """Add or update a node (its API object)."""
        self._table.upsert_node(dict(node))

    def remove_node(self, name: str) -> None:
        """Remove node ``name`` (a node deleted from the cluster)."""
        self._table.remove_node(name)

    def add_pod(self, pod: Obj | Pod, node_name: str | None = None) -> Pod:
        """Account a pod on ``node_name`` (default: its ``spec.nodeName``), as bound or assumed."""
        info = self._pod_info(pod)
        self._table.add_pod(info, node_name)
        return info

    def remove_pod(self, pod: Pod) -> None:
        """Stop accounting ``pod`` (as returned by :meth:`add_pod`) on its node."""
        self._table.remove_pod(pod.key)

    def pod(self, pod: Obj | Pod) -> Pod:
        """A pod as hooks see it, parsed from its API object (errors name the pod)."""
        return self._pod_info(pod)

    @staticmethod
    def _pod_info(pod: Obj | Pod) -> PodInfo:
        if isinstance(pod, PodInfo):
            return pod
        if not isinstance(pod, Mapping):
            raise TypeError(f"expected a pod's API object (a mapping), got {type(pod).__name__}")
        return PodInfo.from_dict(dict(pod))

    def queued(self, pod: Obj | Pod, timestamp: float = 0.0, attempts: int = 0) -> QueuedPod:
        """A pod as QueueSort sees it: ``timestamp`` is when it entered the queue."""
        return QueuedPodInfo(self._pod_info(pod), timestamp, attempts)

    def nodes(self) -> Nodes:
        """Every node, as a 2.0 hook receives them."""
        return self._table.all_nodes().view()

    def node(self, name: str) -> Node:
        """Node ``name`` as per-node hooks (``filter_node``, PreFilter extensions) get it."""
        i = self.nodes().index_of(name)
        if i is None:
            raise LookupError(f"no node {name!r} in the kit's cluster")
        return self.nodes().node(i)

    # -- plugins --------------------------------------------------------------

    @property
    def handle(self) -> Handle:
        """The handle plugins built by :meth:`build` get (for assertions on its state)."""
        return self._handle

    def build(self, plugin_class: type[PluginT], args: Any = None) -> PluginT:
        """Construct a plugin as the scheduler does: its ``Args`` model validates ``args``."""
        model = getattr(plugin_class, "Args", None)
        if isinstance(model, type) and issubclass(model, BaseModel):
            args = coerce_args(model, args)
        name = str(getattr(plugin_class, "name", "") or plugin_class.__name__)
        version = str(getattr(plugin_class, "api_version", "1.0"))
        declared = getattr(plugin_class, "feature_gates", None) or {}
        gates, errors = effective_gates(
            {**KUBE_FEATURE_GATES, **declared},
            self._requested_gates,
            KUBE_FEATURE_GATE_DEPENDENCIES,
        )
        if errors:
            raise ValueError("; ".join(str(e) for e in errors))
        self._handle.set_feature_gates(gates)
        handle = self._handle.for_plugin(name, legacy_table=not uses_views(version))
        return plugin_class(args, handle)  # type: ignore[call-arg]

    def profile(self, *plugins: object) -> FrameworkRunner:
        """Run ``plugins`` (built with :meth:`build`) as one profile: ``handle.framework``.

        Each plugin sits at every extension point one of its hooks belongs
        to, in the order given, weight 1. What ``find_node`` on it decides is
        what a scheduling cycle with only these plugins would decide.
        """
        manager = SchedulerPluginManager()
        names = []
        for plugin in plugins:
            name = str(getattr(plugin, "name", "") or type(plugin).__name__)
            manager.register(plugin, name=name)
            names.append((name, manager.hooks_of(plugin)))
        order = {
            point: [
                (name, 1)
                for name, hooks in names
                if any(HOOK_POINTS.get(h) is point for h in hooks)
            ]
            for point in set(HOOK_POINTS.values())
        }
        framework = Framework(self._handle.profile_name, manager, order)
        self._handle.set_framework(framework)
        return framework

    def call(
        self,
        plugin: object,
        hook: str,
        pod: Obj | Pod | None = None,
        *,
        state: CycleState | None = None,
        node: str | None = None,
        **other: Any,
    ) -> Any:
        """Call ``plugin``'s ``hook`` with the arguments the framework would pass.

        ``nodes`` is every node of the kit's cluster and ``node`` the named
        one; ``state`` a fresh CycleState unless given (pass the same one to
        PreFilter and Filter). Other hook arguments (``node_name``,
        ``scores``, ``diagnosis`` ...) are passed by keyword.
        """
        method = getattr(plugin, hook, None)
        if method is None or not callable(method):
            raise AttributeError(f"{type(plugin).__name__} does not implement hook {hook!r}")
        if not hasattr(SchedulerHookSpecs, hook):
            raise AttributeError(f"{hook!r} is not a hook of the plugin API")
        argnames = [p for p in inspect.signature(method).parameters]
        values: dict[str, Any] = {
            "state": state if state is not None else CycleState(),
            "nodes": self._table.all_nodes(),
            **other,
        }
        if pod is not None:
            values["pod"] = self.pod(pod)
        if node is not None:
            row = self._table.row_of(node)
            if row is None:
                raise LookupError(f"no node {node!r} in the kit's cluster")
            values["node"] = self._table.node_info(row)
        missing = [a for a in argnames if a not in values]
        if missing:
            raise TypeError(f"hook {hook} needs {', '.join(missing)}: pass them to call()")
        fn = hook_function(plugin, method, argnames)
        return fn(*(values[a] for a in argnames))

    def post_filter(
        self,
        plugin: object,
        pod: Obj | Pod,
        *,
        filters: Sequence[str] = DEFAULT_FILTERS,
    ) -> PostFilterOutcome:
        """Schedule ``pod`` in a profile of the installed ``filters`` and ``plugin``: run
        PreFilter and Filter on every node and, if none fits, PostFilter as the scheduler
        does (``plugin``'s and those of ``filters`` that have one).

        The profile is the framework of the kit's handle from then on (a
        plugin's ``handle.preemption(...)`` evaluator drives it). Evictions run
        in the background where an event loop runs (pass a
        :class:`RecordingClient` to see them); the kit's cluster is not changed.
        """
        framework = self._framework_for(plugin, filters)
        info = self._pod_info(pod)
        state = framework.new_cycle_state()
        nodes = self._table.all_nodes()
        diagnosis = Diagnosis(names=self._table.names, total_nodes=len(self._table))
        subset, status = framework.run_pre_filter(state, info, nodes)
        if not status.is_success():
            diagnosis.pre_filter_message = status.message()
            diagnosis.pre_filter_code = status.code
            return PostFilterOutcome(
                [], diagnosis, framework.run_post_filter(state, info, diagnosis)
            )
        if subset.node_names is not None:
            keep = [r for r in nodes.rows.tolist() if self._table.names[r] in subset.node_names]
            nodes = type(nodes)(self._table, np.asarray(keep, dtype=np.int64))
        outcome = framework.run_filter(state, info, nodes, diagnosis)
        if not outcome.status.is_success():
            raise RuntimeError(f"Filter failed for {info.key}: {outcome.status.message()}")
        feasible = [self._table.names[r] for r in outcome.feasible.rows.tolist()]
        if feasible:
            return PostFilterOutcome(feasible, diagnosis, None)
        return PostFilterOutcome([], diagnosis, framework.run_post_filter(state, info, diagnosis))

    def _framework_for(self, plugin: object, filters: Sequence[str]) -> Framework:
        framework = self._frameworks.get(id(plugin))
        if framework is None:
            name = str(getattr(plugin, "name", "") or type(plugin).__name__)
            plugins: list[tuple[str, object]] = []
            for filter_name in filters:
                loaded = installed_plugin(filter_name)
                legacy = not uses_views(loaded.api_version)
                handle = self._handle.for_plugin(filter_name, legacy_table=legacy)
                plugins.append((filter_name, loaded.plugin_class(None, handle)))
            plugins.append((name, plugin))
            manager = SchedulerPluginManager()
            for plugin_name, instance in plugins:
                manager.register(instance, name=plugin_name)
            order: dict[ExtensionPoint, list[tuple[str, int]]] = {
                point: [(n, 1) for n, p in plugins if hook in manager.hooks_of(p)]
                for point, hook in POINT_HOOKS.items()
            }
            framework = self._frameworks[id(plugin)] = Framework(
                self._handle.profile_name, manager, order
            )
        self._handle.set_framework(framework)
        return framework

    def permit(
        self,
        plugin: object,
        pod: Obj | Pod,
        node_name: str,
        *,
        state: CycleState | None = None,
    ) -> Status:
        """Run Permit as the scheduler does: on ``Status.wait`` the pod waits at Permit.

        Other plugins (and this one) then see it through ``handle.get_waiting_pod``
        and ``iterate_waiting_pods``; :meth:`permit_outcome` awaits its end. Must
        run inside an event loop (the wait has a timer), as it does in the scheduler.
        """
        info = self._pod_info(pod)
        status = self.call(plugin, "permit", info, state=state, node_name=node_name)
        if status is None:
            return Status.success()
        if not isinstance(status, Status):
            raise TypeError(f"permit must return a Status or None, got {type(status).__name__}")
        if status.is_wait():
            timeout = status.timeout if status.timeout is not None else 0.0
            name = str(getattr(plugin, "name", "") or type(plugin).__name__)
            self._handle.waiting_pods.add(WaitingPodEntry(info, node_name, {name: timeout}))
        return status

    async def permit_outcome(self, uid: str) -> Status:
        """How the wait of the pod with ``uid`` ended: allowed, rejected or timed out."""
        entry = self._handle.waiting_pods.get(uid)
        if entry is None:
            raise LookupError(f"no pod with uid {uid!r} is waiting at Permit")
        return await entry.wait()

    def feasible_names(self, result: FilterResult) -> list[str]:
        """The node names a Filter result over :meth:`nodes` lets through."""
        names = self.nodes().names
        return [names[i] for i in result.feasible.nonzero()[0].tolist()]
