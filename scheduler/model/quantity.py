"""Exact parsing of Kubernetes ``resource.Quantity`` strings.

Resource fit is decided by comparing sums of quantities, so any rounding or float
error here can flip a Filter verdict relative to kube-scheduler. Values are therefore
parsed into :class:`fractions.Fraction` with the same acceptance rules and the same
value adjustments as apimachinery's ``ParseQuantity``:

* grammar: ``[+-]digits[.digits]`` followed by a suffix that is a binary SI suffix
  (``Ki Mi Gi Ti Pi Ei``), a decimal SI suffix (``n u m k M G T P E`` or none) or a
  decimal exponent (``e``/``E`` and a signed integer). ``"1."``, ``".5"`` and
  ``"1.G"`` are accepted; so are most digit-less forms (``"."``, ``"+"``, ``"-"``, a
  bare suffix such as ``"Mi"``, ``"E"`` or ``"e-9"``), which apimachinery parses as
  **zero**, except with ``Pi``/``Ei`` or an exponent below -9 (rejected there too).
* values finer than 1n are rounded away from zero to the next nano (``"0.9n"`` is
  ``1n``), because apimachinery keeps at most nine decimal places;
* a binary-SI value is silently capped at 2^63-1 in magnitude (``"9Ei"``); decimal
  values are not capped;
* the exponent of ``e``/``E`` is read as a 64-bit integer and then truncated to 32
  bits, as apimachinery does (``"1e4294967296"`` is 1).

Deliberate deviation: apimachinery materialises arbitrarily large values (and hangs
on exponents near 2^31); here a value with more than :data:`MAX_INTEGER_DIGITS`
integer digits is rejected, since nothing that large is a meaningful resource amount.

Quantities inside JSON objects may also arrive as JSON numbers; those are accepted as
``int``/``float`` and, like ``Quantity.UnmarshalJSON``, surrounding whitespace in a
string is ignored.

:func:`parse_quantity_parts` exposes the same parser for callers that need more than
the value (the suffix, the format apimachinery would keep, the digits as written), such
as the apiserver emulator, which formats quantities the way kube-apiserver stores them.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Literal

from scheduler.model._quote import go_quote

__all__ = [
    "MAX_INTEGER_DIGITS",
    "QuantityError",
    "QuantityErrorKind",
    "QuantityFormat",
    "QuantityParts",
    "ceil_fraction",
    "parse_quantity",
    "parse_quantity_parts",
    "quantity_to_int",
    "quantity_to_milli",
]

#: Values whose integer part has more digits than this are rejected (see module doc).
MAX_INTEGER_DIGITS: Final = 1000

_INT64_MAX: Final = (1 << 63) - 1
_INT64_MIN: Final = -(1 << 63)
_NANO: Final = 10**9

# apimachinery's scanner: sign, digits, optional fraction, then suffix characters
# from a fixed set, an optional sign and trailing digits. Anything else is a format
# error; the suffix is interpreted afterwards.
_QUANTITY_RE: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT_RE: Final = re.compile(r"[eE]([+-]?[0-9]+)")

_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}

# Go's strings.TrimSpace trims Unicode White_Space; Python's str.strip() would also
# trim the ASCII separators \x1c-\x1f, which Go keeps (and then rejects).
_GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# Fraction digits of a binary-SI mantissa kept before the remainder is reduced to a
# "non-zero" flag. 9 (nano) + 60 (the largest binary exponent) is enough for the
# flag to decide nano rounding exactly, see _binary_nanos.
_BINARY_KEPT_FRACTION_DIGITS: Final = 70

#: apimachinery's ``resource.Format`` of a parsed quantity.
QuantityFormat = Literal["DecimalSI", "BinarySI", "DecimalExponent"]

#: What is wrong with a rejected value. ``format``, ``suffix`` and ``numeric``
#: correspond to apimachinery's ``ErrFormatWrong``, ``ErrSuffix`` and ``ErrNumeric``;
#: ``range`` is the deliberate "too many integer digits" deviation and ``type`` a value
#: that is not a string or a finite number.
QuantityErrorKind = Literal["format", "suffix", "numeric", "range", "type"]


class QuantityError(ValueError):
    """A value that is not a valid Kubernetes quantity.

    ``value`` is the offending input, ``reason`` says what is wrong with it and
    ``context`` (possibly empty) where it was found, e.g. ``container "app"
    requests.cpu``. The message quotes the value so that empty strings and stray
    spaces are visible. ``kind`` classifies the failure (see :data:`QuantityErrorKind`).
    """

    def __init__(
        self,
        value: object,
        reason: str,
        *,
        context: str = "",
        kind: QuantityErrorKind = "format",
    ) -> None:
        self.value = value
        self.reason = reason
        self.context = context
        self.kind: QuantityErrorKind = kind
        shown = go_quote(value) if isinstance(value, str) else repr(value)
        message = f"invalid quantity {shown}: {reason}"
        super().__init__(f"{context}: {message}" if context else message)

    def with_context(self, context: str) -> QuantityError:
        """The same error, prefixed with where the value came from.

        A bare "invalid quantity" is useless in a pod with ten containers; callers
        that know the container and resource re-raise with this.
        """
        return QuantityError(self.value, self.reason, context=context, kind=self.kind)


@dataclass(frozen=True, slots=True)
class QuantityParts:
    """A quantity string taken apart the way apimachinery's parser reads it.

    ``integer`` and ``fraction`` are the digits as written (leading and trailing zeros
    included, either may be empty), ``exponent`` the power of ``base`` (2 for binary-SI
    suffixes, else 10) that ``suffix`` stands for (``e``/``E`` exponents already
    truncated to 32 bits),
    ``format`` the format ``ParseQuantity`` returns (``DecimalSI`` for a binary-SI value
    between 0 and 1) and ``value`` the exact value, as :func:`parse_quantity` returns it.
    """

    negative: bool
    integer: str
    fraction: str
    suffix: str
    format: QuantityFormat
    base: Literal[2, 10]
    exponent: int
    value: Fraction


def parse_quantity(value: str | int | float) -> Fraction:
    """Parse ``value`` exactly as apimachinery's ``ParseQuantity`` would.

    Returns the exact value in base units (cores, bytes, ...), after apimachinery's
    nano rounding and binary-SI cap. Raises :class:`QuantityError` for anything
    apimachinery rejects, and for values too large to be meaningful.
    """
    if isinstance(value, bool):
        raise QuantityError(value, "expected a string or a number, got a boolean", kind="type")
    if isinstance(value, int):
        if abs(value) >= 10**MAX_INTEGER_DIGITS:
            raise QuantityError(
                value, f"more than {MAX_INTEGER_DIGITS} integer digits", kind="range"
            )
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(value, "not a finite number", kind="type")
        # repr() is the shortest text that round-trips, i.e. what a JSON encoder wrote.
        return _parse_text(repr(value), value).value
    if isinstance(value, str):
        return _parse_string(value)
    raise QuantityError(
        value, f"expected a string or a number, got {type(value).__name__}", kind="type"
    )


@functools.lru_cache(maxsize=4096)
def _parse_string(value: str) -> Fraction:
    """A quantity text's value, remembered: clusters repeat a few hundred texts
    (``100m``, ``4Gi``) across every pod and node, and parsing one exactly is
    tens of microseconds. Fractions are immutable, so sharing them is safe."""
    return _parse_text(value.strip(_GO_SPACE), value).value


def parse_quantity_parts(
    text: str,
    *,
    max_integer_digits: int | None = MAX_INTEGER_DIGITS,
    cap_binary_si: bool = True,
) -> QuantityParts:
    """Parse the string ``text`` like :func:`parse_quantity`, returning its parts.

    Unlike :func:`parse_quantity` no surrounding whitespace is trimmed. With
    ``max_integer_digits=None`` values of any size are materialised (as apimachinery
    does; beware of exponents near 2^31), and with ``cap_binary_si=False`` binary-SI
    values are not capped at 2^63-1. With the defaults, ``parts.value`` always equals
    ``parse_quantity(text)`` for a string without surrounding whitespace.
    """
    return _parse_text(text, text, max_integer_digits, cap_binary_si)


def ceil_fraction(value: Fraction) -> int:
    """Smallest integer not less than ``value``.

    Kept public so that callers which sum exact quantities first (as kube-scheduler
    sums ``resource.Quantity`` values before reading them) round exactly once.
    """
    return -((-value.numerator) // value.denominator)


def quantity_to_milli(value: str | int | float) -> int:
    """The quantity in thousandths, rounded up like ``Quantity.MilliValue()``.

    Used for CPU, which kube-scheduler accounts in millicores. Unlike Go's int64
    accessor this never overflows, and negative non-integral values round towards
    +infinity (Go rounds those one step further; no valid request is negative).
    """
    return ceil_fraction(parse_quantity(value) * 1000)


def quantity_to_int(value: str | int | float) -> int:
    """The quantity in base units, rounded up like ``Quantity.Value()``."""
    return ceil_fraction(parse_quantity(value))


def _parse_text(
    text: str,
    original: object,
    max_integer_digits: int | None = MAX_INTEGER_DIGITS,
    cap_binary_si: bool = True,
) -> QuantityParts:
    if not text:
        raise QuantityError(original, "empty string", kind="format")
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise QuantityError(
            original,
            'expected a number with an optional suffix, such as "100m", "1.5Gi" or "1e3"',
            kind="format",
        )
    sign_text, int_text, frac_text, suffix = match.groups()
    frac_text = frac_text or ""
    negative = sign_text == "-"

    def parts(fmt: QuantityFormat, exponent: int, value: Fraction) -> QuantityParts:
        base: Literal[2, 10] = 2 if suffix in _BINARY_SUFFIXES else 10
        return QuantityParts(negative, int_text, frac_text, suffix, fmt, base, exponent, value)

    digits = (int_text + frac_text).lstrip("0")
    # apimachinery reads a number with no digits at all ("", "+", ".") as zero on
    # its int64 fast path but fails on its arbitrary-precision path; which path runs
    # depends only on the suffix, so the outcome is reproduced per suffix below.
    digitless = not int_text and not frac_text

    if suffix in _BINARY_SUFFIXES:
        exponent = _BINARY_SUFFIXES[suffix]
        if digitless and exponent > 40:
            raise QuantityError(original, "no digits before the suffix", kind="numeric")
        if not digits:
            return parts("BinarySI", exponent, Fraction(0))
        nanos = _binary_nanos(digits, len(frac_text), exponent, capped=cap_binary_si)
        amount = Fraction(nanos, _NANO)
        if cap_binary_si:
            # The cap applies after nano rounding and only to binary-SI quantities.
            amount = min(amount, Fraction(_INT64_MAX))
        elif max_integer_digits is not None and amount >= 10**max_integer_digits:
            raise QuantityError(
                original, f"more than {max_integer_digits} integer digits", kind="range"
            )
        # Like apimachinery, a binary value between 0 and 1 is kept as decimal SI.
        fmt: QuantityFormat = "DecimalSI" if amount < 1 else "BinarySI"
        return parts(fmt, exponent, -amount if negative else amount)

    if suffix in _DECIMAL_SUFFIXES:
        fmt, exponent = "DecimalSI", _DECIMAL_SUFFIXES[suffix]
    else:
        exp_match = _EXPONENT_RE.fullmatch(suffix)
        if exp_match is None:
            raise QuantityError(
                original,
                f"unknown suffix {go_quote(suffix)}; expected one of n, u, m, k, M, G, T, P, "
                "E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3 or E-6",
                kind="suffix",
            )
        fmt, exponent = "DecimalExponent", _go_int32_exponent(exp_match.group(1), original)
    if digitless and exponent < -9:
        raise QuantityError(original, "no digits before the suffix", kind="numeric")
    if not digits:
        return parts(fmt, exponent, Fraction(0))
    nanos = _decimal_nanos(digits, exponent - len(frac_text), original, max_integer_digits)
    return parts(fmt, exponent, Fraction(-nanos if negative else nanos, _NANO))


def _go_int32_exponent(text: str, original: object) -> int:
    """The exponent as apimachinery sees it: parsed as int64, then truncated to int32."""
    magnitude = text.lstrip("+-").lstrip("0") or "0"
    if len(magnitude) > 19:
        raise QuantityError(original, "exponent out of range", kind="suffix")
    parsed = -int(magnitude) if text.startswith("-") else int(magnitude)
    if not _INT64_MIN <= parsed <= _INT64_MAX:
        raise QuantityError(original, "exponent out of range", kind="suffix")
    return ((parsed + (1 << 31)) % (1 << 32)) - (1 << 31)


def _decimal_nanos(
    digits: str, exponent10: int, original: object, max_integer_digits: int | None
) -> int:
    """``int(digits) * 10**exponent10`` in nano units, rounded up (magnitude only).

    Works on the digit string so that neither huge exponents nor long inputs ever
    build numbers larger than the result.
    """
    integer_digits = len(digits) + exponent10
    if max_integer_digits is not None and integer_digits > max_integer_digits:
        raise QuantityError(
            original, f"more than {max_integer_digits} integer digits", kind="range"
        )
    shift = exponent10 + 9
    if shift >= 0:
        factor: int = 10**shift
        return int(digits) * factor
    drop = -shift
    if drop >= len(digits):
        return 1  # non-zero and below 1n: rounds up to 1n
    head, tail = digits[:-drop], digits[-drop:]
    return int(head) + (1 if tail.strip("0") else 0)


def _binary_nanos(digits: str, fraction_len: int, exponent2: int, *, capped: bool) -> int:
    """``int(digits) / 10**fraction_len * 2**exponent2`` in nano units, rounded up.

    When ``capped``, values that certainly exceed the 2^63-1 cap short-circuit. Fraction
    digits beyond the 70th only matter through whether any of them is non-zero: with
    at least 9 + exponent2 kept digits, the discarded part is smaller than the
    spacing between representable values, so "floor + 1 when something was
    discarded" equals the exact ceiling.
    """
    if capped and len(digits) - fraction_len > 20:
        return (_INT64_MAX + 1) * _NANO
    sticky = False
    drop = fraction_len - _BINARY_KEPT_FRACTION_DIGITS
    if drop > 0:
        sticky = bool(digits[-drop:].strip("0")) if drop < len(digits) else True
        digits = digits[:-drop] if drop < len(digits) else ""
        fraction_len = _BINARY_KEPT_FRACTION_DIGITS
    scaled = Fraction(int(digits or "0") * (1 << exponent2) * _NANO, 10**fraction_len)
    if sticky:
        return scaled.numerator // scaled.denominator + 1
    return ceil_fraction(scaled)
