"""Preemption as kube-scheduler splits it: an evaluator apart from the plugin.

- :mod:`.evaluator`: kube's ``preemption.Evaluator`` (``Preempt``) and the
  ``Interface`` a preempting plugin implements;
- :mod:`.dryrun`: ``DryRunPreemption`` / ``SelectVictimsOnNode``, on what-if
  copies of the table, one algorithm for one node or many at once;
- :mod:`.executor`: evicting the victims in the background, holding the
  preemptor back meanwhile (PreEnqueue);
- :mod:`.candidates`: the pure helpers (budgets, importance, the pick).

It lives in the framework, as in kube (``pkg/scheduler/framework/preemption``):
it drives the Filter plugins and their PreFilter extensions through the
framework, and any PostFilter plugin may build on it.
"""

from scheduler.framework.preemption.candidates import Candidate, DisruptionBudget
from scheduler.framework.preemption.evaluator import Evaluator, Interface
from scheduler.framework.preemption.executor import Executor

__all__ = ["Candidate", "DisruptionBudget", "Evaluator", "Executor", "Interface"]
