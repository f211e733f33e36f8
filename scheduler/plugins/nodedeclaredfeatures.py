"""NodeDeclaredFeatures: a pod goes only to nodes that declare the features it needs.

kube-scheduler 1.36 (feature gate ``NodeDeclaredFeatures``, beta and on by
default) has the kubelet publish, in ``node.status.declaredFeatures``, which
newer node-side features it runs with. The scheduler infers from the pod's
spec which of those features the pod needs (the registry of
``k8s.io/component-helpers/nodedeclaredfeatures``) and keeps the pod off nodes
that do not declare them all: during a version-skewed upgrade, a pod using a
1.36 kubelet feature must not land on an older kubelet that would silently
ignore it.

The registry is kube 1.36.3's ``features.AllFeatures``. Only two of its five
features can be required *for scheduling*; the other three are inferred for
pod updates (in-place resize), which is the API server's business, not ours:

- ``RestartAllContainersOnContainerExits``: a container or init container has
  a ``restartPolicyRules`` entry whose action is ``RestartAllContainers``.
- ``UserNamespacesHostNetworkSupport``: ``hostNetwork: true`` together with
  ``hostUsers: false``.

None of them has a ``MaxVersion`` in 1.36, so the scheduler's own version
never drops a requirement. A node's list is mapped the way kube's
``FeatureMapper.TryMap`` does (a merge of the node's list, which the kubelet
writes sorted, against the sorted registry; unknown names are ignored), and
the nodes' sets are kept in a :class:`RowKeyIndex`, so Filter is one mask per
required feature.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    Plugin,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.api.handle import Handle
from scheduler.plugins._helpers import RowKeyIndex, object_uid
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

NAME = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"

RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK_SUPPORT = "UserNamespacesHostNetworkSupport"


def _requires_restart_all_containers(spec: Mapping[str, Any]) -> bool:
    """kube's restartallcontainers feature: any (init) container rule restarts them all.

    Ephemeral containers are not looked at, as in kube (they cannot have rules).
    """
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            if not isinstance(container, Mapping):
                continue
            for rule in container.get("restartPolicyRules") or ():
                if isinstance(rule, Mapping) and rule.get("action") == "RestartAllContainers":
                    return True
    return False


def _requires_userns_host_network(spec: Mapping[str, Any]) -> bool:
    """kube's usernamespaceshostnetwork feature: host network inside a user namespace."""
    return spec.get("hostNetwork") is True and spec.get("hostUsers") is False


def _never_for_scheduling(spec: Mapping[str, Any]) -> bool:
    """Features that only pod *updates* (in-place resize) or the kubelet's API need."""
    return False


FEATURE_REGISTRY: tuple[tuple[str, Callable[[Mapping[str, Any]], bool]], ...] = tuple(
    sorted(
        (
            (RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS, _requires_restart_all_containers),
            ("InPlacePodLevelResourcesVerticalScaling", _never_for_scheduling),
            ("ExtendWebSocketsToKubelet", _never_for_scheduling),
            ("InPlacePodVerticalScalingInitContainers", _never_for_scheduling),
            (USER_NAMESPACES_HOST_NETWORK_SUPPORT, _requires_userns_host_network),
        )
    )
)
"""kube 1.36.3's ``features.AllFeatures``: name and scheduling inference, sorted by name
(kube's framework sorts it; the order is what TryMap's merge walks)."""

REGISTERED_FEATURES: tuple[str, ...] = tuple(name for name, _ in FEATURE_REGISTRY)


def required_features(spec: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The registered features a pod with this spec needs to be scheduled, sorted."""
    if not isinstance(spec, Mapping):
        return ()
    return tuple(name for name, infer in FEATURE_REGISTRY if infer(spec))


def node_feature_set(declared: Any) -> frozenset[str]:
    """kube's ``TryMap``: the registered features found in a node's declared list.

    It merges the list with the sorted registry in one pass, so a name that
    appears after a greater one is missed, exactly as in kube (the kubelet
    writes the list sorted, so in practice nothing is missed).
    """
    if not isinstance(declared, Sequence) or isinstance(declared, str):
        return frozenset()
    found: set[str] = set()
    i = j = 0
    while i < len(declared) and j < len(REGISTERED_FEATURES):
        name = declared[i]
        if not isinstance(name, str):
            i += 1  # not a feature name: unknown, ignored like one
        elif name == REGISTERED_FEATURES[j]:
            found.add(name)
            i += 1
            j += 1
        elif name < REGISTERED_FEATURES[j]:
            i += 1
        else:
            j += 1
    return frozenset(found)


def _declared(node: Any) -> Any:
    if not isinstance(node, Mapping):
        return None
    return (node.get("status") or {}).get("declaredFeatures")


def _spec_of(pod: Any) -> Mapping[str, Any] | None:
    if isinstance(pod, PodInfo):
        pod = pod.raw
    if isinstance(pod, Mapping):
        spec = pod.get("spec")
        return spec if isinstance(spec, Mapping) else None
    return None


def pod_required_features(pod: PodInfo) -> tuple[str, ...]:
    """``required_features`` of the pod, memoized on it (the spec never changes)."""
    cached = pod.cache.get(NAME)
    if not isinstance(cached, tuple):
        cached = required_features(_spec_of(pod))
        pod.cache[NAME] = cached
    return cached


def _node_feature_keys(table: NodeTable, row: int) -> Mapping[Hashable, int]:
    node = table.nodes[row]
    if node is None:
        return {}
    return dict.fromkeys(node_feature_set(_declared(node.raw)), 1)


def _node_declared_features_changed(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """kube's isSchedulableAfterNodeChange: a new node, or one whose list changed."""
    # Go's slices.Equal: a missing list equals an empty one.
    if old is not None and list(_declared(old) or ()) == list(_declared(new) or ()):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def _own_requirements_changed(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """kube's isSchedulableAfterPodUpdate: only the pod's own update, if its needs changed."""
    if object_uid(new) != pod.uid:
        return QueueingHint.SKIP
    if required_features(_spec_of(old)) == required_features(_spec_of(new)):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


class NodeDeclaredFeatures(Plugin):
    """kube-scheduler 1.36's NodeDeclaredFeatures (PreFilter, Filter, EnqueueExtensions)."""

    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # a node's verdict depends on its own object only
    pods_via_requested: ClassVar[bool] = True  # Filter never looks at pods on nodes

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self._index = RowKeyIndex(_node_feature_keys)

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        required = pod_required_features(pod)
        if not required:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, required)
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        required = state.get(PRE_FILTER_STATE_KEY)
        if required is None:
            required = pod_required_features(pod)
        result = FilterResult(len(nodes))
        if not required or len(nodes) == 0:
            return result
        self._index.refresh(nodes.table)
        has_all = np.ones(len(nodes), dtype=np.bool_)
        for feature in required:
            mask = self._index.mask(feature)
            if mask is None:
                has_all[:] = False
                break
            has_all &= mask[nodes.rows]
        return result.reject_unresolvable(~has_all, ERR_REASON_UNSATISFIED_REQUIREMENTS)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # kube registers Node Add|UpdateNodeDeclaredFeature; our event vocabulary has
        # no declared-features action, so every node update is offered to the hint,
        # which queues only when status.declaredFeatures changed (kube's own check).
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE),
                _node_declared_features_changed,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE),
                _own_requirements_changed,
            ),
        ]
