"""Which parts of a configuration may change while the daemon runs.

Hot reload (``pluggableScheduler.configReloadPeriod``) swaps what the
scheduling cycles read between two cycles: the profiles and everything that
resolves into them, and the queue's backoffs. What the process set up once at
start-up (its API clients, the lease, the health server's socket, the
binding pool, the stop timing) would need a restart to change, so a new file
that changes any of it is refused as a whole, naming the fields, rather than
half applied.
"""

from __future__ import annotations

from typing import Any, Final

from scheduler.config.models import SchedulerConfiguration

#: Field paths (as written in the file) a reload applies.
RELOADABLE: Final = frozenset(
    {
        "profiles",
        "percentageOfNodesToScore",
        "podInitialBackoffSeconds",
        "podMaxBackoffSeconds",
        "pluggableScheduler.timeouts",
        "pluggableScheduler.circuitBreaker",
    }
)


def fixed_field_changes(old: SchedulerConfiguration, new: SchedulerConfiguration) -> list[str]:
    """Paths of fields outside :data:`RELOADABLE` whose values differ, sorted."""
    changed: list[str] = []
    _diff(old.model_dump(by_alias=True), new.model_dump(by_alias=True), "", changed)
    return sorted(changed)


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if path in RELOADABLE or old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old.keys() | new.keys():
            _diff(old.get(key), new.get(key), f"{path}.{key}" if path else str(key), out)
        return
    out.append(path)
