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
        self._data[key] = value

    def read(self, key: str) -> Any:
        """Return the value stored under ``key``; KeyError names the key if absent."""
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"no cycle state stored under {key!r}") from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def clone(self) -> CycleState:
        copy = CycleState()
        for key, value in self._data.items():
            cloner = getattr(value, "clone", None)
            copy._data[key] = cloner() if callable(cloner) else value
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.record_plugin_metrics = self.record_plugin_metrics
        return copy
