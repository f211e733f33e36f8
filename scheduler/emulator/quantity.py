"""resource.Quantity as kube-apiserver parses, rounds and prints it.

A quantity the apiserver accepts is stored in canonical form (``1000m`` reads
back as ``1``, ``0.5`` as ``500m``, ``1024Mi`` as ``1Gi``), except that a
string already in canonical form is kept as written (``1e3``, ``+5``,
``129M``). Resource lists are rounded up to milli precision on the way in
(``SetDefaults_ResourceList``). Bad strings fail decoding with the messages
of ``k8s.io/apimachinery/pkg/api/resource``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXP = {v: k for k, v in _DECIMAL.items()}
_BINARY_BY_EXP = {v: k for k, v in _BINARY.items()}
_INT64_MAX = 2**63 - 1
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    pass


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


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value, numerator, denominator, suffix)."""
    positive = True
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while True:
        if pos >= end:
            return positive, "0", "0", "", ""
        if text[pos] != "0":
            break
        pos += 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, num, "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end:
        if text[pos] not in _DIGITS:
            raise QuantityError(FORMAT_WRONG)
        pos += 1
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], "DecimalSI"
    if suffix in _BINARY:
        return 2, _BINARY[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            return 10, int(suffix[1:]), "DecimalExponent"
        except ValueError:
            pass
    raise QuantityError(SUFFIX)


def parse(text: str) -> Quantity:
    """``resource.ParseQuantity``."""
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return Quantity(Fraction(0), "DecimalSI", "0", 0)
    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    if fmt == "BinarySI":
        scale = 0
        if exponent >= 0 and not denom:
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            mantissa = 2**exponent if fmt == "BinarySI" else 1
            amount = int(shifted) * mantissa
            if amount <= _INT64_MAX:
                signed = amount if positive else -amount
                exact = Fraction(signed) * Fraction(10) ** scale
                keep = (
                    exponent % 10 == 0 and int(shifted) & 0x07 != 0
                    if fmt == "BinarySI"
                    else scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                )
                return Quantity(exact, fmt, text if keep else "", scale)
    digits = value.lstrip("+-")
    if digits in ("", ".") or not all(c in _DIGITS or c == "." for c in digits):
        raise QuantityError(NUMERIC)
    amount_f = Fraction(digits if digits[0] != "." else "0" + digits)
    amount_f *= Fraction(10) ** exponent if base == 10 else Fraction(2) ** exponent
    if amount_f != 0:
        amount_f = Fraction(_ceil_away(amount_f / _NANO)) * _NANO
    if fmt == "BinarySI" and 0 < amount_f < 1:
        fmt = "DecimalSI"
    return Quantity(amount_f if positive else -amount_f, fmt)


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
