"""kube's CEL libraries for DRA selectors: quantity, semver, lists and regex.

cel-expr-python cannot carry Python objects through an evaluation, so kube's two
object types travel as tagged strings holding a canonical form of their value:
``Quantity`` as the exact fraction, ``Semver`` as the version without build metadata.
Canonical forms make CEL's own ``==`` agree with kube's ``Equal`` (value equality,
build metadata ignored). (``bytes`` would keep string functions off them, but the
binding loses the content of bytes that Python hands to it.)
The functions below decode those values (memoised) and implement kube's semantics,
raising :class:`LibraryError` with kube's message where kube returns an error.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from scheduler.model._quote import go_quote
from scheduler.model.quantity import QuantityError, parse_quantity_parts

__all__ = [
    "FUNCTIONS",
    "QUANTITY_TAG",
    "SEMVER_TAG",
    "LibraryError",
    "Semver",
    "encode_quantity",
    "encode_semver",
    "parse_semver",
    "type_name",
]

QUANTITY_TAG: Final = "\uf8ffkubernetes.Quantity\uf8ff"
SEMVER_TAG: Final = "\uf8ffkubernetes.Semver\uf8ff"
_INT64_MAX: Final = (1 << 63) - 1
_INT64_MIN: Final = -(1 << 63)
_UINT64_MAX: Final = (1 << 64) - 1
_CACHE_LIMIT: Final = 4096

# apimachinery's resource.ErrFormatWrong, ErrSuffix and ErrNumeric.
_QUANTITY_ERRORS: Final = {
    "format": "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    "suffix": "unable to parse quantity's suffix",
}
_QUANTITY_NUMERIC: Final = "unable to parse numeric part of quantity"


class LibraryError(Exception):
    """A runtime error of a kube library function; ``str()`` is kube's message."""


# --- Quantity -----------------------------------------------------------------------

_quantities: dict[str, Fraction] = {}


def encode_quantity(value: Fraction) -> str:
    return f"{QUANTITY_TAG}{value.numerator}/{value.denominator}"


def _quantity(value: object) -> Fraction | None:
    if not isinstance(value, str) or not value.startswith(QUANTITY_TAG):
        return None
    found = _quantities.get(value)
    if found is None:
        if len(_quantities) >= _CACHE_LIMIT:
            _quantities.clear()
        found = _quantities[value] = Fraction(value[len(QUANTITY_TAG) :])
    return found


def parse_quantity_value(text: str) -> Fraction:
    """``resource.ParseQuantity`` with apimachinery's error messages."""
    try:
        return parse_quantity_parts(text).value
    except QuantityError as err:
        raise LibraryError(_QUANTITY_ERRORS.get(err.kind, _QUANTITY_NUMERIC)) from None


def _q_from_string(text: str) -> str:
    return encode_quantity(parse_quantity_value(text))


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity_parts(text)
    except QuantityError:
        return False
    return True


def _as_int64(value: Fraction) -> int | None:
    if value.denominator != 1 or not _INT64_MIN <= value.numerator <= _INT64_MAX:
        return None
    return value.numerator


# --- Semver -------------------------------------------------------------------------

_NUMBERS: Final = frozenset("0123456789")
_ALPHANUM: Final = _NUMBERS | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


@dataclass(frozen=True, slots=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    def canonical(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return core + ("-" + ".".join(str(p) for p in self.pre) if self.pre else "")

    def compare(self, other: Semver) -> int:
        """blang/semver's ``Compare``: -1, 0 or 1."""
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            if isinstance(a, int) and isinstance(b, int):
                return -1 if a < b else 1
            if isinstance(a, int):
                return -1
            if isinstance(b, int):
                return 1
            return -1 if a < b else 1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def _parse_uint(text: str) -> int:
    value = int(text)
    if value > _UINT64_MAX:
        raise LibraryError(f"strconv.ParseUint: parsing {go_quote(text)}: value out of range")
    return value


def _number(text: str, what: str) -> int:
    if not text or not set(text) <= _NUMBERS:
        raise LibraryError(f"Invalid character(s) found in {what} number {go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise LibraryError(
            f"{what.capitalize()} number must not contain leading zeroes {go_quote(text)}"
        )
    return _parse_uint(text)


def parse_semver(text: str) -> Semver:
    """blang/semver v4 ``Parse`` (strict), with its error messages."""
    if not text:
        raise LibraryError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise LibraryError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    pre_at, build_at = rest.find("-"), rest.find("+")
    if pre_at != -1 and build_at != -1 and build_at < pre_at:
        pre_at = -1  # a hyphen inside build metadata
    cut = min(i for i in (pre_at, build_at, len(rest)) if i != -1)
    patch = _number(rest[:cut], "patch")
    pre: list[int | str] = []
    if pre_at != -1:
        for part in rest[pre_at + 1 : build_at if build_at != -1 else len(rest)].split("."):
            if not part:
                raise LibraryError("Prerelease is empty")
            if set(part) <= _NUMBERS:
                if len(part) > 1 and part[0] == "0":
                    raise LibraryError(
                        "Numeric PreRelease version must not contain leading zeroes "
                        + go_quote(part)
                    )
                pre.append(_parse_uint(part))
            elif set(part) <= _ALPHANUM:
                pre.append(part)
            else:
                raise LibraryError(f"Invalid character(s) found in prerelease {go_quote(part)}")
    if build_at != -1:
        for part in rest[build_at + 1 :].split("."):
            if not part:
                raise LibraryError("Build meta data is empty")
            if not set(part) <= _ALPHANUM:
                raise LibraryError(
                    f"Invalid character(s) found in build meta data {go_quote(part)}"
                )
    return Semver(major, minor, patch, tuple(pre))


def _normalize_and_parse(text: str) -> Semver:
    """The semver library's relaxed parsing (``semver(s, true)``)."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise LibraryError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse_semver(".".join(parts))


_semvers: dict[str, Semver] = {}


def encode_semver(version: Semver) -> str:
    encoded = SEMVER_TAG + version.canonical()
    if encoded not in _semvers:
        if len(_semvers) >= _CACHE_LIMIT:
            _semvers.clear()
        _semvers[encoded] = version
    return encoded


def _semver(value: object) -> Semver | None:
    if not isinstance(value, str) or not value.startswith(SEMVER_TAG):
        return None
    found = _semvers.get(value)
    if found is None:
        found = parse_semver(value[len(SEMVER_TAG) :])
        encode_semver(found)
    return found


def _semver_from(text: str, normalize: bool = False) -> str:
    return encode_semver(_normalize_and_parse(text) if normalize else parse_semver(text))


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _normalize_and_parse(text) if normalize else parse_semver(text)
    except LibraryError:
        return False
    return True


# --- dispatch -----------------------------------------------------------------------


def type_name(value: object) -> str:
    """A runtime value's CEL type as cel-go names it in messages."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        if value.startswith(QUANTITY_TAG):
            return "kubernetes.Quantity"
        if value.startswith(SEMVER_TAG):
            return "kubernetes.Semver"
        return "string"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if value is None:
        return "null_type"
    return type(value).__name__


def _no_overload(function: str, *args: object) -> LibraryError:
    return LibraryError(f"no such overload: {function}({', '.join(type_name(a) for a in args)})")


def _compare(function: str, left: object, right: object) -> int:
    a, b = _quantity(left), _quantity(right)
    if a is not None and b is not None:
        return (a > b) - (a < b)
    v, w = _semver(left), _semver(right)
    if v is not None and w is not None:
        return v.compare(w)
    raise _no_overload(function, left, right)


def _compare_to(left: str, right: str) -> int:
    return _compare("compareTo", left, right)


def _greater(left: str, right: str) -> bool:
    return _compare("isGreaterThan", left, right) == 1


def _less(left: str, right: str) -> bool:
    return _compare("isLessThan", left, right) == -1


def _q_unary(function: str, value: str) -> Fraction:
    q = _quantity(value)
    if q is None:
        raise _no_overload(function, value)
    return q


def _sign(value: str) -> int:
    q = _q_unary("sign", value)
    return (q > 0) - (q < 0)


def _as_integer(value: str) -> int:
    result = _as_int64(_q_unary("asInteger", value))
    if result is None:
        raise LibraryError("cannot convert value to integer")
    return result


def _is_integer(value: str) -> bool:
    return _as_int64(_q_unary("isInteger", value)) is not None


def _as_float(value: str) -> float:
    return float(_q_unary("asApproximateFloat", value))


def _arith(function: str, left: str, right: str | int, sign: int) -> str:
    a = _quantity(left)
    b = Fraction(right) if isinstance(right, int) else _quantity(right)
    if a is None or b is None:
        raise _no_overload(function, left, right)
    return encode_quantity(a + sign * b)


def _semver_part(function: str, index: int) -> Callable[[str], int]:
    def part(value: str) -> int:
        version = _semver(value)
        if version is None:
            raise _no_overload(function, value)
        return (version.major, version.minor, version.patch)[index]

    return part


# --- kube's lists and regex libraries ------------------------------------------------


def _comparable(values: list[Any]) -> list[Any]:
    for value in values:
        if isinstance(value, list | dict) or value is None:
            raise LibraryError("no such overload")
    return values


def _sum(values: list[Any]) -> Any:
    total: Any = 0
    for value in values:
        total = total + value
    if isinstance(total, int) and not _INT64_MIN <= total <= _INT64_MAX:
        raise LibraryError("integer overflow")
    return total


def _min(values: list[Any]) -> Any:
    if not values:
        raise LibraryError("min called on empty list")
    return min(_comparable(values))


def _max(values: list[Any]) -> Any:
    if not values:
        raise LibraryError("max called on empty list")
    return max(_comparable(values))


def _is_sorted(values: list[Any]) -> bool:
    _comparable(values)
    return all(a <= b for a, b in itertools.pairwise(values))


_regexes: dict[str, re.Pattern[str]] = {}


def _regex(pattern: str) -> re.Pattern[str]:
    compiled = _regexes.get(pattern)
    if compiled is None:
        try:
            compiled = re.compile(pattern)
        except re.error as err:
            raise LibraryError(f"error parsing regexp: {err}") from None
        if len(_regexes) >= _CACHE_LIMIT:
            _regexes.clear()
        _regexes[pattern] = compiled
    return compiled


def _find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _mismatch(function: str) -> Callable[..., Any]:
    def fail(*args: object) -> Any:
        raise _no_overload(function, *args)

    return fail


#: Runtime implementations, by (function, receiver-style, parameter kinds).
FUNCTIONS: Final[dict[tuple[str, bool, tuple[str, ...]], Callable[..., Any]]] = {
    ("quantity", False, ("string",)): _q_from_string,
    ("isQuantity", False, ("string",)): _is_quantity,
    ("sign", False, ("string",)): _sign,
    ("isGreaterThan", True, ("string", "string")): _greater,
    ("isLessThan", True, ("string", "string")): _less,
    ("compareTo", True, ("string", "string")): _compare_to,
    ("asApproximateFloat", True, ("string",)): _as_float,
    ("asInteger", True, ("string",)): _as_integer,
    ("isInteger", True, ("string",)): _is_integer,
    ("add", True, ("string", "string")): lambda a, b: _arith("add", a, b, 1),
    ("add", True, ("string", "int")): lambda a, b: _arith("add", a, b, 1),
    ("sub", True, ("string", "string")): lambda a, b: _arith("sub", a, b, -1),
    ("sub", True, ("string", "int")): lambda a, b: _arith("sub", a, b, -1),
    ("semver", False, ("string",)): _semver_from,
    ("semver", False, ("string", "bool")): _semver_from,
    ("isSemver", False, ("string",)): _is_semver,
    ("isSemver", False, ("string", "bool")): _is_semver,
    ("major", True, ("string",)): _semver_part("major", 0),
    ("minor", True, ("string",)): _semver_part("minor", 1),
    ("patch", True, ("string",)): _semver_part("patch", 2),
    ("sum", True, ("list",)): _sum,
    ("min", True, ("list",)): _min,
    ("max", True, ("list",)): _max,
    ("isSorted", True, ("list",)): _is_sorted,
    ("find", True, ("string", "string")): _find,
    ("findAll", True, ("string", "string")): _find_all,
    ("findAll", True, ("string", "string", "int")): _find_all,
}

# A version attribute is dynamically typed, so a selector may call a kube function
# on an attribute of another kind; kube then fails with "no such overload" naming the
# argument types, where cel-cpp would only list its kinds.
for (_name, _member, _kinds), _impl in list(FUNCTIONS.items()):
    if _member and _kinds[0] == "string" and _name not in ("find", "findAll"):
        for _other in ("int", "bool", "double", "list", "map"):
            FUNCTIONS.setdefault((_name, _member, (_other, *_kinds[1:])), _mismatch(_name))
