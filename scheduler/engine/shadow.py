"""Shadow profiles: a changed plugin set or weight tried on live traffic, never binding.

A profile with ``pluggableScheduler.shadowOf: <primary>`` schedules no pod of
its own. For every pod the primary decides, the shadow runs the same
scheduling cycle (PreFilter to the pick, :meth:`Algorithm.schedule`) on the
same cluster snapshot, and that is all: no Reserve, no Permit, no binding,
no event. A decision that differs is counted in
``scheduler_shadow_divergence_total{profile,plugin}`` and the last ones are
kept as explain-style diffs of the nodes involved.

When it runs: right after the primary's binding cycle was started (the bind
goes out as soon as the loop runs it, not after the shadow), in the same
synchronous step, so nothing can change the cluster in between. The primary
has by then assumed the pod on its node; the shadow sees a what-if copy of
the table with that pod taken off again (:class:`WhatIfTable`, plus the
cluster-wide pod index with the pod hidden), which is exactly the snapshot
the primary decided on. For a pod the primary could not place, the shadow
runs before PostFilter, on the live table, which nothing has changed yet.

"Differs" means the shadow would not pick the primary's node: the primary's
node is not among the shadow's best (tied) nodes, or only one of the two
places the pod. Ties broken differently are not divergences. The plugin
named is the one that explains it: the Filter plugin that rejected the other
decision's node, else the Score plugin whose weighted scores moved most in
favour of the shadow's node.
"""

from __future__ import annotations

import copy
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog

from scheduler.api.status import Code
from scheduler.config.points import ExtensionPoint
from scheduler.framework.cycle import Algorithm, ScheduleResult
from scheduler.framework.handle import Nominator
from scheduler.framework.profile import Profile
from scheduler.framework.runtime import PluginScores, ScoreOutcome
from scheduler.observability.metrics import SchedulerMetrics
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.podtable import PodTable
from scheduler.state.whatif import WhatIfTable

log = structlog.get_logger("scheduler.shadow")

#: Divergences kept (the oldest go first).
DEFAULT_KEEP = 100

#: The plugin label of a divergence no plugin's verdict or score explains.
UNEXPLAINED = "Score"


@dataclass(frozen=True, slots=True)
class Divergence:
    """One decision the shadow made differently, with the nodes involved as explain shows them."""

    pod: str
    profile: str
    primary: str
    plugin: str
    primary_node: str | None
    shadow_node: str | None
    primary_tied: list[str]
    shadow_tied: list[str]
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "profile": self.profile,
            "primary": self.primary,
            "plugin": self.plugin,
            "time": self.at,
            "primary_decision": {"node": self.primary_node, "tied": list(self.primary_tied)},
            "shadow_decision": {"node": self.shadow_node, "tied": list(self.shadow_tied)},
            "nodes": self.nodes,
        }


@dataclass(slots=True)
class _Shadow:
    profile: Profile
    algorithm: Algorithm
    #: Differs from its primary in Score weights only: its decision is the
    #: primary's normalized scores weighted anew (see :func:`reweighted`).
    reweights: bool = False


def _without_weights(profile: Profile) -> tuple[Any, ...]:
    """What a decision depends on in a resolved profile, Score weights left out."""
    resolved = profile.resolved
    # The order of Score plugins does not change a sum; at other points it matters.
    plugins = {
        point: tuple(
            sorted(e.name for e in entries)
            if point is ExtensionPoint.SCORE
            else (e.name for e in entries)
        )
        for point, entries in resolved.plugins.items()
    }
    return (
        plugins,
        dict(resolved.plugin_args),
        dict(resolved.priorities),
        dict(resolved.failure_policy),
        resolved.percentage_of_nodes_to_score,
    )


def reweighted(shadow: _Shadow, decided: ScheduleResult, names: list[str]) -> ScheduleResult:
    """The shadow's decision when only Score weights differ from the primary's.

    Filter verdicts and raw and normalized scores do not depend on weights,
    so the shadow's cycle would compute the primary's again: only the
    weighted sum and the pick differ. Exact, at the cost of a few vector
    operations instead of a second cycle.
    """
    scores = decided.score_outcome
    if scores is None or not scores.status.is_success() or decided.node is None:
        return decided  # unschedulable, or one feasible node: the same for any weights
    weights = {c.plugin: c.weight for c in shadow.profile.framework.score_calls}
    total = np.zeros(len(scores.nodes), dtype=np.int64)
    by_plugin: dict[str, PluginScores] = {}
    for plugin, got in scores.by_plugin.items():
        weighted = got.normalized * weights.get(plugin, 1)
        total += weighted
        by_plugin[plugin] = PluginScores(got.raw, got.normalized, weighted)
    tied_rows = scores.nodes.rows[total == total.max()]
    pick = int(tied_rows[shadow.algorithm.rng.randrange(len(tied_rows))])
    return ScheduleResult(
        decided.status,
        names[pick],
        tied_rows,
        evaluated_nodes=decided.evaluated_nodes,
        feasible_nodes=decided.feasible_nodes,
        filter_outcome=decided.filter_outcome,
        score_outcome=ScoreOutcome(scores.nodes, total, by_plugin),
        diagnosis=decided.diagnosis,
    )


def _without_pod(pods: PodTable, key: str) -> PodTable:
    """The pod index with one pod on no node (a shallow copy: only ``node_row`` is new)."""
    row = pods.index.get(key)
    if row is None or pods.node_row[row] < 0:
        return pods
    hidden = copy.copy(pods)
    hidden.node_row = pods.node_row.copy()
    hidden.node_row[row] = -1
    hidden._live_rows = None
    return hidden


def snapshot_before_assume(table: NodeTable, pod: PodInfo) -> NodeTable:
    """The table as the primary decided on it: the live one minus ``pod`` (assumed since)."""
    if not table.has_pod(pod.key):
        return table
    before = WhatIfTable(table)
    before.remove_pod(pod.key)
    before.pod_table = _without_pod(table.pod_table, pod.key)
    return before


def _rejecter(result: ScheduleResult, row: int) -> tuple[str, Code, list[str]] | None:
    """The plugin that rejected ``row`` in ``result``, its code and reasons."""
    for rej in result.diagnosis.rejections:
        hit = np.flatnonzero(rej.rows == row)
        if len(hit):
            i = int(hit[0])
            bits = int(rej.reason_bits[i])
            reasons = [r for b, r in enumerate(rej.reasons) if bits >> b & 1]
            return rej.plugin, Code(int(rej.codes[i])), reasons
    return None


def _scores(result: ScheduleResult, row: int) -> tuple[dict[str, tuple[int, int, int]], int | None]:
    """Per plugin (raw, normalized, weighted) at ``row``, and the total (None: not scored)."""
    scores = result.score_outcome
    if scores is None:
        return {}, None
    hit = np.flatnonzero(scores.nodes.rows == row)
    if not len(hit):
        return {}, None
    i = int(hit[0])
    per_plugin = {
        p: (int(s.raw[i]), int(s.normalized[i]), int(s.weighted[i]))
        for p, s in scores.by_plugin.items()
    }
    return per_plugin, int(scores.total[i])


def node_report(result: ScheduleResult, row: int, filter_plugins: list[str]) -> dict[str, Any]:
    """One node of ``result`` in ``explain``'s JSON shape (its ``nodes.<name>`` entry)."""
    outcome = result.filter_outcome
    feasible = outcome is not None and bool(np.any(outcome.feasible.rows == row))
    rejected = _rejecter(result, row)
    verdicts: dict[str, Any] = {}
    if rejected is not None:
        plugin, code, reasons = rejected
        before = filter_plugins[: filter_plugins.index(plugin)] if plugin in filter_plugins else []
        verdicts = {p: {"code": "Success", "reasons": []} for p in before}
        verdicts[plugin] = {"code": code.title, "reasons": reasons}
    elif feasible:
        verdicts = {p: {"code": "Success", "reasons": []} for p in filter_plugins}
    per_plugin, total = _scores(result, row)
    return {
        "evaluated": feasible or rejected is not None,
        "feasible": feasible,
        "rejected_by": rejected[0] if rejected is not None else None,
        "filter": verdicts,
        "score": {
            p: {"raw": raw, "normalized": norm, "weighted": weighted}
            for p, (raw, norm, weighted) in per_plugin.items()
        },
        "total": total,
    }


def explaining_plugin(
    primary: ScheduleResult, shadow: ScheduleResult, p_row: int | None, s_row: int | None
) -> str:
    """The plugin that explains why the shadow did not pick the primary's node."""
    if s_row is not None:
        got = _rejecter(primary, s_row)
        if got is not None:
            return got[0]
    if p_row is not None:
        got = _rejecter(shadow, p_row)
        if got is not None:
            return got[0]
    if p_row is None or s_row is None:
        status = shadow.status if s_row is None else primary.status
        return status.plugin or UNEXPLAINED
    p_at_p, _ = _scores(primary, p_row)
    p_at_s, _ = _scores(primary, s_row)
    s_at_p, _ = _scores(shadow, p_row)
    s_at_s, _ = _scores(shadow, s_row)
    best, best_change = UNEXPLAINED, 0
    for plugin in sorted(set(s_at_s) | set(p_at_s)):
        shadow_gap = s_at_s.get(plugin, (0, 0, 0))[2] - s_at_p.get(plugin, (0, 0, 0))[2]
        primary_gap = p_at_s.get(plugin, (0, 0, 0))[2] - p_at_p.get(plugin, (0, 0, 0))[2]
        change = shadow_gap - primary_gap
        if change > best_change:
            best, best_change = plugin, change
    return best


class Shadows:
    """The shadow profiles of a scheduler and what they found."""

    def __init__(self, metrics: SchedulerMetrics | None = None, keep: int = DEFAULT_KEEP) -> None:
        self.metrics = metrics
        self.recent: deque[Divergence] = deque(maxlen=keep)
        self._of: dict[str, list[_Shadow]] = {}

    def configure(
        self, profiles: Mapping[str, Profile], *, seed: int | None, nominator: Nominator | None
    ) -> dict[str, Profile]:
        """Take the shadows out of ``profiles``; returns the profiles that schedule."""
        self._of = {}
        scheduling: dict[str, Profile] = {}
        for name, profile in profiles.items():
            primary = profile.resolved.shadow_of
            if primary is None:
                scheduling[name] = profile
                continue
            algorithm = Algorithm(profile.framework, seed=seed, nominator=nominator, batching=True)
            reweights = primary in profiles and _without_weights(profile) == _without_weights(
                profiles[primary]
            )
            self._of.setdefault(primary, []).append(_Shadow(profile, algorithm, reweights))
        return scheduling

    def of(self, primary: str) -> list[str]:
        return [s.profile.scheduler_name for s in self._of.get(primary, ())]

    def follow(
        self,
        primary: Profile,
        pod: PodInfo,
        decided: ScheduleResult,
        table: NodeTable,
        *,
        assumed: bool,
    ) -> None:
        """Run every shadow of ``primary`` for ``pod`` on the snapshot the primary decided on.

        ``assumed``: the live ``table`` has the pod on its node since. A
        shadow's failure is logged and costs nothing else: the primary's
        decision is already made.
        """
        shadows = self._of.get(primary.scheduler_name)
        if not shadows:
            return
        if assumed and not all(s.reweights for s in shadows):
            table = snapshot_before_assume(table, pod)
        for shadow in shadows:
            try:
                self._one(shadow, primary, pod, decided, table)
            except Exception:
                log.exception(
                    "shadow cycle crashed", pod=pod.key, profile=shadow.profile.scheduler_name
                )

    def _one(
        self,
        shadow: _Shadow,
        primary: Profile,
        pod: PodInfo,
        decided: ScheduleResult,
        table: NodeTable,
    ) -> None:
        profile = shadow.profile
        if shadow.reweights:
            result = reweighted(shadow, decided, table.names)
        else:
            state = profile.framework.new_cycle_state()
            result = shadow.algorithm.schedule(
                state, pod, table, profile.resolved.percentage_of_nodes_to_score
            )
        name = profile.scheduler_name
        p_row = table.row_of(decided.node) if decided.node is not None else None
        same = (decided.node is None and result.node is None) or (
            p_row is not None and bool(np.any(result.tied_rows == p_row))
        )
        plugin: str | None = None
        if not same:
            s_row = table.row_of(result.node) if result.node is not None else None
            plugin = explaining_plugin(decided, result, p_row, s_row)
            rows = {r for r in (p_row, s_row) if r is not None}
            primary_filters = [c.plugin for c in primary.framework.filter_calls]
            shadow_filters = [c.plugin for c in profile.framework.filter_calls]
            self.recent.append(
                Divergence(
                    pod=pod.key,
                    profile=name,
                    primary=primary.scheduler_name,
                    plugin=plugin,
                    primary_node=decided.node,
                    shadow_node=result.node,
                    primary_tied=decided.tied,
                    shadow_tied=result.tied,
                    nodes={
                        table.names[r]: {
                            "primary": node_report(decided, r, primary_filters),
                            "shadow": node_report(result, r, shadow_filters),
                        }
                        for r in sorted(rows)
                    },
                    at=time.time(),
                )
            )
        if self.metrics is not None:
            self.metrics.shadow_decision(name, plugin)
