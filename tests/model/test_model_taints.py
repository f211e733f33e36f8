"""Taints and tolerations: cases from k8s.io/api toleration tests and TaintToleration."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.taints import (
    DO_NOT_SCHEDULE_EFFECTS,
    Taint,
    TaintError,
    Toleration,
    count_intolerable_prefer_no_schedule,
    find_untolerated,
    format_taint,
    tolerations_tolerate_taint,
)

T = Taint


def tol(**kw: Any) -> Toleration:
    return Toleration.from_dict(kw)


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        # empty key + Exists tolerates everything
        (tol(operator="Exists"), T("foo", "bar", "NoSchedule"), True),
        (tol(operator="Exists"), T("x", "", "NoExecute"), True),
        # an effect restricts; an empty effect matches all effects
        (tol(operator="Exists", effect="NoSchedule"), T("foo", "bar", "NoExecute"), False),
        (tol(key="foo", operator="Exists"), T("foo", "bar", "PreferNoSchedule"), True),
        # Equal is the default operator and needs equal values
        (tol(key="foo", value="bar", effect="NoSchedule"), T("foo", "bar", "NoSchedule"), True),
        (tol(key="foo", value="baz", effect="NoSchedule"), T("foo", "bar", "NoSchedule"), False),
        (tol(key="foo", operator="Equal", value="bar"), T("foo", "bar", "NoExecute"), True),
        (tol(key="foo"), T("foo", "", "NoSchedule"), True),
        (tol(key="foo"), T("foo", "bar", "NoSchedule"), False),
        # key must match when set
        (tol(key="other", operator="Exists"), T("foo", "bar", "NoSchedule"), False),
        # an empty key matches any key (the API only allows it with Exists; the matcher
        # itself then just compares values)
        (tol(value="bar"), T("foo", "bar", "NoSchedule"), True),
        # unknown operator matches nothing
        (tol(key="foo", operator="Bogus", value="bar"), T("foo", "bar", "NoSchedule"), False),
        # Gt/Lt are off unless enabled
        (tol(key="foo", operator="Gt", value="1"), T("foo", "5", "NoSchedule"), False),
        # tolerationSeconds is irrelevant to scheduling
        (
            tol(
                key="node.kubernetes.io/unreachable",
                operator="Exists",
                effect="NoExecute",
                tolerationSeconds=300,
            ),
            T("node.kubernetes.io/unreachable", "", "NoExecute"),
            True,
        ),
    ],
)
def test_tolerates(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert toleration.tolerates(taint) is expected


@pytest.mark.parametrize(
    ("operator", "value", "taint_value", "expected"),
    [
        ("Gt", "5", "6", True),
        ("Gt", "5", "5", False),
        ("Lt", "5", "4", True),
        ("Lt", "5", "5", False),
        ("Lt", "0", "-3", True),
        ("Gt", "5", "07", False),  # leading zeros are not canonical decimal integers
        ("Gt", "05", "7", False),
        ("Gt", "5", "x", False),
        ("Gt", "5", "", False),
        ("Gt", "-0", "1", False),
        ("Lt", "9223372036854775807", "1", True),
        ("Lt", "9223372036854775808", "1", False),
    ],
)
def test_comparison_operators_when_enabled(
    operator: str, value: str, taint_value: str, expected: bool
) -> None:
    t = tol(key="k", operator=operator, value=value)
    assert (
        t.tolerates(T("k", taint_value, "NoSchedule"), enable_comparison_operators=True) is expected
    )


def test_from_dict_defaults() -> None:
    t = Toleration.from_dict({"key": "k"})
    assert t == Toleration(key="k", operator="Equal", value="", effect="", toleration_seconds=None)
    assert Toleration.from_dict({"operator": ""}).operator == "Equal"
    taint = Taint.from_dict(
        {"key": "k", "effect": "NoSchedule", "timeAdded": "2024-01-01T00:00:00Z"}
    )
    assert taint == Taint("k", "", "NoSchedule")


@pytest.mark.parametrize(
    "bad",
    [
        {"key": 1},
        {"tolerationSeconds": "30"},
        {"tolerationSeconds": True},
        {"effect": ["NoSchedule"]},
    ],
)
def test_bad_toleration_types(bad: dict[str, Any]) -> None:
    with pytest.raises(TaintError):
        Toleration.from_dict(bad)


def test_bad_taint_types() -> None:
    with pytest.raises(TaintError):
        Taint.from_dict({"key": "k", "value": 3})
    with pytest.raises(TaintError):
        Taint.from_dict([])  # type: ignore[arg-type]


def test_find_untolerated_only_checks_do_not_schedule_effects() -> None:
    taints = [T("soft", "", "PreferNoSchedule"), T("a", "1", "NoSchedule"), T("b", "", "NoExecute")]
    assert find_untolerated(taints, []) == T("a", "1", "NoSchedule")
    tolerations = [tol(key="a", value="1")]
    assert find_untolerated(taints, tolerations) == T("b", "", "NoExecute")
    tolerations.append(tol(key="b", operator="Exists", effect="NoExecute"))
    assert find_untolerated(taints, tolerations) is None
    assert find_untolerated(taints, tolerations, effects=None) == T("soft", "", "PreferNoSchedule")
    assert find_untolerated([], []) is None
    assert {"NoSchedule", "NoExecute"} == DO_NOT_SCHEDULE_EFFECTS


def test_tolerate_all() -> None:
    taints = [T("a", "1", "NoSchedule"), T("b", "", "NoExecute"), T("c", "", "PreferNoSchedule")]
    assert find_untolerated(taints, [tol(operator="Exists")], effects=None) is None
    assert tolerations_tolerate_taint([tol(key="x"), tol(operator="Exists")], taints[0])
    assert not tolerations_tolerate_taint([], taints[0])


def test_count_intolerable_prefer_no_schedule() -> None:
    taints = [
        T("a", "", "PreferNoSchedule"),
        T("b", "", "PreferNoSchedule"),
        T("c", "", "NoSchedule"),
    ]
    assert count_intolerable_prefer_no_schedule(taints, []) == 2
    assert count_intolerable_prefer_no_schedule(taints, [tol(key="a", operator="Exists")]) == 1
    # A toleration limited to another effect does not count for scoring.
    assert (
        count_intolerable_prefer_no_schedule(
            taints, [tol(key="a", operator="Exists", effect="NoSchedule")]
        )
        == 2
    )
    assert (
        count_intolerable_prefer_no_schedule(
            taints, [tol(operator="Exists", effect="PreferNoSchedule")]
        )
        == 0
    )


def test_format_taint_and_to_string() -> None:
    unreachable = T("node.kubernetes.io/unreachable", "", "NoExecute")
    assert format_taint(unreachable) == "{node.kubernetes.io/unreachable: }"
    assert f"node(s) had untolerated taint {format_taint(unreachable)}" == (
        "node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
    )
    assert format_taint(T("dedicated", "gpu", "NoSchedule")) == "{dedicated: gpu}"
    assert T("k", "v", "NoSchedule").to_string() == "k=v:NoSchedule"
    assert T("k", "", "NoSchedule").to_string() == "k:NoSchedule"
    assert T("k", "v", "").to_string() == "k=v:"
    assert T("k").to_string() == "k"
