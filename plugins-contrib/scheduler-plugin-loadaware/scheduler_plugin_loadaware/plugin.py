"""LoadAware: place pods by what nodes really use, not by what pods requested.

Requests say what pods reserved; metrics-server says what they use. A node
full of over-requesting pods is idle, one full of pods without requests is
hot. Like Trimaran's TargetLoadPacking and Koordinator's LoadAware, this
plugin reads ``metrics.k8s.io/v1beta1`` NodeMetrics and:

- **Score**: predicts each node's utilisation with the pod on it (measured
  usage + the pod's requests, per resource, in % of allocatable) and scores
  it with TargetLoadPacking's piecewise function: rising from ``target`` at
  0% to 100 at ``targetUtilization``, then falling linearly to 0 at 100%.
  Nodes are packed up to the target, and above it the coolest node wins.
  Per-resource scores are combined with ``resourceWeights``.
- **Filter** (optional, ``usageThresholds``): rejects nodes whose measured
  usage of a resource is above the threshold, as Unschedulable (usage can drop).
- **Missing metrics**: a node without NodeMetrics, or whose metrics are older
  than ``metricsExpirationSeconds`` (by their ``timestamp``, the end of the
  sampling ``window``), or unparsable, is never filtered, and is scored by
  ``fallback``: ``requested`` (the requests accounted in the NodeTable stand
  in for usage) or ``neutral`` (a constant 50). Each node entering the
  fallback is logged once - not once per pod.

Everything is computed over NodeTable rows with numpy; the NodeMetrics are
re-read from the informer at most every ``refresh_seconds``.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, field_validator

from scheduler.api import (
    CPU,
    MAX_NODE_SCORE,
    MEMORY,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    Handle,
    NodeSet,
    NodeTable,
    Plugin,
    PodInfo,
    Resource,
    hookimpl,
)
from scheduler.model.quantity import QuantityError, parse_quantity

NODE_METRICS = ("metrics.k8s.io", "v1beta1", "nodes")
RESOURCES: tuple[Literal["cpu", "memory"], ...] = ("cpu", "memory")
COLUMNS = {"cpu": CPU, "memory": MEMORY}
NEUTRAL_SCORE = MAX_NODE_SCORE // 2
LOGGED_NAMES = 10  # nodes named in one fallback log line

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

ResourceName = Literal["cpu", "memory"]

# Why a node has no usable metrics.
FRESH, MISSING, INVALID, STALE = 0, 1, 2, 3
WHY = {MISSING: "no NodeMetrics", INVALID: "unparsable NodeMetrics", STALE: "stale NodeMetrics"}


def _default_weights() -> dict[ResourceName, int]:
    return {"cpu": 1, "memory": 1}


class LoadAwareArgs(BaseModel):
    """``pluginConfig`` args of LoadAware (camelCase in the config file)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    target_utilization: float = Field(
        default=40.0,
        alias="targetUtilization",
        gt=0,
        lt=100,
        description="Utilisation (%) at which a node scores best; TargetLoadPacking's default.",
    )
    resource_weights: dict[ResourceName, int] = Field(
        default_factory=_default_weights,
        alias="resourceWeights",
        description="Weight of each resource's score (cpu, memory); 0 ignores a resource.",
    )
    metrics_expiration_seconds: float = Field(
        default=180.0,
        alias="metricsExpirationSeconds",
        gt=0,
        description="NodeMetrics older than this (by their timestamp) count as missing.",
    )
    usage_thresholds: dict[ResourceName, float] = Field(
        default_factory=dict,
        alias="usageThresholds",
        description="Filter: reject nodes whose measured usage (%) of a resource is above this.",
    )
    fallback: Literal["requested", "neutral"] = Field(
        default="requested",
        description="Scoring of nodes without fresh metrics: from requests, or a constant 50.",
    )

    @field_validator("resource_weights")
    @classmethod
    def _weights(cls, weights: dict[ResourceName, int]) -> dict[ResourceName, int]:
        if any(w < 0 for w in weights.values()):
            raise ValueError("weights must not be negative")
        if not any(weights.values()):
            raise ValueError("at least one resource needs a positive weight")
        return weights

    @field_validator("usage_thresholds")
    @classmethod
    def _thresholds(cls, thresholds: dict[ResourceName, float]) -> dict[ResourceName, float]:
        for name, value in thresholds.items():
            if not 0 < value <= 100:
                raise ValueError(f"{name}: a usage threshold is a percentage in (0, 100]")
        return thresholds


def target_load_score(utilization: FloatArray, target: float) -> FloatArray:
    """TargetLoadPacking's score of predicted utilisation (%), as floats in [0, 100].

    ``target + (100 - target) * u / target`` up to the target (so an idle node
    scores ``target`` and a node at the target 100), then
    ``target * (100 - u) / (100 - target)`` down to 0 at full use; over 100%, 0.
    """
    u = np.clip(utilization, 0.0, None)
    rising = target + (MAX_NODE_SCORE - target) * u / target
    falling = target * (100.0 - u) / (100.0 - target)
    out: FloatArray = np.where(u <= target, rising, np.where(u <= 100.0, falling, 0.0))
    return out


def parse_timestamp(value: Any) -> float:
    """RFC 3339 timestamp -> epoch seconds; ValueError on anything else."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"bad timestamp {value!r}")
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


class _MetricsCache:
    """NodeMetrics aligned with NodeTable rows: usage (milli-cpu, bytes) and timestamps."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.usage = np.zeros((0, 2), dtype=np.float64)
        self.stamp = np.zeros(0, dtype=np.float64)
        self.status = np.zeros(0, dtype=np.int8)
        self.logged = np.zeros(0, dtype=np.bool_)  # fallback already logged for the row
        self.refreshed_at = -np.inf

    def stale_rows(self, table: NodeTable) -> bool:
        """Whether the table's node set changed since the last refresh."""
        return table.names[: table.size] != self.names

    def refresh(self, table: NodeTable, objects: list[Mapping[str, Any]], now: float) -> None:
        size = table.size
        usage = np.zeros((size, 2), dtype=np.float64)
        stamp = np.full(size, np.nan, dtype=np.float64)
        status = np.full(size, MISSING, dtype=np.int8)
        for obj in objects:
            name = str((obj.get("metadata") or {}).get("name") or "")
            row = table.row_of(name)
            if row is None or row >= size:
                continue
            try:
                values = obj.get("usage") or {}
                usage[row, 0] = float(parse_quantity(values.get("cpu", 0))) * 1000.0
                usage[row, 1] = float(parse_quantity(values.get("memory", 0)))
                stamp[row] = parse_timestamp(obj.get("timestamp"))
                status[row] = FRESH
            except (QuantityError, ValueError, TypeError, AttributeError):
                usage[row] = 0.0
                stamp[row] = np.nan
                status[row] = INVALID
        names = table.names[:size]
        # Keep "already logged" for rows that still hold the same node.
        logged = np.zeros(size, dtype=np.bool_)
        same = min(len(self.names), size)
        for row in range(same):
            if self.logged[row] and self.names[row] == names[row]:
                logged[row] = True
        self.names = list(names)
        self.usage, self.stamp, self.status, self.logged = usage, stamp, status, logged
        self.refreshed_at = now


class LoadAware(Plugin):
    """Score (and optionally filter) nodes by measured utilisation from NodeMetrics."""

    api_version = "1.0"
    Args = LoadAwareArgs
    args: LoadAwareArgs
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (NODE_METRICS,)
    refresh_seconds: ClassVar[float] = 1.0

    def __init__(self, args: LoadAwareArgs | None, handle: Handle) -> None:
        super().__init__(args if args is not None else LoadAwareArgs(), handle)
        # Ask for the store now: the daemon starts informers for stores requested
        # while plugins are built, and waits for them to sync before scheduling.
        self._store = handle.store(*NODE_METRICS)
        self._cache = _MetricsCache()
        self.clock: Callable[[], float] = time.time
        weights = self.args.resource_weights
        self._resources = [r for r in RESOURCES if weights.get(r, 0) > 0]
        self._weights = np.asarray([weights[r] for r in self._resources], dtype=np.float64)

    # -- metrics ------------------------------------------------------------------

    def _metrics(self, nodes: NodeSet, now: float) -> tuple[FloatArray, IntArray]:
        """Measured usage at ``nodes.rows`` (milli-cpu, bytes) and each row's FRESH/... status."""
        table = nodes.table
        cache = self._cache
        if now - cache.refreshed_at >= self.refresh_seconds or cache.stale_rows(table):
            cache.refresh(table, self._store.list(), now)
        rows = nodes.rows
        status = cache.status[rows].astype(np.int64)
        age = now - cache.stamp[rows]
        status[(status == FRESH) & (age > self.args.metrics_expiration_seconds)] = STALE
        return cache.usage[rows], status

    def _log_fallback(self, nodes: NodeSet, status: IntArray) -> None:
        """Log nodes that newly lack fresh metrics (once each, not per pod)."""
        logged = self._cache.logged
        rows = nodes.rows
        fresh = status == FRESH
        logged[rows[fresh]] = False  # recovered: a later loss is logged again
        new = ~fresh & ~logged[rows]
        if not new.any():
            return
        logged[rows[new]] = True
        idx = np.flatnonzero(new)
        names = nodes.names
        reasons: dict[str, int] = {}
        for code in status[idx].tolist():
            reasons[WHY[code]] = reasons.get(WHY[code], 0) + 1
        self.handle.logger.warning(
            "node metrics unavailable: scoring these nodes by the fallback",
            fallback=self.args.fallback,
            count=len(idx),
            reasons=reasons,
            nodes=[names[i] for i in idx[:LOGGED_NAMES].tolist()],
            expiration_seconds=self.args.metrics_expiration_seconds,
        )

    # -- hooks --------------------------------------------------------------------

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult:
        result = FilterResult(len(nodes))
        thresholds = self.args.usage_thresholds
        if not thresholds or not len(nodes):
            return result
        usage, status = self._metrics(nodes, self.clock())
        fresh = status == FRESH
        allocatable = nodes.table.allocatable[nodes.rows]
        for name, threshold in thresholds.items():
            i = RESOURCES.index(name)
            percent = _percent(usage[:, i], allocatable[:, COLUMNS[name]])
            result.reject(
                fresh & (percent > threshold), f"node(s) {name} usage is above {threshold:g}%"
            )
        return result

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> IntArray:
        usage, status = self._metrics(nodes, self.clock())
        fresh = status == FRESH
        if not fresh.all():
            self._log_fallback(nodes, status)
        table = nodes.table
        allocatable = table.allocatable[nodes.rows]
        requested = table.requested[nodes.rows]
        per_resource = np.empty((len(nodes), len(self._resources)), dtype=np.float64)
        for j, name in enumerate(self._resources):
            col = COLUMNS[name]
            measured = usage[:, RESOURCES.index(name)]
            if self.args.fallback == "requested":
                measured = np.where(fresh, measured, requested[:, col])
            predicted = measured + pod.requests.get(name, 0)
            per_resource[:, j] = target_load_score(
                _percent(predicted, allocatable[:, col]), self.args.target_utilization
            )
        combined = per_resource @ self._weights / self._weights.sum()
        if self.args.fallback == "neutral":
            combined = np.where(fresh, combined, NEUTRAL_SCORE)
        scores: IntArray = np.rint(combined).astype(np.int64)
        return scores

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # New metrics may bring a filtered node under its threshold; new nodes too.
        return [
            ClusterEventWithHint(ClusterEvent("NodeMetrics", ActionType.ALL)),
            ClusterEventWithHint(ClusterEvent("nodes", ActionType.ALL)),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE)),
        ]


def _percent(amount: FloatArray, allocatable: npt.NDArray[Any]) -> FloatArray:
    """``amount`` in % of ``allocatable``; a node with nothing allocatable is at 100%+."""
    alloc = allocatable.astype(np.float64)
    out: FloatArray = np.divide(
        amount * 100.0, alloc, out=np.full(len(alloc), np.inf), where=alloc > 0
    )
    return out
