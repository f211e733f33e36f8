"""Opportunistic batching: identical pods reuse per-node Filter and Score results.

A ReplicaSet's pods, or scheduler_perf's, are scheduled one after another
with the same spec. Between two of them the cluster usually changed on a
couple of nodes only: the node the previous pod was assumed on, and nodes
whose pods the informers confirmed. Re-running every Filter and Score over
5,000 rows for each pod is most of a decision's cost, so for pods with the
same *signature* the cache keeps each node's Filter verdict and each Score
plugin's raw score, together with the NodeTable ``generation`` of every row
they were computed at, and recomputes only the rows whose generation moved.
NormalizeScore, weighting and the pick run over every feasible node as
usual, so a decision equals the one a full cycle would make.

That is exact only for plugins whose per-node results depend on nothing but
the pod and that node (``Plugin.node_local``); a pod for which any other
Filter or Score plugin is active (not skipped) takes the full path, as do
pods with a nominated node, PreFilter narrowing, sampling, or nominated pods
anywhere in the cluster. A change to any node object (``node_epoch``)
drops every entry.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from scheduler.api.cyclestate import CycleState
from scheduler.api.results import ScoreArray
from scheduler.api.status import Status
from scheduler.framework import promises
from scheduler.framework.runtime import Framework
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

# Identity and bookkeeping fields: two replicas differ here and nowhere else.
_PER_POD_METADATA = frozenset(
    {"name", "generateName", "uid", "resourceVersion", "creationTimestamp", "managedFields"}
)
DEFAULT_CAPACITY = 64
#: Signatures remembered as seen once (see :meth:`BatchCache.admit`).
SEEN_CAPACITY = 1024


def pod_signature(pod: PodInfo) -> bytes | None:
    """What ``node_local`` plugins may read of a pod, serialized; None if it cannot be."""
    raw = pod.raw
    meta = raw.get("metadata") or {}
    spec = raw.get("spec")
    if type(spec) is dict and spec.get("volumes"):
        spec = _volumes_numbered(spec)
    try:
        return orjson.dumps(({k: v for k, v in meta.items() if k not in _PER_POD_METADATA}, spec))
    except TypeError:
        return None


def _volumes_numbered(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with volumes numbered instead of named, in the volumes and in the mounts.

    A real API server gives every pod a service-account token volume named
    ``kube-api-access-<random>``; with names in the signature replicas would
    never share one. Renaming consistently keeps what refers to what.
    """
    numbers: dict[Any, str] = {}
    volumes: list[Any] = []
    for i, volume in enumerate(spec.get("volumes") or ()):
        if type(volume) is dict:
            numbers[volume.get("name")] = f"#{i}"
            volume = {k: v for k, v in volume.items() if k != "name"}
        volumes.append(volume)

    def renamed(container: Any) -> Any:
        mounts = container.get("volumeMounts") if type(container) is dict else None
        if not mounts or type(mounts) is not list:
            return container
        return {
            **container,
            "volumeMounts": [
                {**m, "name": numbers.get(m.get("name"), m.get("name"))} if type(m) is dict else m
                for m in mounts
            ],
        }

    out = {**spec, "volumes": volumes}
    for key in ("containers", "initContainers", "ephemeralContainers"):
        containers = spec.get(key)
        if type(containers) is list:
            out[key] = [renamed(c) for c in containers]
    return out


@dataclass(slots=True)
class _Entry:
    epoch: int
    skip_filter: frozenset[str]
    generation: IntArray
    feasible: BoolArray
    # Score side: valid only for rows in ``scored`` and for this skip set.
    skip_score: frozenset[str] | None = None
    scored: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    raw: dict[str, IntArray] = field(default_factory=dict)


class BatchCache:
    """Per-profile cache of node-local Filter/Score results, keyed by pod signature."""

    def __init__(self, framework: Framework, capacity: int = DEFAULT_CAPACITY) -> None:
        self.framework = framework
        self.capacity = capacity
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._local = frozenset(
            name
            for name, plugin in framework.plugins.items()
            if getattr(plugin, "node_local", False)
        )
        self._filter_plugins = [c.plugin for c in framework.filter_calls]
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def admit(self, signature: bytes) -> bool:
        """Whether pods of ``signature`` go through the cache: from the second one on.

        Storing a pod's verdicts and raw scores costs copies of per-node
        arrays; for a pod unlike any other (its own labels or sizes) that is
        pure overhead, about a tenth of a 5,000-node decision. So the first
        pod of a signature takes the plain path and is only remembered; a
        second one stores what the third and later ones reuse.
        """
        if signature in self._entries:
            return True
        if signature in self._seen:
            del self._seen[signature]
            return True
        self._seen[signature] = None
        while len(self._seen) > SEEN_CAPACITY:
            self._seen.popitem(last=False)
        return False

    def filters_are_local(self, state: CycleState) -> bool:
        """Whether every Filter plugin that runs for this pod is node-local."""
        skip = state.skip_filter_plugins
        return all(p in self._local for p in self._filter_plugins if p not in skip)

    def scores_are_local(self, state: CycleState) -> bool:
        return all(p in self._local for p in self.framework.active_score_plugins(state))

    # -- Filter -------------------------------------------------------------------

    def feasible(
        self, signature: bytes, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> NodeSet | Status | None:
        """The feasible nodes from the cache plus a Filter over the changed rows.

        None on a miss (run the full Filter, then :meth:`store_filter`); a
        Status when Filter failed on the changed rows (the caller falls back).
        """
        entry = self._entries.get(signature)
        size = table.size
        skip = frozenset(state.skip_filter_plugins)
        if (
            entry is None
            or entry.epoch != table.node_epoch
            or len(entry.generation) != size
            or entry.skip_filter != skip
        ):
            self.misses += 1
            return None
        self._entries.move_to_end(signature)
        generation = table.generation[:size]
        changed = np.flatnonzero((generation != entry.generation) & table.alive[:size])
        if len(changed):
            outcome = self.framework.run_filter(state, pod, NodeSet(table, changed))
            if not outcome.status.is_success():
                return outcome.status
            entry.feasible[changed] = False
            entry.feasible[outcome.feasible.rows] = True
            if len(entry.scored):
                entry.scored[changed] = False
            entry.generation = generation.copy()
        self.hits += 1
        cached = NodeSet(table, np.flatnonzero(entry.feasible).astype(np.int64))
        if promises.CHECK_PROMISES:
            self._check_feasible(state, pod, cached)
        return cached

    def _check_feasible(self, state: CycleState, pod: PodInfo, cached: NodeSet) -> None:
        """Promise-checking mode: the cached verdicts must equal a full Filter's."""
        full = self.framework.run_filter(state, pod, cached.table.all_nodes())
        if not full.status.is_success():
            return
        rejected_by = {name: v.plugin for name, v in full.diagnosis.node_verdicts.items()}
        skip = state.skip_filter_plugins
        local = [p for p in self._filter_plugins if p in self._local and p not in skip]
        promises.check_cached_feasible(local, cached, full.feasible, rejected_by)

    def store_filter(
        self, signature: bytes, state: CycleState, table: NodeTable, feasible: NodeSet
    ) -> None:
        """Remember a full Filter pass's verdicts for pods of this signature."""
        size = table.size
        mask = np.zeros(size, dtype=np.bool_)
        mask[feasible.rows] = True
        self._entries[signature] = _Entry(
            epoch=table.node_epoch,
            skip_filter=frozenset(state.skip_filter_plugins),
            generation=table.generation[:size].copy(),
            feasible=mask,
        )
        self._entries.move_to_end(signature)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    # -- Score --------------------------------------------------------------------

    def raw_scores(
        self, signature: bytes, state: CycleState, pod: PodInfo, feasible: NodeSet
    ) -> dict[str, ScoreArray] | Status:
        """Every active plugin's raw scores over ``feasible``, computing missing rows only."""
        entry = self._entries[signature]
        table = feasible.table
        size = len(entry.generation)
        skip = frozenset(state.skip_score_plugins)
        if entry.skip_score != skip or len(entry.scored) != size:
            entry.skip_score = skip
            entry.scored = np.zeros(size, dtype=np.bool_)
            active = self.framework.active_score_plugins(state)
            entry.raw = {p: np.zeros(size, dtype=np.int64) for p in active}
        rows = feasible.rows
        missing = rows[~entry.scored[rows]]
        if len(missing):
            computed, status = self.framework.run_raw_scores(state, pod, NodeSet(table, missing))
            if not status.is_success():
                return status
            for plugin, values in computed.items():
                entry.raw[plugin][missing] = values
            entry.scored[missing] = True
        scores = {plugin: values[rows] for plugin, values in entry.raw.items()}
        if promises.CHECK_PROMISES:
            fresh, status = self.framework.run_raw_scores(state, pod, feasible)
            if status.is_success():
                promises.check_cached_scores(scores, fresh, feasible)
        return scores

    def scores_still_valid(self, signature: bytes, table: NodeTable) -> bool:
        """After an await (an HTTP extender's call): drop raw scores of rows changed meanwhile.

        False when the entry cannot serve this cycle's Score any more (gone, or
        the node set changed). Rows that changed are only marked unscored: the
        next pod's :meth:`feasible` still sees them as changed and re-filters them.
        """
        entry = self._entries.get(signature)
        size = table.size
        if entry is None or entry.epoch != table.node_epoch or len(entry.generation) != size:
            return False
        if len(entry.scored) == size:
            changed = np.flatnonzero(table.generation[:size] != entry.generation)
            entry.scored[changed] = False
        return True

    def forget(self, signature: bytes) -> None:
        self._entries.pop(signature, None)

    def clear(self) -> None:
        """Forget every pod signature's results."""
        self._entries.clear()
        self._seen.clear()
