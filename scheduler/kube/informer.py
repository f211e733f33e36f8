"""Informer: a local mirror of one collection, kept current by list + watch.

It follows client-go's reflector because its edge cases are the ones a
scheduler trips over: list first, then watch from the list's resourceVersion
with ``allowWatchBookmarks`` so that quiet collections still advance the
version to resume from; restart watches that time out (``timeoutSeconds``
randomised between 5 and 10 minutes so many informers do not reconnect in
lock-step) from the last version seen; back off exponentially, capped, after
errors and dropped streams; and on 410 Gone re-list and turn the difference
between the local store and the fresh list into add/update/delete
notifications - including deletes that happened while disconnected, which a
plain re-watch can never report.

Handlers get raw dicts and may be plain functions or coroutines; a handler
that raises is logged and does not stop the informer (one bad object must not
blind the scheduler to the rest of the cluster).

An optional ``transform`` (client-go's ``SetTransform``) is applied to every
object as it arrives, before it is stored or handed to a handler:
kube-scheduler uses it to drop ``metadata.managedFields`` (see
:func:`strip_managed_fields`), our daemon also to share what pods have in
common. A list is applied to page by page, so that what a transform drops
from one page is freed before the next page is decoded: the memory a big
list needs at its peak is then that of the transformed objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import structlog

from scheduler.kube.apierrors import ApiError, Gone
from scheduler.kube.client import KubeClient
from scheduler.model.selectors import object_labels

__all__ = ["Informer", "object_key", "strip_managed_fields"]

log = structlog.get_logger("scheduler.kube.informer")

Obj = dict[str, Any]
AddHandler = Callable[[Obj], Awaitable[None] | None]
UpdateHandler = Callable[[Obj, Obj], Awaitable[None] | None]
DeleteHandler = Callable[[Obj], Awaitable[None] | None]
Transform = Callable[[Obj], Obj]

# A watch that ends cleanly sooner than this without delivering anything is
# treated like a failure, so a server that closes at once is not hammered.
_MIN_HEALTHY_WATCH = 1.0

# The fewest changes the change log remembers (``Informer.changed_since``).
_LOG_MIN = 1024


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` for namespaced objects, ``name`` otherwise (client-go's key)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = str(meta.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop ``metadata.managedFields`` (server-side apply bookkeeping); returns ``obj``.

    kube-scheduler's informers do the same: the field is often the biggest
    part of an object and no scheduling decision reads it.
    """
    meta = obj.get("metadata") if type(obj) is dict else None
    if type(meta) is dict:
        meta.pop("managedFields", None)
    return obj


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Informer:
    """List-then-watch mirror of ``path`` (e.g. ``/api/v1/pods``) with change handlers.

    ``store`` maps keys (see :func:`object_key`) to the latest object (as
    ``transform`` returned it); ``has_synced`` is set once the first list has
    been delivered to the handlers; ``resource_version`` is where the next
    watch resumes.
    """

    def __init__(
        self,
        client: KubeClient,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
        transform: Transform | None = None,
        page_size: int = 500,
        watch_timeout: tuple[float, float] = (300.0, 600.0),
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
        backoff_reset_after: float = 120.0,
    ) -> None:
        self.client = client
        self.path = path
        self.query = dict(query or {})
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self.transform = transform
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.backoff_reset_after = backoff_reset_after
        self.store: dict[str, Obj] = {}
        #: Bumped whenever the store's contents change, so readers can keep
        #: what they derive from it until it moves (ObjectStore.revision).
        self.revision = 0
        # The key changed at each revision after ``_log_base``, in order
        # (changed_since); cleared by a re-list, trimmed once it outgrows the store.
        self._log: list[str] = []
        self._log_base = 0
        # Label key -> value -> object key -> object, for the keys someone asked
        # for (by_label); kept up to date with every event from then on.
        self._label_index: dict[str, dict[str, dict[str, Obj]]] = {}
        self.has_synced = asyncio.Event()
        self.resource_version = ""
        self.lists = 0
        self.watches = 0
        self._stopping = False
        self._task: asyncio.Task[Any] | None = None
        self._failures = 0

    # -- lifecycle ---------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled or :meth:`stop` is called."""
        self._task = asyncio.current_task()
        need_list = True
        try:
            while not self._stopping:
                if need_list:
                    try:
                        await self._list()
                    except ApiError as error:
                        log.warning("list failed", path=self.path, error=str(error))
                        await self._backoff(error)
                        continue
                    need_list = False
                need_list = await self._watch_once()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self._stopping and task is not None and task.uncancel() == 0:
                return
            raise
        finally:
            self._task = None

    def stop(self) -> None:
        """End :meth:`run` (it returns normally); safe to call from a handler."""
        self._stopping = True
        task = self._task
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    # -- list --------------------------------------------------------------------

    async def _list(self) -> None:
        # No resourceVersion=0: kube-apiserver answers that from its watch
        # cache in one piece, ignoring ``limit``, so 150,000 pods arrive as one
        # response of hundreds of MB, decoded whole before any transform runs
        # (kube-scheduler 1.36 streams its initial list as watch events
        # instead). A consistent list is paged, and each page is transformed
        # and freed before the next one is read.
        query = dict(self.query)
        items, rv = await self.client.list(
            self.path, query, limit=self.page_size, transform=self.transform
        )
        self.lists += 1
        await self._replace(items, rv)
        self.has_synced.set()

    async def _replace(self, items: list[Obj], rv: str) -> None:
        """Swap in a fresh list, notifying the difference against the old store."""
        old = self.store
        fresh: dict[str, Obj] = {}
        for item in items:
            fresh[object_key(item)] = item
        self.store = fresh
        self.revision += 1
        self._log.clear()  # anything may have changed: readers start over
        self._log_base = self.revision
        for label in self._label_index:
            self._label_index[label] = self._build_label_index(label)
        self.resource_version = rv
        for key, item in fresh.items():
            previous = old.get(key)
            if previous is None:
                await self._notify(self.on_add, item)
            elif _rv(previous) != _rv(item):
                await self._notify(self.on_update, previous, item)
        for key, previous in old.items():
            if key not in fresh:
                await self._notify(self.on_delete, previous)

    # -- watch -------------------------------------------------------------------

    async def _watch_once(self) -> bool:
        """One watch request; returns True when a re-list is needed."""
        low, high = self.watch_timeout
        timeout = int(random.uniform(low, high))
        query = dict(self.query)
        query.update(
            {
                "allowWatchBookmarks": "true",
                "resourceVersion": self.resource_version,
                "timeoutSeconds": str(max(timeout, 1)),
            }
        )
        loop = asyncio.get_running_loop()
        started = loop.time()
        delivered = 0
        self.watches += 1
        try:
            async with contextlib.aclosing(self.client.watch(self.path, query)) as stream:
                async for kind, obj in stream:
                    delivered += 1
                    await self._apply(kind, obj)
                    if self._stopping:  # stop() called from a handler
                        return False
        except Gone as error:
            log.info("watch expired; re-listing", path=self.path, error=error.message)
            return True
        except ApiError as error:
            log.warning("watch failed", path=self.path, error=str(error))
            await self._backoff(error)
            return False
        if delivered == 0 and loop.time() - started < _MIN_HEALTHY_WATCH:
            await self._backoff(None)
        elif loop.time() - started >= self.backoff_reset_after or delivered:
            self._failures = 0
        return False

    async def _apply(self, kind: str, obj: Obj) -> None:
        rv = _rv(obj)
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        if self.transform is not None:
            obj = self.transform(obj)
        key = object_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            previous = self.store.get(key)
            self.store[key] = obj
            self._changed(key)
            if self._label_index:
                self._reindex(key, previous, obj)
            if rv:
                self.resource_version = rv
            if previous is None:
                await self._notify(self.on_add, obj)
            else:
                await self._notify(self.on_update, previous, obj)
        elif kind == "DELETED":
            previous = self.store.pop(key, None)
            self._changed(key)
            if self._label_index:
                self._reindex(key, previous, None)
            if rv:
                self.resource_version = rv
            await self._notify(self.on_delete, obj)
        else:
            log.warning("unknown watch event type", path=self.path, type=kind)

    # -- change log --------------------------------------------------------------

    def _changed(self, key: str) -> None:
        self.revision += 1
        log = self._log
        log.append(key)
        keep = max(_LOG_MIN, len(self.store))
        if len(log) > 2 * keep:  # trimmed in halves: amortized O(1) per event
            drop = len(log) - keep
            del log[:drop]
            self._log_base += drop

    def changed_since(self, revision: int) -> set[str] | None:
        """Keys of the objects that changed after ``revision``; None if not remembered.

        The log keeps at least as many changes as the store has objects: a
        reader further behind re-reads everything, which then costs no more.
        """
        start = revision - self._log_base
        if start < 0 or revision > self.revision:
            return None
        return set(self._log[start:])

    # -- label index -------------------------------------------------------------

    def by_label(self, label: str, value: str) -> Iterable[Obj]:
        """The objects whose label ``label`` is ``value``.

        The first call for a label key indexes the store once; from then on
        every event keeps that index current, so a lookup costs the matches.
        """
        index = self._label_index.get(label)
        if index is None:
            index = self._label_index[label] = self._build_label_index(label)
        return (index.get(value) or {}).values()

    def _build_label_index(self, label: str) -> dict[str, dict[str, Obj]]:
        index: dict[str, dict[str, Obj]] = {}
        for key, obj in self.store.items():
            value = object_labels(obj).get(label)
            if isinstance(value, str):
                index.setdefault(value, {})[key] = obj
        return index

    def _reindex(self, key: str, previous: Obj | None, current: Obj | None) -> None:
        old_labels = object_labels(previous) if previous is not None else {}
        new_labels = object_labels(current) if current is not None else {}
        for label, index in self._label_index.items():
            old_value, new_value = old_labels.get(label), new_labels.get(label)
            if isinstance(old_value, str) and old_value != new_value:
                members = index.get(old_value)
                if members is not None:
                    members.pop(key, None)
                    if not members:
                        del index[old_value]
            if isinstance(new_value, str) and current is not None:
                index.setdefault(new_value, {})[key] = current

    # -- helpers -----------------------------------------------------------------

    async def _backoff(self, error: ApiError | None) -> None:
        """Sleep before retrying: capped exponential with jitter, or the server's Retry-After."""
        ceiling = min(self.backoff_max, self.backoff_initial * (2 ** min(self._failures, 30)))
        self._failures += 1
        delay = random.uniform(ceiling / 2, ceiling)
        if error is not None and error.retry_after is not None:
            delay = max(delay, min(error.retry_after, self.backoff_max))
        await asyncio.sleep(delay)

    async def _notify(
        self, handler: Callable[..., Awaitable[None] | None] | None, *args: Obj
    ) -> None:
        if handler is None:
            return
        try:
            result = handler(*args)
            if result is not None and inspect.isawaitable(result):
                await result
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(
                "informer handler failed",
                path=self.path,
                key=object_key(args[-1]),
                handler=getattr(handler, "__name__", "?"),
            )
