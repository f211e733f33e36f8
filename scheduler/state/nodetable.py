"""The cluster as struct-of-arrays: what scheduling-cycle hooks compute on.

kube-scheduler calls each Filter and Score plugin once per node. In Python a
call costs microseconds, so at 5,000 nodes that alone would be tens of
milliseconds per pod. Here the nodes are rows of numpy arrays (allocatable
and requested resources as matrices, labels and taints indexed) and every
hook sees all candidate rows at once and answers with arrays.

The table is updated incrementally from watch events (a node or pod change
touches its own rows only) and is never rebuilt per pod. A scheduling cycle
runs synchronously on the event loop, so for its whole duration the live
table *is* a consistent snapshot: no watch event can be applied in between.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.views import BASE_RESOURCES as BASE_RESOURCES
from scheduler.api.views import CPU as CPU
from scheduler.api.views import EPHEMERAL_STORAGE as EPHEMERAL_STORAGE
from scheduler.api.views import MEMORY as MEMORY
from scheduler.api.views import PODS as PODS
from scheduler.model.ports import HostPort
from scheduler.model.quantity import QuantityError
from scheduler.model.resources import node_allocatable
from scheduler.model.taints import Taint
from scheduler.state.labels import BoolArray, IntArray, LabelIndex
from scheduler.state.nodeorder import NodeOrder
from scheduler.state.pod import PodInfo
from scheduler.state.podtable import PodTable
from scheduler.state.views import NodesView, NodeView, TableArrays

_OCCUPANCY_KEY = "NodeTable/occupancy"  # in PodInfo.cache


class InvalidNodeError(ValueError):
    """A node object the table cannot represent; the message names the node."""


@dataclass(slots=True)
class ParsedNode:
    name: str
    labels: dict[str, str]
    taints: list[Taint]
    allocatable: dict[str, int]
    unschedulable: bool
    images: dict[str, int]
    raw: dict[str, Any]

    def same_scheduling_view(self, other: ParsedNode) -> bool:
        """Equal in all that other nodes' results may depend on (see ``Plugin.node_local``)."""
        return (
            self.labels == other.labels
            and self.taints == other.taints
            and self.allocatable == other.allocatable
            and self.unschedulable == other.unschedulable
            and self.images == other.images
        )

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ParsedNode:
        meta = raw.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            raise InvalidNodeError("node without metadata.name")
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        try:
            taints = [Taint.from_dict(t) for t in spec.get("taints") or ()]
            allocatable = node_allocatable(raw)
        except (QuantityError, ValueError, TypeError, AttributeError) as err:
            raise InvalidNodeError(f"node {name}: {err}") from err
        images: dict[str, int] = {}
        for image in status.get("images") or ():
            size = int(image.get("sizeBytes") or 0)
            for image_name in image.get("names") or ():
                # A name listed twice keeps its first entry's size, as in kube.
                images.setdefault(str(image_name), size)
        return cls(
            name=name,
            labels=dict(meta.get("labels") or {}),
            taints=taints,
            allocatable=allocatable,
            unschedulable=bool(spec.get("unschedulable")),
            images=images,
            raw=raw,
        )


class NodeTable:
    """Nodes as rows; see the module docstring for why."""

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self.size = 0  # rows ever used (free rows inside are not alive)
        self.resources: list[str] = list(BASE_RESOURCES)
        self.resource_index: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        r = len(self.resources)
        self.alive = np.zeros(capacity, dtype=np.bool_)
        self.allocatable = np.zeros((capacity, r), dtype=np.int64)
        self.requested = np.zeros((capacity, r), dtype=np.int64)
        # cpu milli and memory with kube-scheduler's non-zero defaults, for scoring.
        self.non_zero_requested = np.zeros((capacity, 2), dtype=np.int64)
        self.unschedulable = np.zeros(capacity, dtype=np.bool_)
        self.generation = np.zeros(capacity, dtype=np.int64)
        self.labels = LabelIndex(capacity)
        self.taint_ids: dict[Taint, int] = {}
        self.taint_list: list[Taint] = []
        self.taint_matrix = np.zeros((capacity, 0), dtype=np.bool_)
        self.names: list[str] = [""] * capacity
        self.index: dict[str, int] = {}
        self.nodes: list[ParsedNode | None] = [None] * capacity
        self.pods: list[dict[str, PodInfo]] = [{} for _ in range(capacity)]
        self.ports: list[list[HostPort]] = [[] for _ in range(capacity)]
        self.pod_table = PodTable()
        # Pods whose node is not (or no longer) in the table, keyed by node name:
        # kept so capacity is right again when the node (re)appears.
        self._orphans: dict[str, dict[str, PodInfo]] = {}
        self._pod_node: dict[str, str] = {}
        self._free: list[int] = []
        self._rows_cache: IntArray | None = None
        self.node_order = NodeOrder(capacity)  # kube's order, for sampling
        self.version = 0  # bumped on every change, for callers caching derived data
        # Row generations are stamps from one clock, never reused, shared with
        # the table's what-if copies (scheduler.state.whatif): a cache that saw
        # a what-if row sees a different stamp on the live row, and recomputes.
        self._stamps = itertools.count(1)
        # Bumped when a node object, a resource column or the row set changes;
        # pod accounting bumps only its row's ``generation``. Together they tell
        # a cache of per-node results exactly which rows it must recompute.
        self.node_epoch = 0
        # Bumped on every node add, update (heartbeats too) or removal.
        self.node_updates = 0
        # Bumped whenever an array is replaced (grown, a column added): read-only
        # views of the arrays (``scheduler.state.views``) stay valid until it moves.
        self.layout = 0
        self.read_only_arrays: TableArrays | None = None  # see TableArrays.of

    # -- capacity -----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, name: object) -> bool:
        return name in self.index

    def _grow(self) -> None:
        old, new = self._capacity, self._capacity * 2

        def grow(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
            out = np.zeros((new, *a.shape[1:]), dtype=a.dtype)
            out[:old] = a
            return out

        self.alive = grow(self.alive)
        self.allocatable = grow(self.allocatable)
        self.requested = grow(self.requested)
        self.non_zero_requested = grow(self.non_zero_requested)
        self.unschedulable = grow(self.unschedulable)
        self.generation = grow(self.generation)
        self.taint_matrix = grow(self.taint_matrix)
        self.labels.grow(new)
        self.names.extend([""] * (new - old))
        self.nodes.extend([None] * (new - old))
        self.pods.extend({} for _ in range(new - old))
        self.ports.extend([] for _ in range(new - old))
        self.node_order.grow(new)
        self._capacity = new
        self.layout += 1

    @property
    def capacity(self) -> int:
        return self._capacity

    def resource_column(self, name: str) -> int:
        """Column of a resource, adding one (zero everywhere) for a new extended resource."""
        col = self.resource_index.get(name)
        if col is None:
            col = len(self.resources)
            self.resources.append(name)
            self.resource_index[name] = col
            pad = np.zeros((self._capacity, 1), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, pad])
            self.requested = np.hstack([self.requested, pad])
            self.node_epoch += 1
            self.layout += 1
        return col

    def request_vector(self, requests: Mapping[str, int]) -> npt.NDArray[np.int64]:
        """A pod's requests aligned with the resource columns (adds missing columns)."""
        for name in requests:
            self.resource_column(name)
        vec = np.zeros(len(self.resources), dtype=np.int64)
        for name, amount in requests.items():
            if name != "pods":
                vec[self.resource_index[name]] = amount
        return vec

    def occupancy(self, pod: PodInfo) -> npt.NDArray[np.int64]:
        """What ``pod`` adds to its node's ``requested`` row, one slot of ``pods`` included.

        Memoised on the pod, keyed by this table's column list (columns are
        only ever appended): what-if checks add and take off many such rows.
        Read-only: it is shared.
        """
        memo = pod.cache.get(_OCCUPANCY_KEY)
        if memo is not None and memo[0] is self.resources and len(memo[1]) == len(self.resources):
            vector: npt.NDArray[np.int64] = memo[1]
            return vector
        vector = self.request_vector(pod.requests)
        vector[PODS] = 1  # a pod takes one slot whatever it requests
        pod.cache[_OCCUPANCY_KEY] = (self.resources, vector)
        return vector

    def _taint_column(self, taint: Taint) -> int:
        tid = self.taint_ids.get(taint)
        if tid is None:
            tid = self.taint_ids[taint] = len(self.taint_list)
            self.taint_list.append(taint)
            pad = np.zeros((self._capacity, 1), dtype=np.bool_)
            self.taint_matrix = np.hstack([self.taint_matrix, pad])
            self.layout += 1
        return tid

    @property
    def origin(self) -> NodeTable:
        """The live table: itself here, the table copied for a what-if copy.

        Caches kept per table (a plugin's row index) key on this, so a what-if
        copy refreshes the rows it changed instead of rebuilding everything.
        """
        return self

    def _touch(self, row: int) -> None:
        self.generation[row] = next(self._stamps)
        self.version += 1

    # -- nodes --------------------------------------------------------------------

    def upsert_node(self, raw: dict[str, Any]) -> int:
        """Add or update a node from its API object; returns its row."""
        node = ParsedNode.from_dict(raw)
        self.node_updates += 1
        row = self.index.get(node.name)
        old = self.nodes[row] if row is not None else None
        if old is None or not old.same_scheduling_view(node):
            # Another node's results may depend on these (ImageLocality counts
            # the nodes having an image); a heartbeat does not move the epoch.
            self.node_epoch += 1
        if row is None:
            if self._free:
                row = self._free.pop()
            else:
                if self.size == self._capacity:
                    self._grow()
                row = self.size
                self.size += 1
            self.index[node.name] = row
            self.names[row] = node.name
            self.alive[row] = True
            self._rows_cache = None
            self.node_order.add(row, node.labels)
            for pod in self._orphans.pop(node.name, {}).values():
                self._account(row, pod, +1)
        elif old is not None and old.labels != node.labels:
            self.node_order.update(row, node.labels)
        self.nodes[row] = node
        # Resolve columns before indexing: adding a column replaces the arrays.
        columns = [
            (self.resource_column(name), amount) for name, amount in node.allocatable.items()
        ]
        taint_columns = [self._taint_column(taint) for taint in node.taints]
        self.allocatable[row] = 0
        for col, amount in columns:
            self.allocatable[row, col] = amount
        self.unschedulable[row] = node.unschedulable
        self.labels.set_row(row, node.labels)
        self.taint_matrix[row] = False
        self.taint_matrix[row, taint_columns] = True
        self._touch(row)
        return row

    def _clear_row(self, row: int) -> None:
        """Empty a row whose node left (its index entry is already gone)."""
        self.pods[row] = {}
        self.ports[row] = []
        self.alive[row] = False
        self.names[row] = ""
        self.nodes[row] = None
        self.allocatable[row] = 0
        self.requested[row] = 0
        self.non_zero_requested[row] = 0
        self.unschedulable[row] = False
        self.taint_matrix[row] = False
        self.labels.clear_row(row)
        self._touch(row)

    def remove_node(self, name: str) -> list[PodInfo]:
        """Remove a node; its pods are kept aside (returned) until it comes back."""
        row = self.index.pop(name, None)
        if row is None:
            return []
        self.node_updates += 1
        pods = self.pods[row]
        for pod in pods.values():
            self.pod_table.set_node_row(pod.key, -1)
        if pods:
            self._orphans[name] = dict(pods)
        self.node_order.remove(row)
        self._clear_row(row)
        self.node_epoch += 1
        self._free.append(row)
        self._rows_cache = None
        return list(pods.values())

    def row_of(self, name: str) -> int | None:
        return self.index.get(name)

    def rows(self) -> IntArray:
        """All live rows, in row order (cached until the node set changes)."""
        if self._rows_cache is None:
            self._rows_cache = np.flatnonzero(self.alive[: self.size]).astype(np.int64)
        return self._rows_cache

    def all_nodes(self) -> NodeSet:
        return NodeSet(self, self.rows())

    def sampling_order(self) -> IntArray:
        """All live rows in the order kube-scheduler samples nodes in (see
        :mod:`.nodeorder`): zones interleaved, cached until nodes come or go."""
        return self.node_order.order(self.rows())

    def node_info(self, row: int) -> NodeInfo:
        return NodeInfo(self, row)

    # -- pods ---------------------------------------------------------------------

    def _account(self, row: int, pod: PodInfo, sign: int) -> None:
        # A pod occupies one "pods" slot whatever it requests (kube ignores a
        # "pods" request); resolve columns first, as adding one replaces arrays.
        columns = [
            (self.resource_column(name), amount)
            for name, amount in pod.requests.items()
            if name != "pods"
        ]
        for col, amount in columns:
            self.requested[row, col] += sign * amount
        self.requested[row, PODS] += sign
        self.non_zero_requested[row, 0] += sign * pod.non_zero_requests[0]
        self.non_zero_requested[row, 1] += sign * pod.non_zero_requests[1]
        self._own_row(row)
        if sign > 0:
            self.pods[row][pod.key] = pod
            self.ports[row].extend(pod.host_ports)
        else:
            self.pods[row].pop(pod.key, None)
            for port in pod.host_ports:
                self.ports[row].remove(port)
        self._index_pod(pod, row if sign > 0 else -1)
        self._touch(row)

    def _own_row(self, row: int) -> None:
        """Make the row's pods and ports safe to edit (a what-if copy copies them)."""

    def _index_pod(self, pod: PodInfo, row: int) -> None:
        """Record the pod's row (-1: on no node) in the cluster-wide pod table."""
        if row >= 0:
            self.pod_table.add(pod, row)
        else:
            self.pod_table.set_node_row(pod.key, -1)

    def add_pod(self, pod: PodInfo, node_name: str | None = None) -> None:
        """Account a pod on its node (``pod.node_name`` unless given: assumed pods)."""
        node_name = node_name or pod.node_name
        if not node_name:
            raise ValueError(f"pod {pod.key} has no node to account it on")
        if pod.key in self._pod_node:
            if self._pod_node[pod.key] == node_name and self._replace_pod(pod, node_name):
                return
            self.remove_pod(pod.key)
        self._pod_node[pod.key] = node_name
        row = self.index.get(node_name)
        if row is None:
            self._orphans.setdefault(node_name, {})[pod.key] = pod
            self.pod_table.add(pod, -1)
            return
        self._account(row, pod, +1)

    def _replace_pod(self, pod: PodInfo, node_name: str) -> bool:
        """Swap in a newer copy of a pod already on ``node_name`` whose footprint is unchanged.

        Removing and adding it again would redo the accounting and the label
        index for nothing.
        """
        row = self.index.get(node_name)
        if row is None:
            return False
        old = self.pods[row].get(pod.key)
        if old is None or not old.same_footprint(pod):
            return False
        self._own_row(row)
        self.pods[row][pod.key] = pod
        self.pod_table.replace(pod)
        self._touch(row)
        return True

    def remove_pod(self, key: str) -> PodInfo | None:
        node_name = self._pod_node.pop(key, None)
        if node_name is None:
            return None
        row = self.index.get(node_name)
        pod: PodInfo | None
        if row is None:
            pod = self._orphans.get(node_name, {}).pop(key, None)
        else:
            pod = self.pods[row].get(key)
            if pod is not None:
                self._account(row, pod, -1)
        self.pod_table.remove(key)
        return pod

    def pod(self, key: str) -> PodInfo | None:
        """The pod accounted under ``key`` (bound or assumed), or None."""
        node_name = self._pod_node.get(key)
        if node_name is None:
            return None
        row = self.index.get(node_name)
        if row is None:
            return self._orphans.get(node_name, {}).get(key)
        return self.pods[row].get(key)

    def node_of_pod(self, key: str) -> str | None:
        return self._pod_node.get(key)

    def has_pod(self, key: str) -> bool:
        return key in self._pod_node


class NodeSet:
    """The candidate nodes of one scheduling cycle: rows of a NodeTable.

    Hooks read the table's arrays at ``rows`` (``nodes.table.allocatable[nodes.rows]``)
    and return arrays aligned with ``rows``.
    """

    __slots__ = ("_names", "cached_view", "rows", "table")

    def __init__(self, table: NodeTable, rows: IntArray) -> None:
        self.table = table
        self.rows = rows
        self._names: list[str] | None = None
        #: The view once made (read directly on the framework's hot path).
        self.cached_view: NodesView | None = None

    def view(self) -> NodesView:
        """These nodes as the plugin API's read-only ``Nodes`` (made once per set)."""
        view = self.cached_view
        if view is None:
            view = self.cached_view = NodesView(self)
        return view

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def names(self) -> list[str]:
        if self._names is None:
            self._names = list(map(self.table.names.__getitem__, self.rows.tolist()))
        return self._names

    def subset(self, mask: BoolArray) -> NodeSet:
        return NodeSet(self.table, self.rows[mask])

    def node(self, i: int) -> NodeInfo:
        """The ``i``-th candidate as a per-node view."""
        return NodeInfo(self.table, int(self.rows[i]))

    def __iter__(self) -> Iterator[NodeInfo]:
        table = self.table
        return (NodeInfo(table, row) for row in self.rows.tolist())

    def label_values(self, key: str) -> npt.NDArray[np.int32]:
        return self.table.labels.column(key, self.rows)


class NodeInfo:
    """One node as a convenient object, for plugins that think node by node."""

    __slots__ = ("row", "table")

    def __init__(self, table: NodeTable, row: int) -> None:
        self.table = table
        self.row = row

    @property
    def _node(self) -> ParsedNode:
        node = self.table.nodes[self.row]
        if node is None:
            raise LookupError(f"row {self.row} holds no node")
        return node

    @property
    def name(self) -> str:
        return self.table.names[self.row]

    @property
    def labels(self) -> dict[str, str]:
        return self._node.labels

    @property
    def taints(self) -> list[Taint]:
        return self._node.taints

    @property
    def unschedulable(self) -> bool:
        return self._node.unschedulable

    @property
    def images(self) -> dict[str, int]:
        return self._node.images

    @property
    def raw(self) -> dict[str, Any]:
        return self._node.raw

    @property
    def allocatable(self) -> dict[str, int]:
        table = self.table
        return {r: int(table.allocatable[self.row, i]) for i, r in enumerate(table.resources)}

    @property
    def requested(self) -> dict[str, int]:
        table = self.table
        return {r: int(table.requested[self.row, i]) for i, r in enumerate(table.resources)}

    @property
    def pods(self) -> list[PodInfo]:
        return list(self.table.pods[self.row].values())

    @property
    def host_ports(self) -> list[HostPort]:
        return list(self.table.ports[self.row])

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r})"


def node_info_of(node: object) -> NodeInfo:
    """The table row behind a node a plugin passed back (a 1.x NodeInfo or a 2.0 view)."""
    if isinstance(node, NodeView):
        return node.node_info
    if isinstance(node, NodeInfo):
        return node
    raise TypeError(f"expected a node the framework handed out, got {type(node).__name__}")
