"""Building frameworks from in-process plugin classes for runner tests."""

from __future__ import annotations

from typing import Any

from scheduler.config.models import CircuitBreakerConfig, FailurePolicy, HookTimeouts
from scheduler.config.points import ExtensionPoint
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.pluginmanager import POINT_HOOKS, SchedulerPluginManager
from scheduler.framework.runtime import Framework
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo


def make_framework(
    plugins: list[tuple[str, object]],
    *,
    weights: dict[str, int] | None = None,
    timeouts: HookTimeouts | None = None,
    failure_policy: dict[str, FailurePolicy] | None = None,
    circuit_breaker: CircuitBreakerConfig | None = None,
) -> Framework:
    """A Framework running ``plugins`` (name, instance) in list order wherever they hook in."""
    manager = SchedulerPluginManager()
    for name, plugin in plugins:
        manager.register(plugin, name=name)
    order: dict[ExtensionPoint, list[tuple[str, int]]] = {}
    for point, hook in POINT_HOOKS.items():
        order[point] = [
            (name, (weights or {}).get(name, 1))
            for name, plugin in plugins
            if hook in manager.hooks_of(plugin)
        ]
    return Framework(
        "test-profile",
        manager,
        order,
        timeouts=timeouts,
        failure_policy=failure_policy,
        circuit_breaker=circuit_breaker,
    )


def budgets(**fields: str) -> HookTimeouts:
    """HookTimeouts from YAML-style values, e.g. ``budgets(preBind="50ms")``."""
    return HookTimeouts.model_validate(fields)


def node(name: str, cpu: str = "4", memory: str = "8Gi", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod(name: str, cpu: str = "100m", namespace: str = "default", **extra: Any) -> PodInfo:
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }
    raw["spec"].update(extra)
    return PodInfo.from_dict(raw)


def table_of(*nodes: dict[str, Any]) -> NodeTable:
    table = NodeTable()
    for n in nodes:
        table.upsert_node(n)
    return table


def handle(table: NodeTable) -> FrameworkHandle:
    return FrameworkHandle("test-profile", table)
