"""configure_logging and the context helpers, observed on stderr as an operator would."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from typing import Any

import pytest
import structlog

from scheduler.observability.logging import (
    bind_context,
    configure_logging,
    get_logger,
    level_for_verbosity,
    node_logger,
    plugin_logger,
    pod_context,
    pod_logger,
)


def json_lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    err = capsys.readouterr().err
    return [json.loads(line) for line in err.splitlines() if line.strip()]


def test_json_lines_carry_bound_pod_node_plugin_and_profile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("json", 0)
    log = get_logger("scheduler.cycle")
    pod_log = pod_logger(log, "default/web-1", "default-scheduler")
    plugin_logger(node_logger(pod_log, "node-a"), "NodeResourcesFit", "Filter").info(
        "node rejected", reason="Insufficient cpu"
    )
    [line] = json_lines(capsys)
    assert line["event"] == "node rejected"
    assert line["level"] == "info"
    assert line["logger"] == "scheduler.cycle"
    assert line["pod"] == "default/web-1"
    assert line["profile"] == "default-scheduler"
    assert line["node"] == "node-a"
    assert line["plugin"] == "NodeResourcesFit"
    assert line["extension_point"] == "Filter"
    assert line["reason"] == "Insufficient cpu"
    stamp = datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00"))
    assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


def test_bind_context_leaves_out_unset_keys(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", 0)
    bind_context(get_logger("x"), node="n1", attempt=2).info("hello")
    pod_logger(get_logger("x"), "ns/p").info("no profile")
    first, second = json_lines(capsys)
    assert first["node"] == "n1" and first["attempt"] == 2
    assert "pod" not in first and "plugin" not in first and "profile" not in first
    assert second["pod"] == "ns/p" and "profile" not in second


@pytest.mark.parametrize(
    ("verbosity", "debug_shown"), [(0, False), (1, False), (2, True), (5, True)]
)
def test_verbosity_maps_like_klog(
    capsys: pytest.CaptureFixture[str], verbosity: int, debug_shown: bool
) -> None:
    configure_logging("json", verbosity)
    log = get_logger("v")
    log.debug("detail")
    log.info("summary")
    events = [line["event"] for line in json_lines(capsys)]
    assert events == (["detail", "summary"] if debug_shown else ["summary"])


def test_level_for_verbosity_quiet_and_rejects_below() -> None:
    assert level_for_verbosity(-1) == logging.WARNING
    assert level_for_verbosity(0) == logging.INFO
    assert level_for_verbosity(2) == logging.DEBUG
    with pytest.raises(ValueError):
        level_for_verbosity(-2)


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        configure_logging("xml", 0)  # type: ignore[arg-type]


def test_stdlib_libraries_are_routed_through_at_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("json", 2)
    logging.getLogger("aiohttp.access").info("GET /healthz 200")
    logging.getLogger("kubernetes_asyncio.client.rest").warning("retrying %s", "watch")
    [line] = json_lines(capsys)
    assert line["event"] == "retrying watch"
    assert line["level"] == "warning"
    assert line["logger"] == "kubernetes_asyncio.client.rest"
    assert "timestamp" in line


def test_high_verbosity_lets_library_debug_through(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", 6)
    logging.getLogger("aiohttp.client").debug("request sent")
    [line] = json_lines(capsys)
    assert line["event"] == "request sent" and line["level"] == "debug"


def test_configuring_twice_is_idempotent(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", 0)
    configure_logging("json", 0)
    ours = [h for h in logging.getLogger().handlers if type(h).__name__ == "_StderrHandler"]
    assert len(ours) == 1
    get_logger("x").info("once")
    logging.getLogger("aiohttp").error("also once")
    assert [line["event"] for line in json_lines(capsys)] == ["once", "also once"]


def test_reconfiguring_applies_to_loggers_created_earlier(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = get_logger("module.level")  # as a module would, before configuration
    configure_logging("json", 0)
    log.debug("hidden")
    configure_logging("json", 2)
    log.debug("shown")
    assert [line["event"] for line in json_lines(capsys)] == ["shown"]


def test_text_format_is_human_readable(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("text", 0)
    pod_logger(get_logger("cycle"), "ns/p", "default").info("scheduled", node="n1")
    err = capsys.readouterr().err
    assert "scheduled" in err and "pod=ns/p" in err and "node=n1" in err
    assert not err.lstrip().startswith("{")


def test_exceptions_become_a_json_field(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", 0)
    try:
        raise RuntimeError("plugin exploded")
    except RuntimeError:
        get_logger("x").exception("binding failed")
    [line] = json_lines(capsys)
    assert line["level"] == "error"
    assert "RuntimeError: plugin exploded" in line["exception"]


def test_unserialisable_values_do_not_break_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", 0)
    get_logger("x").info("odd", value=object(), ids={1: "a"})
    [line] = json_lines(capsys)
    assert line["value"].startswith("<object object")
    assert line["ids"] == {"1": "a"}


async def test_pod_context_tags_every_logger_and_follows_tasks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("json", 0)

    async def bind_cycle(pod: str) -> None:
        with pod_context(pod, "default", attempt=1):
            await asyncio.sleep(0)
            structlog.get_logger().info("binding")

    await asyncio.gather(bind_cycle("ns/a"), bind_cycle("ns/b"))
    get_logger("x").info("outside")
    lines = json_lines(capsys)
    tagged = sorted((line["pod"], line["profile"], line["attempt"]) for line in lines[:2])
    assert tagged == [("ns/a", "default", 1), ("ns/b", "default", 1)]
    assert "pod" not in lines[2]
