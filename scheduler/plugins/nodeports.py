"""NodePorts: a pod's host ports must be free on the node.

Two reservations of the same protocol and port conflict when their host IPs
are equal or either is ``0.0.0.0`` (kube's HostPortInfo rules, implemented by
``scheduler.model.ports``). Pods without host ports skip the plugin from
PreFilter on. The nodes' reservations are indexed by ``(ip, protocol, port)``
and ``(*, protocol, port)`` in a row index kept up to date incrementally, so
Filter is a few mask lookups per wanted port whatever the cluster size.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

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
from scheduler.model.ports import HostPort, pod_host_ports, ports_conflict
from scheduler.plugins._helpers import RowKeyIndex
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"
ANY_IP = "*"

BoolArray = npt.NDArray[np.bool_]


def _node_port_keys(table: NodeTable, row: int) -> Mapping[Hashable, int]:
    keys: dict[Hashable, int] = {}
    for port in table.ports[row]:
        if port.port <= 0:
            continue
        keys[(port.host_ip, port.protocol, port.port)] = 1
        keys[(ANY_IP, port.protocol, port.port)] = 1
    return keys


def _conflict_keys(wanted: HostPort) -> tuple[tuple[str, str, int], ...]:
    """The index keys whose presence on a node means ``wanted`` conflicts there."""
    if wanted.host_ip == BIND_ALL:
        return ((ANY_IP, wanted.protocol, wanted.port),)
    return (
        (wanted.host_ip, wanted.protocol, wanted.port),
        (BIND_ALL, wanted.protocol, wanted.port),
    )


def _deleted_pod_freed_a_wanted_port(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Only the deletion of a pod holding one of our ports can make room."""
    if isinstance(old, PodInfo):
        freed = old.host_ports
    elif isinstance(old, dict):
        try:
            freed = pod_host_ports(old)
        except ValueError:
            return QueueingHint.QUEUE
    else:
        return QueueingHint.QUEUE
    wanted = pod.host_ports
    if any(ports_conflict(a, b) for a in wanted for b in freed):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


class NodePorts(Plugin):
    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # results per node depend on that node only

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self._index = RowKeyIndex(_node_port_keys)

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        wanted = [p for p in pod.host_ports if p.port > 0]
        if not wanted:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, tuple(wanted))
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        wanted = state.get(PRE_FILTER_STATE_KEY)
        if wanted is None:
            wanted = tuple(p for p in pod.host_ports if p.port > 0)
        result = FilterResult(len(nodes))
        if not wanted or len(nodes) == 0:
            return result
        self._index.refresh(nodes.table)
        taken = np.zeros(len(nodes), dtype=np.bool_)
        for port in wanted:
            for key in _conflict_keys(port):
                mask = self._index.mask(key)
                if mask is not None:
                    taken |= mask[nodes.rows]
        return result.reject(taken, ERR_REASON)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE), _deleted_pod_freed_a_wanted_port
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]
