"""Which node updates become which cluster events (what requeues rejected pods)."""

from __future__ import annotations

from typing import Any

from scheduler.api import ActionType, Resource
from scheduler.engine.clusterevents import node_update_event


def node(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": {"a": "1"}}, "spec": {}, "status": status}


def test_heartbeat_only_changes_are_no_event() -> None:
    assert node_update_event(node(), node()) is None


def test_declared_features_change_is_its_own_update() -> None:
    event = node_update_event(
        node(), node(declaredFeatures=["RestartAllContainersOnContainerExits"])
    )
    assert event is not None and event.resource == Resource.NODE
    assert event.action == ActionType.UPDATE_NODE_DECLARED_FEATURE
    assert event.action & ActionType.UPDATE  # plugins registering Node/Update get it


def test_label_and_allocatable_changes_combine() -> None:
    old = node(allocatable={"cpu": "1"})
    new = node(allocatable={"cpu": "2"})
    new["metadata"]["labels"] = {"a": "2"}
    event = node_update_event(old, new)
    assert event is not None
    assert event.action == ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
