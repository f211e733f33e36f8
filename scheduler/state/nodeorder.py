"""The order kube-scheduler walks nodes in when it samples them (its ``nodeTree``).

With ``percentageOfNodesToScore`` a cycle filters nodes from a rotating
start until it has found enough feasible ones, so *which* nodes a pod sees
depends on the order of the node list. kube-scheduler's list interleaves
zones (region and zone labels, the beta ``failure-domain`` ones first): one
node of each zone in turn, zones in the order they first got a node, the
nodes of a zone in the order they joined it. A cluster whose nodes were
created zone by zone is then still sampled across every zone, which the
zone-spreading scores rely on. Table rows are in no such order (free rows
are reused), so the order is kept here, as join stamps, and the list is
rebuilt (vectorized) only when nodes come or go, as kube rebuilds its
snapshot's list.
"""

from __future__ import annotations

import itertools

import numpy as np

from scheduler.state.labels import IntArray

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
REGION_BETA = "failure-domain.beta.kubernetes.io/region"


def zone_key(labels: dict[str, str]) -> str:
    """kube's ``GetZoneKey``: region and zone, the beta labels winning; "" for neither."""
    zone = labels.get(ZONE_BETA, labels.get(ZONE, ""))
    region = labels.get(REGION_BETA, labels.get(REGION, ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeOrder:
    """Per-row join stamps of nodes and of their zones; see the module docstring."""

    def __init__(self, capacity: int) -> None:
        self._stamps = itertools.count(1)
        #: When the row's node joined its zone, and when that zone last appeared.
        self.joined = np.zeros(capacity, dtype=np.int64)
        self.zone_since = np.zeros(capacity, dtype=np.int64)
        self._zone_of_row: dict[int, str] = {}
        self._zones: dict[str, tuple[int, int]] = {}  # key -> (since, nodes)
        self._cached: IntArray | None = None

    def grow(self, capacity: int) -> None:
        for name in ("joined", "zone_since"):
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=np.int64)
            new[: len(old)] = old
            setattr(self, name, new)

    def add(self, row: int, labels: dict[str, str]) -> None:
        """A node joins (new to the table): it goes last in its zone."""
        self._join(row, zone_key(labels))
        self._cached = None

    def update(self, row: int, labels: dict[str, str]) -> None:
        """A node's labels changed: a new zone moves it to the end of that zone.

        As in kube, the list itself is rebuilt only when nodes come or go.
        """
        key = zone_key(labels)
        if self._zone_of_row.get(row) != key:
            self._leave(row)
            self._join(row, key)

    def remove(self, row: int) -> None:
        self._leave(row)
        self._cached = None

    def _join(self, row: int, key: str) -> None:
        since, count = self._zones.get(key, (0, 0))
        if count == 0:
            since = next(self._stamps)
        self._zones[key] = (since, count + 1)
        self._zone_of_row[row] = key
        self.zone_since[row] = since
        self.joined[row] = next(self._stamps)

    def _leave(self, row: int) -> None:
        key = self._zone_of_row.pop(row, None)
        if key is None:
            return
        since, count = self._zones[key]
        if count <= 1:
            del self._zones[key]
        else:
            self._zones[key] = (since, count - 1)

    def order(self, rows: IntArray) -> IntArray:
        """``rows`` (every live row) in kube's order: zones interleaved (cached)."""
        cached = self._cached
        if cached is not None and len(cached) == len(rows):
            return cached
        zones = self.zone_since[rows]
        by_zone = np.lexsort((self.joined[rows], zones))  # zone by zone, in join order
        grouped = zones[by_zone]
        starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        sizes = np.diff(np.r_[starts, len(grouped)])
        position = np.arange(len(grouped)) - np.repeat(starts, sizes)  # index within its zone
        order: IntArray = rows[by_zone[np.lexsort((grouped, position))]]
        self._cached = order
        return order
