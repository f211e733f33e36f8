"""ImageLocality: prefer nodes that already hold the pod's images.

Pulling a large image is slow, so kube adds up, for each image of the pod (its
init and regular containers' images and, since 1.35, its image volumes'
``image.reference``) that the node has, the image size scaled by how widely it
has spread (nodes having it / all nodes; an image on every node should not pull
every pod to one place), then maps the sum linearly between 23 MB and 1000 MB
per container (image volumes add to the sum, not to the container count) onto
0..100.

The size and node count are *cluster-wide* per image name, as kube's scheduler
cache keeps them (``cacheImpl.addNodeImageStates`` / ``removeNodeImageStates``):
one ``ImageStateSummary`` per name, created with the size reported by the node
that brought the name into the cluster and shared by every node reporting that
name later, whatever size they report, until no node reports it any more. A
node's own ``sizeBytes`` therefore does not matter unless it holds the name
alone. Names are matched exactly as nodes report them: only the pod's side is
normalized (``:latest`` added), so ``nginx``, ``nginx:latest`` and
``docker.io/library/nginx:latest`` in a node's list are three names, each with
its own holders and size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from scheduler.api import MAX_NODE_SCORE, CycleState, Plugin, hookimpl
from scheduler.api.handle import Handle
from scheduler.state.nodetable import NodeSet, NodeTable, ParsedNode
from scheduler.state.pod import PodInfo

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def normalized_image_name(name: str) -> str:
    """The name the container runtime reports: ``:latest`` added when no tag is given."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def pod_image_names(pod: PodInfo) -> Iterator[str]:
    """The names kube looks up for a pod: its containers' images, then its image volumes'.

    Not deduplicated: two containers with one image count it twice, as in kube.
    """
    for image in pod.images:
        yield normalized_image_name(image)
    for volume in (pod.raw.get("spec") or {}).get("volumes") or ():
        source = volume.get("image") if isinstance(volume, dict) else None
        if isinstance(source, dict):
            yield normalized_image_name(str(source.get("reference") or ""))


class ImageStates:
    """kube's cluster-wide image states (size and holders per name), kept from the rows.

    The NodeTable bumps ``generation[row]`` on every change of a row, so a
    refresh looks only at rows whose generation moved. A row whose node
    object is the same one as before had only its pods change, which does not
    touch kube's image states, so it is skipped: re-reading it could reset a
    size kube keeps (the first holder's, after that holder left). A new node
    object is kube's UpdateNode, remove-then-add: names it dropped lose it as
    a holder, new names gain it, and a name it keeps is re-created from its
    current report only if it was the name's sole holder.

    Order: kube applies node events one by one; between two refreshes the table
    does not say in which order its rows changed. Removals are applied first,
    then additions in row order; rows are allocated in arrival order, so a
    cluster loaded from scratch (or nodes added between cycles) gets the same
    first holder as kube's cache fed by the same watch.
    """

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        # (node_updates, capacity) of the live table at its last full refresh.
        self._seen: tuple[int, int] | None = None
        self._capacity = 0
        self._generation: IntArray = np.zeros(0, dtype=np.int64)
        self._row_names: dict[int, dict[str, int]] = {}
        self._row_node: dict[int, ParsedNode] = {}
        self.holders: dict[str, BoolArray] = {}
        self.count: dict[str, int] = {}
        self.size: dict[str, int] = {}

    def _reset(self, table: NodeTable) -> None:
        self._table = table
        self._seen = None
        self._capacity = table.capacity
        self._generation = np.full(table.capacity, -1, dtype=np.int64)
        self._row_names = {}
        self._row_node = {}
        self.holders = {}
        self.count = {}
        self.size = {}

    def _grow(self, capacity: int) -> None:
        old = self._capacity
        generation = np.full(capacity, -1, dtype=np.int64)
        generation[:old] = self._generation
        self._generation = generation
        for name, mask in self.holders.items():
            bigger = np.zeros(capacity, dtype=np.bool_)
            bigger[:old] = mask
            self.holders[name] = bigger
        self._capacity = capacity

    def refresh(self, table: NodeTable) -> None:
        """Bring the states up to date with ``table`` (cheap when little changed)."""
        if self._table is not table.origin:  # what-if copies refresh their rows only
            self._reset(table.origin)
        if table is self._table and (table.node_updates, table.capacity) == self._seen:
            # No node object came, went or changed since the last refresh: only
            # pods moved, which image states ignore.
            return
        if table.capacity != self._capacity:
            self._grow(table.capacity)
        if table is self._table:
            self._seen = (table.node_updates, table.capacity)
        changed = np.flatnonzero(table.generation != self._generation).tolist()
        if not changed:
            return
        current: dict[int, dict[str, int]] = {}
        for row in changed:
            node = table.nodes[row] if table.alive[row] else None
            if node is not None and node is self._row_node.get(row):
                # Only its pods changed: kube's image states do not move.
                self._generation[row] = table.generation[row]
                continue
            # Each name with its first entry's size (ParsedNode.images).
            names = node.images if node is not None else {}
            current[row] = names
            if node is not None:
                self._row_node[row] = node
            else:
                self._row_node.pop(row, None)
            for name in self._row_names.get(row, {}).keys() - names.keys():
                self._drop(row, name)
        for row, names in current.items():
            old = self._row_names.get(row, {})
            for name, size in names.items():
                if name in old:
                    if self.count[name] == 1:
                        # Sole holder: kube's remove-then-add re-creates the
                        # state from this node's current report.
                        self.size[name] = size
                    continue
                if name not in self.size:
                    self.size[name] = size
                    self.holders[name] = np.zeros(self._capacity, dtype=np.bool_)
                    self.count[name] = 0
                self.holders[name][row] = True
                self.count[name] += 1
            if names:
                self._row_names[row] = names
            else:
                self._row_names.pop(row, None)
            self._generation[row] = table.generation[row]

    def _drop(self, row: int, name: str) -> None:
        self.holders[name][row] = False
        self.count[name] -= 1
        if self.count[name] == 0:
            del self.holders[name], self.count[name], self.size[name]


def calculate_priority(sum_scores: IntArray, num_containers: int) -> IntArray:
    """Map summed image scores onto 0..100 between kube's thresholds."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if not len(sum_scores) or int(sum_scores.max()) < MIN_THRESHOLD:
        # Every sum clips to MIN_THRESHOLD, which scores 0 (the usual case: no images).
        return np.zeros(len(sum_scores), dtype=np.int64)
    clipped = np.where(
        sum_scores < MIN_THRESHOLD,
        MIN_THRESHOLD,
        np.where(sum_scores > max_threshold, max_threshold, sum_scores),
    )
    # Go truncates toward zero; with no containers the denominator is negative.
    num = MAX_NODE_SCORE * (clipped - MIN_THRESHOLD)
    den = max_threshold - MIN_THRESHOLD
    quotient = np.abs(num) // abs(den)
    out: IntArray = np.where((num < 0) != (den < 0), -quotient, quotient).astype(np.int64)
    return out


class ImageLocality(Plugin):
    api_version: ClassVar[str] = "1.1"
    name: ClassVar[str] = "ImageLocality"
    # Results per node depend on the pod's spec, that node's images and the
    # images of the others (the first holder's size, the holder count): allowed.
    node_local: ClassVar[bool] = True

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self._states = ImageStates()

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> IntArray:
        table = nodes.table
        spec = pod.raw.get("spec") or {}
        num_containers = len(spec.get("initContainers") or ()) + len(spec.get("containers") or ())
        sums = np.zeros(len(nodes), dtype=np.int64)
        total_nodes = len(table)
        names = list(pod_image_names(pod))
        if names and total_nodes:
            states = self._states
            states.refresh(table)
            for name in names:
                having = states.holders.get(name)
                if having is None:
                    continue
                # kube's scaledImageScore: float64 size times float64 spread, truncated;
                # the spread counts every node in the cluster, not only the candidates.
                spread = float(states.count[name]) / float(total_nodes)
                scaled = int(float(states.size[name]) * spread)
                sums += np.where(having[nodes.rows], scaled, 0)
        return calculate_priority(sums, num_containers)
