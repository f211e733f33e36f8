"""Quantity parsing: cases carried over from apimachinery's quantity tests.

Expected values were also cross-checked against apimachinery v0.36.3 itself
(``ParseQuantity`` + ``AsDec``/``MilliValue``/``Value``).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.model.quantity import (
    MAX_INTEGER_DIGITS,
    QuantityError,
    ceil_fraction,
    parse_quantity,
    parse_quantity_parts,
    quantity_to_int,
    quantity_to_milli,
)

KI = 1024
MI = KI**2
GI = KI**3
TI = KI**4
PI = KI**5
EI = KI**6
INT64_MAX = 2**63 - 1


def F(text: str) -> Fraction:
    return Fraction(Decimal(text))


VALID = [
    # zero in every suffix
    ("0", F("0")),
    ("0n", F("0")),
    ("0u", F("0")),
    ("0m", F("0")),
    ("0Ki", F("0")),
    ("0k", F("0")),
    ("0Mi", F("0")),
    ("0M", F("0")),
    ("0Gi", F("0")),
    ("0G", F("0")),
    ("0Ti", F("0")),
    ("0T", F("0")),
    ("1", F("1")),
    # binary suffixes
    ("1Ki", Fraction(KI)),
    ("8Ki", Fraction(8 * KI)),
    ("7Mi", Fraction(7 * MI)),
    ("6Gi", Fraction(6 * GI)),
    ("5Ti", Fraction(5 * TI)),
    ("4Pi", Fraction(4 * PI)),
    ("3Ei", Fraction(3 * EI)),
    ("10Ti", Fraction(10 * TI)),
    ("100Ti", Fraction(100 * TI)),
    # decimal suffixes
    ("5n", F("5e-9")),
    ("4u", F("4e-6")),
    ("3m", F("3e-3")),
    ("9", F("9")),
    ("8k", F("8e3")),
    ("50k", F("5e4")),
    ("7M", F("7e6")),
    ("6G", F("6e9")),
    ("5T", F("5e12")),
    ("40T", F("4e13")),
    ("300T", F("3e14")),
    ("2P", F("2e15")),
    ("1E", F("1e18")),
    ("12E", F("12e18")),
    # decimal exponents
    ("1E-3", F("1e-3")),
    ("1e3", F("1e3")),
    ("1E6", F("1e6")),
    ("1e9", F("1e9")),
    ("1E12", F("1e12")),
    ("1e15", F("1e15")),
    ("1E18", F("1e18")),
    ("1e14", F("1e14")),
    ("1e13", F("1e13")),
    ("12e6", F("12e6")),
    ("1e+3", F("1e3")),
    ("1e0003", F("1e3")),
    ("1E-0", F("1")),
    ("100.035k", F("100035")),
    # things that look like floating point
    ("0.001", F("0.001")),
    ("0.0005k", F("0.5")),
    ("0.005", F("0.005")),
    ("0.05", F("0.05")),
    ("0.5", F("0.5")),
    ("0.00050k", F("0.5")),
    ("0.00500", F("0.005")),
    ("0.05000", F("0.05")),
    ("0.50000", F("0.5")),
    ("0.5e0", F("0.5")),
    ("0.5e-1", F("0.05")),
    ("0.5e-2", F("0.005")),
    ("10.035M", F("10035000")),
    ("1.2e3", F("1200")),
    ("1.3E+6", F("1.3e6")),
    ("1.40e9", F("1.4e9")),
    ("1.53E12", F("1.53e12")),
    ("1.6e15", F("1.6e15")),
    ("1.7E18", F("1.7e18")),
    ("9.01", F("9.01")),
    ("8.1k", F("8100")),
    ("7.123456M", F("7123456")),
    ("6.987654321G", F("6987654321")),
    ("5.444T", F("5.444e12")),
    ("40.1T", F("4.01e13")),
    ("300.2T", F("3.002e14")),
    ("2.5P", F("2.5e15")),
    ("1.01E", F("1.01e18")),
    ("1.2345", F("1.2345")),
    # rounding away from zero to the next nano
    ("3.001n", F("4e-9")),
    ("1.1E-9", F("2e-9")),
    ("0.0000000001", F("1e-9")),
    ("0.0000000005", F("1e-9")),
    ("0.00000000050", F("1e-9")),
    ("0.5e-9", F("1e-9")),
    ("0.9n", F("1e-9")),
    ("0.00000012345", F("124e-9")),
    ("0.00000012354", F("124e-9")),
    ("1e-1000", F("1e-9")),
    ("0.1m", F("0.0001")),
    # binary-SI values are capped at 2^63-1; decimal ones are not
    ("9Ei", Fraction(INT64_MAX)),
    ("8Ei", Fraction(INT64_MAX)),
    ("9223372036854775807Ki", Fraction(INT64_MAX)),
    ("99999999999999999999Ki", Fraction(INT64_MAX)),
    ("9999999999999999999", F("9999999999999999999")),
    ("123456789012345678901234567890", F("123456789012345678901234567890")),
    ("7.9999999999Ei", F("9223372036739483657.539315303")),
    # fractional binary values
    ("100.035Ki", F("102435.84")),
    ("0.5Mi", Fraction(MI // 2)),
    ("0.05Gi", F("53687091.2")),
    ("0.025Ti", F("27487790694.4")),
    ("1.5Ki", Fraction(1536)),
    ("0.0000000001Ki", F("103e-9")),
    ("1.0000000001Ki", F("1024.000000103")),
    # written by trolls, still accepted
    ("0.000000000001Ki", F("2e-9")),
    (".001", F("0.001")),
    (".0001k", F("0.1")),
    ("1.", F("1")),
    ("1.G", F("1e9")),
    ("1.e3", F("1000")),
    ("+.5", F("0.5")),
    ("00012", F("12")),
    ("-0", F("0")),
    ("0.0", F("0")),
    ("0e5", F("0")),
    # digit-less numbers read as zero where apimachinery's fast path handles them
    (".", F("0")),
    ("-.", F("0")),
    ("+", F("0")),
    ("-", F("0")),
    ("Mi", F("0")),
    ("+Ki", F("0")),
    (".Ki", F("0")),
    ("Ti", F("0")),
    ("E", F("0")),
    ("+e-9", F("0")),
    # the exponent is read as int64 then truncated to int32
    ("1e4294967296", F("1")),
    ("1e4294967299", F("1000")),
    ("1e9223372036854775807", F("0.1")),
    ("5e-4294967295", F("50")),
    # negative values
    ("-1.5", F("-1.5")),
    ("-1Ki", Fraction(-KI)),
    ("-9Ei", Fraction(-INT64_MAX)),
    ("-0.0000000001Ki", F("-103e-9")),
    ("-1.0000000001", F("-1.000000001")),
    # surrounding whitespace is dropped, as Quantity's JSON decoding does
    (" 1", F("1")),
    ("1 ", F("1")),
    ("\t100m\n", F("0.1")),
]

INVALID = [
    "",
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    "1.5.5",
    "1 Gi",
    "1KiB",
    "1e",
    "1ki",
    "ki",
    "1K",
    "1Ee3",
    "1ee3",
    "1e3e3",
    "1e--3",
    "1e+-3",
    "1Mi3",
    "1m3",
    "1Ki+3",
    "0x10",
    "1_000",
    "\uff11",
    "1\u00b5",
    "Non-Numeric",
    "1e9223372036854775808",
    # digit-less with a path apimachinery cannot parse
    "Pi",
    "-Ei",
    ".Pi",
    "e-10",
    "+e-26",
    ".e-20",
    "   ",
    "1\x1c",
]


@pytest.mark.parametrize(("text", "expected"), VALID)
def test_parse_valid(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", [t for t, _ in VALID if t.strip() and t[0] not in "+-"])
def test_sign_variants(text: str) -> None:
    # apimachinery's own table is re-run with "-" and "+" prepended.
    value = parse_quantity(text)
    assert parse_quantity("-" + text.strip()) == -value
    assert parse_quantity("+" + text.strip()) == value


@pytest.mark.parametrize("text", INVALID)
def test_parse_invalid(text: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert info.value.value == text
    assert isinstance(info.value, ValueError)


def test_error_message_quotes_value() -> None:
    with pytest.raises(QuantityError, match=r'^invalid quantity "1 Gi": '):
        parse_quantity("1 Gi")
    with pytest.raises(QuantityError, match=r'^invalid quantity "": empty string'):
        parse_quantity("")
    with pytest.raises(QuantityError, match=r'unknown suffix "ki"'):
        parse_quantity("1ki")


def test_error_with_context() -> None:
    err = QuantityError("abc", "bad").with_context('container "app" requests.cpu')
    assert str(err) == 'container "app" requests.cpu: invalid quantity "abc": bad'
    assert err.value == "abc" and err.context == 'container "app" requests.cpu'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, F("1")),
        (0, F("0")),
        (-3, F("-3")),
        (1.5, F("1.5")),
        (0.1, F("0.1")),
        (1e-5, F("0.00001")),
        (1e16, F("1e16")),
        (10**30, F("1e30")),
    ],
)
def test_json_numbers(value: int | float, expected: Fraction) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize("value", [True, False, float("nan"), float("inf"), None, [1], {"a": 1}])
def test_non_quantity_types(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


def test_too_large_is_rejected_not_materialised() -> None:
    limit = MAX_INTEGER_DIGITS
    assert parse_quantity(f"1e{limit - 1}") == 10 ** (limit - 1)
    for text in (f"1e{limit}", "1e2147483647", "1" * (limit + 1)):
        with pytest.raises(QuantityError, match="integer digits"):
            parse_quantity(text)
    with pytest.raises(QuantityError):
        parse_quantity(10**limit)
    # Long inputs whose value is small stay exact, with no huge intermediates.
    assert parse_quantity("0." + "0" * 5000 + "1") == F("1e-9")
    assert parse_quantity("0." + "0" * 5000 + "1Ki") == F("1e-9")
    assert parse_quantity("1." + "0" * 5000 + "1Ki") == F("1024.000000001")
    assert parse_quantity("2." + "0" * 5000) == 2


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        ("1", 1000, 1),
        ("1.5", 1500, 2),
        ("100m", 100, 1),
        ("0.1m", 1, 1),
        ("0.0005", 1, 1),
        ("1n", 1, 1),
        ("0.9n", 1, 1),
        ("1.2345", 1235, 2),
        ("1.0000000001", 1001, 2),
        ("0.3", 300, 1),
        ("1Ki", 1024000, 1024),
        ("1.5Ki", 1536000, 1536),
        ("0.5Mi", 524288000, 524288),
        ("1e3", 1000000, 1000),
        ("1E-3", 1, 1),
        ("12e6", 12000000000, 12000000),
        ("0", 0, 0),
        ("9Ei", INT64_MAX * 1000, INT64_MAX),
        ("-1e-3", -1, 0),
    ],
)
def test_milli_and_value_round_up(text: str, milli: int, whole: int) -> None:
    assert quantity_to_milli(text) == milli
    assert quantity_to_int(text) == whole


def test_ceil_fraction() -> None:
    assert ceil_fraction(Fraction(1, 3)) == 1
    assert ceil_fraction(Fraction(-1, 3)) == 0
    assert ceil_fraction(Fraction(4)) == 4
    assert ceil_fraction(Fraction(-7, 2)) == -3


_SUFFIX_SCALE = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(KI),
    "Mi": Fraction(MI),
    "Gi": Fraction(GI),
    "Ti": Fraction(TI),
}


def _nano_round(value: Fraction) -> Fraction:
    scaled = value * 10**9
    magnitude = ceil_fraction(abs(scaled))
    return Fraction(magnitude if scaled >= 0 else -magnitude, 10**9)


@given(
    sign=st.sampled_from(["", "+", "-"]),
    whole=st.integers(min_value=0, max_value=10**12),
    fraction=st.text(alphabet="0123456789", max_size=12),
    suffix=st.sampled_from(sorted(_SUFFIX_SCALE)),
)
def test_property_matches_exact_arithmetic(
    sign: str, whole: int, fraction: str, suffix: str
) -> None:
    text = f"{sign}{whole}" + (f".{fraction}" if fraction else "") + suffix
    number = Fraction(Decimal(f"{whole}.{fraction or '0'}"))
    expected = _nano_round(number * _SUFFIX_SCALE[suffix])
    if suffix.endswith("i"):
        expected = min(expected, Fraction(INT64_MAX))  # the binary-SI cap
    if sign == "-":
        expected = -expected
    assert parse_quantity(text) == expected
    if expected >= 0:
        assert quantity_to_milli(text) == ceil_fraction(expected * 1000)
        assert quantity_to_int(text) == ceil_fraction(expected)


@given(mantissa=st.integers(min_value=-(10**15), max_value=10**15), exp=st.integers(-30, 30))
def test_property_exponent_form(mantissa: int, exp: int) -> None:
    expected = _nano_round(Fraction(mantissa) * Fraction(10) ** exp)
    assert parse_quantity(f"{mantissa}e{exp}") == expected
    assert parse_quantity(f"{mantissa}E{exp:+d}") == expected


@given(st.text(max_size=12))
def test_property_never_crashes(text: str) -> None:
    try:
        value = parse_quantity(text)
    except QuantityError as err:
        assert err.value == text
    else:
        assert isinstance(value, Fraction)
        # Everything accepted is a whole number of nanos.
        assert (value * 10**9).denominator == 1


# --- parse_quantity_parts -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "negative", "integer", "fraction", "suffix", "fmt", "base", "exponent"),
    [
        ("100m", False, "100", "", "m", "DecimalSI", 10, -3),
        ("-001.50Gi", True, "001", "50", "Gi", "BinarySI", 2, 30),
        ("0.5Ki", False, "0", "5", "Ki", "BinarySI", 2, 10),
        (".5Mi", False, "", "5", "Mi", "BinarySI", 2, 20),
        ("+1e3", False, "1", "", "e3", "DecimalExponent", 10, 3),
        ("1E-6", False, "1", "", "E-6", "DecimalExponent", 10, -6),
        ("2E", False, "2", "", "E", "DecimalSI", 10, 18),
        ("1e4294967296", False, "1", "", "e4294967296", "DecimalExponent", 10, 0),
        ("Mi", False, "", "", "Mi", "BinarySI", 2, 20),
    ],
)
def test_parts(
    text: str,
    negative: bool,
    integer: str,
    fraction: str,
    suffix: str,
    fmt: str,
    base: int,
    exponent: int,
) -> None:
    parts = parse_quantity_parts(text)
    assert (parts.negative, parts.integer, parts.fraction, parts.suffix) == (
        negative,
        integer,
        fraction,
        suffix,
    )
    assert (parts.format, parts.base, parts.exponent) == (fmt, base, exponent)
    assert parts.value == parse_quantity(text)


def test_parts_binary_below_one_is_decimal_si() -> None:
    # apimachinery switches such values to DecimalSI; zero keeps BinarySI.
    assert parse_quantity_parts("0.0001Ki").format == "DecimalSI"
    assert parse_quantity_parts("0Ki").format == "BinarySI"


def test_parts_does_not_trim_whitespace() -> None:
    assert parse_quantity(" 1 ") == 1
    with pytest.raises(QuantityError) as info:
        parse_quantity_parts(" 1")
    assert info.value.kind == "format"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "format"),
        ("1 Gi", "format"),
        ("1.2.3", "format"),
        ("1ki", "suffix"),
        ("1e", "suffix"),
        ("1e99999999999999999999", "suffix"),
        ("Pi", "numeric"),
        (".e-10", "numeric"),
        ("1e1001", "range"),
    ],
)
def test_error_kinds(text: str, kind: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity_parts(text)
    assert info.value.kind == kind
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert info.value.kind == kind


def test_error_kind_of_non_quantities_and_context() -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(True)
    assert info.value.kind == "type"
    assert QuantityError("x", "bad", kind="suffix").with_context("here").kind == "suffix"


def test_parts_without_limits() -> None:
    assert parse_quantity_parts("9Ei").value == INT64_MAX
    assert parse_quantity_parts("9Ei", cap_binary_si=False).value == 9 * EI
    assert parse_quantity_parts("-9Ei", cap_binary_si=False).value == -9 * EI
    assert parse_quantity_parts("1e1001", max_integer_digits=None).value == 10**1001
    with pytest.raises(QuantityError, match="more than 3 integer digits"):
        parse_quantity_parts("1e3", max_integer_digits=3)
    with pytest.raises(QuantityError, match="more than 3 integer digits") as info:
        parse_quantity_parts("1Ki", max_integer_digits=3, cap_binary_si=False)
    assert info.value.kind == "range"


@given(
    st.from_regex(
        r"[+-]?[0-9]{0,25}(\.[0-9]{0,12})?([numkMGTPE]|[KMGTPE]i|e-?[0-9]{1,2})?",
        fullmatch=True,  # the parts parser trims no whitespace (documented); others may
    )
)
def test_property_parts_value_matches_parse_quantity(text: str) -> None:
    try:
        expected = parse_quantity(text)
    except QuantityError as exc:
        with pytest.raises(QuantityError) as info:
            parse_quantity_parts(text)
        assert info.value.kind == exc.kind
    else:
        assert parse_quantity_parts(text).value == expected
