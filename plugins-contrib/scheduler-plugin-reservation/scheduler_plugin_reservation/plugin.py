"""Reservations in the manner of Koordinator: capacity held on a node for the pods that own it.

How it works (see README.md for the user's side):

- **Placement.** A pending Reservation is placed like a pod: its
  ``spec.template`` becomes a pseudo-pod (``handle.framework.pod_from_object``)
  and ``handle.framework.find_node`` runs this profile's PreFilter, Filter,
  PreScore and Score on it, unchanged, exactly as for a pod. Only the
  profile named by the template's ``schedulerName`` places it. The plugin
  then writes ``status`` (phase Available, nodeName, allocatable,
  conditions) as Koordinator does. Nothing enters the scheduler's node
  table: Koordinator keeps a "reserve pod" in its cache; here the plugin
  keeps the placement and shows it to every cycle through the transformers.
- **Accounting.** ``before_filter`` and ``before_score`` (API 2.1
  transformers) hold each available reservation's remaining resources
  (allocatable minus allocated) on its node for every pod but one of its
  owners that fits in it: for that pod the reservation's room is free.
  Every Filter run sees it, preemption's included; the live table never does.
- **Consumption.** Score prefers nodes with a reservation the pod may use;
  Reserve charges the pod to it (one reservation per pod), Unreserve gives
  it back, PostBind writes ``status.currentOwners`` and ``allocated`` and,
  with ``allocateOnce`` (the default), phase Succeeded: what the reservation
  still held is released.
- **Expiry.** ``spec.expires``, else ``creationTimestamp + spec.ttl``
  (24h by default; 0 never): phase Failed, condition Ready=False with
  Koordinator's reason ``Expired``; its resources are released and pending
  pods of the profile are retried.

Writes happen in a background task of the plugin (every
``syncIntervalSeconds``, on the leader only: ``handle.is_leader()``) and in
PostBind; until a write comes back through
the informer, the plugin's own record of it counts, so the next cycle never
sees a reservation twice or a consumed one as free.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field
from scheduler.api import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeAdjustment,
    Nodes,
    Plugin,
    PluginArgs,
    Pod,
    Status,
    hookimpl,
)
from scheduler.model.resources import pod_requests

from scheduler_plugin_reservation.reservation import (
    PHASE_AVAILABLE,
    PHASE_FAILED,
    PHASE_PENDING,
    PHASE_SUCCEEDED,
    REASON_EXPIRED,
    REASON_SUCCEEDED,
    RESERVATIONS,
    Reservation,
    ReservationError,
    format_time,
    units_to_resources,
)

PODS = ("", "v1", "pods")
USABLE_KEY = "Reservation/usable"  # CycleState: node name -> reservation name the pod may use
CHOSEN_KEY = "Reservation/chosen"  # CycleState: the reservation Reserve charged the pod to
MERGE_PATCH = "application/merge-patch+json"


class ReservationArgs(PluginArgs):
    """``pluginConfig`` args of Reservation."""

    sync_interval_seconds: float = Field(
        default=1.0,
        gt=0,
        alias="syncIntervalSeconds",
        description="How often pending reservations are placed and expired ones released.",
    )


@dataclass(slots=True)
class Held:
    """An available reservation as cycles see it: where, and what it still holds."""

    reservation: Reservation
    node_name: str
    remaining: dict[str, int]


@dataclass(slots=True)
class Consumption:
    """A pod charged to a reservation in this process, until the status shows it."""

    ref: dict[str, Any]
    requests: dict[str, int]
    bound: bool = False


class ReservationPlugin(Plugin):
    """Koordinator-compatible Reservations; see the module docstring."""

    api_version: ClassVar[str] = "2.1"
    name: ClassVar[str] = "Reservation"
    Args = ReservationArgs
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (RESERVATIONS, PODS)

    #: Wall clock for expiry (tests replace it).
    clock: Callable[[], float] = staticmethod(time.time)

    def __init__(self, args: ReservationArgs | None, handle: Handle) -> None:
        super().__init__(args if args is not None else ReservationArgs(), handle)
        self.args: ReservationArgs
        self._store = handle.store(*RESERVATIONS)
        self._pods = handle.store(*PODS)
        self._parsed: dict[str, tuple[Mapping[str, Any], Reservation | None]] = {}
        self._revision = -1
        #: Placements made here and not yet seen in the store: name -> node.
        self._placed: dict[str, str] = {}
        #: Terminal phases decided here and not yet seen in the store: name -> phase.
        self._ended: dict[str, str] = {}
        #: Pods charged here: reservation name -> pod uid -> consumption.
        self._consumed: dict[str, dict[str, Consumption]] = {}
        self._warned: set[str] = set()
        #: The last Unschedulable message written per reservation (one write, not one a round).
        self._said: dict[str, str] = {}
        self._write_lock: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None
        with contextlib.suppress(RuntimeError):  # no loop (unit tests, explain): no task
            self._task = asyncio.get_running_loop().create_task(
                _sync_while_alive(weakref.ref(self), self.args.sync_interval_seconds)
            )

    # -- the reservations ------------------------------------------------------------------

    def reservations(self) -> list[Reservation]:
        """Every Reservation that parses, with this process's not-yet-written changes."""
        revision = self._store.revision()
        if revision != self._revision:
            self._reparse()
            self._revision = revision
        out = []
        for _, parsed in self._parsed.values():
            if parsed is not None:
                out.append(parsed)
        return out

    def _reparse(self) -> None:
        fresh: dict[str, tuple[Mapping[str, Any], Reservation | None]] = {}
        for obj in self._store.list():
            name = str((obj.get("metadata") or {}).get("name") or "")
            known = self._parsed.get(name)
            if known is not None and known[0] is obj:
                fresh[name] = known
                continue
            try:
                fresh[name] = (obj, Reservation.from_object(obj))
            except ReservationError as err:
                fresh[name] = (obj, None)
                if str(err) not in self._warned:
                    self._warned.add(str(err))
                    self.handle.logger.warning("reservation ignored", error=str(err))
        self._parsed = fresh
        self._forget_written(fresh)

    def _forget_written(self, fresh: Mapping[str, tuple[Mapping[str, Any], Any]]) -> None:
        """Drop the local records the store now shows (or whose object is gone)."""
        for name in list(self._placed):
            parsed = fresh.get(name, (None, None))[1]
            if parsed is None or parsed.node_name or parsed.terminal:
                del self._placed[name]
        for name in list(self._ended):
            parsed = fresh.get(name, (None, None))[1]
            if parsed is None or parsed.terminal:
                del self._ended[name]
        for name in list(self._consumed):
            parsed = fresh.get(name, (None, None))[1]
            if parsed is None:
                del self._consumed[name]
                continue
            shown = {str(o.get("uid")) for o in parsed.current_owners}
            pods = self._consumed[name]
            for uid in [u for u, c in pods.items() if c.bound and u in shown]:
                del pods[uid]
            if not pods:
                del self._consumed[name]

    def phase_of(self, r: Reservation) -> str:
        return self._ended.get(r.name, r.phase)

    def node_of(self, r: Reservation) -> str:
        return r.node_name or self._placed.get(r.name, "")

    def owners_of(self, r: Reservation) -> list[dict[str, Any]]:
        shown = {str(o.get("uid")) for o in r.current_owners}
        local = [c.ref for uid, c in self._consumed.get(r.name, {}).items() if uid not in shown]
        return [*r.current_owners, *local]

    def allocated_of(self, r: Reservation) -> dict[str, int]:
        shown = {str(o.get("uid")) for o in r.current_owners}
        out = dict(r.allocated)
        for uid, c in self._consumed.get(r.name, {}).items():
            if uid not in shown:
                for k, v in c.requests.items():
                    out[k] = out.get(k, 0) + v
        return out

    def held(self) -> list[Held]:
        """Reservations holding resources now: placed, available, unexpired, not used up."""
        now = self.clock()
        out = []
        for r in self.reservations():
            node = self.node_of(r)
            phase = self.phase_of(r)
            if not node or phase not in (PHASE_PENDING, PHASE_AVAILABLE) or r.expired(now):
                continue
            if r.allocate_once and self.owners_of(r):
                continue
            allocatable = r.allocatable or r.requests
            allocated = self.allocated_of(r)
            remaining = {k: max(v - allocated.get(k, 0), 0) for k, v in allocatable.items()}
            if any(remaining.values()):
                out.append(Held(r, node, remaining))
        return out

    # -- the transformers ----------------------------------------------------------------

    def _usable(self, state: CycleState, pod: Pod, held: Sequence[Held]) -> dict[str, str]:
        """Per node, the one reservation ``pod`` may use there (it owns it and fits in it)."""
        usable: dict[str, str] | None = state.get(USABLE_KEY)
        if usable is not None:
            return usable
        usable = {}
        best: dict[str, int] = {}
        for h in held:
            r = h.reservation
            if r.unschedulable or not r.matches(pod):
                continue
            if any(pod.requests.get(k, 0) > v for k, v in h.remaining.items()):
                continue  # the pod does not fit in what it still holds
            size = h.remaining.get("cpu", 0)
            if h.node_name not in best or size < best[h.node_name]:  # tightest fit
                best[h.node_name] = size
                usable[h.node_name] = r.name
        state.write(USABLE_KEY, usable)
        return usable

    def _adjustment(self, state: CycleState, pod: Pod, nodes: Nodes) -> NodeAdjustment | None:
        held = self.held()
        if not held:
            return None
        usable = self._usable(state, pod, held)
        adjustment = NodeAdjustment()
        for h in held:
            if usable.get(h.node_name) == h.reservation.name:
                continue  # free for this pod: it may use it
            index = nodes.index_of(h.node_name)
            if index is not None:
                adjustment.hold(index, h.remaining)
        return adjustment or None

    @hookimpl
    def before_filter(self, state: CycleState, pod: Pod, nodes: Nodes) -> NodeAdjustment | None:
        """Hold every reservation's remaining room on its node, except the one the pod may use."""
        return self._adjustment(state, pod, nodes)

    @hookimpl
    def before_score(self, state: CycleState, pod: Pod, nodes: Nodes) -> NodeAdjustment | None:
        """Score sees the same view as Filter did."""
        return self._adjustment(state, pod, nodes)

    @hookimpl
    def score(self, state: CycleState, pod: Pod, nodes: Nodes) -> npt.NDArray[np.int64]:
        """Nodes where the pod may use a reservation first (Koordinator's preference)."""
        scores = np.zeros(len(nodes), dtype=np.int64)
        usable: dict[str, str] = state.get(USABLE_KEY) or {}
        for node_name in usable:
            index = nodes.index_of(node_name)
            if index is not None:
                scores[index] = MAX_NODE_SCORE
        return scores

    # -- charging a pod to its reservation ---------------------------------------------------

    @hookimpl
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Charge the pod to the reservation it may use on ``node_name``, if any."""
        name = (state.get(USABLE_KEY) or {}).get(node_name)
        if name is None:
            return None
        ref = {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": pod.namespace,
            "name": pod.name,
            "uid": pod.uid,
        }
        r = next((r for r in self.reservations() if r.name == name), None)
        reserved = (r.allocatable or r.requests) if r is not None else pod.requests
        # Charged what it takes of the reserved resources (Koordinator masks the same way).
        requests = {k: v for k, v in pod.requests.items() if k in reserved}
        self._consumed.setdefault(name, {})[pod.uid] = Consumption(ref, requests)
        state.write(CHOSEN_KEY, name)
        return None

    @hookimpl
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        name = state.get(CHOSEN_KEY)
        if name is None:
            return
        pods = self._consumed.get(name, {})
        pods.pop(pod.uid, None)
        if not pods:
            self._consumed.pop(name, None)
        state.delete(CHOSEN_KEY)

    @hookimpl
    async def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Write the reservation's owners and allocation (and Succeeded, if allocateOnce)."""
        name = state.get(CHOSEN_KEY)
        if name is None:
            return
        consumption = self._consumed.get(name, {}).get(pod.uid)
        if consumption is not None:
            consumption.bound = True
        r = next((r for r in self.reservations() if r.name == name), None)
        if r is None:
            return
        status: dict[str, Any] = {
            "currentOwners": self.owners_of(r),
            "allocated": units_to_resources(self.allocated_of(r)),
        }
        if r.allocate_once and not r.terminal:
            self._ended[name] = PHASE_SUCCEEDED
            status["phase"] = PHASE_SUCCEEDED
            status["conditions"] = _ready_false(r, REASON_SUCCEEDED, self.clock())
        await self._patch(name, status)

    # -- placing and expiring (the plugin's task) -------------------------------------------

    async def sync(self) -> None:
        """Expire what is due, then place what is pending (this profile's reservations)."""
        now = self.clock()
        released = False
        for r in self.reservations():
            if r.scheduler_name != self.handle.profile_name:
                continue
            phase = self.phase_of(r)
            if phase in (PHASE_SUCCEEDED, PHASE_FAILED):
                continue
            if r.expired(now):
                self._ended[r.name] = PHASE_FAILED
                released = released or bool(self.node_of(r))
                await self._patch(
                    r.name,
                    {"phase": PHASE_FAILED, "conditions": _ready_false(r, REASON_EXPIRED, now)},
                )
            elif not self.node_of(r):
                await self._place(r, now)
            elif r.current_owners and not r.allocate_once:
                released = await self._drop_gone_owners(r) or released
        if released:
            self._retry_pending_pods()

    def _alive(self, ref: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The owner pod ``ref`` names, if it still exists and has not terminated."""
        obj = self._pods.get(str(ref.get("namespace") or ""), str(ref.get("name") or ""))
        if obj is None or str((obj.get("metadata") or {}).get("uid") or "") != ref.get("uid"):
            return None
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return None
        return obj

    async def _drop_gone_owners(self, r: Reservation) -> bool:
        """Give a shared reservation back what its deleted or finished owners took.

        ``allocated`` is recomputed from the owners still running (their
        requests, masked to the reserved resources) plus the pods charged
        here that the status does not show yet. True when something was freed.
        """
        alive = {str(o.get("uid")): self._alive(o) for o in r.current_owners}
        if all(alive.values()):
            return False
        reserved = r.allocatable or r.requests
        owners: list[dict[str, Any]] = []
        allocated: dict[str, int] = {}
        for ref in r.current_owners:
            obj = alive[str(ref.get("uid"))]
            if obj is None:
                continue
            owners.append(dict(ref))
            with contextlib.suppress(ValueError):
                for k, v in pod_requests(obj).items():
                    if k in reserved:
                        allocated[k] = allocated.get(k, 0) + v
        for uid, c in self._consumed.get(r.name, {}).items():
            if uid not in alive:
                owners.append(c.ref)
                for k, v in c.requests.items():
                    allocated[k] = allocated.get(k, 0) + v
        # A merge patch keeps keys it does not name: null the ones no owner takes now.
        patch: dict[str, Any] = dict.fromkeys(r.allocated)
        patch.update(units_to_resources(allocated))
        await self._patch(r.name, {"currentOwners": owners, "allocated": patch})
        return True

    async def _place(self, r: Reservation, now: float) -> None:
        framework = self.handle.framework
        try:
            pseudo = framework.pod_from_object(r.reserve_pod())
        except ValueError as err:
            await self._unschedulable(r, f"spec.template is not a valid pod: {err}", now)
            return
        node_name, status = framework.find_node(pseudo, self.handle.nodes())
        if node_name is None:
            await self._unschedulable(r, status.message() or "no node fits", now)
            return
        self._placed[r.name] = node_name
        stamp = format_time(now)
        await self._patch(
            r.name,
            {
                "phase": PHASE_AVAILABLE,
                "nodeName": node_name,
                "allocatable": units_to_resources(r.requests),
                "conditions": [
                    _condition("Scheduled", "True", "Scheduled", "", stamp),
                    _condition("Ready", "True", "Available", "", stamp),
                ],
            },
        )

    async def _unschedulable(self, r: Reservation, message: str, now: float) -> None:
        current = [c for c in r.raw_status.get("conditions") or [] if isinstance(c, Mapping)]
        said = any(c.get("type") == "Scheduled" and c.get("message") == message for c in current)
        if said or self._said.get(r.name) == message:
            return  # said already: no write per round
        self._said[r.name] = message
        await self._patch(
            r.name,
            {
                "phase": PHASE_PENDING,
                "conditions": [
                    _condition("Scheduled", "False", "Unschedulable", message, format_time(now))
                ],
            },
        )

    def _retry_pending_pods(self) -> None:
        """Released room may fit pods that waited: send this profile's pending pods back."""
        pods = []
        for obj in self._pods.list():
            spec = obj.get("spec") or {}
            if spec.get("nodeName") or (spec.get("schedulerName") or "default-scheduler") != (
                self.handle.profile_name
            ):
                continue
            with contextlib.suppress(ValueError):
                pods.append(self.handle.framework.pod_from_object(obj))
        if pods:
            self.handle.activate_pods(pods)

    async def _patch(self, name: str, status: Mapping[str, Any]) -> None:
        if self._write_lock is None:
            self._write_lock = asyncio.Lock()
        group, version, plural = RESERVATIONS
        async with self._write_lock:
            await self.handle.client.request(
                "PATCH",
                f"/apis/{group}/{version}/{plural}/{name}/status",
                body={"status": dict(status)},
                content_type=MERGE_PATCH,
            )


async def _sync_while_alive(ref: weakref.ref[ReservationPlugin], interval: float) -> None:
    """Sync every ``interval`` seconds for as long as the plugin instance lives.

    The task holds the plugin only weakly: when a config reload or the end of
    the daemon drops the instance, the task ends instead of syncing for a
    profile that no longer schedules.
    """
    while True:
        await asyncio.sleep(interval)
        plugin = ref()
        if plugin is None:
            return
        try:
            if plugin.handle.is_leader():  # a standby replica never writes
                await plugin.sync()
        except Exception as err:  # the task must outlive one failed round
            plugin.handle.logger.warning("reservation sync failed", error=str(err))
        del plugin


def _condition(kind: str, status: str, reason: str, message: str, stamp: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
    }


def _ready_false(r: Reservation, reason: str, now: float) -> list[dict[str, Any]]:
    """The conditions with Ready=False for ``reason`` (Koordinator's SetReservationExpired)."""
    stamp = format_time(now)
    out = [
        dict(c)
        for c in r.raw_status.get("conditions") or []
        if isinstance(c, Mapping) and c.get("type") != "Ready"
    ]
    out.append(_condition("Ready", "False", reason, "", stamp))
    return out
