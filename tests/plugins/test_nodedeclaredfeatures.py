"""NodeDeclaredFeatures, against kube 1.36.3's nodedeclaredfeatures_test.go.

kube's plugin tests use mock features (FeatureA, FeatureB ...); our registry
is kube's real one, so the same cases are written with the two features that
a pod can require for scheduling, and the inference cases come from
component-helpers' restart_all_containers_test.go and the
usernamespaceshostnetwork feature.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import ActionType, Code, QueueingHint, Resource, Status
from scheduler.plugins.nodedeclaredfeatures import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    PRE_FILTER_STATE_KEY,
    REGISTERED_FEATURES,
    RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS,
    USER_NAMESPACES_HOST_NETWORK_SUPPORT,
    NodeDeclaredFeatures,
    node_feature_set,
    required_features,
)
from tests.plugins.builders import FakeHandle, make_node, make_pod, make_table, new_state, pod_info

RESTART = RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS
USERNS = USER_NAMESPACES_HOST_NETWORK_SUPPORT


def restart_all_container(name: str = "container") -> dict[str, Any]:
    """component-helpers' containerWithRestartAllContainersAction."""
    return {
        "name": name,
        "image": "image",
        "restartPolicy": "Never",
        "restartPolicyRules": [
            {
                "action": "RestartAllContainers",
                "exitCodes": {"operator": "In", "values": [1]},
            }
        ],
    }


def plain_container(name: str = "c") -> dict[str, Any]:
    return {"name": name, "image": "image"}


def node_with(name: str, features: list[str] | None) -> dict[str, Any]:
    node = make_node(name)
    if features is not None:
        node["status"]["declaredFeatures"] = list(features)
    return node


def pod_needing(*features: str, uid: str = "123") -> dict[str, Any]:
    """A pod whose spec makes kube infer exactly ``features``."""
    containers = [restart_all_container()] if RESTART in features else [plain_container()]
    pod = make_pod(name="test-pod", uid=uid, containers=containers)
    if USERNS in features:
        pod["spec"]["hostNetwork"] = True
        pod["spec"]["hostUsers"] = False
    return pod


def test_registry_is_kube_136s_sorted() -> None:
    assert REGISTERED_FEATURES == (
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "RestartAllContainersOnContainerExits",
        "UserNamespacesHostNetworkSupport",
    )


# -- inference (component-helpers' feature tests) --------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # restart_all_containers_test.go TestInferForScheduling
        (
            {
                "initContainers": [restart_all_container()],
                "containers": [plain_container("container")],
            },
            (RESTART,),
        ),
        (
            {
                "initContainers": [plain_container("init")],
                "containers": [restart_all_container()],
            },
            (RESTART,),
        ),
        (
            {"initContainers": [plain_container("init")], "containers": [plain_container()]},
            (),
        ),
        ({}, ()),
        # a rule with kube's other action does not need the feature
        (
            {"containers": [{"name": "c", "restartPolicyRules": [{"action": "Restart"}]}]},
            (),
        ),
        # ephemeral containers are not looked at (kube reads Containers and InitContainers)
        ({"ephemeralContainers": [restart_all_container()]}, ()),
        # usernamespaceshostnetwork: HostNetwork && HostUsers != nil && !*HostUsers
        ({"hostNetwork": True, "hostUsers": False}, (USERNS,)),
        ({"hostNetwork": True}, ()),
        ({"hostNetwork": True, "hostUsers": True}, ()),
        ({"hostNetwork": False, "hostUsers": False}, ()),
        (
            {"hostNetwork": True, "hostUsers": False, "containers": [restart_all_container()]},
            (RESTART, USERNS),
        ),
        # resize-only features are never required for scheduling
        ({"resources": {"requests": {"cpu": "1"}}}, ()),
    ],
)
def test_required_features(spec: dict[str, Any], expected: tuple[str, ...]) -> None:
    assert required_features(spec) == expected


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (None, set()),
        ([], set()),
        ([RESTART, USERNS], {RESTART, USERNS}),
        # unknown names are ignored (TryMap), known ones around them still count
        (["AFeatureFromTheFuture", RESTART, "SomethingElse", USERNS], {RESTART, USERNS}),
        # TryMap merges assuming a sorted list: a smaller name after a greater is missed
        ([USERNS, RESTART], {USERNS}),
    ],
)
def test_node_feature_set_is_kubes_try_map(declared: Any, expected: set[str]) -> None:
    assert node_feature_set(declared) == expected


# -- PreFilter (TestPreFilter) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("features", "stored"),
    [
        ((RESTART,), (RESTART,)),  # Pod with feature requirements
        ((RESTART, USERNS), (RESTART, USERNS)),  # Pod with multiple feature requirements
        ((), None),  # Pod with no requirements: Skip, nothing written
    ],
)
def test_pre_filter(features: tuple[str, ...], stored: tuple[str, ...] | None) -> None:
    table = make_table([node_with("node-1", [])])
    plugin = NodeDeclaredFeatures(None, FakeHandle(table))
    state = new_state()
    status = plugin.pre_filter(state, pod_info(pod_needing(*features)), table.all_nodes())
    if stored is None:
        assert isinstance(status, Status) and status.is_skip()
    else:
        assert status is None
    assert state.get(PRE_FILTER_STATE_KEY) == stored


# -- Filter (TestFilter) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_features", "required", "fits"),
    [
        ([RESTART, USERNS], (RESTART,), True),  # Node matches requirements
        ([USERNS], (RESTART,), False),  # Node does not match requirements
        (
            ["ExtendWebSocketsToKubelet", RESTART, USERNS],
            (RESTART, USERNS),
            True,
        ),  # Node with multiple features, pod requires subset
        (None, (RESTART,), False),  # Node has no declared features
        ([RESTART], (RESTART, USERNS), False),  # Node with some but not all required features
    ],
)
def test_filter(node_features: list[str] | None, required: tuple[str, ...], fits: bool) -> None:
    table = make_table([node_with("node-1", node_features), node_with("all", REGISTERED_FEATURES)])
    plugin = NodeDeclaredFeatures(None, FakeHandle(table))
    state, info, nodes = new_state(), pod_info(pod_needing(*required)), table.all_nodes()
    assert plugin.pre_filter(state, info, nodes) is None
    result = plugin.filter(state, info, nodes)
    assert result.feasible.tolist() == [fits, True]
    if not fits:
        assert result.codes[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert result.reasons_at(0) == [ERR_REASON_UNSATISFIED_REQUIREMENTS]


def test_filter_follows_node_updates_and_removals() -> None:
    table = make_table([node_with("old", None), node_with("new", [RESTART])])
    plugin = NodeDeclaredFeatures(None, FakeHandle(table))
    state, info = new_state(), pod_info(pod_needing(RESTART))
    plugin.pre_filter(state, info, table.all_nodes())
    assert plugin.filter(state, info, table.all_nodes()).feasible.tolist() == [False, True]
    table.upsert_node(node_with("old", [RESTART]))  # the kubelet was upgraded
    table.upsert_node(node_with("new", []))  # and this one downgraded
    assert plugin.filter(state, info, table.all_nodes()).feasible.tolist() == [True, False]
    table.remove_node("old")
    table.upsert_node(node_with("third", None))  # reuses the removed row
    assert table.all_nodes().names == ["third", "new"]
    assert plugin.filter(state, info, table.all_nodes()).feasible.tolist() == [False, False]


def test_filter_without_any_node_declaring_the_feature() -> None:
    table = make_table([node_with("a", [USERNS]), node_with("b", None)])
    plugin = NodeDeclaredFeatures(None, FakeHandle(table))
    state, info = new_state(), pod_info(pod_needing(RESTART))
    plugin.pre_filter(state, info, table.all_nodes())
    assert plugin.filter(state, info, table.all_nodes()).feasible.tolist() == [False, False]


# -- queueing hints (TestEnqueueExtensionsNodeUpdate / PodUpdate) ----------------------


def test_events_registered() -> None:
    events = NodeDeclaredFeatures(None, FakeHandle()).events_to_register()
    node, pod = events
    assert node.event.resource == Resource.NODE
    assert node.event.action & ActionType.ADD and node.event.action & ActionType.UPDATE_OTHER
    assert pod.event.resource == Resource.UNSCHEDULED_POD
    assert pod.event.action == ActionType.UPDATE


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, ["FeatureA"], QueueingHint.QUEUE),  # Node Add with feature
        (None, None, QueueingHint.QUEUE),  # any added node, even one declaring nothing
        ([], ["FeatureA"], QueueingHint.QUEUE),  # Node Update (Features Added)
        (["FeatureA"], ["FeatureA"], QueueingHint.SKIP),  # Node Update (Features Unchanged)
        (["FeatureA"], [], QueueingHint.QUEUE),
    ],
    ids=["add", "add-plain", "added", "unchanged", "removed"],
)
def test_node_hint(old: list[str] | None, new: list[str] | None, hint: QueueingHint) -> None:
    node_event = NodeDeclaredFeatures(None, FakeHandle()).events_to_register()[0]
    assert node_event.hint is not None
    target = pod_info(pod_needing(RESTART))
    old_node = None if old is None else node_with("node-1", old)
    assert node_event.hint(target, old_node, node_with("node-1", new)) is hint


def test_node_hint_treats_missing_and_empty_lists_alike() -> None:
    """Go's slices.Equal(nil, []string{}) is true: no requeue for that."""
    node_event = NodeDeclaredFeatures(None, FakeHandle()).events_to_register()[0]
    assert node_event.hint is not None
    target = pod_info(pod_needing(RESTART))
    old, new = node_with("n", None), node_with("n", [])
    new["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert node_event.hint(target, old, new) is QueueingHint.SKIP


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (pod_needing(), pod_needing(RESTART), QueueingHint.QUEUE),  # adds requirement
        (pod_needing(RESTART), pod_needing(), QueueingHint.QUEUE),  # removes requirement
        (pod_needing(USERNS), pod_needing(USERNS), QueueingHint.SKIP),  # no change
        # Updated pod not the same as target pod
        (pod_needing(uid="456"), pod_needing(RESTART, uid="456"), QueueingHint.SKIP),
    ],
    ids=["adds", "removes", "unchanged", "other-pod"],
)
def test_pod_hint(old: dict[str, Any], new: dict[str, Any], hint: QueueingHint) -> None:
    pod_event = NodeDeclaredFeatures(None, FakeHandle()).events_to_register()[1]
    assert pod_event.hint is not None
    target = pod_info(pod_needing(uid="123"))
    assert pod_event.hint(target, old, new) is hint
