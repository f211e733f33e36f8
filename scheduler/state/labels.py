"""Column-oriented label index: label selectors evaluated for all rows at once.

Each label key gets an int32 column holding an interned value id per row
(-1 where the row lacks the key). A requirement such as ``zone In (a, b)``
then becomes one ``np.isin`` over a column instead of a Python loop over
thousands of nodes or pods. Rows are whatever the owner indexes (nodes in the
NodeTable, assigned pods in the PodTable).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from scheduler.model.selectors import label_int_value

ABSENT = -1
UNKNOWN_VALUE = -2  # a value no row has: matches nothing with In

_NO_LABELS: Mapping[str, str] = MappingProxyType({})

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


class LabelIndex:
    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self.columns: dict[str, npt.NDArray[np.int32]] = {}
        self.value_ids: dict[str, dict[str, int]] = {}
        self.value_names: dict[str, list[str]] = {}
        # Each row's labels as given to set_row (not copied: owners pass maps
        # they never change - a pod's, or a node's fresh parse).
        self.row_labels: list[Mapping[str, str]] = [_NO_LABELS] * capacity
        self._numeric: dict[str, npt.NDArray[np.float64]] = {}

    def grow(self, capacity: int) -> None:
        for key, column in self.columns.items():
            grown = np.full(capacity, ABSENT, dtype=np.int32)
            grown[: self._capacity] = column
            self.columns[key] = grown
        self.row_labels.extend([_NO_LABELS] * (capacity - self._capacity))
        self._capacity = capacity

    def _intern(self, key: str, value: str) -> int:
        ids = self.value_ids.get(key)
        if ids is None:
            ids = self.value_ids[key] = {}
            self.value_names[key] = []
            self.columns[key] = np.full(self._capacity, ABSENT, dtype=np.int32)
        vid = ids.get(value)
        if vid is None:
            vid = ids[value] = len(ids)
            self.value_names[key].append(value)
            self._numeric.pop(key, None)
        return vid

    def set_row(self, row: int, labels: Mapping[str, str]) -> None:
        """Index ``labels`` at ``row``; the map is kept, so it must not change afterwards."""
        old = self.row_labels[row]
        for key in old.keys() - labels.keys():
            self.columns[key][row] = ABSENT
        for key, value in labels.items():
            if old.get(key) != value or self.columns.get(key) is None:
                self.columns[key][row] = self._intern(key, value)
        self.row_labels[row] = labels if labels else _NO_LABELS

    def clear_row(self, row: int) -> None:
        self.set_row(row, _NO_LABELS)

    def column(self, key: str, rows: IntArray) -> npt.NDArray[np.int32]:
        """Value ids of ``key`` for ``rows`` (-1 where absent)."""
        column = self.columns.get(key)
        if column is None:
            return np.full(len(rows), ABSENT, dtype=np.int32)
        return column[rows]

    def value_id(self, key: str, value: str) -> int:
        return self.value_ids.get(key, {}).get(value, UNKNOWN_VALUE)

    def value_of(self, key: str, value_id: int) -> str | None:
        if value_id < 0:
            return None
        return self.value_names[key][value_id]

    def _numeric_values(self, key: str) -> npt.NDArray[np.float64]:
        """Each interned value of ``key`` as a number (NaN if not an integer)."""
        cached = self._numeric.get(key)
        if cached is None:
            out = []
            for name in self.value_names.get(key, []):
                number = label_int_value(name)
                out.append(float("nan") if number is None else float(number))
            cached = self._numeric[key] = np.asarray(out, dtype=np.float64)
        return cached

    def match(self, key: str, operator: str, values: Sequence[str], rows: IntArray) -> BoolArray:
        """Evaluate one requirement for ``rows``.

        Operators are those of label selectors and node selector terms:
        ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``.
        ``NotIn`` and ``DoesNotExist`` match rows lacking the key, as in
        apimachinery; ``Gt``/``Lt`` need the key and an integer value.
        """
        col = self.column(key, rows)
        if operator == "In":
            ids = [self.value_id(key, v) for v in values]
            return np.isin(col, ids)
        if operator == "NotIn":
            ids = [self.value_id(key, v) for v in values]
            return ~np.isin(col, ids)
        if operator == "Exists":
            return col >= 0
        if operator == "DoesNotExist":
            return col < 0
        if operator in ("Gt", "Lt"):
            if len(values) != 1:
                raise ValueError(f"{operator} needs exactly one value, got {list(values)}")
            parsed = label_int_value(values[0])
            if parsed is None:
                raise ValueError(f"{operator} needs an integer value, got {values[0]!r}")
            bound = float(parsed)
            numeric = self._numeric_values(key)
            present = col >= 0
            out = np.zeros(len(rows), dtype=np.bool_)
            if numeric.size:
                nums = numeric[np.where(present, col, 0)]
                with np.errstate(invalid="ignore"):
                    cmp = nums > bound if operator == "Gt" else nums < bound
                out = present & cmp
            return out
        raise ValueError(f"unknown selector operator {operator!r}")

    def match_all(
        self, requirements: Iterable[tuple[str, str, Sequence[str]]], rows: IntArray
    ) -> BoolArray:
        """AND of requirements (an empty list matches every row)."""
        mask = np.ones(len(rows), dtype=np.bool_)
        for key, operator, values in requirements:
            mask &= self.match(key, operator, values, rows)
        return mask

    def distinct_values(self, key: str, rows: IntArray) -> npt.NDArray[np.int32]:
        """The value ids of ``key`` present among ``rows`` (for topology domains)."""
        col = self.column(key, rows)
        return np.unique(col[col >= 0])
