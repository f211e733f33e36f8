"""The checked CEL AST that ``cel-expr-python`` serializes, as plain Python objects.

cel-expr-python compiles with cel-cpp's type checker but exposes the result only as a
serialized ``cel.expr.CheckedExpr`` protobuf (``Expression.serialize()``). The DRA
environment needs the tree itself for two things the library does not do: kube's
compile-time cost estimate (a port of cel-go's estimator, which walks the typed AST)
and rewriting map lookups on ``device.attributes``/``device.capacity`` into lookups
with a default, the way kube's custom map type behaves. So this module decodes the
few messages involved straight from the protobuf wire format (the schema is fixed by
cel-spec and tiny) and encodes a rewritten tree back as a ``cel.expr.ParsedExpr``,
which ``Env.deserialize`` accepts. No protobuf runtime is needed for that.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "Call",
    "CelType",
    "CheckedAst",
    "Comprehension",
    "Const",
    "CreateList",
    "CreateStruct",
    "Expr",
    "Ident",
    "Select",
    "StructEntry",
    "decode_checked",
    "encode_parsed",
]

_CHECKED_URL: Final = "type.googleapis.com/cel.expr.CheckedExpr"
_PARSED_URL: Final = "type.googleapis.com/cel.expr.ParsedExpr"

ConstKind = Literal["null", "bool", "int", "uint", "double", "string", "bytes", "other"]


@dataclass(slots=True)
class Const:
    id: int
    kind: ConstKind
    value: object


@dataclass(slots=True)
class Ident:
    id: int
    name: str


@dataclass(slots=True)
class Select:
    id: int
    operand: Expr
    field: str
    test_only: bool = False


@dataclass(slots=True)
class Call:
    id: int
    function: str
    args: list[Expr]
    target: Expr | None = None


@dataclass(slots=True)
class CreateList:
    id: int
    elements: list[Expr]
    optional_indices: list[int] = field(default_factory=list)


@dataclass(slots=True)
class StructEntry:
    id: int
    value: Expr
    field_key: str | None = None
    map_key: Expr | None = None
    optional: bool = False


@dataclass(slots=True)
class CreateStruct:
    """A map literal when ``message_name`` is empty, else a message literal."""

    id: int
    message_name: str
    entries: list[StructEntry]


@dataclass(slots=True)
class Comprehension:
    id: int
    iter_var: str
    iter_range: Expr
    accu_var: str
    accu_init: Expr
    loop_condition: Expr
    loop_step: Expr
    result: Expr
    iter_var2: str = ""


Expr = Const | Ident | Select | Call | CreateList | CreateStruct | Comprehension

TypeKind = Literal[
    "dyn",
    "null",
    "primitive",
    "wrapper",
    "well_known",
    "list",
    "map",
    "function",
    "message",
    "type_param",
    "type",
    "error",
    "abstract",
    "unknown",
]

_PRIMITIVES: Final = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN: Final = {
    1: "google.protobuf.Any",
    2: "google.protobuf.Timestamp",
    3: "google.protobuf.Duration",
}


@dataclass(frozen=True, slots=True)
class CelType:
    """A checker type; ``name`` is the primitive, message, parameter or abstract name."""

    kind: TypeKind
    name: str = ""
    params: tuple[CelType, ...] = ()

    def __str__(self) -> str:
        """The type as cel-go prints it, which is what kube's messages show."""
        if self.kind == "primitive" or self.kind in ("message", "type_param", "well_known"):
            return self.name
        if self.kind == "wrapper":
            return f"wrapper({self.name})"
        if self.kind == "list":
            return f"list({self.params[0]})"
        if self.kind == "map":
            return f"map({self.params[0]}, {self.params[1]})"
        if self.kind == "type":
            return f"type({self.params[0]})" if self.params else "type"
        if self.kind == "null":
            return "null_type"
        if self.kind == "abstract":
            if self.params:
                return f"{self.name}({', '.join(str(p) for p in self.params)})"
            return self.name
        if self.kind == "error":
            return "*error*"
        return self.kind  # dyn, unknown, function


_DYN: Final = CelType("dyn")


@dataclass(slots=True)
class CheckedAst:
    expr: Expr
    types: dict[int, CelType]
    overloads: dict[int, list[str]]
    source_info: bytes

    def type_of(self, expr_id: int) -> CelType:
        return self.types.get(expr_id, _DYN)

    def max_id(self) -> int:
        best = 0
        stack: list[Expr] = [self.expr]
        while stack:
            node = stack.pop()
            best = max(best, node.id)
            stack.extend(children(node))
        return best


def children(node: Expr) -> list[Expr]:
    """Direct sub-expressions, in no particular order."""
    if isinstance(node, Select):
        return [node.operand]
    if isinstance(node, Call):
        return [*node.args, node.target] if node.target is not None else list(node.args)
    if isinstance(node, CreateList):
        return list(node.elements)
    if isinstance(node, CreateStruct):
        out: list[Expr] = []
        for entry in node.entries:
            if entry.map_key is not None:
                out.append(entry.map_key)
            out.append(entry.value)
        return out
    if isinstance(node, Comprehension):
        return [
            node.iter_range,
            node.accu_init,
            node.loop_condition,
            node.loop_step,
            node.result,
        ]
    return []


# --- wire format ------------------------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs; varints and fixed values as int, others as bytes."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            yield number, buf[pos : pos + size]
            pos += size
        elif wire == 1:
            yield number, int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire == 5:
            yield number, int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _b(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise ValueError("expected a length-delimited field")
    return value


def _i(value: int | bytes) -> int:
    if isinstance(value, bytes):
        raise ValueError("expected a varint field")
    return value


def _decode_const(expr_id: int, buf: bytes) -> Const:
    for number, value in _fields(buf):
        if number == 1:
            return Const(expr_id, "null", None)
        if number == 2:
            return Const(expr_id, "bool", bool(_i(value)))
        if number == 3:
            return Const(expr_id, "int", _signed(_i(value)))
        if number == 4:
            return Const(expr_id, "uint", _i(value))
        if number == 5:
            return Const(expr_id, "double", struct.unpack("<d", _i(value).to_bytes(8, "little"))[0])
        if number == 6:
            return Const(expr_id, "string", _b(value).decode())
        if number == 7:
            return Const(expr_id, "bytes", _b(value))
    return Const(expr_id, "other", None)


def _decode_expr(buf: bytes) -> Expr:
    expr_id = 0
    body: tuple[int, bytes] | None = None
    for number, value in _fields(buf):
        if number == 2:
            expr_id = _signed(_i(value))
        elif 3 <= number <= 9:
            body = (number, _b(value))
    if body is None:
        raise ValueError("expression without a kind")
    kind, raw = body
    if kind == 3:
        return _decode_const(expr_id, raw)
    if kind == 4:
        name = ""
        for number, value in _fields(raw):
            if number == 1:
                name = _b(value).decode()
        return Ident(expr_id, name)
    if kind == 5:
        operand: Expr | None = None
        fname, test_only = "", False
        for number, value in _fields(raw):
            if number == 1:
                operand = _decode_expr(_b(value))
            elif number == 2:
                fname = _b(value).decode()
            elif number == 3:
                test_only = bool(_i(value))
        if operand is None:
            raise ValueError("select without operand")
        return Select(expr_id, operand, fname, test_only)
    if kind == 6:
        target: Expr | None = None
        function, args = "", []
        for number, value in _fields(raw):
            if number == 1:
                target = _decode_expr(_b(value))
            elif number == 2:
                function = _b(value).decode()
            elif number == 3:
                args.append(_decode_expr(_b(value)))
        return Call(expr_id, function, args, target)
    if kind == 7:
        elements, optional = [], []
        for number, value in _fields(raw):
            if number == 1:
                elements.append(_decode_expr(_b(value)))
            elif number == 2:
                if isinstance(value, bytes):  # packed
                    pos = 0
                    while pos < len(value):
                        index, pos = _varint(value, pos)
                        optional.append(index)
                else:
                    optional.append(value)
        return CreateList(expr_id, elements, optional)
    if kind == 8:
        message_name, entries = "", []
        for number, value in _fields(raw):
            if number == 1:
                message_name = _b(value).decode()
            elif number == 2:
                entries.append(_decode_entry(_b(value)))
        return CreateStruct(expr_id, message_name, entries)
    return _decode_comprehension(expr_id, raw)


def _decode_entry(buf: bytes) -> StructEntry:
    entry_id, value_expr = 0, None
    field_key: str | None = None
    map_key: Expr | None = None
    optional = False
    for number, value in _fields(buf):
        if number == 1:
            entry_id = _signed(_i(value))
        elif number == 2:
            field_key = _b(value).decode()
        elif number == 3:
            map_key = _decode_expr(_b(value))
        elif number == 4:
            value_expr = _decode_expr(_b(value))
        elif number == 5:
            optional = bool(_i(value))
    if value_expr is None:
        raise ValueError("struct entry without value")
    return StructEntry(entry_id, value_expr, field_key, map_key, optional)


def _decode_comprehension(expr_id: int, buf: bytes) -> Comprehension:
    names = {1: "", 3: "", 8: ""}
    parts: dict[int, Expr] = {}
    for number, value in _fields(buf):
        if number in names:
            names[number] = _b(value).decode()
        elif 2 <= number <= 7:
            parts[number] = _decode_expr(_b(value))
    return Comprehension(
        expr_id,
        iter_var=names[1],
        iter_range=parts[2],
        accu_var=names[3],
        accu_init=parts[4],
        loop_condition=parts[5],
        loop_step=parts[6],
        result=parts[7],
        iter_var2=names[8],
    )


def _decode_type(buf: bytes) -> CelType:
    for number, value in _fields(buf):
        if number == 1:
            return _DYN
        if number == 2:
            return CelType("null")
        if number == 3:
            return CelType("primitive", _PRIMITIVES.get(_i(value), "unknown"))
        if number == 4:
            return CelType("wrapper", _PRIMITIVES.get(_i(value), "unknown"))
        if number == 5:
            return CelType("well_known", _WELL_KNOWN.get(_i(value), "unknown"))
        if number == 6:
            elem = [_decode_type(_b(v)) for n, v in _fields(_b(value)) if n == 1]
            return CelType("list", params=(elem[0] if elem else _DYN,))
        if number == 7:
            key, val = _DYN, _DYN
            for n, v in _fields(_b(value)):
                if n == 1:
                    key = _decode_type(_b(v))
                elif n == 2:
                    val = _decode_type(_b(v))
            return CelType("map", params=(key, val))
        if number == 8:
            return CelType("function")
        if number == 9:
            return CelType("message", _b(value).decode())
        if number == 10:
            return CelType("type_param", _b(value).decode())
        if number == 11:
            return CelType("type", params=(_decode_type(_b(value)),))
        if number == 12:
            return CelType("error")
        if number == 14:
            name, params = "", []
            for n, v in _fields(_b(value)):
                if n == 1:
                    name = _b(v).decode()
                elif n == 2:
                    params.append(_decode_type(_b(v)))
            return CelType("abstract", name, tuple(params))
    return CelType("unknown")


def _map_entry(buf: bytes) -> tuple[int, bytes]:
    key, value = 0, b""
    for number, raw in _fields(buf):
        if number == 1:
            key = _signed(_i(raw))
        elif number == 2:
            value = _b(raw)
    return key, value


def decode_checked(serialized: bytes) -> CheckedAst:
    """Decode ``Expression.serialize()`` of a type-checked expression."""
    url, payload = "", b""
    for number, value in _fields(serialized):
        if number == 1:
            url = _b(value).decode()
        elif number == 2:
            payload = _b(value)
    if url != _CHECKED_URL:
        raise ValueError(f"expected a serialized CheckedExpr, got {url!r}")
    expr: Expr | None = None
    types: dict[int, CelType] = {}
    overloads: dict[int, list[str]] = {}
    source_info = b""
    for number, value in _fields(payload):
        if number == 2:
            key, ref = _map_entry(_b(value))
            ids = [_b(v).decode() for n, v in _fields(ref) if n == 3]
            if ids:
                overloads[key] = ids
        elif number == 3:
            key, raw_type = _map_entry(_b(value))
            types[key] = _decode_type(raw_type)
        elif number == 4:
            expr = _decode_expr(_b(value))
        elif number == 5:
            source_info = _b(value)
    if expr is None:
        raise ValueError("serialized CheckedExpr without an expression")
    return CheckedAst(expr, types, overloads, source_info)


# --- encoding -----------------------------------------------------------------------


def _put_varint(out: bytearray, value: int) -> None:
    value &= (1 << 64) - 1
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _put_bytes(out: bytearray, number: int, payload: bytes) -> None:
    _put_varint(out, number << 3 | 2)
    _put_varint(out, len(payload))
    out += payload


def _put_int(out: bytearray, number: int, value: int) -> None:
    _put_varint(out, number << 3)
    _put_varint(out, value)


def _encode_const(node: Const) -> bytes:
    out = bytearray()
    value = node.value
    if node.kind == "null":
        _put_int(out, 1, 0)
    elif node.kind == "bool":
        _put_int(out, 2, int(bool(value)))
    elif node.kind in ("int", "uint") and isinstance(value, int):
        _put_int(out, 3 if node.kind == "int" else 4, value)
    elif node.kind == "double" and isinstance(value, float):
        _put_varint(out, 5 << 3 | 1)
        out += struct.pack("<d", value)
    elif node.kind == "string" and isinstance(value, str):
        _put_bytes(out, 6, value.encode())
    elif node.kind == "bytes" and isinstance(value, bytes):
        _put_bytes(out, 7, value)
    else:
        raise ValueError(f"cannot encode constant {node!r}")
    return bytes(out)


def _encode_expr(node: Expr) -> bytes:
    out = bytearray()
    _put_int(out, 2, node.id)
    body = bytearray()
    if isinstance(node, Const):
        _put_bytes(out, 3, _encode_const(node))
        return bytes(out)
    if isinstance(node, Ident):
        _put_bytes(body, 1, node.name.encode())
        _put_bytes(out, 4, bytes(body))
    elif isinstance(node, Select):
        _put_bytes(body, 1, _encode_expr(node.operand))
        _put_bytes(body, 2, node.field.encode())
        if node.test_only:
            _put_int(body, 3, 1)
        _put_bytes(out, 5, bytes(body))
    elif isinstance(node, Call):
        if node.target is not None:
            _put_bytes(body, 1, _encode_expr(node.target))
        _put_bytes(body, 2, node.function.encode())
        for arg in node.args:
            _put_bytes(body, 3, _encode_expr(arg))
        _put_bytes(out, 6, bytes(body))
    elif isinstance(node, CreateList):
        for element in node.elements:
            _put_bytes(body, 1, _encode_expr(element))
        for index in node.optional_indices:
            _put_int(body, 2, index)
        _put_bytes(out, 7, bytes(body))
    elif isinstance(node, CreateStruct):
        if node.message_name:
            _put_bytes(body, 1, node.message_name.encode())
        for entry in node.entries:
            raw = bytearray()
            _put_int(raw, 1, entry.id)
            if entry.field_key is not None:
                _put_bytes(raw, 2, entry.field_key.encode())
            if entry.map_key is not None:
                _put_bytes(raw, 3, _encode_expr(entry.map_key))
            _put_bytes(raw, 4, _encode_expr(entry.value))
            if entry.optional:
                _put_int(raw, 5, 1)
            _put_bytes(body, 2, bytes(raw))
        _put_bytes(out, 8, bytes(body))
    else:
        _put_bytes(body, 1, node.iter_var.encode())
        _put_bytes(body, 2, _encode_expr(node.iter_range))
        _put_bytes(body, 3, node.accu_var.encode())
        _put_bytes(body, 4, _encode_expr(node.accu_init))
        _put_bytes(body, 5, _encode_expr(node.loop_condition))
        _put_bytes(body, 6, _encode_expr(node.loop_step))
        _put_bytes(body, 7, _encode_expr(node.result))
        if node.iter_var2:
            _put_bytes(body, 8, node.iter_var2.encode())
        _put_bytes(out, 9, bytes(body))
    return bytes(out)


def encode_parsed(expr: Expr, source_info: bytes) -> bytes:
    """``expr`` as a serialized (``Any``-wrapped) ParsedExpr for ``Env.deserialize``."""
    parsed = bytearray()
    _put_bytes(parsed, 2, _encode_expr(expr))
    _put_bytes(parsed, 3, source_info)
    out = bytearray()
    _put_bytes(out, 1, _PARSED_URL.encode())
    _put_bytes(out, 2, bytes(parsed))
    return bytes(out)
