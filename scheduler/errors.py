"""Errors that end a command with a clear message instead of a traceback.

Anything raised as a :class:`UserError` is something the user can fix (a bad
config, a broken plugin, a missing file); the CLI prints its message and exits
1. Tracebacks are reserved for bugs, and shown only with ``--debug``.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem in the user's input or environment, reported as a message."""

    def __init__(self, message: str, *, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = list(details or [])

    def render(self) -> str:
        """The message and its details, one per line, as the CLI prints them."""
        lines = [self.message]
        lines.extend(f"  - {d}" for d in self.details)
        return "\n".join(lines)
