"""PrioritySort, SchedulingGates, NodeName, NodeUnschedulable, NodePorts and DefaultBinder.

Cases come from kube's queue_sort_test.go, scheduling_gates_test.go,
node_name_test.go, node_unschedulable_test.go, node_ports_test.go and
default_binder_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import BindOutcome, BindResult, Code, QueueingHint, Resource, Status
from scheduler.plugins.defaultbinder import DefaultBinder
from scheduler.plugins.nodename import ERR_REASON as NODE_NAME_REASON
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import ERR_REASON as PORTS_REASON
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from scheduler.plugins.queuesort import PrioritySort
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.state.pod import QueuedPodInfo
from tests.plugins.builders import FakeHandle, make_node, make_pod, make_table, new_state, pod_info

# -- PrioritySort ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p1", "t1", "p2", "t2", "first_wins"),
    [
        (100, 1.0, 50, 2.0, True),  # p1.priority greater than p2.priority
        (50, 1.0, 100, 2.0, False),  # p1.priority less than p2.priority
        (100, 1.0, 100, 2.0, True),  # equal priority, p1 added to the queue earlier
        (100, 2.0, 100, 1.0, False),  # equal priority, p2 added earlier
    ],
)
def test_priority_sort(p1: int, t1: float, p2: int, t2: float, first_wins: bool) -> None:
    plugin = PrioritySort(None, FakeHandle())
    a = QueuedPodInfo(pod_info(priority=p1), timestamp=t1)
    b = QueuedPodInfo(pod_info(priority=p2), timestamp=t2)
    assert (plugin.queue_sort_key(a) < plugin.queue_sort_key(b)) is first_wins


# -- SchedulingGates ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        ((), None),
        (("foo", "bar"), Status.unresolvable("waiting for scheduling gates: [foo bar]")),
    ],
)
def test_scheduling_gates(gates: tuple[str, ...], expected: Status | None) -> None:
    plugin = SchedulingGates(None, FakeHandle())
    assert plugin.pre_enqueue(pod_info(scheduling_gates=gates)) == expected


def test_scheduling_gates_hint_only_for_the_pod_itself() -> None:
    (event,) = SchedulingGates(None, FakeHandle()).events_to_register()
    assert event.event.resource == Resource.UNSCHEDULED_POD and event.hint is not None
    gated = pod_info(name="p", uid="u1", scheduling_gates=["g"])
    assert event.hint(gated, None, make_pod(name="p", uid="u1")) is QueueingHint.QUEUE
    assert event.hint(gated, None, make_pod(name="q", uid="u2")) is QueueingHint.SKIP


# -- NodeName -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_name", "expected"),
    [
        (None, [0, 0]),
        ("foo", [0, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]),
        ("bar", [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 0]),
    ],
)
def test_node_name(node_name: str | None, expected: list[int]) -> None:
    table = make_table([make_node("foo"), make_node("bar")])
    result = NodeName(None, FakeHandle(table)).filter(
        new_state(), pod_info(node_name=node_name), table.all_nodes().view()
    )
    assert result.codes.tolist() == expected
    if node_name:
        assert result.reason_counts() == {NODE_NAME_REASON: 1}


def test_node_name_absent_node_rejects_all() -> None:
    table = make_table([make_node("foo")])
    result = NodeName(None, FakeHandle(table)).filter(
        new_state(), pod_info(node_name="gone"), table.all_nodes().view()
    )
    assert result.feasible.tolist() == [False]


# -- NodeUnschedulable ----------------------------------------------------------------

UNSCHEDULABLE_TOLERATION = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "fits"),
    [
        (False, [], True),  # "unschedulable": false
        (True, [], False),  # node unschedulable, pod without tolerations
        (True, [UNSCHEDULABLE_TOLERATION], True),  # pod tolerates node.kubernetes.io/unschedulable
        (
            True,
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                }
            ],
            False,
        ),
        (True, [{"operator": "Exists"}], True),
    ],
)
def test_node_unschedulable(
    unschedulable: bool, tolerations: list[dict[str, str]], fits: bool
) -> None:
    table = make_table([make_node("n", unschedulable=unschedulable)])
    plugin = NodeUnschedulable(None, FakeHandle(table))
    result = plugin.filter(new_state(), pod_info(tolerations=tolerations), table.all_nodes().view())
    if fits:
        assert result.codes.tolist() == [0]
    else:
        assert result.codes.tolist() == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
        assert result.reasons_at(0) == [ERR_REASON_UNSCHEDULABLE]


# -- NodePorts ------------------------------------------------------------------------


def hp(port: int, protocol: str = "TCP", ip: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
    if ip:
        out["hostIP"] = ip
    return out


PORT_CASES: list[tuple[str, list[Any], list[Any], bool]] = [
    ("same udp port", [hp(8080, "UDP", "127.0.0.1")], [hp(8080, "UDP", "127.0.0.1")], False),
    ("same tcp port", [hp(8080, "TCP", "127.0.0.1")], [hp(8080, "TCP", "127.0.0.1")], False),
    ("different host ip", [hp(8080, "TCP", "127.0.0.1")], [hp(8080, "TCP", "127.0.0.2")], True),
    ("different protocol", [hp(8080, "UDP", "127.0.0.1")], [hp(8080, "TCP", "127.0.0.1")], True),
    (
        "second udp port conflict",
        [hp(8000, "UDP", "127.0.0.1"), hp(8080, "UDP", "127.0.0.1")],
        [hp(8001, "UDP", "127.0.0.1"), hp(8080, "UDP", "127.0.0.1")],
        False,
    ),
    (
        "first tcp port conflict",
        [hp(8001, "TCP", "127.0.0.1"), hp(8080, "UDP", "127.0.0.1")],
        [hp(8001, "TCP", "127.0.0.1"), hp(8081, "UDP", "127.0.0.1")],
        False,
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        [hp(8001, "TCP", "0.0.0.0")],
        [hp(8001, "TCP", "127.0.0.1")],
        False,
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        [hp(8001, "TCP", "10.0.10.10"), hp(8001, "TCP", "127.0.0.1")],
        [hp(8001, "TCP", "0.0.0.0")],
        False,
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        [hp(8001, "TCP", "127.0.0.1")],
        [hp(8001, "TCP", "0.0.0.0")],
        False,
    ),
    ("second different protocol", [hp(8001, "UDP", "0.0.0.0")], [hp(8001, "TCP", "0.0.0.0")], True),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        [hp(8001, "UDP", "0.0.0.0")],
        [hp(8001, "TCP", "0.0.0.0"), hp(8001, "UDP", "0.0.0.0")],
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "wanted", "used", "fits"), PORT_CASES, ids=[c[0] for c in PORT_CASES]
)
def test_node_ports(name: str, wanted: list[Any], used: list[Any], fits: bool) -> None:
    table = make_table(
        [make_node("n"), make_node("free")], [make_pod(node_name="n", host_ports=used)]
    )
    plugin = NodePorts(None, FakeHandle(table))
    state, info, nodes = new_state(), pod_info(host_ports=wanted), table.all_nodes()
    assert plugin.pre_filter(state, info, nodes) is None
    result = plugin.filter(state, info, nodes)
    assert result.feasible.tolist() == [fits, True]
    if not fits:
        assert result.reasons_at(0) == [PORTS_REASON] and result.codes[0] == Code.UNSCHEDULABLE


def test_node_ports_skip_without_host_ports_and_follow_pod_removal() -> None:
    used = make_pod(name="holder", node_name="n", host_ports=[hp(80)])
    table = make_table([make_node("n")], [used])
    plugin = NodePorts(None, FakeHandle(table))
    status = plugin.pre_filter(new_state(), pod_info(), table.all_nodes())
    assert isinstance(status, Status) and status.is_skip()
    info = pod_info(host_ports=[hp(80)])
    state = new_state()
    plugin.pre_filter(state, info, table.all_nodes())
    assert plugin.filter(state, info, table.all_nodes()).feasible.tolist() == [False]
    table.remove_pod("default/holder")
    assert plugin.filter(state, info, table.all_nodes()).feasible.tolist() == [True]
    deleted = next(e for e in plugin.events_to_register() if e.event.resource == Resource.POD)
    assert deleted.hint is not None
    assert deleted.hint(info, used, None) is QueueingHint.QUEUE
    assert (
        deleted.hint(info, make_pod(node_name="n", host_ports=[hp(81)]), None) is QueueingHint.SKIP
    )


# -- DefaultBinder --------------------------------------------------------------------


class RecordingClient:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.error = error

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.calls.append((method, path, body))
        if self.error is not None:
            raise self.error
        return {"kind": "Status", "status": "Success"}


async def test_default_binder_posts_binding() -> None:
    client = RecordingClient()
    plugin = DefaultBinder(None, FakeHandle(client=client))
    info = pod_info(name="foo", namespace="ns", uid="uid-1")
    status = await plugin.bind(new_state(), info, "foohost.kubernetes.mydomain.com")
    assert status.is_success()
    assert client.calls == [
        (
            "POST",
            "/api/v1/namespaces/ns/pods/foo/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "foo", "namespace": "ns", "uid": "uid-1"},
                "target": {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": "foohost.kubernetes.mydomain.com",
                },
            },
        )
    ]


async def test_default_binder_error_names_the_pod() -> None:
    plugin = DefaultBinder(None, FakeHandle(client=RecordingClient(RuntimeError("failed"))))
    status = await plugin.bind(new_state(), pod_info(name="foo", namespace="ns"), "node1")
    assert status.code is Code.ERROR
    assert "ns/foo" in status.message() and "failed" in status.message()
    assert isinstance(status.error, RuntimeError)


async def test_default_binder_status_carries_the_typed_outcome() -> None:
    """The engine reads the Bind status back into the outcome DefaultBinder saw."""
    answer = RuntimeError('pod foo is already assigned to node "elsewhere"')
    plugin = DefaultBinder(None, FakeHandle(client=RecordingClient(answer)))
    status = await plugin.bind(new_state(), pod_info(name="foo", namespace="ns"), "node1")
    assert status.code is Code.ERROR
    outcome = BindOutcome.from_status(status, "node1")
    assert outcome.result is BindResult.ASSIGNED_ELSEWHERE and outcome.assigned_to == "elsewhere"
