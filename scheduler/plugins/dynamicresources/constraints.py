"""Claim constraints: ``matchAttribute`` and ``distinctAttribute``.

Ported from kube's incubating allocator (``allocator_incubating.go`` and
``constraint.go``). Constraints are checked incrementally while the search adds
devices and undone in reverse order when it backtracks, so they only count devices
instead of remembering them, exactly like kube; ``distinctAttribute`` even keys its
memory by request name, so two devices of one request overwrite each other's entry
there, which is kube's behaviour and is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = [
    "Constraint",
    "DistinctAttributeConstraint",
    "MatchAttributeConstraint",
    "lookup_attribute",
]

#: The value kinds a v1 DeviceAttribute can hold, in the order kube checks them.
_KINDS = ("string", "int", "bool", "version")


class Constraint(Protocol):
    """What the search needs from a constraint."""

    def add(
        self, request: str, sub_request: str, attributes: Mapping[str, Any], driver: str
    ) -> bool:
        """Whether the device may join; if so it is counted until :meth:`remove`."""

    def remove(self, request: str, sub_request: str) -> None:
        """Undo the matching successful :meth:`add`."""


def lookup_attribute(
    attributes: Mapping[str, Any], driver: str, name: str
) -> Mapping[str, Any] | None:
    """A device attribute by fully qualified name; the driver's own domain may be omitted."""
    found = attributes.get(name)
    if found is not None:
        return found if isinstance(found, Mapping) else None
    domain, sep, short = name.partition("/")
    if not sep or domain != driver:
        return None
    found = attributes.get(short)
    return found if isinstance(found, Mapping) else None


def _kind(attribute: Mapping[str, Any]) -> tuple[str, Any] | None:
    for kind in _KINDS:
        value = attribute.get(kind)
        if value is not None:
            return kind, value
    return None


class _RequestScoped:
    def __init__(self, requests: list[str], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if not sub_request:
            return request in self.requests
        return request in self.requests or f"{request}/{sub_request}" in self.requests


class MatchAttributeConstraint(_RequestScoped):
    """All devices of the named requests must have the same attribute value."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.first: Mapping[str, Any] | None = None
        self.count = 0

    def add(
        self, request: str, sub_request: str, attributes: Mapping[str, Any], driver: str
    ) -> bool:
        if not self.applies(request, sub_request):
            return True
        attribute = lookup_attribute(attributes, driver, self.attribute)
        if attribute is None:
            return False
        if self.count == 0:
            self.first = attribute
            self.count = 1
            return True
        kind = _kind(attribute)
        if kind is None or self.first is None:
            return False
        reference = self.first.get(kind[0])
        if reference is None or reference != kind[1] or type(reference) is not type(kind[1]):
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if self.applies(request, sub_request):
            self.count -= 1


class DistinctAttributeConstraint(_RequestScoped):
    """No two devices of the named requests may share the attribute value."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.by_request: dict[str, Mapping[str, Any]] = {}
        self.count = 0

    def add(
        self, request: str, sub_request: str, attributes: Mapping[str, Any], driver: str
    ) -> bool:
        if not self.applies(request, sub_request):
            return True
        attribute = lookup_attribute(attributes, driver, self.attribute)
        if attribute is None:
            return False
        if self.count == 0:
            self.by_request[request] = attribute
            self.count = 1
            return True
        if not self._distinct(attribute):
            return False
        self.by_request[request] = attribute
        self.count += 1
        return True

    def _distinct(self, attribute: Mapping[str, Any]) -> bool:
        kind = _kind(attribute)
        for other in self.by_request.values():
            if kind is None:
                return False
            value = other.get(kind[0])
            if value is not None and value == kind[1] and type(value) is type(kind[1]):
                return False
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if self.applies(request, sub_request):
            self.by_request.pop(request, None)
            self.count -= 1
