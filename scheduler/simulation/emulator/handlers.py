"""HTTP handlers for resource requests: the Kubernetes REST verbs over the store."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from scheduler.simulation.emulator import schema, statuserrors
from scheduler.simulation.emulator.http import (
    ResourcePath,
    body_content_type,
    decode_body,
    parse_bool,
    parse_int,
)
from scheduler.simulation.emulator.patch import (
    PatchError,
    json_patch,
    merge_patch,
    strategic_merge,
    validate_json_patch,
)
from scheduler.simulation.emulator.queryselectors import (
    QuerySelectorError,
    parse_field_query,
    parse_label_query,
)
from scheduler.simulation.emulator.resources import ResourceType
from scheduler.simulation.emulator.tables import TableEncoder, printer_for, table_version
from scheduler.simulation.emulator.watch import Entry, Watcher, bookmark_line, event_line

if TYPE_CHECKING:
    from scheduler.simulation.emulator.server import EmulatorServer

JSON = "application/json"
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_SUCCESS_201 = orjson.dumps(
    {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
)
# kube-apiserver's default --min-request-timeout; watches without
# timeoutSeconds last between one and two of these.
MIN_REQUEST_TIMEOUT = 1800.0


def json_response(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, headers={"Content-Type": JSON})


def _served(rt: ResourceType, entry: Entry) -> dict[str, Any]:
    """The object as ``rt``'s API version serves it."""
    return rt.codec.to_served(entry.obj) if rt.codec else entry.obj


def verb_of(method: str, rp: ResourcePath, watch: bool) -> str:
    if method == "GET":
        if rp.name:
            return "watch" if watch else "get"
        return "watch" if watch else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if rp.name else "deletecollection"
    return method.lower()


class ResourceHandlers:
    def __init__(self, server: EmulatorServer) -> None:
        self.server = server
        self.store = server.store

    def resolve(self, rp: ResourcePath) -> ResourceType:
        rt = self.store.registry.lookup(rp.group, rp.version, rp.resource)
        if rt is None:
            raise statuserrors.path_not_found()
        if rp.namespace is not None and not rt.namespaced:
            raise statuserrors.path_not_found()
        if rp.subresource and rp.subresource not in rt.subresources:
            raise statuserrors.path_not_found()
        return rt

    async def handle(
        self, request: web.BaseRequest, rp: ResourcePath, verb: str
    ) -> web.StreamResponse:
        rt = self.resolve(rp)
        ns = rp.namespace or ""
        if verb in ("list", "watch") and rp.legacy_watch:
            verb = "watch"
        if verb not in rt.verbs and not rp.subresource:
            raise statuserrors.method_not_allowed()
        if (
            rt.namespaced
            and rp.namespace is None
            and verb not in ("list", "watch")
            and not (verb == "watch" and rp.name)
        ):
            raise (
                statuserrors.method_not_allowed()
                if verb == "create"
                else statuserrors.path_not_found()
            )
        if verb == "list":
            return self.list(request, rt, rp)
        if verb == "watch":
            return await self.watch(request, rt, rp)
        if verb == "get":
            if rp.subresource not in ("", "status"):
                raise statuserrors.method_not_allowed()
            entry = self.store.entry(rt, ns, rp.name)
            tables = self._table_encoder(request, rt) if not rp.subresource else None
            if tables is not None:
                obj = _served(rt, entry)
                rv = obj["metadata"].get("resourceVersion", "")
                return json_response(tables.table([obj], {"resourceVersion": rv}))
            return json_response(entry.encoded(rt.codec))
        if verb == "create":
            return await self.create(request, rt, rp)
        if verb == "update":
            body = await self._object_body(request, rt)
            if rp.subresource not in ("", "status"):
                raise statuserrors.method_not_allowed()
            entry, created = self.store.update_entry(
                rt, ns, rp.name, body, subresource=rp.subresource
            )
            return json_response(entry.encoded(rt.codec), 201 if created else 200)
        if verb == "patch":
            return await self.patch(request, rt, rp)
        if verb == "delete":
            return await self.delete(request, rt, rp)
        if verb == "deletecollection":
            return await self.delete_collection(request, rt, rp)
        raise statuserrors.method_not_allowed()

    async def _object_body(self, request: web.BaseRequest, rt: ResourceType) -> dict[str, Any]:
        body = decode_body(await request.read(), body_content_type(request), rt.kind)
        if not isinstance(body, dict):
            raise statuserrors.bad_request(
                f"the object provided is unrecognized (must be of type {rt.kind})"
            )
        return body

    async def create(
        self, request: web.BaseRequest, rt: ResourceType, rp: ResourcePath
    ) -> web.Response:
        ns = rp.namespace or ""
        if rp.subresource == "binding":
            body = decode_body(await request.read(), body_content_type(request), "Binding")
            if not isinstance(body, dict):
                raise statuserrors.bad_request(
                    "the object provided is unrecognized (must be of type Binding)"
                )
            self.store.bind(ns, rp.name, schema.check(rt, body, kind="Binding"))
            return json_response(_SUCCESS_201, 201)
        if rp.name or rp.subresource:
            raise statuserrors.method_not_allowed()
        body = await self._object_body(request, rt)
        entry = self.store.create_entry(rt, body, namespace=rp.namespace, admit=True)
        return json_response(entry.encoded(rt.codec), 201)

    async def patch(
        self, request: web.BaseRequest, rt: ResourceType, rp: ResourcePath
    ) -> web.Response:
        if rp.subresource not in ("", "status"):
            raise statuserrors.method_not_allowed()
        content_type = request.content_type
        supported = [t for t in PATCH_TYPES if rt.strategic_merge or "strategic" not in t]
        if content_type not in supported or content_type == "application/apply-patch+yaml":
            raise statuserrors.unsupported_media_type(content_type or "none", supported)
        raw = await request.read()
        try:
            patch = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise statuserrors.bad_request(f"error decoding patch: {exc}") from exc
        if content_type == "application/json-patch+json":
            try:
                ops = validate_json_patch(patch)
            except ValueError as exc:
                raise statuserrors.bad_request(str(exc)) from exc

            def change(obj: dict[str, Any]) -> dict[str, Any]:
                try:
                    result: dict[str, Any] = json_patch(obj, ops)
                except PatchError as exc:
                    raise statuserrors.ApiError(422, "Invalid", str(exc)) from exc
                return result
        else:
            if not isinstance(patch, dict):
                raise statuserrors.bad_request("patch body must be a JSON object")
            strategic = content_type == "application/strategic-merge-patch+json"

            def change(obj: dict[str, Any]) -> dict[str, Any]:
                if not strategic:
                    result: dict[str, Any] = merge_patch(obj, patch)
                    return result
                try:
                    merged = strategic_merge(obj, patch)
                except PatchError as exc:
                    raise statuserrors.ApiError(422, "Invalid", str(exc)) from exc
                if merged is None:
                    raise statuserrors.ApiError(
                        422, "Invalid", "$patch: delete is not allowed at the top level"
                    )
                return merged

        entry = self.store.mutate(
            rt, rp.namespace or "", rp.name, change, subresource=rp.subresource
        )
        return json_response(entry.encoded(rt.codec))

    async def _delete_options(self, request: web.BaseRequest) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if request.can_read_body:
            raw = await request.read()
            if raw.strip():
                body = decode_body(
                    raw,
                    request.content_type
                    if request.content_type != "application/octet-stream"
                    else "",
                    "DeleteOptions",
                )
                if isinstance(body, dict):
                    options = body
        grace = parse_int(request.query.get("gracePeriodSeconds"), "gracePeriodSeconds")
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        return options

    async def delete(
        self, request: web.BaseRequest, rt: ResourceType, rp: ResourcePath
    ) -> web.Response:
        if rp.subresource:
            raise statuserrors.method_not_allowed()
        options = await self._delete_options(request)
        entry, gone = self.store.delete_entry(rt, rp.namespace or "", rp.name, options)
        if gone and not rt.return_deleted_object:
            meta = entry.obj["metadata"]
            details: dict[str, Any] = {"name": rp.name, "kind": rt.plural, "uid": meta.get("uid")}
            if rt.group:
                details["group"] = rt.group
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            }
            return json_response(orjson.dumps(status))
        return json_response(entry.encoded(rt.codec))

    async def delete_collection(
        self, request: web.BaseRequest, rt: ResourceType, rp: ResourcePath
    ) -> web.Response:
        options = await self._delete_options(request)
        labels, fields = self._selectors(request, rt)
        entries, _, _, _ = self.store.list_entries(rt, rp.namespace, labels, fields)
        deleted: list[Entry] = []
        for entry in entries:
            meta = entry.obj["metadata"]
            try:
                gone_entry, _ = self.store.delete_entry(
                    rt, meta.get("namespace", ""), meta["name"], dict(options)
                )
            except statuserrors.ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(gone_entry)
        return json_response(self._list_body(rt, deleted, self.store.rv, "", 0))

    def _selectors(self, request: web.BaseRequest, rt: ResourceType) -> tuple[Any, Any]:
        try:
            labels = parse_label_query(request.query.get("labelSelector"))
            fields = parse_field_query(
                request.query.get("fieldSelector"), self.store.supported_fields(rt)
            )
        except QuerySelectorError as exc:
            raise statuserrors.bad_request(str(exc)) from exc
        return labels, fields

    def _list_body(
        self, rt: ResourceType, entries: list[Entry], rv: int, token: str, remaining: int
    ) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
            if remaining:
                meta["remainingItemCount"] = remaining
        head = (
            b'{"kind":"'
            + rt.list_kind_name.encode()
            + b'","apiVersion":"'
            + rt.api_version.encode()
        )
        codec = rt.codec
        items = b",".join([e.encoded(codec) for e in entries])
        return head + b'","metadata":' + orjson.dumps(meta) + b',"items":[' + items + b"]}"

    def _table_encoder(self, request: web.BaseRequest, rt: ResourceType) -> TableEncoder | None:
        """A Table encoder when the client's Accept header asks for a Table (kubectl get)."""
        version = table_version(request.headers.get("Accept", ""))
        printer = printer_for(rt) if version is not None else None
        if version is None or printer is None:
            return None
        return TableEncoder(printer, version, request.query.get("includeObject", ""))

    def list(self, request: web.BaseRequest, rt: ResourceType, rp: ResourcePath) -> web.Response:
        q = request.query
        tables = self._table_encoder(request, rt)
        labels, fields = self._selectors(request, rt)
        limit = parse_int(q.get("limit"), "limit") or 0
        match = q.get("resourceVersionMatch", "")
        rv = q.get("resourceVersion", "")
        if match and match not in ("Exact", "NotOlderThan"):
            raise statuserrors.bad_request(f'resourceVersionMatch: Unsupported value: "{match}"')
        if match and not rv:
            raise statuserrors.invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                [
                    (
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden "
                        "unless resourceVersion is provided",
                    )
                ],
            )
        if match == "Exact" and rv == "0":
            raise statuserrors.invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                [
                    (
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        'Forbidden: resourceVersionMatch "exact" is forbidden '
                        'for resourceVersion "0"',
                    )
                ],
            )
        entries, list_rv, token, remaining = self.store.list_entries(
            rt,
            rp.namespace,
            labels,
            fields,
            limit=max(limit, 0),
            continue_token=q.get("continue", ""),
            resource_version=rv,
            match=match,
        )
        if tables is not None:
            meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
            if token:
                meta["continue"] = token
                if remaining:
                    meta["remainingItemCount"] = remaining
            return json_response(tables.table([_served(rt, e) for e in entries], meta))
        return json_response(self._list_body(rt, entries, list_rv, token, remaining))

    async def watch(
        self, request: web.BaseRequest, rt: ResourceType, rp: ResourcePath
    ) -> web.StreamResponse:
        q = request.query
        labels, fields = self._selectors(request, rt)
        if rp.name:
            fields = parse_field_query(
                ",".join(filter(None, [q.get("fieldSelector"), f"metadata.name={rp.name}"])),
                self.store.supported_fields(rt),
            )
        tables = self._table_encoder(request, rt)
        bookmarks = parse_bool(q.get("allowWatchBookmarks"), "allowWatchBookmarks")
        initial = parse_bool(q.get("sendInitialEvents"), "sendInitialEvents")
        timeout = parse_int(q.get("timeoutSeconds"), "timeoutSeconds")
        rv_text = q.get("resourceVersion", "")
        if initial and (q.get("resourceVersionMatch") != "NotOlderThan" or not bookmarks):
            raise statuserrors.invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                [
                    (
                        "sendInitialEvents",
                        "FieldValueForbidden",
                        "Forbidden: sendInitialEvents requires setting "
                        "resourceVersionMatch to NotOlderThan "
                        "and allowWatchBookmarks to true",
                    )
                ],
            )
        fresh = rv_text in ("", "0") or initial
        since = None if fresh else parse_int(rv_text, "resourceVersion")
        store = self.store
        watcher = Watcher(
            rt,
            rp.namespace,
            labels,
            fields,
            store.field_values(rt),
            store.rv if since is None else since,
        )
        loop = asyncio.get_running_loop()
        duration = (
            float(timeout)
            if timeout is not None and timeout > 0
            else MIN_REQUEST_TIMEOUT * (1 + random.random())
        )
        deadline = loop.time() + duration
        response = web.StreamResponse(
            status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"}
        )
        response.enable_chunked_encoding()
        try:
            backlog = store.add_watcher(rt, watcher, since)
        except statuserrors.ApiError as exc:
            await response.prepare(request)
            await response.write(event_line("ERROR", exc.body()))
            await response.write_eof()
            return response
        # kubectl get --watch: every event's object becomes a one-row Table.
        encode: Callable[[bytes], bytes] = tables.watch_lines if tables else bytes
        self.server.watch_started(watcher, request)
        try:
            await response.prepare(request)
            first = b"".join(backlog) + watcher.drain()
            if initial:
                first += bookmark_line(rt, store.rv, initial_events_end=True)
            if first:
                await response.write(encode(first))
            next_bookmark = self._next_bookmark(loop.time(), deadline) if bookmarks else None
            while True:
                if watcher.buffer:
                    await response.write(encode(watcher.drain()))
                    continue
                if watcher.closed or loop.time() >= deadline:
                    break
                wake_at = deadline if next_bookmark is None else min(deadline, next_bookmark)
                watcher.wake.clear()
                try:
                    async with asyncio.timeout_at(wake_at):
                        await watcher.wake.wait()
                except TimeoutError:
                    pass
                if (
                    next_bookmark is not None
                    and loop.time() >= next_bookmark
                    and not watcher.closed
                ):
                    data = watcher.drain() + bookmark_line(rt, store.rv)
                    await response.write(encode(data))
                    next_bookmark = self._next_bookmark(loop.time(), deadline)
            if watcher.abort:
                if request.transport is not None:
                    request.transport.abort()
                return response
            if watcher.error is not None:
                await response.write(watcher.error)
            await response.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            store.remove_watcher(rt, watcher)
            self.server.watch_ended(watcher)
        return response

    def _next_bookmark(self, now: float, deadline: float) -> float | None:
        """Bookmarks every ``bookmark_interval`` (kube-apiserver: about a minute)."""
        at = now + self.server.bookmark_interval
        return at if at < deadline else None
