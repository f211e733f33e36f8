"""Node taints and pod tolerations with the v1 matching rules.

The TaintToleration filter is a pure function of these rules, so they are reproduced
exactly (``k8s.io/api/core/v1`` ``Toleration.ToleratesTaint`` and component-helpers
``FindMatchingUntoleratedTaint``):

* a toleration with an effect only matches taints with that effect; an empty effect
  matches every effect;
* a toleration with a key only matches taints with that key; an empty key matches
  every key (the API only allows that together with ``Exists``);
* operator ``Equal`` (the default when empty) needs equal values, ``Exists`` matches
  any value; an unknown operator matches nothing;
* ``Gt``/``Lt`` (alpha TaintTolerationComparisonOperators, off by default in 1.36)
  compare canonical decimal integers and match nothing unless enabled;
* ``tolerationSeconds`` only matters to eviction, never to scheduling.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DO_NOT_SCHEDULE_EFFECTS",
    "EFFECT_NO_EXECUTE",
    "EFFECT_NO_SCHEDULE",
    "EFFECT_PREFER_NO_SCHEDULE",
    "Taint",
    "TaintError",
    "Toleration",
    "count_intolerable_prefer_no_schedule",
    "find_untolerated",
    "format_taint",
    "tolerations_tolerate_taint",
]

EFFECT_NO_SCHEDULE: Final = "NoSchedule"
EFFECT_PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
EFFECT_NO_EXECUTE: Final = "NoExecute"
#: The effects the TaintToleration filter enforces (PreferNoSchedule only scores).
DO_NOT_SCHEDULE_EFFECTS: Final = frozenset({EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE})

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


class TaintError(ValueError):
    """A taint or toleration object whose fields have the wrong JSON types."""


def _string_field(obj: Mapping[str, Any], name: str, what: str) -> str:
    value = obj.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TaintError(f"{what}.{name}: expected a string, got {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint (``spec.taints[]``)."""

    key: str
    value: str = ""
    effect: str = ""

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Taint:
        """Parse a taint; ``timeAdded`` is ignored, it does not affect scheduling."""
        if not isinstance(obj, Mapping):
            raise TaintError(f"taint: expected an object, got {type(obj).__name__}")
        return cls(
            key=_string_field(obj, "key", "taint"),
            value=_string_field(obj, "value", "taint"),
            effect=_string_field(obj, "effect", "taint"),
        )

    def to_string(self) -> str:
        """``key=value:effect`` with empty parts elided, as kubectl and the API print it."""
        if not self.effect:
            return f"{self.key}={self.value}:" if self.value else self.key
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration (``spec.tolerations[]``); ``operator`` "" is stored as Equal."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Toleration:
        """Parse a toleration, defaulting an empty operator to ``Equal``."""
        if not isinstance(obj, Mapping):
            raise TaintError(f"toleration: expected an object, got {type(obj).__name__}")
        seconds = obj.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            raise TaintError("toleration.tolerationSeconds: expected an integer")
        return cls(
            key=_string_field(obj, "key", "toleration"),
            operator=_string_field(obj, "operator", "toleration") or "Equal",
            value=_string_field(obj, "value", "toleration"),
            effect=_string_field(obj, "effect", "toleration"),
            toleration_seconds=seconds,
        )

    def tolerates(self, taint: Taint, *, enable_comparison_operators: bool = False) -> bool:
        """Whether this toleration tolerates ``taint`` (see the module docstring)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        if self.operator == "Exists":
            return True
        if self.operator in ("Gt", "Lt"):
            if not enable_comparison_operators:
                return False
            mine = _decimal_integer(self.value)
            theirs = _decimal_integer(taint.value)
            if mine is None or theirs is None:
                return False
            return theirs > mine if self.operator == "Gt" else theirs < mine
        return False


def tolerations_tolerate_taint(
    tolerations: Iterable[Toleration], taint: Taint, *, enable_comparison_operators: bool = False
) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint``."""
    return any(
        t.tolerates(taint, enable_comparison_operators=enable_comparison_operators)
        for t in tolerations
    )


def find_untolerated(
    taints: Iterable[Taint],
    tolerations: Iterable[Toleration],
    effects: Collection[str] | None = DO_NOT_SCHEDULE_EFFECTS,
    *,
    enable_comparison_operators: bool = False,
) -> Taint | None:
    """The first taint with an effect in ``effects`` that no toleration tolerates.

    ``effects=None`` considers every taint. The default is what the TaintToleration
    filter checks: NoSchedule and NoExecute.
    """
    tolerations = list(tolerations)
    for taint in taints:
        if effects is not None and taint.effect not in effects:
            continue
        if not tolerations_tolerate_taint(
            tolerations, taint, enable_comparison_operators=enable_comparison_operators
        ):
            return taint
    return None


def count_intolerable_prefer_no_schedule(
    taints: Iterable[Taint],
    tolerations: Iterable[Toleration],
    *,
    enable_comparison_operators: bool = False,
) -> int:
    """How many PreferNoSchedule taints the pod does not tolerate (TaintToleration score).

    Only tolerations with an empty or PreferNoSchedule effect count here, as in
    kube-scheduler's scorer; the node with the fewest such taints scores best.
    """
    relevant = [t for t in tolerations if t.effect in ("", EFFECT_PREFER_NO_SCHEDULE)]
    return sum(
        1
        for taint in taints
        if taint.effect == EFFECT_PREFER_NO_SCHEDULE
        and not tolerations_tolerate_taint(
            relevant, taint, enable_comparison_operators=enable_comparison_operators
        )
    )


def format_taint(taint: Taint) -> str:
    """``{key: value}``, the form older kube-scheduler used in filter messages.

    e.g. ``node(s) had untolerated taint {node.kubernetes.io/unreachable: }``.
    Kubernetes 1.36 itself reports only "node(s) had untolerated taint(s)".
    """
    return f"{{{taint.key}: {taint.value}}}"


def _decimal_integer(value: str) -> int | None:
    """A canonical decimal int64 ("0", or optional "-" then no leading zero), else None."""
    body = value[1:] if value.startswith("-") else value
    if not body or not body.isascii() or not body.isdigit():
        return None
    if body[0] == "0" and value != "0":
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None
