"""The preemption evaluator: kube's ``preemption.Evaluator`` (``Preempt``).

A PostFilter plugin that preempts (DefaultPreemption) owns one and decides
only what kube leaves to its ``preemption.Interface``: who may preempt, how
many candidates to look for from where, and which candidate wins. The
evaluator does the rest, the same for every such plugin:

1. **Candidates.** Only nodes the Filter plugins rejected as Unschedulable
   (not UnschedulableAndUnresolvable) are tried (kube's
   ``nodesWherePreemptionMightHelp``).
2. **Dry run** (:mod:`.dryrun`): the victims each node would need, on a
   what-if copy of the table, until enough candidates are found.
3. **HTTP extenders** with a ``preemptVerb`` interested in the pod may drop
   candidates or narrow their victims (kube's ``callExtenders``; awaited, so
   only through :meth:`Evaluator.preempt_with_extenders`).
4. **Choice** by the plugin, then **action** by the :class:`.Executor`: the
   victims are evicted in the background and the framework nominates the
   pod to the node from the returned result.

When no candidate exists, the status explains why per node, in kube's words
("0/N nodes are available: ..."), and a pod's stale nomination is cleared.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from scheduler.api.cyclestate import CycleState
from scheduler.api.handle import Handle, ObjectStore
from scheduler.api.preemption import PDB_RESOURCE, WhatIf
from scheduler.api.results import Diagnosis, PostFilterResult
from scheduler.api.status import Code, Status
from scheduler.api.views import Pod
from scheduler.framework.extenders import ExtenderRunner
from scheduler.framework.nominated import nominated_rows
from scheduler.framework.preemption.candidates import (
    Candidate,
    DisruptionBudget,
    fit_error_message,
    pick_one_node,
)
from scheduler.framework.preemption.dryrun import DryRun, DryRunResult
from scheduler.framework.preemption.executor import MSG_IN_PROGRESS, Executor
from scheduler.framework.preemption.whatif import PluginWhatIf
from scheduler.framework.runtime import Framework
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.whatif import WhatIfTable

IntArray = npt.NDArray[np.int64]


class Interface(Protocol):
    """What a preempting plugin decides (kube's ``preemption.Interface``); the plugin
    API's :class:`~scheduler.api.preemption.PreemptionPolicy` with the framework's pods.

    ``select_candidate``, ``ordered_score_funcs`` and ``select_victims_on_node``
    are optional (see the API's docstring); the evaluator looks them up.
    """

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Where in the potential nodes the dry run starts, and how many candidates it wants."""

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[bool, str]:
        """Whether ``pod`` may preempt at all, and why not."""


@dataclass(frozen=True, slots=True)
class _Found:
    """What the dry run found: the candidates, and the clock it read."""

    candidates: list[Candidate]
    now_ns: int


class Evaluator:
    """Preempts for one plugin: ``preempt`` is kube's ``Evaluator.Preempt``."""

    def __init__(self, plugin_name: str, handle: Handle, interface: Interface) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.interface = interface
        #: Clock for pods without a start time (they count as started now).
        self.clock_ns: Callable[[], int] = time.time_ns
        self.executor = Executor(plugin_name, handle, lambda: self.clock_ns())
        self.dry_run = DryRun(handle)
        custom = getattr(interface, "select_victims_on_node", None)
        if callable(custom):
            self.dry_run.select_victims_on_node = custom
        # Ask for the PDB store now, not at the first preemption: the daemon
        # starts (and waits for) the informers of stores requested before it
        # runs. Handles without stores (minimal test fakes) get it lazily.
        self._pdb_store: ObjectStore | None = None
        if callable(getattr(handle, "store", None)):
            self._pdb_store = handle.store(*PDB_RESOURCE)

    def preempt(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[str | None, Status]:
        """The node to nominate ``pod`` to (or None) and the status.

        Without the HTTP extenders: a pod one with a ``preemptVerb`` is
        interested in takes :meth:`preempt_with_extenders` (see
        :meth:`extenders_preempt`).
        """
        found = self.find_candidates(state, pod, diagnosis)
        if not isinstance(found, _Found):
            return found
        return self.actuate(pod, found.candidates, found.now_ns)

    def extenders_preempt(self, pod: PodInfo) -> bool:
        """Whether an HTTP extender with a ``preemptVerb`` is interested in ``pod``."""
        runner = self._extenders()
        return runner is not None and runner.preempts(pod)

    async def preempt_with_extenders(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[str | None, Status]:
        """:meth:`preempt` with kube's ``callExtenders`` between the dry run and the choice.

        The extenders may drop candidates and narrow their victims; one that
        fails (not ignorable) fails the preemption with its error. If they
        leave no candidate, nothing is preempted and the pod keeps its
        nomination, as in kube.
        """
        found = self.find_candidates(state, pod, diagnosis)
        if not isinstance(found, _Found):
            return found
        candidates = found.candidates
        runner = self._extenders()
        if runner is not None and runner.preempts(pod):
            candidates, status = await runner.preempt(state, pod, candidates, self.handle.table)
            if not status.is_success():
                return None, status
        if not candidates:
            return None, Status.unschedulable("no candidate node for preemption")
        return self.actuate(pod, candidates, found.now_ns)

    def _extenders(self) -> ExtenderRunner | None:
        framework = getattr(self.handle, "framework", None)
        runner = getattr(framework, "extenders", None)
        return runner if isinstance(runner, ExtenderRunner) else None

    def find_candidates(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> _Found | tuple[str | None, Status]:
        """Eligibility and the dry run (kube's ``Preempt`` steps 1 and 2); the candidates,
        or the final answer when there are none."""
        if self.executor.is_preempting(pod.uid or pod.key):
            return None, Status.unschedulable(MSG_IN_PROGRESS)
        eligible, why = self.interface.pod_eligible_to_preempt_others(pod, diagnosis)
        if not eligible:
            return None, Status.unschedulable(why)
        total = len(self.handle.table)
        if total == 0:
            return None, Status.error_status("no nodes available")
        now_ns = self.clock_ns()
        rows = self.potential_rows(diagnosis)
        result = DryRunResult([], {}, [])
        if len(rows):
            offset, num_candidates = self.interface.get_offset_and_num_candidates(len(rows))
            result = self.dry_run_preemption(
                state, pod, rows, self.disruption_budgets(), offset, num_candidates, now_ns
            )
        candidates, statuses, errors = result
        if errors and not candidates:
            return None, _aggregate(errors)
        if not candidates:
            if pod.nominated_node_name:
                self.executor.clear_nomination(pod)
            return None, Status.unschedulable(fit_error_message(total, statuses))
        return _Found(list(candidates), now_ns)

    def actuate(
        self, pod: PodInfo, candidates: Sequence[Candidate], now_ns: int
    ) -> tuple[str | None, Status]:
        """Steps 4 and 5: the best candidate, its victims evicted, its node to nominate."""
        best = self.select_candidate(candidates, now_ns)
        self.executor.prepare_candidate(best, pod)
        return best.node, Status.success()

    def select_candidate(self, candidates: Sequence[Candidate], now_ns: int) -> Candidate:
        """kube's ``SelectCandidate``: the policy's own choice, else its ordered score
        functions, else kube's criteria (:func:`pick_one_node`)."""
        chooser = getattr(self.interface, "select_candidate", None)
        if callable(chooser):
            return cast(Candidate, chooser(candidates, now_ns))
        if len(candidates) == 1:
            return candidates[0]
        funcs = getattr(self.interface, "ordered_score_funcs", None)
        ordered = funcs(candidates) if callable(funcs) else None
        return pick_one_node(candidates, now_ns, ordered)

    # -- where preemption might help -----------------------------------------------------

    @staticmethod
    def _absent_code(diagnosis: Diagnosis) -> Code:
        """The code of nodes the diagnosis has no verdict for.

        A PreFilter rejection leaves no per-node verdicts: kube gives its code
        to every node. Otherwise an absent node is one preemption cannot help
        (kube's default).
        """
        if not diagnosis.rejections and diagnosis.pre_filter_message:
            return diagnosis.pre_filter_code or Code.UNSCHEDULABLE
        return Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def node_code(self, diagnosis: Diagnosis, node_name: str) -> Code:
        """The Filter verdict's code for one node (absent nodes as kube treats them)."""
        row = self.handle.table.row_of(node_name)
        if row is not None:
            for rejection in diagnosis.rejections:
                hits = np.flatnonzero(rejection.rows == row)
                if len(hits):
                    return Code(int(rejection.codes[hits[0]]))
        return self._absent_code(diagnosis)

    def potential_rows(self, diagnosis: Diagnosis) -> IntArray:
        """NodeTable rows rejected only as Unschedulable, in row order."""
        table: NodeTable = self.handle.table
        if self._absent_code(diagnosis) is Code.UNSCHEDULABLE:
            return table.rows()
        rows = np.unique(diagnosis.resolvable_rows()).astype(np.int64)
        rows = rows[rows < table.size]
        return rows[table.alive[rows]]

    # -- what the dry run reads ------------------------------------------------------------

    def disruption_budgets(self) -> list[DisruptionBudget]:
        if self._pdb_store is None:
            self._pdb_store = self.handle.store(*PDB_RESOURCE)
        return [DisruptionBudget.from_dict(o) for o in self._pdb_store.list(None)]

    def nominated_by_node(self, pod: PodInfo) -> dict[str, list[PodInfo]]:
        """The pods nominated to each node whose room ``pod`` must leave alone
        (see :func:`.nominated.nominated_rows`); none where the handle keeps no queue."""
        source = getattr(self.handle, "nominated_pods", None)
        if not callable(source):
            return {}
        table = self.handle.table
        nominations = cast("Mapping[str, Sequence[PodInfo]]", source())
        return {table.names[r]: pods for r, pods in nominated_rows(table, nominations, pod).items()}

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        rows: IntArray,
        budgets: Sequence[DisruptionBudget],
        offset: int,
        num_candidates: int,
        now_ns: int,
        nominated: Mapping[str, Sequence[PodInfo]] | None = None,
    ) -> DryRunResult:
        """kube's ``DryRunPreemption`` (see :class:`.DryRun`); ``nominated`` defaults
        to :meth:`nominated_by_node`."""
        if nominated is None:
            nominated = self.nominated_by_node(pod)
        table = self.handle.table
        by_row = {
            row: list(pods)
            for name, pods in nominated.items()
            if (row := table.row_of(name)) is not None and pods
        }
        return self.dry_run.run(state, pod, rows, budgets, offset, num_candidates, now_ns, by_row)


def _aggregate(errors: Sequence[Status]) -> Status:
    """One Error status for several (Go's ``utilerrors.NewAggregate`` rendering)."""
    if len(errors) == 1:
        return errors[0]
    messages = [e.message() for e in errors]
    return Status(Code.ERROR, (f"[{', '.join(messages)}]",), None, errors[0].error)


class PluginPreemption:
    """The plugin API's :class:`~scheduler.api.preemption.Preemption` over an
    :class:`Evaluator` (what ``handle.preemption(policy)`` returns)."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    @property
    def executor(self) -> Executor:
        return self.evaluator.executor

    def preempt(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> PostFilterResult | Awaitable[PostFilterResult]:
        self.evaluator.handle.record_preemption_attempt()  # kube counts every call
        info = cast(PodInfo, pod)
        if self.evaluator.extenders_preempt(info):
            return self._preempt_with_extenders(state, info, diagnosis)
        node, status = self.evaluator.preempt(state, info, diagnosis)
        return PostFilterResult(status, node)

    async def _preempt_with_extenders(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> PostFilterResult:
        node, status = await self.evaluator.preempt_with_extenders(state, pod, diagnosis)
        return PostFilterResult(status, node)

    def admit(self, pod: Pod) -> Status | None:
        return self.executor.admit(cast(PodInfo, pod))

    def is_preempting(self, pod: Pod) -> bool:
        return self.executor.is_preempting(pod.uid or pod.key)

    def disruption_budgets(self) -> list[DisruptionBudget]:
        return self.evaluator.disruption_budgets()

    def potential_nodes(self, diagnosis: Diagnosis) -> list[str]:
        names = self.evaluator.handle.table.names
        return [names[r] for r in self.evaluator.potential_rows(diagnosis).tolist()]

    @contextmanager
    def what_if(self, state: CycleState, pod: Pod) -> Iterator[WhatIf]:
        evaluator = self.evaluator
        info = cast(PodInfo, pod)
        table: NodeTable = evaluator.handle.table
        nominated = {
            row: list(pods)
            for name, pods in evaluator.nominated_by_node(info).items()
            if (row := table.row_of(name)) is not None and pods
        }
        whatif = WhatIfTable(table)
        framework = cast(Framework, evaluator.handle.framework)
        try:
            yield PluginWhatIf(framework, whatif, state.clone(), info, nominated)
        finally:
            whatif.revert()

    def pod(self, obj: Mapping[str, Any]) -> Pod:
        return PodInfo.from_dict(dict(obj))

    def evict(self, pod: Pod, candidate: Candidate) -> None:
        self.executor.prepare_candidate(candidate, cast(PodInfo, pod))
