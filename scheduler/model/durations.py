"""Go duration strings (``"15s"``, ``"1m30s"``) as used by kube-scheduler's config.

kube-scheduler's ``metav1.Duration`` fields are written as Go duration strings,
so an existing config only loads unchanged if we read that exact syntax. Bare
numbers are rejected, as Go's decoder rejects them: ``15`` could mean seconds
or nanoseconds, and guessing would hide mistakes. Values are held as float
seconds because that is what asyncio timeouts take.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema
from pydantic_core import PydanticCustomError

__all__ = ["MAX_GO_DURATION_SECONDS", "GoDuration", "format_go_duration", "parse_go_duration"]

_NS_PER_UNIT: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign, what Go itself prints
    "\u03bcs": 1_000,  # Greek mu, also accepted by Go
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([a-zµμ]+)")
_NS_PER_SECOND = 1_000_000_000
_MAX_NS = 2**63 - 1
MAX_GO_DURATION_SECONDS: float = _MAX_NS / _NS_PER_SECOND
"""The longest Go ``time.Duration`` (int64 nanoseconds, about 292 years), in seconds.

kube-scheduler decodes every duration into one, so anything longer is a
config kube itself refuses ("invalid duration"); we refuse it too rather than
carry a value no Kubernetes component could have meant."""
_MAX_SHOWN = "2562047h47m16.854775807s"


def parse_go_duration(text: str) -> float:
    """Parse a Go duration string into seconds.

    Accepts what Go's ``time.ParseDuration`` accepts: an optional sign, then
    one or more ``<number><unit>`` parts (``ns us µs ms s m h``), or a bare
    ``0``. Raises ``ValueError`` with a message meant for the user.
    """
    s = text.strip()
    if not s:
        raise ValueError("empty duration")
    sign = 1
    if s[0] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0.0
    pos = 0
    # Exact, as Go's integer nanoseconds are: a float sum would round the
    # longest valid duration past the limit and huge digit strings to inf.
    total_ns = Decimal(0)
    while pos < len(s):
        match = _PART.match(s, pos)
        if match is None:
            raise ValueError(f"invalid duration {text!r}")
        number, unit = match.group(1), match.group(2)
        if unit not in _NS_PER_UNIT:
            raise ValueError(f"unknown unit {unit!r} in duration {text!r}")
        total_ns += Decimal(number) * _NS_PER_UNIT[unit]
        pos = match.end()
    if pos == 0:
        raise ValueError(f"invalid duration {text!r}")
    _check_range(total_ns, text)
    return sign * float(total_ns) / _NS_PER_SECOND


class _OutOfRange(ValueError):
    """A well-formed duration longer than Go's: the syntax hint would not help."""


def _check_range(total_ns: Decimal | float, shown: str) -> None:
    """Refuse what Go's ``ParseDuration`` refuses: more than int64 nanoseconds."""
    if not total_ns <= _MAX_NS:  # also refuses NaN
        raise _OutOfRange(
            f"duration {shown!r} is out of range: Go durations are at most "
            f"{_MAX_SHOWN} (about 292 years)"
        )


def _trim(number: str) -> str:
    return number.rstrip("0").rstrip(".") if "." in number else number


def format_go_duration(seconds: float) -> str:
    """Format seconds the way Go's ``Duration.String`` does (``1m30s``, ``500ms``).

    Used when printing the effective config, so the output is itself a valid
    kube-scheduler config. Micro-seconds are written ``us`` to stay ASCII.
    """
    ns = round(seconds * _NS_PER_SECOND)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_trim(f'{ns / 1_000:.3f}')}us"
    if ns < _NS_PER_SECOND:
        return f"{sign}{_trim(f'{ns / 1_000_000:.6f}')}ms"
    hours, rest = divmod(ns, 3600 * _NS_PER_SECOND)
    minutes, rest = divmod(rest, 60 * _NS_PER_SECOND)
    secs = _trim(f"{rest / _NS_PER_SECOND:.9f}")
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


def _validate(value: Any) -> float:
    try:
        if isinstance(value, datetime.timedelta):
            seconds = value.total_seconds()
            _check_range(abs(seconds) * _NS_PER_SECOND, str(value))
            return seconds
        if isinstance(value, str):
            return parse_go_duration(value)
    except _OutOfRange as err:
        raise PydanticCustomError("go_duration_range", "{reason}", {"reason": str(err)}) from None
    except ValueError as err:
        raise PydanticCustomError(
            "go_duration",
            '{reason}; expected a Go duration such as "15s", "1m30s" or "500ms"',
            {"reason": str(err)},
        ) from None
    raise PydanticCustomError(
        "go_duration_type",
        'must be a Go duration string such as "15s", "1m30s" or "500ms"',
    )


GoDuration = Annotated[
    float,
    BeforeValidator(_validate),
    PlainSerializer(format_go_duration, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "go-duration", "examples": ["15s", "1m30s"]}),
]
"""A duration read from a Go duration string and held as float seconds."""
