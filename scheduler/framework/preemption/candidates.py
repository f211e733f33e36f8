"""What preemption compares: candidates, disruption budgets, victims' importance.

kube's ``preemption`` package helpers (``pickOneNodeForPreemption``,
``filterPodsWithPDBViolation``, ``calculateNumCandidates`` ...): pure
functions over pods and candidates, shared by the evaluator, the dry run and
the plugin that picks a node.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api.preemption import (
    DISRUPTION_TARGET,
    MSG_NO_VICTIMS,
    NEVER,
    REASON_PREEMPTION_BY_SCHEDULER,
    Candidate,
    DisruptionBudget,
    earliest_start_of_most_important,
    filter_pods_with_pdb_violation,
    importance_key,
    pick_one_node,
    start_time_ns,
    terminating_by_preemption,
)
from scheduler.api.status import Status
from scheduler.state.pod import PodInfo

__all__ = [
    "DISRUPTION_TARGET",
    "MSG_NOT_HELPFUL",
    "MSG_NO_VICTIMS",
    "NEVER",
    "REASON_PREEMPTION_BY_SCHEDULER",
    "Candidate",
    "DisruptionBudget",
    "VictimsResult",
    "calculate_num_candidates",
    "earliest_start_of_most_important",
    "filter_pods_with_pdb_violation",
    "fit_error_message",
    "importance_key",
    "pick_one_node",
    "start_time_ns",
    "terminating_by_preemption",
]

MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"

# What selecting victims on one node gives: victims, how many violate a budget, status.
VictimsResult = tuple[list[PodInfo], int, Status]


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """How many candidates the dry run looks for (kube's ``calculateNumCandidates``)."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


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
