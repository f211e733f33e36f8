"""EventRecorder: ``events.k8s.io/v1`` Events, aggregated and sent in the background.

A scheduler emits an event per attempt (``Scheduled``, ``FailedScheduling``
with "0/N nodes are available: ..."), and an unschedulable pod retried every
few seconds would otherwise write thousands of identical objects. So, like
client-go's events library, repeats of the same event about the same object
within ``series_window`` (6 minutes, client-go's series finish time) become a
``series`` - the first occurrence is created, later ones PATCH
``series.count``/``series.lastObservedTime`` of that one object.

Recording must never slow scheduling: :meth:`EventRecorder.record` is a
synchronous O(1) append to a bounded queue, a background task does the HTTP
on the client's LOW priority (so bindings overtake queued events), repeats
still waiting in the queue are coalesced into one write carrying the latest
count, and when the queue is full the oldest pending write is dropped and
counted in :attr:`EventRecorder.dropped` - losing an old event beats stalling
the scheduler or growing memory without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from scheduler.kube.apierrors import AlreadyExists, ApiError, NotFound
from scheduler.kube.client import MERGE_PATCH, KubeClient
from scheduler.kube.leaderelection import micro_time

__all__ = ["EventRecorder", "object_reference"]

log = structlog.get_logger("scheduler.kube.eventrecorder")

Obj = dict[str, Any]
# events.k8s.io/v1 validation limits (bytes for note, characters otherwise).
NOTE_LIMIT = 1024
REASON_LIMIT = 128
ACTION_LIMIT = 128
SERIES_WINDOW = 360.0


class _HasRaw(Protocol):
    @property
    def raw(self) -> dict[str, Any]: ...


def object_reference(obj: Mapping[str, Any] | _HasRaw) -> Obj:
    """An ObjectReference for an object (raw JSON or anything with ``.raw``) or a reference.

    Pods from list responses carry no kind/apiVersion, so those default to
    core/v1 Pod - the object a scheduler talks about.
    """
    raw: Mapping[str, Any] = obj if isinstance(obj, Mapping) else obj.raw
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        return {k: v for k, v in raw.items() if v not in (None, "")}
    ref: Obj = {
        "apiVersion": raw.get("apiVersion") or "v1",
        "kind": raw.get("kind") or "Pod",
        "name": meta.get("name", ""),
    }
    for source, target in (
        ("namespace", "namespace"),
        ("uid", "uid"),
        ("resourceVersion", "resourceVersion"),
    ):
        if meta.get(source):
            ref[target] = meta[source]
    return ref


def _truncate_bytes(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


@dataclass(eq=False)
class _Series:
    """One aggregated event: what the server holds and what we have observed since."""

    namespace: str
    name: str
    body: Obj
    count: int = 1
    sent_count: int = 0
    created: bool = False
    queued: bool = False
    last_seen: float = 0.0
    last_observed: str = ""

    def create_body(self) -> Obj:
        body = dict(self.body)
        if self.count > 1:
            body["series"] = {"count": self.count, "lastObservedTime": self.last_observed}
        return body


class EventRecorder:
    """Records Events about pods (or any object) without blocking the caller."""

    def __init__(
        self,
        client: KubeClient,
        *,
        reporting_controller: str = "pluggable-scheduler",
        reporting_instance: str | None = None,
        queue_size: int = 1000,
        series_window: float = SERIES_WINDOW,
        cache_size: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.reporting_controller = reporting_controller
        # client-go's default: "<controller>-<hostname>".
        self.reporting_instance = reporting_instance or (
            f"{reporting_controller}-{socket.gethostname()}"
        )
        self.queue_size = max(int(queue_size), 1)
        self.series_window = series_window
        self.cache_size = max(int(cache_size), 1)
        self._clock = clock
        self._cache: OrderedDict[tuple[Any, ...], _Series] = OrderedDict()
        self._queue: deque[_Series] = deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._worker: asyncio.Task[None] | None = None
        self._closed = False
        self.dropped = 0
        self.created = 0
        self.patched = 0
        self.failed = 0

    # -- recording (sync, O(1)) ---------------------------------------------------

    def record(
        self,
        regarding: Mapping[str, Any] | _HasRaw,
        type: str,
        reason: str,
        note: str,
        action: str,
    ) -> None:
        """Queue an event about ``regarding`` (``type`` is Normal or Warning).

        Never blocks and never raises for API reasons; must be called on the
        event loop's thread.
        """
        if self._closed:
            self.dropped += 1
            return
        ref = object_reference(regarding)
        note = _truncate_bytes(note, NOTE_LIMIT)
        reason = reason[:REASON_LIMIT]
        action = (action or reason)[:ACTION_LIMIT]
        key = (
            ref.get("uid") or "",
            ref.get("kind"),
            ref.get("namespace", ""),
            ref.get("name"),
            type,
            reason,
            action,
            note,
        )
        now = self._clock()
        observed = micro_time()
        series = self._cache.get(key)
        if series is not None and now - series.last_seen <= self.series_window:
            series.count += 1
            series.last_seen = now
            series.last_observed = observed
            self._cache.move_to_end(key)
        else:
            series = self._new_series(ref, type, reason, note, action, observed, now)
            self._cache[key] = series
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        self._enqueue(series)

    def _new_series(
        self, ref: Obj, type_: str, reason: str, note: str, action: str, observed: str, now: float
    ) -> _Series:
        namespace = ref.get("namespace") or "default"
        # client-go names events "<object name>.<unix nanos in hex>".
        name = f"{ref.get('name') or 'object'}.{time.time_ns():x}"
        body: Obj = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": observed,
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": ref,
            "note": note,
            "type": type_,
        }
        return _Series(
            namespace=namespace, name=name, body=body, last_seen=now, last_observed=observed
        )

    def _enqueue(self, series: _Series) -> None:
        if series.queued:
            return  # coalesced: the pending write will carry the latest count
        if len(self._queue) >= self.queue_size:
            oldest = self._queue.popleft()
            oldest.queued = False
            self.dropped += 1
        series.queued = True
        self._queue.append(series)
        self._idle.clear()
        self._wake.set()
        self._ensure_worker()

    def _ensure_worker(self) -> None:
        if self._worker is not None and not self._worker.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # started by flush()/start() once a loop runs
        self._worker = loop.create_task(self._run(), name="event-recorder")

    def start(self) -> None:
        """Start the background sender now (it also starts on first record)."""
        self._ensure_worker()

    @property
    def pending(self) -> int:
        return len(self._queue)

    # -- background sending --------------------------------------------------------

    async def _run(self) -> None:
        while True:
            while not self._queue:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
            series = self._queue.popleft()
            series.queued = False
            try:
                await self._send(series)
            except asyncio.CancelledError:
                raise
            except ApiError as error:
                self.failed += 1
                log.warning(
                    "event not recorded",
                    event_object=f"{series.namespace}/{series.name}",
                    reason=series.body.get("reason"),
                    error=str(error),
                )
            except Exception:
                self.failed += 1
                log.exception(
                    "event not recorded", event_object=f"{series.namespace}/{series.name}"
                )

    async def _send(self, series: _Series) -> None:
        count = series.count
        if not series.created:
            await self._create(series, count)
            return
        if count <= series.sent_count:
            return
        patch = {"series": {"count": count, "lastObservedTime": series.last_observed}}
        path = f"/apis/events.k8s.io/v1/namespaces/{series.namespace}/events/{series.name}"
        try:
            await self.client.request(
                "PATCH", path, body=patch, content_type=MERGE_PATCH, priority="low", idempotent=True
            )
        except NotFound:
            # Expired by the server's event TTL: record the series anew.
            series.created = False
            await self._create(series, count)
            return
        series.sent_count = count
        self.patched += 1

    async def _create(self, series: _Series, count: int) -> None:
        path = f"/apis/events.k8s.io/v1/namespaces/{series.namespace}/events"
        try:
            # The name is fixed per series, so retrying a failed POST cannot duplicate it.
            await self.client.request(
                "POST", path, body=series.create_body(), priority="low", idempotent=True
            )
        except AlreadyExists:
            series.created = True
            series.sent_count = 1
            if count > 1:
                await self._send(series)
            return
        series.created = True
        series.sent_count = count
        self.created += 1

    async def flush(self) -> None:
        """Wait until every queued event has been sent (or failed).

        Unbounded by design (bound it with ``asyncio.timeout``): each send is
        itself bounded by the client's request timeout and retry policy.
        """
        if self._queue:
            self._ensure_worker()
        await self._idle.wait()

    async def close(self, grace: float = 5.0) -> None:
        """Flush what is queued (for at most ``grace`` seconds), then stop sending."""
        self._closed = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await self.flush()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self.dropped += len(self._queue)
        self._queue.clear()
        self._idle.set()
