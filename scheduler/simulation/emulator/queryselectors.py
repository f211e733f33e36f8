"""The ``labelSelector`` / ``fieldSelector`` query parameters of list and watch requests.

kube-apiserver's syntax and error messages, for the API the emulator serves; the
scheduler's own selectors (pod affinity, PDBs, ...) live in ``scheduler.model.selectors``.
Parsed once per request into plain tuples so matching thousands of objects
(a list, or every write fanned out to watchers) stays a tight loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.names import label_value_errors, qualified_name_errors
from scheduler.simulation.emulator.validation import show

_SET_RE = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")
_OP_RE = re.compile(r"^\s*([^\s!=<>]+)\s*(==|=|!=|<|>)\s*(.*?)\s*$")


class QuerySelectorError(ValueError):
    """Raised with the message the apiserver would put in its 400 Status."""


# A requirement is (key, op, values); ops: in, notin, exists, !, gt, lt.
Requirement = tuple[str, str, frozenset[str]]


@dataclass(frozen=True, slots=True)
class LabelQuery:
    requirements: tuple[Requirement, ...]

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        for key, op, values in self.requirements:
            if op == "in":
                if labels.get(key) not in values:
                    return False
            elif op == "notin":
                if key in labels and labels[key] in values:
                    return False
            elif op == "exists":
                if key not in labels:
                    return False
            elif op == "!":
                if key in labels:
                    return False
            else:
                have = labels.get(key)
                if have is None:
                    return False
                number = _go_int(have)
                if number is None:
                    return False
                limit = int(next(iter(values)))
                if (op == "gt" and not number > limit) or (op == "lt" and not number < limit):
                    return False
        return True


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


_PARSE_FAILED = "unable to parse requirement: "
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: Python's ``int`` also takes spaces and ``_``."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _check_key(key: str) -> str:
    """The parser's own key check, which kube reports before anything else (path <nil>)."""
    errs = qualified_name_errors(key)
    if errs:
        raise QuerySelectorError(
            f"{_PARSE_FAILED}<nil>: Invalid value: {show(key)}: {'; '.join(errs)}"
        )
    return key


def _requirement(key: str, op: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement``'s value checks, aggregated as kube's ``ToAggregate`` words them."""
    problems: list[str] = []
    if op in ("gt", "lt"):
        problems += [
            f"values[{i}]: Invalid value: {show(v)}: "
            "for 'Gt', 'Lt' operators, the value must be an integer"
            for i, v in enumerate(values)
            if _go_int(v) is None
        ]
    for i, value in enumerate(values):
        errs = label_value_errors(value)
        if errs:
            problems.append(f"values[{i}][{key}]: Invalid value: {show(value)}: {'; '.join(errs)}")
    problems = list(dict.fromkeys(problems))
    if len(problems) == 1:
        raise QuerySelectorError(_PARSE_FAILED + problems[0])
    if problems:
        raise QuerySelectorError(_PARSE_FAILED + "[" + ", ".join(problems) + "]")
    return (key, op, frozenset(values))


def parse_label_query(text: str | None) -> LabelQuery:
    if not text or not text.strip():
        return LabelQuery(())
    reqs: list[Requirement] = []
    for raw in _split_top_level(text):
        part = raw.strip()
        if not part:
            raise QuerySelectorError(f"found '', expected: identifier in label selector {text!r}")
        if part.startswith("!"):
            reqs.append((_check_key(part[1:].strip()), "!", frozenset()))
            continue
        m = _SET_RE.match(part)
        if m:
            key = _check_key(m.group(1))
            # kube's parser reads "()" as the set {""} and sorts the set's values.
            values = sorted({v.strip() for v in m.group(3).split(",")})
            reqs.append(_requirement(key, m.group(2), values))
            continue
        m = _OP_RE.match(part)
        if m:
            key, op, value = _check_key(m.group(1)), m.group(2), m.group(3)
            kind = {"<": "lt", ">": "gt", "!=": "notin"}.get(op, "in")
            reqs.append(_requirement(key, kind, [value]))
            continue
        if re.fullmatch(r"\S+", part):
            reqs.append((_check_key(part), "exists", frozenset()))
            continue
        raise QuerySelectorError(f"{_PARSE_FAILED}{part!r}")
    return LabelQuery(tuple(reqs))


FieldGetter = Callable[[dict[str, Any]], dict[str, str]]


@dataclass(frozen=True, slots=True)
class FieldQuery:
    # (label, must_equal, value)
    terms: tuple[tuple[str, bool, str], ...]

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all((fields.get(label, "") == value) == equal for label, equal, value in self.terms)

    def exact_value(self, label: str) -> str | None:
        for term_label, equal, value in self.terms:
            if term_label == label and equal:
                return value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, buf, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            buf.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return parts


def _unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append(value[i + 1])
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def parse_field_query(text: str | None, supported: frozenset[str]) -> FieldQuery:
    """Parse ``a=b,c!=d``; a label the resource does not index is a 400."""
    if not text or not text.strip():
        return FieldQuery(())
    terms: list[tuple[str, bool, str]] = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for op in ("!=", "==", "="):
            idx = part.find(op)
            if idx > 0:
                label, value = part[:idx].strip(), _unescape(part[idx + len(op) :])
                break
        else:
            raise QuerySelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        if label not in supported:
            raise QuerySelectorError(f"field label not supported: {label}")
        terms.append((label, op != "!=", value))
    return FieldQuery(tuple(terms))
