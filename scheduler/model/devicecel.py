"""CEL device selectors of Dynamic Resource Allocation, as kube-scheduler evaluates them.

DeviceClasses and ResourceClaim requests select devices with CEL expressions over a
``device`` variable (k8s.io/dynamic-resource-allocation/cel, kube 1.36 with its default
feature gates: DRAConsumableCapacity on, DRAListTypeAttributes off). CEL itself comes
from ``cel-expr-python`` (Google's binding of cel-cpp); this module only adds kube's
environment on top of it. Three things the binding cannot do directly are bridged:

* **Two environments.** cel-cpp type-checks against declarations, so kube's compile
  errors (undeclared names, overload mismatches, non-bool results) come from a
  *check* environment that declares ``device`` and kube's ``kubernetes.Quantity`` /
  ``kubernetes.Semver`` types exactly. The binding cannot pass opaque values at run
  time, so the checked tree is evaluated in a *run* environment where those two types
  are tagged strings (see :mod:`scheduler.model._celkube`).
* **Maps with a default.** kube looks up an unknown domain in ``device.attributes`` or
  ``device.capacity`` as an empty map (so ``device.attributes["x"].y`` fails with "no
  such key: y", ``has(device.attributes["x"].y)`` is false). The checked tree is
  rewritten so such lookups become ``m[?k].orValue({})``, and a presence test on the
  outer map is true, as with kube's custom mapper.
* **Cost.** cel-cpp has no cost model; :mod:`scheduler.model._celcost` ports kube's
  compile-time estimate. There is no runtime cost tracking either: an expression whose
  estimate exceeds the limit fails every evaluation with kube's runtime error instead
  of failing only when its actual cost does (kube-apiserver rejects such expressions
  anyway, so only stored or hand-made objects can carry them).

Known differences from kube (all in corners selectors rarely reach): cross-type numeric
ordering (``1 < 1.5``) is a compile error; ``has(device.driver)`` does not compile;
kube's url/ip/cidr/format/authz libraries are not declared; ``transformMap``/
``transformList`` fail at run time; a version attribute compared with ``==`` to a
non-version is false instead of "no such overload"; some compile messages name types
the cel-cpp way (``'(string)'`` instead of cel-go's ``'string.()'`` for member calls).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

from cel_expr_python import cel  # type: ignore[import-untyped]  # ships .pyi, no py.typed
from cel_expr_python.ext import (  # type: ignore[import-untyped]
    ext_bindings,
    ext_optional,
    ext_strings,
)

from scheduler.model import _celkube as kube
from scheduler.model._celast import (
    Call,
    CheckedAst,
    Comprehension,
    Const,
    CreateList,
    CreateStruct,
    Expr,
    Ident,
    Select,
    StructEntry,
    decode_checked,
    encode_parsed,
)
from scheduler.model._celcost import estimate_cost
from scheduler.model.quantity import QuantityError, parse_quantity

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "CEL_SELECTOR_EXPRESSION_MAX_LENGTH",
    "CelCompileError",
    "CelError",
    "CelRuntimeError",
    "CompiledSelector",
    "DeviceActivation",
    "DeviceInput",
    "SelectorCache",
    "activation",
    "compile_selector",
    "validate_expression",
]

#: resource.k8s.io's CELSelectorExpressionMaxCost and CELSelectorExpressionMaxLength.
CEL_SELECTOR_EXPRESSION_MAX_COST: Final = 1_000_000
CEL_SELECTOR_EXPRESSION_MAX_LENGTH: Final = 10 * 1024

#: kube-scheduler's ``cel.NewCache(10, ...)`` in the DynamicResources plugin.
DEFAULT_CACHE_SIZE: Final = 10

_COST_LIMIT_ERROR: Final = "operation cancelled: actual cost limit exceeded"


class CelError(Exception):
    """A selector that cannot be used; ``str()`` is kube's message."""


class CelCompileError(CelError):
    """The expression does not compile (kube's ``CompilationResult.Error``)."""


class CelRuntimeError(CelError):
    """Evaluating the expression for a device failed (``DeviceMatches`` error)."""


# --- environments -------------------------------------------------------------------

_T = cel.Type
_QUANTITY: Final = _T.AbstractType("kubernetes.Quantity")
_SEMVER: Final = _T.AbstractType("kubernetes.Semver")
_ANY: Final = _T("google.protobuf.Any")
_EXT_CONFIG: Final = """
extensions:
  - name: sets
  - name: lists
    version: latest
  - name: two-var-comprehensions
"""
_ORDERED: Final = (_T.INT, _T.UINT, _T.DOUBLE, _T.STRING, _T.BYTES, _T.BOOL)


def _extensions() -> list[cel.CelExtensionBase]:
    # kube's base environment: strings v2, bindings (cel.bind) and optional types.
    return [ext_strings.ExtStrings(2), ext_bindings.ExtBindings(), ext_optional.ExtOptional()]


def _overload(name: str, result: cel.Type, params: list[cel.Type], member: bool) -> cel.Overload:
    return cel.Overload(name, result, params, is_member=member)


def _check_functions() -> list[cel.FunctionDecl]:
    """kube's quantity, semver, lists and regex declarations, overload IDs included."""
    q, s, t = _QUANTITY, _SEMVER, _T
    decls: dict[str, list[cel.Overload]] = {
        "quantity": [_overload("string_to_quantity", q, [t.STRING], False)],
        "isQuantity": [_overload("is_quantity_string", t.BOOL, [t.STRING], False)],
        "sign": [_overload("quantity_sign", t.INT, [q], False)],
        "isGreaterThan": [
            _overload("quantity_is_greater_than", t.BOOL, [q, q], True),
            _overload("semver_is_greater_than", t.BOOL, [s, s], True),
        ],
        "isLessThan": [
            _overload("quantity_is_less_than", t.BOOL, [q, q], True),
            _overload("semver_is_less_than", t.BOOL, [s, s], True),
        ],
        "compareTo": [
            _overload("quantity_compare_to", t.INT, [q, q], True),
            _overload("semver_compare_to", t.INT, [s, s], True),
        ],
        "asApproximateFloat": [_overload("quantity_get_float", t.DOUBLE, [q], True)],
        "asInteger": [_overload("quantity_get_int", t.INT, [q], True)],
        "isInteger": [_overload("quantity_is_integer", t.BOOL, [q], True)],
        "add": [
            _overload("quantity_add", q, [q, q], True),
            _overload("quantity_add_int", q, [q, t.INT], True),
        ],
        "sub": [
            _overload("quantity_sub", q, [q, q], True),
            _overload("quantity_sub_int", q, [q, t.INT], True),
        ],
        "semver": [
            _overload("string_to_semver", s, [t.STRING], False),
            _overload("string_bool_to_semver", s, [t.STRING, t.BOOL], False),
        ],
        "isSemver": [
            _overload("is_semver_string", t.BOOL, [t.STRING], False),
            _overload("is_semver_string_bool", t.BOOL, [t.STRING, t.BOOL], False),
        ],
        "major": [_overload("semver_major", t.INT, [s], True)],
        "minor": [_overload("semver_minor", t.INT, [s], True)],
        "patch": [_overload("semver_patch", t.INT, [s], True)],
        "find": [_overload("string_find_string", t.STRING, [t.STRING, t.STRING], True)],
        "findAll": [
            _overload("string_find_all_string", t.List(t.STRING), [t.STRING, t.STRING], True),
            _overload(
                "string_find_all_string_int",
                t.List(t.STRING),
                [t.STRING, t.STRING, t.INT],
                True,
            ),
        ],
    }
    for elem in _ORDERED:
        name = elem.name().lower()
        lst = t.List(elem)
        decls.setdefault("isSorted", []).append(
            _overload(f"list_{name}_is_sorted", t.BOOL, [lst], True)
        )
        for fn in ("min", "max"):
            decls.setdefault(fn, []).append(_overload(f"list_{name}_{fn}", elem, [lst], True))
    for elem in (t.INT, t.UINT, t.DOUBLE):
        name = elem.name().lower()
        decls.setdefault("sum", []).append(
            _overload(f"list_{name}_sum", elem, [t.List(elem)], True)
        )
    return [cel.FunctionDecl(name, overloads) for name, overloads in decls.items()]


_KINDS: Final = {
    "string": [_T.STRING],
    "bytes": [_T.BYTES],
    "int": [_T.INT],
    "bool": [_T.BOOL],
    "list": [_T.LIST],
    "double": [_T.DOUBLE],
    "map": [_T.MAP],
    "dyn": list(_ORDERED),
}


def _run_functions() -> list[cel.FunctionDecl]:
    """The same functions for the run environment, over the tagged-bytes encoding."""
    decls: dict[str, list[cel.Overload]] = {}
    for (name, member, kinds), impl in kube.FUNCTIONS.items():
        signatures: list[list[cel.Type]] = [[]]
        for kind in kinds:
            signatures = [[*sig, t] for sig in signatures for t in _KINDS[kind]]
        for params in signatures:
            oid = f"run_{name}_{'_'.join(p.name().lower() for p in params)}"
            decls.setdefault(name, []).append(
                cel.Overload(oid, _T.DYN, params, is_member=member, impl=impl)
            )
    return [cel.FunctionDecl(name, overloads) for name, overloads in decls.items()]


_CHECK_ENV: Final = cel.NewEnv(
    config=cel.NewEnvConfigFromYaml(_EXT_CONFIG),
    variables={
        "device.driver": _T.STRING,
        "device.attributes": _T.Map(_T.STRING, _T.Map(_T.STRING, _ANY)),
        "device.capacity": _T.Map(_T.STRING, _T.Map(_T.STRING, _QUANTITY)),
        "device.allowMultipleAllocations": _T.BOOL,
    },
    extensions=_extensions(),
    functions=_check_functions(),
)
_RUN_ENV: Final = cel.NewEnv(
    config=cel.NewEnvConfigFromYaml(_EXT_CONFIG),
    extensions=_extensions(),
    functions=_run_functions(),
)

# --- compile-time messages ----------------------------------------------------------

_STATUS_PREFIX: Final = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX: Final = re.compile(r" \[[A-Z_]+\]$")
_DEVICE_FIELD: Final = re.compile(
    r"undeclared reference to 'device\.([A-Za-z_][A-Za-z0-9_]*)' \(in container ''\)"
)


def _status_text(err: BaseException | str) -> str:
    text = str(err)
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text, count=1))


def _compile_message(err: BaseException) -> str:
    text = _status_text(err)
    if not text.startswith("ERROR: "):
        return f"compilation failed: {text}"
    # cel-go checks `device` as an object: an unknown member is an undefined field.
    return "compilation failed: " + _DEVICE_FIELD.sub(r"undefined field '\1'", text)


# --- the default-map rewrite --------------------------------------------------------

_DEFAULTED: Final = frozenset({"device.attributes", "device.capacity"})


@dataclass(slots=True)
class _Rewriter:
    next_id: int
    changed: bool = False

    def fresh(self) -> int:
        self.next_id += 1
        return self.next_id

    def lookup(self, container: Expr, key: Expr) -> Expr:
        """``container[?key].orValue({})``: kube's mapper returns {} for unknown keys."""
        self.changed = True
        optional = Call(self.fresh(), "_[?_]", [container, key])
        empty = CreateStruct(self.fresh(), "", [])
        return Call(self.fresh(), "orValue", [empty], optional)

    def visit(self, node: Expr, aliases: frozenset[str]) -> Expr:
        def defaulted(e: Expr) -> bool:
            return isinstance(e, Ident) and (e.name in _DEFAULTED or e.name in aliases)

        if isinstance(node, Select):
            if defaulted(node.operand):
                if node.test_only:
                    self.changed = True
                    return Const(node.id, "bool", True)
                return self.lookup(node.operand, Const(self.fresh(), "string", node.field))
            node.operand = self.visit(node.operand, aliases)
            return node
        if isinstance(node, Call):
            if node.function == "_[_]" and len(node.args) == 2 and defaulted(node.args[0]):
                return self.lookup(node.args[0], self.visit(node.args[1], aliases))
            node.args = [self.visit(arg, aliases) for arg in node.args]
            if node.target is not None:
                node.target = self.visit(node.target, aliases)
            return node
        if isinstance(node, CreateList):
            node.elements = [self.visit(e, aliases) for e in node.elements]
            return node
        if isinstance(node, CreateStruct):
            node.entries = [self.visit_entry(e, aliases) for e in node.entries]
            return node
        if isinstance(node, Comprehension):
            return self.visit_comprehension(node, aliases, defaulted(node.accu_init))
        return node

    def visit_entry(self, entry: StructEntry, aliases: frozenset[str]) -> StructEntry:
        if entry.map_key is not None:
            entry.map_key = self.visit(entry.map_key, aliases)
        entry.value = self.visit(entry.value, aliases)
        return entry

    def visit_comprehension(
        self, node: Comprehension, aliases: frozenset[str], alias_accu: bool
    ) -> Comprehension:
        node.iter_range = self.visit(node.iter_range, aliases)
        node.accu_init = self.visit(node.accu_init, aliases)
        bound = {node.iter_var, node.iter_var2, node.accu_var}
        inner = aliases - bound
        node.loop_condition = self.visit(node.loop_condition, inner)
        node.loop_step = self.visit(node.loop_step, inner)
        # cel.bind(x, device.attributes, ...) makes x the same defaulting map.
        result_aliases = inner | {node.accu_var} if alias_accu else inner
        node.result = self.visit(node.result, result_aliases)
        return node


# --- runtime messages ---------------------------------------------------------------

_KEY_NOT_FOUND: Final = re.compile(r'^Key not found in map : "?(.*?)"?$')
_NO_OVERLOAD: Final = re.compile(
    r"^No matching overloads found : (?:\(([^)]*)\)\.)?([^(]+)\((.*)\)$"
)
_INDEX_ERROR: Final = re.compile(r"^Index error: index=(-?\d+) size=\d+$")
_CPP_TYPES: Final = {"int64": "int", "uint64": "uint"}


def _runtime_message(raw: str) -> str:
    text = _status_text(raw)
    if m := _KEY_NOT_FOUND.match(text):
        return f"no such key: {m.group(1)}"
    if m := _NO_OVERLOAD.match(text):
        receiver, function, args = m.group(1), m.group(2), m.group(3)
        if not function[:1].isalpha():
            return "no such overload"  # operators: cel-go's Equal/Compare traits say no more
        kinds = [receiver] if receiver else []
        kinds += [a for a in args.split(",") if a.strip()]
        names = [_CPP_TYPES.get(a.strip(), a.strip()) for a in kinds]
        return f"no such overload: {function}({', '.join(names)})"
    if text == "divide by zero":
        return "division by zero"
    if text == "modulus by zero":
        return "modulus by zero"
    if m := _INDEX_ERROR.match(text):
        return f"index out of bounds: {m.group(1)}"
    return text


_NATIVE_BOOL_ERRORS: Final = {
    "string": "unsupported native conversion from string to 'bool'",
    "int": "unsupported type conversion from 'int' to bool",
    "uint": "unsupported type conversion from 'uint' to bool",
    "double": "type conversion error from Double to 'bool'",
    "kubernetes.Semver": "type conversion error from 'Semver' to 'bool'",
    "kubernetes.Quantity": "type conversion error from 'Quantity' to 'bool'",
}


def _not_bool(value: object) -> CelRuntimeError:
    name = kube.type_name(value)
    reason = _NATIVE_BOOL_ERRORS.get(name, f"type conversion error from '{name}' to 'bool'")
    return CelRuntimeError(f"CEL result of type {name} could not be converted to bool: {reason}")


# --- device input -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceActivation:
    """The ``device`` variable for one device, reusable across selectors."""

    activation: cel.Activation | None
    error: str | None = None


def _split_name(name: str, driver: str) -> tuple[str, str]:
    """parseQualifiedName: plain names get the driver as their domain."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute_value(attr: Mapping[str, Any]) -> object:
    for kind in ("int", "bool", "string", "version"):
        value = attr.get(kind)
        if value is None:
            continue
        if kind == "version":
            try:
                return kube.encode_semver(kube.parse_semver(str(value)))
            except kube.LibraryError as err:
                raise ValueError(f"parse semantic version: {err}") from None
        if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind == "bool" and isinstance(value, bool):
            return value
        if kind == "string" and isinstance(value, str):
            return value
    raise ValueError("unsupported attribute value")


@dataclass(frozen=True)
class DeviceInput:
    """A device as a selector sees it (``dracel.Device``).

    ``attributes`` and ``capacity`` are keyed by QualifiedName and hold the slice's
    DeviceAttribute (``{"int": 0}``, ``{"version": "1.2.3"}``, ...) and DeviceCapacity
    (``{"value": "80Gi"}``) dicts. The CEL activation is built once per instance, on
    first use, and shared by every selector evaluated against this device.
    """

    driver: str
    attributes: Mapping[str, Mapping[str, Any]]
    capacity: Mapping[str, Mapping[str, Any]]
    allow_multiple_allocations: bool | None = None

    @cached_property
    def cel_activation(self) -> DeviceActivation:
        return _build_activation(self)


def _build_activation(device: DeviceInput) -> DeviceActivation:
    attributes: dict[str, dict[str, object]] = {}
    for name, attr in device.attributes.items():
        try:
            value = _attribute_value(attr)
        except ValueError as err:
            return DeviceActivation(None, f"attribute {name}: {err}")
        domain, ident = _split_name(name, device.driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, object]] = {}
    for name, cap in device.capacity.items():
        try:
            amount = parse_quantity(cap.get("value", ""))
        except QuantityError as err:
            return DeviceActivation(None, f"capacity {name}: {err}")
        domain, ident = _split_name(name, device.driver)
        capacity.setdefault(domain, {})[ident] = kube.encode_quantity(amount)
    data = {
        "device.driver": device.driver,
        "device.allowMultipleAllocations": bool(device.allow_multiple_allocations),
        "device.attributes": attributes,
        "device.capacity": capacity,
    }
    return DeviceActivation(_RUN_ENV.Activation(data))


def activation(device: DeviceInput) -> DeviceActivation:
    """The device's (cached) activation, for :meth:`CompiledSelector.matches_activation`."""
    return device.cel_activation


# --- compiled selectors -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    """A compiled selector; ``max_cost`` is kube's worst-case cost estimate."""

    expression: str
    max_cost: int
    _program: cel.Expression

    def matches(self, device: DeviceInput) -> bool:
        """Whether the device satisfies the selector; errors raise CelRuntimeError."""
        return self.matches_activation(device.cel_activation)

    def matches_activation(self, device: DeviceActivation) -> bool:
        if device.activation is None:
            raise CelRuntimeError(device.error or "invalid device")
        if self.max_cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
            raise CelRuntimeError(_COST_LIMIT_ERROR)
        try:
            result = self._program.eval(device.activation)
            value = result.value()
        except Exception as err:  # the binding raises for results it cannot convert
            raise CelRuntimeError(_runtime_message(str(err))) from None
        if value is True or value is False:
            return value
        if result.type().name() == "ERROR" or (isinstance(value, str) and result.type() == _T.BOOL):
            raise CelRuntimeError(_runtime_message(str(value)))
        raise _not_bool(value)


def compile_selector(expression: str) -> CompiledSelector:
    """CompileCELExpression with cost estimation; raises CelCompileError."""
    try:
        checked = _CHECK_ENV.compile(expression)
    except Exception as err:
        raise CelCompileError(_compile_message(err)) from None
    ast = decode_checked(checked.serialize())
    result = ast.type_of(ast.expr.id)
    if not (
        (result.kind == "primitive" and result.name == "bool")
        or (result.kind == "well_known" and result.name == "google.protobuf.Any")
    ):
        raise CelCompileError(f"must evaluate to bool or the unknown type, not {result}")
    cost = estimate_cost(ast)
    program = _run_program(ast)
    return CompiledSelector(expression, cost, program)


def _run_program(ast: CheckedAst) -> cel.Expression:
    rewriter = _Rewriter(ast.max_id())
    tree = rewriter.visit(ast.expr, frozenset())
    try:
        return _RUN_ENV.deserialize(encode_parsed(tree, ast.source_info))
    except Exception as err:  # pragma: no cover - the checked tree always plans
        raise CelCompileError(f"program instantiation failed: {_status_text(err)}") from None


def validate_expression(expression: str) -> list[str]:
    """kube-apiserver's validateCELSelector for a new expression.

    Returns the messages of the field errors for ``...cel.expression``: a bare detail
    for an invalid expression (the caller renders it as "Invalid value"), otherwise
    the message with its kind ("Too long: ...", "Forbidden: ...").
    """
    if len(expression.encode()) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [f"Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes"]
    try:
        compiled = compile_selector(expression)
    except CelCompileError as err:
        return [str(err)]
    if compiled.max_cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return ["Forbidden: too complex, exceeds cost limit"]
    return []


class SelectorCache:
    """Compiled selectors by expression, least recently used dropped first.

    Like kube-scheduler's ``cel.Cache`` (10 entries in the DynamicResources plugin),
    except that compile errors are cached too: compiling is deterministic, and an
    invalid selector in a class used by many pods would otherwise be recompiled for
    each of them.
    """

    def __init__(self, max_entries: int = DEFAULT_CACHE_SIZE) -> None:
        self._max = max(1, max_entries)
        self._entries: OrderedDict[str, CompiledSelector | CelCompileError] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def compile(self, expression: str) -> CompiledSelector:
        with self._lock:
            entry = self._entries.get(expression)
            if entry is not None:
                self._entries.move_to_end(expression)
        if entry is None:
            try:
                entry = compile_selector(expression)
            except CelCompileError as err:
                entry = err
            with self._lock:
                self._entries[expression] = entry
                self._entries.move_to_end(expression)
                while len(self._entries) > self._max:
                    self._entries.popitem(last=False)
        if isinstance(entry, CelCompileError):
            raise CelCompileError(str(entry))
        return entry
