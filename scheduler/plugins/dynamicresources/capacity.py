"""Consumable device capacity (DRAConsumableCapacity, beta and on in kube 1.36).

A port of ``structured/internal/incubating/consumable_capacity.go``: how much of a
device's capacity a request consumes (its request, rounded up by the device's
request policy, or the policy default / the whole capacity when it asks for
nothing) and whether that still fits next to what other claims and the claims being
allocated already consume. Amounts are exact fractions; :class:`Amount` keeps the
text a result is reported with, because kube writes the requested quantity back as
given (the API server already canonicalised it) and only formats values it computed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from scheduler.model.quantity import QuantityError, parse_quantity

__all__ = [
    "Amount",
    "CapacityError",
    "ConsumedCapacity",
    "amount",
    "consumed_capacity_from_request",
    "format_binary_si",
    "request_fits_capacity",
]

#: capacity name -> amount consumed.
ConsumedCapacity = dict[str, Fraction]

_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


class CapacityError(Exception):
    """A request for a capacity the device does not define; kube skips the device."""


class Amount(NamedTuple):
    """A quantity: its exact value and the text it is reported with."""

    value: Fraction
    text: str


def amount(raw: Any) -> Amount:
    """Parse an API quantity; an unparsable one counts as zero (the API rejects those)."""
    try:
        return Amount(parse_quantity(raw), str(raw))
    except QuantityError:
        return Amount(Fraction(0), "0")


def format_binary_si(value: int) -> str:
    """apimachinery's canonical text of ``resource.NewQuantity(value, BinarySI)``."""
    if -1024 < value < 1024:
        # Small binary-SI values are written in decimal SI.
        if value != 0 and value % 1000 == 0:
            return f"{value // 1000}k"
        return str(value)
    for power in range(len(_BINARY_SUFFIXES) - 1, 0, -1):
        unit = 1024**power
        if value % unit == 0:
            return f"{value // unit}{_BINARY_SUFFIXES[power]}"
    return str(value)


def _go_value(value: Fraction) -> int:
    """``Quantity.Value()``: the integer value, rounded up."""
    return math.ceil(value)


def _go_mod(a: int, b: int) -> int:
    """Go's ``%`` (truncated division), not Python's floored one."""
    return a - b * int(a / b) if b else 0


def _policy(capacity: Mapping[str, Any]) -> Mapping[str, Any] | None:
    policy = capacity.get("requestPolicy")
    return policy if isinstance(policy, Mapping) else None


def _optional(raw: Mapping[str, Any] | None, name: str) -> Amount | None:
    if raw is None or raw.get(name) is None:
        return None
    return amount(raw[name])


def _consumed(requested: Amount | None, capacity: Mapping[str, Any]) -> Amount:
    """kube's ``calculateConsumedCapacity``."""
    policy = _policy(capacity)
    if requested is None:
        default = _optional(policy, "default")
        return default if default is not None else amount(capacity.get("value", "0"))
    if policy is None:
        return requested
    valid_range = policy.get("validRange")
    if isinstance(valid_range, Mapping) and valid_range.get("min") is not None:
        return _round_up_range(requested, valid_range)
    valid_values = policy.get("validValues")
    if valid_values is not None:
        for raw in valid_values:
            candidate = amount(raw)
            if requested.value <= candidate.value:
                return candidate
    return requested


def _round_up_range(requested: Amount, valid_range: Mapping[str, Any]) -> Amount:
    minimum = amount(valid_range["min"])
    if requested.value < minimum.value:
        return minimum
    step = _optional(valid_range, "step")
    if step is None:
        return requested
    step_int = _go_value(step.value)
    min_int = _go_value(minimum.value)
    added = _go_value(requested.value) - min_int
    n = int(added / step_int) if step_int else 0
    if _go_mod(added, step_int) != 0:
        n += 1
    value = min_int + step_int * n
    return Amount(Fraction(value), format_binary_si(value))


def _violates(requested: Amount, policy: Mapping[str, Any] | None) -> bool:
    """kube's ``violatesPolicy``."""
    if policy is None:
        return False
    default = _optional(policy, "default")
    if default is not None and requested.value == default.value:
        return False
    valid_range = policy.get("validRange")
    if isinstance(valid_range, Mapping):
        maximum = _optional(valid_range, "max")
        if maximum is not None and requested.value > maximum.value:
            return True
        step = _optional(valid_range, "step")
        if step is not None:
            minimum = _optional(valid_range, "min")
            added = _go_value(requested.value) - (
                _go_value(minimum.value) if minimum is not None else 0
            )
            if _go_mod(added, _go_value(step.value)) != 0:
                return True
        return False
    valid_values = policy.get("validValues") or ()
    if valid_values:
        return all(requested.value != amount(v).value for v in valid_values)
    return False


def request_fits_capacity(
    consumed: Mapping[str, Fraction],
    requests: Mapping[str, Amount] | None,
    capacity: Mapping[str, Any],
    allocating: Mapping[str, Fraction] | None,
) -> bool:
    """kube's ``CmpRequestOverCapacity``.

    ``consumed`` is what allocated claims already use of the device, ``allocating``
    what the claims being allocated right now use. Raises :class:`CapacityError` if
    the request names a capacity the device does not have.
    """
    if requests:
        for name in requests:
            if name not in capacity:
                raise CapacityError("some requested capacity has not been defined")
    for name, cap in capacity.items():
        cap = cap or {}
        use = _consumed(requests.get(name) if requests else None, cap)
        if _violates(use, _policy(cap)):
            return False
        total = consumed.get(name, Fraction(0)) + use.value
        if allocating and name in allocating:
            total += allocating[name]
        if total > amount(cap.get("value", "0")).value:
            return False
    return True


def consumed_capacity_from_request(
    requests: Mapping[str, Amount] | None, capacity: Mapping[str, Any]
) -> dict[str, Amount]:
    """kube's ``GetConsumedCapacityFromRequest``: what one share of the device takes."""
    return {
        name: _consumed(requests.get(name) if requests else None, cap or {})
        for name, cap in capacity.items()
    }
