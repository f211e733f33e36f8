"""Kubernetes' name and label grammars, with kube-apiserver's own error texts.

The one home for apimachinery's ``IsDNS1123Subdomain``, ``IsDNS1123Label``,
``IsQualifiedName`` (label keys) and ``IsValidLabelValue``. Everything that checks
these rules uses this module: the emulator must answer with the exact bytes
kube-apiserver puts in a 422, selectors must refuse exactly the keys and values
kube-scheduler refuses to build, and the daemon's ingest checks must agree with
both. Two copies of a grammar drift apart; one cannot.

Texts follow apimachinery v0.36 (``pkg/util/validation`` and
``pkg/api/validate/content``), including their differences: the DNS-1123 checks
say "characters" in their length error while the label-key and label-value checks
(and a label key's prefix) say "bytes". Lengths are counted in UTF-8 bytes, as Go's
``len`` does.
"""

from __future__ import annotations

import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63

# Go's regexp anchors with ^...$ match the whole text; Python's $ also matches
# before a trailing newline, so these are only ever used with fullmatch.
DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)
QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT)
LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: the rule, examples, and the regex itself."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """``validation.MaxLenError`` (the DNS-1123 checks use this wording)."""
    return f"must be no more than {length} characters"


def max_bytes_error(length: int) -> str:
    """``content.MaxLenError`` (label keys, their prefixes and label values)."""
    return f"must be no more than {length} bytes"


DNS1123_LABEL_MSG = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
DNS1123_SUBDOMAIN_MSG = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character",
    DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
QUALIFIED_NAME_MSG = regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character",
    QUALIFIED_NAME_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
LABEL_VALUE_MSG = regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character",
    LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)


def _byte_len(value: str) -> int:
    # surrogatepass: a lone surrogate from a JSON body still has a length (Go would
    # have decoded it to U+FFFD, also three bytes).
    return len(value.encode("utf-8", "surrogatepass"))


def _subdomain_errors(value: str, too_long: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(too_long)
    if not DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(DNS1123_SUBDOMAIN_MSG)
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: object names, node names; empty if ``value`` is valid."""
    return _subdomain_errors(value, max_len_error(DNS1123_SUBDOMAIN_MAX))


def dns1123_label_errors(value: str) -> list[str]:
    """``IsDNS1123Label``: namespace and container names; empty if ``value`` is valid."""
    errs: list[str] = []
    if _byte_len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not DNS1123_LABEL_RE.fullmatch(value):
        if DNS1123_SUBDOMAIN_RE.fullmatch(value):
            # A valid subdomain but not a label, and the length is checked: dots.
            errs.append("must not contain dots")
        else:
            errs.append(DNS1123_LABEL_MSG)
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName`` (label keys): an optional DNS-subdomain prefix and ``/``, then a name.

    Empty if ``value`` is valid; more than one ``/`` is a single error.
    """
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            too_long = max_bytes_error(DNS1123_SUBDOMAIN_MAX)
            errs.extend("prefix part " + e for e in _subdomain_errors(prefix, too_long))
    else:
        return [
            f"a valid label key {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_bytes_error(QUALIFIED_NAME_MAX))
    if not QUALIFIED_NAME_RE.fullmatch(name):
        errs.append("name part " + QUALIFIED_NAME_MSG)
    return errs


def label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue``: empty if ``value`` is a valid label value (empty is valid)."""
    errs: list[str] = []
    if _byte_len(value) > LABEL_VALUE_MAX:
        errs.append(max_bytes_error(LABEL_VALUE_MAX))
    if not LABEL_VALUE_RE.fullmatch(value):
        errs.append(LABEL_VALUE_MSG)
    return errs
