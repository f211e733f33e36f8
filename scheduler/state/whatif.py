"""What-if copies of a NodeTable: "would the pod fit if these pods were gone, those added?"

Preemption's dry run and the nominated-pods check ask that question many
times per cycle. Editing the live table and putting everything back would
let a bug (or an exception between the two) corrupt the cluster state every
later pod is scheduled on, and reorders the pods of every row it touches. A
:class:`WhatIfTable` is a NodeTable that hooks receive as ``nodes.table``
exactly as they receive the live one, and whose edits never reach it.

It shares with the live table everything pod accounting cannot change
(nodes, labels, taints, allocatable, names) and owns what it does change:
the ``requested`` and ``non_zero_requested`` matrices and the row generations
(copied whole: a few numbers per node), the pods and host ports of each row
it edits (copied on that row's first edit), and where the pods it moved are.

Scope, as kube's ``NodeInfo`` copies in its dry run: per-node state. The
cluster-wide pod index (``pod_table``) stays the live one. It is read at
PreFilter and PreScore, which what-ifs do not run; what a what-if changes
reaches the state PreFilter computed from it through the AddPod/RemovePod
extensions, as in kube.

A row it edits gets a new generation stamp from the clock it shares with the
live table, never reused: a plugin cache that saw the what-if row sees a
different stamp on the live row and recomputes it.
"""

from __future__ import annotations

import numpy as np

from scheduler.state.labels import IntArray
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo


class WhatIfTable(NodeTable):
    """A NodeTable whose pod edits stay here; see the module docstring."""

    def __init__(self, base: NodeTable) -> None:
        # Deliberately no super().__init__(): every attribute starts shared with
        # ``base``; those pod accounting writes are then replaced by copies.
        self.__dict__.update(base.__dict__)
        self.base = base.origin
        self.requested = base.requested.copy()
        self.non_zero_requested = base.non_zero_requested.copy()
        self.generation = base.generation.copy()
        # The base's read-only views show the base's matrices, not these copies.
        self.read_only_arrays = None
        self.pods = list(base.pods)
        self.ports = list(base.ports)
        self._owned: set[int] = set()  # rows whose pods and ports are copies
        self._edited: set[int] = set()  # rows that may differ from the base
        self._shifted: list[IntArray] = []  # more such rows, as shift_requested got them
        self._moved: dict[str, str | None] = {}  # pod key -> node here (None: on none)

    @property
    def origin(self) -> NodeTable:
        return self.base

    # -- what pod accounting calls --------------------------------------------------

    def _own_row(self, row: int) -> None:
        if row not in self._owned:
            self._owned.add(row)
            self.pods[row] = dict(self.pods[row])
            self.ports[row] = list(self.ports[row])

    def _index_pod(self, pod: PodInfo, row: int) -> None:
        """The live pod index is not a what-if's to edit (see the module docstring)."""

    def _touch(self, row: int) -> None:
        self._edited.add(row)
        super()._touch(row)

    def resource_column(self, name: str) -> int:
        """A column new to the base is added there first (zero everywhere), then here."""
        col = self.resource_index.get(name)
        if col is not None and col < self.requested.shape[1]:
            return col
        col = self.base.resource_column(name)
        missing = len(self.resources) - self.requested.shape[1]
        pad = np.zeros((self.capacity, missing), dtype=np.int64)
        self.requested = np.hstack([self.requested, pad])
        self.allocatable = self.base.allocatable
        self.node_epoch = self.base.node_epoch
        self.read_only_arrays = None  # views of the matrices just replaced
        return col

    # -- pods -----------------------------------------------------------------------

    def add_pod(self, pod: PodInfo, node_name: str | None = None) -> None:
        """Account ``pod`` on a node of the table (a what-if has no orphans)."""
        node_name = node_name or pod.node_name
        row = self.index.get(node_name) if node_name else None
        if row is None or node_name is None:
            raise ValueError(f"what-if: pod {pod.key}: node {node_name!r} is not in the table")
        if self.node_of_pod(pod.key) is not None:
            self.remove_pod(pod.key)
        self._moved[pod.key] = node_name
        self._account(row, pod, +1)

    def remove_pod(self, key: str) -> PodInfo | None:
        node_name = self.node_of_pod(key)
        if node_name is None:
            return None
        self._moved[key] = None
        row = self.index.get(node_name)
        pod = self.pods[row].get(key) if row is not None else None
        if row is not None and pod is not None:
            self._account(row, pod, -1)
        return pod

    def node_of_pod(self, key: str) -> str | None:
        if key in self._moved:
            return self._moved[key]
        return self.base.node_of_pod(key)

    def has_pod(self, key: str) -> bool:
        return self.node_of_pod(key) is not None

    # -- requested rows alone ----------------------------------------------------------

    def shift_requested(self, rows: IntArray, delta: IntArray) -> None:
        """Add ``delta`` (one vector per row) to ``requested`` at ``rows``, pods untouched.

        The what-if of many pods at once for Filter plugins that see pods only
        through ``requested`` (``pods_via_requested``); the rows get new stamps.
        """
        if not len(rows):
            return
        width = self.requested.shape[1]
        if delta.shape[1] < width:  # vectors made before a column was added
            delta = np.pad(delta, ((0, 0), (0, width - delta.shape[1])))
        self.requested[rows] += delta
        self.generation[rows] = next(self._stamps)
        self.version += 1
        self._shifted.append(rows)

    # -- back to the base -----------------------------------------------------------

    def revert(self) -> None:
        """Undo every edit: the rows read as the base's again (with the base's stamps)."""
        if self._shifted:
            self._edited.update(np.concatenate(self._shifted).tolist())
            self._shifted.clear()
        if self._edited:
            rows = np.fromiter(self._edited, dtype=np.int64, count=len(self._edited))
            width = self.base.requested.shape[1]
            if self.requested.shape[1] != width:
                self.requested = self.base.requested.copy()
            else:
                self.requested[rows] = self.base.requested[rows]
            self.non_zero_requested[rows] = self.base.non_zero_requested[rows]
            self.generation[rows] = self.base.generation[rows]
            self._edited.clear()
        for row in self._owned:
            self.pods[row] = self.base.pods[row]
            self.ports[row] = self.base.ports[row]
        self._owned.clear()
        self._moved.clear()
