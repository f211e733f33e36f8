"""kube's compile-time cost estimate for DRA selector expressions.

kube-apiserver rejects a selector whose *estimated* worst-case cost exceeds
``CELSelectorExpressionMaxCost``. The estimate comes from cel-go's
``checker.Cost`` walking the type-checked AST, refined by apiserver's
``library.CostEstimator`` (costs of kube's CEL libraries) and by the DRA package's
size estimator (how large maps and strings reachable from ``device`` can be).
cel-cpp, which cel-expr-python wraps, has no cost model at all, so this is a port of
those three pieces over the checked AST that :mod:`scheduler.model._celast` decodes.

It covers everything an expression in the DRA environment of this package can contain.
Known differences: cel-go's per-overload estimators of the ``lists`` and ``sets``
extensions (``slice``, ``flatten``, ``range``, ``reverse``, ``distinct``, ``sort``,
``sets.*``) are not ported, so those calls are costed like any other function (1 plus
their arguments), which can underestimate expressions that lean on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from scheduler.model._celast import (
    Call,
    CelType,
    CheckedAst,
    Comprehension,
    Const,
    CreateList,
    CreateStruct,
    Expr,
    Ident,
    Select,
)

__all__ = ["U64_MAX", "estimate_cost"]

U64_MAX: Final = (1 << 64) - 1
_TWO_TO_64: Final = float(1 << 64)

_SELECT_AND_IDENT: Final = 1
_LIST_CREATE: Final = 10
_MAP_CREATE: Final = 30
_STRUCT_CREATE: Final = 40
_STRING_TRAVERSAL: Final = 0.1
_REGEX_LENGTH: Final = 0.25

# Sizes from k8s.io/api/resource/v1 that bound what a device can hold.
_MAX_DOMAIN: Final = 63
_MAX_ID: Final = 32
_MAX_DRIVER: Final = 63
_MAX_ATTRIBUTES: Final = 32
_MAX_ATTRIBUTE_VALUE: Final = 64

_ACCUMULATORS: Final = frozenset({"@result", "__result__"})
_SCALARS: Final = frozenset({"bool", "int", "uint", "double"})


def _add(x: int, y: int) -> int:
    return min(x + y, U64_MAX)


def _mul(x: int, y: int) -> int:
    return min(x * y, U64_MAX)


def _mul_factor(x: int, factor: float) -> int:
    xf = float(x)
    if xf > 0 and factor > 0 and xf > U64_MAX / factor:
        return U64_MAX
    ceil = math.ceil(xf * factor)
    return U64_MAX if ceil >= _TWO_TO_64 else int(ceil)


@dataclass(frozen=True, slots=True)
class Est:
    """A [min, max] range; cel-go uses one shape for both sizes and costs."""

    min: int
    max: int

    def add(self, other: Est) -> Est:
        return Est(_add(self.min, other.min), _add(self.max, other.max))

    def mul(self, other: Est) -> Est:
        return Est(_mul(self.min, other.min), _mul(self.max, other.max))

    def factor(self, per_unit: float) -> Est:
        return Est(_mul_factor(self.min, per_unit), _mul_factor(self.max, per_unit))

    def union(self, other: Est) -> Est:
        return Est(min(self.min, other.min), max(self.max, other.max))


_UNKNOWN: Final = Est(0, U64_MAX)
_ZERO: Final = Est(0, 0)
_ONE: Final = Est(1, 1)


def _fixed(n: int) -> Est:
    return Est(n, n)


@dataclass(slots=True)
class _Entry:
    container: str  # "list" | "map" | ""
    key: Est
    val: Est

    def union(self, other: _Entry | None) -> _Entry | None:
        if other is None:
            return None
        return _Entry(self.container, self.key.union(other.key), self.val.union(other.val))


@dataclass(slots=True)
class _Local:
    path: list[str] | None
    size: Est | None
    entry: _Entry | None


@dataclass(slots=True)
class _Node:
    """cel-go's ``AstNode``: what an estimator may know about an argument."""

    path: list[str] | None
    type: CelType
    expr: Expr | None
    size: Est | None


@dataclass(frozen=True, slots=True)
class _Decl:
    """A node of DRA's declared ``device`` type: its maximum size and what it holds."""

    max: int
    fields: tuple[tuple[str, _Decl], ...] = ()
    key: _Decl | None = None
    elem: _Decl | None = None
    attribute_map: bool = False  # a map whose values are all attribute values


_ATTRIBUTE: Final = _Decl(_MAX_ATTRIBUTE_VALUE)
_DOMAIN: Final = _Decl(_MAX_DOMAIN)
_ID: Final = _Decl(_MAX_ID)
_DEVICE: Final = _Decl(
    0,
    fields=(
        ("driver", _Decl(_MAX_DRIVER)),
        ("allowMultipleAllocations", _Decl(1)),
        (
            "attributes",
            _Decl(
                _MAX_ATTRIBUTES,
                key=_DOMAIN,
                elem=_Decl(_MAX_ATTRIBUTES, key=_ID, elem=_ATTRIBUTE, attribute_map=True),
            ),
        ),
        (
            "capacity",
            _Decl(
                _MAX_ATTRIBUTES, key=_DOMAIN, elem=_Decl(_MAX_ATTRIBUTES, key=_ID, elem=_Decl(0))
            ),
        ),
    ),
)


def _device_size(path: list[str] | None) -> Est | None:
    """DRA's sizeEstimator: the declared maximum size of a value under ``device``."""
    if not path or path[0] != "device":
        return None
    node = _DEVICE
    for name in path[1:]:
        nxt: _Decl | None
        if name in ("@items", "@values"):
            nxt = node.elem
        elif name == "@keys":
            nxt = node.key
        else:
            nxt = dict(node.fields).get(name)
            if nxt is None and node.attribute_map:
                nxt = node.elem
        if nxt is None:
            return None
        node = nxt
    return Est(0, node.max)


def _literal_size(node: Expr) -> Est | None:
    if isinstance(node, Const):
        if node.kind == "string" and isinstance(node.value, str):
            return _fixed(len(node.value))
        if node.kind == "bytes" and isinstance(node.value, bytes):
            return _fixed(len(node.value))
        if node.kind in ("bool", "double", "int", "uint", "null"):
            return _ONE
        return None
    if isinstance(node, CreateList):
        return _fixed(len(node.elements))
    if isinstance(node, CreateStruct) and not node.message_name:
        return _fixed(len(node.entries))
    return None


def _is_scalar(t: CelType) -> bool:
    if t.kind == "primitive":
        return t.name in _SCALARS
    if t.kind == "well_known":
        return t.name in ("google.protobuf.Timestamp", "google.protobuf.Duration")
    if t.kind == "abstract" and t.name == "optional_type" and t.params:
        return _is_scalar(t.params[0])
    return False


@dataclass(slots=True)
class _Coster:
    ast: CheckedAst
    paths: dict[int, list[str]] = field(default_factory=dict)
    scopes: dict[str, list[_Local]] = field(default_factory=dict)
    sizes: dict[int, Est] = field(default_factory=dict)
    entries: dict[int, _Entry] = field(default_factory=dict)

    # --- scopes and bookkeeping ---------------------------------------------------

    def push(self, name: str, local: _Local) -> None:
        self.scopes.setdefault(name, []).append(local)

    def pop(self, name: str) -> None:
        self.scopes[name].pop()

    def peek(self, name: str) -> _Local | None:
        stack = self.scopes.get(name)
        return stack[-1] if stack else None

    def path(self, node: Expr) -> list[str] | None:
        if isinstance(node, Ident):
            local = self.peek(node.name)
            if local is not None:
                return list(local.path) if local.path is not None else None
        found = self.paths.get(node.id)
        return list(found) if found is not None else None

    def type_of(self, node: Expr) -> CelType:
        return self.ast.type_of(node.id)

    def size(self, node: Expr) -> Est | None:
        if node.id in self.sizes:
            return self.sizes[node.id]
        literal = _literal_size(node)
        if literal is not None:
            return literal
        device = _device_size(self.path(node))
        if device is not None:
            self.sizes[node.id] = device
            return device
        if _is_scalar(self.type_of(node)):
            return _ONE
        if isinstance(node, Ident):
            local = self.peek(node.name)
            if local is not None and local.size is not None:
                return local.size
        return None

    def size_or_unknown(self, node: Expr | _Node) -> Est:
        if isinstance(node, _Node):
            return node.size if node.size is not None else _UNKNOWN
        found = self.size(node)
        return found if found is not None else _UNKNOWN

    def entry(self, node: Expr) -> _Entry | None:
        if node.id in self.entries:
            return self.entries[node.id]
        if isinstance(node, Ident):
            local = self.peek(node.name)
            if local is not None:
                return local.entry
        return None

    def set_size(self, node: Expr, size: Est | None) -> None:
        if size is not None:
            self.sizes[node.id] = size

    def set_entry(self, node: Expr, entry: _Entry | None) -> None:
        if entry is not None:
            self.entries[node.id] = entry

    def node(self, expr: Expr) -> _Node:
        path = self.path(expr)
        if path and path[0] in _ACCUMULATORS:
            path = None
        return _Node(path, self.type_of(expr), expr, self.size(expr))

    def push_local(self, name: str, expr: Expr) -> None:
        self.push(name, _Local(self.path(expr), self.size(expr), self.entry(expr)))

    def push_iter(self, name: str, rng: Expr, *, key: bool, single: bool) -> None:
        entry = self.entry(rng)
        container = entry.container if entry is not None else ""
        if not container:
            kind = self.type_of(rng).kind
            container = kind if kind in ("list", "map") else ""
        if single:
            is_list = container == "list"
            size = (entry.val if is_list else entry.key) if entry is not None else None
            sub = "@items" if is_list else "@keys"
        elif key:
            size = entry.key if entry is not None else None
            sub = "@indices" if container == "list" else "@keys"
        else:
            size = entry.val if entry is not None else None
            sub = "@items" if container == "list" else "@values"
        base = self.path(rng)
        self.push(name, _Local([*(base or []), sub], size, None))

    # --- the walk -----------------------------------------------------------------

    def cost(self, node: Expr) -> Est:
        if isinstance(node, Const):
            return _ZERO
        if isinstance(node, Ident):
            return self.cost_ident(node)
        if isinstance(node, Select):
            return self.cost_select(node)
        if isinstance(node, Call):
            return self.cost_call(node)
        if isinstance(node, CreateList):
            return self.cost_list(node)
        if isinstance(node, CreateStruct):
            return self.cost_struct(node)
        if _is_bind(node):
            return self.cost_bind(node)
        return self.cost_comprehension(node)

    def cost_ident(self, node: Ident) -> Est:
        local = self.peek(node.name)
        if local is not None:
            self.paths[node.id] = list(local.path or [])
            return _fixed(_SELECT_AND_IDENT)
        if node.name.startswith("device."):
            # cel-go keeps `device.x` as a field selection on the `device` object
            # (ident + select); cel-cpp resolved it to one qualified identifier.
            self.paths[node.id] = ["device", node.name.removeprefix("device.")]
            return _fixed(2 * _SELECT_AND_IDENT)
        self.paths[node.id] = [node.name]
        return _fixed(_SELECT_AND_IDENT)

    def cost_select(self, node: Select) -> Est:
        if node.test_only:
            # kube's environment sets PresenceTestHasCost(false).
            return self.cost(node.operand)
        total = self.cost(node.operand)
        kind = self.type_of(node.operand).kind
        if kind in ("map", "message", "type_param"):
            total = total.add(_fixed(_SELECT_AND_IDENT))
        base = self.path(node.operand)
        self.paths[node.id] = [*(base or []), node.field]
        return total

    def cost_call(self, node: Call) -> Est:
        if node.function == "dyn" and len(node.args) == 1:
            arg_cost = self.cost(node.args[0])
            self.set_size(node, self.size(node.args[0]))
            self.set_entry(node, self.entry(node.args[0]))
            return _ONE.add(arg_cost)
        arg_costs = [self.cost(arg) for arg in node.args]
        arg_nodes = [self.node(arg) for arg in node.args]
        overloads = self.ast.overloads.get(node.id, [])
        if not overloads:
            return _ZERO
        total = _ZERO
        target: _Node | None = None
        if node.target is not None:
            total = total.add(self.cost(node.target))
            target = self.node(node.target)
        fn_cost = Est(U64_MAX, 0)
        result_size: Est | None = None
        for overload in overloads:
            cost, size = self.function_cost(node, overload, target, arg_nodes, arg_costs)
            fn_cost = fn_cost.union(cost)
            if size is not None:
                result_size = size if result_size is None else result_size.union(size)
            if overload in ("index_list", "index_map") and node.args:
                entry = self.entry(node.args[0])
                result_size = entry.val if entry is not None else None
                sub = "@items" if overload == "index_list" else "@values"
                self.paths[node.id] = [*(self.path(node.args[0]) or []), sub]
            if result_size is None:
                result_size = self.size(node)
        self.set_size(node, result_size)
        return total.add(fn_cost)

    def cost_list(self, node: CreateList) -> Est:
        total = _ZERO
        item = Est(U64_MAX, 0) if node.elements else Est(0, 0)
        for element in node.elements:
            total = total.add(self.cost(element))
            item = item.union(self.size_or_unknown(element))
        self.entries[node.id] = _Entry("list", _ONE, item)
        return total.add(_fixed(_LIST_CREATE))

    def cost_struct(self, node: CreateStruct) -> Est:
        total = _ZERO
        if node.message_name:
            for entry in node.entries:
                total = total.add(self.cost(entry.value))
            return total.add(_fixed(_STRUCT_CREATE))
        key = Est(U64_MAX, 0) if node.entries else Est(0, 0)
        val = Est(U64_MAX, 0) if node.entries else Est(0, 0)
        for entry in node.entries:
            if entry.map_key is not None:
                total = total.add(self.cost(entry.map_key))
                key = key.union(self.size_or_unknown(entry.map_key))
            total = total.add(self.cost(entry.value))
            val = val.union(self.size_or_unknown(entry.value))
        self.entries[node.id] = _Entry("map", key, val)
        return total.add(_fixed(_MAP_CREATE))

    def cost_comprehension(self, node: Comprehension) -> Est:
        total = self.cost(node.iter_range).add(self.cost(node.accu_init))
        self.push_local(node.accu_var, node.accu_init)
        if node.iter_var2:
            self.push_iter(node.iter_var, node.iter_range, key=True, single=False)
            self.push_iter(node.iter_var2, node.iter_range, key=False, single=False)
        else:
            self.push_iter(node.iter_var, node.iter_range, key=True, single=True)
        loop = self.cost(node.loop_condition)
        step = self.cost(node.loop_step)
        self.pop(node.iter_var)
        if node.iter_var2:
            self.pop(node.iter_var2)
        total = total.add(self.cost(node.result))
        self.pop(node.accu_var)
        count = self.size_or_unknown(node.iter_range)
        total = total.add(count.mul(step.add(loop)))
        init = node.accu_init
        if isinstance(init, Const):
            self.set_size(node, self.size(init))
        elif isinstance(init, CreateList | CreateStruct):
            self.sizes[node.id] = count
            self.set_entry(node, self.entry(node.loop_step))
        return total

    def cost_bind(self, node: Comprehension) -> Est:
        total = self.cost(node.iter_range).add(self.cost(node.accu_init))
        self.push_local(node.accu_var, node.accu_init)
        total = total.add(self.cost(node.result))
        self.pop(node.accu_var)
        self.set_size(node, self.size(node.result))
        self.set_entry(node, self.entry(node.result))
        return total

    # --- function costs -----------------------------------------------------------

    def function_cost(
        self,
        node: Call,
        overload: str,
        target: _Node | None,
        args: list[_Node],
        arg_costs: list[Est],
    ) -> tuple[Est, Est | None]:
        arg_sum = _ZERO
        for cost in arg_costs:
            arg_sum = arg_sum.add(cost)
        library = self.library_cost(node.function, overload, target, args)
        if library is not None:
            return library[0].add(arg_sum), library[1]
        return self.standard_cost(node, overload, target, args, arg_costs, arg_sum)

    def standard_cost(
        self,
        node: Call,
        overload: str,
        target: _Node | None,
        args: list[_Node],
        arg_costs: list[Est],
        arg_sum: Est,
    ) -> tuple[Est, Est | None]:
        """cel-go's built-in estimates (``coster.functionCost``)."""
        sou = self.size_or_unknown
        if overload == "string_format" and target is not None:
            return sou(target).factor(_STRING_TRAVERSAL).add(arg_sum), None
        if overload == "string_to_bytes" and len(args) == 1:
            size = sou(args[0])
            return size.factor(_STRING_TRAVERSAL).add(arg_sum), Est(size.min, _mul(size.max, 4))
        if overload == "bytes_to_string" and len(args) == 1:
            size = sou(args[0])
            return size.factor(_STRING_TRAVERSAL).add(arg_sum), Est(size.min // 4, size.max)
        if overload == "strings_quote" and len(args) == 1:
            size = sou(args[0])
            result = Est(_add(size.min, 2), _add(_mul(size.max, 2), 2))
            return size.factor(_STRING_TRAVERSAL).add(arg_sum), result
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return sou(args[0]).factor(_STRING_TRAVERSAL).add(arg_sum), None
        if overload == "in_list" and len(args) == 2:
            return sou(args[1]).factor(1).add(arg_sum), None
        if overload == "matches_string" and target is not None and len(args) == 1:
            text = sou(target).add(_ONE).factor(_STRING_TRAVERSAL)
            regex = sou(args[0]).factor(_REGEX_LENGTH)
            return text.mul(regex).add(arg_sum), None
        if overload == "contains_string" and target is not None and len(args) == 1:
            text = sou(target).factor(_STRING_TRAVERSAL)
            sub = sou(args[0]).factor(_STRING_TRAVERSAL)
            return text.mul(sub).add(arg_sum), None
        if overload in ("logical_or", "logical_and"):
            lhs, rhs = arg_costs[0], arg_costs[1]
            return Est(lhs.min, lhs.add(rhs).max), None
        if overload == "conditional":
            size = sou(args[1]).union(sou(args[2]))
            first, second = self.entry(node.args[1]), self.entry(node.args[2])
            if first is not None:
                self.set_entry(node, first.union(second))
            cost = arg_costs[0].add(arg_costs[1].union(arg_costs[2]))
            return cost, size
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            size = sou(args[0]).add(sou(args[1]))
            left, right = self.entry(node.args[0]), self.entry(node.args[1])
            if left is not None:
                self.set_entry(node, left.union(right))
            if overload == "add_list":
                return _ONE.add(arg_sum), size
            return size.factor(_STRING_TRAVERSAL).add(arg_sum), size
        if overload in _COMPARISONS:
            smallest = min(sou(args[0]).max, sou(args[1]).max)
            cost = Est(1 if smallest > 0 else 0, smallest).factor(_STRING_TRAVERSAL)
            return cost.add(arg_sum), None
        return _ONE.add(arg_sum), None

    def library_cost(
        self, function: str, overload: str, target: _Node | None, args: list[_Node]
    ) -> tuple[Est, Est | None] | None:
        """apiserver's ``library.CostEstimator.EstimateCallCost`` for this environment."""
        if function in _UNIT_COST_FUNCTIONS:
            return _ONE, None
        if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
            if target is None:
                return None
            t = target.type
            if t.kind == "list" and t.params:
                element = t.params[0]
                unit = _ONE
                if element.kind == "primitive" and element.name in ("string", "bytes"):
                    path = [*target.path, "@items"] if target.path is not None else None
                    size = _device_size(path) or _UNKNOWN
                    unit = unit.add(size.factor(_STRING_TRAVERSAL))
                return self.lib_size(target).mul(unit), None
            return self.lib_size(target).factor(_STRING_TRAVERSAL), None
        if function in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            size = self.lib_size(target)
            return size.factor(_STRING_TRAVERSAL), size
        if function == "replace" and target is not None and len(args) >= 2:
            return self.replace_cost(target, args)
        if function == "split" and target is not None:
            size = self.lib_size(target)
            limit = size.max
            if len(args) > 1:
                expr = args[1].expr
                if isinstance(expr, Const) and expr.kind == "int" and isinstance(expr.value, int):
                    limit = expr.value & U64_MAX
            return size.factor(2 * _STRING_TRAVERSAL), Est(0, limit)
        if function == "join" and target is not None:
            return self.join_cost(target, args)
        if function in ("find", "findAll") and target is not None and args:
            size = self.lib_size(target)
            text = size.add(_ONE).factor(_STRING_TRAVERSAL)
            regex = self.lib_size(args[0]).factor(_REGEX_LENGTH)
            return text.mul(regex), Est(0, size.max)
        if function in ("quantity", "isQuantity", "semver", "isSemver") and args:
            return self.lib_size(args[0]).factor(_STRING_TRAVERSAL), None
        if function == "_==_" and len(args) == 2:
            left, right = args[0].type, args[1].type
            if left == right and left.kind == "abstract" and left.name in _KUBE_TYPES:
                return _ONE, None
        return None

    def lib_size(self, node: _Node) -> Est:
        if node.size is not None:
            return node.size
        device = _device_size(node.path)
        return device if device is not None else _UNKNOWN

    def replace_cost(self, target: _Node, args: list[_Node]) -> tuple[Est, Est | None]:
        size = self.lib_size(target)
        old, new = self.lib_size(args[0]), self.lib_size(args[1])
        count_min = count_max = retained_min = retained_max = 0
        if old.min == 0:
            count_max = size.max + 1 if size.max < U64_MAX else size.max
            retained_max = size.max
        elif new.max <= old.min:
            retained_max = size.max
        else:
            count_max = math.ceil(size.max / old.min)
        if old.max == 0:
            count_min = size.min + 1 if size.min < U64_MAX else size.min
            retained_min = size.min
        elif old.max <= new.min:
            retained_min = size.min
        else:
            count_min = math.ceil(size.min / old.max)
        result = Est(count_min, count_max).mul(new).add(Est(retained_min, retained_max))
        return size.factor(2 * _STRING_TRAVERSAL), result

    def join_cost(self, target: _Node, args: list[_Node]) -> tuple[Est, Est | None]:
        count = self.lib_size(target)
        size = _ZERO
        t = target.type
        if t.kind == "list" and t.params:
            path = [*target.path, "@items"] if target.path is not None else None
            element = _device_size(path) or _UNKNOWN
            size = count.mul(element)
        if args:
            separators = Est(max(count.min - 1, 0), max(count.max - 1, 0))
            size = size.add(self.lib_size(args[0]).mul(separators))
        return size.factor(_STRING_TRAVERSAL), size


_COMPARISONS: Final = frozenset(
    {
        "less_string",
        "greater_string",
        "less_equals_string",
        "greater_equals_string",
        "less_bytes",
        "greater_bytes",
        "less_equals_bytes",
        "greater_equals_bytes",
        "equals",
        "not_equals",
    }
)
_UNIT_COST_FUNCTIONS: Final = frozenset(
    {
        "sign",
        "asInteger",
        "isInteger",
        "asApproximateFloat",
        "isGreaterThan",
        "isLessThan",
        "compareTo",
        "add",
        "sub",
        "major",
        "minor",
        "patch",
    }
)
_KUBE_TYPES: Final = frozenset({"kubernetes.Quantity", "kubernetes.Semver"})


def _is_bind(node: Comprehension) -> bool:
    rng, cond = node.iter_range, node.loop_condition
    return (
        isinstance(rng, CreateList)
        and not rng.elements
        and isinstance(cond, Const)
        and cond.value is False
        and node.accu_var not in _ACCUMULATORS
    )


def estimate_cost(ast: CheckedAst) -> int:
    """The worst-case cost kube-apiserver would estimate (``CostEstimate.Max``)."""
    return _Coster(ast).cost(ast.expr).max
