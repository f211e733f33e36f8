"""Errors of the kube adapter: API failures as typed exceptions.

Callers branch on the kind of failure (a 409 on a binding means "someone else
placed the pod", a 410 on a watch means "re-list"), so every non-2xx answer is
mapped to a subclass of :class:`ApiError` carrying the API server's
``status``/``reason``/``message``. The string form names the request (method
and path) and the object it was about, because "409 Conflict" alone in a log
line does not tell an operator which pod or lease was involved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "AlreadyExists",
    "ApiError",
    "Conflict",
    "Gone",
    "NotFound",
    "ServerError",
    "TooManyRequests",
    "TransportError",
    "describe_object",
    "error_from_response",
]


def describe_object(path: str) -> str:
    """Name the object a URL path refers to, e.g. ``pods/binding "ns/name"``.

    Messages derived from the path stay useful even when the server's body is
    empty or not a Status (a proxy's 502 page, a dropped connection).
    """
    segs = [s for s in path.split("?", 1)[0].split("/") if s]
    if segs[:1] == ["api"]:
        rest = segs[2:]
    elif segs[:1] == ["apis"]:
        rest = segs[3:]
    else:
        return path
    if rest[:1] == ["watch"]:
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return f'namespaces "{namespace}"' if namespace else path
    resource = rest[0]
    if len(rest) >= 3:
        resource = f"{rest[0]}/{rest[2]}"
    if len(rest) >= 2:
        name = f"{namespace}/{rest[1]}" if namespace else rest[1]
        return f'{resource} "{name}"'
    return f'{resource} in namespace "{namespace}"' if namespace else f"{resource} (all)"


class ApiError(Exception):
    """A request the API server (or the connection to it) did not complete.

    ``status`` is the HTTP code (0 for transport failures), ``reason`` the
    Status reason (``NotFound``, ``Conflict``, ``AlreadyExists``, ...),
    ``message`` the server's own message; ``method``/``path`` identify the
    request and ``object`` what it was about.
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        method: str = "",
        path: str = "",
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.method = method
        self.path = path
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after
        self.object = describe_object(path) if path else ""
        super().__init__(self._render())

    def _render(self) -> str:
        request = f"{self.method} {self.path}".strip()
        about = f" ({self.object})" if self.object else ""
        code = f"{self.status} {self.reason}" if self.status else self.reason
        return f"{request}{about}: {code}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:  # keep exceptions picklable for logging handlers
        return (
            _rebuild,
            (
                type(self),
                self.status,
                self.reason,
                self.message,
                self.method,
                self.path,
                dict(self.details),
                self.retry_after,
            ),
        )


def _rebuild(
    cls: type[ApiError],
    status: int,
    reason: str,
    message: str,
    method: str,
    path: str,
    details: dict[str, Any],
    retry_after: float | None,
) -> ApiError:
    return cls(
        status, reason, message, method=method, path=path, details=details, retry_after=retry_after
    )


class NotFound(ApiError):
    """404: the object (or the resource type) does not exist."""


class Conflict(ApiError):
    """409: a precondition (resourceVersion, uid, not yet bound) failed."""


class AlreadyExists(Conflict):
    """409 AlreadyExists: a create raced with another writer of the same name."""


class Gone(ApiError):
    """410: the requested resourceVersion or continue token was compacted; re-list."""


class TooManyRequests(ApiError):
    """429: the server shed the request; ``retry_after`` is its advice in seconds."""


class ServerError(ApiError):
    """5xx: the server failed; the request may or may not have been applied."""


class TransportError(ApiError):
    """No HTTP answer: connection refused, reset, or timed out (``status`` 0)."""


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (kube-apiserver always sends seconds)."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return max(seconds, 0.0)


def error_from_response(
    status: int,
    body: bytes,
    *,
    method: str,
    path: str,
    retry_after_header: str | None = None,
) -> ApiError:
    """Map one failed HTTP answer to the matching :class:`ApiError` subclass."""
    reason = ""
    message = ""
    details: Mapping[str, Any] | None = None
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        reason = str(doc.get("reason") or "")
        message = str(doc.get("message") or "")
        raw_details = doc.get("details")
        if isinstance(raw_details, dict):
            details = raw_details
    elif body:
        message = body[:512].decode("utf-8", "replace").strip()
    retry_after = parse_retry_after(retry_after_header)
    if retry_after is None and details is not None:
        seconds = details.get("retryAfterSeconds")
        if isinstance(seconds, int | float) and seconds > 0:
            retry_after = float(seconds)
    cls: type[ApiError] = ApiError
    if status == 404:
        cls, default_reason = NotFound, "NotFound"
    elif status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
        default_reason = "Conflict"
    elif status == 410:
        cls, default_reason = Gone, "Expired"
    elif status == 429:
        cls, default_reason = TooManyRequests, "TooManyRequests"
    elif 500 <= status < 600:
        cls, default_reason = ServerError, "InternalError"
    else:
        default_reason = "Unknown"
    return cls(
        status,
        reason or default_reason,
        message or f"the server answered HTTP {status}",
        method=method,
        path=path,
        details=details,
        retry_after=retry_after,
    )
