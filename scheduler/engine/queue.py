"""The scheduling queue, with kube-scheduler's three sub-queues.

- **activeQ**: pods ready to be tried, ordered by the QueueSort plugin's key.
- **backoffQ**: pods that failed recently and wait out an exponential backoff
  (``podInitialBackoffSeconds * 2^(n-1)`` capped at ``podMaxBackoffSeconds``),
  where *n* counts the pod's unschedulable rejections, or its consecutive
  errors for a pod that last failed with an error (kube's UnschedulableCount
  and ConsecutiveErrorsCount), so a flapping API does not push a pod towards
  the maximum backoff on its first real rejection, and a pod that was simply
  updated is not charged for it.
- **unschedulable pool**: pods rejected by plugins; they leave it only when a
  cluster event that one of the rejecting plugins registered happens (and its
  hint says it may help), or after five minutes at the latest.

Pods gated by a PreEnqueue plugin wait in the unschedulable pool too, marked
gated, and are re-checked on events the gating plugin registered and on
updates of the pod.

While a pod is *in flight* (popped, being scheduled or bound) the queue keeps
the cluster events that arrive meanwhile. If the attempt ends in a rejection,
those events are checked against the rejecting plugins exactly as if they had
arrived after it: one that may help sends the pod to backoff instead of the
pool, because the decision was made on a cluster state that is already gone.
This is kube-scheduler's moveRequestCycle rule in its QueueingHint form
(in-flight events): the older form - "any move request during the cycle" -
would retry nearly every rejected pod of a busy cluster, since every binding
is itself a cluster event.

Heaps use lazy deletion: an entry is valid only while it is the pod's
current entry, so updates and deletes are O(1) and pops skip stale entries.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.events import ClusterEvent, ClusterEventWithHint, QueueingHint
from scheduler.api.status import Status
from scheduler.engine.clusterevents import event_label
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

# Why a pod entered a queue: kube-scheduler's labels of
# scheduler_queue_incoming_pods_total (pkg/scheduler/framework/events.go).
POD_ADD = "UnschedulablePodAdd"
POD_UPDATE = "UnschedulablePodUpdate"
ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF = "PopFromBackoffQ"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
#: Not in kube-scheduler, which cannot change its config while running.
CONFIG_RELOAD = "ConfigReload"

#: The queue label of the metric for each place: kube keeps gated pods in its
#: unschedulable pool, so entering it counts as "unschedulable" once.
_METRIC_QUEUE: dict[str, str] = {
    ACTIVE: "active",
    BACKOFF: "backoff",
    UNSCHEDULABLE: "unschedulable",
    GATED: "unschedulable",
}

Incoming = Callable[[Any, str], None]
"""``incoming(queue, event)``: a pod entered ``queue`` ("active", "backoff" or
"unschedulable") because of ``event``."""


@dataclass(slots=True)
class _Entry:
    info: QueuedPodInfo
    where: str
    since: float
    token: int  # identifies the heap item that is current for this pod


@dataclass(slots=True)
class _InFlightEvent:
    seq: int
    event: ClusterEvent
    old: Any
    new: Any


_IGNORED_METADATA = ("resourceVersion", "generation", "managedFields")


def scheduling_relevant_change(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a pod update may change a scheduling decision (kube's isPodUpdated).

    Status and bookkeeping metadata are ignored, so the scheduler's own
    PodScheduled condition patch does not retry the pod it just rejected.
    """
    if old.get("spec") != new.get("spec"):
        return True
    if (old.get("status") or {}).get("resourceClaimStatuses") != (new.get("status") or {}).get(
        "resourceClaimStatuses"
    ):
        return True  # kube's UpdatePodGeneratedResourceClaim: its claims now exist
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
        pop_from_backoff: bool = True,
        events: EventMap | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sort_key = sort_key
        self._pre_enqueue = pre_enqueue
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.pop_from_backoff = pop_from_backoff
        self._events: dict[str, list[ClusterEventWithHint]] = {
            plugin: list(evs) for plugin, evs in (events or {}).items()
        }
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        # Keys of pods parked in the unschedulable pool (or gated): what a
        # cluster event may move. Kept apart so events never scan active pods.
        self._pool: set[str] = set()
        self._counts = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0, IN_FLIGHT: 0}
        self._interest: dict[ClusterEvent, frozenset[str]] = {}
        # Pods holding a nomination (won a preemption), by node: the
        # scheduling cycle keeps their room free (see Algorithm's nominator).
        self._nominated: dict[str, dict[str, PodInfo]] = {}
        # What nominated_pods() hands out, rebuilt only after a nomination
        # changes: every scheduling cycle asks (and preemption's what-ifs).
        self._nominated_view: dict[str, list[PodInfo]] | None = None
        self._nominated_node: dict[str, str] = {}
        self._active: list[tuple[Any, int, str]] = []
        self._backoff: list[tuple[float, int, str]] = []
        self._tokens = itertools.count()
        self._ready = asyncio.Event()
        self._closed = False
        self.scheduling_cycle = 0
        # kube's UnschedulableCount per pod (the backoff exponent; errors count apart).
        self._unschedulable_counts: dict[str, int] = {}
        # In-flight bookkeeping: the event sequence number when each in-flight
        # pod was popped, the events seen since the oldest of them, and the
        # in-flight pods whose own spec or metadata changed meanwhile.
        self._event_seq = 0
        self._in_flight_since: dict[str, int] = {}
        self._in_flight_events: list[_InFlightEvent] = []
        self._updated_in_flight: set[str] = set()
        self.on_change: Callable[[], None] | None = None
        #: Told of every pod entering a queue, with why (the daemon's metric).
        self.on_incoming: Incoming | None = None

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

    def pending_pods(self) -> list[PodInfo]:
        """Every pod waiting to be scheduled, gated ones left out (the what-if API's default)."""
        return [e.info.pod for e in self._entries.values() if e.where != GATED]

    def counts(self) -> dict[str, int]:
        """Pods per sub-queue; kept up to date incrementally (read on every change)."""
        return dict(self._counts)

    @property
    def in_flight_events(self) -> int:
        """How many cluster events are kept for in-flight pods (bounded by their lifetime)."""
        return len(self._in_flight_events)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def unschedulable_count(self, key: str) -> int:
        return self._unschedulable_counts.get(key, 0)

    def backoff_duration(self, info: QueuedPodInfo) -> float:
        n = info.consecutive_errors or self._unschedulable_counts.get(info.pod.key, 0)
        if n <= 0:
            return 0.0
        return float(min(self.initial_backoff * 2 ** (n - 1), self.max_backoff))

    def _backoff_expiry(self, info: QueuedPodInfo) -> float:
        return info.timestamp + self.backoff_duration(info)

    def _put(self, info: QueuedPodInfo, where: str, event: str | None = None) -> None:
        """Place the pod; ``event`` says why, for a pod entering a queue (None: it stays)."""
        key = info.pod.key
        if key in self._in_flight_since and where != IN_FLIGHT:
            self._leave_flight(key)
        token = next(self._tokens)
        now = self._clock()
        previous = self._entries.get(key)
        if previous is not None:
            self._counts[previous.where] -= 1
        if event is not None and self.on_incoming is not None:
            queue = _METRIC_QUEUE.get(where)
            if queue is not None and (
                previous is None or _METRIC_QUEUE.get(previous.where) != queue
            ):
                self.on_incoming(queue, event)
        self._counts[where] += 1
        self._entries[key] = _Entry(info, where, now, token)
        if where in (UNSCHEDULABLE, GATED):
            self._pool.add(key)
        else:
            self._pool.discard(key)
        if where == ACTIVE:
            heapq.heappush(self._active, (self._sort_key(info), token, key))
            self._ready.set()
        elif where == BACKOFF:
            heapq.heappush(self._backoff, (self._backoff_expiry(info), token, key))
            self._ready.set()  # a waiting pop() must re-arm its timer for this expiry
        self._changed()

    def _current(self, key: str, token: int, where: str) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.token == token and entry.where == where

    def _leave_flight(self, key: str) -> None:
        self._in_flight_since.pop(key, None)
        self._updated_in_flight.discard(key)
        if not self._in_flight_since:
            self._in_flight_events.clear()
            return
        oldest = min(self._in_flight_since.values())
        events = self._in_flight_events
        if events and events[0].seq <= oldest:
            self._in_flight_events = [e for e in events if e.seq > oldest]

    # -- reconfiguration (config reload) --------------------------------------------

    def reconfigure(
        self,
        sort_key: SortKey,
        events: EventMap,
        *,
        initial_backoff: float,
        max_backoff: float,
    ) -> int:
        """Take a reloaded config's QueueSort, event registrations and backoffs.

        activeQ is re-ordered by the new key, and every pod parked by a
        rejection or held at PreEnqueue is given another try (PreEnqueue runs
        again, backoff still applies): it was judged by plugins, weights or
        args that may no longer be in force, and no cluster event would tell
        it so. Returns how many parked pods moved.
        """
        self._sort_key = sort_key
        self._events = {plugin: list(evs) for plugin, evs in events.items()}
        self._interest.clear()
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        active = [
            self._entries[key]
            for _, token, key in self._active
            if self._current(key, token, ACTIVE)
        ]
        self._active = [(sort_key(e.info), e.token, e.info.pod.key) for e in active]
        heapq.heapify(self._active)
        backoff = [
            self._entries[key]
            for _, token, key in self._backoff
            if self._current(key, token, BACKOFF)
        ]
        self._backoff = [(self._backoff_expiry(e.info), e.token, e.info.pod.key) for e in backoff]
        heapq.heapify(self._backoff)
        moved = sum(
            self._retry_parked(self._entries[key], CONFIG_RELOAD) for key in list(self._pool)
        )
        self._ready.set()
        self._changed()
        return moved

    # -- pod lifecycle (informer events) -----------------------------------------

    def add(self, pod: PodInfo) -> None:
        """A new pending pod: PreEnqueue decides between activeQ and the gated pool."""
        if pod.key in self._entries:
            self.update(pod)
            return
        info = QueuedPodInfo(pod=pod, timestamp=self._clock())
        self._set_nomination(pod.key, pod, pod.nominated_node_name)
        self._enqueue_checked(info, POD_ADD)

    def _enqueue_checked(self, info: QueuedPodInfo, event: str) -> None:
        status = self._pre_enqueue(info.pod)
        if status.is_success():
            self._put(info, ACTIVE, event)
        else:
            info.unschedulable_plugins = {status.plugin} if status.plugin else set()
            self._put(info, GATED, event)

    def update(self, pod: PodInfo) -> None:
        """The pod changed: keep its place, but a change may make it schedulable."""
        entry = self._entries.get(pod.key)
        if entry is None:
            self.add(pod)
            return
        info = entry.info
        changed = scheduling_relevant_change(info.pod.raw, pod.raw)
        node = pod.nominated_node_name
        if not node and not info.pod.nominated_node_name:
            # kube's UpdateNominatedPod: an update that neither sets nor clears
            # nominatedNodeName keeps the nomination recorded in memory. The
            # preemptor's own status patches (its PodScheduled condition, or
            # an older one arriving late) come back before the nominatedNodeName
            # patch does; dropping the nomination then would hand the room its
            # victims free to another pod, and the preemptor would evict again.
            node = self._nominated_node.get(pod.key, "")
        info.pod = pod
        self._set_nomination(pod.key, pod, node)
        if entry.where in (GATED, UNSCHEDULABLE) and changed:
            # kube retries an updated unschedulable pod (its spec may now fit);
            # a gated one is re-checked by PreEnqueue. The timestamp stays: the
            # backoff still counts from the last attempt (kube's Update).
            if entry.where == GATED:
                self._enqueue_checked(info, POD_UPDATE)
            else:
                self._requeue(info, POD_UPDATE)
        elif entry.where == ACTIVE:
            self._put(info, ACTIVE)  # the sort key may have changed
        elif entry.where == IN_FLIGHT and changed:
            # The attempt under way judged the old spec: if it is rejected, retry.
            self._updated_in_flight.add(pod.key)
        self._changed()

    def delete(self, key: str) -> QueuedPodInfo | None:
        """The pod was deleted or got bound: forget it (stale heap items are skipped)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._counts[entry.where] -= 1
        self._pool.discard(key)
        self._unschedulable_counts.pop(key, None)
        self._set_nomination(key, None, "")
        if key in self._in_flight_since:
            self._leave_flight(key)
        if entry is not None:
            self._changed()
            return entry.info
        return None

    # -- nominations ----------------------------------------------------------------

    def _set_nomination(self, key: str, pod: PodInfo | None, node: str) -> None:
        old = self._nominated_node.pop(key, None)
        if old is not None or (pod is not None and node):
            self._nominated_view = None
        if old is not None:
            pods = self._nominated[old]
            pods.pop(key, None)
            if not pods:
                del self._nominated[old]
        if pod is not None and node:
            self._nominated_node[key] = node
            self._nominated.setdefault(node, {})[key] = pod

    def nominate(self, key: str, node: str) -> None:
        """Record a nomination at once (the API patch confirms it later)."""
        entry = self._entries.get(key)
        if entry is not None:
            self._set_nomination(key, entry.info.pod, node)

    def nominated_pods(self) -> Mapping[str, list[PodInfo]]:
        """Node name -> pods nominated there (the Algorithm's nominator)."""
        view = self._nominated_view
        if view is None:
            view = {node: list(pods.values()) for node, pods in self._nominated.items()}
            self._nominated_view = view
        return view

    def drop(self, info: QueuedPodInfo) -> None:
        """Forget an in-flight pod if ``info`` is still its current entry (it is bound
        or gone); a newer pod of the same name is left alone."""
        entry = self._entries.get(info.pod.key)
        if entry is not None and entry.info is info:
            self.delete(info.pod.key)

    def owns(self, info: QueuedPodInfo) -> bool:
        """Whether ``info`` is still the queue's current entry for its pod."""
        entry = self._entries.get(info.pod.key)
        return entry is not None and entry.info is info

    # -- scheduling ---------------------------------------------------------------

    def pop_nowait(self) -> QueuedPodInfo | None:
        """The next pod of activeQ (after flushing completed backoffs), or None.

        With activeQ empty, the unschedulable pod whose backoff ends first is
        taken early (kube-scheduler's SchedulerPopFromBackoffQ, on by default
        since 1.33): an idle scheduler should not wait out a backoff. Pods
        backing off after an *error* still serve their whole backoff.
        """
        self.flush_backoff_completed()
        while self._active:
            _, token, key = heapq.heappop(self._active)
            if self._current(key, token, ACTIVE):
                return self._take(self._entries[key])
        if self.pop_from_backoff:
            entry = self._earliest_unschedulable_backoff()
            while entry is not None and not self._passes_pre_enqueue(entry.info, POP_FROM_BACKOFF):
                entry = self._earliest_unschedulable_backoff()
            if entry is not None:
                if self.on_incoming is not None:
                    self.on_incoming("active", POP_FROM_BACKOFF)  # kube counts it as activeQ's
                return self._take(entry)
        return None

    def peek(self, n: int) -> list[PodInfo]:
        """The next ``n`` pods of activeQ in pop order, left where they are.

        A guess at what :meth:`pop_nowait` will return (a backoff may end or a
        pod arrive first): for work done ahead that is checked when the pod's
        turn comes (extender filter calls, see ``framework.extender_prefetch``).
        Walks the heap from its root, so the cost depends on ``n``, not on the
        queue's length.
        """
        heap = self._active
        out: list[PodInfo] = []
        if not heap or n <= 0:
            return out
        frontier = [(heap[0], 0)]
        budget = 8 * n + 32  # stale entries are skipped, within reason
        while frontier and len(out) < n and budget:
            budget -= 1
            (_, token, key), i = heapq.heappop(frontier)
            if self._current(key, token, ACTIVE):
                out.append(self._entries[key].info.pod)
            for child in (2 * i + 1, 2 * i + 2):
                if child < len(heap):
                    heapq.heappush(frontier, (heap[child], child))
        return out

    def _earliest_unschedulable_backoff(self) -> _Entry | None:
        best: tuple[float, int] | None = None
        found: _Entry | None = None
        for expiry, token, key in self._backoff:
            if not self._current(key, token, BACKOFF):
                continue
            entry = self._entries[key]
            if entry.info.consecutive_errors:
                continue
            if best is None or (expiry, token) < best:
                best, found = (expiry, token), entry
        return found

    def _take(self, entry: _Entry) -> QueuedPodInfo:
        """Move an active (or backing-off) entry in flight for a scheduling attempt."""
        key = entry.info.pod.key
        self._counts[entry.where] -= 1
        self._counts[IN_FLIGHT] += 1
        self._pool.discard(key)
        entry.where = IN_FLIGHT
        entry.info.attempts += 1
        if entry.info.initial_attempt_timestamp is None:
            entry.info.initial_attempt_timestamp = self._clock()
        self.scheduling_cycle += 1
        entry.info.cycle = self.scheduling_cycle
        self._in_flight_since[key] = self._event_seq
        self._changed()
        return entry.info

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule (None once closed); it stays known while in flight."""
        while True:
            if self._closed:
                return None
            info = self.pop_nowait()
            if info is not None:
                return info
            self._ready.clear()
            timeout = None
            if self._backoff:
                timeout = max(self._backoff[0][0] - self._clock(), 0.001)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    def requeue_unschedulable(self, info: QueuedPodInfo, plugins: set[str]) -> None:
        """After a rejection: to the unschedulable pool, or to backoff if something
        that happened while the pod was in flight may help it (see the module doc)."""
        key = info.pod.key
        if not self.owns(info):
            return  # deleted or bound meanwhile
        info.unschedulable_plugins = set(plugins)
        info.consecutive_errors = 0
        info.timestamp = self._clock()
        self._unschedulable_counts[key] = self._unschedulable_counts.get(key, 0) + 1
        if self._helped_in_flight(info):
            self._requeue(info, ATTEMPT_FAILURE)
        else:
            self._put(info, UNSCHEDULABLE, ATTEMPT_FAILURE)

    def _helped_in_flight(self, info: QueuedPodInfo) -> bool:
        key = info.pod.key
        if key in self._updated_in_flight:
            return True
        since = self._in_flight_since.get(key)
        if since is None:
            return False
        return any(
            self._may_help(info, e.event, e.old, e.new)
            for e in self._in_flight_events
            if e.seq > since
        )

    def requeue_error(self, info: QueuedPodInfo) -> None:
        """After an error (not the pod's fault): backoff, counted separately."""
        if not self.owns(info):
            return
        info.consecutive_errors += 1
        info.timestamp = self._clock()
        self._put(info, BACKOFF, ATTEMPT_FAILURE)

    def _requeue(self, info: QueuedPodInfo, event: str) -> None:
        # kube's moveToActiveQ/moveToBackoffQ run PreEnqueue again: a plugin
        # may hold a pod back for a while (DefaultPreemption while the pod's
        # victims are being deleted); the next event re-checks it.
        if self._passes_pre_enqueue(info, event):
            self._release(info, event)

    def _release(self, info: QueuedPodInfo, event: str) -> None:
        """A gated pod that passed PreEnqueue: backoffQ while its backoff lasts, else activeQ."""
        if self._clock() < self._backoff_expiry(info):
            self._put(info, BACKOFF, event)
        else:
            self._put(info, ACTIVE, event)

    def _passes_pre_enqueue(self, info: QueuedPodInfo, event: str) -> bool:
        """PreEnqueue for a pod moving towards activeQ; a rejected one goes to the gated pool."""
        status = self._pre_enqueue(info.pod)
        if status.is_success():
            return True
        # As kube's gated pods: the events its rejecting plugins care about
        # re-check it (a pod not rejected by a named plugin yet waits for its
        # gate's events).
        if not info.unschedulable_plugins:
            info.unschedulable_plugins = {status.plugin} if status.plugin else set()
        self._put(info, GATED, event)
        return False

    def flush_backoff_completed(self) -> None:
        now = self._clock()
        while self._backoff and self._backoff[0][0] <= now:
            _, token, key = heapq.heappop(self._backoff)
            if self._current(key, token, BACKOFF):
                info = self._entries[key].info
                if self._passes_pre_enqueue(info, BACKOFF_COMPLETE):
                    self._put(info, ACTIVE, BACKOFF_COMPLETE)

    def flush_unschedulable_leftover(self) -> None:
        """Retry pods left in the unschedulable pool too long; re-check long-gated ones.

        A pod a plugin holds back at PreEnqueue may wait for an event that
        never comes; as kube's leftover flush, PreEnqueue runs again for it
        (a pod still held stays gated).
        """
        now = self._clock()
        for entry in list(self._entries.values()):
            if (
                entry.where not in (UNSCHEDULABLE, GATED)
                or now - entry.since < UNSCHEDULABLE_MAX_STAY
            ):
                continue
            if entry.where == UNSCHEDULABLE:
                self._requeue(entry.info, UNSCHEDULABLE_TIMEOUT)
            elif self._pre_enqueue(entry.info.pod).is_success():
                self._release(entry.info, UNSCHEDULABLE_TIMEOUT)

    # -- cluster events ------------------------------------------------------------

    def move_on_event(self, event: ClusterEvent, old: Any = None, new: Any = None) -> int:
        """Requeue unschedulable (and gated) pods a rejecting plugin says this event may help.

        Returns how many pods moved. The event is also kept for pods in flight.
        """
        self._event_seq += 1
        if self._in_flight_since:
            self._in_flight_events.append(_InFlightEvent(self._event_seq, event, old, new))
        moved = 0
        if not self._pool:
            return 0
        interested = self._interested(event)
        label = event_label(event)
        for key in list(self._pool):
            entry = self._entries[key]
            plugins = entry.info.unschedulable_plugins | entry.info.pending_plugins
            # Cheap screen before hints: only plugins registered for this event
            # (or that registered nothing, meaning every event) can move the pod.
            if plugins and plugins.isdisjoint(interested) and plugins <= self._events.keys():
                continue
            if not self._may_help(entry.info, event, old, new):
                continue
            moved += self._retry_parked(entry, label)
        return moved

    def _retry_parked(self, entry: _Entry, event: str) -> bool:
        """Give a pod of the pool another try; False if PreEnqueue still holds it back.

        A gated pod is re-checked (one still held back stays as it is); a
        rejected one goes to backoffQ or activeQ through PreEnqueue.
        """
        if entry.where == GATED:
            if not self._pre_enqueue(entry.info.pod).is_success():
                return False
            self._release(entry.info, event)
            return True
        self._requeue(entry.info, event)
        return entry.info.pod.key not in self._pool

    def _interested(self, event: ClusterEvent) -> frozenset[str]:
        """Plugins with a registration matching ``event`` (cached per event)."""
        found = self._interest.get(event)
        if found is None:
            found = frozenset(
                plugin
                for plugin, items in self._events.items()
                if any(item.event.matches(event) for item in items)
            )
            self._interest[event] = found
        return found

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
            if (
                entry is not None
                and entry.where in (BACKOFF, UNSCHEDULABLE, GATED)
                and self._passes_pre_enqueue(entry.info, FORCE_ACTIVATE)
            ):
                self._put(entry.info, ACTIVE, FORCE_ACTIVATE)
