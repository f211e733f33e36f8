"""Base classes for plugins: optional conveniences, not requirements.

Any class works as a plugin if its constructor takes ``(args, handle)`` and
it declares ``api_version``. :class:`Plugin` just stores those two;
:class:`NodePlugin` additionally lets a simple plugin think one node at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from scheduler.api.cyclestate import CycleState
from scheduler.api.handle import Handle
from scheduler.api.hookspecs import hookimpl
from scheduler.api.results import FilterResult
from scheduler.api.status import Code, Status
from scheduler.api.views import Nodes, Pod
from scheduler.model.featuregates import FeatureSpec


class Plugin:
    """Convenience base: keeps ``args`` and ``handle``.

    Class attributes a plugin may set:

    - ``api_version`` (required): the plugin API version it was written for
      (``"2.0"`` for new plugins; ``"1.x"`` plugins keep running through the
      compatibility layer, see :mod:`scheduler.api.version`).
    - ``Args``: a pydantic model for its ``pluginConfig`` args.
    - ``priority``: default order at each extension point (higher first).
    - ``watches``: ``(group, version, plural)`` resources it reads via
      ``handle.store(...)``; the daemon runs informers for them.
    - ``node_local`` (API 1.1): a promise that lets the framework reuse this
      plugin's Filter verdicts and raw Scores across identical pods (the
      same spec, labels, annotations, namespace and owners) and recompute
      only the nodes that changed since. Set it only if, for every node, the
      verdict and raw score depend on nothing but: the pod's spec, labels,
      annotations, namespace and owner references (never its name, uid or
      the names of its volumes); what this plugin's own PreFilter/PreScore
      wrote for the pod, itself computed from the pod alone (not from the
      nodes it is given); that node's row (its node object and the pods
      accounted on it); and, of other nodes, only which exist and their
      labels, taints, allocatable resources, unschedulable flag and images.
      Not on pods on other nodes, ``handle.store`` objects or the time.
      NormalizeScore still runs over every feasible node each cycle.
      Plugins that return Skip for a pod do not count.
    - ``pre_bind_timeout`` (API 1.2, may be set per instance): seconds its
      PreBind may take when that is longer than the configured PreBind
      limit (VolumeBinding waits up to ``bindTimeoutSeconds`` for the PV
      controller); the larger of the two applies.
    - ``pods_via_requested`` (API 1.1): a promise about Filter that its
      verdict sees the pods on a node only through ``nodes.requested`` and
      ``nodes.non_zero_requested`` (never a node's ``pods`` or ``host_ports``,
      nor 1.x's ``table.pods``, ``ports`` or pod table).
      What-if checks that add or remove pods (nominated pods, preemption's
      dry run) may then edit just those rows and judge many nodes in one
      Filter run. A Filter that does not look at pods at all qualifies.

    - ``feature_gates`` (API 2.2): gates the plugin declares, name ->
      :class:`FeatureSpec`, e.g. ``{"MyAlphaScore": FeatureSpec(default=False,
      stage="Alpha")}``. Users set them like kube's gates
      (``pluggableScheduler.featureGates`` or ``--feature-gates``); a name
      kube already has is a load error.
    - ``gated_by`` (API 2.2): the gate (kube's or declared here) that must be
      on for the plugin to load at all. With it off the plugin is left out of
      the defaults, and a profile that enables it is an error naming the gate
      to turn on, as kube-scheduler does with its gated plugins.
      ``handle.feature_gates`` gives every plugin the effective gates.

    Both promises are checked when the scheduler runs with
    ``SCHEDULER_CHECK_PROMISES=1`` (see ``docs/writing-plugins.md``): the
    framework recomputes without the shortcut and fails loudly, naming the
    plugin, when the results differ.
    """

    Args: ClassVar[type[BaseModel] | None] = None
    priority: ClassVar[int] = 0
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    node_local: ClassVar[bool] = False
    pods_via_requested: ClassVar[bool] = False
    pre_bind_timeout: float | None = None
    feature_gates: ClassVar[Mapping[str, FeatureSpec]] = {}
    gated_by: ClassVar[str | None] = None

    def __init__(self, args: Any, handle: Handle) -> None:
        self.args = args
        self.handle = handle


class NodePlugin(Plugin):
    """Adapter for plugins written node by node.

    Define ``filter_node(state, pod, node) -> Status`` and/or
    ``score_node(state, pod, node) -> int`` (``node`` is a :class:`~scheduler.api.views.Node`;
    a 1.x plugin gets the framework's NodeInfo);
    the adapter turns them into the vectorized Filter and Score hooks (only
    the ones you define are registered). It costs a Python call per node, which is fine for a few
    hundred nodes; at thousands, write the array hooks directly.
    """

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        """Filter over all candidates by calling ``filter_node`` once per node."""
        filter_node = self.filter_node  # type: ignore[attr-defined]
        result = FilterResult(len(nodes))
        for i, node in enumerate(nodes):
            status: Status = filter_node(state, pod, node)
            if status.code is Code.ERROR:
                raise RuntimeError(f"filter_node failed on node {node.name}: {status.message()}")
            if status.is_rejected():
                mask = np.zeros(len(nodes), dtype=np.bool_)
                mask[i] = True
                code = (
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                    if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                    else Code.UNSCHEDULABLE
                )
                result.reject(mask, status.message() or "rejected", code)
        return result

    @hookimpl
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> npt.NDArray[np.int64]:
        """Score over all candidates by calling ``score_node`` once per node."""
        score_node = self.score_node  # type: ignore[attr-defined]
        return np.fromiter(
            (int(score_node(state, pod, node)) for node in nodes),
            dtype=np.int64,
            count=len(nodes),
        )

    @classmethod
    def overrides(cls, hook: str) -> bool:
        """Whether a subclass implements the per-node method behind ``hook``."""
        method = {"filter": "filter_node", "score": "score_node"}.get(hook)
        return method is None or callable(getattr(cls, method, None))
