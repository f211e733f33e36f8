"""PodTopologySpread: spread matching pods evenly over topology domains.

kube-scheduler's default plugin of the same name, computed column-wise:

- the pods a constraint counts are found with one vectorized selector match
  over the assigned-pod table (``table.pod_table``), restricted to the
  incoming pod's namespace and without terminating pods;
- their number per node is one ``np.bincount`` over the pods' node rows;
- the number per topology domain is a second ``bincount`` of those per-node
  counts keyed by the node label column of the constraint's topology key.

No Python loop runs per node or per pod on the scheduling path. The only
per-pod Python work is incremental: which assigned pods are terminating is
re-read only for nodes whose ``NodeTable.generation`` moved since last time.

Extension points: PreFilter (+ AddPod/RemovePod), Filter, PreScore, Score,
NormalizeScore, EventsToRegister.

Default constraints
-------------------
With ``defaultingType: System`` (the default) a pod without
``topologySpreadConstraints`` gets kube-scheduler's two soft system
constraints (hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway). Like
kube-scheduler, the selector of such constraints is built from the objects
that "own" the pod; we derive it as follows, in this order:

1. **Services** whose ``spec.selector`` is non-empty and matches the pod's
   labels (same namespace): their selectors are merged (a label set). Read
   from ``handle.store("", "v1", "services")`` when the handle offers that
   store; without it services contribute nothing.
2. **The controller owner** (the ``ownerReferences`` entry with
   ``controller: true``) when it is a ReplicationController (``v1``),
   ReplicaSet or StatefulSet (``apps/v1``): its ``spec.selector`` is added
   when the matching store (``replicationcontrollers``, ``replicasets``,
   ``statefulsets``) is offered by the handle. When the handle does *not*
   offer that store we approximate the owner's selector by the pod's own
   labels minus those that differ between sibling pods
   (``controller-revision-hash``, ``statefulset.kubernetes.io/pod-name``,
   ``apps.kubernetes.io/pod-index``): every pod of one ReplicaSet/StatefulSet
   revision carries the template labels, so this selects the siblings the
   real selector selects (it may miss siblings of an older StatefulSet
   revision).
3. A pod with neither gets no default constraints (as in kube-scheduler).

The plugin does not declare these resources in ``watches``: the daemon and
the emulator do not serve them yet, and asking for them must not break start-up.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field, field_validator, model_validator

from scheduler.api import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    Handle,
    Plugin,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.model.selectors import (
    NODE_FIELD_NAME,
    LabelSelector,
    NodeSelector,
    Requirement,
    SelectorError,
)
from scheduler.model.taints import DO_NOT_SCHEDULE_EFFECTS, Taint, Toleration
from scheduler.plugins._helpers import (
    PluginArgs,
    add_at,
    coerce_args,
    compile_selector,
    lookup,
)
from scheduler.state.nodetable import NodeInfo, NodeSet, NodeTable
from scheduler.state.pod import PodInfo

NAME = "PodTopologySpread"

ERR_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_NODE_LABEL_NOT_MATCH = ERR_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

# Labels that differ between pods of the same workload, dropped when the
# owner's selector has to be approximated from the pod's own labels.
_PER_POD_LABELS = frozenset(
    {
        "controller-revision-hash",
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
    }
)
_OWNER_STORES: dict[tuple[str, str], tuple[str, str, str]] = {
    ("v1", "ReplicationController"): ("", "v1", "replicationcontrollers"),
    ("apps/v1", "ReplicaSet"): ("apps", "v1", "replicasets"),
    ("apps/v1", "StatefulSet"): ("apps", "v1", "statefulsets"),
}

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


# -- args -------------------------------------------------------------------------


class DefaultConstraint(PluginArgs):
    """One entry of ``defaultConstraints``: a TopologySpreadConstraint without selector."""

    max_skew: int = Field(gt=0)
    topology_key: str = Field(min_length=1)
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: dict[str, Any] | None = None
    min_domains: int | None = Field(default=None, gt=0)
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    match_label_keys: list[str] | None = None

    @field_validator("label_selector")
    @classmethod
    def _no_selector(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # kube-scheduler's validation: default constraints get their selector
        # from the pod's owners, so one written here would be silently unused.
        if value is not None:
            raise ValueError("must not be set: the selector is derived for each pod")
        return value

    def as_spec(self) -> dict[str, Any]:
        """The constraint as it would appear in a pod spec."""
        return self.model_dump(by_alias=True, exclude_none=True)


class Args(PluginArgs):
    """``pluginConfig`` args, as kube-scheduler's ``PodTopologySpreadArgs``."""

    default_constraints: list[DefaultConstraint] = Field(default_factory=list)
    defaulting_type: Literal["System", "List"] = "System"

    @model_validator(mode="after")
    def _check(self) -> Args:
        if self.defaulting_type == "System" and self.default_constraints:
            raise ValueError(
                'defaultConstraints must be empty when defaultingType is "System"'
                ' (set defaultingType: "List" to use your own)'
            )
        seen: set[tuple[str, str]] = set()
        for c in self.default_constraints:
            pair = (c.topology_key, c.when_unsatisfiable)
            if pair in seen:
                raise ValueError(
                    f"defaultConstraints: duplicate (topologyKey {c.topology_key!r},"
                    f" whenUnsatisfiable {c.when_unsatisfiable!r})"
                )
            seen.add(pair)
        return self


SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict[str, Any], ...] = (
    {"maxSkew": 3, "topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": LABEL_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY},
)


# -- selectors ----------------------------------------------------------------------


def counts_nothing(selector: LabelSelector) -> bool:
    """kube's ``countPodsMatchSelector`` counts no pod for a nil or an empty selector."""
    return selector.matches_nothing or selector.is_everything


def merge_label_set(selector: LabelSelector, labels: Mapping[str, str]) -> LabelSelector:
    """``mergeLabelSetWithSelector``: AND ``key In (value)`` requirements into ``selector``.

    Nothing stays Nothing, as in kube-scheduler (it has no requirements to add to).
    """
    if selector.matches_nothing or not labels:
        return selector
    extra = tuple(Requirement(k, "In", (v,)) for k, v in sorted(labels.items()))
    return LabelSelector(extra + selector.requirements)


# -- vectorized node helpers --------------------------------------------------------


def required_node_affinity_mask(pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
    """Rows matching the pod's nodeSelector and required node affinity (vectorized).

    Same semantics as kube's ``GetRequiredNodeAffinity(pod).Match(node)``:
    every ``nodeSelector`` pair AND any of the required node selector terms.
    """
    mask = np.ones(len(rows), dtype=np.bool_)
    for key, value in pod.node_selector.items():
        mask &= table.labels.match(key, "In", (value,), rows)
    node_affinity = pod.affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return mask
    selector = _required_node_selector(pod, required)
    any_term = np.zeros(len(rows), dtype=np.bool_)
    for term in selector.terms:
        if term.error is not None or term.is_empty:
            continue  # unparsable or empty terms match no node
        matched = table.labels.match_all(term.requirements, rows)
        for key, op, values in term.field_requirements:
            matched &= _field_match(table, rows, key, op, values)
        any_term |= matched
    return mask & any_term


def _required_node_selector(pod: PodInfo, raw: Mapping[str, Any]) -> NodeSelector:
    """The pod's required node selector, parsed once per PodInfo.

    Parsed leniently, as kube-scheduler does for spreading ("ignore parsing
    errors for backwards compatibility"): an invalid term matches no node.
    """
    cache_key = NAME + ".nodeSelector"
    cached = pod.cache.get(cache_key)
    if not isinstance(cached, NodeSelector):
        try:
            cached = NodeSelector.from_dict(dict(raw), lazy=True)
        except SelectorError:
            cached = NodeSelector()
        pod.cache[cache_key] = cached
    return cached


def _field_match(
    table: NodeTable, rows: IntArray, key: str, op: str, values: Sequence[str]
) -> BoolArray:
    """``matchFields``: ``metadata.name`` is compared via node rows, not names.

    Any other field reads as "" on every node, as in kube's field set.
    """
    if key == NODE_FIELD_NAME:
        wanted = [r for r in (table.row_of(v) for v in values) if r is not None]
        inside = np.isin(rows, np.asarray(wanted, dtype=np.int64))
    else:
        inside = np.full(len(rows), "" in values, dtype=np.bool_)
    if op == "In":
        return inside
    if op == "NotIn":
        return ~inside
    return np.zeros(len(rows), dtype=np.bool_)


def untolerated_taint_mask(pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
    """Rows with a NoSchedule/NoExecute taint the pod does not tolerate.

    The loop is over the table's distinct taints (a handful), not over nodes.
    """
    columns = [
        i
        for i, taint in enumerate(table.taint_list)
        if taint.effect in DO_NOT_SCHEDULE_EFFECTS and not _tolerated(taint, pod.tolerations)
    ]
    if not columns:
        return np.zeros(len(rows), dtype=np.bool_)
    matrix = table.taint_matrix[rows][:, columns]
    return np.asarray(matrix.any(axis=1), dtype=np.bool_)


def _tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


class _TerminatingIndex:
    """Which assigned pods are terminating, maintained per node from generations.

    PodTable has no column for ``deletionTimestamp``; rather than looking at
    every pod each cycle, the pods of a node are re-read only when that
    node's ``generation`` changed (a pod added or removed there).
    """

    def __init__(self) -> None:
        self.seen = np.full(0, -1, dtype=np.int64)
        self.by_node: dict[int, list[str]] = {}

    def mask(self, table: NodeTable) -> BoolArray:
        size = table.size
        if len(self.seen) < size:
            grown = np.full(table.capacity, -1, dtype=np.int64)
            grown[: len(self.seen)] = self.seen
            self.seen = grown
        generation = table.generation[:size]
        for row in np.flatnonzero(generation != self.seen[:size]).tolist():
            keys = [p.key for p in table.pods[row].values() if p.deleting]
            if keys:
                self.by_node[row] = keys
            else:
                self.by_node.pop(row, None)
            self.seen[row] = generation[row]
        pods = table.pod_table
        out = np.zeros(pods.size, dtype=np.bool_)
        for keys in self.by_node.values():
            for key in keys:
                prow = pods.index.get(key)
                if prow is not None:
                    out[prow] = True
        return out


_TERMINATING: weakref.WeakKeyDictionary[NodeTable, _TerminatingIndex] = weakref.WeakKeyDictionary()


def count_matching_pods_per_node(
    table: NodeTable, selector: LabelSelector, namespace: str
) -> IntArray:
    """Matching, non-terminating pods of ``namespace`` on each node row (length = capacity).

    As kube's ``countPodsMatchSelector``: an empty (match-everything) or a
    missing selector counts nothing.
    """
    out_len = table.capacity
    if counts_nothing(selector):
        return np.zeros(out_len, dtype=np.int64)
    pods = table.pod_table
    ns_id = pods.namespaces.get(namespace)
    if ns_id is None:
        return np.zeros(out_len, dtype=np.int64)
    prows = pods.rows()
    prows = prows[pods.namespace_id[prows] == ns_id]
    if len(prows):
        prows = prows[pods.labels.match_all(selector.requirements, prows)]
    if len(prows):
        index = _TERMINATING.get(table)
        if index is None:
            index = _TERMINATING[table] = _TerminatingIndex()
        prows = prows[~index.mask(table)[prows]]
    return np.bincount(pods.node_row[prows], minlength=out_len).astype(np.int64)


# -- constraints --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Constraint:
    """A pod's topology spread constraint with its selector compiled."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int
    honor_node_affinity: bool
    honor_node_taints: bool


def build_constraints(
    specs: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> list[Constraint]:
    """``filterTopologySpreadConstraints``: the constraints of one action, compiled.

    ``matchLabelKeys`` are ANDed into the selector as ``key In (pod's value)``
    for the keys the pod has (the API server may already have merged them;
    merging twice adds the same requirement twice, which changes nothing).
    """
    result = []
    for spec in specs:
        if spec.get("whenUnsatisfiable") != action:
            continue
        selector = compile_selector(spec.get("labelSelector"))
        keys = spec.get("matchLabelKeys") or ()
        match_labels = {k: pod_labels[k] for k in keys if k in pod_labels}
        selector = merge_label_set(selector, match_labels)
        min_domains = spec.get("minDomains")
        result.append(
            Constraint(
                max_skew=int(spec.get("maxSkew") or 0),
                topology_key=str(spec.get("topologyKey") or ""),
                selector=selector,
                min_domains=1 if min_domains is None else int(min_domains),
                honor_node_affinity=(spec.get("nodeAffinityPolicy") or HONOR) == HONOR,
                honor_node_taints=(spec.get("nodeTaintsPolicy") or IGNORE) == HONOR,
            )
        )
    return result


class _NodeEligibility:
    """Which node rows each constraint counts: kube's ``nodeLabelsMatchSpreadConstraints``
    plus ``matchNodeInclusionPolicies``, computed once per pod for all rows."""

    def __init__(
        self,
        pod: PodInfo,
        table: NodeTable,
        rows: IntArray,
        constraints: Sequence[Constraint],
        require_all_keys: bool = True,
    ) -> None:
        self.has_all_keys = np.ones(len(rows), dtype=np.bool_)
        if require_all_keys:
            for c in constraints:
                self.has_all_keys &= table.labels.column(c.topology_key, rows) >= 0
        ones = np.ones(len(rows), dtype=np.bool_)
        affinity = (
            required_node_affinity_mask(pod, table, rows)
            if any(c.honor_node_affinity for c in constraints)
            else ones
        )
        taints = (
            ~untolerated_taint_mask(pod, table, rows)
            if any(c.honor_node_taints for c in constraints)
            else ones
        )
        self._affinity = affinity
        self._taints = taints

    def for_constraint(self, c: Constraint) -> BoolArray:
        mask = self.has_all_keys
        if c.honor_node_affinity:
            mask = mask & self._affinity
        if c.honor_node_taints:
            mask = mask & self._taints
        return mask


@dataclass(slots=True)
class PreFilterState:
    """Per-domain counts of matching pods for each hard constraint.

    ``counts[i]`` and ``present[i]`` are indexed by the node-label value id of
    constraint *i*'s topology key; ``present`` marks the domains that exist
    among the nodes the constraint counts (kube's ``TpPairToMatchNum`` keys).
    ``domains`` is their number at PreFilter time (kube's
    ``TpKeyToDomainsNum``, which AddPod/RemovePod do not change).
    """

    constraints: list[Constraint] = field(default_factory=list)
    counts: list[IntArray] = field(default_factory=list)
    present: list[BoolArray] = field(default_factory=list)
    domains: list[int] = field(default_factory=list)
    self_match: list[bool] = field(default_factory=list)

    def clone(self) -> PreFilterState:
        """A copy for preemption's what-if evaluation (constraints are shared, read-only)."""
        return PreFilterState(
            constraints=self.constraints,
            counts=[c.copy() for c in self.counts],
            present=[p.copy() for p in self.present],
            domains=list(self.domains),
            self_match=self.self_match,
        )

    def min_match(self, i: int) -> int:
        """The global minimum for constraint ``i`` (0 when fewer domains than minDomains).

        kube keeps only two "critical paths" and notes that the second is not
        always the true second minimum after AddPod/RemovePod; with all counts
        at hand we take the exact minimum, which is what those paths approximate.
        """
        if self.domains[i] < self.constraints[i].min_domains:
            return 0
        present = self.present[i]
        if not present.any():
            return 0
        return int(self.counts[i][present].min())


@dataclass(slots=True)
class PreScoreState:
    """What Score and NormalizeScore need: per-domain counts and weights per soft constraint."""

    constraints: list[Constraint]
    ignored: BoolArray  # by node row: nodes missing a required topology key
    domain_counts: list[IntArray]  # per constraint by value id (unused for hostname)
    weights: list[float]
    per_node: list[IntArray]  # per constraint by node row (hostname constraints only)

    def clone(self) -> PreScoreState:
        """Read-only after PreScore, so copies share it (as kube does)."""
        return self


# -- the plugin ---------------------------------------------------------------------


class PodTopologySpread(Plugin):
    """Even spreading of pods over topology domains (zones, nodes, ...)."""

    api_version = "1.0"
    Args: ClassVar[type[BaseModel] | None] = Args

    def __init__(self, args: Any, handle: Handle) -> None:
        parsed = coerce_args(Args, args)
        super().__init__(parsed, handle)
        self.system_defaulted = parsed.defaulting_type == "System"
        self.default_constraints: list[dict[str, Any]] = (
            [dict(c) for c in SYSTEM_DEFAULT_CONSTRAINTS]
            if self.system_defaulted
            else [c.as_spec() for c in parsed.default_constraints]
        )

    # -- constraints of a pod ---------------------------------------------------------

    def constraints_for(self, pod: PodInfo, action: str) -> list[Constraint]:
        """The pod's own constraints of ``action``, or the default ones when it has none."""
        if pod.topology_spread_constraints:
            cache_key = f"{NAME}.{action}"
            cached = pod.cache.get(cache_key)
            if cached is None:
                cached = build_constraints(pod.topology_spread_constraints, pod.labels, action)
                pod.cache[cache_key] = cached
            own: list[Constraint] = cached
            return own
        return self._default_constraints(pod, action)

    def _default_constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """``buildDefaultConstraints``: the defaults of ``action`` with the owners' selector."""
        specs = [c for c in self.default_constraints if c.get("whenUnsatisfiable") == action]
        if not specs:
            return []
        # A pod no service or controller selects (most pods made one by one)
        # has no default constraints: known before building them.
        selector = self.default_selector(pod)
        if counts_nothing(selector):
            return []
        constraints = build_constraints(specs, pod.labels, action)
        return [
            Constraint(
                c.max_skew,
                c.topology_key,
                selector,
                c.min_domains,
                c.honor_node_affinity,
                c.honor_node_taints,
            )
            for c in constraints
        ]

    def default_selector(self, pod: PodInfo) -> LabelSelector:
        """The selector of the pod's services and controller (see the module docstring)."""
        label_set: dict[str, str] = {}
        services = self._store("", "v1", "services")
        if services is not None:
            for svc in services.list(pod.namespace):
                sel = (svc.get("spec") or {}).get("selector") or {}
                if sel and all(pod.labels.get(k) == v for k, v in sel.items()):
                    label_set.update(sel)
        requirements = [Requirement(k, "In", (v,)) for k, v in sorted(label_set.items())]
        owner = _controller_ref(pod)
        if owner is not None:
            api_version, kind, owner_name = owner
            store_id = _OWNER_STORES.get((api_version, kind))
            if store_id is not None:
                store = self._store(*store_id)
                if store is None:
                    requirements.extend(
                        Requirement(k, "In", (v,))
                        for k, v in sorted(pod.labels.items())
                        if k not in _PER_POD_LABELS and k not in label_set
                    )
                else:
                    obj = store.get(pod.namespace, owner_name)
                    if obj is not None:
                        requirements.extend(_owner_requirements(kind, obj))
        return LabelSelector(tuple(requirements))

    def _store(self, group: str, version: str, plural: str) -> Any:
        """``handle.store(...)`` if the handle offers that resource, else None.

        A handle signals an undeclared or unserved resource by raising
        (LookupError/KeyError or NotImplementedError) or by not having
        ``store`` at all (test handles); all mean "not available".
        """
        store_fn = getattr(self.handle, "store", None)
        if store_fn is None:
            return None
        try:
            return store_fn(group, version, plural)
        except (LookupError, NotImplementedError, ValueError):
            return None

    # -- PreFilter --------------------------------------------------------------------

    @hookimpl
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> PreFilterResult | Status | None:
        try:
            constraints = self.constraints_for(pod, DO_NOT_SCHEDULE)
        except SelectorError as err:
            return Status.error_status(f"obtaining pod's hard topology spread constraints: {err}")
        s = PreFilterState(constraints=constraints)
        state.write(PRE_FILTER_KEY, s)
        if not constraints:
            return Status.skip()
        table = nodes.table
        rows = table.rows()
        eligibility = _NodeEligibility(pod, table, rows, constraints)
        for c in constraints:
            per_node = count_matching_pods_per_node(table, c.selector, pod.namespace)
            eligible = eligibility.for_constraint(c)
            value_ids = table.labels.column(c.topology_key, rows)[eligible]
            size = len(table.labels.value_names.get(c.topology_key, ()))
            s.counts.append(
                np.bincount(value_ids, weights=per_node[rows[eligible]], minlength=size)
                .round()
                .astype(np.int64)
            )
            present = np.bincount(value_ids, minlength=size) > 0
            s.present.append(present)
            s.domains.append(int(present.sum()))
            s.self_match.append(c.selector.matches(pod.labels))
        return None

    @hookimpl
    def pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod, pod_to_add, node, +1)

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod, pod_to_remove, node, -1)

    def _update_with_pod(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, delta: int
    ) -> Status | None:
        """kube's ``updateWithPod``: count ``other`` in or out of its node's domains."""
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return Status.error_status(f"reading {PRE_FILTER_KEY!r} from cycle state: not found")
        if not s.constraints or other.namespace != pod.namespace:
            return None
        table = node.table
        row = np.asarray([node.row], dtype=np.int64)
        eligibility = _NodeEligibility(pod, table, row, s.constraints)
        if not eligibility.has_all_keys[0]:
            return None
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(other.labels) or not eligibility.for_constraint(c)[0]:
                continue
            value_id = int(table.labels.column(c.topology_key, row)[0])
            s.counts[i] = add_at(s.counts[i], value_id, delta)
            if value_id >= len(s.present[i]):
                grown = np.zeros(value_id + 1, dtype=np.bool_)
                grown[: len(s.present[i])] = s.present[i]
                s.present[i] = grown
            s.present[i][value_id] = True
        return None

    # -- Filter -----------------------------------------------------------------------

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult | Status:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return Status.error_status(f"reading {PRE_FILTER_KEY!r} from cycle state: not found")
        result = FilterResult(len(nodes))
        if not s.constraints:
            return result
        decided = np.zeros(len(nodes), dtype=np.bool_)
        missing_label = np.zeros(len(nodes), dtype=np.bool_)
        too_skewed = np.zeros(len(nodes), dtype=np.bool_)
        # kube checks constraints in order and stops at the first failure, so
        # a node's verdict comes from its first failing constraint.
        for i, c in enumerate(s.constraints):
            value_ids = nodes.label_values(c.topology_key)
            missing = (value_ids < 0) & ~decided
            missing_label |= missing
            decided |= missing
            skew = lookup(s.counts[i], value_ids) + int(s.self_match[i]) - s.min_match(i)
            failed = (skew > c.max_skew) & ~decided
            too_skewed |= failed
            decided |= failed
        result.reject_unresolvable(missing_label, ERR_NODE_LABEL_NOT_MATCH)
        result.reject(too_skewed, ERR_CONSTRAINTS_NOT_MATCH)
        return result

    # -- Score ------------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        table = nodes.table
        all_rows = table.rows()
        if not len(all_rows):
            return Status.skip()
        try:
            constraints = self.constraints_for(pod, SCHEDULE_ANYWAY)
        except SelectorError as err:
            return Status.error_status(f"obtaining pod's soft topology spread constraints: {err}")
        if not constraints:
            return Status.skip()
        # Only system-default spreading tolerates nodes without every topology
        # key, so that zone-less clusters still spread over hostnames.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        filtered = nodes.rows
        ignored = np.zeros(table.capacity, dtype=np.bool_)
        if require_all:
            has_all = np.ones(len(filtered), dtype=np.bool_)
            for c in constraints:
                has_all &= table.labels.column(c.topology_key, filtered) >= 0
            ignored[filtered[~has_all]] = True
        scored = filtered[~ignored[filtered]]
        eligibility = _NodeEligibility(pod, table, all_rows, constraints, require_all)
        domain_counts: list[IntArray] = []
        weights: list[float] = []
        per_node_list: list[IntArray] = []
        for c in constraints:
            per_node = count_matching_pods_per_node(table, c.selector, pod.namespace)
            per_node_list.append(per_node)
            if c.topology_key == LABEL_HOSTNAME:
                domain_counts.append(np.zeros(0, dtype=np.int64))
                weights.append(_topology_weight(len(scored)))
                continue
            size = len(table.labels.value_names.get(c.topology_key, ()))
            # Domains are the values among the scored nodes; a node without the
            # key counts as the empty value, as kube reads a missing label as "".
            candidate = _value_or_blank(table, c.topology_key, scored)
            in_domain = np.zeros(size + 1, dtype=np.bool_)
            in_domain[candidate] = True
            weights.append(_topology_weight(int(in_domain.sum())))
            eligible = eligibility.for_constraint(c)
            values = _value_or_blank(table, c.topology_key, all_rows[eligible])
            counts = np.bincount(values, weights=per_node[all_rows[eligible]], minlength=size + 1)
            counts = np.where(in_domain, counts, 0.0)
            domain_counts.append(counts[:size].round().astype(np.int64))
        state.write(
            PRE_SCORE_KEY,
            PreScoreState(constraints, ignored, domain_counts, weights, per_node_list),
        )
        return None

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> npt.NDArray[np.int64]:
        s = state.read(PRE_SCORE_KEY)
        assert isinstance(s, PreScoreState)
        total = np.zeros(len(nodes), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            value_ids = nodes.label_values(c.topology_key)
            if c.topology_key == LABEL_HOSTNAME:
                count = s.per_node[i][nodes.rows]
            else:
                count = lookup(s.domain_counts[i], value_ids)
            contribution = count * s.weights[i] + float(c.max_skew - 1)
            total += np.where(value_ids >= 0, contribution, 0.0)
        # Go's math.Round rounds halves away from zero; scores are never negative.
        scores = np.floor(total + 0.5).astype(np.int64)
        scores[s.ignored[nodes.rows]] = 0
        return scores

    @hookimpl
    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet, scores: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64] | None:
        s = state.get(PRE_SCORE_KEY)
        if not isinstance(s, PreScoreState):
            return None
        ignored = s.ignored[nodes.rows]
        valid = scores[~ignored]
        if not len(valid):
            return np.zeros(len(scores), dtype=np.int64)
        max_score = max(int(valid.max()), 0)
        min_score = int(valid.min())
        if max_score == 0:
            out = np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
        else:
            # Fewer matching pods is better: the reverse of a min-max scaling.
            out = MAX_NODE_SCORE * (max_score + min_score - scores) // max_score
        out[ignored] = 0
        return out.astype(np.int64)

    # -- events -----------------------------------------------------------------------

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.POD,
                    ActionType.ADD
                    | ActionType.UPDATE_POD_LABEL
                    | ActionType.UPDATE_POD_TOLERATION
                    | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def _hint_constraints(self, pod: PodInfo) -> list[Constraint] | None:
        try:
            return self.constraints_for(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return None

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue when an assigned pod of the namespace starts/stops matching a constraint."""
        before, after = _pod_view(old), _pod_view(new)
        for other in (before, after):
            if other is not None and not (
                other.uid == pod.uid or (other.node_name and other.namespace == pod.namespace)
            ):
                return QueueingHint.SKIP
        constraints = self._hint_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if before is not None and after is not None:
            if (
                after.uid == pod.uid
                and before.tolerations != after.tolerations
                and any(c.honor_node_taints for c in constraints)
            ):
                return QueueingHint.QUEUE
            if before.labels == after.labels:
                return QueueingHint.SKIP
            changed = any(
                c.selector.matches(before.labels) != c.selector.matches(after.labels)
                for c in constraints
            )
            return QueueingHint.QUEUE if changed else QueueingHint.SKIP
        subject = after if after is not None else before
        if subject is not None and any(c.selector.matches(subject.labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue when a node gains/loses the topology keys, or changes their values or taints."""
        constraints = self._hint_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        before, after = _node_view(old), _node_view(new)

        def matching(labels: Mapping[str, str] | None) -> bool:
            return labels is not None and all(c.topology_key in labels for c in constraints)

        old_ok = matching(before[0]) if before else False
        new_ok = matching(after[0]) if after else False
        if before and after:
            if old_ok != new_ok:
                return QueueingHint.QUEUE
            if new_ok and (
                any(
                    before[0].get(c.topology_key) != after[0].get(c.topology_key)
                    for c in constraints
                )
                or before[1] != after[1]
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if after:
            return QueueingHint.QUEUE if new_ok else QueueingHint.SKIP
        return QueueingHint.QUEUE if old_ok else QueueingHint.SKIP


# -- helpers ------------------------------------------------------------------------


def _topology_weight(size: int) -> float:
    """kube's ``topologyNormalizingWeight``: log(size + 2), so small topologies are not
    watered down by big ones."""
    return math.log(size + 2)


def _value_or_blank(table: NodeTable, key: str, rows: IntArray) -> npt.NDArray[np.int64]:
    """Value ids of ``key`` with absent labels mapped onto the id of ``""``.

    The id of ``""`` is the key's existing one if some node has ``key=""``,
    else one past the last value id (callers size their arrays ``size + 1``).
    """
    values = table.labels.column(key, rows).astype(np.int64)
    blank = table.labels.value_ids.get(key, {}).get("")
    if blank is None:
        blank = len(table.labels.value_names.get(key, ()))
    return np.where(values < 0, blank, values)


def _controller_ref(pod: PodInfo) -> tuple[str, str, str] | None:
    meta = pod.raw.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return (
                str(ref.get("apiVersion") or ""),
                str(ref.get("kind") or ""),
                str(ref.get("name") or ""),
            )
    return None


def _owner_requirements(kind: str, obj: Mapping[str, Any]) -> list[Requirement]:
    """The requirements of an owner's ``spec.selector`` (a map for RCs, a LabelSelector else)."""
    raw = (obj.get("spec") or {}).get("selector")
    if not raw:
        return []
    if kind == "ReplicationController":
        return [Requirement(str(k), "In", (str(v),)) for k, v in sorted(raw.items())]
    try:
        compiled = compile_selector(raw, "spec.selector")
    except SelectorError:
        return []
    return [] if compiled.matches_nothing else list(compiled.requirements)


@dataclass(frozen=True, slots=True)
class _PodView:
    uid: str
    namespace: str
    node_name: str
    labels: Mapping[str, str]
    tolerations: Any


def _pod_view(obj: Any) -> _PodView | None:
    """Hints may receive a PodInfo or the raw pod object; read both the same way."""
    if obj is None:
        return None
    if isinstance(obj, PodInfo):
        return _PodView(
            obj.uid,
            obj.namespace,
            obj.node_name,
            obj.labels,
            obj.raw.get("spec", {}).get("tolerations"),
        )
    if isinstance(obj, Mapping):
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        return _PodView(
            str(meta.get("uid") or ""),
            str(meta.get("namespace") or "default"),
            str(spec.get("nodeName") or ""),
            dict(meta.get("labels") or {}),
            spec.get("tolerations"),
        )
    return None


def _node_view(obj: Any) -> tuple[Mapping[str, str], Any] | None:
    """(labels, taints) of a node handed to a hint as a raw dict or a node-like object."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        meta = obj.get("metadata") or {}
        return dict(meta.get("labels") or {}), (obj.get("spec") or {}).get("taints")
    labels = getattr(obj, "labels", None)
    raw = getattr(obj, "raw", None)
    taints = (raw.get("spec") or {}).get("taints") if isinstance(raw, Mapping) else None
    return (dict(labels) if isinstance(labels, Mapping) else {}), taints
