"""The scheduling loop: one pod at a time through the scheduling cycle, then an
async binding cycle per pod (kube-scheduler's ``scheduleOne``).

The scheduling cycle is synchronous and vectorized; it never awaits, so the
NodeTable cannot change under it. The binding cycle runs as a task per pod
so slow API calls, Permit waits or a PreBind waiting for volumes never hold
up the next decision. At most ``binding_concurrency`` Binds are in flight.
When that many cycles are binding or waiting to bind (Permit and PreBind
not counted), the loop waits for one to end before taking the next pod: a
decision that could not be sent would only age (pods assumed seconds ahead
of their binding, on a table that has moved on) while an API server slower
than our decisions bound the pods before it. Every failure path rolls back what the cycle did
(Unreserve, forget the assumed pod) and hands the pod back to the queue:
nothing is lost and nothing is bound twice.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from scheduler.api.binding import BindOutcome, BindResult
from scheduler.api.cyclestate import CycleState
from scheduler.api.results import PostFilterResult
from scheduler.api.status import Code, Status
from scheduler.engine.cache import SchedulerCache
from scheduler.engine.io import ClusterIO
from scheduler.engine.queue import SchedulingQueue
from scheduler.engine.recording import DecisionRecorder
from scheduler.engine.shadow import Shadows
from scheduler.framework.cycle import Algorithm, SamplingStart, ScheduleResult
from scheduler.framework.eager import start_eagerly
from scheduler.framework.extenders import schedule_with_extenders
from scheduler.framework.profile import Profile
from scheduler.framework.waiting import WaitingPodEntry, WaitingPods
from scheduler.observability.metrics import SchedulerMetrics
from scheduler.state.pod import PodInfo, QueuedPodInfo

log = structlog.get_logger("scheduler.engine")

#: Loop iterations between an answered Binding and the end of its binding
#: cycle (see Scheduler._between_decisions).
_ANSWER_STEPS = 3


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def has_pod_scheduled_false(raw: Mapping[str, Any], reason: str, message: str) -> bool:
    """Whether the pod already carries PodScheduled=False with this reason and message.

    Checked before patching, as kube-scheduler does: our own patch comes back
    as a pod update, and re-patching it would loop.
    """
    status = raw.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions if isinstance(conditions, list) else ():
        if (
            isinstance(cond, dict)
            and cond.get("type") == "PodScheduled"
            and (cond.get("status"), cond.get("reason"), cond.get("message"))
            == ("False", reason, message)
        ):
            return True
    return False


def pod_scheduled_condition(reason: str, message: str) -> dict[str, Any]:
    """The status patch kube-scheduler writes for a pod it could not place."""
    return {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": _now_rfc3339(),
                }
            ]
        }
    }


class Scheduler:
    def __init__(
        self,
        profiles: Mapping[str, Profile],
        cache: SchedulerCache,
        queue: SchedulingQueue,
        io: ClusterIO,
        *,
        waiting_pods: WaitingPods,
        metrics: SchedulerMetrics | None = None,
        binding_concurrency: int = 64,
        seed: int | None = None,
    ) -> None:
        self.cache = cache
        self.queue = queue
        self._seed = seed
        self.metrics = metrics
        #: Shadow profiles (``shadowOf``): re-make the primaries' decisions, never bind.
        self.shadows = Shadows(metrics)
        #: Writes every decision's inputs when set (``run --record``).
        self.recorder: DecisionRecorder | None = None
        #: kube's ``nextStartNodeIndex``: one for all profiles, kept across reloads.
        self._sampling_start = SamplingStart()
        self.use_profiles(profiles)
        self.io = io
        self.waiting_pods = waiting_pods
        #: Binds (the POST, or a binding extender's call) in flight at once.
        self._binding_slots = asyncio.Semaphore(binding_concurrency)
        self._binding_limit = binding_concurrency
        #: Binding cycles in PreBind now (not counted against the limit).
        self._pre_binding = 0
        #: Binding cycles in flight, with the profile (and so the plugin
        #: instances) each runs under: a reload waits for those it replaces.
        self._binding_tasks: dict[asyncio.Future[None], Profile] = {}
        #: Set while the loop may take pods (cleared by :meth:`quiesce`).
        self._running = asyncio.Event()
        self._running.set()
        self._background: set[asyncio.Task[None]] = set()
        self._stopping = False
        #: Asked right before every PreBind and Bind: False once this replica
        #: may no longer act for the cluster (it lost, or may have lost, the
        #: lease). The daemon sets it when leader election is on.
        self.may_bind: Callable[[], bool] = lambda: True
        self.scheduled = 0
        self.attempts = 0

    # -- loop ---------------------------------------------------------------------

    async def run(self) -> None:
        """Take pods from the queue until it is closed."""
        while not self._stopping:
            await self._room_to_bind()
            info = await self.queue.pop()
            if info is None:
                break
            if not self._running.is_set() and not await self._wait_unpaused():
                break
            try:
                if self._extender_takes_part(info):
                    await self.schedule_one_split(info)
                else:
                    self.schedule_one(info)
            except Exception:  # a bug must cost one attempt, not the daemon
                log.exception("scheduling cycle crashed", pod=info.pod.key)
                self.queue.requeue_error(info)
            await self._between_decisions()

    async def _room_to_bind(self) -> None:
        """Wait until a binding cycle could start (see the module docstring).

        Cycles waiting at Permit are not counted: they wait for pods still to
        be decided (a gang's other members), which must not wait for them.
        Cycles in PreBind are not counted either: a PreBind may wait minutes
        for others (VolumeBinding for the PV controller and the provisioner,
        up to its ``bindTimeoutSeconds``), and kube-scheduler goes on deciding
        meanwhile; what the limit holds back is decisions whose Binding would
        only queue behind the ones in flight.
        """
        tasks = self._binding_tasks
        while (
            not self._stopping
            and len(tasks) - len(self.waiting_pods) - self._pre_binding >= self._binding_limit
        ):
            await asyncio.wait(list(tasks), return_when=asyncio.FIRST_COMPLETED)

    async def _between_decisions(self) -> None:
        """Let informers and binding cycles run before the next decision.

        One loop iteration runs only what was ready when it began, and an
        answered Binding takes three before its binding cycle ends (the
        response is read, the Bind hook's task ends, the binding cycle
        resumes). Yielding once per decision would make every such step wait
        for another decision and everything else the loop has ready: with
        bindings in flight the loop yields that many times, so an answer is
        dealt with before the next decision. Iterations with nothing to run
        cost a few microseconds.
        """
        await asyncio.sleep(0)
        if self._binding_tasks:
            for _ in range(_ANSWER_STEPS - 1):
                await asyncio.sleep(0)

    async def _wait_unpaused(self) -> bool:
        """A reload is switching profiles: the popped pod waits for the new ones.

        False when a stop came meanwhile.
        """
        await self._running.wait()
        return not self._stopping

    def stop_taking_pods(self) -> None:
        """End the loop now (leadership lost): no further pod is taken from the queue.

        Synchronous, so it takes effect before anything else runs; in-flight
        binding cycles are stopped by ``may_bind`` and cancelled by ``drain``.
        """
        self._stopping = True
        self.queue.close()
        self._running.set()

    @property
    def busy(self) -> bool:
        """Bindings or background writes still in flight."""
        return bool(self._binding_tasks) or bool(self._background)

    async def drain(self, grace: float = 30.0) -> None:
        """Stop taking pods; let in-flight binding cycles finish (or roll back).

        ``grace=0`` cancels them at once: after losing the lease another
        replica is deciding, so our bindings must stop, as kube-scheduler's
        exit stops its goroutines.
        """
        self._stopping = True
        self.queue.close()
        self._running.set()  # a loop paused by a reload must see the stop
        for entry in list(self.waiting_pods):
            entry.reject("", "scheduler is shutting down")
        tasks = list(self._binding_tasks)
        if tasks:
            pending = set(tasks)
            if grace > 0:
                _, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5)
        if self._background:
            await asyncio.wait(list(self._background), timeout=5)
        if self.recorder is not None:
            self.recorder.close()

    def _binding_ended(self, task: asyncio.Future[None]) -> None:
        self._binding_tasks.pop(task, None)

    # -- reconfiguration (config reload) ------------------------------------------

    def use_profiles(self, profiles: Mapping[str, Profile]) -> None:
        """Decide every later pod with ``profiles``; cycles in flight finish with theirs.

        Called between two scheduling cycles (a cycle never awaits), so no
        pod sees half of each.
        """
        self.profiles = self.shadows.configure(profiles, seed=self._seed, nominator=self.queue)
        self.algorithms = {
            name: Algorithm(
                p.framework,
                seed=self._seed,
                nominator=self.queue,
                batching=True,
                start=self._sampling_start,
            )
            for name, p in self.profiles.items()
        }
        for name, profile in self.profiles.items():
            # Preemption's what-if checks count the room nominated pods hold.
            profile.handle.set_nominator(self.queue)
            profile.handle.set_metrics(self.metrics)
            if profile.framework.extenders is not None:
                # Extender filter calls of the pods queued next overlap this one's.
                profile.framework.extenders.prefetch.lookahead = self._lookahead(name)

    def _lookahead(self, scheduler_name: str) -> Callable[[int], list[PodInfo]]:
        """The next pods in the queue while they are of one profile (see
        ``ExtenderPrefetch``): another profile's cycle moves the shared sampling
        start by what it evaluates, so the start of the pods after it is not known."""

        def upcoming(n: int) -> list[PodInfo]:
            return list(
                itertools.takewhile(
                    lambda p: p.scheduler_name == scheduler_name, self.queue.peek(n)
                )
            )

        return upcoming

    async def quiesce(self, profiles: Mapping[str, Profile], within: float) -> int:
        """Pause the loop until no binding cycle runs under ``profiles``; 0 when so.

        For a reload that replaces plugin instances: a binding cycle still
        running with the old instance holds state (assumed volumes, allocated
        devices) the new one would not see. Pods such a profile holds at
        Permit are sent back to the queue (kube's rejection of a waiting
        pod). The loop stays paused until :meth:`resume`; returns how many
        binding cycles were still running after ``within`` seconds.
        """
        self._running.clear()
        frameworks = {id(p.framework) for p in profiles.values()}
        for entry in list(self.waiting_pods):
            profile = self.profiles.get(entry.pod.scheduler_name)
            if profile is not None and id(profile.framework) in frameworks:
                entry.reject("", "the scheduler's configuration is being reloaded")
        tasks = [t for t, p in self._binding_tasks.items() if id(p.framework) in frameworks]
        if not tasks:
            return 0
        _, pending = await asyncio.wait(tasks, timeout=within)
        return len(pending)

    def resume(self) -> None:
        self._running.set()

    def spawn(self, coro: Any) -> None:
        """Run ``coro`` in the background; shutdown waits for it (briefly)."""
        self._spawn(coro)

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- scheduling cycle -----------------------------------------------------------

    def _nothing_to_decide(self, pod: PodInfo) -> Profile | None:
        """The pod's profile, or None (and the pod leaves the queue): not ours, being
        deleted, or already placed."""
        profile = self.profiles.get(pod.scheduler_name)
        if profile is None or pod.deleting or pod.node_name or self.cache.table.has_pod(pod.key):
            self.queue.delete(pod.key)
            return None
        return profile

    def _extender_takes_part(self, info: QueuedPodInfo) -> bool:
        """Whether an HTTP extender is interested in the pod (its cycle then awaits)."""
        profile = self.profiles.get(info.pod.scheduler_name)
        runner = profile.framework.extenders if profile is not None else None
        return runner is not None and runner.interested(info.pod)

    def schedule_one(self, info: QueuedPodInfo) -> None:
        pod = info.pod
        profile = self._nothing_to_decide(pod)
        if profile is None:
            return
        self.attempts += 1
        start = time.perf_counter()
        framework = profile.framework
        state = framework.new_cycle_state()
        result = self.algorithms[pod.scheduler_name].schedule(
            state, pod, self.cache.table, profile.resolved.percentage_of_nodes_to_score
        )
        if self.metrics is not None:
            self.metrics.observe_algorithm(time.perf_counter() - start)
        self._decided(profile, state, info, result, start)

    async def schedule_one_split(self, info: QueuedPodInfo) -> None:
        """The cycle of a pod an HTTP extender takes part in: it awaits the extenders.

        Filter runs as in :meth:`schedule_one`; the extenders then filter and
        score the feasible nodes over HTTP while the loop lets informers and
        binding cycles run; Score and the choice follow on the nodes still in
        the table. Only this pod's cycle waits: the loop is sequential, so no
        other decision is made meanwhile (as in kube-scheduler, whose cycle
        also waits for its extenders).
        """
        pod = info.pod
        profile = self._nothing_to_decide(pod)
        if profile is None:
            return
        runner = profile.framework.extenders
        assert runner is not None
        self.attempts += 1
        start = time.perf_counter()
        state = profile.framework.new_cycle_state()
        result = await schedule_with_extenders(
            self.algorithms[pod.scheduler_name],
            runner,
            state,
            pod,
            self.cache.table,
            profile.resolved.percentage_of_nodes_to_score,
        )
        post = None
        if result.node is None and runner.preempts(pod) and _runs_post_filter(profile, result):
            # PostFilter awaits the extenders' preemptVerb (kube's callExtenders).
            post = await profile.framework.run_post_filter_async(state, pod, result.diagnosis)
        if not self.queue.owns(info) or self.cache.table.has_pod(pod.key):
            # Deleted, replaced or placed while the extenders answered.
            log.info("pod changed during its extender calls", pod=pod.key)
            return
        if self.metrics is not None:
            self.metrics.observe_algorithm(time.perf_counter() - start)
        self._decided(profile, state, info, result, start, post)

    def _decided(
        self,
        profile: Profile,
        state: CycleState,
        info: QueuedPodInfo,
        result: ScheduleResult,
        start: float,
        post: PostFilterResult | None = None,
    ) -> None:
        """Act on the decision: assume, Reserve, Permit and the binding cycle, or the failure.

        ``post``: PostFilter's result when the split cycle already awaited it.
        """
        pod = info.pod
        framework = profile.framework
        if self.recorder is not None:
            self._record(pod, result)
        node = result.node
        if node is None:
            # Before PostFilter: nothing has changed the cluster since the decision.
            self.shadows.follow(profile, pod, result, self.cache.table)
            self._handle_failure(profile, state, info, result.status, result, start, post)
            return
        self.cache.assume(pod, node)
        try:
            status = framework.run_reserve(state, pod, node)
            if not status.is_success():
                self.cache.forget(pod.key)
                self._handle_failure(profile, state, info, status, None, start)
                return
            status, waits = framework.run_permit(state, pod, node)
            if not status.is_success() and not status.is_wait():
                framework.run_unreserve(state, pod, node)
                self.cache.forget(pod.key)
                self._handle_failure(profile, state, info, status, None, start)
                return
            if waits:
                entry = WaitingPodEntry(pod, node, waits)
                self.waiting_pods.add(entry)
        except Exception:
            # A bug past assume must not leave the pod's resources held on the node.
            self.cache.forget(pod.key)
            raise
        # Eagerly: Permit's wait, PreBind and the Binding request start now,
        # not after everything else the loop has ready (see scheduler.framework.eager).
        task = start_eagerly(self._binding_cycle(profile, state, info, node, start))
        if not task.done():
            self._binding_tasks[task] = profile
            task.add_done_callback(self._binding_ended)
        # With the Binding request out: the shadows cost the primary no latency.
        self.shadows.follow(profile, pod, result, self.cache.table)

    def _record(self, pod: PodInfo, result: ScheduleResult) -> None:
        """Record the decision on the table it was made on; a failing recording stops."""
        recorder = self.recorder
        assert recorder is not None
        try:
            recorder.decision(pod.scheduler_name, pod, result, self.cache.table)
        except Exception as err:
            log.error("decision recording failed; recording stops", error=str(err))
            self.recorder = None
            recorder.close()

    def _handle_failure(
        self,
        profile: Profile,
        state: CycleState,
        info: QueuedPodInfo,
        status: Status,
        result: ScheduleResult | None,
        start: float,
        post: PostFilterResult | None = None,
    ) -> None:
        """Record why, try PostFilter (preemption), and hand the pod back to the queue."""
        pod = info.pod
        framework = profile.framework
        if status.code is Code.ERROR:
            message = status.message() or "scheduler error"
            self.io.record_event(pod, "Warning", "FailedScheduling", message, "Scheduling")
            self._patch_condition(pod, "SchedulerError", message)
            self.queue.requeue_error(info)
            self._observe(profile, "error", start)
            log.warning("scheduling error", pod=pod.key, plugin=status.plugin, error=message)
            return
        plugins: set[str] = set()
        if result is not None:
            diagnosis = result.diagnosis
            plugins |= diagnosis.unschedulable_plugins | diagnosis.pending_plugins
            if _runs_post_filter(profile, result):
                if post is None:
                    post = framework.run_post_filter(state, pod, diagnosis)
                if post.status.is_success() and post.nominated_node_name:
                    self._nominate(pod, post.nominated_node_name)
                elif post.status.code is Code.ERROR:
                    log.warning("post-filter error", pod=pod.key, error=post.status.message())
            message = diagnosis.message() if diagnosis.total_nodes else status.message()
        else:
            message = status.message()
        if status.plugin:
            plugins.add(status.plugin)
        self.io.record_event(pod, "Warning", "FailedScheduling", message, "Scheduling")
        self._patch_condition(pod, "Unschedulable", message)
        self.queue.requeue_unschedulable(info, plugins)
        self._observe(profile, "unschedulable", start)
        log.info("pod unschedulable", pod=pod.key, profile=profile.scheduler_name, reason=message)

    def _observe(self, profile: Profile, result: str, start: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_attempt(
                result,  # type: ignore[arg-type]
                profile.scheduler_name,
                time.perf_counter() - start,
            )

    def _patch_condition(self, pod: PodInfo, reason: str, message: str) -> None:
        """Patch PodScheduled=False unless the pod already says exactly that."""
        if not has_pod_scheduled_false(pod.raw, reason, message):
            self.patch_pod_status(pod.namespace, pod.name, pod_scheduled_condition(reason, message))

    def _nominate(self, pod: PodInfo, node: str) -> None:
        self.queue.nominate(pod.key, node)
        self.patch_pod_status(pod.namespace, pod.name, {"status": {"nominatedNodeName": node}})

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """A best-effort status write in the background, drained on shutdown."""
        self._spawn(self._patch(namespace, name, patch))

    async def _patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        try:
            await self.io.patch_pod_status(namespace, name, patch)
        except Exception as err:  # best effort, as in kube-scheduler
            log.info("pod status patch failed", pod=f"{namespace}/{name}", error=str(err))

    # -- binding cycle ------------------------------------------------------------

    async def _binding_cycle(
        self, profile: Profile, state: CycleState, info: QueuedPodInfo, node: str, start: float
    ) -> None:
        pod = info.pod
        framework = profile.framework
        try:
            entry = self.waiting_pods.get(pod.uid or pod.key)
            if entry is not None:
                wait_start = time.perf_counter()
                status = await entry.wait()
                self.waiting_pods.remove(pod.uid or pod.key)
                if self.metrics is not None:
                    self.metrics.observe_permit_wait(status.code, time.perf_counter() - wait_start)
                if not status.is_success():
                    self._binding_failed(profile, state, info, node, status, start)
                    return
            if not self.may_bind():
                self._not_leading(profile, state, info, node)
                return
            self._pre_binding += 1
            try:
                status = await framework.run_pre_bind(state, pod, node)
            finally:
                self._pre_binding -= 1
            if status.is_success():
                async with self._binding_slots:
                    status = self._still_bindable(pod, node)
                    if status.is_success():
                        # Right before the POST: PreBind (and a Permit wait) may
                        # have taken long enough for the lease to be lost.
                        if not self.may_bind():
                            self._not_leading(profile, state, info, node)
                            return
                        status = await framework.run_bind(state, pod, node)
            if not status.is_success():
                if status.code is Code.SKIP:  # placed meanwhile: see _still_bindable
                    self._dropped(profile, state, info, node, "pod was placed meanwhile")
                    return
                # A pod placed elsewhere or gone leaves the queue at once:
                # retrying would only repeat the 409 until the informer
                # catches up (kube's handleSchedulingFailure never requeues
                # a pod its informer shows as assigned).
                outcome = BindOutcome.from_status(status, node)
                if outcome.result is BindResult.FAILED:
                    self._binding_failed(profile, state, info, node, status, start)
                    return
                if not outcome.bound:
                    self._dropped(profile, state, info, node, status.message())
                    return
                log.info("binding found the pod already on our node", pod=pod.key, node=node)
        except asyncio.CancelledError:
            self._binding_failed(
                profile, state, info, node, Status.error_status("binding cancelled"), start
            )
            raise
        self.cache.finish_binding(pod.key)
        self.queue.drop(info)
        self.scheduled += 1
        self.io.record_event(
            pod,
            "Normal",
            "Scheduled",
            f"Successfully assigned {pod.key} to {node}",
            "Binding",
        )
        self._observe(profile, "scheduled", start)
        if self.metrics is not None and info.initial_attempt_timestamp is not None:
            self.metrics.pod_scheduled(
                info.attempts, time.monotonic() - info.initial_attempt_timestamp
            )
        log.debug("pod bound", pod=pod.key, node=node, profile=profile.scheduler_name)
        for failure in await framework.run_post_bind(state, pod, node):
            log.warning("post-bind failed", pod=pod.key, plugin=failure.plugin)

    def _still_bindable(self, pod: PodInfo, node: str) -> Status:
        """Re-check, just before Bind, what may have changed during Permit and PreBind.

        kube-scheduler binds regardless and leaves a pod bound to a deleted
        node to the pod garbage collector; checking the cache first costs
        nothing and sends the pod to a live node instead. A pod the informer
        meanwhile saw bound (by someone else) needs no binding at all (Skip).
        """
        if self.cache.is_assumed(pod.key):
            if self.cache.table.row_of(node) is None:
                return Status(Code.UNSCHEDULABLE, (f'node "{node}" was deleted',))
            return Status.success()
        placed_on = self.cache.table.node_of_pod(pod.key)
        if placed_on is not None:
            return Status(Code.SKIP, (f'pod is already assigned to node "{placed_on}"',))
        # Forgotten without a placement: the node went away (cache.remove_node).
        return Status(Code.UNSCHEDULABLE, (f'node "{node}" was deleted',))

    def _not_leading(
        self, profile: Profile, state: CycleState, info: QueuedPodInfo, node: str
    ) -> None:
        """Roll back a binding this replica may no longer make (the lease is not ours).

        No event and no status patch: those are the leader's to write. The pod
        goes back to the queue in case the lease turns out ours after all
        (a renewal that was only late); otherwise the process exits.
        """
        pod = info.pod
        profile.framework.run_unreserve(state, pod, node)
        self.cache.forget(pod.key)
        self.queue.requeue_error(info)
        log.warning("binding withheld: not holding the lease", pod=pod.key, node=node)

    def _dropped(
        self, profile: Profile, state: CycleState, info: QueuedPodInfo, node: str, why: str
    ) -> None:
        """Roll back an attempt for a pod that is bound elsewhere or gone: no requeue,
        no FailedScheduling event (the pod is not failing to schedule)."""
        pod = info.pod
        profile.framework.run_unreserve(state, pod, node)
        self.cache.forget(pod.key)
        self.queue.drop(info)
        if self.metrics is not None:
            self.metrics.binding_error("Conflict")
        log.info("binding abandoned", pod=pod.key, node=node, reason=why)

    def _binding_failed(
        self,
        profile: Profile,
        state: CycleState,
        info: QueuedPodInfo,
        node: str,
        status: Status,
        start: float,
    ) -> None:
        pod = info.pod
        profile.framework.run_unreserve(state, pod, node)
        self.cache.forget(pod.key)
        reason = type(status.error).__name__ if status.error is not None else status.code.title
        if self.metrics is not None:
            self.metrics.binding_error(reason)
        message = status.message() or status.code.title
        if not self.queue.owns(info):
            # Deleted (or replaced by a new pod of the same name) meanwhile: an
            # event or status patch would be about a pod that no longer exists.
            log.info("binding cycle ended for a deleted pod", pod=pod.key, reason=message)
            return
        if status.code is Code.ERROR:
            # kube's handleSchedulingFailure: the status's own text (the framework
            # already says which plugin at which point), action Scheduling, and
            # PodScheduled=False with reason SchedulerError.
            self.io.record_event(pod, "Warning", "FailedScheduling", message, "Scheduling")
            self._patch_condition(pod, "SchedulerError", message)
            self.queue.requeue_error(info)
            self._observe(profile, "error", start)
        else:
            self.io.record_event(pod, "Warning", "FailedScheduling", message, "Scheduling")
            self._patch_condition(pod, "Unschedulable", message)
            plugins = {status.plugin} if status.plugin else set()
            self.queue.requeue_unschedulable(info, plugins)
            self._observe(profile, "unschedulable", start)
        log.info("binding cycle failed", pod=pod.key, node=node, reason=message)


def _runs_post_filter(profile: Profile, result: ScheduleResult) -> bool:
    """kube runs PostFilter on every fit error, a PreFilter rejection and nodes that
    are all UnschedulableAndUnresolvable included."""
    return bool(
        result.status.is_rejected()
        and result.diagnosis.total_nodes
        and profile.framework.post_filter_calls
    )
