"""Small pieces shared by the in-tree plugins.

kube-scheduler's scores are int64 arithmetic in Go; numpy's ``//`` floors
where Go truncates toward zero, so the helpers here spell out Go's rounding
so that vectorized scores equal kube-scheduler's to the unit.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.api.args import ArgsT as ArgsT
from scheduler.api.args import PluginArgs as PluginArgs
from scheduler.api.args import coerce_args as coerce_args
from scheduler.api.handle import ObjectStore
from scheduler.api.results import MAX_NODE_SCORE
from scheduler.model.selectors import LabelSelector
from scheduler.state.nodetable import NodeTable

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

T = TypeVar("T")


def go_div(numerator: IntArray, denominator: IntArray | int) -> IntArray:
    """Go's int64 division (truncates toward zero); ``denominator`` must be non-zero."""
    num = np.asarray(numerator, dtype=np.int64)
    den = np.asarray(denominator, dtype=np.int64)
    quotient = np.abs(num) // np.abs(den)
    return np.where((num < 0) != (den < 0), -quotient, quotient).astype(np.int64)


def default_normalize_score(
    scores: IntArray, reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> IntArray:
    """kube's DefaultNormalizeScore: scale [0, max] to [0, max_priority], optionally reversed.

    With every score zero, reverse gives everyone ``max_priority`` and
    no-reverse leaves the zeros alone, exactly as kube does.
    """
    scores = np.asarray(scores, dtype=np.int64)
    if scores.size == 0:
        return scores.copy()
    max_count = int(scores.max())
    if max_count <= 0:
        if reverse:
            return np.full_like(scores, max_priority)
        return scores.copy()
    out = go_div(scores * max_priority, max_count)
    if reverse:
        out = max_priority - out
    return out


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """An API object's ``metadata``; empty when it has none."""
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def object_name(obj: Mapping[str, Any]) -> str:
    """An API object's ``metadata.name``; empty when it has none."""
    return str(meta(obj).get("name") or "")


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(namespace, name)``: how ``ObjectStore.get`` and ``changed_since`` name an object."""
    m = meta(obj)
    return str(m.get("namespace") or ""), str(m.get("name") or "")


def resource_version(obj: Mapping[str, Any]) -> str:
    """An API object's ``metadata.resourceVersion``; empty when it has none."""
    return str(meta(obj).get("resourceVersion") or "")


def object_uid(obj: Any) -> str:
    """The UID of an event object, whether a parsed PodInfo or raw API JSON."""
    uid = getattr(obj, "uid", None)
    if isinstance(uid, str):
        return uid
    if isinstance(obj, Mapping):
        meta = obj.get("metadata") or {}
        return str(meta.get("uid") or "")
    return ""


class RowKeyIndex:
    """Which node rows carry each key (an image, a host port ...), kept incrementally.

    The NodeTable bumps ``generation[row]`` on every change of a row; this
    index re-reads only the rows whose generation moved since the last call
    (found with one vectorized comparison), so keeping it current costs a few
    rows per scheduling cycle, not a pass over every node. ``extract`` maps a
    row to its keys, each with an integer value (an image's size, say).
    """

    def __init__(self, extract: Callable[[NodeTable, int], Mapping[Hashable, int]]) -> None:
        self._extract = extract
        self._table: NodeTable | None = None
        self._generation: IntArray = np.zeros(0, dtype=np.int64)
        self._row_keys: dict[int, frozenset[Hashable]] = {}
        self._masks: dict[Hashable, BoolArray] = {}
        self._values: dict[Hashable, IntArray] = {}
        self._capacity = 0

    def _reset(self, table: NodeTable) -> None:
        self._table = table
        self._generation = np.full(table.capacity, -1, dtype=np.int64)
        self._row_keys = {}
        self._masks = {}
        self._values = {}
        self._capacity = table.capacity

    def _grow(self, capacity: int) -> None:
        old = self._capacity
        generation = np.full(capacity, -1, dtype=np.int64)
        generation[:old] = self._generation
        self._generation = generation
        for key, mask in list(self._masks.items()):
            bigger_mask = np.zeros(capacity, dtype=np.bool_)
            bigger_mask[:old] = mask
            self._masks[key] = bigger_mask
            bigger_values = np.zeros(capacity, dtype=np.int64)
            bigger_values[:old] = self._values[key]
            self._values[key] = bigger_values
        self._capacity = capacity

    def refresh(self, table: NodeTable) -> None:
        """Bring the index up to date with ``table`` (cheap when little changed)."""
        if self._table is not table.origin:  # what-if copies refresh their rows only
            self._reset(table.origin)
        if table.capacity != self._capacity:
            self._grow(table.capacity)
        changed = np.flatnonzero(table.generation != self._generation)
        for row in changed.tolist():
            old = self._row_keys.pop(row, frozenset())
            items = dict(self._extract(table, row)) if table.alive[row] else {}
            for key in old - items.keys():
                self._masks[key][row] = False
                self._values[key][row] = 0
            for key, value in items.items():
                mask = self._masks.get(key)
                if mask is None:
                    mask = self._masks[key] = np.zeros(self._capacity, dtype=np.bool_)
                    self._values[key] = np.zeros(self._capacity, dtype=np.int64)
                mask[row] = True
                self._values[key][row] = value
            if items:
                self._row_keys[row] = frozenset(items)
            self._generation[row] = table.generation[row]

    def mask(self, key: Hashable) -> BoolArray | None:
        """Rows (table-wide, length ``capacity``) carrying ``key``; None if no row does."""
        return self._masks.get(key)

    def values(self, key: Hashable) -> IntArray | None:
        """The value of ``key`` per row (0 where absent); None if no row carries it."""
        return self._values.get(key)


# -- shared by the pod-relationship plugins (PodTopologySpread, InterPodAffinity) ------

NOTHING = LabelSelector.nothing()


def compile_selector(raw: Mapping[str, Any] | None, path: str = "labelSelector") -> LabelSelector:
    """Parse a metav1.LabelSelector dict (None gives match-nothing); SelectorError if invalid."""
    return LabelSelector.from_dict(None if raw is None else dict(raw), path)


def lookup(counts: npt.NDArray[Any], value_ids: npt.NDArray[np.int32]) -> IntArray:
    """``counts[value_ids]`` with 0 for absent (-1) or not-yet-counted (new) value ids."""
    size = len(counts)
    valid = (value_ids >= 0) & (value_ids < size)
    out = np.zeros(len(value_ids), dtype=np.int64)
    if size:
        out[valid] = counts[value_ids[valid]]
    return out


def add_at(counts: IntArray, value_id: int, delta: int) -> IntArray:
    """``counts[value_id] += delta``, growing ``counts`` if the value id is new."""
    if value_id >= len(counts):
        grown = np.zeros(value_id + 1, dtype=np.int64)
        grown[: len(counts)] = counts
        counts = grown
    counts[value_id] += delta
    return counts


class FromStore(Generic[T]):
    """A value derived from one watched store, rebuilt only when its ``revision()`` moves.

    Plugins derive indexes from informer stores (slices grouped into pools,
    classes by name ...); rebuilding them per pod would re-read every object.
    """

    def __init__(
        self, store: Callable[[], ObjectStore], build: Callable[[list[Mapping[str, Any]]], T]
    ) -> None:
        self._store = store
        self._build = build
        self._cached: tuple[int, T] | None = None

    def get(self) -> T:
        store = self._store()
        revision = store.revision()
        cached = self._cached
        if cached is None or cached[0] != revision:
            cached = self._cached = (revision, self._build(store.list()))
        return cached[1]


StoreKey = tuple[str, str]


class StoreCursor:
    """A reader's place in one watched store: what changed since its last look.

    Readers that keep something per object (counts per claim, an index)
    apply :meth:`changes` in order, each pair replacing what they held for
    that key.
    """

    def __init__(self, store: Callable[[], ObjectStore]) -> None:
        self._store = store
        self._revision: int | None = None

    def changes(self, known: Iterable[StoreKey]) -> list[tuple[StoreKey, Mapping[str, Any] | None]]:
        """``(key, object or None if gone)`` for each object changed since the last call.

        The objects ``changed_since`` names (plugin API 2.3); when the store
        cannot tell (a re-list) or on the first call, every object, and None
        for each of the reader's ``known`` keys no longer there.
        """
        store = self._store()
        revision = store.revision()
        if revision == self._revision:
            return []
        since, self._revision = self._revision, revision
        changed = None if since is None else store.changed_since(since)
        if changed is not None:
            return [(key, store.get(*key)) for key in changed]
        listed = {object_key(obj): obj for obj in store.list()}
        out: list[tuple[StoreKey, Mapping[str, Any] | None]] = [
            (key, None) for key in known if key not in listed
        ]
        out.extend(listed.items())
        return out


class StoreIndex:
    """The objects of one watched store grouped by a value read from each (client-go's indexer).

    A plugin that finds objects by something other than a label (the pod a
    claim belongs to, the PodGroup a pod names in its spec) would otherwise
    scan the store per lookup, or rebuild a whole index at each revision as
    :class:`FromStore` does. This index applies only the objects the store
    says changed since the last lookup (``changed_since``, plugin API 2.3),
    and reads every object only when the store cannot tell.
    """

    def __init__(
        self,
        store: Callable[[], ObjectStore],
        value_of: Callable[[Mapping[str, Any]], Hashable | None],
    ) -> None:
        self._cursor = StoreCursor(store)
        self._value_of = value_of  # None: the object is in no group
        self._values: dict[StoreKey, tuple[Mapping[str, Any], Hashable | None]] = {}
        self._groups: dict[Hashable, dict[StoreKey, Mapping[str, Any]]] = {}

    def get(self, value: Hashable) -> Mapping[StoreKey, Mapping[str, Any]]:
        """The objects whose value is ``value``, by ``(namespace, name)``; do not change it."""
        for key, obj in self._cursor.changes(self._values):
            self._put(key, obj)
        return self._groups.get(value) or {}

    def _put(self, key: StoreKey, obj: Mapping[str, Any] | None) -> None:
        previous = self._values.get(key)
        if previous is not None:
            if previous[0] is obj:
                return  # informers replace changed objects: the same one has not changed
            group = self._groups.get(previous[1])
            if group is not None:
                group.pop(key, None)
                if not group:
                    del self._groups[previous[1]]
            del self._values[key]
        if obj is None:
            return
        value = self._value_of(obj)
        self._values[key] = (obj, value)
        if value is not None:
            self._groups.setdefault(value, {})[key] = obj
