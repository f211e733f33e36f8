"""Watch fan-out: each committed change becomes at most one line per watcher.

The store calls :meth:`Watcher.offer` synchronously inside the write, so a
watcher's buffer always holds every event up to the store's current
resourceVersion; that is what makes a BOOKMARK carrying that version honest.
Lines are encoded once per change and API view and shared by all watchers,
and a watcher flushes everything buffered in one write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson

from scheduler.simulation.emulator.queryselectors import FieldQuery, LabelQuery
from scheduler.simulation.emulator.resources import Codec, ResourceType

Obj = dict[str, Any]

# A watcher that falls this far behind is closed, as kube-apiserver closes
# watchers whose buffer fills; the client re-watches from its last version.
MAX_BUFFERED = 200_000


class Entry:
    """A stored object with its identity (stored-form) JSON encoding."""

    __slots__ = ("obj", "raw", "views")

    def __init__(self, obj: Obj, raw: bytes | None = None) -> None:
        self.obj = obj
        self.raw = raw if raw is not None else orjson.dumps(obj)
        self.views: dict[str, bytes] | None = None

    def encoded(self, codec: Codec | None) -> bytes:
        if codec is None:
            return self.raw
        if self.views is None:
            self.views = {}
        data = self.views.get(codec.name)
        if data is None:
            data = orjson.dumps(codec.to_served(self.obj))
            self.views[codec.name] = data
        return data


class Change:
    """One committed write: its resourceVersion, type, and before/after state."""

    __slots__ = ("entry", "key", "lines", "prev", "rv", "type")

    def __init__(
        self, rv: int, type_: str, key: tuple[str, str], entry: Entry, prev: Entry | None
    ) -> None:
        self.rv = rv
        self.type = type_
        self.key = key
        self.entry = entry
        self.prev = prev
        self.lines: dict[str, bytes] | None = None

    def line(self, codec: Codec | None) -> bytes:
        name = codec.name if codec else ""
        if self.lines is None:
            self.lines = {}
        data = self.lines.get(name)
        if data is None:
            data = event_line(self.type, self.entry.encoded(codec))
            self.lines[name] = data
        return data


def event_line(type_: str, obj: bytes) -> bytes:
    return b'{"type":"' + type_.encode() + b'","object":' + obj + b"}\n"


class Watcher:
    def __init__(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelQuery,
        fields: FieldQuery,
        field_values: Callable[[Obj], dict[str, str]],
        after_rv: int,
    ) -> None:
        self.rt = rt
        self.codec = rt.codec
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.field_values = field_values
        self.after_rv = after_rv
        self.filtered = not labels.empty or not fields.empty
        self.buffer: list[bytes] = []
        self.wake = asyncio.Event()
        self.closed = False
        self.error: bytes | None = None
        self.abort = False

    def matches(self, obj: Obj) -> bool:
        if not self.labels.empty and not self.labels.matches(obj["metadata"].get("labels")):
            return False
        return self.fields.empty or self.fields.matches(self.field_values(obj))

    def push(self, line: bytes) -> None:
        self.buffer.append(line)
        if len(self.buffer) > MAX_BUFFERED:
            self.close()
        self.wake.set()

    def offer(self, change: Change) -> None:
        if self.closed or change.rv <= self.after_rv:
            return
        if self.namespace is not None and change.key[0] != self.namespace:
            return
        if not self.filtered:
            self.push(change.line(self.codec))
            return
        cur = change.type != "DELETED" and self.matches(change.entry.obj)
        old = change.prev is not None and self.matches(change.prev.obj)
        if cur and old:
            self.push(
                change.line(self.codec)
                if change.type == "MODIFIED"
                else event_line("MODIFIED", change.entry.encoded(self.codec))
            )
        elif cur:
            self.push(
                change.line(self.codec)
                if change.type == "ADDED"
                else event_line("ADDED", change.entry.encoded(self.codec))
            )
        elif old and change.prev is not None:
            # kube-apiserver: previous content, stamped with the event's version.
            if change.type == "DELETED":
                self.push(change.line(self.codec))
            else:
                gone = dict(change.prev.obj)
                gone["metadata"] = {**gone["metadata"], "resourceVersion": str(change.rv)}
                data = orjson.dumps(self.codec.to_served(gone) if self.codec else gone)
                self.push(event_line("DELETED", data))

    def send_error(self, status: Obj) -> None:
        self.error = event_line("ERROR", orjson.dumps(status))
        self.close()

    def close(self, *, abort: bool = False) -> None:
        self.closed = True
        self.abort = self.abort or abort
        self.wake.set()

    def drain(self) -> bytes:
        data = b"".join(self.buffer)
        self.buffer.clear()
        return data


def bookmark_line(rt: ResourceType, rv: int, *, initial_events_end: bool = False) -> bytes:
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return event_line(
        "BOOKMARK", orjson.dumps({"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta})
    )
