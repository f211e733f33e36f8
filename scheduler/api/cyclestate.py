"""Per-attempt scratch space shared by the plugins of one scheduling cycle.

A plugin typically computes something once in PreFilter/PreScore and reads it
in Filter/Score. Preemption evaluates "what if these pods were gone" on a copy,
so values that are mutated by the AddPod/RemovePod extensions should
implement ``clone()``; values without it are shared by the copies, which is
right for read-only data.
"""

from __future__ import annotations

from typing import Any


class CycleState:
    """Key-value store for one scheduling attempt; keys are namespaced by plugin name.

    ``skip_filter_plugins`` / ``skip_score_plugins`` record PreFilter and
    PreScore Skip results; ``record_plugin_metrics`` says whether this attempt
    is one of the sampled ones whose plugin calls are timed.
    """

    __slots__ = ("_data", "record_plugin_metrics", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        # Set by the framework on a sample of cycles: time each plugin call.
        self.record_plugin_metrics = True
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``;
        prefix keys with the plugin's name: plugins never collide.

        Examples:
            >>> state = CycleState()
            >>> state.write("ZoneGate/zones", ("a", "b"))
            >>> state.read("ZoneGate/zones")
            ('a', 'b')
            >>> state.read("Other/missing")
            Traceback (most recent call last):
            ...
            KeyError: "no cycle state stored under 'Other/missing'"
        """
        self._data[key] = value

    def read(self, key: str) -> Any:
        """Return the value stored under ``key``; KeyError names the key if absent."""
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"no cycle state stored under {key!r}") from None

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``: for data a hook may or may not have written."""
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        """Forget ``key`` (no error if absent)."""
        self._data.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def clone(self) -> CycleState:
        """A copy for a what-if evaluation (preemption's): values with a ``clone()`` are cloned.

        Values without ``clone()`` are shared with the copy, so mutate in
        ``pre_filter_add_pod``/``pre_filter_remove_pod`` only values that clone.

        Examples:
            >>> class Count:
            ...     def __init__(self, n): self.n = n
            ...     def clone(self): return Count(self.n)
            >>> state = CycleState()
            >>> state.write("P/count", Count(1))
            >>> copy = state.clone()
            >>> copy.read("P/count").n += 1
            >>> state.read("P/count").n, copy.read("P/count").n
            (1, 2)
        """
        copy = CycleState()
        for key, value in self._data.items():
            cloner = getattr(value, "clone", None)
            copy._data[key] = cloner() if callable(cloner) else value
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.record_plugin_metrics = self.record_plugin_metrics
        return copy
