"""Griffe extension: the project's Sphinx-flavoured docstrings, rendered by mkdocstrings.

The docstrings are written for readers of the source, in the reST idiom
(``:class:`Pod```, ``#:`` comments above constants, ``text::`` before a
code block). mkdocstrings renders Markdown, so this extension translates
while the package is loaded for the documentation site:

- ``#:`` comment lines above an attribute become its docstring (as Sphinx
  autodoc reads them), so constants and enum members are documented where
  they are defined;
- a role (``:class:``, ``:func:``, ``:meth:``, ``:attr:``, ``:data:``,
  ``:mod:``, ``:exc:``, ``:obj:``) becomes an mkdocstrings cross-reference,
  resolved in the docstring's scope. A target that exists but is not on the
  site (the framework's internals) renders as code; a target that does not
  exist at all is a warning, which fails ``mkdocs build --strict``;
- ``text::`` ending a paragraph becomes ``text:`` (the indented block after
  it is a code block in Markdown too).
"""

from __future__ import annotations

import ast
import html
import importlib
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj):`(~?)([\w.]+)(?:\(\))?`")
_LITERAL_BLOCK = re.compile(r"(?<=\S)::[ \t]*$", re.M)
_logger = griffe.get_logger("griffe_sphinx_roles")


def _comment_docstring(lines: list[str], lineno: int) -> str | None:
    """The ``#:`` comment lines right above line ``lineno`` (1-based), joined."""
    found: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith("#:"):
        found.append(lines[i].strip()[2:].strip())
        i -= 1
    return "\n".join(reversed(found)) if found else None


class SphinxRoles(griffe.Extension):
    """Translate roles, ``#:`` comments and ``::`` in every docstring of the loaded package.

    ``checked`` lists the modules (path prefixes) whose docstrings are on the
    site: a role there naming nothing is a warning. Elsewhere (internals that
    are loaded only because a documented object lives in the same package)
    it silently renders as code.
    """

    def __init__(self, checked: list[str] | None = None) -> None:
        super().__init__()
        self.checked = tuple(checked or ())

    def on_attribute_instance(
        self, *, node: ast.AST | griffe.ObjectNode, attr: griffe.Attribute, **kwargs: Any
    ) -> None:
        if attr.docstring is not None or attr.lineno is None:
            return
        try:
            lines = attr.lines_collection[attr.filepath]  # type: ignore[index]
        except (KeyError, TypeError):
            return
        text = _comment_docstring(lines, attr.lineno)
        if text:
            attr.docstring = griffe.Docstring(text, lineno=attr.lineno - 1, parent=attr)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = self._translate(obj, obj.docstring.value)

    def _translate(self, obj: griffe.Object, text: str) -> str:
        def role(match: re.Match[str]) -> str:
            short, target = match.group(1) == "~", match.group(2)
            title = target.rsplit(".", 1)[-1] if short else target
            path = _resolve(obj, target)
            if path is None:
                if not _within(obj.path, self.checked):
                    return f"`{title}`"
                _logger.warning(
                    "%s: docstring of %s refers to %r, which does not exist",
                    obj.filepath,
                    obj.path,
                    target,
                )
                return f"`{title}`"
            # Optional: a reference to an internal object renders as code.
            return (
                f'<autoref identifier="{html.escape(path)}" optional>'
                f"<code>{html.escape(title)}</code></autoref>"
            )

        return _LITERAL_BLOCK.sub(":", _ROLE.sub(role, text))


def _within(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found.extend(_walk(member))  # type: ignore[arg-type]
    return found


def _resolve(obj: griffe.Object, target: str) -> str | None:
    """The full path ``target`` names from ``obj``'s scope, or None if nothing has it."""
    first, _, rest = target.partition(".")
    scope: griffe.Object | None = obj
    while scope is not None:
        try:
            path = scope.resolve(first)
        except griffe.NameResolutionError:
            scope = scope.parent
            continue
        full = f"{path}.{rest}" if rest else path
        return full if _exists(obj, full) else None
    # A dotted path from the top (``scheduler.api.views``) or another package.
    return target if _exists(obj, target) else None


def _importable(path: str) -> bool:
    parts = path.split(".")
    if not all(parts):
        return False
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # not a module (or not importable here)
            continue
        for name in parts[cut:]:
            if not hasattr(value, name):
                return False
            value = getattr(value, name)
        return True
    return False


def _exists(obj: griffe.Object, path: str) -> bool:
    root = obj.package
    if not path.startswith(root.path + ".") and path != root.path:
        return _importable(path)  # another package (the standard library ...)
    try:
        root[path[len(root.path) + 1 :]] if path != root.path else root
    except KeyError:
        return False
    return True
