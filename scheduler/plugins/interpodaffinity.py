"""InterPodAffinity: required and preferred pod (anti-)affinity, both directions.

kube-scheduler's default plugin of the same name, computed column-wise.

**The incoming pod's terms** are matched against every assigned pod at once:
one vectorized selector match over ``table.pod_table`` (namespace filter
first), one ``np.bincount`` over the matches' node rows for per-node counts,
one more ``bincount`` keyed by the node label column of the term's topology
key for per-domain counts.

**Existing pods' terms** (symmetry: their required anti-affinity must hold
against the incoming pod; their required and preferred terms feed scoring)
are selectors *of* the existing pods evaluated *against one* pod. Pods of one
workload share their terms, so we group them: an index keeps, for each
distinct (kind, term, weight) "slot", how many pods carrying it sit on each
node row. A cycle then evaluates each distinct term once against the
incoming pod and aggregates the slot's node rows per domain with numpy. The
index is maintained incrementally: only nodes whose ``NodeTable.generation``
moved are re-read, and nothing at all is done while
``pod_table.with_affinity`` is empty.

Namespaces: a term without ``namespaces`` and ``namespaceSelector`` means the
owning pod's namespace; an empty ``namespaceSelector`` (``{}``) means all
namespaces. A non-empty ``namespaceSelector`` needs namespace labels, read
from ``handle.store("", "v1", "namespaces")`` (declared in ``watches``). If
the handle cannot give that store, a non-empty namespaceSelector selects no
namespace and the incoming pod's namespace is taken as unlabelled -- what
kube-scheduler does when its namespace lister has no entry.

``matchLabelKeys``/``mismatchLabelKeys`` of affinity terms are merged into the
term's selector (``key In``/``NotIn`` the owning pod's value); the API server
may already have done so, and merging twice changes nothing.

Extension points: PreFilter (+ AddPod/RemovePod), Filter, PreScore, Score,
NormalizeScore, EventsToRegister.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

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
from scheduler.model.selectors import LabelSelector, Requirement, SelectorError
from scheduler.plugins._helpers import (
    NOTHING,
    PluginArgs,
    add_at,
    coerce_args,
    compile_selector,
    lookup,
)
from scheduler.state.nodetable import NodeInfo, NodeSet, NodeTable
from scheduler.state.pod import InvalidPodError, PodInfo

NAME = "InterPodAffinity"

ERR_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)

PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
NAMESPACES = ("", "v1", "namespaces")

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Counts = dict[str, IntArray]  # topology key -> count per node-label value id


class Args(PluginArgs):
    """``pluginConfig`` args, as kube-scheduler's ``InterPodAffinityArgs``."""

    hard_pod_affinity_weight: int = Field(default=1, ge=0, le=100)
    ignore_preferred_terms_of_existing_pods: bool = False


# -- terms --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed PodAffinityTerm, namespaces resolved against the pod that owns it."""

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector
    topology_key: str

    def matches(
        self, labels: Mapping[str, str], namespace: str, ns_labels: Mapping[str, str]
    ) -> bool:
        """kube's ``AffinityTerm.Matches``: namespace (listed or selected), then labels."""
        in_namespace = namespace in self.namespaces or self.namespace_selector.matches(ns_labels)
        return in_namespace and self.selector.matches(labels)

    def pod_mask(self, table: NodeTable, prows: IntArray) -> BoolArray:
        """Which assigned pods (``prows`` of the pod table) match: one column-wise pass.

        Only for terms whose namespaceSelector is Nothing or Everything, which
        is what the incoming pod's terms are after namespace merging.
        """
        pods = table.pod_table
        out = np.zeros(len(prows), dtype=np.bool_)
        if self.selector.matches_nothing:
            return out
        if self.namespace_selector.is_everything:
            candidates = np.arange(len(prows))
        else:
            candidates = np.flatnonzero(pods.in_namespaces(prows, set(self.namespaces)))
        if len(candidates):
            hit = pods.labels.match_all(self.selector.requirements, prows[candidates])
            out[candidates[hit]] = True
        return out


@dataclass(frozen=True, slots=True)
class PodTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[tuple[int, AffinityTerm], ...] = ()
    preferred_anti_affinity: tuple[tuple[int, AffinityTerm], ...] = ()


def _parse_term(pod: PodInfo, raw: Mapping[str, Any]) -> AffinityTerm:
    selector = compile_selector(raw.get("labelSelector"))
    if not selector.matches_nothing:
        extra: list[Requirement] = []
        for key in raw.get("matchLabelKeys") or ():
            if key in pod.labels:
                extra.append(Requirement(key, "In", (pod.labels[key],)))
        for key in raw.get("mismatchLabelKeys") or ():
            if key in pod.labels:
                extra.append(Requirement(key, "NotIn", (pod.labels[key],)))
        if extra:
            selector = LabelSelector(selector.requirements + tuple(extra))
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or ())
    ns_selector_raw = raw.get("namespaceSelector")
    if not namespaces and ns_selector_raw is None:
        namespaces = frozenset({pod.namespace})
    return AffinityTerm(
        selector=selector,
        namespaces=namespaces,
        namespace_selector=compile_selector(ns_selector_raw, "namespaceSelector"),
        topology_key=str(raw.get("topologyKey") or ""),
    )


def pod_terms(pod: PodInfo) -> PodTerms:
    """The pod's affinity terms, parsed once per PodInfo; SelectorError if invalid."""
    cache_key = NAME + ".terms"
    cached = pod.cache.get(cache_key)
    if cached is None:
        try:
            cached = _parse_pod_terms(pod)
        except SelectorError as err:
            cached = err
        pod.cache[cache_key] = cached
    if isinstance(cached, SelectorError):
        raise cached
    terms: PodTerms = cached
    return terms


def _parse_pod_terms(pod: PodInfo) -> PodTerms:
    affinity = pod.affinity.get("podAffinity") or {}
    anti = pod.affinity.get("podAntiAffinity") or {}

    def required(section: Mapping[str, Any]) -> tuple[AffinityTerm, ...]:
        raw = section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        return tuple(_parse_term(pod, t) for t in raw)

    def preferred(section: Mapping[str, Any]) -> tuple[tuple[int, AffinityTerm], ...]:
        raw = section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        return tuple(
            (int(t.get("weight") or 0), _parse_term(pod, t.get("podAffinityTerm") or {}))
            for t in raw
        )

    return PodTerms(required(affinity), required(anti), preferred(affinity), preferred(anti))


def _has_pod_affinity(pod: PodInfo) -> bool:
    return bool(pod.affinity.get("podAffinity") or pod.affinity.get("podAntiAffinity"))


# -- existing pods' terms, grouped ---------------------------------------------------

REQUIRED_AFFINITY, REQUIRED_ANTI_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY = range(4)
Slot = tuple[int, AffinityTerm, int]  # (kind, term, weight)


class ExistingTermsIndex:
    """For each distinct (kind, term, weight) of assigned pods: pods carrying it per node row.

    Kept up to date from ``NodeTable.generation``: each call re-reads the pods
    of the nodes that changed since the previous call, and only those.
    """

    def __init__(self) -> None:
        self.seen = np.full(0, -1, dtype=np.int64)
        self.node_slots: dict[int, list[int]] = {}
        self.slot_ids: dict[Slot, int] = {}
        self.slots: list[Slot | None] = []
        self.slot_rows: list[dict[int, int]] = []
        self.by_kind: list[set[int]] = [set(), set(), set(), set()]
        self._free: list[int] = []

    def sync(self, table: NodeTable) -> None:
        size = table.size
        if len(self.seen) < size:
            grown = np.full(table.capacity, -1, dtype=np.int64)
            grown[: len(self.seen)] = self.seen
            self.seen = grown
        generation = table.generation[:size]
        for row in np.flatnonzero(generation != self.seen[:size]).tolist():
            for slot in self.node_slots.pop(row, ()):
                self._count(slot, row, -1)
            if table.alive[row]:
                slots = [s for p in table.pods[row].values() for s in self._pod_slots(p)]
                for slot in slots:
                    self._count(slot, row, +1)
                if slots:
                    self.node_slots[row] = slots
            self.seen[row] = generation[row]

    def _pod_slots(self, pod: PodInfo) -> list[int]:
        if not _has_pod_affinity(pod):
            return []
        try:
            terms = pod_terms(pod)
        except SelectorError:
            return []  # an existing pod's unparsable terms cannot match anything
        slots = [self._slot((REQUIRED_AFFINITY, t, 0)) for t in terms.required_affinity]
        slots += [self._slot((REQUIRED_ANTI_AFFINITY, t, 0)) for t in terms.required_anti_affinity]
        slots += [self._slot((PREFERRED_AFFINITY, t, w)) for w, t in terms.preferred_affinity]
        slots += [
            self._slot((PREFERRED_ANTI_AFFINITY, t, w)) for w, t in terms.preferred_anti_affinity
        ]
        return slots

    def _slot(self, key: Slot) -> int:
        sid = self.slot_ids.get(key)
        if sid is None:
            if self._free:
                sid = self._free.pop()
                self.slots[sid] = key
            else:
                sid = len(self.slots)
                self.slots.append(key)
                self.slot_rows.append({})
            self.slot_ids[key] = sid
            self.by_kind[key[0]].add(sid)
        return sid

    def _count(self, sid: int, row: int, delta: int) -> None:
        rows = self.slot_rows[sid]
        n = rows.get(row, 0) + delta
        if n:
            rows[row] = n
            return
        rows.pop(row, None)
        if not rows:
            key = self.slots[sid]
            if key is not None:
                del self.slot_ids[key]
                self.by_kind[key[0]].discard(sid)
            self.slots[sid] = None
            self._free.append(sid)

    def entries(self, kind: int) -> Iterator[tuple[AffinityTerm, int, IntArray, IntArray]]:
        """(term, weight, node rows, pods per row) of every slot of ``kind``."""
        for sid in self.by_kind[kind]:
            key = self.slots[sid]
            rows = self.slot_rows[sid]
            if key is None or not rows:
                continue
            yield (
                key[1],
                key[2],
                np.fromiter(rows.keys(), dtype=np.int64, count=len(rows)),
                np.fromiter(rows.values(), dtype=np.int64, count=len(rows)),
            )


_INDEXES: weakref.WeakKeyDictionary[NodeTable, ExistingTermsIndex] = weakref.WeakKeyDictionary()


def existing_terms(table: NodeTable) -> ExistingTermsIndex | None:
    """The synced index of existing pods' terms, or None when no pod has pod affinity."""
    if not table.pod_table.with_affinity:
        return None
    index = _INDEXES.get(table)
    if index is None:
        index = _INDEXES[table] = ExistingTermsIndex()
    index.sync(table)
    return index


# -- counting helpers ---------------------------------------------------------------


def _domain_sums(
    table: NodeTable, key: str, rows: IntArray, amounts: npt.NDArray[Any]
) -> npt.NDArray[np.float64] | None:
    """Sum of ``amounts`` (aligned with node ``rows``) per value id of ``key``.

    None when no row has the key (no domain touched).
    """
    value_ids = table.labels.column(key, rows)
    has = value_ids >= 0
    if not has.any():
        return None
    size = len(table.labels.value_names.get(key, ()))
    weights = np.asarray(amounts, dtype=np.float64)[has]
    result = np.bincount(value_ids[has], weights=weights, minlength=size).astype(np.float64)
    return result


def _accumulate(target: dict[str, Any], key: str, sums: npt.NDArray[np.float64]) -> None:
    current = target.get(key)
    if current is None:
        target[key] = sums.copy()
        return
    if len(current) < len(sums):
        grown = np.zeros(len(sums), dtype=np.float64)
        grown[: len(current)] = current
        current = grown
    current[: len(sums)] += sums
    target[key] = current


def _as_counts(sums: dict[str, Any]) -> Counts:
    return {k: np.rint(v).astype(np.int64) for k, v in sums.items()}


def _any_positive(counts: Counts) -> bool:
    return any(bool((v > 0).any()) for v in counts.values())


def _node_value_id(node: NodeInfo, key: str) -> int:
    return int(node.table.labels.column(key, np.asarray([node.row], dtype=np.int64))[0])


# -- cycle state --------------------------------------------------------------------


@dataclass(slots=True)
class PreFilterState:
    """Counts per topology domain (keyed by topology key, indexed by label value id):

    - ``existing_anti``: existing pods whose required anti-affinity matches the pod;
    - ``affinity``: pods matching *all* the pod's required affinity terms;
    - ``anti``: pods matching each of the pod's required anti-affinity terms.
    """

    pod: PodInfo
    terms: PodTerms
    ns_labels: Mapping[str, str]
    existing_anti: Counts = field(default_factory=dict)
    affinity: Counts = field(default_factory=dict)
    anti: Counts = field(default_factory=dict)
    self_match: bool = False

    def clone(self) -> PreFilterState:
        """A copy for preemption's what-if evaluation; counts are copied, terms shared."""
        return PreFilterState(
            pod=self.pod,
            terms=self.terms,
            ns_labels=self.ns_labels,
            existing_anti={k: v.copy() for k, v in self.existing_anti.items()},
            affinity={k: v.copy() for k, v in self.affinity.items()},
            anti={k: v.copy() for k, v in self.anti.items()},
            self_match=self.self_match,
        )

    def update_with_pod(self, other: PodInfo, node: NodeInfo, delta: int) -> None:
        """kube's ``updateWithPod``: count ``other`` on ``node`` in or out of each map."""
        labels = node.labels
        try:
            other_terms = pod_terms(other)
        except SelectorError:
            other_terms = PodTerms()
        pod = self.pod
        for t in other_terms.required_anti_affinity:
            if t.topology_key in labels and t.matches(pod.labels, pod.namespace, self.ns_labels):
                self._add(self.existing_anti, t.topology_key, node, delta)
        required = self.terms.required_affinity
        if required and all(t.matches(other.labels, other.namespace, {}) for t in required):
            for t in required:
                if t.topology_key in labels:
                    self._add(self.affinity, t.topology_key, node, delta)
        for t in self.terms.required_anti_affinity:
            if t.topology_key in labels and t.matches(other.labels, other.namespace, {}):
                self._add(self.anti, t.topology_key, node, delta)

    @staticmethod
    def _add(counts: Counts, key: str, node: NodeInfo, delta: int) -> None:
        current = counts.get(key, np.zeros(0, dtype=np.int64))
        counts[key] = add_at(current, _node_value_id(node, key), delta)


@dataclass(slots=True)
class PreScoreState:
    """Score per topology domain: key -> summed weight per label value id."""

    scores: dict[str, npt.NDArray[np.float64]]

    def clone(self) -> PreScoreState:
        """Read-only after PreScore, so copies share it."""
        return self


# -- the plugin ---------------------------------------------------------------------


class InterPodAffinity(Plugin):
    """Pod affinity and anti-affinity, required (filter) and preferred (score)."""

    api_version = "1.0"
    Args: ClassVar[type[BaseModel] | None] = Args
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (NAMESPACES,)

    def __init__(self, args: Any, handle: Handle) -> None:
        parsed = coerce_args(Args, args)
        super().__init__(parsed, handle)
        self.hard_pod_affinity_weight = parsed.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = (
            parsed.ignore_preferred_terms_of_existing_pods
        )

    # -- namespaces -------------------------------------------------------------------

    def _namespace_store(self) -> Any:
        store_fn = getattr(self.handle, "store", None)
        if store_fn is None:
            return None
        try:
            return store_fn(*NAMESPACES)
        except (LookupError, NotImplementedError, ValueError):
            return None

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """Labels of ``namespace`` (empty when unknown, as kube assumes)."""
        store = self._namespace_store()
        obj = store.get("", namespace) if store is not None else None
        if obj is None:
            return {}
        return dict((obj.get("metadata") or {}).get("labels") or {})

    def merge_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """``mergeAffinityTermNamespacesIfNotEmpty``: unroll a namespaceSelector into names.

        Everything (``{}``) is kept as is; any other selector is replaced by
        the namespaces it selects now, so matching needs no namespace labels.
        """
        selector = term.namespace_selector
        if selector.matches_nothing or selector.is_everything:
            return term
        names = set(term.namespaces)
        store = self._namespace_store()
        if store is not None:
            for ns in store.list(None):
                meta = ns.get("metadata") or {}
                if selector.matches(meta.get("labels") or {}):
                    names.add(str(meta.get("name") or ""))
        return replace(term, namespaces=frozenset(names), namespace_selector=NOTHING)

    def _merged_terms(self, pod: PodInfo) -> PodTerms:
        terms = pod_terms(pod)
        return PodTerms(
            tuple(self.merge_namespaces(t) for t in terms.required_affinity),
            tuple(self.merge_namespaces(t) for t in terms.required_anti_affinity),
            tuple((w, self.merge_namespaces(t)) for w, t in terms.preferred_affinity),
            tuple((w, self.merge_namespaces(t)) for w, t in terms.preferred_anti_affinity),
        )

    # -- PreFilter --------------------------------------------------------------------

    @hookimpl
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> PreFilterResult | Status | None:
        try:
            terms = self._merged_terms(pod)
        except SelectorError as err:
            return Status.unresolvable(f"parsing pod: {err}")
        table = nodes.table
        s = PreFilterState(pod=pod, terms=terms, ns_labels=self.namespace_labels(pod.namespace))
        s.existing_anti = self._existing_anti_counts(table, s)
        if terms.required_affinity or terms.required_anti_affinity:
            prows = table.pod_table.rows()
            if terms.required_affinity:
                mask = np.ones(len(prows), dtype=np.bool_)
                for t in terms.required_affinity:
                    mask &= t.pod_mask(table, prows)
                per_node = table.pod_table.count_per_node(prows[mask], table.capacity)
                s.affinity = self._per_domain(table, terms.required_affinity, per_node)
                s.self_match = all(
                    t.matches(pod.labels, pod.namespace, {}) for t in terms.required_affinity
                )
            sums: dict[str, Any] = {}
            for t in terms.required_anti_affinity:
                per_node = table.pod_table.count_per_node(
                    prows[t.pod_mask(table, prows)], table.capacity
                )
                _accumulate_counts(table, t.topology_key, per_node, sums)
            s.anti = _as_counts(sums)
        state.write(PRE_FILTER_KEY, s)
        if not s.existing_anti and not terms.required_affinity and not terms.required_anti_affinity:
            return Status.skip()
        return None

    def _existing_anti_counts(self, table: NodeTable, s: PreFilterState) -> Counts:
        """Domains of existing pods whose required anti-affinity matches the incoming pod."""
        index = existing_terms(table)
        if index is None:
            return {}
        sums: dict[str, Any] = {}
        pod = s.pod
        for term, _, rows, counts in index.entries(REQUIRED_ANTI_AFFINITY):
            if term.matches(pod.labels, pod.namespace, s.ns_labels):
                domain = _domain_sums(table, term.topology_key, rows, counts)
                if domain is not None:
                    _accumulate(sums, term.topology_key, domain)
        return _as_counts(sums)

    @staticmethod
    def _per_domain(
        table: NodeTable, terms: tuple[AffinityTerm, ...], per_node: IntArray
    ) -> Counts:
        """Per-domain counts of ``per_node`` for each term's key (terms sharing a key add up)."""
        sums: dict[str, Any] = {}
        for t in terms:
            _accumulate_counts(table, t.topology_key, per_node, sums)
        return _as_counts(sums)

    @hookimpl
    def pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return Status.error_status(f"reading {PRE_FILTER_KEY!r} from cycle state: not found")
        s.update_with_pod(pod_to_add, node, +1)
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return Status.error_status(f"reading {PRE_FILTER_KEY!r} from cycle state: not found")
        s.update_with_pod(pod_to_remove, node, -1)
        return None

    # -- Filter -----------------------------------------------------------------------

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult | Status:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return Status.error_status(f"reading {PRE_FILTER_KEY!r} from cycle state: not found")
        n = len(nodes)
        result = FilterResult(n)
        decided = np.zeros(n, dtype=np.bool_)
        columns: dict[str, npt.NDArray[np.int32]] = {}

        def column(key: str) -> npt.NDArray[np.int32]:
            col = columns.get(key)
            if col is None:
                col = columns[key] = nodes.label_values(key)
            return col

        # As kube, the first failing check decides a node's verdict.
        required = s.terms.required_affinity
        if required:
            has_all_keys = np.ones(n, dtype=np.bool_)
            pods_exist = np.ones(n, dtype=np.bool_)
            for t in required:
                col = column(t.topology_key)
                has_all_keys &= col >= 0
                pods_exist &= lookup(s.affinity.get(t.topology_key, _EMPTY), col) > 0
            # The first pod of a group with affinity to itself may go anywhere
            # (with the topology keys) while no pod matches anywhere yet.
            first_of_group = s.self_match and not _any_positive(s.affinity)
            failed = ~(has_all_keys & (pods_exist | first_of_group))
            result.reject_unresolvable(failed, ERR_AFFINITY_RULES_NOT_MATCH)
            decided |= failed
        if _any_positive(s.anti):
            bad = np.zeros(n, dtype=np.bool_)
            for t in s.terms.required_anti_affinity:
                bad |= lookup(s.anti.get(t.topology_key, _EMPTY), column(t.topology_key)) > 0
            failed = bad & ~decided
            result.reject(failed, ERR_ANTI_AFFINITY_RULES_NOT_MATCH)
            decided |= failed
        if s.existing_anti:
            bad = np.zeros(n, dtype=np.bool_)
            for key, counts in s.existing_anti.items():
                bad |= lookup(counts, column(key)) > 0
            result.reject(bad & ~decided, ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return result

    # -- Score ------------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        if not len(nodes):
            return Status.skip()
        try:
            raw_terms = pod_terms(pod)
        except SelectorError as err:
            return Status.error_status(f"parsing pod: {err}")
        has_constraints = bool(raw_terms.preferred_affinity or raw_terms.preferred_anti_affinity)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        table = nodes.table
        terms = PodTerms(
            preferred_affinity=tuple(
                (w, self.merge_namespaces(t)) for w, t in raw_terms.preferred_affinity
            ),
            preferred_anti_affinity=tuple(
                (w, self.merge_namespaces(t)) for w, t in raw_terms.preferred_anti_affinity
            ),
        )
        sums: dict[str, Any] = {}
        if has_constraints:
            prows = table.pod_table.rows()
            weighted = [(w, t) for w, t in terms.preferred_affinity]
            weighted += [(-w, t) for w, t in terms.preferred_anti_affinity]
            for weight, t in weighted:
                per_node = table.pod_table.count_per_node(
                    prows[t.pod_mask(table, prows)], table.capacity
                )
                rows = np.flatnonzero(per_node)
                domain = _domain_sums(table, t.topology_key, rows, per_node[rows] * weight)
                if domain is not None:
                    _accumulate(sums, t.topology_key, domain)
        index = existing_terms(table)
        if index is not None:
            ns_labels = self.namespace_labels(pod.namespace)
            kinds = [(PREFERRED_AFFINITY, 1), (PREFERRED_ANTI_AFFINITY, -1)]
            if self.hard_pod_affinity_weight > 0:
                kinds.append((REQUIRED_AFFINITY, 1))
            for kind, sign in kinds:
                for term, weight, rows, counts in index.entries(kind):
                    if not term.matches(pod.labels, pod.namespace, ns_labels):
                        continue
                    w = self.hard_pod_affinity_weight if kind == REQUIRED_AFFINITY else weight
                    domain = _domain_sums(table, term.topology_key, rows, counts * (sign * w))
                    if domain is not None:
                        _accumulate(sums, term.topology_key, domain)
        if not sums:
            return Status.skip()
        state.write(PRE_SCORE_KEY, PreScoreState(sums))
        return None

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> npt.NDArray[np.int64]:
        s = state.read(PRE_SCORE_KEY)
        assert isinstance(s, PreScoreState)
        total = np.zeros(len(nodes), dtype=np.float64)
        for key, by_value in s.scores.items():
            value_ids = nodes.label_values(key)
            valid = (value_ids >= 0) & (value_ids < len(by_value))
            total[valid] += by_value[value_ids[valid]]
        return np.rint(total).astype(np.int64)

    @hookimpl
    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet, scores: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64] | None:
        s = state.get(PRE_SCORE_KEY)
        if not isinstance(s, PreScoreState) or not s.scores or not len(scores):
            return None
        low, high = int(scores.min()), int(scores.max())
        if high - low <= 0:
            return np.zeros(len(scores), dtype=np.int64)
        # Same operation order as kube (ratio first) so truncation agrees.
        ratio = (scores - low).astype(np.float64) / float(high - low)
        return (float(MAX_NODE_SCORE) * ratio).astype(np.int64)

    # -- events -----------------------------------------------------------------------

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            # UpdateNodeTaint is there because a node that was added while not
            # ready may only become visible to the queue through a taint change.
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue when an assigned pod starts matching the affinity or stops matching the anti."""
        before, after = _pod_of(old), _pod_of(new)
        if (old is not None and before is None) or (new is not None and after is None):
            return QueueingHint.QUEUE  # an object we cannot read: retrying is the safe answer
        if (after is not None and not after.node_name) or (
            before is not None and not before.node_name
        ):
            return QueueingHint.SKIP
        try:
            terms = pod_terms(pod)
        except SelectorError:
            return QueueingHint.QUEUE

        def all_match(ts: tuple[AffinityTerm, ...], other: PodInfo) -> bool:
            return bool(ts) and all(t.matches(other.labels, other.namespace, {}) for t in ts)

        affinity, anti = terms.required_affinity, terms.required_anti_affinity
        if before is not None and after is not None:
            if not all_match(affinity, before) and all_match(affinity, after):
                return QueueingHint.QUEUE
            if all_match(anti, before) and not all_match(anti, after):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if after is not None:
            return QueueingHint.QUEUE if all_match(affinity, after) else QueueingHint.SKIP
        if before is not None and all_match(anti, before):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue when the added/updated node has a topology key of the pod's required terms."""
        labels = _node_labels(new)
        try:
            terms = pod_terms(pod)
        except SelectorError:
            return QueueingHint.QUEUE
        for t in (*terms.required_affinity, *terms.required_anti_affinity):
            if t.topology_key in labels:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


_EMPTY = np.zeros(0, dtype=np.int64)


def _accumulate_counts(
    table: NodeTable, key: str, per_node: IntArray, sums: dict[str, Any]
) -> None:
    rows = np.flatnonzero(per_node)
    domain = _domain_sums(table, key, rows, per_node[rows])
    if domain is not None:
        _accumulate(sums, key, domain)


def _pod_of(obj: Any) -> PodInfo | None:
    """Hints may receive PodInfo or raw pod objects; normalise to PodInfo."""
    if obj is None or isinstance(obj, PodInfo):
        return obj
    if isinstance(obj, Mapping):
        try:
            return PodInfo.from_dict(dict(obj))
        except InvalidPodError:
            return None
    return None


def _node_labels(obj: Any) -> Mapping[str, str]:
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return dict((obj.get("metadata") or {}).get("labels") or {})
    labels = getattr(obj, "labels", None)
    return dict(labels) if isinstance(labels, Mapping) else {}
