"""``node_local`` and ``pods_via_requested`` are checked in promise-checking mode.

Plugins that lie about them are caught, named, when
``SCHEDULER_CHECK_PROMISES=1``; honest plugins pass; with the mode off
nothing is recomputed (the lie goes unnoticed, which is why the mode exists).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pytest

from scheduler.api import PODS, CycleState, FilterResult, Nodes, Plugin, Pod, hookimpl
from scheduler.framework import promises
from scheduler.framework.batching import BatchCache, pod_signature
from scheduler.framework.promises import BrokenPromiseError
from scheduler.framework.runtime import Framework
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo
from scheduler.testing import make_node, make_pod
from tests.framework.helpers import make_framework


@pytest.fixture
def checking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(promises, "CHECK_PROMISES", True)


def cluster() -> NodeTable:
    table = NodeTable()
    for name in ("a", "b", "c"):
        table.upsert_node(make_node(name, pods="2"))
    table.add_pod(PodInfo.from_dict(make_pod("running", node_name="b")))
    return table


def pod(name: str = "web") -> PodInfo:
    return PodInfo.from_dict(make_pod(name))


class EmptyNodesOnly(Plugin):
    """Lies: claims pods_via_requested but looks at each node's pod list."""

    api_version = "2.0"
    pods_via_requested: ClassVar[bool] = True

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        empty = np.fromiter((not node.pods for node in nodes), dtype=np.bool_, count=len(nodes))
        return FilterResult.from_mask(empty, "node has pods")


class EmptyNodesHonest(Plugin):
    """Keeps the promise: the same verdict, read from ``requested``."""

    api_version = "2.0"
    pods_via_requested: ClassVar[bool] = True

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        return FilterResult.from_mask(nodes.requested[:, PODS] == 0, "node has pods")


class LegacyLiar(Plugin):
    """A 1.x plugin breaking the promise through the live table."""

    api_version = "1.3"
    pods_via_requested: ClassVar[bool] = True

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        empty = np.asarray([not nodes.table.pods[r] for r in nodes.rows.tolist()], dtype=np.bool_)
        return FilterResult.from_mask(empty, "node has pods")


def feasible_names(plugin: Plugin, name: str) -> list[str]:
    framework = make_framework([(name, plugin)])
    outcome = framework.run_filter(CycleState(), pod(), cluster().all_nodes())
    assert outcome.status.is_success()
    return outcome.feasible.names


@pytest.mark.parametrize(("plugin_class", "name"), [(EmptyNodesOnly, "Liar"), (LegacyLiar, "Old")])
def test_pods_via_requested_lie_is_caught_with_the_plugin_name(
    checking: None, plugin_class: type[Plugin], name: str
) -> None:
    with pytest.raises(
        BrokenPromiseError, match=rf"plugin {name} breaks its pods_via_requested"
    ) as err:
        feasible_names(plugin_class(None, None), name)  # type: ignore[arg-type]
    assert "on node(s) b" in str(err.value)
    assert err.value.plugin == name


def test_pods_via_requested_kept_passes(checking: None) -> None:
    honest = EmptyNodesHonest(None, None)  # type: ignore[arg-type]
    assert feasible_names(honest, "Honest") == ["a", "c"]


def test_without_the_mode_the_lie_goes_unnoticed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(promises, "CHECK_PROMISES", False)
    liar = EmptyNodesOnly(None, None)  # type: ignore[arg-type]
    assert feasible_names(liar, "Liar") == ["a", "c"]


def test_the_mode_is_read_from_the_environment() -> None:
    code = "from scheduler.framework import promises; print(promises.CHECK_PROMISES)"
    for value, expected in (("1", "True"), ("", "False")):
        env = {**os.environ, promises.ENV_VAR: value}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == expected


# -- node_local ---------------------------------------------------------------


class CrowdAverse(Plugin):
    """Lies: claims node_local, but rejects every node once the cluster holds 2 pods."""

    api_version = "2.0"
    node_local: ClassVar[bool] = True

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        crowded = sum(len(node.pods) for node in nodes) >= 2
        return FilterResult.from_mask(np.full(len(nodes), not crowded), "cluster too crowded")


class Drifting(Plugin):
    """Lies: claims node_local, but its score moves with every call (like a clock)."""

    api_version = "2.0"
    node_local: ClassVar[bool] = True
    calls = 0

    @hookimpl
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> npt.NDArray[np.int64]:
        self.calls += 1
        return np.full(len(nodes), self.calls, dtype=np.int64)


class FreeSlots(Plugin):
    """Honest node_local: free pod slots per node."""

    api_version = "2.0"
    node_local: ClassVar[bool] = True

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        free = nodes.allocatable[:, PODS] - nodes.requested[:, PODS]
        return FilterResult.from_mask(free > 0, "no free slot")

    @hookimpl
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> npt.NDArray[np.int64]:
        free: npt.NDArray[np.int64] = nodes.allocatable[:, PODS] - nodes.requested[:, PODS]
        return free


def cached_cycle(framework: Framework, table: NodeTable, first: PodInfo, second: PodInfo) -> None:
    """Two identical pods through the batch cache, ``first`` placed on ``a`` in between."""
    cache = BatchCache(framework)
    signature = pod_signature(first)
    assert signature is not None and signature == pod_signature(second)
    state = CycleState()
    outcome = framework.run_filter(state, first, table.all_nodes())
    cache.store_filter(signature, state, table, outcome.feasible)
    cache.raw_scores(signature, state, first, outcome.feasible)
    table.add_pod(first, "a")  # only row a changes: the cache recomputes a alone
    state = CycleState()
    feasible = cache.feasible(signature, state, second, table)
    assert isinstance(feasible, NodeSet)
    cache.raw_scores(signature, state, second, feasible)
    assert cache.hits == 1


def test_node_local_filter_lie_is_caught(checking: None) -> None:
    framework = make_framework([("Crowd", CrowdAverse(None, None))])  # type: ignore[arg-type]
    with pytest.raises(BrokenPromiseError, match="plugin Crowd breaks its node_local") as err:
        cached_cycle(framework, cluster(), pod("w-1"), pod("w-2"))
    assert "passed from the cache but are rejected now" in str(err.value)


def test_node_local_score_lie_is_caught(checking: None) -> None:
    framework = make_framework([("Drift", Drifting(None, None))])  # type: ignore[arg-type]
    with pytest.raises(BrokenPromiseError, match="plugin Drift breaks its node_local") as err:
        cached_cycle(framework, cluster(), pod("w-1"), pod("w-2"))
    assert "cached raw Score differs" in str(err.value)


def test_node_local_kept_passes(checking: None) -> None:
    framework = make_framework([("Free", FreeSlots(None, None))])  # type: ignore[arg-type]
    cached_cycle(framework, cluster(), pod("w-1"), pod("w-2"))
