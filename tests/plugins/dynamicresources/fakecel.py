"""A stand-in for ``scheduler.model.devicecel`` until the real module lands.

It understands the few CEL forms the allocator tests use (``device.driver``,
``device.attributes["domain"].name``, ``device.capacity["domain"].name``,
``device.allowMultipleAllocations``, ``==``/``!=``/``<``/``>``, ``&&``/``||``/``!``)
by rewriting them into Python; ``conftest.py`` only installs it when the real module
cannot be imported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.model.quantity import parse_quantity


class CelError(Exception):
    pass


class CelCompileError(CelError):
    pass


class CelRuntimeError(CelError):
    pass


@dataclass(frozen=True)
class DeviceInput:
    driver: str
    attributes: Mapping[str, Mapping[str, Any]]
    capacity: Mapping[str, Mapping[str, Any]]
    allow_multiple_allocations: bool | None = None


class _Domains:
    def __init__(self, values: dict[str, dict[str, Any]]) -> None:
        self.values = values

    def __getitem__(self, domain: str) -> _Names:
        return _Names(self.values.get(domain, {}))


class _Names:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def __getattr__(self, name: str) -> Any:
        if name not in self.values:
            raise CelRuntimeError(f"no such key: {name}")
        return self.values[name]


def _group(raw: Mapping[str, Any], driver: str, attribute: bool) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, value in raw.items():
        domain, sep, short = name.rpartition("/")
        if not sep:
            domain, short = driver, name
        if attribute:
            v = next(value[k] for k in ("string", "int", "bool", "version") if k in value)
        else:
            v = _Q(parse_quantity(value["value"]))
        out.setdefault(domain, {})[short] = v
    return out


class _Q(Fraction):
    def compareTo(self, other: Fraction) -> int:
        return (self > other) - (self < other)


def _quantity(text: str) -> _Q:
    return _Q(parse_quantity(text))


class CompiledSelector:
    def __init__(self, expression: str, python: str) -> None:
        self.expression = expression
        self.python = python

    def matches(self, device: DeviceInput) -> bool:
        env = {
            "driver": device.driver,
            "attributes": _Domains(_group(device.attributes, device.driver, True)),
            "capacity": _Domains(_group(device.capacity, device.driver, False)),
            "allowMultipleAllocations": bool(device.allow_multiple_allocations),
        }
        result = eval(self.python, {"device": type("D", (), env)(), "quantity": _quantity})
        if not isinstance(result, bool):
            raise CelRuntimeError("no such overload")
        return result


class SelectorCache:
    def __init__(self) -> None:
        self.compiled = 0

    def compile(self, expression: str) -> CompiledSelector:
        self.compiled += 1
        python = expression.replace("&&", " and ").replace("||", " or ")
        python = re.sub(r"!(?!=)", " not ", python)
        python = python.replace("true", "True").replace("false", "False")
        try:
            compile(python, "<cel>", "eval")
        except SyntaxError as err:
            raise CelCompileError(f"compilation failed: {err.msg}") from None
        return CompiledSelector(expression, python)
