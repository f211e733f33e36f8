"""What the batch workloads measure beyond pods/s: gangs complete, quotas kept.

A gang is scheduled when its last member is bound, so a gang workload's
throughput counts each gang's pods at that moment (:func:`gang_bound_times`),
and the time to the last complete gang is the workload's makespan. A gang
with some members bound and others not at the end is *partial*: the thing
Coscheduling exists to prevent, reported, never averaged away.

A quota workload's invariant is that no ElasticQuota's ``used`` exceeds its
``max`` at any moment. The harness does not read ``status.used`` (in
scheduler-plugins a separate controller writes it, which the benchmark does
not run, and a status is only a report): :class:`QuotaAudit` adds up the
requests of the pods it sees bound in each quota's namespace, event by event
from the one pod watch, and keeps the highest sum and every event that went
over ``max``.

On a real kube-apiserver the CRDs come from the contrib distributions that
ship them unchanged from scheduler-plugins (:func:`crd_manifests`).
"""

from __future__ import annotations

import importlib
import importlib.util
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from scheduler.model.quantity import quantity_to_int, quantity_to_milli
from scheduler.tools.bench.perf import workloads
from scheduler.tools.bench.perf.workloads import ElasticQuota, Phase, Workload

#: Per contrib plugin: the distribution (module) that ships the CRD it reads, and the
#: name of the function returning the manifest.
CRD_SOURCES: Mapping[str, tuple[str, str, str]] = {
    workloads.COSCHEDULING: (
        "scheduler-plugin-coscheduling",
        "scheduler_plugin_coscheduling",
        "crd_manifest",
    ),
    workloads.CAPACITY_SCHEDULING: (
        "scheduler-plugin-capacityscheduling",
        "scheduler_plugin_capacityscheduling",
        "crd_manifest",
    ),
}


def crd_manifests(workload: Workload) -> list[dict[str, Any]]:
    """The CRDs the workload's contrib plugins read, from their distributions."""
    crds: list[dict[str, Any]] = []
    for plugin in workload.plugins:
        distribution, module_name, function = CRD_SOURCES[plugin]
        if importlib.util.find_spec(module_name) is None:
            raise RuntimeError(
                f"{workload.name} needs {plugin} from the {distribution} distribution, "
                f"which is not installed (pip install -e plugins-contrib/{distribution})"
            )
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise RuntimeError(
                f"{workload.name} needs {plugin} from the {distribution} distribution, "
                f"which is installed but cannot be imported: {error}"
            ) from None
        text = str(getattr(module, function)())
        crds += [doc for doc in yaml.safe_load_all(text) if doc]
    return crds


def gang_members(phase: Phase, bound: Mapping[str, float]) -> dict[str, list[float]]:
    """Per PodGroup of the phase, the binding times of its members bound so far.

    `bound` maps ``namespace/name`` of the phase's bound pods to their binding time.
    """
    members: dict[str, list[float]] = {}
    for i in range(phase.count):
        key = f"{phase.namespace_of(i)}/{workloads.pod_name(phase.name, i)}"
        times = members.setdefault(phase.gang_of(i) or key, [])
        if key in bound:
            times.append(bound[key])
    return members


def gang_figures(
    phase: Phase, bound: Mapping[str, float], start: float
) -> tuple[list[float], dict[str, Any]]:
    """Per pod of a complete gang, the time its gang completed (what throughput
    is sampled from), and the gang figures: complete and partial gangs, the time
    from `start` to the last gang's completion, and how far apart a gang's
    members were bound."""
    size = phase.gang_size or 1
    members = gang_members(phase, bound)
    completed = {g: t for g, t in members.items() if len(t) == size}
    partial = sum(1 for t in members.values() if 0 < len(t) < size)
    per_pod = [max(t) for t in completed.values() for _ in range(size)]
    spans = [(max(t) - min(t)) * 1000 for t in completed.values()]
    figures: dict[str, Any] = {
        "gangs": len(members),
        "gang_size": size,
        "complete": len(completed),
        "partial": partial,
        "all_bound_seconds": (
            max(max(t) for t in completed.values()) - start
            if completed and len(completed) == len(members)
            else None
        ),
        "member_span_ms_p50": statistics.median(spans) if spans else None,
        "member_span_ms_max": max(spans) if spans else None,
    }
    return per_pod, figures


def pod_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """Millicores and bytes of memory the pod requests, as CapacityScheduling counts
    them: the containers' sum, at least each init container's, plus overhead."""
    spec = pod.get("spec") or {}

    def requests(container: Mapping[str, Any]) -> tuple[int, int]:
        values = (container.get("resources") or {}).get("requests") or {}
        cpu = quantity_to_milli(values["cpu"]) if "cpu" in values else 0
        memory = quantity_to_int(values["memory"]) if "memory" in values else 0
        return cpu, memory

    cpu = memory = 0
    for container in spec.get("containers") or ():
        c, m = requests(container)
        cpu, memory = cpu + c, memory + m
    for container in spec.get("initContainers") or ():
        c, m = requests(container)
        cpu, memory = max(cpu, c), max(memory, m)
    overhead = spec.get("overhead") or {}
    if overhead:
        c, m = requests({"resources": {"requests": overhead}})
        cpu, memory = cpu + c, memory + m
    return cpu, memory


class QuotaAudit:
    """``used`` of every ElasticQuota, from the pods seen bound, against its ``max``.

    Fed every pod the watch first sees with a node (:meth:`bound`); pods are
    never deleted in the quota workload, so ``used`` only grows and its highest
    value is the last, but each event is checked, so a quota that went over
    ``max`` is caught at the event that did it.
    """

    def __init__(self, quotas: Sequence[ElasticQuota]) -> None:
        self.quotas = {q.namespace: q for q in quotas}
        self.used: dict[str, list[int]] = {q.namespace: [0, 0] for q in quotas}
        self.peak: dict[str, list[int]] = {q.namespace: [0, 0] for q in quotas}
        self.violations: list[str] = []

    def bound(self, namespace: str, pod: Mapping[str, Any]) -> None:
        quota = self.quotas.get(namespace)
        if quota is None:
            return
        cpu, memory = pod_requests(pod)
        used = self.used[namespace]
        used[0] += cpu
        used[1] += memory
        peak = self.peak[namespace]
        peak[0], peak[1] = max(peak[0], used[0]), max(peak[1], used[1])
        if used[0] > quota.max_milli_cpu or used[1] > quota.max_memory:
            name = (pod.get("metadata") or {}).get("name")
            self.violations.append(
                f"{namespace}/{name} bound with {namespace} at cpu {used[0]}m / max "
                f"{quota.max_milli_cpu}m, memory {used[1]} / max {quota.max_memory}"
            )

    def figures(self) -> dict[str, Any]:
        """Peak used/max (cpu) over all quotas, and the violations seen."""
        ratios = [
            self.peak[n][0] / q.max_milli_cpu for n, q in self.quotas.items() if q.max_milli_cpu
        ]
        return {
            "quotas": len(self.quotas),
            "peak_used_over_max": max(ratios) if ratios else None,
            "over_max_events": len(self.violations),
            "violations": self.violations[:20],
            "used_milli_cpu": {n: u[0] for n, u in self.used.items()},
        }
