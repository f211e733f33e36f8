"""A shadow's decision from its primary's, re-running only the plugins that differ.

A shadow profile usually differs from its primary in one or two plugins: a
Score weight, one plugin's args, a plugin added or removed. On the snapshot
the primary decided on, every other plugin would compute again exactly what
it computed for the primary: a plugin's verdicts and scores depend on its
args, the pod, the nodes and its own cycle state, none of which changed. So
the shadow runs only the *changed* plugins (PreFilter, Filter on the nodes
the primary found feasible, PreScore, Score, NormalizeScore), takes the
primary's normalized scores for the others, weights everything with its own
weights and picks. A full second cycle costs as much as the primary's; this
costs the changed plugins' share of it.

It is exact only where the primary's cycle tells the shadow everything the
shared plugins would say, so :meth:`Derivation.decide` answers None (the
caller then runs the shadow's full cycle) unless:

- the primary placed the pod and every node it evaluated is accounted for
  (feasible or rejected; with a sample, the window it evaluated);
- every node a changed plugin rejected in the primary's cycle is rejected by
  the changed plugins again: the plugins after it never saw that node, so
  nothing is known of their verdicts there;
- no pod is nominated anywhere (Filter re-checks those nodes with the
  nominated pods' room held, for every Filter plugin);
- the changed plugins' PreFilter neither fails nor narrows and their Filter
  keeps every node the primary found feasible: the shared PreScore plugins
  computed over the feasible nodes, so their scores hold only for that set.

Profiles that differ in anything outside their plugins' decision hooks
(the sample size, transformer hooks, HTTP extenders) are never derived
(:func:`changed_plugins` answers None).
"""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt

from scheduler.api.cyclestate import CycleState
from scheduler.api.results import ScoreArray
from scheduler.api.status import Status
from scheduler.config.points import ExtensionPoint
from scheduler.config.resolve import ResolvedProfile
from scheduler.framework.batching import BatchCache, pod_signature
from scheduler.framework.cycle import ScheduleResult
from scheduler.framework.handle import Nominator
from scheduler.framework.profile import Profile
from scheduler.framework.runtime import Framework, PluginScores, ScoreOutcome
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

#: The extension points whose plugins take part in choosing a node.
DECISION_POINTS = (
    ExtensionPoint.PRE_FILTER,
    ExtensionPoint.FILTER,
    ExtensionPoint.PRE_SCORE,
    ExtensionPoint.SCORE,
)


def _points(profile: ResolvedProfile, name: str) -> frozenset[ExtensionPoint]:
    return frozenset(p for p in DECISION_POINTS if name in profile.names_at(p))


def _has_steps_outside_plugins(framework: Framework) -> bool:
    """Transformer hooks and HTTP extenders change a cycle beyond its plugins' verdicts."""
    return bool(
        framework.before_pre_filter_calls
        or framework.after_pre_filter_calls
        or framework.before_filter_calls
        or framework.before_score_calls
        or framework.extenders is not None
    )


def changed_plugins(primary: Profile, shadow: Profile) -> frozenset[str] | None:
    """The plugins whose part in a decision differs between the two profiles.

    A plugin differs when it runs at other decision points, with other args
    or another failure policy (Score weights are applied by the shadow, they
    do not make a plugin differ). None: the shadow's decisions cannot be
    derived from the primary's at all.
    """
    p, s = primary.resolved, shadow.resolved
    if (
        p.percentage_of_nodes_to_score != s.percentage_of_nodes_to_score
        or _has_steps_outside_plugins(primary.framework)
        or _has_steps_outside_plugins(shadow.framework)
    ):
        return None
    names = {e.name for profile in (p, s) for point in DECISION_POINTS for e in profile.at(point)}
    return frozenset(
        name
        for name in names
        if _points(p, name) != _points(s, name)
        or p.plugin_args.get(name) != s.plugin_args.get(name)
        or p.failure_policy.get(name) != s.failure_policy.get(name)
    )


def _whole_cycle(decided: ScheduleResult) -> bool:
    """Whether the primary placed the pod with every node it evaluated accounted for.

    Each evaluated node is feasible or charged to the plugin that rejected
    it. With ``percentageOfNodesToScore`` the evaluated nodes are a window
    from the sample's start: where the changed plugins judge that window as
    the primary's did, the shadow's search (from the same start) stops at the
    same node and scores the same sample.
    """
    outcome = decided.filter_outcome
    if decided.node is None or outcome is None:
        return False
    rejected = sum(len(r.rows) for r in decided.diagnosis.rejections)
    if decided.evaluated_nodes != len(outcome.feasible) + rejected:
        return False
    scores = decided.score_outcome
    # More than one feasible node: scored as they are (not sampled, nothing failed).
    return len(outcome.feasible) == 1 or (
        scores is not None
        and scores.status.is_success()
        and np.array_equal(scores.nodes.rows, outcome.feasible.rows)
    )


class Derivation:
    """How one shadow's decisions are derived from its primary's.

    ``changed`` (from :func:`changed_plugins`) are run through the shadow's
    framework restricted to them, with a batching cache of their own: for
    identical pods they, too, re-run only on the rows that changed.
    """

    def __init__(self, primary: Framework, shadow: Framework, changed: frozenset[str]) -> None:
        self.changed = changed
        self.view = shadow.restricted_to(changed)
        self.weights = {c.plugin: c.weight for c in shadow.score_calls}
        self.primary_weights = {c.plugin: c.weight for c in primary.score_calls}
        self.batch = BatchCache(self.view)

    def decide(
        self,
        decided: ScheduleResult,
        pod: PodInfo,
        table: NodeTable,
        *,
        rng: random.Random,
        nominator: Nominator | None,
    ) -> ScheduleResult | None:
        """The shadow's decision for ``pod``, or None when only its full cycle can tell.

        ``table`` is the snapshot the primary decided on; ``rng`` the
        shadow's tie-break generator.
        """
        if not _whole_cycle(decided):
            return None
        if self.changed and nominator is not None and nominator.nominated_pods():
            return None
        assert decided.filter_outcome is not None and decided.node is not None
        feasible = NodeSet(table, decided.filter_outcome.feasible.rows)
        # Nothing runs for a weights-only shadow: no plugin calls to sample or time.
        state = self.view.new_cycle_state() if self.changed else CycleState()
        signature: bytes | None = None
        if self.changed:
            pre, status = self.view.run_pre_filter(state, pod, table.all_nodes())
            if not status.is_success() or pre.node_names is not None:
                return None
            if self.batch.filters_are_local(state) and not pod.nominated_node_name:
                signature = pod_signature(pod)
            if not self._same_feasible(state, pod, decided, feasible, signature):
                return None  # the shared plugins' PreScore saw another set: scores do not hold
        if len(feasible) == 1:
            return _result(decided, decided.node, feasible.rows, decided.score_outcome)
        primary = decided.score_outcome
        assert primary is not None
        mine = self._changed_scores(state, pod, feasible, signature) if self.changed else {}
        if mine is None:
            return None
        # The primary's total, corrected plugin by plugin where the shadow differs:
        # a few vector operations however many plugins score.
        total = primary.total.copy()
        by_plugin = dict(primary.by_plugin)
        for plugin, got in primary.by_plugin.items():
            weight = self.weights.get(plugin)
            if plugin in self.changed or weight is None:
                total -= got.weighted
                del by_plugin[plugin]
            elif weight != self.primary_weights.get(plugin):
                weighted = got.normalized * weight
                total += weighted - got.weighted
                by_plugin[plugin] = PluginScores(got.raw, got.normalized, weighted)
        for plugin, got in mine.items():  # weighted with the shadow's weights already
            total += got.weighted
            by_plugin[plugin] = got
        tied_rows = feasible.rows[total == total.max()]
        pick = int(tied_rows[rng.randrange(len(tied_rows))])
        return _result(
            decided, table.names[pick], tied_rows, ScoreOutcome(primary.nodes, total, by_plugin)
        )

    def _same_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        decided: ScheduleResult,
        feasible: NodeSet,
        signature: bytes | None,
    ) -> bool:
        """Whether the changed Filters keep exactly the primary's feasible nodes.

        They must pass every node the primary found feasible, and reject again
        every node a changed plugin rejected in the primary's cycle.
        """
        table = feasible.table
        rejected = [r.rows for r in decided.diagnosis.rejections if r.plugin in self.changed]
        passed = np.zeros(table.size, dtype=np.bool_)
        if signature is not None:
            got = self.batch.feasible(signature, state, pod, table)
            if got is None:
                outcome = self.view.run_filter(state, pod, table.all_nodes())
                if not outcome.status.is_success():
                    return False
                self.batch.store_filter(signature, state, table, outcome.feasible)
                got = outcome.feasible
            elif isinstance(got, Status):
                self.batch.forget(signature)
                return False
            passed[got.rows] = True
        else:
            rows = np.concatenate([feasible.rows, *rejected]) if rejected else feasible.rows
            outcome = self.view.run_filter(state, pod, NodeSet(table, rows))
            if not outcome.status.is_success():
                return False
            passed[outcome.feasible.rows] = True
        return bool(passed[feasible.rows].all()) and not any(passed[r].any() for r in rejected)

    def _changed_scores(
        self, state: CycleState, pod: PodInfo, feasible: NodeSet, signature: bytes | None
    ) -> dict[str, PluginScores] | None:
        """The changed plugins' PreScore, Score and NormalizeScore over ``feasible``."""
        if not self.view.run_pre_score(state, pod, feasible).is_success():
            return None
        raw: dict[str, ScoreArray] | None = None
        if signature is not None and self.batch.scores_are_local(state):
            got = self.batch.raw_scores(signature, state, pod, feasible)
            if isinstance(got, Status):
                self.batch.forget(signature)
                return None
            raw = got
        scored = self.view.run_score(state, pod, feasible, raw)
        return scored.by_plugin if scored.status.is_success() else None


def _result(
    decided: ScheduleResult,
    node: str | None,
    tied_rows: npt.NDArray[np.int64],
    scores: ScoreOutcome | None,
) -> ScheduleResult:
    return ScheduleResult(
        decided.status,
        node,
        tied_rows,
        evaluated_nodes=decided.evaluated_nodes,
        feasible_nodes=decided.feasible_nodes,
        filter_outcome=decided.filter_outcome,
        score_outcome=scores,
        diagnosis=decided.diagnosis,
    )
