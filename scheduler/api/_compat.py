"""Plugin API 1.x names that 2.0 no longer exports, resolved for 1.x plugins.

Before 2.0, ``scheduler.api`` re-exported framework internals (the live
node table, the queue's pod record, the hook specification). 1.x plugins
import them, so they still resolve, but each import warns with a
DeprecationWarning naming what to use instead. This module is the one
place of ``scheduler.api`` that reaches into the framework, and it is
loaded only when such a name is asked for (the import contract in
``tests/test_import_contract.py`` allows exactly this edge).
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

# name -> (module it lives in, what a 2.0 plugin uses instead)
LEGACY_NAMES: dict[str, tuple[str, str]] = {
    "NodeTable": (
        "scheduler.state.nodetable",
        "the read-only scheduler.api.Nodes a hook is given, or handle.nodes()",
    ),
    "NodeSet": ("scheduler.state.nodetable", "scheduler.api.Nodes"),
    "NodeInfo": ("scheduler.state.nodetable", "scheduler.api.Node"),
    "PodInfo": (
        "scheduler.state.pod",
        "scheduler.api.Pod (and scheduler.testing.PluginTestKit.pod to make one in tests)",
    ),
    "QueuedPodInfo": ("scheduler.state.pod", "scheduler.api.QueuedPod"),
    "InvalidPodError": (
        "scheduler.state.pod",
        "scheduler.model.resources.pod_requests (it raises ValueError) to read a pod's requests",
    ),
    "HOOK_NAMES": ("scheduler.api.hookspecs", "nothing: the hooks are scheduler.api.hookspecs"),
    "SchedulerHookSpecs": ("scheduler.api.hookspecs", "nothing: plugins implement hooks only"),
    "hookspec": ("scheduler.api.hookspecs", "hookimpl (plugins implement hooks only)"),
    "Rejection": ("scheduler.api.results", "Diagnosis.node_verdicts"),
    "KubeClient": ("scheduler.api.handle", "scheduler.api.ApiClient (the same protocol, renamed)"),
}


def deprecated(name: str) -> Any:
    """The object a 1.x plugin imported as ``scheduler.api.<name>``, with a warning."""
    entry = LEGACY_NAMES.get(name)
    if entry is None:
        raise AttributeError(f"module 'scheduler.api' has no attribute {name!r}")
    module, replacement = entry
    warnings.warn(
        f"scheduler.api.{name} is not part of plugin API 2.0 (it is the framework's "
        f"internal {module}.{name}); use {replacement}",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(module), name)
