"""Reading the YAML files a user hands us (configs, cluster files, kubeconfigs) safely.

Every start-up input must fail with one line naming the file, never with a
traceback: PyYAML's composer and constructor recurse once per nesting level,
so a few hundred nested ``[`` end in ``RecursionError`` deep inside PyYAML,
and a file that is not UTF-8 ends in ``UnicodeDecodeError``. The loaders here
refuse nesting beyond :data:`MAX_DEPTH` as an ordinary YAML error (with line
and column), and :func:`read_text` reports the line of the first bad byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scheduler.errors import UserError

__all__ = [
    "MAX_DEPTH",
    "DepthLimitedSafeLoader",
    "load_yaml_documents",
    "read_text",
    "yaml_error_text",
]

MAX_DEPTH = 100
"""Deepest nesting of mappings and sequences accepted.

Far beyond any real config or object (a CRD's schema, the deepest thing in a
cluster file, stays well under it) while keeping PyYAML's recursion (a few
frames per level when composing and again when constructing) far from
Python's default limit of 1000 frames."""


class DepthLimitedSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents nested deeper than :data:`MAX_DEPTH`."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        # Every nested mapping or sequence goes through here, so counting the
        # calls in progress is the nesting depth, checked before recursing.
        if not self.check_event(yaml.MappingStartEvent, yaml.SequenceStartEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"nested more than {MAX_DEPTH} levels deep",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of ``path``; ``UserError`` names ``what`` and the file otherwise."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise UserError(f"cannot read {what} {path}: {err.strerror or err}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise UserError(
            f"{what} {path} is not UTF-8 text: {err.reason} at byte {err.start} (line {line})"
        ) from None


def yaml_error_text(err: yaml.YAMLError) -> str:
    """One line for a YAML error: the problem and where it is, without PyYAML's layout."""
    if isinstance(err, yaml.MarkedYAMLError):
        where = ""
        if err.problem_mark is not None:
            where = f" (line {err.problem_mark.line + 1}, column {err.problem_mark.column + 1})"
        context = f"{err.context}: " if err.context else ""
        return f"{context}{err.problem}{where}"
    return " ".join(str(err).split())


def load_yaml_documents(text: str, source: str, *, expected: str = "YAML") -> list[Any]:
    """Every document of a multi-document YAML text, depth-limited.

    ``source`` names the input in the ``UserError`` raised for invalid YAML,
    ``expected`` says what it should have been ("YAML or JSON" where both are
    documented).
    """
    try:
        return list(yaml.load_all(text, Loader=DepthLimitedSafeLoader))
    except yaml.YAMLError as err:
        raise UserError(f"{source}: not valid {expected}: {yaml_error_text(err)}") from None
