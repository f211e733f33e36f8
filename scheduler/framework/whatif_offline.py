"""The what-if API over a cluster file: ``pluggable-scheduler whatif`` (no API server).

The cluster file is loaded as ``explain`` loads it (:func:`.explain.build_table`),
the profiles are built as the daemon builds them, and the request is answered
by the same code as the daemon's ``/whatif`` endpoint. Pending pods are the
cluster file's pods without a node (and not finished) that a profile of the
config schedules; pod objects in the request get their priority from the
file's PriorityClasses, as the API server's admission would give it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.config.models import SchedulerConfiguration
from scheduler.framework.explain import TERMINAL_PHASES, build_table, resolve_priority
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import build_profiles
from scheduler.framework.whatif import Obj, WhatIfAnswer, answer, resolve_pods
from scheduler.framework.whatif import WhatIfRequest as WhatIfRequest
from scheduler.state.pod import InvalidPodError, PodInfo


def _pod_objects(objects: list[Obj]) -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    for obj in objects:
        if obj.get("kind") != "Pod":
            continue
        meta = obj.get("metadata") or {}
        out[f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"] = obj
    return out


def answer_cluster_file(
    objects: list[Obj],
    request: WhatIfRequest,
    config: SchedulerConfiguration,
    catalog: PluginCatalog,
) -> WhatIfAnswer:
    """Answer ``request`` against the cluster file's ``objects`` under ``config``."""
    table, _skipped = build_table(objects)
    stores = StaticStores(list[Mapping[str, Any]](objects))

    def make_handle(name: str) -> FrameworkHandle:
        return FrameworkHandle(name, table, store_provider=stores)

    profiles = build_profiles(config, catalog, make_handle)
    by_key = _pod_objects(objects)

    def parsed(raw: Obj) -> PodInfo | None:
        try:
            return PodInfo.from_dict(resolve_priority(raw, objects)[0])
        except InvalidPodError:
            return None

    def lookup(key: str) -> PodInfo | None:
        raw = by_key.get(key)
        return parsed(raw) if raw is not None else None

    def pending() -> list[PodInfo]:
        out = []
        for raw in by_key.values():
            spec = raw.get("spec") or {}
            phase = (raw.get("status") or {}).get("phase")
            if not isinstance(spec, dict) or spec.get("nodeName") or phase in TERMINAL_PHASES:
                continue
            pod = parsed(raw)
            if pod is not None and (request.profile or pod.scheduler_name) in profiles:
                out.append(pod)
        return out

    def prepare(raw: Obj, where: str) -> Obj:
        return resolve_priority(raw, objects)[0]

    pods = resolve_pods(request, lookup, pending, prepare)
    return answer(request, profiles, table, pods, indexed=request.pods is not None)
