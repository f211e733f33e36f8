"""Transformers' node adjustments as per-row overrides of a what-if copy.

A ``before_filter``/``before_score`` transformer answers with a
:class:`~scheduler.api.transform.NodeAdjustment` in the plugin's terms
(positions in the ``nodes`` it was given, resource names). The framework
turns the adjustments of one step into an :class:`Overlay` (table rows and
one signed vector per row over the table's resource columns) once, and
applies it to whichever table a Filter run of the cycle uses: the live one,
or a what-if copy preemption or the nominated-pods check made. Applying
never writes the table it is given: it makes a
:class:`~scheduler.state.whatif.WhatIfTable` over it (copying the
``requested`` matrices, a few numbers per node) and edits the copy's rows,
which get fresh generation stamps so no per-row cache mistakes them for the
live rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.api.transform import NodeAdjustment
from scheduler.api.views import CPU, MEMORY
from scheduler.state.nodetable import NodeSet
from scheduler.state.whatif import WhatIfTable

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Overlay:
    """Signed changes of ``requested`` per table row (+ held, - released); immutable."""

    rows: IntArray
    delta: npt.NDArray[np.int64]  # (len(rows), columns at creation)

    @classmethod
    def of(cls, nodes: NodeSet, adjustments: Iterable[NodeAdjustment]) -> Overlay | None:
        """The sum of ``adjustments`` over ``nodes``; None when it changes nothing.

        Raises ValueError when an adjustment names a position outside ``nodes``.
        """
        table = nodes.table
        columns = table.resource_index
        by_row: dict[int, IntArray] = {}
        for adjustment in adjustments:
            for index, changes in adjustment.changes():
                if index >= len(nodes):
                    raise ValueError(
                        f"NodeAdjustment names node index {index}, but only {len(nodes)} "
                        "nodes were given"
                    )
                row = int(nodes.rows[index])
                vector = by_row.get(row)
                if vector is None:
                    vector = by_row[row] = np.zeros(len(table.resources), dtype=np.int64)
                for name, amount in changes.items():
                    col = columns.get(name)
                    if col is not None:  # a resource no node has: nothing to adjust
                        vector[col] += amount
        by_row = {row: v for row, v in by_row.items() if v.any()}
        if not by_row:
            return None
        rows = np.fromiter(by_row, dtype=np.int64, count=len(by_row))
        return cls(rows, np.stack(list(by_row.values())))

    def apply(self, nodes: NodeSet) -> NodeSet:
        """``nodes`` over a what-if copy of their table with this overlay's rows adjusted."""
        present = np.isin(self.rows, nodes.rows)
        rows = self.rows[present]
        if not len(rows):
            return nodes
        delta = self.delta[present]
        copy = WhatIfTable(nodes.table)
        copy.shift_requested(rows, delta)
        requested = copy.requested
        requested[rows] = np.maximum(requested[rows], 0)
        # Scoring reads cpu and memory with kube's non-zero defaults: same change there.
        nz = copy.non_zero_requested
        nz[rows, 0] = np.maximum(nz[rows, 0] + delta[:, CPU], 0)
        nz[rows, 1] = np.maximum(nz[rows, 1] + delta[:, MEMORY], 0)
        return NodeSet(copy, nodes.rows)
