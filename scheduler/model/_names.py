"""Name and value grammars shared by the model modules (label keys, label values).

These mirror apimachinery's validation rules because selectors must reject exactly
the keys and values the API server and kube-scheduler reject: a selector the real
scheduler refuses to build must not silently match something here.
"""

from __future__ import annotations

import re

_DNS1123_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_RE = re.compile(rf"{_DNS1123_LABEL}(?:\.{_DNS1123_LABEL})*")
_DNS1123_SUBDOMAIN_MAX = 253

# A label key's name part, and (optionally empty) label values, share this grammar.
_QUALIFIED_NAME_RE = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?")
_NAME_MAX = 63


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Problems with ``value`` as a lowercase RFC 1123 subdomain (empty list if valid)."""
    errs: list[str] = []
    if len(value) > _DNS1123_SUBDOMAIN_MAX:
        errs.append(f"must be no more than {_DNS1123_SUBDOMAIN_MAX} characters")
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return errs


def label_key_errors(key: str) -> list[str]:
    """Problems with ``key`` as a label key / qualified name (empty list if valid).

    A qualified name is an optional DNS-subdomain prefix and ``/``, then a name of at
    most 63 characters; more than one ``/`` is invalid.
    """
    parts = key.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > _NAME_MAX:
        errs.append(f"name part must be no more than {_NAME_MAX} characters")
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Problems with ``value`` as a label value (empty list if valid; empty is valid)."""
    errs: list[str] = []
    if len(value) > _NAME_MAX:
        errs.append(f"must be no more than {_NAME_MAX} characters")
    if value and not _QUALIFIED_NAME_RE.fullmatch(value):
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return errs


def go_quote(value: str) -> str:
    """Double-quote ``value`` the way Go's ``%q`` does for ordinary text.

    Error messages quote offending values so that empty strings and stray spaces are
    visible; matching Go's style keeps our messages comparable to kube-scheduler's.
    """
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif not ch.isprintable():
            code = ord(ch)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
