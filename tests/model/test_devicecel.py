"""DRA CEL selectors against kube's results.

Expected messages and costs were produced by kube's own
k8s.io/dynamic-resource-allocation/cel v0.36.3 (CompileCELExpression with
DRAConsumableCapacity on, then DeviceMatches) for the same inputs.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.devicecel import (
    CelCompileError,
    CelRuntimeError,
    DeviceInput,
    SelectorCache,
    activation,
    compile_selector,
    validate_expression,
)

D = "dra.example.com"


def device(
    attributes: dict[str, Any] | None = None,
    capacity: dict[str, Any] | None = None,
    driver: str = D,
    multi: bool | None = None,
) -> DeviceInput:
    return DeviceInput(driver, attributes or {}, capacity or {}, multi)


def run(expression: str, dev: DeviceInput | None = None) -> bool:
    return compile_selector(expression).matches(dev or device())


ALL_KINDS = {
    "bool": {"bool": True},
    "int": {"int": 1},
    "string": {"string": "fish"},
    "version": {"version": "1.0.0"},
}


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        (f'device.attributes["{D}"].bool', 4),
        (f'device.attributes["{D}"].int > 0', 5),
        (f'device.attributes["{D}"].string == "fish"', 5),
        (f'device.attributes["{D}"].version.isGreaterThan(semver("0.0.1"))', 6),
        (f'device.attributes["{D}"]["int"] > 0', 5),
        (f'cel.bind(dra, device.attributes["{D}"], dra.bool)', 15),
        (f'"{D}" in device.attributes', 3),
        (f'device.driver == "{D}"', 4),
    ],
)
def test_attributes_of_every_kind(expression: str, cost: int) -> None:
    compiled = compile_selector(expression)
    assert compiled.max_cost == cost
    assert compiled.matches(device(ALL_KINDS))


def test_unqualified_names_take_the_driver_domain() -> None:
    dev = device({"name": {"bool": True}, "other.example.com/name": {"bool": False}})
    assert run(f'device.attributes["{D}"].name', dev)
    assert not run('device.attributes["other.example.com"].name', dev)
    assert not run('"name" in device.attributes["other.example.com"]', device())


def test_missing_domain_is_an_empty_map() -> None:
    for expression in (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
    ):
        with pytest.raises(CelRuntimeError, match=r"^no such key: noSuchAttr$"):
            run(expression)
    assert run('device.attributes["x"].size() == 0')
    assert not run('has(device.attributes["x"].foo)')
    assert run("has(device.attributes.foo)")  # kube's map with a default "has" every key
    assert not run('"no-such-domain" in device.attributes')
    assert run('!("name" in device.capacity["dra.example.com"]) || false')
    assert run('cel.bind(a, device.attributes, a["x"].size() == 0)')


def test_missing_key_in_existing_domain() -> None:
    with pytest.raises(CelRuntimeError, match=r"^no such key: b$"):
        run(f'device.attributes["{D}"].b', device({"a": {"bool": True}}))


def test_quantity_functions() -> None:
    dev = device(capacity={"memory": {"value": "1Mi"}})
    assert run(f'device.capacity["{D}"].memory.isGreaterThan(quantity("1Ki"))', dev)
    assert run(f'device.capacity["{D}"].memory == quantity("1024Ki")', dev)
    assert run(f'device.capacity["{D}"].memory.compareTo(quantity("2Mi")) == -1', dev)
    assert run('quantity("1") == quantity("1000m") && quantity("1").add(1) == quantity("2")')
    assert run('quantity("1.5").sub(quantity("500m")).asInteger() == 1')
    assert run('sign(quantity("-1")) == -1 && quantity("1.5").asApproximateFloat() == 1.5')
    assert run('!quantity("1.5").isInteger() && isQuantity("1Gi") && !isQuantity("1x")')
    with pytest.raises(CelRuntimeError, match=r"^cannot convert value to integer$"):
        run('quantity("1.5").asInteger() == 1')
    with pytest.raises(CelRuntimeError, match=r"^quantities must match the regular expression"):
        run('quantity("abc").isInteger()')


def test_semver_functions() -> None:
    dev = device({"v": {"version": "1.2.3-rc.1+build"}})
    assert run(f'device.attributes["{D}"].v == semver("1.2.3-rc.1")', dev)
    assert run(f'device.attributes["{D}"].v.isLessThan(semver("1.2.3"))', dev)
    assert run(f'device.attributes["{D}"].v.major() == 1', dev)
    assert run('semver("v1.2", true).minor() == 2 && isSemver("v1", true) && !isSemver("v1")')
    assert run('semver("1.0.0-alpha").compareTo(semver("1.0.0-alpha.1")) == -1')
    with pytest.raises(CelRuntimeError, match=r"^No Major.Minor.Patch elements found$"):
        run('semver("1.0").major() == 1')
    with pytest.raises(CelRuntimeError, match=r'leading zeroes "01"$'):
        run('semver("1.0.0-01").major() == 1')


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"string": "fish"}, "type string could not be converted to bool"),
        ({"int": 1}, "type int could not be converted to bool"),
        ({"version": "1.0.0"}, "type kubernetes.Semver could not be converted to bool"),
    ],
)
def test_non_bool_result_at_runtime(value: dict[str, Any], message: str) -> None:
    with pytest.raises(CelRuntimeError, match=rf"^CEL result of {message}"):
        run(f'device.attributes["{D}"].name', device({"name": value}))


def test_dynamic_type_errors() -> None:
    with pytest.raises(
        CelRuntimeError, match=r"^no such overload: isGreaterThan\(string, kubernetes.Semver\)$"
    ):
        run(
            f'device.attributes["{D}"].name.isGreaterThan(semver("1.0.0"))',
            device({"name": {"string": "1.0.0"}}),
        )
    with pytest.raises(CelRuntimeError, match=r"^no such overload$"):
        run(f'device.attributes["{D}"].name > 1', device({"name": {"string": "x"}}))
    with pytest.raises(CelRuntimeError, match=r"^division by zero$"):
        run("1/0 == 1")


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1", "must evaluate to bool or the unknown type, not int"),
        ("device.driver", "must evaluate to bool or the unknown type, not string"),
        ("dyn(1)", "must evaluate to bool or the unknown type, not dyn"),
        (
            'device.attributes["x"]',
            "must evaluate to bool or the unknown type, not map(string, google.protobuf.Any)",
        ),
        (
            "device.foo",
            "compilation failed: ERROR: <input>:1:7: undefined field 'foo'\n | device.foo\n"
            " | ......^",
        ),
    ],
)
def test_compile_errors(expression: str, message: str) -> None:
    with pytest.raises(CelCompileError) as err:
        compile_selector(expression)
    assert str(err.value) == message


def test_syntax_error_message() -> None:
    expected = (
        "compilation failed: ERROR: <input>:1:1: Syntax error: extraneous input '?' expecting "
        "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT,"
        " STRING, BYTES, IDENTIFIER}\n | ?!\n | ^\nERROR: <input>:1:3: Syntax error: extraneous"
        " input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
        "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | ?!\n | ..^"
    )
    assert validate_expression("?!") == [expected]


def test_allow_multiple_allocations_defaults_to_false() -> None:
    assert run("device.allowMultipleAllocations == false")
    assert run("device.allowMultipleAllocations", device(multi=True))


def test_libraries_of_the_environment() -> None:
    assert run("[1,2,3].sum() == 6 && [1,2].isSorted() && [3,1].min() == 1")
    assert run('"abc".find("[b]") == "b" && "abab".findAll("b").size() == 2')
    assert run('"a,b".split(",").size() == 2 && "%d".format([1]) == "1"')
    assert run("sets.contains([1], [1]) && [3, 1].sort() == [1, 3]")
    assert run("[1].all(i, v, v > 0) && optional.of(1).hasValue()")


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        (f'device.attributes.exists_one(x, x == "{D}")', 164),
        (f'device.attributes["{D}"].exists_one(x, x == "services")', 133),
        (f'device.attributes["{D}"].services.split("example").size() >= 2', 19),
        (f'device.attributes["{D}"].services.matches("[^a]?sym")', 18),
        (f'device.capacity.exists_one(x, x == "{D}")', 164),
        (
            f'"name" in device.capacity["{D}"] && '
            f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
            10,
        ),
        (f'device.attributes["{D}"].name == semver("1.0.0+b")', 12),
        ('{"a":1}.b == 1', 32),
    ],
)
def test_estimated_cost_matches_kube(expression: str, cost: int) -> None:
    assert compile_selector(expression).max_cost == cost


EXPENSIVE = (
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)


def test_cost_limit() -> None:
    compiled = compile_selector(EXPENSIVE)
    assert compiled.max_cost == 85555551
    assert validate_expression(EXPENSIVE) == ["Forbidden: too complex, exceeds cost limit"]
    with pytest.raises(CelRuntimeError, match=r"^operation cancelled: actual cost limit exceeded$"):
        compiled.matches(device())


def test_validate_expression() -> None:
    assert validate_expression("true") == []
    assert validate_expression("x" * 10241) == ["Too long: may not be more than 10240 bytes"]
    assert validate_expression("1") == ["must evaluate to bool or the unknown type, not int"]


def test_invalid_device_values_fail_at_match_time() -> None:
    bad_version = device({"v": {"version": "1.0"}})
    with pytest.raises(CelRuntimeError, match=r"^attribute v: parse semantic version: No Major"):
        run("true", bad_version)
    with pytest.raises(CelRuntimeError, match=r"^attribute v: unsupported attribute value$"):
        run("true", device({"v": {"strings": ["a"]}}))


def test_activation_is_shared_between_selectors() -> None:
    dev = device({"model": {"string": "a100"}}, {"memory": {"value": "80Gi"}})
    act = activation(dev)
    assert activation(dev) is act
    first = compile_selector(f'device.attributes["{D}"].model == "a100"')
    second = compile_selector(f'device.capacity["{D}"].memory.isLessThan(quantity("40Gi"))')
    assert first.matches_activation(act)
    assert not second.matches_activation(act)


def test_cache_compiles_once_and_evicts_least_recently_used() -> None:
    cache = SelectorCache(max_entries=2)
    first = cache.compile("true")
    assert cache.compile("true") is first
    with pytest.raises(CelCompileError):
        cache.compile("1")
    with pytest.raises(CelCompileError, match=r"not int"):
        cache.compile("1")  # cached error
    assert len(cache) == 2
    cache.compile("false")
    assert len(cache) == 2
    assert cache.compile("true") is not first  # evicted, compiled again
