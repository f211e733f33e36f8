"""Keeps each ElasticQuota's ``status.used`` equal to what its namespace's bound pods request.

scheduler-plugins leaves this to a controller in its controller manager
(``ElasticQuotaReconciler``); here the plugin reconciles it itself, so a
cluster needs no second component. It reports bound pods only — pods in
flight are not bound yet and may still fail — so ``status.used`` is never
above what the scheduler's own accounting (which counts them) allowed, and
that never exceeds ``spec.max``.

Writes are batched: a reconciler wakes every ``interval`` seconds, and
patches a quota only when its bound usage differs from what the object
says, so a burst of bindings costs one PATCH per quota per interval. A
value above ``spec.max`` (``max`` lowered below what already runs, or pods
bound past this scheduler) is written as ``max`` with a warning: the status
never claims a quota is over its max, and the log says why it is capped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog
from scheduler.api import ApiClient, ObjectStore

from scheduler_plugin_capacityscheduling.book import QuotaBook
from scheduler_plugin_capacityscheduling.quota import GROUP, PLURAL, VERSION, QuotaSpec
from scheduler_plugin_capacityscheduling.resources import (
    ResourceListError,
    Vector,
    format_resource_list,
    parse_resource_list,
)

MERGE_PATCH: Final = "application/merge-patch+json"
#: How long a value just written may stay unseen in the informer before it is written again.
_ECHO_WAIT: Final = 2.0


def desired_used(spec: QuotaSpec, bound: Mapping[str, int]) -> tuple[Vector, list[str]]:
    """``status.used`` for a quota: the resources its min and max name plus what pods use.

    Like scheduler-plugins' controller (``newZeroUsed`` then the pods' sums). Returns
    the vector and the resources that had to be capped at ``spec.max``.
    """
    used: Vector = dict.fromkeys(spec.reported_names, 0)
    used.update(bound)
    capped = []
    for name in spec.max_names:
        limit = spec.max.get(name)
        if limit is not None and used.get(name, 0) > limit:
            used[name] = limit
            capped.append(name)
    return used, sorted(capped)


def reported_used(obj: Mapping[str, Any]) -> Vector | None:
    """An ElasticQuota's current ``status.used`` (None when unset or unreadable)."""
    status = obj.get("status")
    if not isinstance(status, Mapping) or status.get("used") is None:
        return None
    try:
        return parse_resource_list(status.get("used"), "status.used")
    except ResourceListError:
        return None


class StatusWriter:
    """Reconciles ``status.used`` from a :class:`QuotaBook` in a background task."""

    def __init__(
        self,
        book: QuotaBook,
        quotas: ObjectStore,
        client: Callable[[], ApiClient],
        logger: structlog.typing.FilteringBoundLogger,
        interval: float,
        on_round: Callable[[], None] | None = None,
    ) -> None:
        self._book = book
        self._quotas = quotas
        self._client = client
        self._api: ApiClient | None = None
        self._log = logger
        self.interval = interval
        self._on_round = on_round
        self._task: asyncio.Task[None] | None = None
        # (namespace, name) -> (used written, when): an echo not yet in the informer.
        self._written: dict[tuple[str, str], tuple[Vector, float]] = {}
        self._capped: dict[tuple[str, str], list[str]] = {}

    def ensure_running(self, owner: object) -> None:
        """Start the reconciler if an event loop runs; it stops when ``owner`` is collected.

        Started from the plugin's hooks, so only a leading scheduler writes
        (``explain`` and stand-by replicas never run them).
        """
        if self._task is not None and not self._task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        try:
            self._api = self._client()
        except Exception:  # no API here (``explain``, unit tests): nothing to write to
            return
        self._task = loop.create_task(self._run(weakref.ref(owner)), name="elasticquota-status")

    async def stop(self) -> None:
        """Stop the reconciler (tests; the daemon's stop ends the loop anyway)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, owner: weakref.ref[object]) -> None:
        while owner() is not None:
            try:
                self._book.sync()
                if self._on_round is not None:
                    self._on_round()
                await self.flush()
            except asyncio.CancelledError:
                raise
            except RuntimeError as err:
                if "closed" in str(err).lower():  # the scheduler's client is gone: stopped
                    return
                self._log.warning("elasticquota status reconcile failed", error=str(err))
            except Exception as err:  # keep reconciling: the next round retries
                self._log.warning("elasticquota status reconcile failed", error=str(err))
            await asyncio.sleep(self.interval)

    async def flush(self) -> int:
        """Write every quota whose ``status.used`` is out of date; returns how many were."""
        writes = 0
        now = time.monotonic()
        for namespace, spec in list(self._book.specs.items()):
            if not isinstance(spec, QuotaSpec):
                continue
            obj = self._quotas.get(namespace, spec.name)
            if obj is None:
                continue
            key = (namespace, spec.name)
            used, capped = desired_used(spec, self._book.bound_used(namespace))
            if capped and self._capped.get(key) != capped:
                self._log.warning(
                    "elasticquota used above max: status.used capped at spec.max",
                    elasticquota=f"{namespace}/{spec.name}",
                    resources=capped,
                    used=format_resource_list(self._book.bound_used(namespace)),
                )
            self._capped[key] = capped
            current = reported_used(obj)
            if current == used:
                self._written.pop(key, None)
                continue
            echo = self._written.get(key)
            if echo is not None and echo[0] == used and now - echo[1] < _ECHO_WAIT:
                continue  # just written; the informer has not shown it yet
            await self._patch(namespace, spec.name, used, stale=set(current or ()) - set(used))
            self._written[key] = (used, now)
            writes += 1
        return writes

    async def _patch(self, namespace: str, name: str, used: Vector, stale: set[str]) -> None:
        """Merge-patch ``status.used``; ``stale`` resources (no longer used) are removed."""
        body: dict[str, str | None] = dict(format_resource_list(used))
        body.update(dict.fromkeys(stale))
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}/status"
        if self._api is None:
            self._api = self._client()
        try:
            await self._api.request(
                "PATCH",
                path,
                body={"status": {"used": body}},
                content_type=MERGE_PATCH,
            )
        except Exception as err:
            if getattr(err, "status", None) == 404:
                return  # deleted meanwhile
            raise
