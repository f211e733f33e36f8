"""The live quota accounting: which pods are charged to which namespace, bound or in flight.

Two sources feed it. The pod informer's store says which pods are bound
(``spec.nodeName`` set), which finished (phase Succeeded/Failed: released,
as scheduler-plugins' ``updatePod`` does) and which are gone. Reserve and
Unreserve say which pods this scheduler has assumed but not bound yet: they
are charged from Reserve on, so the next pod's PreFilter already sees them
and concurrent decisions cannot take a quota above its max.

An unreserved pod is not released at once: a binding whose answer was lost
(a timeout, a 5xx after the API server committed it) fails in the
scheduler's eyes while the pod is bound. It stays charged until the
informer delivers a newer version of it that is not on a node (the
scheduler's own failure condition patch is one), or for
:data:`DOUBT_SECONDS` at most, so a lost answer never lets a second pod
into the same room.

The store is read by object identity: the informer replaces a pod's dict on
every change, so a sync only parses the pods that changed since the last
one (``ObjectStore.revision`` says whether anything did), and finds them
with set operations on object ids rather than a loop over every pod.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from scheduler.api import ObjectStore, Pod
from scheduler.model.resources import PodSpecError, pod_requests

from scheduler_plugin_capacityscheduling.quota import (
    QuotaError,
    QuotaInfo,
    QuotaSet,
    QuotaSpec,
    choose_quota,
)
from scheduler_plugin_capacityscheduling.resources import Vector, add_into, pod_vector, sub_from

_TERMINAL: Final = frozenset({"Succeeded", "Failed"})
#: Seconds an unreserved pod stays charged when no newer version of it arrives
#: (see :meth:`QuotaBook.unreserve`).
DOUBT_SECONDS: Final = 2.0


@dataclass(slots=True)
class Charge:
    """One pod charged to its namespace: bound (seen on a node) or in flight (reserved)."""

    namespace: str
    requests: Vector
    bound: bool


def pod_uid(obj: Mapping[str, Any]) -> str:
    """The key a pod is charged under: its uid (``namespace/name`` for uid-less test objects)."""
    meta = obj.get("metadata") or {}
    uid = meta.get("uid")
    if uid:
        return str(uid)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def view_uid(pod: Pod) -> str:
    """:func:`pod_uid` for a pod view."""
    return pod.uid or pod.key


class QuotaBook:
    """Quotas by namespace and the pods charged to them, kept in step with the informers."""

    def __init__(self, pods: ObjectStore, quotas: ObjectStore) -> None:
        self._pods = pods
        self._quotas = quotas
        self._pods_revision: int | None = None
        self._quotas_revision: int | None = None
        # (namespace, name) -> (the pod object, its uid): the store's pods at the last sync.
        self._seen: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}
        self._charges: dict[str, Charge] = {}
        self._bound_used: dict[str, Vector] = {}
        self.specs: dict[str, QuotaSpec | QuotaError] = {}
        self.live = QuotaSet()
        #: Moves whenever a bound pod is charged or released (what ``status.used`` reports).
        self.bound_version = 0
        # Unreserved pods still charged: uid -> (since when, the store's object then).
        self._doubtful: dict[str, tuple[float, Mapping[str, Any] | None]] = {}
        #: Moves whenever a charge in doubt is released: room that no cluster
        #: event announces (the plugin then retries the pods it rejected).
        self.released_doubts = 0
        #: Monotonic clock for the doubt period (tests replace it).
        self.clock: Callable[[], float] = time.monotonic

    # -- reading the informers ----------------------------------------------------------

    def sync(self) -> None:
        """Catch up with the ElasticQuota and pod stores (cheap when nothing changed)."""
        revision = self._quotas.revision()
        if revision != self._quotas_revision or self._quotas_revision is None:
            self._quotas_revision = revision
            self._load_quotas()
        revision = self._pods.revision()
        if revision != self._pods_revision or self._pods_revision is None:
            since, self._pods_revision = self._pods_revision, revision
            self._load_pods(since)
        if self._doubtful:
            now = self.clock()
            for uid, (since, _) in list(self._doubtful.items()):
                if now - since >= DOUBT_SECONDS:
                    self._release(uid)

    def _load_quotas(self) -> None:
        by_namespace: dict[str, list[Mapping[str, Any]]] = {}
        for obj in self._quotas.list():
            meta = obj.get("metadata") or {}
            by_namespace.setdefault(str(meta.get("namespace") or "default"), []).append(obj)
        specs: dict[str, QuotaSpec | QuotaError] = {}
        for namespace, objects in by_namespace.items():
            chosen = choose_quota(objects)
            if chosen is None:
                continue
            try:
                specs[namespace] = QuotaSpec.from_object(chosen)
            except QuotaError as err:
                specs[namespace] = err
        self.specs = specs
        live = QuotaSet()
        for namespace, spec in specs.items():
            if isinstance(spec, QuotaSpec):
                live[namespace] = QuotaInfo(spec)
        for uid, charge in self._charges.items():
            live.charge(charge.namespace, uid, charge.requests)
        self.live = live

    def _load_pods(self, since: int | None) -> None:
        """Apply what changed in the pod store since the revision of the last sync.

        The store names the pods that changed (``changed_since``, plugin API
        2.3), so a sync costs the changes, not a look at every pod of the
        cluster; every pod is read only when it cannot tell (the first sync,
        a re-list).
        """
        changed = None if since is None else self._pods.changed_since(since)
        if changed is None:
            current: dict[tuple[str, str], Mapping[str, Any]] = {}
            for obj in self._pods.list():
                meta = obj.get("metadata") or {}
                current[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = obj
            for key in self._seen.keys() - current.keys():
                self._saw(key, None)
            for key, obj in current.items():
                self._saw(key, obj)
        else:
            for key in changed:
                self._saw(key, self._pods.get(*key))

    def _saw(self, key: tuple[str, str], obj: Mapping[str, Any] | None) -> None:
        """The pod stored under ``key`` is now ``obj`` (None: deleted)."""
        previous = self._seen.get(key)
        if previous is not None and previous[0] is obj:
            return  # informers replace changed objects: the same object has not changed
        if obj is None:
            if previous is not None:
                del self._seen[key]
                self._release(previous[1])
            return
        uid = pod_uid(obj)
        self._seen[key] = (obj, uid)
        if previous is not None and previous[1] != uid:
            self._release(previous[1])  # a new pod under a deleted one's name
        self._apply(uid, obj)

    def _apply(self, uid: str, obj: Mapping[str, Any]) -> None:
        status = obj.get("status") or {}
        spec = obj.get("spec") or {}
        if status.get("phase") in _TERMINAL:
            self._release(uid)
            return
        if not spec.get("nodeName"):
            doubt = self._doubtful.get(uid)
            if doubt is not None and doubt[1] is not obj:
                self._release(uid)  # a newer version, still not on a node: it did not bind
            return  # pending, or in flight (charged by Reserve until it binds or fails)
        self._doubtful.pop(uid, None)
        charge = self._charges.get(uid)
        if charge is not None:
            if not charge.bound:
                charge.bound = True
                add_into(self._bound_used.setdefault(charge.namespace, {}), charge.requests)
                self.bound_version += 1
            return
        meta = obj.get("metadata") or {}
        try:
            requests = pod_vector(pod_requests(obj))
        except PodSpecError:
            requests = {}  # a pod the API accepted but we cannot read charges nothing
        self._charge(uid, str(meta.get("namespace") or "default"), requests, bound=True)

    # -- charges ------------------------------------------------------------------------

    def _charge(self, uid: str, namespace: str, requests: Vector, *, bound: bool) -> None:
        self._charges[uid] = Charge(namespace, requests, bound)
        self.live.charge(namespace, uid, requests)
        if bound:
            add_into(self._bound_used.setdefault(namespace, {}), requests)
            self.bound_version += 1

    def _release(self, uid: str) -> None:
        if self._doubtful.pop(uid, None) is not None:
            self.released_doubts += 1
        charge = self._charges.pop(uid, None)
        if charge is None:
            return
        self.live.release(charge.namespace, uid)
        if charge.bound:
            sub_from(self._bound_used.setdefault(charge.namespace, {}), charge.requests)
            self.bound_version += 1

    def charged(self, uid: str) -> bool:
        """Whether the pod is charged already (bound, or reserved by this scheduler)."""
        return uid in self._charges

    def reserve(self, pod: Pod) -> None:
        """Charge a pod this scheduler assumed on a node (it counts until it binds or fails)."""
        uid = view_uid(pod)
        self._doubtful.pop(uid, None)  # placed again: in flight, no longer in doubt
        if uid not in self._charges:
            self._charge(uid, pod.namespace, pod_vector(pod.requests), bound=False)

    def unreserve(self, pod: Pod) -> None:
        """Release a pod whose scheduling or binding failed after Reserve, once sure.

        It stays charged until the informer shows a newer version of it off
        any node, or :data:`DOUBT_SECONDS` pass (see the module docstring). A
        pod the informer shows bound stays charged: the API, not this
        scheduler's bookkeeping, says where it runs.
        """
        uid = view_uid(pod)
        charge = self._charges.get(uid)
        if charge is not None and not charge.bound and uid not in self._doubtful:
            self._doubtful[uid] = (self.clock(), self._pods.get(pod.namespace, pod.name))

    def in_flight_charge(self, uid: str) -> bool:
        """Whether the pod is charged without being bound (in flight, or in doubt)."""
        charge = self._charges.get(uid)
        return charge is not None and not charge.bound

    # -- what the plugin reads ----------------------------------------------------------

    def snapshot(self) -> QuotaSet:
        """A copy of every quota and its usage, for one scheduling cycle."""
        return self.live.clone()

    def bound_used(self, namespace: str) -> Vector:
        """What the namespace's bound pods request (``status.used``, without pods in flight)."""
        return {k: v for k, v in self._bound_used.get(namespace, {}).items() if v}

    def in_flight(self) -> list[str]:
        """Uids of pods charged from Reserve that the informer has not shown bound yet."""
        return [uid for uid, charge in self._charges.items() if not charge.bound]
