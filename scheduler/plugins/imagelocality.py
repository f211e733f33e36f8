"""ImageLocality: prefer nodes that already hold the pod's container images.

Pulling a large image is slow, so kube adds up, for each of the pod's
(init and regular) containers whose image the node has, the image size scaled
by how widely it has spread (nodes having it / all nodes; an image on every
node should not pull every pod to one place), then maps the sum linearly
between 23 MB and 1000 MB per container onto 0..100.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from scheduler.api import MAX_NODE_SCORE, CycleState, NodeSet, Plugin, PodInfo, hookimpl
from scheduler.api.handle import Handle
from scheduler.plugins._helpers import RowKeyIndex
from scheduler.state.nodetable import NodeTable

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

IntArray = npt.NDArray[np.int64]


def normalized_image_name(name: str) -> str:
    """The name the container runtime reports: ``:latest`` added when no tag is given."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _node_images(table: NodeTable, row: int) -> Mapping[Hashable, int]:
    node = table.nodes[row]
    if node is None:
        return {}
    return {name: size for name, size in node.images.items()}


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
    node_local: ClassVar[bool] = True  # results per node depend on that node only

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self._images = RowKeyIndex(_node_images)

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> IntArray:
        table = nodes.table
        spec = pod.raw.get("spec") or {}
        num_containers = len(spec.get("initContainers") or ()) + len(spec.get("containers") or ())
        sums = np.zeros(len(nodes), dtype=np.int64)
        total_nodes = len(table)
        if pod.images and total_nodes:
            self._images.refresh(table)
            for image in pod.images:
                name = normalized_image_name(image)
                having = self._images.mask(name)
                sizes = self._images.values(name)
                if having is None or sizes is None:
                    continue
                # The spread counts every node in the cluster, not only the candidates.
                spread = float(np.count_nonzero(having & table.alive)) / float(total_nodes)
                scaled = np.trunc(sizes[nodes.rows].astype(np.float64) * spread)
                sums += scaled.astype(np.int64)
        return calculate_priority(sums, num_containers)
