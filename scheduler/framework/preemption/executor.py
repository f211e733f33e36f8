"""Carrying out a preemption: evicting the victims, in the background.

kube's ``Executor`` (``prepareCandidateAsync``): first the victim's status
gets the ``DisruptionTarget`` condition, then ``DELETE`` with a UID
precondition, then a ``Preempted`` event (a victim waiting at Permit is
rejected instead). Lower-priority pods nominated to the chosen node lose
their nomination. All victims but the last go in parallel; meanwhile
PreEnqueue (:meth:`Executor.admit`) holds the preemptor back, and it is let
through once the last victim is seen gone, so that victim's deletion event
retries it (kube's order, which never strands the pod).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from scheduler.api.handle import Handle
from scheduler.api.status import Status
from scheduler.framework.preemption.candidates import (
    DISRUPTION_TARGET,
    REASON_PREEMPTION_BY_SCHEDULER,
    Candidate,
)
from scheduler.state.pod import PodInfo

MSG_IN_PROGRESS = "waiting for the preemption for this pod to be finished"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

# How long, at most, a preemptor waits to see its last victim gone before it may be
# retried anyway (kube's maximum backoff): long graceful deletions must not strand it.
LAST_VICTIM_HOLD_SECONDS = 10.0


class Executor:
    """Evicts the victims of the preemptions one plugin decides, and holds their preemptors."""

    def __init__(self, plugin_name: str, handle: Handle, clock_ns: Callable[[], int]) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        #: For the DisruptionTarget condition's lastTransitionTime.
        self.clock_ns = clock_ns
        self._preempting: set[str] = set()
        #: Preemptor uid -> (key, uid) of its last victim, until that victim is gone
        #: from the table or ``last_victim_hold`` seconds have passed.
        self._awaiting: dict[str, tuple[str, str]] = {}
        self._held: set[str] = set()
        self.last_victim_hold = LAST_VICTIM_HOLD_SECONDS
        self._tasks: set[asyncio.Task[None]] = set()
        register = getattr(handle, "register_executor", None)
        if callable(register):  # the framework's handle: ``simulate`` waits for us
            register(self)

    @property
    def busy(self) -> bool:
        """Victims are being evicted, or a preemptor still waits to see its last one gone:
        events that will retry pods are still to come."""
        return bool(self._tasks) or bool(self._awaiting)

    @property
    def background_tasks(self) -> frozenset[asyncio.Task[None]]:
        """Preemptions still deleting their victims."""
        return frozenset(self._tasks)

    def is_preempting(self, uid: str) -> bool:
        """Whether the victims of this preemptor are still being deleted."""
        return uid in self._preempting

    def admit(self, pod: PodInfo) -> Status | None:
        """PreEnqueue: hold the pod back while its victims are being deleted (kube's async
        preemption); None lets it through.

        It stops counting as preempting before its last victim is deleted,
        so that victim's deletion event retries it once every victim is gone.
        Until that event, other events (the earlier victims' deletions) would
        retry it on a node that is not free yet, for a wasted attempt each:
        it stays held until its last victim (that very pod, by uid) is gone
        from the cache, for ``last_victim_hold`` seconds at most.
        """
        uid = pod.uid or pod.key
        if self.is_preempting(uid):
            return Status.unresolvable(MSG_IN_PROGRESS)
        awaited = self._awaiting.get(uid)
        if awaited is not None:
            key, victim_uid = awaited
            if self._cached_uid(key) == victim_uid:
                self._held.add(uid)
                return Status.unresolvable(MSG_IN_PROGRESS)
            self._stop_awaiting(uid)
        return None

    def _cached_uid(self, key: str) -> str | None:
        """The uid of the pod the cache holds under ``key`` on a node, if any."""
        table = self.handle.table
        node = table.node_of_pod(key)
        row = table.row_of(node) if node is not None else None
        cached = table.pods[row].get(key) if row is not None else None
        return (cached.uid or cached.key) if cached is not None else None

    def _await_last_victim(self, pod: PodInfo, victim: PodInfo) -> None:
        uid = pod.uid or pod.key
        victim_uid = victim.uid or victim.key
        self._awaiting[uid] = (victim.key, victim_uid)
        loop = asyncio.get_running_loop()
        loop.call_later(self.last_victim_hold, self._hold_expired, pod, victim_uid)

    def _hold_expired(self, pod: PodInfo, victim_uid: str) -> None:
        """The bound on the hold: a pod still held is retried now."""
        uid = pod.uid or pod.key
        awaited = self._awaiting.get(uid)
        if awaited is None or awaited[1] != victim_uid:
            return
        held = uid in self._held
        self._stop_awaiting(uid)
        if held:
            self.handle.activate_pods([pod])

    def _stop_awaiting(self, uid: str) -> None:
        self._awaiting.pop(uid, None)
        self._held.discard(uid)

    def prepare_candidate(self, candidate: Candidate, pod: PodInfo) -> None:
        """Start evicting the victims and clearing lower-priority nominations, in the background.

        Where no event loop runs (``explain``), nothing is evicted: the
        nomination is the answer.
        """
        # The framework's own pods: plugins hand back the pods it gave them.
        victims = [cast(PodInfo, v) for v in candidate.victims if not v.deleting]
        if victims:  # kube's async preemption observes only when it has pods to evict
            self.handle.record_preemption_victims(len(candidate.victims))
        if self._spawn(self._evict(candidate.node, pod, victims), pod) and victims:
            # Marked now, not when the task first runs: a retry of the pod
            # in between must already see the preemption in progress. With
            # every victim already terminating there is nothing to wait for
            # (and no deletion of ours whose event would release the pod).
            self._preempting.add(pod.uid or pod.key)

    def clear_nomination(self, pod: PodInfo) -> None:
        """Clear the pod's own nomination in the background (kube does when preemption
        cannot help it)."""
        self._spawn(self._unnominate(pod), pod)

    def _spawn(self, coro: Any, pod: PodInfo) -> bool:
        """Run ``coro`` as a background task (kept referenced); False without a loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            coro.close()
            self.handle.logger.info("preemption not carried out: no event loop", pod=pod.key)
            return False
        task: asyncio.Task[None] = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _evict(self, node: str, pod: PodInfo, victims: list[PodInfo]) -> None:
        uid = pod.uid or pod.key
        failed = silent = False
        try:
            try:
                await self._clear_lower_priority_nominations(pod, node)
            except Exception as err:  # not critical, as in kube
                failed = True
                self.handle.logger.warning(
                    "cannot clear nominatedNodeName of lower-priority pods",
                    node=node,
                    error=str(err),
                )
            # Every victim but the last in parallel; the pod stops counting as
            # preempting before the last one goes (kube's order). Otherwise all
            # the deletion events could be handled while it still counts, its
            # retry would be turned away ("waiting for the preemption ...") and
            # no further event would come to retry it.
            failed |= await self._preempt_victims(pod, node, victims[:-1])
            last = victims[-1:]
            # A waiting victim is rejected at Permit, not deleted: no event follows.
            silent = (
                bool(last) and self.handle.get_waiting_pod(last[0].uid or last[0].key) is not None
            )
            if last and not silent:
                self._await_last_victim(pod, last[0])
            self._preempting.discard(uid)
            failed |= await self._preempt_victims(pod, node, last)
        finally:
            self._preempting.discard(uid)
        if failed or silent:
            self._stop_awaiting(uid)
            # The pod may wait in the unschedulable pool for events that will
            # not come; retry it now, as kube does.
            self.handle.activate_pods([pod])

    async def _preempt_victims(self, pod: PodInfo, node: str, victims: list[PodInfo]) -> bool:
        """Preempt ``victims`` concurrently; True if any failed (each failure is logged)."""
        results = await asyncio.gather(
            *(self._preempt_victim(pod, node, v) for v in victims), return_exceptions=True
        )
        failed = False
        for victim, outcome in zip(victims, results, strict=True):
            if isinstance(outcome, BaseException):
                failed = True
                self.handle.logger.warning(
                    "preempting victim failed",
                    pod=pod.key,
                    victim=victim.key,
                    node=node,
                    error=str(outcome),
                )
        return failed

    async def _preempt_victim(self, pod: PodInfo, node: str, victim: PodInfo) -> None:
        waiting = self.handle.get_waiting_pod(victim.uid or victim.key)
        if waiting is not None:
            waiting.reject(self.plugin_name, "preempted")
        else:
            client = self.handle.client
            base = f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}"
            condition = {
                "type": DISRUPTION_TARGET,
                "status": "True",
                "reason": REASON_PREEMPTION_BY_SCHEDULER,
                "message": f"{pod.scheduler_name}: preempting to accommodate a higher priority pod",
            }
            if not _has_condition(victim, condition):
                patch = {
                    "metadata": {"uid": victim.uid},
                    "status": {
                        "conditions": [
                            {**condition, "lastTransitionTime": _now_rfc3339(self.clock_ns())}
                        ]
                    },
                }
                try:
                    await client.request(
                        "PATCH", base + "/status", body=patch, content_type=STRATEGIC_MERGE_PATCH
                    )
                except Exception as err:
                    if _is_gone(err):
                        return
                    raise
            options = {
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "preconditions": {"uid": victim.uid},
            }
            try:
                await client.request("DELETE", base, body=options)
            except Exception as err:
                if _is_gone(err):
                    return
                raise
        self.handle.record_event(
            victim,
            "Normal",
            "Preempted",
            f"Preempted by pod {pod.uid} on node {node}",
            "Preempting",
        )

    async def _unnominate(self, pod: PodInfo) -> None:
        try:
            await self._clear_nominations([pod.raw])
        except Exception as err:  # best effort: the next attempt tries again
            self.handle.logger.info(
                "cannot clear the pod's nominatedNodeName", pod=pod.key, error=str(err)
            )

    async def _clear_lower_priority_nominations(self, pod: PodInfo, node: str) -> None:
        """Lower-priority pods nominated to ``node`` may not fit any more: un-nominate them.

        The nominations come from the scheduling queue (as kube's nominator
        answers them), not from listing pods: no API read per preemption.
        """
        table = self.handle.table
        lower = [
            other.raw
            for other in self.handle.nominated_pods().get(node, ())
            if other.priority < pod.priority
            and other.uid != pod.uid
            and not table.has_pod(other.key)
        ]
        await self._clear_nominations(lower)

    async def _clear_nominations(self, pods: Iterable[Mapping[str, Any]]) -> None:
        client = self.handle.client
        for raw in pods:
            meta = raw.get("metadata") or {}
            path = (
                f"/api/v1/namespaces/{meta.get('namespace') or 'default'}"
                f"/pods/{meta.get('name') or ''}/status"
            )
            patch = {"metadata": {"uid": meta.get("uid")}, "status": {"nominatedNodeName": None}}
            try:
                await client.request("PATCH", path, body=patch, content_type=STRATEGIC_MERGE_PATCH)
            except Exception as err:
                if not _is_gone(err):
                    raise


def _is_gone(err: BaseException) -> bool:
    """A 404 (victim already deleted) or 409 (UID precondition: a different pod now)."""
    return getattr(err, "status", None) in (404, 409)


def _has_condition(pod: PodInfo, condition: Mapping[str, str]) -> bool:
    for existing in (pod.raw.get("status") or {}).get("conditions") or ():
        if isinstance(existing, Mapping) and all(
            existing.get(k) == v for k, v in condition.items()
        ):
            return True
    return False


def _now_rfc3339(now_ns: int) -> str:
    return datetime.fromtimestamp(now_ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
