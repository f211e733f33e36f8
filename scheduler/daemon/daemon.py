"""The long-running scheduler: informers, cache, queue, cycles, leader election, health.

Wiring only: each part lives in its own module. Informers run from start-up,
also on a standby replica, so a newly elected leader has warm caches; the
scheduling loop runs only while leading. Losing the lease ends the process
with a non-zero exit, as kube-scheduler does, so that the Deployment restarts
it clean rather than risk two leaders acting on stale state. Under ``run``,
health, metrics, the lease and signals live on a control thread
(:mod:`scheduler.daemon.control`) that plugin hooks cannot hold up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

import structlog

from scheduler.api.events import ActionType, ClusterEvent
from scheduler.api.handle import ObjectStore
from scheduler.api.status import Status
from scheduler.config.extenders import EXTENDER_PLUGIN
from scheduler.config.models import SchedulerConfiguration
from scheduler.daemon.adapters import LIST_ITEM_KINDS, InformerStore, KubeIO, resource_path
from scheduler.daemon.control import EXIT_STUCK as CONTROL_EXIT_STUCK
from scheduler.daemon.control import HEARTBEAT_EVERY, ClientFactory, ControlThread
from scheduler.daemon.reload import ConfigReloader, digest_of
from scheduler.daemon.shadow_endpoint import PATH as SHADOW_PATH
from scheduler.daemon.shadow_endpoint import ShadowEndpoint
from scheduler.daemon.whatif_endpoint import PATH as WHATIF_PATH
from scheduler.daemon.whatif_endpoint import WhatIfEndpoint
from scheduler.engine.cache import SchedulerCache
from scheduler.engine.clusterevents import (
    NODE_ADD,
    NODE_DELETE,
    POD_ADD,
    POD_DELETE,
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_DELETE,
    UNSCHEDULED_POD_UPDATE,
    assigned_pod_update_event,
    node_update_event,
)
from scheduler.engine.queue import (
    LEFTOVER_FLUSH_INTERVAL,
    SchedulingQueue,
    scheduling_relevant_change,
)
from scheduler.engine.scheduler import (
    Scheduler,
    has_pod_scheduled_false,
    pod_scheduled_condition,
)
from scheduler.engine.validation import (
    check_parsed_requests,
    check_pod_metadata,
    check_pod_spec,
)
from scheduler.errors import UserError
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import Profile, build_profiles
from scheduler.framework.waiting import WaitingPods
from scheduler.kube.client import KubeClient
from scheduler.kube.eventrecorder import EventRecorder
from scheduler.kube.informer import Informer, strip_managed_fields
from scheduler.kube.leaderelection import LeaderElector
from scheduler.observability.metrics import SchedulerMetrics
from scheduler.observability.server import HealthServer, Serving
from scheduler.processgc import freeze_what_is_held
from scheduler.state.pod import InvalidPodError, PodInfo, compact_pod

log = structlog.get_logger("scheduler.daemon")

EXIT_OK = 0
EXIT_LOST_LEASE = 1
#: ``run`` only: a stop the scheduling loop did not finish within
#: ``shutdownGracePeriod`` (a plugin held it); see scheduler.daemon.control.
EXIT_STUCK = CONTROL_EXIT_STUCK

#: Seconds a graceful stop waits to release the lease before leaving it to expire.
RELEASE_WITHIN = 2.0

#: A reload that replaces plugin instances waits this long for the binding
#: cycles still running with the old ones (see Scheduler.quiesce); after
#: that it gives up and tries again at the next check of the file.
RELOAD_DRAIN_WITHIN = 30.0

#: How long a reload waits for the informers of stores newly enabled plugins watch.
RELOAD_SYNC_WITHIN = 60.0

# kube-scheduler's pod informer: terminal pods hold no resources.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


class Daemon:
    def __init__(
        self,
        config: SchedulerConfiguration,
        catalog: PluginCatalog,
        client: KubeClient,
        *,
        identity: str | None = None,
        serve_health: bool = True,
        serving: Serving | None = None,
        seed: int | None = None,
        freeze_gc_after_sync: bool = False,
        control_client: ClientFactory | None = None,
        config_path: Path | None = None,
        rediscover: Callable[[], PluginCatalog] | None = None,
    ) -> None:
        """Wire the daemon; nothing starts until :meth:`run`.

        With ``config_path`` (the file ``config`` was loaded from), the file
        is watched and a changed version applied while running
        (:mod:`scheduler.daemon.reload`); ``rediscover`` then gives the
        plugin catalog a reload resolves against (``run``: a fresh look at the
        installed distributions), else ``catalog`` is used again.

        With ``control_client`` (a factory of a second API client, as ``run``
        passes), health, metrics, leader election and signals run on a
        thread of their own (:mod:`scheduler.daemon.control`), out of reach
        of plugin hooks; without it everything shares the caller's loop,
        which suits embedding and in-process tests.

        ``serving`` says how health and metrics are served (``run``: HTTPS
        with delegated authentication and authorization, as kube-scheduler);
        without it, plain HTTP at ``pluggableScheduler.serverAddress``.
        """
        self.config = config
        self._control_client = control_client
        self.control: ControlThread | None = None
        #: The scheduling loop (set by :meth:`run`): where cache readers must run.
        self.loop: asyncio.AbstractEventLoop | None = None
        #: When the scheduling loop last ran (monotonic); the control thread reads it.
        self.heartbeat_at = time.monotonic()
        self._freeze_gc_after_sync = freeze_gc_after_sync
        self.client = client
        self.identity = identity or f"{socket.gethostname()}_{os.getpid()}"
        self.metrics = SchedulerMetrics()
        self.cache = SchedulerCache()
        self.waiting_pods = WaitingPods()
        self.recorder = EventRecorder(client)
        self.io = KubeIO(client, self.recorder)
        self._stores: dict[tuple[str, str, str], Informer] = {}
        self._informers_started = False
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self.exit_code = EXIT_OK
        self.leading = asyncio.Event()
        self._abrupt = False
        #: One handle per profile, kept across reloads: plugin instances a
        #: reload keeps reach the profile's new framework through it.
        self._handles: dict[str, FrameworkHandle] = {}
        self._catalog = catalog
        self._rediscover = rediscover
        self.reloader: ConfigReloader | None = None
        if config_path is not None and config.pluggable_scheduler.config_reload_period > 0:
            self.reloader = ConfigReloader(
                config_path,
                config,
                self.apply_config,
                metrics=self.metrics,
                notice=self._notice,
                loaded_digest=digest_of(config_path),
            )

        # Created before the profiles: plugin constructors may ask for their stores.
        self.node_informer = Informer(
            client,
            "/api/v1/nodes",
            on_add=self._node_added,
            on_update=self._node_updated,
            on_delete=self._node_deleted,
            transform=strip_managed_fields,
        )
        self.pod_informer = Informer(
            client,
            "/api/v1/pods",
            query={"fieldSelector": POD_FIELD_SELECTOR},
            on_add=self._pod_added,
            on_update=self._pod_updated,
            on_delete=self._pod_deleted,
            # Shares what pods have in common, page by page of the first list:
            # a bound pod then costs well under half the memory.
            transform=compact_pod,
        )
        self.profiles = build_profiles(
            config,
            catalog,
            self._make_handle,
            recorder_for=self.metrics.recorder,
            notices=self._notice,
        )
        first = next(iter(self.profiles.values()))
        self.queue = SchedulingQueue(
            first.framework.queue_sort_key,
            self._pre_enqueue,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            events=_registered_events(self.profiles),
        )
        extensions = config.pluggable_scheduler
        self.scheduler = Scheduler(
            self.profiles,
            self.cache,
            self.queue,
            self.io,
            waiting_pods=self.waiting_pods,
            metrics=self.metrics,
            binding_concurrency=extensions.binding_concurrency,
            seed=seed,
        )
        self.queue.on_change = self._update_pending_metrics
        self.queue.on_incoming = self.metrics.queue_incoming
        # Informers for what enabled plugins declared in ``watches`` exist
        # before start-up, so their stores are synced before the first pod.
        self._declare_watches(self.profiles)
        self.health: HealthServer | None = None
        if serve_health:
            self.health = HealthServer(
                extensions.server_address,
                self.metrics,
                checks={"informer-sync": self._synced_check},
                serving=serving,
            )
            self.health.add_route("POST", WHATIF_PATH, WhatIfEndpoint(self).handle)
            self.health.add_route("GET", SHADOW_PATH, ShadowEndpoint(self.scheduler.shadows).handle)

    # -- plugin handle --------------------------------------------------------------

    def _make_handle(self, profile_name: str) -> FrameworkHandle:
        handle = self._handles.get(profile_name)
        if handle is None:
            handle = self._handles[profile_name] = FrameworkHandle(
                profile_name,
                self.cache.table,
                waiting_pods=self.waiting_pods,
                client=self.client,
                event_sink=lambda pod, t, r, m, a: self.recorder.record(
                    pod, t, r, m, a or "Scheduling"
                ),
                store_provider=self._store,
                activator=lambda pods: self.queue.activate(p.key for p in pods),
                leader=lambda: self.leading.is_set() and self.scheduler.may_bind(),
            )
        return handle

    @property
    def preempting(self) -> bool:
        """Whether a preemption still evicts victims or waits to see them gone (their
        deletion events will retry pods): ``simulate`` and the test harness wait for it."""
        return any(handle.preempting for handle in self._handles.values())

    def own_object(self) -> dict[str, Any] | None:
        """What events about the scheduler itself are recorded on.

        Its Pod, when the Deployment passes ``POD_NAME`` and ``POD_NAMESPACE``
        (the downward API, as deploy/base does): ``kubectl describe`` of the
        scheduler then shows them. Else the lease, when there is one.
        """
        name, namespace = os.environ.get("POD_NAME"), os.environ.get("POD_NAMESPACE")
        if name and namespace:
            return {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace},
            }
        le = self.config.leader_election
        if le.leader_elect:
            return {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": le.resource_name, "namespace": le.resource_namespace},
            }
        return None

    def _notice(self, event_type: str, reason: str, note: str) -> None:
        """An event about the scheduler itself (breakers, reloads); logged by the caller."""
        regarding = self.own_object()
        if regarding is not None:
            self.recorder.record(regarding, event_type, reason, note, reason)

    def _declare_watches(self, profiles: Mapping[str, Profile]) -> None:
        for profile in profiles.values():
            for instance in profile.framework.plugins.values():
                for group, version, plural in getattr(instance, "watches", ()):
                    self._store(group, version, plural)

    # -- config reload ------------------------------------------------------------------

    async def apply_config(self, config: SchedulerConfiguration) -> str:
        """Switch to ``config`` between two scheduling cycles; UserError leaves all as it was.

        Everything that can fail happens first, while the old profiles keep
        scheduling: plugins are imported and built (those with unchanged
        class and args keep their instance), the stores they watch are
        synced, and binding cycles running with instances being replaced
        are waited for. Only ``config``'s reloadable fields differ from the
        running ones (the reloader checked).
        """
        old = self.profiles
        profiles = build_profiles(
            config,
            self._rediscover() if self._rediscover is not None else self._catalog,
            self._make_handle,
            recorder_for=self.metrics.recorder,
            previous=old,
            notices=self._notice,
            activate=False,
        )
        try:
            self._declare_watches(profiles)
            await self._synced_within(RELOAD_SYNC_WITHIN)
            replaced = {
                name: old[name]
                for name, profile in profiles.items()
                if name in old and _replaces_instances(old[name], profile)
            }
            if replaced:
                still = await self.scheduler.quiesce(replaced, within=RELOAD_DRAIN_WITHIN)
                if still:
                    raise UserError(
                        f"{still} binding cycle(s) of profile(s) {', '.join(sorted(replaced))} "
                        f"still ran after {RELOAD_DRAIN_WITHIN:g}s with plugin instances the "
                        "new config replaces; tried again at the next check"
                    )
        except BaseException:
            self.scheduler.resume()
            for profile in profiles.values():
                profile.framework.retire()
            for profile in old.values():
                profile.framework.publish_breakers()
            raise
        summary = describe_changes(old, profiles)
        self._switch(config, old, profiles)
        return summary

    async def _synced_within(self, seconds: float) -> None:
        """Wait for informers started since start-up (a reload's new watches)."""
        if not self._informers_started:
            return  # a standby that has not listed yet: they sync when it leads
        pending = [i for i in self._stores.values() if not i.has_synced.is_set()]
        if not pending:
            return
        try:
            async with asyncio.timeout(seconds):
                await asyncio.gather(*(i.has_synced.wait() for i in pending))
        except TimeoutError:
            paths = ", ".join(i.path for i in pending if not i.has_synced.is_set())
            raise UserError(
                f"the stores newly enabled plugins watch did not sync within {seconds:g}s: {paths}"
            ) from None

    def _switch(
        self,
        config: SchedulerConfiguration,
        old: Mapping[str, Profile],
        profiles: dict[str, Profile],
    ) -> None:
        """The switch itself: synchronous, so no scheduling cycle runs in between."""
        for profile in profiles.values():
            profile.activate()
        self.profiles = profiles
        self.scheduler.use_profiles(profiles)
        kept = {id(p.framework.plugins.get(EXTENDER_PLUGIN)) for p in profiles.values()}
        for profile in old.values():
            profile.framework.retire()
            if id(profile.framework.plugins.get(EXTENDER_PLUGIN)) not in kept:
                self.scheduler.spawn(_close_extenders(profile))
        for name in old.keys() - profiles.keys():
            self._handles.pop(name, None)
        removed, added = old.keys() - profiles.keys(), profiles.keys() - old.keys()
        pending = [
            raw
            for raw in self.pod_informer.store.values()
            if not (raw.get("spec") or {}).get("nodeName")
        ]
        for raw in pending:
            if _scheduler_name(raw) in removed:
                self.queue.delete(_pod_key(raw))
        first = next(iter(profiles.values()))
        self.queue.reconfigure(
            first.framework.queue_sort_key,
            _registered_events(profiles),
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
        )
        for raw in pending:
            if _scheduler_name(raw) in added:
                self._pod_added(raw)
        self.config = config
        self.scheduler.resume()

    def _store(self, group: str, version: str, plural: str) -> ObjectStore:
        key = (group, version, plural)
        if key == ("", "v1", "pods"):
            return InformerStore(self.pod_informer)  # the daemon's own watch suffices
        if key == ("", "v1", "nodes"):
            return InformerStore(self.node_informer)
        informer = self._stores.get(key)
        if informer is None:
            informer = Informer(
                self.client,
                resource_path(group, version, plural),
                on_add=lambda obj: self._custom_event(plural, ActionType.ADD, None, obj),
                on_update=lambda old, new: self._custom_event(plural, ActionType.UPDATE, old, new),
                on_delete=lambda obj: self._custom_event(plural, ActionType.DELETE, obj, None),
                transform=strip_managed_fields,
            )
            self._stores[key] = informer
            if self._informers_started:
                # Asked for after start-up (undeclared in ``watches``): start it now.
                self._start(informer.run(), f"informer {informer.path}")
        return InformerStore(informer)

    def _custom_event(
        self,
        plural: str,
        action: ActionType,
        old: dict[str, Any] | None,
        new: dict[str, Any] | None,
    ) -> None:
        """A change of a plugin-watched resource, as the event its Kind names."""
        obj = new if new is not None else old
        kind = str((obj or {}).get("kind") or LIST_ITEM_KINDS.get(plural) or plural)
        self.queue.move_on_event(ClusterEvent(kind, action), old, new)

    def pre_enqueue_status(self, pod: PodInfo) -> Status:
        """What PreEnqueue says of ``pod`` now (why a never-tried pod is held)."""
        return self._pre_enqueue(pod)

    def _pre_enqueue(self, pod: PodInfo) -> Status:
        profile = self.profiles.get(pod.scheduler_name)
        if profile is None:
            return Status()  # its profile went with a reload; the cycle drops the pod
        return profile.framework.run_pre_enqueue(pod)

    # -- informer handlers ------------------------------------------------------------

    def _node_added(self, node: dict[str, Any]) -> None:
        try:
            self.cache.upsert_node(node)
        except ValueError as err:
            log.warning("ignoring invalid node", error=str(err))
            return
        self.queue.move_on_event(NODE_ADD, None, node)

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        try:
            self.cache.upsert_node(new)
        except ValueError as err:
            log.warning("ignoring invalid node update", error=str(err))
            return
        event = node_update_event(old, new)
        if event is not None:
            self.queue.move_on_event(event, old, new)

    def _node_deleted(self, node: dict[str, Any]) -> None:
        name = str((node.get("metadata") or {}).get("name") or "")
        for pod in self.cache.remove_node(name):
            # Assumed there, not bound yet: stop the binding if it waits.
            entry = self.waiting_pods.get(pod.uid or pod.key)
            if entry is not None:
                entry.reject("", f"node {name} was deleted")
        self.queue.move_on_event(NODE_DELETE, node, None)

    def _parse(self, raw: dict[str, Any], updated: bool = False) -> PodInfo | None:
        """Parse a pod from the informer; an invalid one of ours gets a FailedScheduling.

        Anything the parser trips over counts as invalid, not just the errors it
        anticipates: a pod the API server let through with, say, a list where a
        map belongs must cost one pod, never the informer's handler. An update
        reuses what the pod's earlier parse (in the cache or the queue) derived
        from a spec it left alone.
        """
        try:
            check_pod_metadata(raw)
            check_pod_spec(raw)
            pod = PodInfo.from_dict(raw, self._known(raw) if updated else None)
            check_parsed_requests(pod.key, pod.requests)
            return pod
        except Exception as err:
            message = (
                str(err) if isinstance(err, InvalidPodError) else f"{type(err).__name__}: {err}"
            )
            self._reject_invalid(raw, f"invalid pod: {message}")
            return None

    def _known(self, raw: dict[str, Any]) -> PodInfo | None:
        """The pod as parsed before: accounted on a node (bound or assumed), or queued."""
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        known = self.cache.table.pod(key)
        if known is None:
            queued = self.queue.get(key)
            known = queued.pod if queued is not None else None
        if known is None or known.uid != str(meta.get("uid") or ""):
            return None  # a new pod under the same name is parsed afresh
        return known

    def _reject_invalid(self, raw: dict[str, Any], message: str) -> None:
        meta = raw.get("metadata")
        spec = raw.get("spec")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            log.warning("invalid pod without a usable name", error=message)
            return
        namespace = str(meta.get("namespace") or "default")
        name = str(meta["name"])
        key = f"{namespace}/{name}"
        self.queue.delete(key)
        scheduler_name = "default-scheduler"
        if isinstance(spec, dict) and isinstance(spec.get("schedulerName"), str):
            scheduler_name = spec["schedulerName"] or scheduler_name
        ours = scheduler_name in self.profiles
        if not ours or (isinstance(spec, dict) and spec.get("nodeName")):
            log.warning("invalid pod", pod=key, error=message)
            return
        log.warning("invalid pod", pod=key, error=message, profile=scheduler_name)
        if has_pod_scheduled_false(raw, "Unschedulable", message):
            return  # already said so; our own patch comes back as an update
        self.io.last_failure[key] = message
        pod_ref = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
        self.recorder.record(pod_ref, "Warning", "FailedScheduling", message, "Scheduling")
        self.scheduler.patch_pod_status(
            namespace, name, pod_scheduled_condition("Unschedulable", message)
        )

    def _pod_added(self, raw: dict[str, Any]) -> None:
        pod = self._parse(raw)
        if pod is None:
            return
        if pod.node_name:
            self.queue.delete(pod.key)
            self.cache.add_pod(pod)
            self.queue.move_on_event(POD_ADD, None, raw)
        elif pod.scheduler_name in self.profiles and not pod.deleting:
            self.queue.add(pod)
            # e.g. the last member of a gang arriving may unblock its siblings.
            self.queue.move_on_event(UNSCHEDULED_POD_ADD, None, raw)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        pod = self._parse(new, updated=True)
        if pod is None:
            return  # _reject_invalid took it out of the queue
        if pod.node_name:
            was_assigned = bool((old.get("spec") or {}).get("nodeName"))
            self.queue.delete(pod.key)
            self.cache.add_pod(pod)
            event = assigned_pod_update_event(old, new) if was_assigned else POD_ADD
            if event is not None:
                self.queue.move_on_event(event, old, new)
        elif pod.scheduler_name in self.profiles:
            if pod.deleting:
                self.queue.delete(pod.key)
            else:
                self.queue.update(pod)
                if scheduling_relevant_change(old, new):
                    self.queue.move_on_event(UNSCHEDULED_POD_UPDATE, old, new)

    def _pod_deleted(self, raw: dict[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        was_queued = self.queue.delete(key) is not None
        entry = self.waiting_pods.get(str(meta.get("uid") or key))
        if entry is not None:
            entry.reject("", "pod was deleted")
        if self.cache.table.has_pod(key) and self.cache.remove_pod(key):
            self.queue.move_on_event(POD_DELETE, raw, None)
        elif was_queued:
            self.queue.move_on_event(UNSCHEDULED_POD_DELETE, raw, None)

    # -- health and metrics -----------------------------------------------------------

    def synced(self) -> bool:
        informers = [self.node_informer, self.pod_informer, *self._stores.values()]
        return all(i.has_synced.is_set() for i in informers)

    def _synced_check(self) -> bool | str:
        return True if self.synced() else "informers have not synced yet"

    def _update_pending_metrics(self) -> None:
        counts = self.queue.counts()
        for name in ("active", "backoff", "unschedulable", "gated"):
            self.metrics.set_pending(name, counts[name])

    # -- lifecycle ---------------------------------------------------------------------

    def _start(self, coro: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.append(task)
        task.add_done_callback(self._task_ended)
        return task

    def _task_ended(self, task: asyncio.Task[Any]) -> None:
        """A part of the daemon stopped on its own: exit non-zero rather than limp on.

        Informers, the leftover flush and the election loop only end when told
        to; one that ends (or crashes) early would leave a process that looks
        alive but no longer schedules, or schedules on a frozen view.
        """
        if self._stop.is_set() or task.cancelled():
            return
        error = task.exception()
        log.error(
            "daemon task ended unexpectedly",
            task=task.get_name(),
            error=repr(error) if error is not None else None,
        )
        if self.exit_code == EXIT_OK:
            self.exit_code = EXIT_LOST_LEASE
        self._stop.set()

    async def start_informers(self) -> None:
        self._informers_started = True
        for informer in [self.node_informer, self.pod_informer, *self._stores.values()]:
            self._start(informer.run(), f"informer {informer.path}")
        waits = [self.node_informer.has_synced.wait(), self.pod_informer.has_synced.wait()]
        waits += [i.has_synced.wait() for i in self._stores.values()]
        await asyncio.gather(*waits)
        if self._freeze_gc_after_sync:
            # What the first lists brought in (at 150,000 pods some 3 million
            # container objects, nearly all long-lived) moves to the permanent
            # generation: a full collection then scans only what came after,
            # ~0.4 s instead of ~2 s (a pause of the whole scheduler); with
            # run's thresholds, 10,000 more pods then cost 0.26 s of collection
            # instead of 1.3 s. Only in the process of ``pluggable-scheduler
            # run`` (see scheduler.processgc).
            freeze_what_is_held()

    async def _sync_caches(self) -> None:
        await self.start_informers()
        log.info("caches synced", nodes=len(self.cache.table), pending=len(self.queue))

    async def _lead(self) -> None:
        """Runs while we hold the lease (or always, without leader election)."""
        if not self._informers_started:
            await self._sync_caches()  # delayCacheUntilActive: only now
        self.metrics.set_leader(True)
        self.leading.set()
        log.info("started leading", identity=self.identity)
        await self.scheduler.run()

    def _lost_lease(self) -> None:
        self.metrics.set_leader(False)
        if not self._stop.is_set():
            log.error("leader election lost", identity=self.identity)
            self.exit_code = EXIT_LOST_LEASE
            self._stop.set()

    async def _flush_leftovers(self) -> None:
        while True:
            await asyncio.sleep(LEFTOVER_FLUSH_INTERVAL)
            self.queue.flush_unschedulable_leftover()

    def _lease_lost_now(self) -> None:
        """The elector just learned the lease is gone: stop taking pods at once.

        Called synchronously from inside the elector, before it unwinds (which
        awaits, letting binding tasks run): from here on the scheduling loop
        takes no pod and no binding is sent (the bind gate also asks the
        elector); ``_lost_lease`` then ends the process.
        """
        self.scheduler.stop_taking_pods()

    def request_stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """Whether a stop was requested (safe to read from the control thread)."""
        return self._stop.is_set()

    def control_failed(self, error: str) -> None:
        """The control thread's election ended with an error: exit non-zero, as for a task."""
        if self._stop.is_set():
            return
        log.error("daemon task ended unexpectedly", task="leader election", error=error)
        if self.exit_code == EXIT_OK:
            self.exit_code = EXIT_LOST_LEASE
        self._stop.set()

    async def _heartbeat(self) -> None:
        """Prove the scheduling loop runs: the control thread's liveness check reads this."""
        while True:
            self.heartbeat_at = time.monotonic()
            await asyncio.sleep(HEARTBEAT_EVERY)

    def _on_signal(self, signum: int, _frame: object) -> None:
        """SIGTERM/SIGINT with a control thread: it stops us, and ends us if we are stuck.

        Runs in the main thread between bytecodes, even inside a hook that
        loops, and takes no lock, so it cannot deadlock with what it interrupted.
        """
        assert self.control is not None
        self.control.request_stop(signal.Signals(signum).name)

    @contextlib.contextmanager
    def _signals(self, loop: asyncio.AbstractEventLoop, install: bool) -> Any:
        """SIGTERM/SIGINT handlers for the duration of :meth:`run`."""
        if not install:
            yield
            return
        sigs = (signal.SIGTERM, signal.SIGINT)
        # signal.signal works in the main thread only (where ``run`` runs).
        if self.control is None or threading.current_thread() is not threading.main_thread():
            for sig in sigs:
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, self.request_stop)
            yield
            return
        # A plain handler, not the loop's: the loop's runs only when the loop
        # gets to run, which a stuck hook prevents.
        previous = {sig: signal.signal(sig, self._on_signal) for sig in sigs}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    async def _unless_stopped(self, coro: Coroutine[Any, Any, None]) -> bool:
        """Run ``coro`` unless a stop comes first; True if it finished.

        A start-up step that waits on the API server (the first lists) would
        otherwise keep ``run`` from ever reaching its wait for the stop, and
        the signal handler's request would go unheard until the API answers.
        """
        step = asyncio.ensure_future(coro)
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not step.done():
                step.cancel()
                await asyncio.wait({step})
        if step.cancelled():
            return False
        step.result()  # a failed step fails the start-up, as before
        return True

    async def run(self, *, install_signal_handlers: bool = True) -> int:
        """Run until :meth:`request_stop` (or SIGTERM/SIGINT); returns the exit code.

        A graceful stop finishes in-flight bindings and releases the lease so a
        standby takes over at once. Cancelling the task running this coroutine
        is treated as the process dying: in-flight bindings are cancelled and
        the lease is *not* released (a standby waits for it to expire), which
        is what a crashed or killed replica looks like to the others.
        """
        loop = self.loop = asyncio.get_running_loop()
        extensions = self.config.pluggable_scheduler
        if self._control_client is not None:
            self.control = ControlThread(
                self,
                self._control_client,
                grace=extensions.shutdown_grace_period,
                stall_limit=extensions.scheduling_loop_stall_limit,
            )
            await self.control.start()  # serves health and metrics
        elif self.health is not None:
            await self.health.start()
        with self._signals(loop, install_signal_handlers):
            return await self._run()

    async def _run(self) -> int:
        control = self.control
        self.recorder.start()
        self._start(self._heartbeat(), "heartbeat")
        elector: LeaderElector | None = None
        try:
            le = self.config.leader_election
            # delayCacheUntilActive: a standby does not list and watch until it
            # leads (less API load, a slower takeover), as in kube-scheduler.
            # Raced against a stop: with an API server that never answers the
            # lists, a SIGTERM must still end the process.
            warm = not (le.leader_elect and self.config.delay_cache_until_active)
            if warm and not await self._unless_stopped(self._sync_caches()):
                return self.exit_code
            self._start(self._flush_leftovers(), "leftover flush")
            if self.reloader is not None:
                self._start(self.reloader.run(), "config reload")
            if le.leader_elect:
                elector = LeaderElector(
                    control.client if control is not None else self.client,
                    namespace=le.resource_namespace,
                    name=le.resource_name,
                    identity=self.identity,
                    lease_duration=le.lease_duration,
                    renew_deadline=le.renew_deadline,
                    retry_period=le.retry_period,
                    # Released explicitly on a graceful stop only (see run()).
                    release_on_cancel=False,
                    on_lost=(
                        self._lease_lost_now
                        if control is None
                        else lambda: control.to_scheduling(self._lease_lost_now)
                    ),
                )
                if control is not None:
                    # Read from the control thread's elector: a lost lease
                    # closes the gate even while this loop is held up.
                    self.scheduler.may_bind = control.may_bind
                    control.campaign(elector)
                else:
                    self.scheduler.may_bind = lambda: elector is not None and elector.holds_lease
                    self._start(elector.run(self._lead, self._lost_lease), "leader election")
            else:
                self._start(self._lead(), "scheduling loop")
            await self._stop.wait()
        except asyncio.CancelledError:
            self._abrupt = True
            raise
        finally:
            await self._shutdown(elector)
        return self.exit_code

    async def _shutdown(self, elector: LeaderElector | None) -> None:
        log.info("shutting down", identity=self.identity, exit_code=self.exit_code)
        self._stop.set()
        graceful = self.exit_code == EXIT_OK and not self._abrupt
        # Without the lease (or when dying) another replica may be deciding now:
        # stop binding at once instead of finishing in-flight pods.
        # What is left of the grace period after the release and the rest.
        drain_for = max(0.0, self.config.pluggable_scheduler.shutdown_grace_period - 3.0)
        await self.scheduler.drain(grace=drain_for if graceful else 0.0)
        if elector is not None and graceful and elector.is_leader:
            # Bounded: with an API server that stopped answering, the release
            # (and the renewal holding the elector's lock) would otherwise hold
            # the stop up for a request timeout; the lease then simply expires.
            with contextlib.suppress(Exception):
                async with asyncio.timeout(RELEASE_WITHIN):
                    if self.control is not None:
                        await self.control.release()
                    else:
                        await elector.release()
        for informer in [self.node_informer, self.pod_informer, *self._stores.values()]:
            informer.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for profile in self.profiles.values():
            await _close_extenders(profile)
        await self.recorder.close()
        if self.control is not None:
            await self.control.stop()  # the health server with it
        elif self.health is not None:
            await self.health.stop()
        self.metrics.set_leader(False)


def _registered_events(profiles: Mapping[str, Profile]) -> dict[str, list[Any]]:
    """Every plugin's requeue events, over all profiles, for the queue."""
    events: dict[str, list[Any]] = {}
    for profile in profiles.values():
        for plugin, evs in profile.framework.events_to_register().items():
            events.setdefault(plugin, []).extend(evs)
    return events


def _replaces_instances(old: Profile, new: Profile) -> bool:
    """Whether ``new`` has a fresh instance of a plugin ``old`` also runs."""
    return any(
        name in old.framework.plugins and old.framework.plugins[name] is not instance
        for name, instance in new.framework.plugins.items()
    )


def describe_changes(old: Mapping[str, Profile], new: Mapping[str, Profile]) -> str:
    """One line on what a reload changes, for its log line and event."""
    parts: list[str] = []
    if added := sorted(new.keys() - old.keys()):
        parts.append(f"new profiles {', '.join(added)}")
    if removed := sorted(old.keys() - new.keys()):
        parts.append(f"removed profiles {', '.join(removed)}")
    for name in sorted(new.keys() & old.keys()):
        before, after = old[name].framework.plugins, new[name].framework.plugins
        changes = [f"+{p}" for p in after if p not in before]
        changes += [f"-{p}" for p in before if p not in after]
        changes += [f"{p} (new args)" for p in after if p in before and after[p] is not before[p]]
        if old[name].framework.order != new[name].framework.order:
            changes.append("order or weights")
        if changes:
            parts.append(f"profile {name}: {', '.join(changes)}")
    return "; ".join(parts) or "no plugin changes (budgets, breakers or backoffs)"


def _scheduler_name(raw: Mapping[str, Any]) -> str:
    return str((raw.get("spec") or {}).get("schedulerName") or "default-scheduler")


def _pod_key(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


async def _close_extenders(profile: Profile) -> None:
    """Close the connection pools of a profile's HTTP extenders (none: nothing to do)."""
    runner = profile.framework.extenders
    if runner is not None:
        runner.prefetch.close()
        with contextlib.suppress(Exception):
            await runner.step.close()
