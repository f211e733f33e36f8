"""pytest fixtures for plugin authors: an emulated cluster and the real scheduler on it.

Opt-in: a test suite enables it with ``-p scheduler.testing.pytest_plugin``
(e.g. ``addopts`` in ``[tool.pytest.ini_options]``) or
``pytest_plugins = ["scheduler.testing.pytest_plugin"]`` in its top-level
conftest. It is deliberately not a ``pytest11`` entry point: that would import
the scheduler (about 2 s) into every pytest session of every environment
where pluggable-scheduler is installed, whether the suite uses the fixtures
or not. The fixtures are async factories (they need ``pytest-asyncio``) and
function-scoped: everything a test starts is stopped when it ends::

    async def test_lands_on_labelled_node(emulated_cluster, running_scheduler):
        cluster = await emulated_cluster([make_node("a"), make_node("b", labels={"ssd": "1"})])
        sched = await running_scheduler(
            cluster, enable=["MyPlugin"], plugin_config={"MyPlugin": {"label": "ssd"}}
        )
        cluster.create(make_pod("web"))
        await sched.wait_for_placements({"default/web": "b"})

- ``emulated_cluster(objects=(), *, cluster_file=None)`` ->
  :class:`~scheduler.testing.cluster.EmulatedCluster`
- ``running_scheduler(cluster=None, *, plugins=None, enable=(), disable=(),
  plugin_config=None, config=None, seed=0)`` ->
  :class:`~scheduler.testing.harness.RunningScheduler`; ``plugins`` maps
  plugin names to classes not (or not yet) installed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import pytest

from scheduler.config.models import SchedulerConfiguration
from scheduler.testing.cluster import EmulatedCluster, Obj
from scheduler.testing.harness import (
    PluginSpec,
    RunningScheduler,
    build_catalog,
    build_config,
)

try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - exercised only without pytest-asyncio
    pytest_asyncio = None  # type: ignore[assignment]

NEEDS_ASYNCIO = (
    "the pluggable-scheduler fixtures are async: install pytest-asyncio "
    "(pip install 'pytest-asyncio>=0.24') and use asyncio_mode = auto or @pytest.mark.asyncio"
)

ClusterFactory = Callable[..., Awaitable[EmulatedCluster]]


class SchedulerFactory(Protocol):
    def __call__(
        self,
        cluster: EmulatedCluster | None = None,
        *,
        plugins: Mapping[str, type] | None = None,
        enable: Sequence[PluginSpec] = (),
        disable: Sequence[str] = (),
        plugin_config: Mapping[str, Mapping[str, Any]] | None = None,
        config: SchedulerConfiguration | Mapping[str, Any] | str | Path | None = None,
        seed: int | None = 0,
        startup_timeout: float = 30.0,
    ) -> Awaitable[RunningScheduler]: ...


async def _cluster_factory(tmp_path: Path) -> AsyncIterator[ClusterFactory]:
    clusters: list[EmulatedCluster] = []

    async def start(
        objects: Iterable[Obj] = (),
        *,
        cluster_file: str | Path | None = None,
        builtin_crds: bool = True,
    ) -> EmulatedCluster:
        cluster = await EmulatedCluster.start(
            objects,
            cluster_file=cluster_file,
            directory=tmp_path / f"cluster-{len(clusters)}",
            builtin_crds=builtin_crds,
        )
        clusters.append(cluster)
        return cluster

    try:
        yield start
    finally:
        for cluster in reversed(clusters):
            await cluster.stop()


async def _scheduler_factory(cluster_factory: ClusterFactory) -> AsyncIterator[SchedulerFactory]:
    started: list[RunningScheduler] = []

    async def start(
        cluster: EmulatedCluster | None = None,
        *,
        plugins: Mapping[str, type] | None = None,
        enable: Sequence[PluginSpec] = (),
        disable: Sequence[str] = (),
        plugin_config: Mapping[str, Mapping[str, Any]] | None = None,
        config: SchedulerConfiguration | Mapping[str, Any] | str | Path | None = None,
        seed: int | None = 0,
        startup_timeout: float = 30.0,
    ) -> RunningScheduler:
        if cluster is None:
            cluster = await cluster_factory()
        resolved = build_config(config, enable=enable, disable=disable, plugin_config=plugin_config)
        scheduler = await RunningScheduler.start(
            cluster,
            config=resolved,
            catalog=build_catalog(plugins),
            seed=seed,
            startup_timeout=startup_timeout,
        )
        started.append(scheduler)
        return scheduler

    try:
        yield start
    finally:
        errors: list[BaseException] = []
        for scheduler in reversed(started):
            try:
                await scheduler.stop()
            except Exception as err:  # stop every scheduler, then report
                errors.append(err)
        if errors:
            raise errors[0]


if pytest_asyncio is not None:

    @pytest_asyncio.fixture
    async def emulated_cluster(tmp_path: Path) -> AsyncIterator[ClusterFactory]:
        """Factory: ``await emulated_cluster(objects, cluster_file=...)`` -> EmulatedCluster."""
        async for factory in _cluster_factory(tmp_path):
            yield factory

    @pytest_asyncio.fixture
    async def running_scheduler(
        emulated_cluster: ClusterFactory,
    ) -> AsyncIterator[SchedulerFactory]:
        """Factory: ``await running_scheduler(cluster, enable=[...], ...)`` -> RunningScheduler."""
        async for factory in _scheduler_factory(emulated_cluster):
            yield factory

else:  # pragma: no cover - exercised only without pytest-asyncio

    @pytest.fixture  # type: ignore[unreachable]  # only without pytest-asyncio
    def emulated_cluster() -> None:
        pytest.fail(NEEDS_ASYNCIO)

    @pytest.fixture
    def running_scheduler() -> None:
        pytest.fail(NEEDS_ASYNCIO)
