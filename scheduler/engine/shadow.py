"""Shadow profiles: a changed plugin set or weight tried on live traffic, never binding.

A profile with ``pluggableScheduler.shadowOf: <primary>`` schedules no pod of
its own. For every pod the primary decides, the shadow runs the same
scheduling cycle (PreFilter to the pick, :meth:`Algorithm.schedule`) on the
same cluster snapshot, and that is all: no Reserve, no Permit, no binding,
no event. A decision that differs is counted in
``scheduler_shadow_divergence_total{profile,plugin}`` and the last ones are
kept as explain-style diffs of the nodes involved.

When it runs: right after the primary's binding cycle has started, in the
same synchronous step, so nothing can change the cluster in between. The
binding cycle starts eagerly, so by then the Binding request is out and the
shadows add no latency to it. The primary has assumed the pod on its node;
a shadow that runs plugins sees a what-if copy of the table with that pod
taken off again (:class:`WhatIfTable`, plus the cluster-wide pod index with
the pod hidden), which is exactly the snapshot the primary decided on. For a
pod the primary could not place, the shadow runs before PostFilter, on the
live table, which nothing has changed yet.

Most shadows differ from their primary in a plugin or two: their decisions
are derived from the primary's, re-running only the plugins that differ
(:mod:`.shadow_reuse`); the full cycle runs where that cannot be exact.

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
from scheduler.engine.shadow_reuse import Derivation, changed_plugins
from scheduler.framework.cycle import Algorithm, ScheduleResult
from scheduler.framework.handle import Nominator
from scheduler.framework.profile import Profile
from scheduler.observability.metrics import SchedulerMetrics
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.podtable import PodTable
from scheduler.state.whatif import WhatIfTable

log = structlog.get_logger("scheduler.shadow")

#: Divergences kept (the oldest go first).
DEFAULT_KEEP = 100

#: Tied nodes named per decision in a divergence record.
TIED_LISTED = 10

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
    #: The first of each decision's tied nodes (see :func:`tied_names`), and how many tied.
    primary_tied: list[str]
    shadow_tied: list[str]
    primary_tied_total: int = 0
    shadow_tied_total: int = 0
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "profile": self.profile,
            "primary": self.primary,
            "plugin": self.plugin,
            "time": self.at,
            "primary_decision": {
                "node": self.primary_node,
                "tied": list(self.primary_tied),
                "tied_total": self.primary_tied_total,
            },
            "shadow_decision": {
                "node": self.shadow_node,
                "tied": list(self.shadow_tied),
                "tied_total": self.shadow_tied_total,
            },
            "nodes": self.nodes,
        }


@dataclass(slots=True)
class Budget:
    """Seconds of shadow work the loop may spend: ``share`` of the time, over a second.

    A token bucket: it fills at ``share`` seconds per second up to ``share``
    seconds (one second's worth), and every shadow cycle takes what it
    measured. An empty bucket skips the shadow until it has filled again, so
    over any stretch of time the shadow takes at most about ``share`` of it,
    whatever a cycle costs, and a quiet scheduler shadows every decision.
    """

    share: float
    tokens: float = 0.0
    last: float | None = None

    def allows(self, now: float) -> bool:
        if self.last is None:
            self.tokens = self.share
        else:
            self.tokens = min(self.share, self.tokens + (now - self.last) * self.share)
        self.last = now
        return self.tokens > 0

    def spend(self, seconds: float) -> None:
        self.tokens -= seconds


@dataclass(slots=True)
class _Shadow:
    profile: Profile
    algorithm: Algorithm
    #: How its decisions are derived from the primary's (None: every decision
    #: takes the shadow's full cycle; see :mod:`.shadow_reuse`).
    derivation: Derivation | None
    #: ``pluggableScheduler.shadowBudget`` (None: every decision is shadowed).
    budget: Budget | None = None
    #: Decisions derived from the primary's, decisions that took a full cycle, and
    #: decisions left out to stay within the budget.
    derived: int = 0
    full: int = 0
    skipped: int = 0

    @property
    def reweights(self) -> bool:
        """Differs in Score weights only: every decision re-weights the primary's scores."""
        return self.derivation is not None and not self.derivation.changed


def tied_names(result: ScheduleResult, limit: int = TIED_LISTED) -> list[str]:
    """The chosen node and the first other tied nodes, ``limit`` names at most.

    Identical nodes tie by the thousand; a divergence record names a few.
    """
    names = result.diagnosis.names
    listed = [names[r] for r in result.tied_rows[:limit].tolist()]
    if result.node is not None and result.node not in listed:
        listed = [result.node, *listed[: limit - 1]]
    return listed


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
    """The table as the primary decided on it: the live one minus ``pod``, if assumed since."""
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
        self,
        profiles: Mapping[str, Profile],
        *,
        seed: int | None,
        nominator: Nominator | None,
        reuse: bool = True,
    ) -> dict[str, Profile]:
        """Take the shadows out of ``profiles``; returns the profiles that schedule.

        ``reuse=False`` gives every decision the shadow's full cycle (the
        benchmark measures what deriving decisions saves).
        """
        self._of = {}
        scheduling: dict[str, Profile] = {}
        for name, profile in profiles.items():
            primary = profile.resolved.shadow_of
            if primary is None:
                scheduling[name] = profile
                continue
            algorithm = Algorithm(profile.framework, seed=seed, nominator=nominator, batching=True)
            changed = (
                changed_plugins(profiles[primary], profile)
                if reuse and primary in profiles
                else None
            )
            derivation = (
                Derivation(profiles[primary].framework, profile.framework, changed)
                if changed is not None
                else None
            )
            share = profile.resolved.shadow_budget
            budget = Budget(share) if share is not None else None
            self._of.setdefault(primary, []).append(_Shadow(profile, algorithm, derivation, budget))
        return scheduling

    def counts(self) -> dict[str, tuple[int, int, int]]:
        """Per shadow profile: decisions derived from the primary's, full cycles, skipped."""
        return {
            s.profile.scheduler_name: (s.derived, s.full, s.skipped)
            for followers in self._of.values()
            for s in followers
        }

    def of(self, primary: str) -> list[str]:
        return [s.profile.scheduler_name for s in self._of.get(primary, ())]

    def follow(
        self,
        primary: Profile,
        pod: PodInfo,
        decided: ScheduleResult,
        table: NodeTable,
    ) -> None:
        """Run every shadow of ``primary`` for ``pod`` on the table the primary decided on.

        ``table`` is the live one, which may have the pod assumed on its node
        since; shadows that run plugins then see a what-if copy without it. A
        shadow's failure is logged and costs nothing else: the primary's
        decision is already made.
        """
        shadows = self._of.get(primary.scheduler_name)
        if not shadows:
            return
        if not all(s.reweights for s in shadows):
            table = snapshot_before_assume(table, pod)
        for shadow in shadows:
            budget = shadow.budget
            start = time.perf_counter()
            if budget is not None and not budget.allows(start):
                shadow.skipped += 1
                if self.metrics is not None:
                    self.metrics.shadow_skip(shadow.profile.scheduler_name)
                continue
            try:
                self._one(shadow, primary, pod, decided, table)
            except Exception:
                log.exception(
                    "shadow cycle crashed", pod=pod.key, profile=shadow.profile.scheduler_name
                )
            if budget is not None:
                budget.spend(time.perf_counter() - start)

    def _one(
        self,
        shadow: _Shadow,
        primary: Profile,
        pod: PodInfo,
        decided: ScheduleResult,
        table: NodeTable,
    ) -> None:
        profile = shadow.profile
        result = None
        if shadow.derivation is not None:
            result = shadow.derivation.decide(
                decided, pod, table, rng=shadow.algorithm.rng, nominator=shadow.algorithm.nominator
            )
        if result is not None:
            shadow.derived += 1
        else:
            shadow.full += 1
            state = profile.framework.new_cycle_state()
            # A sampled cycle (percentageOfNodesToScore) looks at the nodes from
            # where the primary's started, so the two see the same nodes.
            shadow.algorithm.next_start = decided.sample_start
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
                    primary_tied=tied_names(decided),
                    shadow_tied=tied_names(result),
                    primary_tied_total=len(decided.tied_rows),
                    shadow_tied_total=len(result.tied_rows),
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
