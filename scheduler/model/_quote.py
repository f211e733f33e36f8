"""Go's ``%q`` quoting for the values our error messages name."""

from __future__ import annotations


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
