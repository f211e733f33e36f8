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
                try:
                    number = int(have)
                except ValueError:
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


def _check_key(key: str) -> str:
    if qualified_name_errors(key):
        raise QuerySelectorError(f"unable to parse requirement: invalid label key {key!r}")
    return key


def _check_value(value: str) -> str:
    if label_value_errors(value):
        raise QuerySelectorError(f"unable to parse requirement: invalid label value: {value!r}")
    return value


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
            values = [v.strip() for v in m.group(3).split(",")]
            if m.group(3).strip() == "":
                values = []
            for v in values:
                _check_value(v)
            if m.group(2) == "in" and not values:
                raise QuerySelectorError(
                    "unable to parse requirement: "
                    "for 'in', 'notin' operators, values set can't be empty"
                )
            reqs.append((_check_key(m.group(1)), m.group(2), frozenset(values)))
            continue
        m = _OP_RE.match(part)
        if m:
            key, op, value = _check_key(m.group(1)), m.group(2), m.group(3)
            if op in ("<", ">"):
                if not re.fullmatch(r"-?\d+", value):
                    raise QuerySelectorError(
                        "unable to parse requirement: for 'Gt', 'Lt' operators, "
                        f"the value must be an integer: {value!r}"
                    )
                reqs.append((key, "gt" if op == ">" else "lt", frozenset([value])))
            else:
                _check_value(value)
                reqs.append((key, "notin" if op == "!=" else "in", frozenset([value])))
            continue
        if re.fullmatch(r"\S+", part):
            reqs.append((_check_key(part), "exists", frozenset()))
            continue
        raise QuerySelectorError(f"unable to parse requirement: {part!r}")
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
