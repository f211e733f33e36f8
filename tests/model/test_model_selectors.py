"""Label and node selectors: cases from apimachinery labels and component-helpers.

The string parser was also cross-checked against apimachinery v0.36.3 ``labels.Parse``
on ~100k generated strings (accept/reject and resulting requirements).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.model.selectors import (
    OPERATORS,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
    SelectorError,
    label_int_value,
    parse_label_selector_string,
)

# --- Requirement.matches -----------------------------------------------------------


@pytest.mark.parametrize(
    ("req", "labels", "expected"),
    [
        (Requirement("x", "In", ("a", "b")), {"x": "a"}, True),
        (Requirement("x", "In", ("a", "b")), {"x": "c"}, False),
        (Requirement("x", "In", ("a",)), {}, False),
        (Requirement("x", "NotIn", ("a",)), {"x": "a"}, False),
        (Requirement("x", "NotIn", ("a",)), {"x": "b"}, True),
        (Requirement("x", "NotIn", ("a",)), {}, True),
        (Requirement("x", "Exists", ()), {"x": ""}, True),
        (Requirement("x", "Exists", ()), {"y": "1"}, False),
        (Requirement("x", "DoesNotExist", ()), {}, True),
        (Requirement("x", "DoesNotExist", ()), {"x": "1"}, False),
        (Requirement("x", "Gt", ("5",)), {"x": "6"}, True),
        (Requirement("x", "Gt", ("5",)), {"x": "5"}, False),
        (Requirement("x", "Gt", ("5",)), {}, False),
        (Requirement("x", "Gt", ("5",)), {"x": "six"}, False),
        (Requirement("x", "Gt", ("-1",)), {"x": "0"}, True),
        (Requirement("x", "Gt", ("5",)), {"x": "+006"}, True),
        (Requirement("x", "Lt", ("5",)), {"x": "4"}, True),
        (Requirement("x", "Lt", ("5",)), {"x": "5"}, False),
        (Requirement("x", "Lt", ("5",)), {"x": "4.5"}, False),
        (Requirement("x", "Lt", ("0",)), {"x": "-9223372036854775808"}, True),
        (Requirement("x", "Lt", ("0",)), {"x": "-9223372036854775809"}, False),
    ],
)
def test_requirement_matches(req: Requirement, labels: dict[str, str], expected: bool) -> None:
    assert req.matches(labels) is expected


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("42", 42),
        ("-42", -42),
        ("+42", 42),
        ("007", 7),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
        ("", None),
        ("-", None),
        ("1e3", None),
        ("1_000", None),
        (" 1", None),
        ("\u0661", None),
    ],
)
def test_label_int_value(text: str, value: int | None) -> None:
    assert label_int_value(text) == value


def test_requirement_is_a_plain_tuple() -> None:
    key, op, values = Requirement("k", "In", ("v",))
    assert (key, op, values) == ("k", "In", ("v",))
    assert set(OPERATORS) == {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}


# --- LabelSelector -----------------------------------------------------------------


def test_nil_and_empty_label_selector() -> None:
    assert not LabelSelector.from_dict(None).matches({})
    assert not LabelSelector.from_dict(None).matches({"a": "b"})
    assert LabelSelector.from_dict({}).matches({})
    assert LabelSelector.from_dict({"matchLabels": {}, "matchExpressions": []}).matches({"a": "b"})
    assert LabelSelector.from_dict({}).is_everything
    assert not LabelSelector.nothing().is_everything


def test_label_selector_match_labels_and_expressions() -> None:
    sel = LabelSelector.from_dict(
        {
            "matchLabels": {"app": "web", "tier": "front"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "staging"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel.matches({"app": "web", "tier": "front", "env": "prod"})
    assert not sel.matches({"app": "web", "tier": "front", "env": "dev"})
    assert not sel.matches({"app": "web", "env": "prod"})
    assert not sel.matches({"app": "web", "tier": "front", "env": "prod", "canary": "1"})
    assert sel.requirements[0] == ("app", "In", ("web",))


@pytest.mark.parametrize(
    ("selector", "path_fragment"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, "operator"),
        ({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["1"]}]}, "operator"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, "[0]"),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "[0]"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "[0]"),
        ({"matchExpressions": [{"key": "-a", "operator": "Exists"}]}, "[0]"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["a b"]}]}, "[0]"),
        ({"matchLabels": {"a": "x" * 64}}, "matchLabels[a]"),
        ({"matchLabels": {"a/b/c": "x"}}, "matchLabels[a/b/c]"),
        ({"matchLabels": {"a": 1}}, "matchLabels[a]"),
        ({"matchExpressions": {"key": "a"}}, "matchExpressions"),
    ],
)
def test_label_selector_errors_name_the_path(selector: dict[str, Any], path_fragment: str) -> None:
    with pytest.raises(SelectorError) as info:
        LabelSelector.from_dict(selector, path="spec.selector")
    assert info.value.path.startswith("spec.selector")
    assert path_fragment in info.value.path
    assert str(info.value).startswith(info.value.path + ": ")


def test_label_selector_error_message_for_operator() -> None:
    with pytest.raises(SelectorError, match=r'"Gt" is not a valid label selector operator'):
        LabelSelector.from_dict(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}
        )


# --- string syntax -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("x=a", [("x", "In", ("a",))]),
        ("x==a", [("x", "In", ("a",))]),
        ("x!=a", [("x", "NotIn", ("a",))]),
        ("x=", [("x", "In", ("",))]),
        ("x", [("x", "Exists", ())]),
        ("!x", [("x", "DoesNotExist", ())]),
        ("! x", [("x", "DoesNotExist", ())]),
        ("x>1", [("x", "Gt", ("1",))]),
        ("x<007", [("x", "Lt", ("007",))]),
        ("x in (a,b)", [("x", "In", ("a", "b"))]),
        ("x in (b,a,b)", [("x", "In", ("a", "b"))]),
        ("x notin (a)", [("x", "NotIn", ("a",))]),
        ("x in ()", [("x", "In", ("",))]),
        ("x in (,)", [("x", "In", ("",))]),
        ("x in (a,)", [("x", "In", ("", "a"))]),
        ("x in (,a)", [("x", "In", ("", "a"))]),
        ("x in (a,,b)", [("x", "In", ("", "a", "b"))]),
        ("x in (in,notin)", [("x", "In", ("in", "notin"))]),
        ("in=notin", [("in", "In", ("notin",))]),
        ("  x  in  ( a , b )  ", [("x", "In", ("a", "b"))]),
        (
            "a=b,c!=d,e in (x,y),!f,g",
            [
                ("a", "In", ("b",)),
                ("c", "NotIn", ("d",)),
                ("e", "In", ("x", "y")),
                ("f", "DoesNotExist", ()),
                ("g", "Exists", ()),
            ],
        ),
        ("z=1,a=2", [("a", "In", ("2",)), ("z", "In", ("1",))]),
        ("example.com/x=y", [("example.com/x", "In", ("y",))]),
    ],
)
def test_parse_string(text: str, expected: list[tuple[str, str, tuple[str, ...]]]) -> None:
    assert [tuple(r) for r in parse_label_selector_string(text).requirements] == expected


@pytest.mark.parametrize(
    "text",
    [
        "x=a,",
        ",x=a",
        "x=a b",
        "x in a",
        "x in (a",
        "x in (a b)",
        "x notin",
        "x>a",
        "x>1.5",
        "x<-1",
        "x>+1",
        "x>",
        "!x=a",
        "!x in (a)",
        "x=(a)",
        "x=a=b",
        "-x=a",
        "x=-a",
        "a/b/c",
        "x in (a) y",
        "=a",
        "x=a,,y=b",
        "x!",
    ],
)
def test_parse_string_errors(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector_string(text)


def test_parse_string_matching() -> None:
    sel = parse_label_selector_string("a=b,c!=d,e in (x,y),!f,g")
    assert sel.matches({"a": "b", "e": "x", "g": ""})
    assert sel.matches({"a": "b", "c": "e", "e": "y", "g": "1"})
    assert not sel.matches({"a": "b", "c": "d", "e": "x", "g": ""})
    assert not sel.matches({"a": "b", "e": "x", "g": "", "f": "1"})
    assert parse_label_selector_string("").matches({})


# --- NodeSelector ------------------------------------------------------------------


def ns(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": list(terms)}


def test_terms_are_ored_requirements_anded() -> None:
    sel = NodeSelector.from_dict(
        ns(
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a", "b"]},
                    {"key": "gpu", "operator": "Exists"},
                ]
            },
            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["16"]}]},
        )
    )
    assert sel.matches({"zone": "a", "gpu": "true"})
    assert not sel.matches({"zone": "a"})
    assert sel.matches({"cores": "32"})
    assert not sel.matches({"cores": "16"})


def test_empty_terms_match_nothing() -> None:
    assert not NodeSelector.from_dict(ns({})).matches({"a": "b"}, "n1")
    assert not NodeSelector.from_dict(ns({"matchExpressions": [], "matchFields": []})).matches({})
    assert not NodeSelector.from_dict(ns()).matches({})
    assert not NodeSelector.from_dict(None).matches({})
    # An empty term does not spoil the others.
    sel = NodeSelector.from_dict(ns({}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]}))
    assert sel.matches({"a": ""})
    assert NodeSelectorTerm().is_empty


def test_match_fields_metadata_name() -> None:
    sel = NodeSelector.from_dict(
        ns({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
    )
    assert sel.matches({}, "n1")
    assert not sel.matches({}, "n2")
    node = {"metadata": {"name": "n1", "labels": {"x": "y"}}}
    assert sel.matches_node(node)
    not_in = NodeSelector.from_dict(
        ns({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]})
    )
    assert not not_in.matches({}, "n1")
    assert not_in.matches({}, "n2")


def test_match_fields_and_expressions_are_anded() -> None:
    sel = NodeSelector.from_dict(
        ns(
            {
                "matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
            }
        )
    )
    assert sel.matches({"a": "1"}, "n1")
    assert not sel.matches({"a": "1"}, "n2")
    assert not sel.matches({"a": "2"}, "n1")


def test_fields_skipped_for_nameless_node() -> None:
    # kube-scheduler only evaluates matchFields when the node has a name.
    sel = NodeSelector.from_dict(
        ns({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
    )
    assert sel.matches({}, "")


@pytest.mark.parametrize(
    ("term", "fragment"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Foo"}]}, "matchExpressions[0].operator"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]},
            "matchExpressions[0]",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1", "2"]}]},
            "matchExpressions[0]",
        ),
        ({"matchExpressions": [{"key": "a", "operator": "Lt"}]}, "matchExpressions[0]"),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]},
            "matchExpressions[0]",
        ),
        ({"matchExpressions": [{"key": "", "operator": "Exists"}]}, "matchExpressions[0]"),
        (
            {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]},
            "matchFields[0].operator",
        ),
        (
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
            "matchFields[0].values",
        ),
        (
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": []}]},
            "matchFields[0].values",
        ),
    ],
)
def test_node_selector_errors(term: dict[str, Any], fragment: str) -> None:
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    with pytest.raises(SelectorError) as info:
        NodeSelector.from_dict(ns(term), path=path)
    assert info.value.path == f"{path}.nodeSelectorTerms[0].{fragment}"


def test_lazy_parsing_keeps_valid_terms() -> None:
    raw = ns(
        {"matchExpressions": [{"key": "a", "operator": "Foo"}]},
        {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
    )
    with pytest.raises(SelectorError):
        NodeSelector.from_dict(raw)
    sel = NodeSelector.from_dict(raw, lazy=True)
    assert len(sel.errors) == 1 and "nodeSelectorTerms[0]" in sel.errors[0]
    assert sel.terms[0].error is not None
    assert not sel.matches({"a": "x"})
    assert sel.matches({"b": "x"})


def test_vectorisable_shape() -> None:
    term = NodeSelectorTerm.from_dict(
        {
            "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
        }
    )
    assert term.requirements == (("zone", "NotIn", ("z1",)),)
    assert term.field_requirements == (("metadata.name", "In", ("n1",)),)


_label_keys = st.sampled_from(["a", "b", "example.com/c"])
_label_values = st.sampled_from(["", "1", "2", "x", "-3"])


@given(
    labels=st.dictionaries(_label_keys, _label_values),
    key=_label_keys,
    values=st.lists(st.sampled_from(["1", "2", "x"]), min_size=1, max_size=3),
)
def test_property_string_and_dict_forms_agree(
    labels: dict[str, str], key: str, values: list[str]
) -> None:
    text = (
        f"{key} in ({','.join(values)}),!{key}x"
        if "/" not in key
        else f"{key} in ({','.join(values)})"
    )
    parsed = parse_label_selector_string(text)
    exprs: list[dict[str, Any]] = [{"key": key, "operator": "In", "values": values}]
    if "/" not in key:
        exprs.append({"key": f"{key}x", "operator": "DoesNotExist"})
    from_dict = LabelSelector.from_dict({"matchExpressions": exprs})
    assert parsed.matches(labels) == from_dict.matches(labels)
    negated = parse_label_selector_string(f"{key} notin ({','.join(values)})")
    assert negated.matches(labels) == (key not in labels or labels[key] not in values)


def test_requirement_errors_in_kubes_words() -> None:
    """Our path, then ``labels.NewRequirement``'s own field errors, aggregated as kube does."""
    with pytest.raises(SelectorError) as err:
        LabelSelector.from_dict({"matchExpressions": [{"key": "k", "operator": "In"}]})
    assert str(err.value) == (
        "labelSelector.matchExpressions[0]: values: Invalid value: []string(nil): "
        "for 'in', 'notin' operators, values set can't be empty"
    )
    with pytest.raises(SelectorError) as err:
        LabelSelector.from_dict(
            {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a", "b"]}]}
        )
    assert str(err.value) == (
        "labelSelector.matchExpressions[0]: values: Invalid value: "
        '[]string{"a", "b"}: values set must be empty for exists and does not exist'
    )
