"""Checking the promises plugins make about themselves (``SCHEDULER_CHECK_PROMISES=1``).

Two plugin attributes let the framework take shortcuts that are exact only
if the plugin tells the truth:

- ``node_local``: the batch cache (``batching.py``) reuses a plugin's Filter
  verdicts and raw Scores across identical pods and recomputes only rows
  that changed.
- ``pods_via_requested``: what-if checks (nominated pods, preemption's batched
  dry run) account pods on a node only in its ``requested`` row and judge
  many nodes in one Filter run.

A plugin that lies changes decisions silently. With the environment variable
``SCHEDULER_CHECK_PROMISES`` set to ``1`` (read once, at import), the
framework recomputes without the shortcut and compares: every cached result
is recomputed over the whole cluster, and every Filter of a
``pods_via_requested`` plugin is run a second time with the pods on the
candidate nodes visible only through ``requested``. A difference raises
:class:`BrokenPromiseError` naming the plugin, the promise and the nodes. It
costs a full recomputation per cycle: for tests and debugging, not production.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.results import FilterResult
from scheduler.api.status import Code, Status
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.podtable import PodTable

ENV_VAR = "SCHEDULER_CHECK_PROMISES"


def enabled_from_env() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


#: Whether promises are checked (tests may flip it; the env var sets it at import).
CHECK_PROMISES = enabled_from_env()


class BrokenPromiseError(RuntimeError):
    """A plugin's ``node_local`` or ``pods_via_requested`` declaration is false."""

    def __init__(self, plugin: str, promise: str, detail: str) -> None:
        super().__init__(f"plugin {plugin} breaks its {promise} promise: {detail}")
        self.plugin = plugin
        self.promise = promise


def _names(table: NodeTable, rows: npt.NDArray[np.int64], limit: int = 5) -> str:
    names = [table.names[r] for r in rows[:limit].tolist()]
    more = len(rows) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def verdict_codes(result: Any, n: int) -> npt.NDArray[np.int8]:
    """A Filter hook's answer as one code per candidate (None/Status: the same for all)."""
    if isinstance(result, FilterResult):
        return result.codes
    code = result.code if isinstance(result, Status) else Code.SUCCESS
    if code is Code.SKIP:
        code = Code.SUCCESS
    return np.full(n, int(code), dtype=np.int8)


@contextmanager
def pods_only_in_requested(table: NodeTable) -> Iterator[None]:
    """The table as a what-if sees it: pods counted in ``requested``, invisible elsewhere."""
    saved = (table.pods, table.ports, table.pod_table)
    table.pods = [{} for _ in range(table.capacity)]
    table.ports = [[] for _ in range(table.capacity)]
    table.pod_table = PodTable()
    try:
        yield
    finally:
        table.pods, table.ports, table.pod_table = saved


def check_pods_via_requested(
    plugin: str,
    call: Callable[[tuple[Any, ...]], Any],
    state: Any,
    pod: Any,
    nodes: NodeSet,
    got: Any,
) -> None:
    """Run a ``pods_via_requested`` Filter again with pods only in ``requested``; compare.

    ``call`` takes the hook's arguments as the framework passes them.
    """
    n = len(nodes)
    with pods_only_in_requested(nodes.table):
        again = call((state, pod, NodeSet(nodes.table, nodes.rows)))
    before, after = verdict_codes(got, n), verdict_codes(again, n)
    differ = np.flatnonzero(before != after)
    if len(differ):
        raise BrokenPromiseError(
            plugin,
            "pods_via_requested",
            "its Filter verdict changes when the pods on a node are seen only through "
            "`requested` (as in preemption's what-ifs), on node(s) "
            + _names(nodes.table, nodes.rows[differ]),
        )


def check_cached_feasible(
    plugins: list[str],
    cached: NodeSet,
    full: NodeSet,
    rejected_by: dict[str, str],
) -> None:
    """The batch cache's feasible nodes must equal a full Filter's (``node_local``)."""
    table = cached.table
    extra = np.setdiff1d(cached.rows, full.rows)
    missing = np.setdiff1d(full.rows, cached.rows)
    if not len(extra) and not len(missing):
        return
    if len(extra):
        # Feasible by the cache, rejected now: the plugin that rejects them changed its mind.
        culprits = sorted({rejected_by.get(table.names[r], "?") for r in extra.tolist()})
        detail = f"node(s) {_names(table, extra)} passed from the cache but are rejected now"
    else:
        culprits = plugins
        detail = f"node(s) {_names(table, missing)} were rejected from the cache but pass now"
    raise BrokenPromiseError(
        " or ".join(culprits),
        "node_local",
        f"{detail}; a node_local Filter verdict must depend on the pod and that node only",
    )


def check_cached_scores(
    cached: dict[str, npt.NDArray[np.int64]],
    full: dict[str, npt.NDArray[np.int64]],
    nodes: NodeSet,
) -> None:
    """The batch cache's raw scores must equal freshly computed ones, plugin by plugin."""
    for plugin, values in cached.items():
        fresh = full.get(plugin)
        if fresh is None:
            continue
        differ = np.flatnonzero(values != fresh)
        if len(differ):
            raise BrokenPromiseError(
                plugin,
                "node_local",
                f"its cached raw Score differs from a fresh one on node(s) "
                f"{_names(nodes.table, nodes.rows[differ])}; a node_local Score must depend "
                "on the pod and that node only",
            )
