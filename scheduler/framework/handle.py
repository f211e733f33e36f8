"""The framework's implementation of the plugin handle.

Capabilities that depend on where the framework runs (the daemon, ``explain``,
the test kit) are injected as small callables; where one is absent the handle
raises a clear error naming what is unavailable, rather than pretending.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, cast

import structlog

from scheduler.api.handle import ApiClient, FrameworkRunner, ObjectStore, WaitingPod
from scheduler.api.preemption import Preemption, PreemptionPolicy
from scheduler.api.views import Pod
from scheduler.framework.waiting import WaitingPods
from scheduler.model.featuregates import FeatureGates
from scheduler.model.kubegates import KUBE_FEATURE_GATES
from scheduler.model.selectors import has_labels
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.views import NodesView

EventSink = Callable[[PodInfo, str, str, str, str], None]
StoreProvider = Callable[[str, str, str], ObjectStore]
Activator = Callable[[list[PodInfo]], None]


class Nominator(Protocol):
    """Who holds a nomination where: the scheduling queue, with the framework's pods."""

    def nominated_pods(self) -> Mapping[str, list[PodInfo]]: ...


class PreemptionMetrics(Protocol):
    """Where the handle's preemption counts go (the daemon's Prometheus metrics)."""

    def preemption_attempt(self, victims: int | None = None) -> None: ...

    def observe_preemption_victims(self, victims: int) -> None: ...


class PreemptionExecutor(Protocol):
    """What the handle asks of the executors its plugins' preemptions run on."""

    @property
    def busy(self) -> bool: ...


class HandleUnavailable(RuntimeError):
    """A plugin used a capability this way of running the scheduler does not offer."""


class StaticStore:
    """An ObjectStore over a fixed list of objects (``explain``, tests)."""

    def __init__(self, objects: list[Mapping[str, Any]] | None = None) -> None:
        self._by_key: dict[tuple[str, str], Mapping[str, Any]] = {}
        for obj in objects or ():
            meta = obj.get("metadata") or {}
            self._by_key[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = obj

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._by_key.get((namespace, name))

    def revision(self) -> int:
        return 0  # never changes

    def changed_since(self, revision: int) -> set[tuple[str, str]] | None:
        return set() if revision == 0 else None

    def list(
        self, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> list[Mapping[str, Any]]:
        return [
            o
            for (ns, _), o in self._by_key.items()
            if (namespace is None or ns == namespace) and (not labels or has_labels(o, labels))
        ]


class StaticStores:
    """Stores built from a list of API objects, grouped by resource.

    Where the framework runs without informers, plugins still get the
    objects it was given (e.g. the namespaces of a cluster file), and empty
    stores for everything else.
    """

    def __init__(self, objects: list[Mapping[str, Any]] | None = None) -> None:
        self._objects: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for obj in objects or ():
            api_version = str(obj.get("apiVersion") or "v1")
            group = api_version.rpartition("/")[0]
            self._objects.setdefault((group, str(obj.get("kind") or "")), []).append(obj)
        self._stores: dict[tuple[str, str, str], StaticStore] = {}

    def __call__(self, group: str, version: str, plural: str) -> ObjectStore:
        key = (group, version, plural)
        store = self._stores.get(key)
        if store is None:
            objects = [
                o
                for (g, kind), objs in self._objects.items()
                if g == group and _plural(g, kind) == plural
                for o in objs
            ]
            store = self._stores[key] = StaticStore(objects)
        return store


# Resources whose name is not the lower-cased plural of their kind.
_IRREGULAR_PLURALS = {
    ("metrics.k8s.io", "NodeMetrics"): "nodes",
    ("metrics.k8s.io", "PodMetrics"): "pods",
    ("", "Endpoints"): "endpoints",
}


def _plural(group: str, kind: str) -> str:
    """The resource name of a kind, as the API names it (Policy -> policies)."""
    irregular = _IRREGULAR_PLURALS.get((group, kind))
    if irregular is not None:
        return irregular
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    if lower.endswith("s"):
        return lower + "es"
    return lower + "s"


class FrameworkHandle:
    def __init__(
        self,
        profile_name: str,
        table: NodeTable,
        *,
        waiting_pods: WaitingPods | None = None,
        client: ApiClient | None = None,
        event_sink: EventSink | None = None,
        store_provider: StoreProvider | None = None,
        activator: Activator | None = None,
        plugin_name: str = "",
        legacy_table: bool = True,
        leader: Callable[[], bool] | None = None,
    ) -> None:
        self._profile_name = profile_name
        self._table = table
        self._plugin_name = plugin_name
        # API 1.x plugins may reach the live table; 2.x ones get views only.
        self._legacy_table = legacy_table
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
        self._client = client
        self._event_sink = event_sink
        self._store_provider: StoreProvider = store_provider or StaticStores()
        self._activator = activator
        self._leader = leader
        self._logger = structlog.get_logger("scheduler.plugin").bind(
            profile=profile_name, plugin=plugin_name
        )
        self._framework: list[FrameworkRunner] = []  # shared by the per-plugin copies
        self._nominator: list[Nominator] = []  # likewise
        self._metrics: list[PreemptionMetrics] = []  # likewise
        self._gates: list[FeatureGates] = []  # likewise; empty: kube's defaults
        self._executors: list[PreemptionExecutor] = []  # likewise

    def for_plugin(self, plugin_name: str, *, legacy_table: bool = True) -> FrameworkHandle:
        """A copy whose logger is bound to ``plugin_name``.

        ``legacy_table``: whether ``table`` gives the live NodeTable (API 1.x
        plugins, and the framework's own code) or refuses (API 2.x plugins).
        """
        copy = FrameworkHandle(
            self._profile_name,
            self._table,
            waiting_pods=self.waiting_pods,
            client=self._client,
            event_sink=self._event_sink,
            store_provider=self._store_provider,
            activator=self._activator,
            plugin_name=plugin_name,
            legacy_table=legacy_table,
            leader=self._leader,
        )
        copy._framework = self._framework
        copy._nominator = self._nominator
        copy._metrics = self._metrics
        copy._gates = self._gates
        copy._executors = self._executors
        return copy

    def set_framework(self, framework: FrameworkRunner) -> None:
        self._framework[:] = [framework]

    def set_feature_gates(self, gates: FeatureGates) -> None:
        """The effective gates plugins read (set before they are constructed)."""
        self._gates[:] = [gates]

    @property
    def feature_gates(self) -> Mapping[str, bool]:
        if not self._gates:
            self._gates.append(FeatureGates(KUBE_FEATURE_GATES, {}))
        return self._gates[0]

    def set_nominator(self, nominator: Nominator | None) -> None:
        """Where :meth:`nominated_pods` reads from (the daemon's scheduling queue)."""
        self._nominator[:] = [nominator] if nominator is not None else []

    def set_metrics(self, metrics: PreemptionMetrics | None) -> None:
        """Where the preemption counts go (none where nothing is exported, e.g. ``explain``)."""
        self._metrics[:] = [metrics] if metrics is not None else []

    def register_executor(self, executor: PreemptionExecutor) -> None:
        """An executor of this profile's preemptions (see :attr:`preempting`)."""
        self._executors.append(executor)

    @property
    def preempting(self) -> bool:
        """Whether a preemption of this profile is still evicting or awaiting its victims."""
        return any(e.busy for e in self._executors)

    def record_preemption_attempt(self) -> None:
        if self._metrics:
            self._metrics[0].preemption_attempt()

    def record_preemption_victims(self, victims: int) -> None:
        if self._metrics:
            self._metrics[0].observe_preemption_victims(victims)

    def preemption(self, policy: PreemptionPolicy) -> Preemption:
        """An evaluator for ``policy``; it reads the live table, which API 2.x plugins
        themselves may not."""
        # Imported here: the evaluator drives the framework, which imports this module.
        from scheduler.framework.preemption.evaluator import Evaluator, PluginPreemption

        internal = self.for_plugin(self._plugin_name, legacy_table=True)
        name = self._plugin_name or type(policy).__name__
        return PluginPreemption(Evaluator(name, internal, cast(Any, policy)))

    def nominated_pods(self) -> Mapping[str, list[PodInfo]]:
        if not self._nominator:
            return {}
        return self._nominator[0].nominated_pods()

    @property
    def framework(self) -> FrameworkRunner:
        if not self._framework:
            raise HandleUnavailable("the framework is not built yet (called from a constructor?)")
        return self._framework[0]

    @property
    def profile_name(self) -> str:
        return self._profile_name

    @property
    def table(self) -> NodeTable:
        if not self._legacy_table:
            raise HandleUnavailable(
                f"plugin {self._plugin_name or '?'} declares plugin API 2.x: handle.table is "
                "API 1.x's live node table; use handle.nodes() or the nodes its hooks are given"
            )
        return self._table

    def nodes(self) -> NodesView:
        """Every node, read-only (API 2.0)."""
        return self._table.all_nodes().view()

    @property
    def client(self) -> ApiClient:
        if self._client is None:
            raise HandleUnavailable("no API client here (e.g. in `explain`): cannot call the API")
        return self._client

    @property
    def logger(self) -> Any:
        return self._logger

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(self.waiting_pods)

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        return self.waiting_pods.reject(uid, plugin, message)

    def record_event(
        self, pod: Pod, event_type: str, reason: str, message: str, action: str = ""
    ) -> None:
        if self._event_sink is not None:
            # Plugins are handed the framework's pods: the view is the PodInfo itself.
            self._event_sink(cast(PodInfo, pod), event_type, reason, message, action)

    def store(self, group: str, version: str, plural: str) -> ObjectStore:
        return self._store_provider(group, version, plural)

    def is_leader(self) -> bool:
        return self._leader() if self._leader is not None else True

    def activate_pods(self, pods: Sequence[Pod]) -> None:
        if self._activator is not None:
            self._activator([cast(PodInfo, pod) for pod in pods])
