"""The one home of kube's name and label grammars (``scheduler.model.names``).

Accept/reject cases are apimachinery v0.36's own (``content/kube_test.go``,
``content/dns_test.go``); the texts are the ones kube-apiserver returns.
"""

from __future__ import annotations

import pytest

from scheduler.model.names import (
    DNS1123_LABEL_MSG,
    DNS1123_SUBDOMAIN_MSG,
    LABEL_VALUE_MSG,
    QUALIFIED_NAME_MSG,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)

GOOD_KEYS = [
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "1234",
    "simple/simple",
    "now-with-dashes/now-with-dashes",
    "now.with.dots/simple",
    "1-num.2-num/3-num",
    "1.2.3.4/5678",
    "Uppercase_Is_OK_123",
    "example.com/Uppercase_Is_OK_123",
    "a" * 63,
    "a" * 253 + "/" + "b" * 63,
]
BAD_KEYS = [
    "nospecialchars%^=@",
    "cantendwithadash-",
    "-cantstartwithadash-",
    "only/one/slash",
    "Example.com/abc",
    "example_com/abc",
    "example.com/",
    "/simple",
    "a" * 64,
    "a" * 254 + "/abc",
    "trailing-newline\n",
]


@pytest.mark.parametrize("key", GOOD_KEYS)
def test_good_label_keys(key: str) -> None:
    assert qualified_name_errors(key) == []


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_label_keys(key: str) -> None:
    assert qualified_name_errors(key)


@pytest.mark.parametrize("value", ["simple", "end-with-num-1", "1234", "a" * 63, ""])
def test_good_label_values(value: str) -> None:
    assert label_value_errors(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "nospecialchars%^=@",
        "Tama-nui-te-rā.is.Māori.sun",
        "\\bad",
        "-a",
        "a-",
        ".a",
        "a.",
        "a" * 64,
    ],
)
def test_bad_label_values(value: str) -> None:
    assert label_value_errors(value)


@pytest.mark.parametrize("value", ["a", "a--1--2--b", "0", "1-a", "a" * 63])
def test_good_dns_labels(value: str) -> None:
    assert dns1123_label_errors(value) == []
    assert dns1123_subdomain_errors(value) == []


@pytest.mark.parametrize("value", ["", "A", "aBc", "-", "a-", "-a", "a_b", ".", "a b", "x\n"])
def test_bad_dns_labels_and_subdomains(value: str) -> None:
    assert dns1123_label_errors(value) == [DNS1123_LABEL_MSG]
    assert dns1123_subdomain_errors(value) == [DNS1123_SUBDOMAIN_MSG]


def test_subdomains_allow_dots_labels_say_so() -> None:
    assert dns1123_subdomain_errors("a.b.c") == []
    assert dns1123_label_errors("a.b") == ["must not contain dots"]
    assert dns1123_subdomain_errors("a..b") == [DNS1123_SUBDOMAIN_MSG]
    assert dns1123_subdomain_errors("a" * 253) == []


def test_kube_apiserver_texts() -> None:
    # Byte for byte what IsQualifiedName / IsValidLabelValue / IsDNS1123* return.
    assert QUALIFIED_NAME_MSG == (
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )
    assert LABEL_VALUE_MSG == (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', "
        "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
        "or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )
    assert DNS1123_SUBDOMAIN_MSG == (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    assert qualified_name_errors("a/b/c") == [
        f"a valid label key {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and "
        "'/' (e.g. 'example.com/MyName')"
    ]
    assert qualified_name_errors("/x") == ["prefix part must be non-empty"]
    assert qualified_name_errors("x/") == [
        "name part must be non-empty",
        f"name part {QUALIFIED_NAME_MSG}",
    ]
    # The content package says "bytes"; the DNS-1123 checks say "characters".
    assert qualified_name_errors("a" * 254 + "/b") == ["prefix part must be no more than 253 bytes"]
    assert qualified_name_errors("a" * 64) == ["name part must be no more than 63 bytes"]
    assert label_value_errors("a" * 64) == ["must be no more than 63 bytes"]
    assert dns1123_subdomain_errors("a" * 254) == ["must be no more than 253 characters"]
    assert dns1123_label_errors("a" * 64) == ["must be no more than 63 characters"]


def test_lengths_are_utf8_bytes_as_in_go() -> None:
    # 32 characters, 64 bytes: too long for Go's len() as well as badly formed.
    assert label_value_errors("é" * 32) == ["must be no more than 63 bytes", LABEL_VALUE_MSG]
