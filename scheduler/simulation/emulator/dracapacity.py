"""Consumable capacity: the request policies of a ResourceSlice device's capacity.

``validateRequestPolicy``: a device shared by several allocations may say which
amounts a request can take (discrete ``validValues`` or a ``validRange`` with a
step), with a default that must itself be allowed; kube-apiserver's messages.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from scheduler.simulation.emulator import quantity
from scheduler.simulation.emulator.dracommon import items, too_many
from scheduler.simulation.emulator.validation import Cause, forbidden, invalid, required

Obj = dict[str, Any]
MAX_OPTIONS = 10


def _amount(raw: Any) -> Fraction:
    try:
        return quantity.from_json(raw).value
    except quantity.QuantityError:
        return Fraction(0)


def _text(raw: Any) -> str:
    try:
        return str(quantity.from_json(raw))
    except quantity.QuantityError:
        return str(raw)


def request_policy(capacity_value: Any, policy: Obj, path: str) -> list[Cause]:
    """validateRequestPolicy: one of validValues/validRange, with a default that fits."""
    maximum = _amount(capacity_value)
    valid_values = items(policy.get("validValues"))
    valid_range = policy.get("validRange")
    default = policy.get("default")
    if valid_values and valid_range is not None:
        return [
            forbidden(
                path,
                'exactly one policy can be specified, cannot specify "validValues" and '
                '"validRange" at the same time',
            )
        ]
    causes: list[Cause] = []
    if valid_values:
        if default is None:
            return [required(f"{path}.default", "required when validValues is defined")]
        where = f"{path}.validValues"
        for i in range(len(valid_values) - 1):
            if _amount(valid_values[i]) > _amount(valid_values[i + 1]):
                causes.append(
                    invalid(
                        f"{where}[{i + 1}]",
                        _text(valid_values[i + 1]),
                        "values must be sorted in ascending order",
                    )
                )
        if len(valid_values) > MAX_OPTIONS:
            return [*causes, too_many(where, len(valid_values), MAX_OPTIONS)]
        found = False
        for i, option in enumerate(valid_values):
            if _amount(option) > maximum:
                causes.append(
                    invalid(
                        f"{where}[{i}]",
                        _text(option),
                        f"option is larger than capacity value: {_text(capacity_value)}",
                    )
                )
            found = found or _amount(option) == _amount(default)
        if not found:
            causes.append(
                invalid(
                    where,
                    _text(default),
                    "default value is not valid according to the requestPolicy",
                )
            )
    elif isinstance(valid_range, dict):
        if default is None:
            return [required(f"{path}.default", "required when validRange is defined")]
        causes += _request_range(
            maximum, capacity_value, default, valid_range, f"{path}.validRange"
        )
    return causes


def _request_range(
    maximum: Fraction, capacity_value: Any, default: Any, rng: Obj, path: str
) -> list[Cause]:
    low = rng.get("min")
    if low is None:
        return [required(f"{path}.min", "required when validRange is defined")]
    cap_text = _text(capacity_value)
    causes: list[Cause] = []
    if _amount(low) > maximum:
        causes.append(
            invalid(f"{path}.min", _text(low), f"min is larger than capacity value: {cap_text}")
        )
    if _amount(default) < _amount(low):
        causes.append(
            invalid(f"{path}.min", _text(default), f"default is less than min: {_text(low)}")
        )
    high = rng.get("max")
    if high is not None:
        if _amount(low) > _amount(high):
            causes.append(
                invalid(f"{path}.max", _text(low), f"min is larger than max: {_text(high)}")
            )
        if _amount(high) > maximum:
            causes.append(
                invalid(
                    f"{path}.max", _text(high), f"max is larger than capacity value: {cap_text}"
                )
            )
        if _amount(default) > _amount(high):
            causes.append(
                invalid(f"{path}.max", _text(default), f"default is more than max: {_text(high)}")
            )
    step = rng.get("step")
    if step is not None and _amount(step) > 0:
        added = _amount(low) + _amount(step)
        if added > maximum:
            causes.append(
                invalid(
                    f"{path}.step",
                    _text(step),
                    f"one step {quantity.Quantity(added, quantity.from_json(low).format)} "
                    f"is larger than capacity value: {cap_text}",
                )
            )
        for value in [default] + ([high] if high is not None else []):
            if (int(_amount(value)) - int(_amount(low))) % int(_amount(step) or 1):
                causes.append(
                    invalid(
                        f"{path}.step",
                        _text(value),
                        f"value is not a multiple of a given step ({_text(step)}) "
                        f"from ({_text(low)})",
                    )
                )
    return causes
