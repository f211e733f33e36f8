"""The ``labelSelector`` / ``fieldSelector`` query parameters of list and watch requests.

kube-apiserver's syntax and error messages, for the API the emulator serves.
A ``labelSelector`` is parsed by the scheduler's own parser
(``scheduler.model.selectors``: apimachinery's grammar and texts), once per
request; field selectors, which only the API server reads, are parsed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.selectors import LabelSelector, SelectorError, parse_label_selector_string


class QuerySelectorError(ValueError):
    """Raised with the message the apiserver would put in its 400 Status."""


@dataclass(frozen=True, slots=True)
class LabelQuery:
    """A list or watch request's ``labelSelector``."""

    selector: LabelSelector

    @property
    def empty(self) -> bool:
        return self.selector.is_everything

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return self.selector.matches(labels or {})


def parse_label_query(text: str | None) -> LabelQuery:
    try:
        return LabelQuery(parse_label_selector_string(text or ""))
    except SelectorError as err:
        raise QuerySelectorError(str(err)) from None


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
