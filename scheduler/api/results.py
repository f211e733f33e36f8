"""Array-shaped results of the scheduling-cycle hooks.

Filter hooks answer for all candidate nodes at once with a
:class:`FilterResult`: a per-node code and a bitmask of reasons. A node may be
rejected for several reasons at once (kube-scheduler counts both "Insufficient
cpu" and "Insufficient memory" for such a node), hence bits rather than one id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from scheduler.api.status import Code, Status

#: The highest score after NormalizeScore (kube's ``MaxNodeScore``);
#: the profile's weight multiplies it.
MAX_NODE_SCORE = 100
#: The lowest score after NormalizeScore.
MIN_NODE_SCORE = 0
MAX_REASONS = 64

BoolArray = npt.NDArray[np.bool_]
ScoreArray = npt.NDArray[np.int64]


class FilterResult:
    """Verdicts for each candidate node, aligned with the ``NodeSet`` rows.

    ``codes`` holds ``Code.SUCCESS``, ``Code.UNSCHEDULABLE`` or
    ``Code.UNSCHEDULABLE_AND_UNRESOLVABLE`` per node; ``reason_bits`` has bit
    *i* set where ``reasons[i]`` applies to that node.

    Examples:
        >>> import numpy as np
        >>> result = FilterResult(3)
        >>> result = result.reject(np.array([True, False, True]), "Insufficient cpu")
        >>> tainted = np.array([True, False, False])
        >>> result = result.reject_unresolvable(tainted, "node(s) are tainted")
        >>> result.feasible.tolist()
        [False, True, False]
        >>> result.reasons_at(0)
        ['Insufficient cpu', 'node(s) are tainted']
        >>> result.reason_counts()
        {'Insufficient cpu': 2, 'node(s) are tainted': 1}
        >>> FilterResult.from_mask(np.array([True, False]), "not linux").reasons_at(1)
        ['not linux']
    """

    __slots__ = ("codes", "reason_bits", "reasons")

    def __init__(self, size: int) -> None:
        self.codes = np.zeros(size, dtype=np.int8)
        self.reason_bits = np.zeros(size, dtype=np.uint64)
        self.reasons: list[str] = []

    def __len__(self) -> int:
        return len(self.codes)

    def reject(self, mask: BoolArray, reason: str, code: Code = Code.UNSCHEDULABLE) -> FilterResult:
        """Reject the nodes where ``mask`` is true, for ``reason``; returns self."""
        if code not in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
            raise ValueError(
                f"a node can only be rejected as Unschedulable(AndUnresolvable), not {code.title}"
            )
        mask = np.asarray(mask, dtype=np.bool_)
        if mask.shape != self.codes.shape:
            raise ValueError(f"mask has shape {mask.shape}, expected {self.codes.shape}")
        if not mask.any():
            return self
        try:
            bit = self.reasons.index(reason)
        except ValueError:
            if len(self.reasons) >= MAX_REASONS:
                raise ValueError(f"more than {MAX_REASONS} distinct reasons in a result") from None
            bit = len(self.reasons)
            self.reasons.append(reason)
        np.maximum(self.codes, np.where(mask, np.int8(code), np.int8(0)), out=self.codes)
        self.reason_bits[mask] |= np.uint64(1 << bit)
        return self

    def reject_unresolvable(self, mask: BoolArray, reason: str) -> FilterResult:
        """Reject as UnschedulableAndUnresolvable: preemption on these nodes cannot help."""
        return self.reject(mask, reason, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def feasible(self) -> BoolArray:
        """Per node: passed (no rejection). Read-only by convention; aligned with the candidates."""
        feasible: BoolArray = self.codes == 0
        return feasible

    def reasons_at(self, i: int) -> list[str]:
        """The reasons node ``i`` was rejected for (empty if it passed)."""
        bits = int(self.reason_bits[i])
        return [r for b, r in enumerate(self.reasons) if bits >> b & 1]

    def reason_counts(self) -> dict[str, int]:
        """How many nodes each reason applies to (for "0/N nodes are available")."""
        counts: dict[str, int] = {}
        for bit, reason in enumerate(self.reasons):
            n = int(np.count_nonzero(self.reason_bits & np.uint64(1 << bit)))
            if n:
                counts[reason] = counts.get(reason, 0) + n
        return counts

    @classmethod
    def from_mask(
        cls, feasible: BoolArray, reason: str, code: Code = Code.UNSCHEDULABLE
    ) -> FilterResult:
        """Shortcut for a plugin with a single reason: ``feasible`` true = passes."""
        feasible = np.asarray(feasible, dtype=np.bool_)
        return cls(len(feasible)).reject(~feasible, reason, code)


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """A PreFilter's answer: ``node_names`` narrows the candidates (None = all)."""

    node_names: frozenset[str] | None = None

    @classmethod
    def only(cls, names: Iterable[str]) -> PreFilterResult:
        """Restrict the candidates to ``names``; several plugins' restrictions are intersected.

        Examples:
            >>> PreFilterResult.only(["a", "b"]).merge(PreFilterResult.only(["b", "c"]))
            PreFilterResult(node_names=frozenset({'b'}))
            >>> PreFilterResult().merge(PreFilterResult.only(["a"])).node_names
            frozenset({'a'})
        """
        return cls(frozenset(names))

    def merge(self, other: PreFilterResult) -> PreFilterResult:
        """Both restrictions at once (None, all nodes, is the identity)."""
        if self.node_names is None:
            return other
        if other.node_names is None:
            return self
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class NodeVerdict:
    """Why one node was rejected: the code, reasons and the plugin that said so."""

    code: Code
    reasons: list[str]
    plugin: str


@dataclass(slots=True)
class Rejection:
    """Nodes one plugin rejected in one attempt, kept as arrays.

    ``rows`` are NodeTable rows; ``codes``/``reason_bits`` align with them and
    ``reasons`` decodes the bits (as in :class:`FilterResult`).
    """

    plugin: str
    rows: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int8]
    reason_bits: npt.NDArray[np.uint64]
    reasons: list[str]


@dataclass(slots=True)
class Diagnosis:
    """What went wrong in a failed attempt (kube-scheduler's Diagnosis).

    Each node is rejected by the first Filter plugin that rejects it, so the
    rejections partition the rejected nodes. Per-node verdicts are built only
    when someone asks (PostFilter, ``explain``): at thousands of nodes the
    failure message needs only the counts.
    """

    names: list[str] = field(default_factory=list)  # NodeTable names, indexed by row
    rejections: list[Rejection] = field(default_factory=list)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_message: str = ""
    #: The code of a PreFilter rejection: kube gives it to every node (API 1.3).
    pre_filter_code: Code | None = None
    post_filter_message: str = ""
    total_nodes: int = 0

    def add(self, rejection: Rejection) -> None:
        """Record one plugin's rejections (the framework's; empty ones are dropped)."""
        if len(rejection.rows):
            self.rejections.append(rejection)

    @property
    def node_verdicts(self) -> dict[str, NodeVerdict]:
        """Per rejected node name: the code, reasons and plugin, decoded on demand."""
        out: dict[str, NodeVerdict] = {}
        for rej in self.rejections:
            for row, code, bits in zip(
                rej.rows.tolist(), rej.codes.tolist(), rej.reason_bits.tolist(), strict=True
            ):
                reasons = [r for b, r in enumerate(rej.reasons) if bits >> b & 1]
                out[self.names[row]] = NodeVerdict(Code(code), reasons, rej.plugin)
        return out

    def rows_with_code(self, code: Code) -> npt.NDArray[np.int64]:
        """The framework's node rows rejected with ``code`` (preemption picks candidates so)."""
        parts = [rej.rows[rej.codes == code] for rej in self.rejections]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def resolvable_rows(self) -> npt.NDArray[np.int64]:
        """Rows where preemption might help (rejected only as Unschedulable)."""
        return self.rows_with_code(Code.UNSCHEDULABLE)

    def reason_counts(self) -> dict[str, int]:
        """How many nodes each reason applies to, over all plugins."""
        counts: dict[str, int] = {}
        for rej in self.rejections:
            for bit, reason in enumerate(rej.reasons):
                n = int(np.count_nonzero(rej.reason_bits & np.uint64(1 << bit)))
                if n:
                    counts[reason] = counts.get(reason, 0) + n
        return counts

    def message(self) -> str:
        """kube-scheduler's FailedScheduling text: "0/N nodes are available: ..."."""
        text = f"0/{self.total_nodes} nodes are available:"
        if self.pre_filter_message:
            text += f" {self.pre_filter_message}."
        else:
            parts = sorted(f"{n} {reason}" for reason, n in self.reason_counts().items())
            if parts:
                text += f" {', '.join(parts)}."
        if self.post_filter_message:
            text += f" {self.post_filter_message}"
        return text


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """PostFilter's answer: a node nominated for the pod (preemption) and a status."""

    status: Status
    nominated_node_name: str | None = None
