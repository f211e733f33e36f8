"""The NodeTable behind the plugin API's read-only views (``scheduler.api.views``).

A 2.0 hook gets a :class:`NodesView` over the candidate rows instead of the
live table. Its arrays come from read-only numpy views of the table's
arrays, made once per table *layout* (the arrays are replaced only when
the table grows or gains a column; in between, a view shows the live values
without a copy) and kept on the table. Aligned arrays are taken from them
once per candidate set: when the candidates are all of the first rows (a
full cluster with no removed node) that is a slice, a view again; otherwise
a gather, marked read-only as well. Every plugin of the cycle then shares
them, so a hook reading ``nodes.allocatable`` pays nothing after the first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from scheduler.api.views import LABEL_ABSENT, BoolArray, IntArray, LabelIdArray
from scheduler.model.ports import HostPort
from scheduler.model.taints import Taint
from scheduler.state.pod import PodInfo

if TYPE_CHECKING:
    from scheduler.state.nodetable import NodeInfo, NodeSet, NodeTable

_ArrayT = npt.NDArray[Any]


def read_only(array: _ArrayT) -> _ArrayT:
    """A view of ``array`` that refuses writes (the array itself stays writable)."""
    view = array.view()
    view.flags.writeable = False
    return view


class TableArrays:
    """Read-only views of one NodeTable's arrays, valid for one ``layout``."""

    __slots__ = (
        "_labels",
        "allocatable",
        "layout",
        "non_zero_requested",
        "requested",
        "taint_matrix",
        "taints",
        "unschedulable",
    )

    def __init__(self, table: NodeTable) -> None:
        self.layout = table.layout
        self.allocatable = read_only(table.allocatable)
        self.requested = read_only(table.requested)
        self.non_zero_requested = read_only(table.non_zero_requested)
        self.unschedulable = read_only(table.unschedulable)
        self.taint_matrix = read_only(table.taint_matrix)
        # A new distinct taint adds a column, which moves the layout: one tuple per layout.
        self.taints: tuple[Taint, ...] = tuple(table.taint_list)
        # label key -> (the table's column it views, the read-only view)
        self._labels: dict[str, tuple[_ArrayT, _ArrayT]] = {}

    def label_column(self, table: NodeTable, key: str) -> LabelIdArray | None:
        column = table.labels.columns.get(key)
        if column is None:
            return None
        cached = self._labels.get(key)
        if cached is None or cached[0] is not column:
            cached = self._labels[key] = (column, read_only(column))
        view: LabelIdArray = cached[1]
        return view

    @classmethod
    def of(cls, table: NodeTable) -> TableArrays:
        """The table's current views (made again only after its layout changed)."""
        arrays = table.read_only_arrays
        if arrays is None or arrays.layout != table.layout:
            arrays = table.read_only_arrays = cls(table)
        return arrays


class NodeView:
    """One node of the table as :class:`scheduler.api.views.Node`."""

    __slots__ = ("_info",)

    def __init__(self, info: NodeInfo) -> None:
        self._info = info

    @property
    def name(self) -> str:
        return self._info.name

    # The node's parsed maps are the table's own (its label index keeps them):
    # handed out behind read-only proxies.
    @property
    def labels(self) -> Mapping[str, str]:
        return MappingProxyType(self._info.labels)

    @property
    def taints(self) -> Sequence[Taint]:
        return tuple(self._info.taints)

    @property
    def unschedulable(self) -> bool:
        return self._info.unschedulable

    @property
    def images(self) -> Mapping[str, int]:
        return MappingProxyType(self._info.images)

    @property
    def raw(self) -> Mapping[str, Any]:
        return MappingProxyType(self._info.raw)

    @property
    def allocatable(self) -> Mapping[str, int]:
        return self._info.allocatable

    @property
    def requested(self) -> Mapping[str, int]:
        return self._info.requested

    @property
    def pods(self) -> Sequence[PodInfo]:
        return tuple(self._info.pods)

    @property
    def host_ports(self) -> Sequence[HostPort]:
        return tuple(self._info.host_ports)

    @property
    def node_info(self) -> NodeInfo:
        """The framework's side of the view (not part of the plugin API)."""
        return self._info

    def __repr__(self) -> str:
        return f"NodeView({self.name!r})"


class NodesView:
    """Candidate rows of the table as :class:`scheduler.api.views.Nodes`."""

    __slots__ = ("_arrays", "_cache", "_contiguous", "_names", "_set", "_table")

    def __init__(self, node_set: NodeSet) -> None:
        self._set = node_set
        self._table = node_set.table
        self._arrays: TableArrays | None = None
        self._cache: dict[str, _ArrayT] = {}
        self._contiguous: bool | None = None  # decided on the first aligned array
        self._names: tuple[str, ...] | None = None

    # -- plumbing -------------------------------------------------------------

    @property
    def node_set(self) -> NodeSet:
        """The framework's side of the view (not part of the plugin API)."""
        return self._set

    def _table_arrays(self) -> TableArrays:
        arrays = self._arrays
        if arrays is None or arrays.layout != self._table.layout:
            arrays = self._arrays = TableArrays.of(self._table)
            self._cache.clear()
        return arrays

    def _aligned(self, name: str, source: _ArrayT) -> _ArrayT:
        """``source`` (a read-only table array) at the candidate rows, read-only."""
        cached = self._cache.get(name)
        if cached is not None:
            return cached
        rows = self._set.rows
        contiguous = self._contiguous
        if contiguous is None:
            # The table's own list of live rows, and every row in use is live:
            # the rows are 0..n-1 in order, so an aligned array is a slice.
            table = self._table
            contiguous = self._contiguous = len(rows) == table.size and rows is table.rows()
        if contiguous:
            out = source[: len(rows)]
        else:
            out = source.take(rows, axis=0)
            out.flags.writeable = False
        self._cache[name] = out
        return out

    # -- Nodes ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._set.rows)

    def __iter__(self) -> Iterator[NodeView]:
        return (NodeView(info) for info in self._set)

    def __repr__(self) -> str:
        return f"NodesView({len(self)} nodes)"

    @property
    def names(self) -> Sequence[str]:
        names = self._names
        if names is None:
            names = self._names = tuple(self._set.names)  # the set's list is the framework's
        return names

    def node(self, i: int) -> NodeView:
        return NodeView(self._set.node(i))

    def index_of(self, name: str) -> int | None:
        row = self._table.row_of(name)
        if row is None:
            return None
        rows = self._set.rows
        i = int(np.searchsorted(rows, row))
        if i < len(rows) and int(rows[i]) == row:
            return i
        hits = np.flatnonzero(rows == row)  # rows not sorted (never made so, but cheap)
        return int(hits[0]) if len(hits) else None

    def subset(self, mask: BoolArray) -> NodesView:
        return self._set.subset(mask).view()

    def label_values(self, key: str) -> LabelIdArray:
        cached = self._cache.get("label:" + key)
        if cached is not None:
            return cached
        column = self._table_arrays().label_column(self._table, key)
        if column is None:
            out: LabelIdArray = np.full(len(self), LABEL_ABSENT, dtype=np.int32)
            out.flags.writeable = False
            return out
        return self._aligned("label:" + key, column)

    def label_id(self, key: str, value: str) -> int:
        return self._table.labels.value_id(key, value)

    def label_value(self, key: str, value_id: int) -> str | None:
        return self._table.labels.value_of(key, value_id)

    def match_labels(self, requirements: Sequence[tuple[str, str, Sequence[str]]]) -> BoolArray:
        return self._table.labels.match_all(requirements, self._set.rows)

    @property
    def resources(self) -> Sequence[str]:
        return tuple(self._table.resources)

    def resource_column(self, name: str) -> int | None:
        return self._table.resource_index.get(name)

    @property
    def allocatable(self) -> IntArray:
        return self._aligned("allocatable", self._table_arrays().allocatable)

    @property
    def requested(self) -> IntArray:
        return self._aligned("requested", self._table_arrays().requested)

    @property
    def non_zero_requested(self) -> IntArray:
        return self._aligned("non_zero_requested", self._table_arrays().non_zero_requested)

    @property
    def unschedulable(self) -> BoolArray:
        return self._aligned("unschedulable", self._table_arrays().unschedulable)

    @property
    def taints(self) -> Sequence[Taint]:
        return self._table_arrays().taints

    @property
    def taint_matrix(self) -> BoolArray:
        return self._aligned("taint_matrix", self._table_arrays().taint_matrix)

    @property
    def cluster_size(self) -> int:
        return len(self._table)
