"""The scheduling queue, with kube-scheduler's three sub-queues.

- **activeQ**: pods ready to be tried, ordered by the QueueSort plugin's key.
- **backoffQ**: pods that failed recently and wait out an exponential backoff
  (``podInitialBackoffSeconds * 2^(n-1)`` capped at ``podMaxBackoffSeconds``),
  where *n* counts unschedulable attempts, or consecutive errors for pods
  that failed with an error, so a flapping API does not push a pod towards
  the maximum backoff on its first real rejection.
- **unschedulable pool**: pods rejected by plugins; they leave it only when a
  cluster event that one of the rejecting plugins registered happens (and its
  hint says it may help), or after five minutes at the latest.

Pods gated by a PreEnqueue plugin wait in the unschedulable pool too, marked
gated, and are re-checked on events the gating plugin registered and on
updates of the pod.

Heaps use lazy deletion: an entry is valid only while it is the pod's
current entry, so updates and deletes are O(1) and pops skip stale entries.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.events import ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.api.status import Status
from scheduler.state.pod import PodInfo, QueuedPodInfo

# kube-scheduler: unschedulable pods are flushed to the active queue after this
# long even without a matching event, checked every 30 s.
UNSCHEDULABLE_MAX_STAY = 300.0
LEFTOVER_FLUSH_INTERVAL = 30.0
BACKOFF_FLUSH_INTERVAL = 1.0

ACTIVE, BACKOFF, UNSCHEDULABLE, GATED, IN_FLIGHT = (
    "active",
    "backoff",
    "unschedulable",
    "gated",
    "in_flight",
)


@dataclass(slots=True)
class _Entry:
    info: QueuedPodInfo
    where: str
    since: float
    token: int  # identifies the heap item that is current for this pod


_IGNORED_METADATA = ("resourceVersion", "generation", "managedFields")


def scheduling_relevant_change(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a pod update may change a scheduling decision (kube's isPodUpdated).

    Status and bookkeeping metadata are ignored, so the scheduler's own
    PodScheduled condition patch does not retry the pod it just rejected.
    """
    if old.get("spec") != new.get("spec"):
        return True
    old_meta = {k: v for k, v in (old.get("metadata") or {}).items() if k not in _IGNORED_METADATA}
    new_meta = {k: v for k, v in (new.get("metadata") or {}).items() if k not in _IGNORED_METADATA}
    return old_meta != new_meta


SortKey = Callable[[QueuedPodInfo], Any]
PreEnqueue = Callable[[PodInfo], Status]
EventMap = Mapping[str, Iterable[ClusterEventWithHint]]


class SchedulingQueue:
    def __init__(
        self,
        sort_key: SortKey,
        pre_enqueue: PreEnqueue,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        events: EventMap | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sort_key = sort_key
        self._pre_enqueue = pre_enqueue
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._events: dict[str, list[ClusterEventWithHint]] = {
            plugin: list(evs) for plugin, evs in (events or {}).items()
        }
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._active: list[tuple[Any, int, str]] = []
        self._backoff: list[tuple[float, int, str]] = []
        self._tokens = itertools.count()
        self._ready = asyncio.Event()
        self._closed = False
        # kube's moveRequestCycle: if a move request happened while a pod was
        # being scheduled, its rejection may already be stale: retry it.
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self.on_change: Callable[[], None] | None = None

    # -- bookkeeping -------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> QueuedPodInfo | None:
        entry = self._entries.get(key)
        return entry.info if entry else None

    def where(self, key: str) -> str | None:
        entry = self._entries.get(key)
        return entry.where if entry else None

    def counts(self) -> dict[str, int]:
        out = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0, IN_FLIGHT: 0}
        for entry in self._entries.values():
            out[entry.where] += 1
        return out

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def backoff_duration(self, info: QueuedPodInfo) -> float:
        n = info.consecutive_errors if info.consecutive_errors else info.attempts
        if n <= 0:
            return 0.0
        return min(self.initial_backoff * 2 ** (n - 1), self.max_backoff)

    def _backoff_expiry(self, info: QueuedPodInfo) -> float:
        return info.timestamp + self.backoff_duration(info)

    def _put(self, info: QueuedPodInfo, where: str) -> None:
        token = next(self._tokens)
        now = self._clock()
        self._entries[info.pod.key] = _Entry(info, where, now, token)
        if where == ACTIVE:
            heapq.heappush(self._active, (self._sort_key(info), token, info.pod.key))
            self._ready.set()
        elif where == BACKOFF:
            heapq.heappush(self._backoff, (self._backoff_expiry(info), token, info.pod.key))
            self._ready.set()  # a waiting pop() must re-arm its timer for this expiry
        self._changed()

    def _current(self, key: str, token: int, where: str) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.token == token and entry.where == where

    # -- pod lifecycle (informer events) -----------------------------------------

    def add(self, pod: PodInfo) -> None:
        """A new pending pod: PreEnqueue decides between activeQ and the gated pool."""
        if pod.key in self._entries:
            self.update(pod)
            return
        info = QueuedPodInfo(pod=pod, timestamp=self._clock())
        self._enqueue_checked(info)

    def _enqueue_checked(self, info: QueuedPodInfo) -> None:
        status = self._pre_enqueue(info.pod)
        if status.is_success():
            self._put(info, ACTIVE)
        else:
            info.unschedulable_plugins = {status.plugin} if status.plugin else set()
            self._put(info, GATED)

    def update(self, pod: PodInfo) -> None:
        """The pod changed: keep its place, but a change may make it schedulable."""
        entry = self._entries.get(pod.key)
        if entry is None:
            self.add(pod)
            return
        info = entry.info
        changed = scheduling_relevant_change(info.pod.raw, pod.raw)
        info.pod = pod
        if entry.where in (GATED, UNSCHEDULABLE) and changed:
            # kube retries an updated unschedulable pod (its spec may now fit);
            # a gated one is re-checked by PreEnqueue.
            info.timestamp = self._clock()
            if entry.where == GATED:
                self._enqueue_checked(info)
            else:
                self._requeue(info)
        elif entry.where == ACTIVE:
            self._put(info, ACTIVE)  # the sort key may have changed
        self._changed()

    def delete(self, key: str) -> QueuedPodInfo | None:
        """The pod was deleted or got bound: forget it (stale heap items are skipped)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._changed()
            return entry.info
        return None

    # -- scheduling ---------------------------------------------------------------

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule (None once closed); it stays known while in flight."""
        while True:
            if self._closed:
                return None
            self.flush_backoff_completed()
            while self._active:
                _, token, key = heapq.heappop(self._active)
                if self._current(key, token, ACTIVE):
                    entry = self._entries[key]
                    entry.where = IN_FLIGHT
                    entry.info.attempts += 1
                    if entry.info.initial_attempt_timestamp is None:
                        entry.info.initial_attempt_timestamp = self._clock()
                    self.scheduling_cycle += 1
                    entry.info.cycle = self.scheduling_cycle
                    self._changed()
                    return entry.info
            self._ready.clear()
            timeout = None
            if self._backoff:
                timeout = max(self._backoff[0][0] - self._clock(), 0.001)
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                pass

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    def done_success(self, key: str) -> None:
        """The pod was bound; it is no longer the queue's."""
        self.delete(key)

    def requeue_unschedulable(self, info: QueuedPodInfo, plugins: set[str], cycle: int) -> None:
        """After a rejection: to the unschedulable pool, or back to backoff if an event
        arrived meanwhile that might help (kube's moveRequestCycle rule)."""
        entry = self._entries.get(info.pod.key)
        if entry is None or entry.info is not info:
            return  # deleted or bound meanwhile
        info.unschedulable_plugins = set(plugins)
        info.consecutive_errors = 0
        info.timestamp = self._clock()
        if self._move_request_cycle >= cycle:
            self._put(info, BACKOFF)
        else:
            self._put(info, UNSCHEDULABLE)

    def requeue_error(self, info: QueuedPodInfo) -> None:
        """After an error (not the pod's fault): backoff, counted separately."""
        entry = self._entries.get(info.pod.key)
        if entry is None or entry.info is not info:
            return
        info.consecutive_errors += 1
        info.timestamp = self._clock()
        self._put(info, BACKOFF)

    def _requeue(self, info: QueuedPodInfo) -> None:
        if self._clock() < self._backoff_expiry(info):
            self._put(info, BACKOFF)
        else:
            self._put(info, ACTIVE)

    def flush_backoff_completed(self) -> None:
        now = self._clock()
        while self._backoff and self._backoff[0][0] <= now:
            _, token, key = heapq.heappop(self._backoff)
            if self._current(key, token, BACKOFF):
                self._put(self._entries[key].info, ACTIVE)

    def flush_unschedulable_leftover(self) -> None:
        now = self._clock()
        for entry in list(self._entries.values()):
            if entry.where == UNSCHEDULABLE and now - entry.since >= UNSCHEDULABLE_MAX_STAY:
                self._requeue(entry.info)

    # -- cluster events ------------------------------------------------------------

    def move_on_event(self, event: ClusterEvent, old: Any = None, new: Any = None) -> int:
        """Requeue unschedulable (and gated) pods a rejecting plugin says this event may help.

        Returns how many pods moved.
        """
        self._move_request_cycle = self.scheduling_cycle
        moved = 0
        for entry in list(self._entries.values()):
            if entry.where not in (UNSCHEDULABLE, GATED):
                continue
            if not self._may_help(entry.info, event, old, new):
                continue
            moved += 1
            if entry.where == GATED:
                self._enqueue_checked(entry.info)
            else:
                self._requeue(entry.info)
        return moved

    def _may_help(self, info: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> bool:
        plugins = info.unschedulable_plugins | info.pending_plugins
        if not plugins:
            return True  # rejected without a named plugin: any event may help
        for plugin in plugins:
            registered = self._events.get(plugin)
            if registered is None:
                return True  # the plugin did not say: every event counts
            for item in registered:
                if not item.event.matches(event):
                    continue
                if item.hint is None:
                    return True
                try:
                    if item.hint(info.pod, old, new) is QueueingHint.QUEUE:
                        return True
                except Exception:
                    return True  # a failing hint must not strand the pod
        return False

    def activate(self, keys: Iterable[str]) -> None:
        """Move the named pods to activeQ right away (plugins' handle.activate_pods)."""
        for key in keys:
            entry = self._entries.get(key)
            if entry is not None and entry.where in (BACKOFF, UNSCHEDULABLE):
                self._put(entry.info, ACTIVE)
