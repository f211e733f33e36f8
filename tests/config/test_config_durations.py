"""Go duration strings: kube configs write durations this way, so we must read them exactly."""

from __future__ import annotations

import pytest

from scheduler.config import format_go_duration, parse_go_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("1h", 3600.0),
        ("1h2m3s", 3723.0),
        ("500ms", 0.5),
        ("1.5s", 1.5),
        ("250us", 0.00025),
        ("250µs", 0.00025),
        ("100ns", 1e-7),
        ("0", 0.0),
        ("-2s", -2.0),
        ("+3s", 3.0),
        (".5s", 0.5),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "s", "1x", "1m 30s", "abc", "1.2.3s", "--1s"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (15.0, "15s"),
        (90.0, "1m30s"),
        (3600.0, "1h0m0s"),
        (0.5, "500ms"),
        (1.5, "1.5s"),
        (0.0, "0s"),
        (900.0, "15m0s"),
        (-2.0, "-2s"),
        (0.00025, "250us"),
    ],
)
def test_format_like_go(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text


@pytest.mark.parametrize("seconds", [15.0, 90.0, 3723.5, 0.001, 12.25, 7200.0])
def test_round_trip(seconds: float) -> None:
    assert parse_go_duration(format_go_duration(seconds)) == pytest.approx(seconds)


def test_longest_go_duration_parses_exactly() -> None:
    # A float sum would round this past int64 nanoseconds and refuse it.
    assert parse_go_duration("2562047h47m16.854775807s") == pytest.approx(9223372036.854775807)


@pytest.mark.parametrize(
    "text", ["2562047h47m16.854775808s", "99999999999h", "-99999999999h", "9" * 400 + "s"]
)
def test_parse_refuses_what_overflows_go(text: str) -> None:
    with pytest.raises(ValueError, match="out of range: Go durations are at most"):
        parse_go_duration(text)
