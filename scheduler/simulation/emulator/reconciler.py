"""What the emulator's controllers share: batched reconciles on store changes.

A controller listens to the store, collects the keys a change touches and
reconciles them once per event-loop turn; a reconcile that fails on an API
refusal or malformed input is skipped with one warning per object and reason
(each change re-examines waiting objects: say it once, not on every pass).
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Callable
from typing import Any

from scheduler.simulation.emulator.resources import ResourceType
from scheduler.simulation.emulator.statuserrors import ApiError
from scheduler.simulation.emulator.store import Store
from scheduler.simulation.emulator.watch import Change

Obj = dict[str, Any]
Key = tuple[str, str]

# What a failed reconcile of one object can raise: API refusals and malformed input.
_SKIPPABLE = (ApiError, ValueError, TypeError, KeyError, AttributeError)


class Reconciler(abc.ABC):
    """Base of the emulator's controllers; subclasses seed, listen and reconcile."""

    def __init__(self, store: Store, label: str, log: logging.Logger) -> None:
        self.store = store
        self._label = label
        self._log = log
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._warned: set[tuple[str, Key, str]] = set()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.store.listeners.append(self._on_change)
        self._seed()
        self._schedule()

    def stop(self) -> None:
        if self._on_change in self.store.listeners:
            self.store.listeners.remove(self._on_change)
        self._loop = None

    @abc.abstractmethod
    def _seed(self) -> None:
        """Queue what is already in the store when the controller starts."""

    @abc.abstractmethod
    def _on_change(self, rt: ResourceType, change: Change) -> None:
        """Queue what a store change makes this controller look at."""

    @abc.abstractmethod
    def _reconcile(self) -> None:
        """Reconcile everything queued since the last turn."""

    def _schedule(self) -> None:
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        self._reconcile()

    def _guard(self, kind: str, key: Key, sync: Callable[[Key], None]) -> None:
        try:
            sync(key)
        except _SKIPPABLE as exc:
            name = "/".join(p for p in key if p)
            detail = exc.message if isinstance(exc, ApiError) else str(exc)
            if (kind, key, detail) not in self._warned:
                self._warned.add((kind, key, detail))
                self._log.warning("%s: skipping %s %s: %s", self._label, kind, name, detail)

    def _get(self, rt: ResourceType, key: Key) -> Obj | None:
        entry = self.store.collection(rt).objects.get(key)
        return entry.obj if entry is not None else None
