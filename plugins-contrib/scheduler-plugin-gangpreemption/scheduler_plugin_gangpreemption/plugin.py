"""GangPreemption: a PostFilter that preempts with gangs as units.

Used in a profile in place of DefaultPreemption. Gangs are pods of one
Coscheduling PodGroup or native Workload-API PodGroup
(:mod:`scheduler.model.gangs`) whose minimum (``minMember``/``minCount``)
is above 1.

- **Victims.** A running gang is evicted whole or not at all: when one of its
  pods would be a victim, every running member (on any node) is, and the
  candidate's cost (PDB violations, priorities, victim count) counts them
  all. Its priority is the native PodGroup's ``spec.priority``, else its most
  important member's, so a gang is only a victim of pods of higher priority
  than every one of its members.
- **A pod in no gang** (or in a group that is no gang) preempts as with
  DefaultPreemption (kube's policy and dry run through
  ``handle.preemption``), the victims on each candidate node chosen by
  units: :meth:`GangPreemption.select_victims_on_node`.
- **A gang member** preempts for its whole gang or not at all, as kube 1.36's
  workload-aware preemption (``PodGroupEvaluator``): on a what-if of the
  cluster, every lower-priority unit is removed and every pending member of
  the gang placed (members waiting at Permit are placed again); if they do
  not all fit, nothing is evicted. Otherwise units are put back, the most
  important first (budget-violating ones before the others), each staying
  only if all the members still fit. The rest are evicted, the preemptor is
  nominated to the node it was placed on, and the gang's other members are
  held at PreEnqueue until the victims are gone (or ``preemptionHoldSeconds``).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel
from scheduler.api import (
    Code,
    CycleState,
    Diagnosis,
    Handle,
    Node,
    Plugin,
    Pod,
    PostFilterResult,
    Status,
    coerce_args,
    hookimpl,
)
from scheduler.api.preemption import (
    MSG_NO_VICTIMS,
    PDB_RESOURCE,
    Candidate,
    DisruptionBudget,
    Victims,
    WhatIf,
    importance_key,
    terminating_by_preemption,
)
from scheduler.model.gangs import GangError, GangPolicy, GangRef, gang_of

from scheduler_plugin_gangpreemption.args import GangPreemptionArgs
from scheduler_plugin_gangpreemption.units import Gangs, Unit, build_units, split_by_budgets
from scheduler_plugin_gangpreemption.units import importance_key as unit_importance

NAME = "GangPreemption"
PODS = ("", "v1", "pods")
MESSAGE_PREFIX = "preemption: "
MSG_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_GANG_IN_PROGRESS = "waiting for the preemption for this pod group to be finished"
MSG_NO_GANG_VICTIMS = "No preemption victims found for incoming pod group"
_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(slots=True)
class _InFlight:
    """A gang's preemption whose victims are still going."""

    victims: list[tuple[str, str, str]]  # namespace, name, uid
    until: float  # monotonic deadline of the hold


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _never_preempts(obj: Mapping[str, Any]) -> bool:
    return _spec(obj).get("preemptionPolicy") == "Never"


class GangPreemption(Plugin):
    """Preemption that never evicts part of a running gang and preempts for whole gangs."""

    api_version: ClassVar[str] = "2.1"
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel] | None] = GangPreemptionArgs
    # The gangs' group objects are read through stores asked for when a pod of
    # that API is first seen: a cluster need not serve both gang APIs.
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (PDB_RESOURCE,)

    def __init__(self, args: Any, handle: Handle) -> None:
        parsed = coerce_args(GangPreemptionArgs, args)
        super().__init__(parsed, handle)
        self.args: GangPreemptionArgs = parsed
        self.preemption = handle.preemption(self)
        self.gangs = Gangs(handle, respect_disruption_mode=parsed.respect_disruption_mode)
        self._pods = handle.store(*PODS)
        #: Random offset into the candidate nodes (kube's); replaceable in tests.
        self.offset_rand: Callable[[int], int] = random.Random().randrange
        self.clock_ns: Callable[[], int] = time.time_ns
        self.clock: Callable[[], float] = time.monotonic
        self._in_flight: dict[GangRef, _InFlight] = {}
        # Gang -> its placed pods, built once per PostFilter call when needed.
        self._placed: dict[GangRef, list[tuple[str, Pod]]] | None = None

    # -- hooks ------------------------------------------------------------------------

    @hookimpl
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Hold a preemptor while its victims go, and its gang's other members too."""
        status = self.preemption.admit(pod)
        if status is not None:
            return status
        ref = gang_of(pod.raw)
        if ref is not None and self._preempting(ref):
            return Status.unresolvable(MSG_GANG_IN_PROGRESS)
        return None

    @hookimpl
    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> PostFilterResult:
        ref = gang_of(pod.raw)
        policy: GangPolicy | None = None
        if ref is not None:
            try:
                policy = self.gangs.policy(ref)
            except GangError as err:
                return _result(Status.unschedulable(str(err)))
            if policy is None:
                self.handle.record_preemption_attempt()
                return _result(Status.unschedulable(f"{ref} not found"))
        self._placed = None
        try:
            if ref is not None and policy is not None and policy.is_gang and policy.min_count > 1:
                self.handle.record_preemption_attempt()
                return _result_of(self._preempt_for_gang(state, pod, diagnosis, ref, policy))
            return _result_of(self.preemption.preempt(state, pod, diagnosis))
        finally:
            self._placed = None

    # -- the policy for single pods (kube's preemption.Interface) ---------------------

    def pod_eligible_to_preempt_others(self, pod: Pod, diagnosis: Diagnosis) -> tuple[bool, str]:
        """kube's DefaultPreemption rule (``PodEligibleToPreemptOthers``)."""
        if _never_preempts(pod.raw):
            return False, MSG_PREEMPT_NEVER
        nominated = pod.nominated_node_name
        if not nominated:
            return True, ""
        verdict = diagnosis.node_verdicts.get(nominated)
        if verdict is not None and verdict.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        nodes = self.handle.nodes()
        i = nodes.index_of(nominated)
        if i is not None:
            for other in nodes.node(i).pods:
                if other.priority < pod.priority and terminating_by_preemption(other):
                    return False, MSG_TERMINATING
        return True, ""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """kube's: a random start, and ``max(n * percentage / 100, absolute)`` (at most n)."""
        wanted = num_nodes * self.args.min_candidate_nodes_percentage // 100
        wanted = min(max(wanted, self.args.min_candidate_nodes_absolute), num_nodes)
        return self.offset_rand(num_nodes), wanted

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: Pod,
        node: Node,
        what_if: WhatIf,
        budgets: Sequence[DisruptionBudget],
    ) -> Victims:
        """kube's ``SelectVictimsOnNode`` by units: every lower-priority unit with a pod
        on ``node`` goes (a gang's pods on every node); if the pod then fits, units come
        back one by one, the most important first (budget-violating ones before the
        others), each staying if the pod still fits."""
        pairs: list[tuple[str, Pod]] = []
        seen: set[GangRef] = set()
        for victim in list(node.pods):
            if victim.priority >= pod.priority and gang_of(victim.raw) is None:
                continue  # a gang member's unit may rank below it: decided by unit
            ref = self.gangs.unit_gang(victim)
            if ref is None:
                pairs.append((node.name, victim))
            elif ref not in seen:
                seen.add(ref)
                pairs.extend(self._gang_pods(ref))
        units = build_units(self.gangs, pairs, below=pod.priority, exclude=gang_of(pod.raw))
        if not units:
            return Victims([], 0, Status.unresolvable(MSG_NO_VICTIMS))
        status = _remove_units(what_if, units)
        if not status.is_success():
            return Victims([], 0, status)
        status = what_if.filter(node.name)
        if not status.is_success():
            return Victims([], 0, status)
        units.sort(key=unit_importance(self.clock_ns()))
        violating, fine = split_by_budgets(units, budgets)
        victims: list[Pod] = []
        violations = 0
        for unit in (*violating, *fine):
            status = _add_unit(what_if, unit)
            if not status.is_success():
                return Victims([], 0, status)
            if not what_if.filter(node.name).is_success():
                status = _remove_units(what_if, [unit])
                if not status.is_success():
                    return Victims([], 0, status)
                victims.extend(unit.pods)
                violations += unit.violations
        return Victims(victims, violations, Status.success())

    # -- a gang preempting for all its members ----------------------------------------

    def _preempt_for_gang(
        self,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        ref: GangRef,
        policy: GangPolicy,
    ) -> PostFilterResult:
        if self._preempting(ref) or self.preemption.is_preempting(pod):
            return PostFilterResult(Status.unschedulable(MSG_GANG_IN_PROGRESS))
        members = self._members(ref)
        if _never_preempts(pod.raw) or any(_never_preempts(m) for m in members):
            return PostFilterResult(Status.unschedulable(MSG_PREEMPT_NEVER))
        count = len({_meta(m).get("name") for m in members} | {pod.name})
        if count < policy.min_count:
            return PostFilterResult(
                Status.unschedulable(
                    f"{ref} has {count} of its minimum {policy.min_count} pods: "
                    "not preempting for it"
                )
            )
        total = len(self.handle.nodes())
        if not self.preemption.potential_nodes(diagnosis):
            return PostFilterResult(
                Status.unschedulable(
                    f"0/{total} nodes are available: {total} Preemption is not helpful "
                    "for scheduling."
                )
            )
        try:
            pending = [pod] + [
                self.preemption.pod(m)
                for m in sorted(members, key=lambda m: str(_meta(m).get("name")))
                if not _spec(m).get("nodeName") and _meta(m).get("name") != pod.name
            ]
        except ValueError as err:
            return PostFilterResult(Status.unschedulable(f"{ref}: {err}"))
        priority = policy.priority if policy.priority is not None else pod.priority
        decided = self._select_gang_victims(state, pod, ref, pending, priority)
        if isinstance(decided, Status):
            return PostFilterResult(decided)
        candidate = decided
        self.preemption.evict(pod, candidate)
        self._hold(ref, candidate.victims)
        return PostFilterResult(Status.success(), candidate.node)

    def _select_gang_victims(
        self,
        state: CycleState,
        pod: Pod,
        ref: GangRef,
        pending: Sequence[Pod],
        priority: int,
    ) -> Candidate | Status:
        """kube's ``selectVictimsOnDomain`` over the whole cluster, with the gang's
        pending members as the pods that must all fit."""
        with self.preemption.what_if(state, pod) as what_if:
            for member in pending[1:]:  # waiting at Permit (in the cache): placed again
                if what_if.node_of(member) is not None:
                    status = what_if.remove_pod(member)
                    if not status.is_success():
                        return status
            placed = [
                (name, p)
                for name, p in self._cluster_pods(what_if)
                if gang_of(p.raw) != ref  # its own members are never victims
            ]
            units = build_units(self.gangs, placed, below=priority, exclude=ref)
            if not units:
                return Status.unresolvable(MSG_NO_GANG_VICTIMS)
            status = _remove_units(what_if, units)
            if not status.is_success():
                return status
            if self._place(what_if, pending) is None:
                return Status.unschedulable(
                    f"{ref}: its {len(pending)} pending pod(s) do not all fit, even with "
                    "every lower-priority pod and gang evicted"
                )
            units.sort(key=unit_importance(self.clock_ns()))
            violating, fine = split_by_budgets(units, self.preemption.disruption_budgets())
            chosen: list[Unit] = []
            for unit in (*violating, *fine):
                status = _add_unit(what_if, unit)
                if not status.is_success():
                    return status
                if self._place(what_if, pending) is None:
                    status = _remove_units(what_if, [unit])
                    if not status.is_success():
                        return status
                    chosen.append(unit)
            placement = self._place(what_if, pending)
        if placement is None:  # cannot happen: the last check above kept it fitting
            return Status.error_status(f"{ref}: the pending pods no longer fit")
        if not chosen:
            return Status.unschedulable(
                f"{ref}: its pending pods fit without evicting anything; not preempting"
            )
        victims = sorted(
            (p for unit in chosen for p in unit.pods), key=importance_key(self.clock_ns())
        )
        violations = sum(unit.violations for unit in chosen)
        return Candidate(placement[pod.key], tuple(victims), violations)

    @staticmethod
    def _place(what_if: WhatIf, pending: Sequence[Pod]) -> dict[str, str] | None:
        """Where each pending pod goes, one after the other, on the what-if (each on the
        first node it passes Filter on, the preemptor on its nominated node if it can);
        None if one fits nowhere. The what-if is left as it was."""
        added: list[Pod] = []
        placement: dict[str, str] = {}
        try:
            for member in pending:
                nodes = what_if.feasible_nodes(member)
                if not nodes:
                    return None
                node = member.nominated_node_name
                if node not in nodes:
                    node = nodes[0]
                if not what_if.add_pod(member, node).is_success():
                    return None
                added.append(member)
                placement[member.key] = node
            return placement
        finally:
            for member in added:
                what_if.remove_pod(member)

    # -- what the cluster holds -------------------------------------------------------

    def _members(self, ref: GangRef) -> list[Mapping[str, Any]]:
        """The gang's pods that exist and may still run (not terminal, not deleting)."""
        out = []
        for obj in self._pods.list(ref.namespace):
            if gang_of(obj) != ref or _meta(obj).get("deletionTimestamp"):
                continue
            status = obj.get("status")
            if isinstance(status, Mapping) and status.get("phase") in _TERMINAL_PHASES:
                continue
            out.append(obj)
        return out

    def _cluster_pods(self, what_if: WhatIf) -> Iterator[tuple[str, Pod]]:
        """Every pod on a node of the what-if, with its node."""
        for name in self.handle.nodes().names:
            for p in what_if.node(name).pods:
                yield name, p

    def _gang_pods(self, ref: GangRef) -> list[tuple[str, Pod]]:
        """The gang's pods on nodes (bound or assumed), from an index of the cluster built
        once per PostFilter call."""
        if self._placed is None:
            index: dict[GangRef, list[tuple[str, Pod]]] = {}
            for node in self.handle.nodes():
                for p in node.pods:
                    gang = gang_of(p.raw)
                    if gang is not None:
                        index.setdefault(gang, []).append((node.name, p))
            self._placed = index
        return self._placed.get(ref, [])

    # -- the hold while a gang's victims go -------------------------------------------

    def _hold(self, ref: GangRef, victims: Sequence[Pod]) -> None:
        hold = self.args.preemption_hold_seconds
        entry = _InFlight([(v.namespace, v.name, v.uid) for v in victims], self.clock() + hold)
        self._in_flight[ref] = entry
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (explain, unit tests): the deadline is checked when asked
        loop.call_later(hold, self._hold_expired, ref, entry)

    def _hold_expired(self, ref: GangRef, entry: _InFlight) -> None:
        """The bound on the hold: the gang's pending members are retried now."""
        if self._in_flight.get(ref) is not entry:
            return
        del self._in_flight[ref]
        pending = []
        for obj in self._members(ref):
            if not _spec(obj).get("nodeName"):
                try:
                    pending.append(self.preemption.pod(obj))
                except ValueError:
                    continue
        if pending:
            self.handle.activate_pods(pending)

    def _preempting(self, ref: GangRef) -> bool:
        """Whether the gang's last preemption still has victims in the cluster."""
        entry = self._in_flight.get(ref)
        if entry is None:
            return False
        if self.clock() >= entry.until or all(self._gone(*v) for v in entry.victims):
            del self._in_flight[ref]
            return False
        return True

    def _gone(self, namespace: str, name: str, uid: str) -> bool:
        obj = self._pods.get(namespace, name)
        return obj is None or (bool(uid) and _meta(obj).get("uid") != uid)


def _remove_units(what_if: WhatIf, units: Sequence[Unit]) -> Status:
    for unit in units:
        for pod in unit.pods:
            status = what_if.remove_pod(pod)
            if not status.is_success():
                return status
    return Status.success()


def _add_unit(what_if: WhatIf, unit: Unit) -> Status:
    for pod, node in zip(unit.pods, unit.nodes, strict=True):
        status = what_if.add_pod(pod, node)
        if not status.is_success():
            return status
    return Status.success()


def _result(status: Status) -> PostFilterResult:
    return _result_of(PostFilterResult(status))


def _result_of(result: PostFilterResult) -> PostFilterResult:
    """kube's DefaultPreemption message form: ``preemption: <why>``."""
    status = result.status
    message = status.message()
    if message and not status.is_success():
        status = Status(status.code, (MESSAGE_PREFIX + message,), status.plugin, status.error)
    return PostFilterResult(status, result.nominated_node_name)
