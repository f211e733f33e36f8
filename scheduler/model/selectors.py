"""Label selectors and node selectors with apimachinery's exact semantics.

Every selector is reduced to a conjunction of :class:`Requirement` tuples
``(key, operator, values)`` with six operators: ``In``, ``NotIn``, ``Exists``,
``DoesNotExist``, ``Gt``, ``Lt`` (the string syntax's ``=``/``==`` become ``In`` and
``!=`` becomes ``NotIn`` with one value, which match identically). Keeping the
parsed form this plain lets the NodeTable evaluate a requirement over a whole label
column at once instead of calling :meth:`Requirement.matches` per node.

Semantics carried over from apimachinery / component-helpers:

* ``NotIn`` and ``DoesNotExist`` match when the key is absent; ``In``, ``Exists``,
  ``Gt`` and ``Lt`` do not.
* ``Gt``/``Lt`` compare integers parsed like Go's ``strconv.ParseInt(s, 10, 64)``;
  a label value that does not parse never matches (see :func:`label_int_value`).
* A ``LabelSelector`` that is absent (``None``) matches nothing; one with no
  requirements matches everything.
* A ``NodeSelector`` ORs its terms and a term ANDs its requirements. A term with
  neither ``matchExpressions`` nor ``matchFields`` matches nothing, so a selector
  whose terms are all empty matches nothing.
* ``matchFields`` support ``In``/``NotIn`` with exactly one value; the only node
  field is ``metadata.name``. As in kube-scheduler, field requirements are skipped
  for a node whose name is empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple

from scheduler.model._quote import go_quote
from scheduler.model.names import label_value_errors, qualified_name_errors

__all__ = [
    "NODE_FIELD_NAME",
    "OPERATORS",
    "LabelSelector",
    "NodeSelector",
    "NodeSelectorTerm",
    "Operator",
    "Requirement",
    "SelectorError",
    "has_labels",
    "label_int_value",
    "object_labels",
    "parse_label_selector_string",
]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
#: All operators a parsed requirement can carry.
OPERATORS: Final[tuple[Operator, ...]] = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_LABEL_SELECTOR_OPERATORS: Final[tuple[Operator, ...]] = ("In", "NotIn", "Exists", "DoesNotExist")
_FIELD_OPERATORS: Final[tuple[Operator, ...]] = ("In", "NotIn")
#: The one node field ``matchFields`` can select on.
NODE_FIELD_NAME: Final = "metadata.name"

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


class SelectorError(ValueError):
    """A selector that apimachinery would refuse to build; the message names the path."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.detail = message
        super().__init__(f"{path}: {message}" if path else message)


def label_int_value(value: str) -> int | None:
    """``value`` as Go's ``strconv.ParseInt(value, 10, 64)`` reads it, else ``None``.

    Accepts an optional sign and leading zeros, nothing else, within int64. Exposed so
    a vectorised ``Gt``/``Lt`` evaluator converts label columns by the same rule.
    """
    body = value[1:] if value[:1] in ("+", "-") else value
    if not body or not body.isascii() or not body.isdigit():
        return None
    number = int(value)
    if _INT64_MIN <= number <= _INT64_MAX:
        return number
    return None


class Requirement(NamedTuple):
    """One ANDed condition: ``key`` ``operator`` ``values``.

    ``values`` is empty for Exists/DoesNotExist and has exactly one element for
    Gt/Lt; construct through the parsers, which validate.
    """

    key: str
    operator: Operator
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies this requirement."""
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if self.key not in labels or len(self.values) != 1:
            return False
        have = label_int_value(labels[self.key])
        want = label_int_value(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1 LabelSelector: requirements ANDed, or the selector that matches nothing.

    ``matches_nothing`` is true only for the absent (nil) selector; an empty selector
    (no requirements) matches every label set.
    """

    requirements: tuple[Requirement, ...] = ()
    matches_nothing: bool = False

    @classmethod
    def everything(cls) -> LabelSelector:
        """The empty selector, which matches every label set."""
        return cls()

    @classmethod
    def nothing(cls) -> LabelSelector:
        """The nil selector, which matches no label set."""
        return cls(matches_nothing=True)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any] | None, path: str = "labelSelector") -> LabelSelector:
        """Parse a metav1 LabelSelector (``matchLabels`` + ``matchExpressions``).

        ``None`` gives the match-nothing selector. Invalid keys, values or operators
        raise :class:`SelectorError` naming the offending path.
        """
        if obj is None:
            return cls.nothing()
        obj = _as_mapping(obj, path)
        requirements: list[Requirement] = []
        match_labels = obj.get("matchLabels")
        if match_labels is not None:
            labels_path = f"{path}.matchLabels"
            for key, value in sorted(_as_mapping(match_labels, labels_path).items()):
                value_path = f"{labels_path}[{key}]"
                if not isinstance(value, str):
                    raise SelectorError(value_path, "label value must be a string")
                requirements.append(_requirement(str(key), "In", [value], value_path))
        for index, expr in enumerate(
            _as_list(obj.get("matchExpressions"), f"{path}.matchExpressions")
        ):
            expr_path = f"{path}.matchExpressions[{index}]"
            key, op, values = _expression_fields(expr, expr_path)
            if op not in _LABEL_SELECTOR_OPERATORS:
                raise SelectorError(
                    f"{expr_path}.operator",
                    f"{go_quote(op)} is not a valid label selector operator "
                    f"(supported: {', '.join(_LABEL_SELECTOR_OPERATORS)})",
                )
            requirements.append(_requirement(key, op, values, expr_path))
        return cls(tuple(requirements))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies every requirement."""
        if self.matches_nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def is_everything(self) -> bool:
        """True for a selector that matches every label set (no requirements)."""
        return not self.matches_nothing and not self.requirements


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One v1 NodeSelectorTerm: label and field requirements, all ANDed.

    ``error`` is set only by lazy parsing, for a term kube-scheduler could not
    parse: such a term never matches.
    """

    requirements: tuple[Requirement, ...] = ()
    field_requirements: tuple[Requirement, ...] = ()
    error: str | None = None

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], path: str = "nodeSelectorTerm") -> NodeSelectorTerm:
        """Parse a term, raising :class:`SelectorError` for anything invalid."""
        obj = _as_mapping(obj, path)
        labels: list[Requirement] = []
        for index, expr in enumerate(
            _as_list(obj.get("matchExpressions"), f"{path}.matchExpressions")
        ):
            expr_path = f"{path}.matchExpressions[{index}]"
            key, op, values = _expression_fields(expr, expr_path)
            if op not in OPERATORS:
                raise SelectorError(
                    f"{expr_path}.operator",
                    f"Unsupported value: {go_quote(op)}: supported values: "
                    + ", ".join(go_quote(o) for o in OPERATORS),
                )
            labels.append(_requirement(key, op, values, expr_path))
        fields: list[Requirement] = []
        for index, expr in enumerate(_as_list(obj.get("matchFields"), f"{path}.matchFields")):
            expr_path = f"{path}.matchFields[{index}]"
            key, op, values = _expression_fields(expr, expr_path)
            if op not in _FIELD_OPERATORS:
                raise SelectorError(
                    f"{expr_path}.operator",
                    f"Unsupported value: {go_quote(op)}: supported values: "
                    + ", ".join(go_quote(o) for o in _FIELD_OPERATORS),
                )
            if len(values) != 1:
                raise SelectorError(f"{expr_path}.values", "must have one element")
            fields.append(Requirement(key, op, (values[0],)))
        return cls(tuple(labels), tuple(fields))

    @property
    def is_empty(self) -> bool:
        """A term with no requirements at all; it matches nothing."""
        return not self.requirements and not self.field_requirements

    def matches(self, labels: Mapping[str, str], node_name: str = "") -> bool:
        """Whether a node with these labels and name satisfies the term."""
        if self.error is not None or self.is_empty:
            return False
        if not all(r.matches(labels) for r in self.requirements):
            return False
        if node_name and self.field_requirements:
            fields = {NODE_FIELD_NAME: node_name}
            return all(_field_matches(r, fields) for r in self.field_requirements)
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A v1 NodeSelector: terms ORed.

    ``errors`` lists the problems of terms dropped by lazy parsing (kube-scheduler's
    required node affinity keeps matching on the remaining terms).
    """

    terms: tuple[NodeSelectorTerm, ...] = ()
    errors: tuple[str, ...] = field(default=())

    @classmethod
    def from_dict(
        cls, obj: Mapping[str, Any] | None, path: str = "nodeSelector", *, lazy: bool = False
    ) -> NodeSelector:
        """Parse a NodeSelector (``nodeSelectorTerms``).

        ``None`` or no terms gives a selector that matches nothing. Strictly (the
        default) any invalid term raises :class:`SelectorError`; with ``lazy=True``
        invalid terms are kept as never-matching and reported in ``errors``, which
        is what kube-scheduler does for required node affinity.
        """
        if obj is None:
            return cls()
        obj = _as_mapping(obj, path)
        terms: list[NodeSelectorTerm] = []
        errors: list[str] = []
        for index, raw in enumerate(
            _as_list(obj.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
        ):
            term_path = f"{path}.nodeSelectorTerms[{index}]"
            try:
                term = NodeSelectorTerm.from_dict(raw, term_path)
            except SelectorError as err:
                if not lazy:
                    raise
                errors.append(str(err))
                term = NodeSelectorTerm(error=str(err))
            terms.append(term)
        return cls(tuple(terms), tuple(errors))

    def matches(self, labels: Mapping[str, str], node_name: str = "") -> bool:
        """Whether any term matches the node."""
        return any(term.matches(labels, node_name) for term in self.terms)

    def matches_node(self, node: Mapping[str, Any]) -> bool:
        """Convenience: match a raw Node object (its labels and ``metadata.name``)."""
        metadata = node.get("metadata") or {}
        return self.matches(metadata.get("labels") or {}, metadata.get("name") or "")


def object_labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """An API object's ``metadata.labels`` (empty when absent or malformed)."""
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def has_labels(obj: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether ``obj`` carries every one of ``labels`` with that value (an equality selector)."""
    own = object_labels(obj)
    return all(own.get(key) == value for key, value in labels.items())


def parse_label_selector_string(selector: str, path: str = "") -> LabelSelector:
    """Parse the query-string syntax, e.g. ``"a=b,c!=d,e in (x,y),!f,g,h>3"``.

    Same grammar, validation and error texts as apimachinery's ``labels.Parse``
    (the emulator answers a bad ``labelSelector`` with them, as kube-apiserver
    does): ``=``, ``==``, ``!=``, ``in``, ``notin``, ``!key``, bare ``key``, ``>``
    and ``<``; an empty string matches everything. Requirements come back sorted
    by key, as there. ``path`` is the parser's field path (none for a query string).
    """
    return LabelSelector(tuple(sorted(_Parser(selector, path).parse(), key=lambda r: r.key)))


# --------------------------------------------------------------------------- internals


def _field_matches(requirement: Requirement, fields: Mapping[str, str]) -> bool:
    # Field selectors compare against "" for unknown fields rather than "absent".
    value = fields.get(requirement.key, "")
    if requirement.operator == "In":
        return value == requirement.values[0]
    return value != requirement.values[0]


def _go_strings(values: Sequence[str]) -> str:
    """A string slice as Go's ``%#v`` prints it (how ``field.Invalid`` shows a value set)."""
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def _invalid(path: str, shown: str, detail: str) -> str:
    """One ``field.Invalid`` error's text; Go prints a nil path as ``<nil>``."""
    return f"{path or '<nil>'}: Invalid value: {shown}: {detail}"


def _aggregate(problems: list[str]) -> str:
    """``field.ErrorList.ToAggregate().Error()``: duplicates once, brackets for several."""
    unique = list(dict.fromkeys(problems))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _requirement(key: str, op: Operator, values: Sequence[str], path: str) -> Requirement:
    """Build a requirement, validating it as ``labels.NewRequirement`` does, in its words.

    ``path`` locates the requirement in our error (kube's ``NewRequirement`` gets no
    path from its callers, so its own texts start at ``key`` and ``values``).
    """
    problems: list[str] = []
    key_errors = qualified_name_errors(key)
    if key_errors:
        problems.append(_invalid("key", go_quote(key), "; ".join(key_errors)))
    set_problem = ""
    if op in ("In", "NotIn") and not values:
        set_problem = "for 'in', 'notin' operators, values set can't be empty"
    elif op in ("Exists", "DoesNotExist") and values:
        set_problem = "values set must be empty for exists and does not exist"
    elif op in ("Gt", "Lt") and len(values) != 1:
        set_problem = "for 'Gt', 'Lt' operators, exactly one value is required"
    if set_problem:
        problems.append(_invalid("values", _go_strings(values), set_problem))
    if op in ("Gt", "Lt"):
        problems += [
            _invalid(
                f"values[{index}]",
                go_quote(value),
                "for 'Gt', 'Lt' operators, the value must be an integer",
            )
            for index, value in enumerate(values)
            if label_int_value(value) is None
        ]
    for index, value in enumerate(values):
        value_errors = label_value_errors(value)
        if value_errors:
            problems.append(
                _invalid(f"values[{index}][{key}]", go_quote(value), "; ".join(value_errors))
            )
    if problems:
        raise SelectorError(path, _aggregate(problems))
    return Requirement(key, op, tuple(values))


def _expression_fields(expr: object, path: str) -> tuple[str, Any, list[str]]:
    expr = _as_mapping(expr, path)
    key = expr.get("key", "")
    if not isinstance(key, str):
        raise SelectorError(f"{path}.key", "must be a string")
    op = expr.get("operator", "")
    if not isinstance(op, str):
        raise SelectorError(f"{path}.operator", "must be a string")
    values = _as_list(expr.get("values"), f"{path}.values")
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise SelectorError(f"{path}.values[{index}]", "must be a string")
    return key, op, list(values)


def _as_mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SelectorError(path, f"expected an object, got {type(value).__name__}")
    return value


def _as_list(value: object, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SelectorError(path, f"expected a list, got {type(value).__name__}")
    return value


# Tokens of the string syntax.
_IDENT: Final = "identifier"
_END: Final = "end of string"
_SYMBOLS: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")
_SYMBOL_TOKENS: Final = frozenset({"(", ")", ",", "!", "=", "==", "!=", ">", "<"})
_KEYWORDS: Final = frozenset({"in", "notin"})


def _lex(text: str) -> list[tuple[str, str]]:
    """Split into (kind, literal); kind is the literal for symbols and keywords.

    Symbols are scanned greedily: the longest run of symbol characters that is
    still a known token (so ``"!=("`` is ``!=`` then ``(``).
    """
    tokens: list[tuple[str, str]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= end:
            tokens.append((_END, ""))
            return tokens
        if text[pos] in _SYMBOLS:
            best = ""
            probe = pos
            while probe < end and text[probe] in _SYMBOLS:
                candidate = text[pos : probe + 1]
                if candidate in _SYMBOL_TOKENS:
                    best = candidate
                elif best:
                    break
                probe += 1
            tokens.append((best, best))
            pos += len(best)
            continue
        start = pos
        while pos < end and text[pos] not in _SYMBOLS and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        tokens.append((word if word in _KEYWORDS else _IDENT, word))


class _Parser:
    """Recursive-descent parser for the label selector string syntax."""

    def __init__(self, text: str, path: str) -> None:
        self.tokens = _lex(text)
        self.position = 0
        self.path = path

    def peek(self, values: bool = True) -> tuple[str, str]:
        kind, literal = self.tokens[self.position]
        # Where a value is expected, the keywords are ordinary identifiers.
        if values and kind in _KEYWORDS:
            kind = _IDENT
        return kind, literal

    def take(self, values: bool = True) -> tuple[str, str]:
        token = self.peek(values)
        self.position += 1
        return token

    def fail(self, message: str) -> SelectorError:
        return SelectorError(self.path, f"unable to parse requirement: {message}")

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, literal = self.peek()
            if kind == _END:
                return requirements
            if kind not in (_IDENT, "!"):
                raise SelectorError(
                    self.path, f"found '{literal}', expected: !, identifier, or 'end of string'"
                )
            requirements.append(self.requirement())
            kind, literal = self.take()
            if kind == _END:
                return requirements
            if kind != ",":
                raise SelectorError(
                    self.path, f"found '{literal}', expected: ',' or 'end of string'"
                )
            kind, literal = self.peek()
            if kind not in (_IDENT, "!"):
                raise SelectorError(self.path, f"found '{literal}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        negated = False
        kind, literal = self.take()
        if kind == "!":
            negated = True
            kind, literal = self.take()
        if kind != _IDENT:
            raise self.fail(f"found '{literal}', expected: identifier")
        key = literal
        key_errors = qualified_name_errors(key)
        if key_errors:
            # The parser checks the key itself, on its own path (none for a query string).
            raise self.fail(_invalid(self.path, go_quote(key), "; ".join(key_errors)))
        if negated:
            # "!key" ends the requirement; anything but "," or the end after it is
            # reported by the caller.
            return self.build(key, "DoesNotExist", [])
        if self.peek()[0] in (_END, ","):
            return self.build(key, "Exists", [])
        op, takes_set = self.operator()
        if takes_set:
            return self.build(key, op, self.value_set())
        return self.build(key, op, [self.exact_value()])

    def build(self, key: str, op: Operator, values: list[str]) -> Requirement:
        try:
            return _requirement(key, op, sorted(set(values)), self.path)
        except SelectorError as err:
            raise self.fail(err.detail) from None

    def operator(self) -> tuple[Operator, bool]:
        """The operator, and whether it takes a parenthesised set (in, notin)."""
        kind, literal = self.take(values=False)
        operators: dict[str, Operator] = {
            "in": "In",
            "notin": "NotIn",
            "=": "In",
            "==": "In",
            "!=": "NotIn",
            ">": "Gt",
            "<": "Lt",
        }
        if kind not in operators:
            raise self.fail(f"found '{literal}', expected: in, notin, =, ==, !=, gt, lt")
        return operators[kind], kind in _KEYWORDS

    def exact_value(self) -> str:
        kind, literal = self.peek()
        if kind in (_END, ","):
            return ""
        kind, literal = self.take()
        if kind == _IDENT:
            return literal
        raise self.fail(f"found '{literal}', expected: identifier")

    def value_set(self) -> list[str]:
        kind, literal = self.take()
        if kind != "(":
            raise self.fail(f"found '{literal}' expected: '('")
        kind, literal = self.peek()
        if kind == ")":
            self.take()
            return [""]
        if kind not in (_IDENT, ","):
            raise self.fail(f"found '{literal}', expected: ',', ')' or identifier")
        values = self.identifiers()
        closing, _ = self.take()
        if closing != ")":
            raise self.fail(f"found '{literal}', expected: ')'")
        return values

    def identifiers(self) -> list[str]:
        values: list[str] = []
        while True:
            kind, literal = self.take()
            if kind == _IDENT:
                values.append(literal)
                next_kind, next_literal = self.peek()
                if next_kind == ",":
                    continue
                if next_kind == ")":
                    return values
                raise self.fail(f"found '{next_literal}', expected: ',' or ')'")
            if kind == ",":
                # Empty entries: "(,", ",," and ",)" each stand for the value "".
                if not values:
                    values.append("")
                next_kind, _ = self.peek()
                if next_kind == ")":
                    values.append("")
                    return values
                if next_kind == ",":
                    values.append("")
                continue
            raise self.fail(f"found '{literal}', expected: ',', or identifier")
