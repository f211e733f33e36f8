"""resource.Quantity as kube-apiserver parses, rounds and prints it.

A quantity the apiserver accepts is stored in canonical form (``1000m`` reads
back as ``1``, ``0.5`` as ``500m``, ``1024Mi`` as ``1Gi``), except that a
string already in canonical form is kept as written (``1e3``, ``+5``,
``129M``). Resource lists are rounded up to milli precision on the way in
(``SetDefaults_ResourceList``). Bad strings fail decoding with the messages
of ``k8s.io/apimachinery/pkg/api/resource``.

The string itself is parsed by :mod:`scheduler.model.quantity`; this module
only adds what the apiserver does around ``ParseQuantity``: which strings are
kept as written, canonical formatting, milli rounding and the error texts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from scheduler.model import quantity as model

FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

# apimachinery's error for each kind of rejection. The emulator parses without the
# model's size limit and only passes strings, so "range" and "type" cannot occur.
_MESSAGES: Final[dict[model.QuantityErrorKind, str]] = {
    "format": FORMAT_WRONG,
    "suffix": SUFFIX,
    "numeric": NUMERIC,
    "range": NUMERIC,
    "type": FORMAT_WRONG,
}
# Suffixes for printing canonical strings.
_DECIMAL_BY_EXP = {
    -9: "n",
    -6: "u",
    -3: "m",
    0: "",
    3: "k",
    6: "M",
    9: "G",
    12: "T",
    15: "P",
    18: "E",
}
_BINARY_BY_EXP = {10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}
_INT64_MAX = 2**63 - 1


class QuantityError(ValueError):
    """A quantity kube-apiserver fails to decode; the message is apimachinery's own text."""


@dataclass(frozen=True, slots=True)
class Quantity:
    value: Fraction
    format: str  # DecimalSI, BinarySI or DecimalExponent
    cached: str = ""  # the input string, when kube keeps it as written
    scale: int = -9  # decimal scale of the fast-path int64 amount (for milli rounding)

    def __str__(self) -> str:
        return self.cached or _canonical(self.value, self.format)

    def round_up_milli(self) -> Quantity:
        """``Quantity.RoundUp(-3)``: what the apiserver does to every resource list value."""
        if self.cached and self.scale >= -3:
            return self
        scaled = self.value * 1000
        rounded = Fraction(_ceil_away(scaled), 1000)
        return Quantity(rounded, self.format)

    @property
    def milli(self) -> int:
        return _ceil_away(self.value * 1000)


def _ceil_away(value: Fraction) -> int:
    """Round away from zero to an integer (inf.RoundUp)."""
    n = abs(value)
    whole = n.numerator // n.denominator
    if whole != n:
        whole += 1
    return whole if value >= 0 else -whole


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Quantity:
    """``resource.ParseQuantity``, remembered per text.

    Every pod created repeats a few texts (``100m``, ``500Mi``) in each
    container's requests and limits, read by validation, defaulting and the
    QoS class: parsing them again was a fifth of the emulator's CPU while a
    benchmark created pods. A Quantity is immutable, so sharing it is safe;
    a text that fails is not remembered and fails again.
    """
    if text == "0":
        return Quantity(Fraction(0), "DecimalSI", "0", 0)
    try:
        # No size limit, as in apimachinery. Binary-SI values are left uncapped to keep
        # the emulator's established behaviour, although apimachinery caps them at 2^63-1.
        parts = model.parse_quantity_parts(text, max_integer_digits=None, cap_binary_si=False)
    except model.QuantityError as exc:
        raise QuantityError(_MESSAGES[exc.kind]) from None
    cached, scale = _fast_path(text, parts)
    return Quantity(parts.value, parts.format, cached, scale)


def _fast_path(text: str, parts: model.QuantityParts) -> tuple[str, int]:
    """(cached string, scale) when ``ParseQuantity`` takes its int64 fast path.

    On that path apimachinery keeps the input as the quantity's string form when it
    is already canonical; off it (and when not kept) the cache is empty and the
    scale is irrelevant, reported as -9.
    """
    num = parts.integer.lstrip("0") or "0"
    denom = parts.fraction
    exponent = parts.exponent
    binary = parts.base == 2
    if binary:
        scale = 0
        if exponent >= 0 and not denom:
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    if precision < 0:
        return "", -9
    scale -= len(denom)
    if scale < -9:
        return "", -9
    shifted = num + denom
    if int(shifted) * (2**exponent if binary else 1) > _INT64_MAX:
        return "", -9
    keep = (
        exponent % 10 == 0 and int(shifted) & 0x07 != 0
        if binary
        else scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    )
    return (text if keep else ""), scale


def from_json(value: object) -> Quantity:
    """A JSON value in a Quantity field: a string or a bare number."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(FORMAT_WRONG)
    if isinstance(value, int):
        return parse(str(value))
    if isinstance(value, float):
        return parse(str(int(value)) if value.is_integer() else repr(value))
    if isinstance(value, str):
        return parse(value.strip())
    raise QuantityError(FORMAT_WRONG)


def _canonical(value: Fraction, fmt: str) -> str:
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if fmt == "BinarySI":
        if magnitude < 1024 or magnitude.denominator != 1:
            fmt = "DecimalSI"
        else:
            number, exp = int(magnitude), 0
            while number % 1024 == 0 and exp < 60:
                number //= 1024
                exp += 10
            return f"{sign}{number}{_BINARY_BY_EXP.get(exp, '')}"
    exp = 0
    while magnitude.denominator != 1:
        magnitude *= 10
        exp -= 1
    number = int(magnitude)
    while number % 10 == 0:
        number //= 10
        exp += 1
    shift = exp % 3
    number *= 10**shift
    exp -= shift
    if fmt == "DecimalSI" and exp in _DECIMAL_BY_EXP:
        return f"{sign}{number}{_DECIMAL_BY_EXP[exp]}"
    return f"{sign}{number}" + (f"e{exp}" if exp else "")
