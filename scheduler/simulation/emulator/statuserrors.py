"""API errors rendered as ``kind: Status`` exactly as kube-apiserver words them.

Clients (client-go, kubectl, kubernetes-asyncio) branch on ``reason`` and
``code`` and users read ``message``, so both follow the apiserver's phrasing:
``pods "x" not found``, ``leases.coordination.k8s.io "x" already exists``.
"""

from __future__ import annotations

from typing import Any

import orjson


class ApiError(Exception):
    """A failed request; the server turns it into a Status response."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body

    def body(self) -> bytes:
        return orjson.dumps(self.status())


def _details(group: str, resource: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> ApiError:
    what = qualified(group, resource)
    msg = f'{what} "{name}" not found' if name else f"{what} not found"
    return ApiError(404, "NotFound", msg, _details(group, resource, name))


def already_exists(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(group, resource)} "{name}" already exists',
        _details(group, resource, name),
    )


def conflict(group: str, resource: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(group, resource)} "{name}": {why}',
        _details(group, resource, name),
    )


STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(group: str, kind: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 with one cause per (field, cause reason, message) like field.ErrorList."""
    summary = ", ".join(f"{field}: {message}" for field, _, message in causes)
    if len(causes) > 1:
        summary = f"[{summary}]"
    details = _details(group, kind, name)
    details["causes"] = [
        {"reason": reason, "message": message, "field": field} for field, reason, message in causes
    ]
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message, {})


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unsupported_media_type(content_type: str, supported: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(supported)
        if content_type
        else "the body of the request was in an unknown format",
        {},
    )


def forbidden(group: str, resource: str, name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'{qualified(group, resource)} "{name}" is forbidden: {why}',
        _details(group, resource, name),
    )


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


NAMESPACE_MISMATCH = (
    "the namespace of the provided object does not match the namespace sent on the request"
)


def name_mismatch(body_name: object, url_name: str) -> ApiError:
    return bad_request(
        f"the name of the object ({body_name}) does not match the name on the URL ({url_name})"
    )


def uid_precondition(
    group: str, resource: str, name: str, wanted: object, have: object
) -> ApiError:
    why = f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {have}"
    return conflict(group, resource, name, why)
