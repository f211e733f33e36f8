"""Request parsing shared by the handlers: URL shapes, query values, bodies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from scheduler.simulation.emulator import statuserrors

_TRUE = frozenset({"1", "t", "T", "true", "True", "TRUE"})
_FALSE = frozenset({"0", "f", "F", "false", "False", "FALSE"})
# Paths under /api/v1/namespaces/{name}/ that are the namespace's own subresources.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(slots=True)
class ResourcePath:
    group: str
    version: str
    resource: str
    namespace: str | None
    name: str
    subresource: str
    legacy_watch: bool


@dataclass(slots=True)
class DiscoveryPath:
    """``/api``, ``/apis``, ``/apis/{group}`` or a group-version's resource list."""

    kind: str
    group: str = ""
    version: str = ""


def parse_path(path: str) -> ResourcePath | DiscoveryPath | None:
    segs = [s for s in path.split("/") if s]
    if not segs:
        return None
    if segs[0] == "api":
        if len(segs) == 1:
            return DiscoveryPath("api")
        group, version, rest = "", segs[1], segs[2:]
    elif segs[0] == "apis":
        if len(segs) == 1:
            return DiscoveryPath("apis")
        if len(segs) == 2:
            return DiscoveryPath("group", segs[1])
        group, version, rest = segs[1], segs[2], segs[3:]
    else:
        return None
    if not rest:
        return DiscoveryPath("resources", group, version)
    legacy_watch = False
    if rest[0] == "watch":
        legacy_watch, rest = True, rest[1:]
        if not rest:
            return None
    namespace: str | None = None
    # /namespaces/{ns}/{resource}... but not /namespaces/{ns}/status (the namespace itself)
    if rest[0] == "namespaces" and len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    return ResourcePath(
        group,
        version,
        rest[0],
        namespace,
        rest[1] if len(rest) > 1 else "",
        rest[2] if len(rest) > 2 else "",
        legacy_watch,
    )


def parse_bool(value: str | None, name: str) -> bool:
    if value is None or value == "":
        return False
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise statuserrors.bad_request(f'invalid boolean value for {name}: "{value}"')


def parse_int(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise statuserrors.bad_request(f'invalid value for {name}: "{value}"') from exc


def body_content_type(request: Any) -> str:
    """The request body's media type; none given means JSON, as kube-apiserver decides.

    (kube's input negotiation takes the first supported type, JSON, for an
    empty Content-Type; aiohttp would report application/octet-stream.)
    """
    if not request.headers.get("Content-Type"):
        return "application/json"
    return str(request.content_type)


def decode_body(data: bytes, content_type: str, what: str) -> Any:
    """JSON (or YAML) request body; anything undecodable is a 400 like the apiserver's."""
    if content_type in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            return yaml.safe_load(data)
        except yaml.YAMLError as exc:
            raise statuserrors.bad_request(
                f"the object provided is unrecognized (must be of type {what}): {exc}"
            ) from exc
    if content_type and content_type not in ("application/json", "*/*", "text/plain"):
        raise statuserrors.unsupported_media_type(
            content_type, ["application/json", "application/yaml"]
        )
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise statuserrors.bad_request(
            f"the object provided is unrecognized (must be of type {what}): "
            f"couldn't get version/kind; json parse error: {exc}"
        ) from exc
