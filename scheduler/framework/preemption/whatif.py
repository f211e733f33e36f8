"""The what-if a preemption plugin edits: the plugin API's ``WhatIf`` over a WhatIfTable.

A plugin's own ``select_victims_on_node`` (or a plugin simulating a whole
group's placement) removes and adds pods and asks Filter, as kube's
``SelectVictimsOnNode`` does through ``RemovePod``/``AddPod`` and
``RunFilterPluginsWithNominatedPods``. It does so on a :class:`WhatIfTable`
(never the live table) and a clone of the preemptor's cycle state that the
PreFilter extensions update; whoever made the what-if reverts the table.

Filtering another pod than the preemptor (a member of the same group) first
runs that pod's PreFilter on the what-if, then reports the what-if's net
changes to its AddPod/RemovePod extensions (where any run): PreFilter reads the cluster-wide
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
        # The pods this what-if moved (their net moves are replayed for other pods).
        self._moved: dict[str, PodInfo] = {}
        self._nominated_keys = {p.key for pods in nominated.values() for p in pods}
        self._placed_nominated = False  # a nominated pod was added here (see _nominations)

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
        self._moved[removed.key] = removed
        node = NodeInfo(self._table, self._row(node_name))
        status = self._framework.run_pre_filter_remove_pod(self._state, self._pod, removed, node)
        return status if status.is_success() else extension_failure(status)

    def add_pod(self, pod: Pod, node_name: str) -> Status:
        row = self._row(node_name)
        info = cast(PodInfo, pod)
        self._table.add_pod(info, node_name)
        self._moved[info.key] = info
        if info.key in self._nominated_keys:
            self._placed_nominated = True
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
            self._framework, state, target, self._table, rows, self._nominations()
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
            self._framework, state, target, table, rows, self._nominations()
        )
        return [names[r] for r in rows.tolist() if r not in failures]

    def _nominations(self) -> Mapping[int, Sequence[PodInfo]]:
        """The nominated pods whose room counts: those placed in this what-if are in
        the table already (kube counts a nominated pod once)."""
        if not self._placed_nominated:
            return self._nominated
        table = self._table
        out: dict[int, Sequence[PodInfo]] = {}
        for row, pods in self._nominated.items():
            kept = [p for p in pods if not table.has_pod(p.key)]
            if kept:
                out[row] = kept
        return out

    def _replay(self, state: CycleState, target: PodInfo) -> Status:
        """Report the what-if's net changes (where each pod it moved is now, against
        the live table) to ``target``'s AddPod/RemovePod extensions."""
        table = self._table
        framework = self._framework
        for key, other in self._moved.items():
            if key == target.key:
                continue
            before, now = table.base.node_of_pod(key), table.node_of_pod(key)
            if before == now:
                continue
            if before is not None and (row := table.row_of(before)) is not None:
                node = NodeInfo(table, row)
                status = framework.run_pre_filter_remove_pod(state, target, other, node)
                if not status.is_success():
                    return extension_failure(status)
            if now is not None:
                node = NodeInfo(table, self._row(now))
                status = framework.run_pre_filter_add_pod(state, target, other, node)
                if not status.is_success():
                    return extension_failure(status)
        return Status.success()

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
        skip = state.skip_filter_plugins
        extended = any(
            c.plugin not in skip for c in (*framework.add_pod_calls, *framework.remove_pod_calls)
        )
        if extended:
            status = self._replay(state, target)
            if not status.is_success():
                return status
        allowed = set(result.node_names) if result.node_names is not None else None
        return state, target, allowed
