"""DefaultPreemption: kube-scheduler's PostFilter that makes room by evicting pods.

Called only when no node fits the pod. As in kube, the plugin is small: the
work is the framework's preemption evaluator (:mod:`scheduler.framework.
preemption`: candidates, the dry run on what-if copies of the table, the
eviction of the victims), and the plugin implements its ``Interface`` with
kube's ``defaultpreemption`` policy:

1. **Eligibility.** A pod with ``preemptionPolicy: Never`` never preempts. A
   pod that already has a nominated node does not preempt again while a
   lower-priority pod on that node is terminating *because of a preemption*
   (deletion started and condition ``DisruptionTarget=True`` with reason
   ``PreemptionByScheduler``), unless the filters now call that node
   UnschedulableAndUnresolvable. A pod whose previous preemption is still
   being carried out (its API calls are in flight) does not preempt either,
   and PreEnqueue holds it back meanwhile.
2. **How many candidates.** The dry run starts at a random offset and stops
   once at least one candidate violates no PodDisruptionBudget and
   ``max(n * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)``
   (at most ``n``) candidates were found.
3. **Choice of node.** Fewest PDB violations, then the lowest highest-victim
   priority, the smallest sum of victim priorities, the fewest victims, the
   latest start time among the highest-priority victims, then the first.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, Self

from pydantic import BaseModel, Field, model_validator

from scheduler.api import (
    Code,
    CycleState,
    Diagnosis,
    Handle,
    Plugin,
    PostFilterResult,
    Status,
    hookimpl,
)
from scheduler.api.preemption import PDB_RESOURCE
from scheduler.framework.preemption import Candidate, Evaluator, Executor
from scheduler.framework.preemption.candidates import (
    calculate_num_candidates,
    pick_one_node,
    terminating_by_preemption,
)
from scheduler.plugins._helpers import PluginArgs, coerce_args
from scheduler.state.pod import PodInfo

NAME = "DefaultPreemption"

MSG_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MESSAGE_PREFIX = "preemption: "


class DefaultPreemptionArgs(PluginArgs):
    """``pluginConfig`` args, as kube-scheduler's ``DefaultPreemptionArgs``."""

    min_candidate_nodes_percentage: int = Field(default=10, ge=0, le=100)
    min_candidate_nodes_absolute: int = Field(default=100, ge=0)

    @model_validator(mode="after")
    def _not_both_zero(self) -> Self:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage cannot be zero at the same time as "
                "minCandidateNodesAbsolute"
            )
        return self


class DefaultPreemption(Plugin):
    """kube-scheduler's default PostFilter: preempt lower-priority pods."""

    api_version = "1.0"
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel] | None] = DefaultPreemptionArgs
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (PDB_RESOURCE,)

    def __init__(self, args: Any, handle: Handle) -> None:
        parsed = coerce_args(DefaultPreemptionArgs, args)
        super().__init__(parsed, handle)
        self.min_candidate_nodes_percentage = parsed.min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = parsed.min_candidate_nodes_absolute
        #: Random offset into the candidate nodes (kube's ``rand.Int31n``); replaceable in tests.
        self.offset_rand: Callable[[int], int] = random.Random().randrange
        self.evaluator = Evaluator(NAME, handle, self)

    @property
    def executor(self) -> Executor:
        """Who evicts the victims of this plugin's preemptions."""
        return self.evaluator.executor

    # -- hooks ------------------------------------------------------------------------------

    @hookimpl
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """Hold the pod back while its victims are being deleted (see :meth:`Executor.admit`)."""
        return self.executor.admit(pod)

    @hookimpl
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> PostFilterResult | Awaitable[PostFilterResult]:
        """Preempt; awaitable when an HTTP extender's ``preemptVerb`` takes part (the
        framework's awaiting PostFilter runs it, see ``Framework.run_post_filter_async``)."""
        self.handle.record_preemption_attempt()  # kube counts every call, helpful or not
        if self.evaluator.extenders_preempt(pod):
            return self._with_extenders(state, pod, diagnosis)
        return _result(*self.evaluator.preempt(state, pod, diagnosis))

    async def _with_extenders(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> PostFilterResult:
        return _result(*await self.evaluator.preempt_with_extenders(state, pod, diagnosis))

    # -- the evaluator's Interface ----------------------------------------------------------

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[bool, str]:
        """kube's ``PodEligibleToPreemptOthers``: (eligible, reason if not)."""
        if (pod.raw.get("spec") or {}).get("preemptionPolicy") == "Never":
            return False, MSG_PREEMPT_NEVER
        nominated = pod.nominated_node_name
        if not nominated:
            return True, ""
        code = self.evaluator.node_code(diagnosis, nominated)
        if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        table = self.handle.table
        row = table.row_of(nominated)
        if row is not None:
            for other in table.pods[row].values():
                if other.priority < pod.priority and terminating_by_preemption(other):
                    return False, MSG_TERMINATING
        return True, ""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random start in the potential nodes and how many candidates to look for."""
        return self.offset_rand(num_nodes), calculate_num_candidates(
            num_nodes, self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        )

    def select_candidate(self, candidates: Sequence[Candidate], now_ns: int) -> Candidate:
        """The best candidate by kube's criteria (see :func:`pick_one_node`)."""
        if len(candidates) == 1:
            return candidates[0]
        return pick_one_node(candidates, now_ns)


def _result(node: str | None, status: Status) -> PostFilterResult:
    """kube's DefaultPreemption ``PostFilter``: the evaluator's message after "preemption: "."""
    message = status.message()
    if message:
        status = Status(status.code, (MESSAGE_PREFIX + message,), status.plugin, status.error)
    return PostFilterResult(status, node)
