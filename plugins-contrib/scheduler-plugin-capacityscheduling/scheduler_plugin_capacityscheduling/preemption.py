"""CapacityScheduling's preemption policy: which pods may make room, quota by quota.

The framework's evaluator (``handle.preemption``) does what kube's does:
candidate nodes, a dry run on what-if copies, the choice of a node, the
evictions and the nomination. This module is the policy scheduler-plugins'
``preemptor`` gives it:

- **Victims on a node** (:func:`select_victims_on_node`). If the preemptor's
  quota, with the preemptor and the nominated pods ahead of it, is above its
  min, only its own quota's lower-priority pods may go: it is spending its
  own share. Otherwise its min is lent out, and pods of *other* quotas that
  use more than their min may go, whatever their priority (reclaim). Each
  removal updates the what-if's quota snapshot through the PreFilter
  extensions, so a lending quota is cut back to its min and no further. A
  pod outside any quota may preempt only lower-priority pods outside any
  quota. Then kube's reprieve: most important first, PDB-violating
  victims first, each put back if the preemptor still fits and no quota
  goes above its max or the total min.
- **Eligibility** (:func:`eligible`). ``preemptionPolicy: Never`` never
  preempts; a pod whose nominated node still has a terminating pod it could
  use waits for it instead of preempting more.
- **Candidates**: every potential node is dry-run (scheduler-plugins' offset
  0, all nodes), and the choice among them is kube's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from scheduler.api import Code, CycleState, Diagnosis, Handle, Node, Pod, Status
from scheduler.api.preemption import (
    DisruptionBudget,
    Victims,
    WhatIf,
    filter_pods_with_pdb_violation,
    importance_key,
)

from scheduler_plugin_capacityscheduling.quota import QuotaSet

MSG_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_NO_STATE = "not eligible due to failed to read from cycleState"
MSG_QUOTA_EXCEEDED = "global quota max exceeded"


def _node_code(diagnosis: Diagnosis, node_name: str) -> Code:
    """The Filter verdict's code for one node; after a PreFilter rejection, its code
    (kube gives it to every node), else absent nodes are ones preemption cannot help."""
    verdict = diagnosis.node_verdicts.get(node_name)
    if verdict is not None:
        return verdict.code
    if not diagnosis.rejections and diagnosis.pre_filter_message:
        return diagnosis.pre_filter_code or Code.UNSCHEDULABLE
    return Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def eligible(
    handle: Handle,
    pod: Pod,
    diagnosis: Diagnosis,
    quotas: QuotaSet | None,
    in_quota: dict[str, int] | None,
) -> tuple[bool, str]:
    """scheduler-plugins' ``PodEligibleToPreemptOthers``: (eligible, why not).

    ``quotas`` and ``in_quota`` are what PreFilter stored for the cycle (None
    when it did not run).
    """
    if (pod.raw.get("spec") or {}).get("preemptionPolicy") == "Never":
        return False, MSG_PREEMPT_NEVER
    if quotas is None or in_quota is None:
        return False, MSG_NO_STATE
    nominated = pod.nominated_node_name
    if not nominated:
        return True, ""
    if _node_code(diagnosis, nominated) is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return True, ""
    nodes = handle.nodes()
    row = nodes.index_of(nominated)
    if row is None:
        return True, ""
    preemptor_quota = quotas.get(pod.namespace)
    for other in nodes.node(row).pods:
        if not other.deleting:
            continue
        info = quotas.get(other.namespace)
        if preemptor_quota is not None:
            if info is None:
                continue
            if other.namespace == pod.namespace and other.priority < pod.priority:
                return False, MSG_TERMINATING
            if (
                other.namespace != pod.namespace
                and not preemptor_quota.used_over_min_with(in_quota)
                and info.used_over_min()
            ):
                return False, MSG_TERMINATING
        elif info is None and other.priority < pod.priority:
            return False, MSG_TERMINATING
    return True, ""


def select_victims_on_node(
    state: CycleState,
    pod: Pod,
    node: Node,
    what_if: WhatIf,
    budgets: Sequence[DisruptionBudget],
    quotas: QuotaSet,
    request: dict[str, int],
    in_quota: dict[str, int],
    total: dict[str, int],
) -> Victims:
    """The victims on ``node`` (see the module docstring); ``quotas`` is the what-if's
    snapshot, which ``what_if.remove_pod``/``add_pod`` keep up to date."""
    now_ns = time.time_ns()
    by_importance = importance_key(now_ns)
    preemptor_quota = quotas.get(pod.namespace)
    # Least important first: the removal stops taking a lending quota's pods at its min.
    pods = sorted(node.pods, key=by_importance, reverse=True)
    potential: list[Pod] = []

    def remove(victim: Pod) -> Status:
        potential.append(victim)
        return what_if.remove_pod(victim)

    if preemptor_quota is not None:
        above_min = preemptor_quota.used_over_min_with(in_quota)
        for other in pods:
            info = quotas.get(other.namespace)
            if info is None:
                continue
            if above_min:
                take = other.namespace == pod.namespace and other.priority < pod.priority
            else:
                take = other.namespace != pod.namespace and info.used_over_min()
            if take and not (status := remove(other)).is_success():
                return Victims([], 0, status)
    else:
        for other in pods:
            if other.namespace in quotas or other.priority >= pod.priority:
                continue
            if not (status := remove(other)).is_success():
                return Victims([], 0, status)

    if not potential:
        return Victims(
            [],
            0,
            Status.unresolvable(
                f"No victims found on node {node.name} for preemptor pod {pod.name}"
            ),
        )
    status = what_if.filter(node.name)
    if not status.is_success():
        return Victims([], 0, status)
    if preemptor_quota is not None and (
        preemptor_quota.used_over_max_with(request) or quotas.aggregated_used_over_min_with(request)
    ):
        return Victims([], 0, Status.unschedulable(MSG_QUOTA_EXCEEDED))

    potential.sort(key=by_importance)
    violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
    victims: list[Pod] = []
    violations = 0
    for group, counts in ((violating, 1), (non_violating, 0)):
        for candidate in group:
            status = what_if.add_pod(candidate, node.name)
            if not status.is_success():
                return Victims([], 0, status)
            fits = what_if.filter(node.name).is_success()
            over = preemptor_quota is not None and (
                preemptor_quota.used_over_max_with(in_quota)
                or quotas.aggregated_used_over_min_with(total)
            )
            if fits and not over:
                continue  # reprieved
            status = what_if.remove_pod(candidate)
            if not status.is_success():
                return Victims([], 0, status)
            victims.append(candidate)
            violations += counts
    return Victims(victims, violations, Status.success())
