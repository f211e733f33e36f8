"""The what-if a preemption plugin edits: the plugin API's ``WhatIf`` over a WhatIfTable.

A plugin's own ``select_victims_on_node`` (or a plugin simulating a whole
group's placement) removes and adds pods and asks Filter, as kube's
``SelectVictimsOnNode`` does through ``RemovePod``/``AddPod`` and
``RunFilterPluginsWithNominatedPods``. It does so on a :class:`WhatIfTable`
(never the live table) and a clone of the preemptor's cycle state that the
PreFilter extensions update; whoever made the what-if reverts the table.

Filtering another pod than the preemptor (a member of the same group) first
runs that pod's PreFilter on the what-if, then replays the what-if's edits
through its AddPod/RemovePod extensions: PreFilter reads the cluster-wide
pod index, which stays the live one (see :mod:`scheduler.state.whatif`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

import numpy as np

from scheduler.api.cyclestate import CycleState
from scheduler.api.preemption import DisruptionBudget, Victims, WhatIf
from scheduler.api.status import Status
from scheduler.api.views import Node, Pod
from scheduler.framework.nominated import extension_failure, filter_with_nominated
from scheduler.framework.runtime import Framework
from scheduler.state.nodetable import NodeInfo, NodeSet
from scheduler.state.pod import PodInfo
from scheduler.state.views import NodeView
from scheduler.state.whatif import WhatIfTable

#: A policy's ``select_victims_on_node(state, pod, node, what_if, budgets)``.
SelectVictimsOnNode = Callable[
    [CycleState, PodInfo, Node, WhatIf, Sequence[DisruptionBudget]], Victims
]

_ADD, _REMOVE = "add", "remove"


class PluginWhatIf:
    """The plugin API's :class:`~scheduler.api.preemption.WhatIf` (see the module docstring)."""

    def __init__(
        self,
        framework: Framework,
        table: WhatIfTable,
        state: CycleState,
        pod: PodInfo,
        nominated: Mapping[int, Sequence[PodInfo]],
    ) -> None:
        self._framework = framework
        self._table = table
        self._state = state
        self._pod = pod
        self._nominated = nominated
        # (what, pod, node name) in order: replayed for other pods' cycle states.
        self._edits: list[tuple[str, PodInfo, str]] = []

    @property
    def pod(self) -> Pod:
        return self._pod

    @property
    def state(self) -> CycleState:
        return self._state

    def _row(self, name: str) -> int:
        row = self._table.row_of(name)
        if row is None:
            raise LookupError(f"what-if: no node {name!r} in the cluster")
        return row

    def node(self, name: str) -> Node:
        return NodeView(NodeInfo(self._table, self._row(name)))

    def node_of(self, pod: Pod) -> str | None:
        return self._table.node_of_pod(pod.key)

    def remove_pod(self, pod: Pod) -> Status:
        node_name = self._table.node_of_pod(pod.key)
        if node_name is None:
            return Status.success()  # on no node already
        removed = self._table.remove_pod(pod.key)
        if removed is None:
            return Status.success()
        self._edits.append((_REMOVE, removed, node_name))
        node = NodeInfo(self._table, self._row(node_name))
        status = self._framework.run_pre_filter_remove_pod(self._state, self._pod, removed, node)
        return status if status.is_success() else extension_failure(status)

    def add_pod(self, pod: Pod, node_name: str) -> Status:
        row = self._row(node_name)
        info = cast(PodInfo, pod)
        self._table.add_pod(info, node_name)
        self._edits.append((_ADD, info, node_name))
        node = NodeInfo(self._table, row)
        status = self._framework.run_pre_filter_add_pod(self._state, self._pod, info, node)
        return status if status.is_success() else extension_failure(status)

    def filter(self, node_name: str, pod: Pod | None = None) -> Status:
        row = self._row(node_name)
        prepared = self._prepare(pod)
        if isinstance(prepared, Status):
            return prepared
        state, target, allowed = prepared
        if allowed is not None and node_name not in allowed:
            return Status.unresolvable("node(s) didn't satisfy plugin(s) PreFilter")
        rows = np.asarray([row], dtype=np.int64)
        failures = filter_with_nominated(
            self._framework, state, target, self._table, rows, self._nominated
        )
        return failures.status(row) or Status.success()

    def feasible_nodes(self, pod: Pod | None = None) -> list[str]:
        prepared = self._prepare(pod)
        if isinstance(prepared, Status):
            return []
        state, target, allowed = prepared
        table = self._table
        rows = table.rows()
        names = table.names
        if allowed is not None:
            rows = np.asarray([r for r in rows.tolist() if names[r] in allowed], dtype=np.int64)
        if not len(rows):
            return []
        failures = filter_with_nominated(
            self._framework, state, target, table, rows, self._nominated
        )
        return [names[r] for r in rows.tolist() if r not in failures]

    def _prepare(self, pod: Pod | None) -> tuple[CycleState, PodInfo, set[str] | None] | Status:
        """The cycle state to filter ``pod`` with, the pod, and the nodes its PreFilter
        allows (None: all); a failed PreFilter's status."""
        if pod is None or pod.key == self._pod.key:
            return self._state, self._pod, None
        target = cast(PodInfo, pod)
        framework = self._framework
        state = framework.new_cycle_state()
        nodes = NodeSet(self._table, self._table.rows())
        result, status = framework.run_pre_filter(state, target, nodes)
        if not status.is_success():
            return status
        for what, other, node_name in self._edits:
            if other.key == target.key:
                continue
            node = NodeInfo(self._table, self._row(node_name))
            if what == _ADD:
                status = framework.run_pre_filter_add_pod(state, target, other, node)
            else:
                status = framework.run_pre_filter_remove_pod(state, target, other, node)
            if not status.is_success():
                return extension_failure(status)
        allowed = set(result.node_names) if result.node_names is not None else None
        return state, target, allowed
