"""What preemption compares: candidates, disruption budgets, victims' importance.

kube's ``preemption`` package helpers (``pickOneNodeForPreemption``,
``filterPodsWithPDBViolation``, ``calculateNumCandidates`` ...): pure
functions over pods and candidates, shared by the evaluator, the dry run and
the plugin that picks a node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.api.status import Status
from scheduler.model.selectors import LabelSelector, SelectorError
from scheduler.state.pod import PodInfo

MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

# kube adds MaxInt32 + 1 to every victim priority before summing, so that
# negative priorities do not make more victims look cheaper.
_PRIORITY_OFFSET = 2**31
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NEVER = 2**63 - 1  # a start time later than any

# Per-pod memo in ``PodInfo.cache``: the parsed start time.
_START_KEY = "DefaultPreemption/startTime"

# What selecting victims on one node gives: victims, how many violate a budget, status.
VictimsResult = tuple[list[PodInfo], int, Status]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where the pod fits once ``victims`` (most important first) are gone."""

    node: str
    victims: tuple[PodInfo, ...]
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """The parts of a policy/v1 PodDisruptionBudget that preemption reads."""

    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DisruptionBudget:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        try:
            selector = LabelSelector.from_dict(spec.get("selector"), "spec.selector")
        except SelectorError:
            # An invalid selector matches no pod (kube skips the budget).
            selector = LabelSelector.nothing()
        allowed = status.get("disruptionsAllowed")
        return cls(
            namespace=str(meta.get("namespace") or ""),
            selector=selector,
            disruptions_allowed=allowed if isinstance(allowed, int) else 0,
            disrupted_pods=frozenset(status.get("disruptedPods") or {}),
        )

    def selects(self, pod: PodInfo) -> bool:
        """Same namespace and a selector that matches; nil or empty selectors match nothing."""
        if self.namespace != pod.namespace or self.selector.is_everything:
            return False
        return self.selector.matches(pod.labels)


# -- pure helpers (kube's util functions) -------------------------------------------------


def start_time_ns(pod: PodInfo, now_ns: int) -> int:
    """``status.startTime`` in ns since the epoch; pods not started yet count as ``now``."""
    cache = pod.cache
    if _START_KEY in cache:
        parsed: int | None = cache[_START_KEY]
    else:
        parsed = cache[_START_KEY] = _parse_start_time(pod)
    return now_ns if parsed is None else parsed


def _parse_start_time(pod: PodInfo) -> int | None:
    value = (pod.raw.get("status") or {}).get("startTime")
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return (parsed - _EPOCH) // timedelta(microseconds=1) * 1000


def importance_key(now_ns: int) -> Callable[[PodInfo], tuple[int, int]]:
    """Sort key putting more important pods first: higher priority, then earlier start."""

    def key(pod: PodInfo) -> tuple[int, int]:
        return (-pod.priority, start_time_ns(pod, now_ns))

    return key


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], budgets: Sequence[DisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` (order kept) into those whose eviction would violate a budget and the rest.

    Each budget's ``disruptionsAllowed`` is spent by the pods it selects, in
    order; a pod already listed in the budget's ``disruptedPods`` is not
    counted again (the API server has processed its eviction).
    """
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:  # a pod without labels matches no budget
            for i, budget in enumerate(budgets):
                if not budget.selects(pod) or pod.name in budget.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """How many candidates the dry run looks for (kube's ``calculateNumCandidates``)."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


def earliest_start_of_most_important(victims: Sequence[PodInfo], now_ns: int) -> int:
    """The earliest start time among the highest-priority victims (kube's helper)."""
    top = max(p.priority for p in victims)
    return min(start_time_ns(p, now_ns) for p in victims if p.priority == top)


def pick_one_node(candidates: Sequence[Candidate], now_ns: int) -> Candidate:
    """kube's ``pickOneNodeForPreemption``: each criterion only breaks the previous one's ties."""
    criteria: tuple[Callable[[Candidate], int], ...] = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + _PRIORITY_OFFSET for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_most_important(c.victims, now_ns),
    )
    remaining = list(candidates)
    for score in criteria:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def terminating_by_preemption(pod: PodInfo) -> bool:
    """Deletion started and the first DisruptionTarget condition says a scheduler preempted it."""
    if not pod.deleting:
        return False
    for condition in (pod.raw.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
            )
    return False


def fit_error_message(total_nodes: int, statuses: Mapping[str, Status]) -> str:
    """kube's FitError text over the dry run's per-node statuses.

    Nodes without a status (never tried: preemption cannot help there) count
    as "Preemption is not helpful for scheduling".
    """
    counts: dict[str, int] = {}
    for status in statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent = total_nodes - len(statuses)
    if absent > 0:
        counts[MSG_NOT_HELPFUL] = counts.get(MSG_NOT_HELPFUL, 0) + absent
    text = f"0/{total_nodes} nodes are available:"
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    if parts:
        text += f" {', '.join(parts)}."
    return text
