"""Preemption units: a running gang is one victim; any other pod is one on its own.

kube 1.36's workload-aware preemption (``PodGroupEvaluator``) groups the
running pods of a PodGroup into one *victim*: evicting it evicts every one of
its pods, on whichever nodes they run, and it has the group's priority. This
module builds those units for both gang APIs (:mod:`scheduler.model.gangs`)
and orders them as kube's ``moreImportantVictim`` does.

A gang whose group object is missing is still a unit (its pods carry the
group's name, so a gang scheduler placed them together): evicting part of it
is never safe. Its priority is then its most important member's; so is a
Coscheduling PodGroup's, which has no priority of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api import Handle, ObjectStore, Pod
from scheduler.api.preemption import DisruptionBudget, start_time_ns
from scheduler.model.gangs import (
    DISRUPTION_MODE_POD,
    GangError,
    GangPolicy,
    GangRef,
    gang_of,
    gang_policy,
)


@dataclass(slots=True)
class Unit:
    """Pods evicted together: one running gang, or one pod."""

    key: str  # the gang's "group/namespace/name", or the pod's "namespace/name"
    gang: GangRef | None
    pods: list[Pod] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)  # where each pod runs
    priority: int = 0
    #: How many of its pods would violate a PodDisruptionBudget (set when split).
    violations: int = 0

    @property
    def is_gang(self) -> bool:
        return self.gang is not None


def importance_key(now_ns: int) -> Callable[[Unit], tuple[int, int, int, int]]:
    """kube's ``moreImportantVictim`` as a sort key (most important first): higher
    priority; a gang before a single pod; single pods by earlier start; gangs by more
    members, then earlier start of their earliest member."""

    def key(unit: Unit) -> tuple[int, int, int, int]:
        earliest = min(start_time_ns(p, now_ns) for p in unit.pods)
        if unit.is_gang:
            return (-unit.priority, 0, -len(unit.pods), earliest)
        return (-unit.priority, 1, 0, earliest)

    return key


def split_by_budgets(
    units: Sequence[Unit], budgets: Sequence[DisruptionBudget]
) -> tuple[list[Unit], list[Unit]]:
    """Units whose eviction would violate a budget, and the others (order kept).

    As kube's ``filterVictimsWithPDBViolation`` for units, each budget's
    ``disruptionsAllowed`` is spent pod by pod in unit order; a unit violates
    if any of its pods does, and :attr:`Unit.violations` counts them.
    """
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[Unit] = []
    fine: list[Unit] = []
    for unit in units:
        unit.violations = 0
        for pod in unit.pods:
            if not pod.labels:
                continue
            violated = False
            for i, budget in enumerate(budgets):
                if not budget.selects(pod) or pod.name in budget.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
            unit.violations += violated
        (violating if unit.violations else fine).append(unit)
    return violating, fine


class Gangs:
    """What the plugin knows of gangs: their group objects, read through stores asked
    for on first use (a cluster using one gang API need not serve the other)."""

    def __init__(self, handle: Handle, *, respect_disruption_mode: bool = False) -> None:
        self._handle = handle
        self._respect = respect_disruption_mode
        self._stores: dict[tuple[str, str, str], ObjectStore] = {}
        self._parsed: dict[GangRef, tuple[Mapping[str, Any], GangPolicy | GangError]] = {}

    def store(self, ref: GangRef) -> ObjectStore:
        store = self._stores.get(ref.resource)
        if store is None:
            store = self._stores[ref.resource] = self._handle.store(*ref.resource)
        return store

    def policy(self, ref: GangRef) -> GangPolicy | None:
        """The group's policy; None while its object does not exist. Raises GangError."""
        obj = self.store(ref).get(ref.namespace, ref.name)
        if obj is None:
            self._parsed.pop(ref, None)
            return None
        cached = self._parsed.get(ref)
        if cached is not None and cached[0] is obj:
            parsed = cached[1]
        else:
            try:
                parsed = gang_policy(ref, obj)
            except GangError as err:
                parsed = err
            self._parsed[ref] = (obj, parsed)
        if isinstance(parsed, GangError):
            raise parsed
        return parsed

    def unit_gang(self, pod: Pod) -> GangRef | None:
        """The gang ``pod`` is evicted with, or None where it goes alone: no group, a
        group that is no gang (``minMember``/``minCount`` 1, a basic policy), or with
        ``respect_disruption_mode`` a native group whose disruptionMode is 'Pod'."""
        ref = gang_of(pod.raw)
        if ref is None:
            return None
        try:
            policy = self.policy(ref)
        except GangError:
            return ref  # unreadable: never split it
        if policy is None:
            return ref
        if not policy.is_gang or policy.min_count <= 1:
            return None
        if self._respect and policy.disruption_mode == DISRUPTION_MODE_POD:
            return None
        return ref

    def unit_priority(self, ref: GangRef, members: Iterable[Pod]) -> int:
        """The native group's ``spec.priority``, else its most important member's."""
        try:
            policy = self.policy(ref)
        except GangError:
            policy = None
        if policy is not None and policy.priority is not None:
            return policy.priority
        return max((p.priority for p in members), default=0)


def build_units(
    gangs: Gangs,
    placed: Iterable[tuple[str, Pod]],
    *,
    below: int,
    exclude: GangRef | None = None,
) -> list[Unit]:
    """The units of the ``(node, pod)`` pairs given whose priority is below ``below``;
    the pods of ``exclude`` (the preemptor's own gang) are never victims."""
    units: dict[str, Unit] = {}
    for node, pod in placed:
        ref = gangs.unit_gang(pod)
        if ref is not None and ref == exclude:
            continue
        key = f"{ref.api_group}/{ref.key}" if ref is not None else pod.key
        unit = units.get(key)
        if unit is None:
            unit = units[key] = Unit(key, ref)
        unit.pods.append(pod)
        unit.nodes.append(node)
    out = []
    for unit in units.values():
        gang = unit.gang
        unit.priority = (
            gangs.unit_priority(gang, unit.pods) if gang is not None else unit.pods[0].priority
        )
        if unit.priority < below:
            out.append(unit)
    return out
