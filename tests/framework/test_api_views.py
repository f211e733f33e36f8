"""Plugin API 2.0: hooks get read-only views; the 1.x names still import, with a warning."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, ClassVar

import numpy as np
import pytest

import scheduler.api as api
from scheduler.api import CPU, PODS, CycleState, FilterResult, Nodes, Plugin, Pod, hookimpl
from scheduler.api.version import LEGACY_MAJORS, PLUGIN_API_VERSION, is_compatible
from scheduler.framework.handle import HandleUnavailable
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.views import NodesView, TableArrays
from scheduler.testing import PluginTestKit, make_node, make_pod
from tests.framework.helpers import make_framework


def cluster() -> NodeTable:
    table = NodeTable()
    table.upsert_node(make_node("a", cpu="2", labels={"kubernetes.io/os": "linux"}))
    table.upsert_node(make_node("b", cpu="4", labels={"kubernetes.io/os": "windows"}))
    table.upsert_node(
        make_node(
            "c",
            cpu="8",
            labels={"kubernetes.io/os": "linux"},
            taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
        )
    )
    table.add_pod(PodInfo.from_dict(make_pod("p", cpu="1", node_name="b")))
    return table


def test_readme_example_is_one_object_deep() -> None:
    nodes = cluster().all_nodes().view()
    linux = nodes.label_values("kubernetes.io/os") == nodes.label_id("kubernetes.io/os", "linux")
    assert linux.tolist() == [True, False, True]
    assert nodes.label_id("kubernetes.io/os", "plan9") == api.LABEL_UNKNOWN
    assert nodes.label_values("missing").tolist() == [api.LABEL_ABSENT] * 3


def test_arrays_are_read_only_and_aligned_with_the_candidates() -> None:
    table = cluster()
    everyone = table.all_nodes().view()
    assert everyone.allocatable[:, CPU].tolist() == [2000, 4000, 8000]
    assert everyone.requested[:, PODS].tolist() == [0, 1, 0]
    assert everyone.taint_matrix.tolist() == [[False], [False], [True]]
    assert [t.key for t in everyone.taints] == ["k"]
    for array in (
        everyone.allocatable,
        everyone.requested,
        everyone.non_zero_requested,
        everyone.unschedulable,
        everyone.taint_matrix,
        everyone.label_values("kubernetes.io/os"),
    ):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
    some = everyone.subset(np.asarray([False, True, True]))
    assert list(some.names) == ["b", "c"]
    assert some.allocatable[:, CPU].tolist() == [4000, 8000]
    assert some.index_of("c") == 1 and some.index_of("a") is None
    with pytest.raises(ValueError, match="read-only"):
        some.requested[0, CPU] = 0
    assert table.requested[table.row_of("b"), CPU] == 1000  # the table is untouched


def test_full_cluster_arrays_are_views_made_once_per_layout() -> None:
    table = cluster()
    nodes = table.all_nodes().view()
    assert np.shares_memory(nodes.allocatable, table.allocatable)  # a slice, not a copy
    assert nodes.allocatable is nodes.allocatable  # built once per candidate set
    arrays = TableArrays.of(table)
    assert TableArrays.of(table) is arrays  # pods and heartbeats do not rebuild them
    table.add_pod(PodInfo.from_dict(make_pod("q", cpu="1", node_name="a")))
    assert TableArrays.of(table) is arrays
    assert table.all_nodes().view().requested[0, CPU] == 1000  # live values, no copy
    table.upsert_node(make_node("d", extra_allocatable={"example.com/gpu": "2"}))
    assert TableArrays.of(table) is not arrays  # a new column replaced the arrays
    grown = table.all_nodes().view()
    gpu = grown.resource_column("example.com/gpu")
    assert gpu is not None and grown.allocatable[:, gpu].tolist() == [0, 0, 0, 2]


def test_nodes_view_hides_the_table() -> None:
    nodes = cluster().all_nodes().view()
    assert not hasattr(nodes, "table") and not hasattr(nodes, "rows")
    node = nodes.node(1)
    assert node.name == "b" and [p.name for p in node.pods] == ["p"]
    assert not hasattr(node, "table")


def test_views_hand_out_nothing_the_table_keeps_writable() -> None:
    table = cluster()
    nodes = table.all_nodes().view()
    with pytest.raises(TypeError):
        nodes.names[0] = "x"  # type: ignore[index]
    node = nodes.node(0)
    with pytest.raises(TypeError):
        node.labels["kubernetes.io/os"] = "windows"  # type: ignore[index]
    with pytest.raises(TypeError):
        node.raw["spec"] = {}  # type: ignore[index]
    assert table.all_nodes().names[0] == "a"
    assert (
        table.labels.value_of("kubernetes.io/os", int(nodes.label_values("kubernetes.io/os")[0]))
        == "linux"
    )


class _Recorder(Plugin):
    seen: ClassVar[list[type]] = []

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        self.seen.append(type(nodes))
        return FilterResult(len(nodes))

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> None:
        return None  # enables the PreFilter point, where the AddPod extension hangs

    @hookimpl
    def pre_filter_add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node: Any) -> None:
        self.seen.append(type(node))


class V1(_Recorder):
    api_version = "1.3"


class V2(_Recorder):
    api_version = "2.0"


@pytest.mark.parametrize(
    ("plugin_class", "nodes_type", "node_type"),
    [(V1, "NodeSet", "NodeInfo"), (V2, "NodesView", "NodeView")],
)
def test_the_framework_hands_each_version_what_it_promises(
    plugin_class: type[_Recorder], nodes_type: str, node_type: str
) -> None:
    table = cluster()
    plugin_class.seen = []
    framework = make_framework([("P", plugin_class(None, None))])  # type: ignore[arg-type]
    pod = PodInfo.from_dict(make_pod("x"))
    framework.run_filter(CycleState(), pod, table.all_nodes())
    framework.run_pre_filter_add_pod(CycleState(), pod, pod, table.node_info(0))
    assert [t.__name__ for t in plugin_class.seen] == [nodes_type, node_type]


def test_version_rule_serves_1x_through_the_compatibility_layer() -> None:
    assert PLUGIN_API_VERSION == "2.3"
    assert is_compatible("2.0") and is_compatible("2.3") and not is_compatible("2.4")
    assert all(is_compatible(f"1.{minor}") for minor in range(LEGACY_MAJORS[1] + 1))
    assert not is_compatible("1.4")  # 1.x ended at 1.3
    assert not is_compatible("0.9") and not is_compatible("3.0")


@pytest.mark.parametrize(
    ("name", "replacement"),
    [
        ("NodeTable", "Nodes"),
        ("NodeSet", "scheduler.api.Nodes"),
        ("NodeInfo", "scheduler.api.Node"),
        ("PodInfo", "scheduler.api.Pod"),
        ("QueuedPodInfo", "scheduler.api.QueuedPod"),
        ("HOOK_NAMES", "hookspecs"),
        ("InvalidPodError", "pod_requests"),
    ],
)
def test_internal_names_still_import_with_a_deprecation_warning(
    name: str, replacement: str
) -> None:
    assert name not in api.__all__
    with pytest.warns(DeprecationWarning, match=replacement) as caught:
        value = getattr(importlib.import_module("scheduler.api"), name)
    assert f"scheduler.api.{name}" in str(caught[0].message)
    assert value is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from scheduler.api import Nodes as _  # a 2.0 name: no warning  # noqa: F401


def test_unknown_names_are_still_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = api.Nope  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        from scheduler.api import Nope  # type: ignore[attr-defined]  # noqa: F401


def test_public_api_exports_what_authors_need_and_no_internals() -> None:
    exported = set(api.__all__)
    assert {"CPU", "MEMORY", "EPHEMERAL_STORAGE", "PODS", "PluginArgs", "Nodes", "Pod"} <= exported
    assert not exported & {"HOOK_NAMES", "QueuedPodInfo", "NodeTable", "NodeSet", "PodInfo"}
    assert len(exported) <= 47  # 2.1: NodeAdjustment; 2.2: FeatureSpec


def test_the_kit_calls_hooks_like_the_framework() -> None:
    kit = PluginTestKit(nodes=[make_node("a"), make_node("b", labels={"ssd": "1"})])
    v2, v1 = kit.build(V2), kit.build(V1)
    V2.seen, V1.seen = [], []
    assert kit.feasible_names(kit.call(v2, "filter", make_pod("w"))) == ["a", "b"]
    kit.call(v1, "filter", make_pod("w"))
    assert V2.seen == [NodesView] and V1.seen == [NodeSet]
    with pytest.raises(TypeError, match="needs pod_to_add"):
        kit.call(v2, "pre_filter_add_pod", make_pod("w"), node="a")


def test_a_2x_plugin_handle_has_no_live_table() -> None:
    kit = PluginTestKit(nodes=[make_node("a")])
    v2, v1 = kit.build(V2), kit.build(V1)
    assert v1.handle.table is not None  # 1.x: as before
    with pytest.raises(HandleUnavailable, match=r"plugin V2 declares plugin API 2.x"):
        _ = v2.handle.table
    assert list(v2.handle.nodes().names) == ["a"]
    with pytest.raises(ValueError, match="read-only"):
        v2.handle.nodes().allocatable[0, CPU] = 0
