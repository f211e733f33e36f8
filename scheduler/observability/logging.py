"""Structured logging: structlog for our code, the same output for libraries'.

One call, :func:`configure_logging`, sets everything up from the two things
an operator chooses: the format (``json`` for log pipelines, ``text`` for a
terminal) and a klog-style verbosity count (``-v``), so the daemon's flags
read like kube-scheduler's.

Design choices, and why:

- Output goes to ``sys.stderr`` looked up at write time, not captured at
  configuration time, so redirecting stderr later (pytest's ``capsys``, a
  supervisor re-opening the stream) still works.
- Loggers are not cached on first use. Caching would freeze module-level
  loggers on whatever configuration was active when they first logged, which
  breaks reconfiguring (and therefore tests that configure twice). The hot
  path binds concrete loggers once per pod with :func:`pod_logger`, which
  does not go through the lazy proxy again.
- Libraries log through the stdlib (aiohttp, kubernetes-asyncio); their
  records are rendered by the same processors so a log pipeline sees one
  format, and they are held at WARNING because their INFO is per-request
  noise. From ``-v 6`` up (where klog starts logging API requests) they are
  let through at DEBUG.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, Literal, TypeVar

import orjson
import structlog
from structlog.typing import BindableLogger, EventDict, FilteringBoundLogger, Processor

__all__ = [
    "LogFormat",
    "bind_context",
    "configure_logging",
    "get_logger",
    "level_for_verbosity",
    "node_logger",
    "plugin_logger",
    "pod_context",
    "pod_logger",
]

LogFormat = Literal["json", "text"]

DEBUG_VERBOSITY: Final = 2
"""From this ``-v`` on, debug messages are shown (klog's detail levels start here)."""

LIBRARY_DEBUG_VERBOSITY: Final = 6
"""From this ``-v`` on, stdlib library loggers are shown at DEBUG (klog logs requests at 6)."""

L = TypeVar("L", bound=BindableLogger)


QUIET = -1


def level_for_verbosity(verbosity: int) -> int:
    """The stdlib level for a klog-style verbosity: 0-1 info, 2 and more debug.

    ``QUIET`` (-1) shows warnings only: for commands such as ``simulate``
    whose output is the result, not the daemon's running commentary.
    """
    if verbosity < QUIET:
        raise ValueError(f"verbosity must be >= {QUIET}, got {verbosity}")
    if verbosity == QUIET:
        return logging.WARNING
    return logging.DEBUG if verbosity >= DEBUG_VERBOSITY else logging.INFO


class _StderrLogger:
    """The final sink of structlog: one line per event on the current ``sys.stderr``.

    It carries the name given to :func:`get_logger`, which ``_add_logger_name``
    puts in the event as ``logger``: the key stdlib records get too.
    """

    __slots__ = ("name",)

    def __init__(self, name: str = "") -> None:
        self.name = name

    def msg(self, message: str) -> None:
        stream = sys.stderr
        stream.write(message + "\n")
        stream.flush()

    log = debug = info = warn = warning = error = err = critical = exception = fatal = msg


def _stderr_logger_factory(*args: Any) -> _StderrLogger:
    return _StderrLogger(str(args[0]) if args else "")


def _add_logger_name(logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    """Name the logger in the event: the stdlib record's name or our logger's, if any."""
    record = event_dict.get("_record")
    name = record.name if record is not None else getattr(logger, "name", "")
    if name:
        event_dict.setdefault("logger", name)
    return event_dict


class _StderrHandler(logging.Handler):
    """Root handler for stdlib records; writes to the current ``sys.stderr``.

    Its own class so :func:`configure_logging` can find and replace the
    handler it installed earlier, and leave anyone else's alone.
    """

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def _orjson_dumps(obj: Any, default: Any = None, **_kwargs: Any) -> str:
    """JSON serializer for structlog: orjson is several times faster than ``json``."""
    return orjson.dumps(obj, default=default, option=orjson.OPT_NON_STR_KEYS).decode()


def _renderer(fmt: LogFormat) -> Processor:
    if fmt == "json":
        return structlog.processors.JSONRenderer(serializer=_orjson_dumps)
    if fmt == "text":
        isatty = getattr(sys.stderr, "isatty", None)
        colors = bool(isatty and isatty())
        return structlog.dev.ConsoleRenderer(colors=colors)
    raise ValueError(f"unknown log format {fmt!r}; want 'json' or 'text'")


def configure_logging(format: LogFormat = "json", verbosity: int = 0) -> None:
    """Configure structlog and stdlib logging for the whole process.

    Safe to call more than once: each call replaces the previous
    configuration (the structlog processors and the one stdlib handler this
    function installs) instead of adding to it.
    """
    level = level_for_verbosity(verbosity)
    renderer = _renderer(format)
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    # JSON wants the traceback as a string field; the console renderer
    # formats exc_info itself (and prettier), so it must still see it.
    exc: list[Processor] = [structlog.processors.format_exc_info] if format == "json" else []

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _add_logger_name,
        timestamper,
        structlog.processors.StackInfoRenderer(),
    ]
    structlog.configure(
        processors=[*shared, *exc, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        context_class=dict,
        logger_factory=_stderr_logger_factory,
        cache_logger_on_first_use=False,
    )

    handler = _StderrHandler()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *exc,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbosity >= LIBRARY_DEBUG_VERBOSITY else logging.WARNING)


def get_logger(name: str, **initial: Any) -> FilteringBoundLogger:
    """A logger whose lines carry ``logger=name``; safe to create at import time.

    The key is the one stdlib records get, so our lines and libraries' lines
    are filtered the same way.

    It stays a lazy proxy until used, so a module-level logger follows the
    configuration in force when it logs, not the one when it was created.
    """
    logger: FilteringBoundLogger = structlog.get_logger(name, **initial)
    return logger


def bind_context(
    logger: L,
    *,
    pod: str | None = None,
    node: str | None = None,
    plugin: str | None = None,
    profile: str | None = None,
    **extra: Any,
) -> L:
    """``logger`` with the given scheduling context bound; None values are left out.

    The key names (``pod``, ``node``, ``plugin``, ``profile``) are the same
    everywhere so a log query for one pod finds every line about it.
    """
    values: dict[str, Any] = {
        k: v
        for k, v in (("pod", pod), ("node", node), ("plugin", plugin), ("profile", profile))
        if v is not None
    }
    values.update(extra)
    return logger.bind(**values)


def pod_logger(logger: L, pod_key: str, profile: str | None = None) -> L:
    """``logger`` bound to one pod (``namespace/name``) and, if given, its profile."""
    return bind_context(logger, pod=pod_key, profile=profile)


def node_logger(logger: L, node: str) -> L:
    """``logger`` bound to one node."""
    return bind_context(logger, node=node)


def plugin_logger(logger: L, plugin: str, point: str | None = None) -> L:
    """``logger`` bound to one plugin and, if given, the extension point it runs at."""
    if point is None:
        return bind_context(logger, plugin=plugin)
    return bind_context(logger, plugin=plugin, extension_point=point)


@contextmanager
def pod_context(pod_key: str, profile: str | None = None, **extra: Any) -> Iterator[None]:
    """Bind pod (and profile) to every log line in this context, any logger.

    Uses context variables, so it follows an asyncio task: wrapping a binding
    cycle's task body tags lines logged by code that never saw the pod's
    logger (a plugin's own ``get_logger``, the client adapter).
    """
    values: dict[str, Any] = {"pod": pod_key, **extra}
    if profile is not None:
        values["profile"] = profile
    with structlog.contextvars.bound_contextvars(**values):
        yield
