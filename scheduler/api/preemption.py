"""Preemption for plugins (API 2.1): kube's ``preemption.Interface`` and its evaluator.

kube-scheduler splits preemption in two: the framework's *evaluator* finds
the nodes where evicting lower-priority pods would make room (a dry run on
what-if copies of the cluster), picks one, evicts its victims and nominates
the pod; a PostFilter plugin decides only the policy, through kube's
``preemption.Interface``. A plugin gets the same split here::

    class MyPreemption(Plugin):
        api_version = "2.1"

        def __init__(self, args, handle):
            super().__init__(args, handle)
            self.preemption = handle.preemption(self)  # self implements PreemptionPolicy

        @hookimpl
        def pre_enqueue(self, pod):
            return self.preemption.admit(pod)

        @hookimpl
        def post_filter(self, state, pod, diagnosis):
            return self.preemption.preempt(state, pod, diagnosis)

The policy's ``select_victims_on_node`` is optional: without it the
framework's own victim selection (kube's ``SelectVictimsOnNode``, batched over
many nodes where the Filter plugins allow) is used, exactly as for
DefaultPreemption. A plugin that defines it is called once per candidate node
with a :class:`WhatIf` it may remove pods from and add pods to.

The pure helpers below are kube's preemption utilities (PDB accounting, the
importance order of victims, the choice among candidates), for policies that
select victims or candidates themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, Protocol, TypeVar

from scheduler.api.cyclestate import CycleState
from scheduler.api.results import Diagnosis, PostFilterResult
from scheduler.api.status import Status
from scheduler.api.views import Node, Pod
from scheduler.model.selectors import LabelSelector, SelectorError

#: The resource preemption reads disruption budgets from (``watches`` entry).
PDB_RESOURCE = ("policy", "v1", "poddisruptionbudgets")

MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

PodT = TypeVar("PodT", bound=Pod)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where the pod fits once ``victims`` (most important first) are gone.

    Victims may sit on other nodes than ``node`` (a policy that evicts whole
    groups); ``node`` is where the preemptor is nominated.
    """

    node: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int = 0


class Victims(NamedTuple):
    """What a policy's ``select_victims_on_node`` answers (kube's return triple)."""

    pods: list[Pod]
    num_pdb_violations: int
    status: Status


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

    def selects(self, pod: Pod) -> bool:
        """Same namespace and a selector that matches; nil or empty selectors match nothing."""
        if self.namespace != pod.namespace or self.selector.is_everything:
            return False
        return self.selector.matches(pod.labels)


class WhatIf(Protocol):
    """A what-if copy of the cluster for one preemptor: edits never reach the real state.

    Removing and adding pods runs the PreFilter AddPod/RemovePod extensions
    of the profile on :attr:`state` (a clone of the preemptor's cycle state),
    as kube's dry run does; :meth:`filter` then runs the Filter plugins on it,
    counting the room equal- or higher-priority nominated pods hold.
    Everything is reverted when the what-if ends.
    """

    @property
    def pod(self) -> Pod:
        """The preemptor."""

    @property
    def state(self) -> CycleState:
        """The preemptor's cycle state, as the extensions updated it (do not keep it)."""

    def node(self, name: str) -> Node:
        """Node ``name`` as it stands in the what-if (its pods, requested)."""

    def node_of(self, pod: Pod) -> str | None:
        """Where ``pod`` is in the what-if (None: on no node)."""

    def remove_pod(self, pod: Pod) -> Status:
        """Take ``pod`` off its node; a failed RemovePod extension's Error is returned."""

    def add_pod(self, pod: Pod, node_name: str) -> Status:
        """Put ``pod`` on ``node_name`` (moving it if it is elsewhere); runs AddPod."""

    def filter(self, node_name: str, pod: Pod | None = None) -> Status:
        """Filter ``pod`` (default: the preemptor) on one node of the what-if.

        For another pod, its PreFilter runs first on the what-if (and its
        failure is returned), so pods of a group can be placed one by one.
        """

    def feasible_nodes(self, pod: Pod | None = None) -> list[str]:
        """Every node where ``pod`` (default: the preemptor) passes Filter in the what-if."""


class PreemptionPolicy(Protocol):
    """kube's ``preemption.Interface``: what a preempting plugin decides.

    Optional methods (define them only to change kube's default):

    - ``select_victims_on_node(state, pod, node, what_if, budgets) -> Victims``:
      the victims on one candidate node. ``node`` is the node as it stands
      in ``what_if`` (read-only); remove and add pods through ``what_if``
      and judge with ``what_if.filter(node.name)``. Absent: the framework's
      batched selection (kube's, fast).
    - ``ordered_score_funcs(candidates) -> list[Callable[[Candidate], int]] | None``:
      kube's ``OrderedScoreFuncs``: higher scores win, each function breaks
      the previous one's ties, then the first candidate. None or absent:
      kube's ``pickOneNodeForPreemption`` criteria.
    - ``select_candidate(candidates, now_ns) -> Candidate``: the whole choice
      (kube's ``SelectCandidate``), overriding both of the above.
    """

    def pod_eligible_to_preempt_others(self, pod: Pod, diagnosis: Diagnosis) -> tuple[bool, str]:
        """Whether ``pod`` may preempt at all, and the reason when not."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Where in the potential nodes the dry run starts, and how many candidates it wants."""


class Preemption(Protocol):
    """The evaluator a plugin gets from ``handle.preemption(policy)`` (kube's ``Evaluator``)."""

    def preempt(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> PostFilterResult | Awaitable[PostFilterResult]:
        """kube's ``Preempt``: candidates, dry run, choice, eviction (in the background)
        and the node to nominate (``nominated_node_name``); Unschedulable and why if none.

        When an HTTP extender with a ``preemptVerb`` is interested in the pod,
        the answer is an awaitable (the extenders are called between the dry
        run and the choice): return it from ``post_filter`` as it is, the
        framework awaits it.
        """

    def admit(self, pod: Pod) -> Status | None:
        """PreEnqueue: hold ``pod`` while its victims are being deleted (None lets it in)."""

    def is_preempting(self, pod: Pod) -> bool:
        """Whether the victims of ``pod``'s last preemption are still being deleted."""

    def disruption_budgets(self) -> list[DisruptionBudget]:
        """The PodDisruptionBudgets of the cluster, as preemption reads them."""

    def potential_nodes(self, diagnosis: Diagnosis) -> list[str]:
        """Nodes where preemption might help (rejected only as Unschedulable)."""

    def what_if(self, state: CycleState, pod: Pod) -> AbstractContextManager[WhatIf]:
        """A what-if over every node for the preemptor ``pod`` (reverted on exit)."""

    def pod(self, obj: Mapping[str, Any]) -> Pod:
        """A pod API object (e.g. a group's pending member from ``handle.store``) parsed
        as the scheduler parses pods, to place it in a what-if; a ValueError names a
        pod that cannot be scheduled as written."""

    def evict(self, pod: Pod, candidate: Candidate) -> None:
        """Carry out a preemption the plugin decided itself: evict ``candidate.victims``
        (in the background; ``admit`` holds ``pod`` meanwhile) and clear lower-priority
        nominations on ``candidate.node``. Return ``PostFilterResult(Status.success(),
        candidate.node)`` from PostFilter to nominate the pod there."""


# -- kube's pure helpers --------------------------------------------------------------------

# kube adds MaxInt32 + 1 to every victim priority before summing, so that
# negative priorities do not make more victims look cheaper.
_PRIORITY_OFFSET = 2**31
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: A start time later than any (pods not started yet sort last among their priority).
NEVER = 2**63 - 1
# Per-pod memo in ``Pod.cache``: the parsed start time.
_START_KEY = "DefaultPreemption/startTime"


def start_time_ns(pod: Pod, now_ns: int) -> int:
    """``status.startTime`` in ns since the epoch; pods not started yet count as ``now``."""
    cache = pod.cache
    if _START_KEY in cache:
        parsed: int | None = cache[_START_KEY]
    else:
        parsed = cache[_START_KEY] = _parse_start_time(pod)
    return now_ns if parsed is None else parsed


def _parse_start_time(pod: Pod) -> int | None:
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


def importance_key(now_ns: int) -> Callable[[Pod], tuple[int, int]]:
    """Sort key putting more important pods first: higher priority, then earlier start."""

    def key(pod: Pod) -> tuple[int, int]:
        return (-pod.priority, start_time_ns(pod, now_ns))

    return key


def filter_pods_with_pdb_violation(
    pods: Sequence[PodT], budgets: Sequence[DisruptionBudget]
) -> tuple[list[PodT], list[PodT]]:
    """Split ``pods`` (order kept) into those whose eviction would violate a budget and the rest.

    Each budget's ``disruptionsAllowed`` is spent by the pods it selects, in
    order; a pod already listed in the budget's ``disruptedPods`` is not
    counted again (the API server has processed its eviction).
    """
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[PodT] = []
    non_violating: list[PodT] = []
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


def earliest_start_of_most_important(victims: Sequence[Pod], now_ns: int) -> int:
    """The earliest start time among the highest-priority victims (kube's helper)."""
    top = max(p.priority for p in victims)
    return min(start_time_ns(p, now_ns) for p in victims if p.priority == top)


def default_score_funcs(now_ns: int) -> list[Callable[[Candidate], int]]:
    """kube's ``pickOneNodeForPreemption`` criteria, as ordered score functions: fewest
    PDB violations, lowest highest-victim priority, smallest priority sum, fewest
    victims, latest start among the highest-priority victims."""
    return [
        lambda c: -c.num_pdb_violations,
        lambda c: -max(p.priority for p in c.victims),
        lambda c: -sum(p.priority + _PRIORITY_OFFSET for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_most_important(c.victims, now_ns),
    ]


def pick_one_node(
    candidates: Sequence[Candidate],
    now_ns: int,
    score_funcs: Sequence[Callable[[Candidate], int]] | None = None,
) -> Candidate:
    """kube's ``pickOneNodeForPreemption``: each function only breaks the previous one's ties
    (``score_funcs`` default: :func:`default_score_funcs`); the first candidate last."""
    criteria = default_score_funcs(now_ns) if score_funcs is None else score_funcs
    remaining = list(candidates)
    for score in criteria:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def terminating_by_preemption(pod: Pod) -> bool:
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
