"""What each plugin's hooks are handed: 2.0 views, or 1.x's table objects.

The framework runs a cycle on its own objects (``NodeSet``, ``NodeInfo``:
rows of the live NodeTable). A plugin that declares ``api_version`` 2.x
gets them as the read-only views of :mod:`scheduler.api.views`; a 1.x
plugin gets them as they are, which is exactly what API 1.3 promised. The
choice is made once per (plugin, hook) when the framework is built, so a
1.x call costs nothing extra and a 2.0 call one wrapper call (the view of a
candidate set is made once and shared by every 2.0 plugin of that step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scheduler.api.version import uses_views
from scheduler.state.nodetable import NodeInfo, NodeSet
from scheduler.state.views import NodeView


def plugin_api_version(plugin: object) -> str:
    """The API version a plugin declared (the loader refused plugins without one)."""
    return str(getattr(plugin, "api_version", "1.0"))


def _viewed(value: Any) -> Any:
    if type(value) is NodeSet:
        return value.view()
    if type(value) is NodeInfo:
        return NodeView(value)
    return value


def hook_function(
    plugin: object, fn: Callable[..., Any], argnames: Sequence[str]
) -> Callable[..., Any]:
    """``fn`` as the framework calls it: unchanged for 1.x, converting arguments for 2.x.

    ``argnames`` are the implementation's own parameters, in the order the
    framework passes them.
    """
    if not uses_views(plugin_api_version(plugin)):
        return fn
    positions = [i for i, name in enumerate(argnames) if name in ("nodes", "node")]
    if not positions:
        return fn
    if positions == [2] and len(argnames) == 3:  # (state, pod, nodes): the array hooks
        # The hot path (every Filter/Score call): no helper call, one type check.
        def call3(state: Any, pod: Any, nodes: Any) -> Any:
            if type(nodes) is NodeSet:
                nodes = nodes.cached_view or nodes.view()
            return fn(state, pod, nodes)

        return call3

    def call(*args: Any) -> Any:
        converted = list(args)
        for i in positions:
            converted[i] = _viewed(converted[i])
        return fn(*converted)

    return call
