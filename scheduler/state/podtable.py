"""Assigned pods as a table, for plugins that reason about pods on nodes.

InterPodAffinity and PodTopologySpread ask "how many pods matching this
selector run in each topology domain". With labels indexed column-wise and
each pod's node row kept in an array, that is a vectorized selector match and
one ``np.bincount`` over node rows, however many pods the cluster has.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.state.labels import BoolArray, IntArray, LabelIndex
from scheduler.state.pod import PodInfo


class PodTable:
    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self.size = 0
        self.node_row = np.full(capacity, -1, dtype=np.int32)
        self.namespace_id = np.full(capacity, -1, dtype=np.int32)
        self.labels = LabelIndex(capacity)
        self.infos: list[PodInfo | None] = [None] * capacity
        self.index: dict[str, int] = {}
        self.namespaces: dict[str, int] = {}
        self.namespace_names: list[str] = []
        # Rows of pods carrying pod (anti-)affinity terms: InterPodAffinity
        # must honour existing pods' anti-affinity (symmetry) and only these
        # pods can contribute.
        self.with_affinity: set[int] = set()
        # How many assigned pods use each PersistentVolumeClaim ("ns/claim"):
        # kube's snapshot PVC reference counts, which VolumeRestrictions reads
        # for ReadWriteOncePod claims.
        self.claim_users: dict[str, int] = {}
        self._free: list[int] = []
        self._live_rows: IntArray | None = None

    def __len__(self) -> int:
        return len(self.index)

    def _grow(self) -> None:
        capacity = self._capacity * 2
        node_row = np.full(capacity, -1, dtype=np.int32)
        node_row[: self._capacity] = self.node_row
        namespace_id = np.full(capacity, -1, dtype=np.int32)
        namespace_id[: self._capacity] = self.namespace_id
        self.node_row, self.namespace_id = node_row, namespace_id
        self.labels.grow(capacity)
        self.infos.extend([None] * (capacity - self._capacity))
        self._capacity = capacity

    def namespace_id_of(self, namespace: str) -> int:
        nid = self.namespaces.get(namespace)
        if nid is None:
            nid = self.namespaces[namespace] = len(self.namespace_names)
            self.namespace_names.append(namespace)
        return nid

    def _count_claims(self, pod: PodInfo, delta: int) -> None:
        users = self.claim_users
        for claim in pod.pvc_names:
            key = f"{pod.namespace}/{claim}"
            count = users.get(key, 0) + delta
            if count > 0:
                users[key] = count
            else:
                users.pop(key, None)

    def add(self, pod: PodInfo, node_row: int) -> int:
        row = self.index.get(pod.key)
        if row is not None:
            previous = self.infos[row]
            if previous is not None and previous.pvc_names:
                self._count_claims(previous, -1)
        if pod.pvc_names:
            self._count_claims(pod, 1)
        if row is None:
            if self._free:
                row = self._free.pop()
            else:
                if self.size == self._capacity:
                    self._grow()
                row = self.size
                self.size += 1
            self.index[pod.key] = row
        self.node_row[row] = node_row
        self.namespace_id[row] = self.namespace_id_of(pod.namespace)
        self.labels.set_row(row, pod.labels)
        self.infos[row] = pod
        affinity = pod.affinity
        if affinity.get("podAffinity") or affinity.get("podAntiAffinity"):
            self.with_affinity.add(row)
        else:
            self.with_affinity.discard(row)
        self._live_rows = None
        return row

    def replace(self, pod: PodInfo) -> None:
        """A newer copy of an indexed pod whose row, namespace, labels, affinity and claims
        are unchanged (:meth:`NodeTable.add_pod` checks)."""
        row = self.index.get(pod.key)
        if row is not None:
            self.infos[row] = pod

    def remove(self, key: str) -> PodInfo | None:
        row = self.index.pop(key, None)
        if row is None:
            return None
        pod = self.infos[row]
        if pod is not None and pod.pvc_names:
            self._count_claims(pod, -1)
        self.node_row[row] = -1
        self.namespace_id[row] = -1
        self.labels.clear_row(row)
        self.infos[row] = None
        self.with_affinity.discard(row)
        self._free.append(row)
        self._live_rows = None
        return pod

    def set_node_row(self, key: str, node_row: int) -> None:
        row = self.index.get(key)
        if row is not None:
            self.node_row[row] = node_row
            self._live_rows = None

    def rows(self) -> IntArray:
        """Rows of pods on a known node."""
        if self._live_rows is None:
            live = self.node_row[: self.size]
            self._live_rows = np.flatnonzero(live >= 0).astype(np.int64)
        return self._live_rows

    def in_namespaces(self, rows: IntArray, namespaces: set[str] | None) -> BoolArray:
        """Mask of ``rows`` whose namespace is in ``namespaces`` (None = all)."""
        if namespaces is None:
            return np.ones(len(rows), dtype=np.bool_)
        ids = [self.namespaces[n] for n in namespaces if n in self.namespaces]
        return np.isin(self.namespace_id[rows], ids)

    def count_per_node(self, rows: IntArray, node_capacity: int) -> npt.NDArray[np.int64]:
        """How many of ``rows`` sit on each node row (length ``node_capacity``)."""
        return np.bincount(self.node_row[rows], minlength=node_capacity).astype(np.int64)
