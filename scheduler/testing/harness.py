"""The real scheduler daemon against an emulated cluster, with helpers to assert on it.

:class:`RunningScheduler` starts :class:`~scheduler.daemon.daemon.Daemon` -
the same object ``pluggable-scheduler run`` starts - talking HTTP to an
:class:`~scheduler.testing.cluster.EmulatedCluster`. Plugins come from the
installed distributions (entry points), plus any classes a test passes in.
Every wait is bounded and fails with what the scheduler last said about each
pod, so a failing test explains itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from scheduler.config import load_config
from scheduler.config.models import DEFAULT_SCHEDULER_NAME, SchedulerConfiguration
from scheduler.daemon.daemon import Daemon
from scheduler.framework.explain import Explanation, explain
from scheduler.framework.loader import PluginCatalog
from scheduler.kube.client import KubeClient
from scheduler.testing.cluster import EmulatedCluster, Obj, split_key

POLL_INTERVAL = 0.02
DEFAULT_TIMEOUT = 10.0

PluginSpec = str | Mapping[str, Any]


def build_catalog(plugins: Mapping[str, type] | None = None) -> PluginCatalog:
    """Installed plugins plus ``plugins``; a class given here replaces an installed namesake."""
    discovered = PluginCatalog.discover()
    if not plugins:
        return discovered
    kept = [discovered.entry(name) for name in discovered.names() if name not in plugins]
    return PluginCatalog(kept).merged(PluginCatalog.from_classes(dict(plugins)))


def build_config(
    config: SchedulerConfiguration | Mapping[str, Any] | str | Path | None = None,
    *,
    enable: Sequence[PluginSpec] = (),
    disable: Sequence[str] = (),
    plugin_config: Mapping[str, Mapping[str, Any]] | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
) -> SchedulerConfiguration:
    """A validated configuration, without leader election.

    Either ``config`` (a model, a config document or a file path), or one
    profile with the default plugins plus ``enable`` (names, or entries like
    ``{"name": "LoadAware", "weight": 5}``) at ``multiPoint``, minus ``disable``,
    and ``plugin_config`` as ``{plugin name: args}``.
    """
    if config is not None and (enable or disable or plugin_config):
        raise ValueError("pass either config or enable/disable/plugin_config, not both")
    if isinstance(config, SchedulerConfiguration):
        loaded = config
    elif config is not None:
        loaded = load_config(config if isinstance(config, Mapping) else Path(config))
    else:
        multi_point: dict[str, Any] = {
            "enabled": [{"name": p} if isinstance(p, str) else dict(p) for p in enable]
        }
        if disable:
            multi_point["disabled"] = [{"name": name} for name in disable]
        profile: dict[str, Any] = {
            "schedulerName": scheduler_name,
            "plugins": {"multiPoint": multi_point},
        }
        if plugin_config:
            profile["pluginConfig"] = [
                {"name": name, "args": dict(args)} for name, args in plugin_config.items()
            ]
        loaded = load_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [profile],
            }
        )
    election = loaded.leader_election.model_copy(update={"leader_elect": False})
    return loaded.model_copy(update={"leader_election": election})


class RunningScheduler:
    """A started daemon; make one with :meth:`start` (the fixture does)."""

    def __init__(
        self,
        cluster: EmulatedCluster,
        daemon: Daemon,
        client: KubeClient,
        task: asyncio.Task[int],
        config: SchedulerConfiguration,
        catalog: PluginCatalog,
    ) -> None:
        self.cluster = cluster
        self.daemon = daemon
        self.client = client
        self.config = config
        self.catalog = catalog
        self._task = task

    @classmethod
    async def start(
        cls,
        cluster: EmulatedCluster,
        *,
        config: SchedulerConfiguration,
        catalog: PluginCatalog,
        seed: int | None = 0,
        startup_timeout: float = 30.0,
    ) -> RunningScheduler:
        """Start the daemon and return once its caches synced and it schedules.

        Configuration and plugin-load problems raise the daemon's own
        :class:`~scheduler.errors.UserError`, as ``pluggable-scheduler run`` reports them.
        """
        client = await KubeClient.from_kubeconfig(str(cluster.kubeconfig), qps=5000, burst=5000)
        try:
            daemon = Daemon(config, catalog, client, serve_health=False, seed=seed)
            task = asyncio.create_task(daemon.run(install_signal_handlers=False))
            leading = asyncio.create_task(daemon.leading.wait())
            done, _ = await asyncio.wait(
                {task, leading}, timeout=startup_timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if task in done:
                leading.cancel()
                task.result()  # start-up failed: raise its error
                raise RuntimeError("the scheduler stopped during start-up")
            if not done:
                leading.cancel()
                daemon.request_stop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, startup_timeout)
                raise TimeoutError(f"the scheduler did not start within {startup_timeout:g}s")
        except BaseException:
            await client.close()
            raise
        return cls(cluster, daemon, client, task, config, catalog)

    async def stop(self, grace: float = 30.0) -> None:
        """Stop the daemon (draining bindings) and close its client; idempotent."""
        if not self._task.done():
            self.daemon.request_stop()
            try:
                await asyncio.wait_for(asyncio.shield(self._task), grace)
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task
        await self.client.close()
        if not self._task.cancelled() and self._task.exception() is not None:
            raise self._task.exception()  # type: ignore[misc]

    @property
    def scheduler_names(self) -> set[str]:
        return set(self.daemon.profiles)

    def _check_alive(self) -> None:
        if self._task.done():
            error = None if self._task.cancelled() else self._task.exception()
            raise AssertionError(f"the scheduler daemon has stopped (error: {error!r})")

    # -- the scheduler's own view (read-only) -----------------------------------------

    def plugin(self, name: str, *, profile: str | None = None) -> Any:
        """The running instance of plugin ``name`` (in ``profile``, or the only profile)."""
        if profile is None:
            if len(self.daemon.profiles) != 1:
                raise LookupError(
                    f"the scheduler runs {len(self.daemon.profiles)} profiles; name one of "
                    f"{sorted(self.daemon.profiles)}"
                )
            profile = next(iter(self.daemon.profiles))
        try:
            return self.daemon.profiles[profile].framework.plugins[name]
        except KeyError:
            raise LookupError(f"profile {profile!r} runs no plugin {name!r}") from None

    def waiting_pods(self) -> list[str]:
        """Pods held at Permit (``namespace/name``), sorted."""
        return sorted(entry.pod.key for entry in self.daemon.waiting_pods)

    def assumed_pods(self) -> list[str]:
        """Pods placed in the scheduler's cache but not yet bound (``namespace/name``), sorted."""
        return sorted(self.daemon.cache.assumed)

    def requested(self) -> dict[str, dict[str, int]]:
        """Resources requested on each node as the scheduler counts them (assumed pods too).

        Values are in the node table's units (cpu in millicores, memory in bytes).
        """
        table = self.daemon.cache.table
        return {
            table.names[row]: dict(table.node_info(row).requested) for row in table.rows().tolist()
        }

    def queue_counts(self) -> dict[str, int]:
        """How many pods each part of the scheduling queue holds (active, backoff, ...)."""
        return dict(self.daemon.queue.counts())

    # -- pods --------------------------------------------------------------------------

    def failure(self, pod: str) -> str | None:
        """The pod's latest FailedScheduling message, if its latest attempt failed."""
        namespace, name = split_key(pod)
        return self.daemon.io.last_failure.get(f"{namespace}/{name}")

    def describe(self, pods: Iterable[str]) -> str:
        """One line per pod: where it is bound, or what the scheduler last said."""
        lines = []
        for pod in pods:
            namespace, name = split_key(pod)
            key = f"{namespace}/{name}"
            node = self.cluster.node_of(key)
            if self.cluster.pod(key) is None:
                state = "does not exist"
            elif node:
                state = f"bound to {node}"
            else:
                state = f"not bound; last failure: {self.failure(key) or 'none yet'}"
            lines.append(f"  {key}: {state}")
        return "\n".join(lines)

    def placements(self) -> dict[str, str | None]:
        """Every pod addressed to this scheduler's profiles -> its node (None if unbound)."""
        out: dict[str, str | None] = {}
        for pod in self.cluster.list("v1", "Pod"):
            spec = pod.get("spec") or {}
            if spec.get("schedulerName") not in self.scheduler_names:
                continue
            meta = pod.get("metadata") or {}
            out[f"{meta.get('namespace')}/{meta.get('name')}"] = spec.get("nodeName") or None
        return out

    async def wait_for_placements(
        self,
        pods: Iterable[str] | Mapping[str, str | None],
        *,
        within: float = DEFAULT_TIMEOUT,
    ) -> dict[str, str | None]:
        """Wait until each pod is bound, then return ``{pod: node}``.

        With a mapping, assert each pod ends where given; ``None`` means the
        pod must stay unscheduled (waited for until an attempt failed).
        Pods are ``"namespace/name"`` (a bare name is in ``default``).
        Raises AssertionError describing every pod on mismatch or timeout.
        """
        expected: dict[str, str | None] | None = None
        if isinstance(pods, Mapping):
            expected = {_key(p): n for p, n in pods.items()}
            keys = list(expected)
        else:
            keys = [_key(p) for p in pods]
        deadline = time.monotonic() + within
        while True:
            self._check_alive()
            current = {key: self.cluster.node_of(key) for key in keys}
            done = all(
                current[key] is not None
                or (expected is not None and expected[key] is None and self.failure(key))
                for key in keys
            )
            if done:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"pods not placed within {within:g}s:\n{self.describe(keys)}")
            await asyncio.sleep(POLL_INTERVAL)
        if expected is not None and current != expected:
            wrong = [k for k in keys if current[k] != expected[k]]
            lines = [f"  {k}: expected {expected[k]}, got {current[k]}" for k in wrong]
            raise AssertionError(
                "unexpected placements:\n" + "\n".join(lines) + "\n" + self.describe(wrong)
            )
        return current

    async def wait_for_failure(self, pod: str, *, within: float = DEFAULT_TIMEOUT) -> str:
        """Wait until an attempt to schedule ``pod`` failed; return the FailedScheduling text."""
        key = _key(pod)
        deadline = time.monotonic() + within
        while True:
            self._check_alive()
            message = self.failure(key)
            if message:
                return message
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"no failed attempt for {key} within {within:g}s:\n{self.describe([key])}"
                )
            await asyncio.sleep(POLL_INTERVAL)

    async def wait_for_event(
        self, pod: str, reason: str = "FailedScheduling", *, within: float = DEFAULT_TIMEOUT
    ) -> Obj:
        """Wait until the API holds an Event of ``reason`` about ``pod``; return the latest.

        Events are sent in the background (and aggregated, as kube-scheduler
        does), so they can lag a little behind the decision itself.
        """
        key = _key(pod)
        deadline = time.monotonic() + within
        while True:
            self._check_alive()
            events = self.cluster.events(key, reason)
            if events:
                return events[-1]
            if time.monotonic() > deadline:
                seen = [e.get("reason") for e in self.cluster.events(key)]
                raise AssertionError(
                    f"no {reason} event about {key} within {within:g}s (events seen: {seen})\n"
                    + self.describe([key])
                )
            await asyncio.sleep(POLL_INTERVAL)

    async def settle(self, *, within: float = DEFAULT_TIMEOUT, quiet_checks: int = 3) -> None:
        """Wait until no pod can make progress: nothing queued, scheduling or binding."""
        deadline = time.monotonic() + within
        quiet = 0
        while quiet < quiet_checks:
            self._check_alive()
            counts = self.daemon.queue.counts()
            busy = (
                counts["active"]
                or counts["backoff"]
                or counts["in_flight"]
                or self.daemon.scheduler.busy
                or self.daemon.cache.assumed
            )
            quiet = 0 if busy else quiet + 1
            if time.monotonic() > deadline:
                raise AssertionError(f"the scheduler did not settle within {within:g}s: {counts}")
            await asyncio.sleep(POLL_INTERVAL)

    # -- explain ------------------------------------------------------------------------

    def explain(self, pod: str | Obj, *, profile: str | None = None) -> Explanation:
        """What ``pluggable-scheduler explain`` says for ``pod`` on the cluster as it is now.

        ``pod`` is a pod key of the cluster or a Pod object. Runs the explain
        logic (:func:`scheduler.framework.explain.explain`) on a snapshot of the
        cluster with this scheduler's configuration and plugins.
        """
        if isinstance(pod, str):
            raw = self.cluster.pod(_key(pod))
            if raw is None:
                raise LookupError(f"no pod {_key(pod)} in the cluster")
        else:
            raw = pod
        return explain(
            self.cluster.snapshot(), raw, self.config, self.catalog, profile_name=profile
        )


def _key(pod: str) -> str:
    namespace, name = split_key(pod)
    return f"{namespace}/{name}"
