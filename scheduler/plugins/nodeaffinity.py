"""NodeAffinity: ``nodeSelector``, required and preferred node affinity.

Filter keeps the nodes matching the pod's ``nodeSelector`` and its required
node affinity (terms ORed, requirements within a term ANDed) and, when the
profile sets ``addedAffinity``, that affinity too. PreFilter narrows the
candidates to named nodes when every required term pins ``metadata.name``
with ``In`` (DaemonSet pods do), so Filter then looks at a handful of rows.
Score sums the weights of the matching preferred terms; NormalizeScore maps
the best node to 100.

Requirements are evaluated per label column with ``LabelIndex.match`` over all
candidate rows; the pod's parsed selectors are cached in ``pod.cache``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    Nodes,
    Plugin,
    Pod,
    PreFilterResult,
    Resource,
    Status,
    hookimpl,
)
from scheduler.api.handle import Handle
from scheduler.model.selectors import (
    NODE_FIELD_NAME,
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
    SelectorError,
)
from scheduler.plugins._helpers import PluginArgs, coerce_args, default_normalize_score

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


class PreferredSchedulingTerm(PluginArgs):
    weight: int = Field(ge=1, le=100)
    preference: dict[str, Any]

    @model_validator(mode="after")
    def _parses(self) -> PreferredSchedulingTerm:
        NodeSelectorTerm.from_dict(self.preference, "preference")
        return self


class AddedAffinity(PluginArgs):
    """A v1 ``NodeAffinity`` applied to every pod of the profile."""

    required_during_scheduling_ignored_during_execution: dict[str, Any] | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )

    @model_validator(mode="after")
    def _required_parses(self) -> AddedAffinity:
        required = self.required_during_scheduling_ignored_during_execution
        if required is not None:
            selector = NodeSelector.from_dict(
                required, "requiredDuringSchedulingIgnoredDuringExecution"
            )
            if not selector.terms:
                raise ValueError(
                    "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
                    "Required value: must have at least one node selector term"
                )
        return self


class NodeAffinityArgs(PluginArgs):
    """kube's ``NodeAffinityArgs``."""

    added_affinity: AddedAffinity | None = None


@dataclass(frozen=True, slots=True)
class _Required:
    """The pod's required placement: nodeSelector labels AND (affinity terms ORed)."""

    node_selector: tuple[Requirement, ...]
    affinity: NodeSelector | None


@dataclass(frozen=True, slots=True)
class _Preferred:
    terms: tuple[tuple[int, NodeSelectorTerm], ...]


def _required_of(pod: Pod) -> _Required:
    cache: dict[str, Any] = pod.cache.setdefault(NAME, {})
    cached = cache.get("required")
    if isinstance(cached, _Required):
        return cached
    selector = tuple(Requirement(k, "In", (v,)) for k, v in sorted(pod.node_selector.items()))
    node_affinity = pod.affinity.get("nodeAffinity") or {}
    raw = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    # Lazy: a term kube cannot parse never matches; the others still count.
    affinity = NodeSelector.from_dict(raw, lazy=True) if raw is not None else None
    required = cache["required"] = _Required(selector, affinity)
    return required


def _preferred_terms(raw_terms: Sequence[Mapping[str, Any]]) -> _Preferred:
    terms = []
    for index, raw in enumerate(raw_terms):
        weight = int(raw.get("weight") or 0)
        if weight == 0:
            continue
        path = f"preferredDuringSchedulingIgnoredDuringExecution[{index}].preference"
        terms.append((weight, NodeSelectorTerm.from_dict(raw.get("preference") or {}, path)))
    return _Preferred(tuple(terms))


def _preferred_of(pod: Pod) -> _Preferred:
    cache: dict[str, Any] = pod.cache.setdefault(NAME, {})
    cached = cache.get("preferred")
    if isinstance(cached, _Preferred):
        return cached
    node_affinity = pod.affinity.get("nodeAffinity") or {}
    raw = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    preferred = cache["preferred"] = _preferred_terms(raw)
    return preferred


def term_mask(term: NodeSelectorTerm, nodes: Nodes) -> BoolArray:
    """Which candidates satisfy one node selector term (empty/broken terms: none)."""
    if term.error is not None or term.is_empty:
        return np.zeros(len(nodes), dtype=np.bool_)
    mask = nodes.match_labels(term.requirements)
    for req in term.field_requirements:
        if req.key == NODE_FIELD_NAME:
            hit = np.zeros(len(nodes), dtype=np.bool_)
            for name in req.values:
                i = nodes.index_of(name)
                if i is not None:
                    hit[i] = True
        else:
            # Unknown fields read as "" for every node.
            hit = np.full(len(nodes), "" in req.values, dtype=np.bool_)
        mask &= ~hit if req.operator == "NotIn" else hit
    return mask


def selector_mask(selector: NodeSelector, nodes: Nodes) -> BoolArray:
    mask = np.zeros(len(nodes), dtype=np.bool_)
    for term in selector.terms:
        mask |= term_mask(term, nodes)
    return mask


def required_mask(required: _Required, nodes: Nodes) -> BoolArray:
    mask = nodes.match_labels(required.node_selector)
    if required.affinity is not None:
        mask &= selector_mask(required.affinity, nodes)
    return mask


def preferred_score(preferred: _Preferred, nodes: Nodes) -> IntArray:
    score = np.zeros(len(nodes), dtype=np.int64)
    for weight, term in preferred.terms:
        score += np.where(term_mask(term, nodes), weight, 0)
    return score


class NodeAffinity(Plugin):
    api_version: ClassVar[str] = "2.0"
    name: ClassVar[str] = NAME
    node_local: ClassVar[bool] = True  # results per node depend on that node only
    pods_via_requested: ClassVar[bool] = True  # Filter sees pods only via `requested`
    Args = NodeAffinityArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(coerce_args(NodeAffinityArgs, args), handle)
        parsed: NodeAffinityArgs = self.args
        added = parsed.added_affinity
        self.added_required: NodeSelector | None = None
        self.added_preferred: _Preferred | None = None
        if added is not None:
            if added.required_during_scheduling_ignored_during_execution is not None:
                self.added_required = NodeSelector.from_dict(
                    added.required_during_scheduling_ignored_during_execution
                )
            if added.preferred_during_scheduling_ignored_during_execution:
                self.added_preferred = _preferred_terms(
                    [
                        t.model_dump(by_alias=True)
                        for t in added.preferred_during_scheduling_ignored_during_execution
                    ]
                )

    @hookimpl
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Nodes
    ) -> PreFilterResult | Status | None:
        node_affinity = pod.affinity.get("nodeAffinity") or {}
        raw = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if raw is None and self.added_required is None and not pod.node_selector:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _required_of(pod))
        terms = (raw or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None
        # Terms are ORed: only if every term pins node names can we narrow.
        names: set[str] = set()
        for term in terms:
            term_names: set[str] | None = None
            for req in term.get("matchFields") or ():
                if req.get("key") == NODE_FIELD_NAME and req.get("operator") == "In":
                    values = set(req.get("values") or ())
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None
            names |= term_names
        if not names:
            return Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult.only(names)

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> FilterResult:
        result = FilterResult(len(nodes))
        enforced_ok = np.ones(len(nodes), dtype=np.bool_)
        if self.added_required is not None:
            enforced_ok = selector_mask(self.added_required, nodes)
            result.reject_unresolvable(~enforced_ok, ERR_REASON_ENFORCED)
        required = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(required, _Required):
            required = _required_of(pod)
        pod_ok = required_mask(required, nodes)
        # kube stops at the first failure: a node failing the enforced affinity
        # is reported for that alone.
        return result.reject_unresolvable(enforced_ok & ~pod_ok, ERR_REASON_POD)

    @hookimpl
    def pre_score(self, state: CycleState, pod: Pod, nodes: Nodes) -> Status | None:
        if len(nodes) == 0:
            return None
        try:
            preferred = _preferred_of(pod)
        except SelectorError as err:
            return Status.error_status(err)
        if not preferred.terms and self.added_preferred is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, preferred)
        return None

    @hookimpl
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> IntArray | Status:
        score = np.zeros(len(nodes), dtype=np.int64)
        if self.added_preferred is not None:
            score += preferred_score(self.added_preferred, nodes)
        preferred = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(preferred, _Preferred):
            try:
                preferred = _preferred_of(pod)
            except SelectorError as err:
                return Status.error_status(err)
        return score + preferred_score(preferred, nodes)

    @hookimpl
    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Nodes, scores: IntArray
    ) -> IntArray:
        return default_normalize_score(scores, reverse=False)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            )
        ]
