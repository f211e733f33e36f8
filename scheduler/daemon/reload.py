"""Config hot reload: watch the ``--config`` file, validate a change, hand it to the daemon.

A platform team changes a weight or enables a plugin by editing the
ConfigMap mounted as the config file; the kubelet swaps the file in place
within a minute. Restarting the scheduler for that would cost the lease
(a failover) and the queue's backoff state, so ``run`` polls the file every
``pluggableScheduler.configReloadPeriod`` and, when its bytes change:

1. loads and validates it like at start-up (field paths in every error);
2. refuses it if it changes a field only a restart can apply
   (:mod:`scheduler.config.changes`);
3. asks the daemon to apply it (:meth:`Daemon.apply_config`): plugins it
   newly enables are imported and constructed, each plugin's args are
   validated by its model, stores they watch are synced — all before the
   switch, which happens between two scheduling cycles.

A file that fails any step changes nothing: the running config stays, and
the failure is logged at error, recorded as a Warning event on the
scheduler's own object and in ``scheduler_config_last_reload_successful``.
The same bytes are not tried again; the next edit is. Polling, not inotify:
a ConfigMap update is a symlink swap in the mount's parent directory, which
file watches on the path itself miss, and reading a few kilobytes every few
seconds costs nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

from scheduler.config.changes import fixed_field_changes
from scheduler.config.loading import load_config
from scheduler.config.models import SchedulerConfiguration
from scheduler.errors import UserError
from scheduler.observability.metrics import SchedulerMetrics

log = structlog.get_logger("scheduler.reload")

Apply = Callable[[SchedulerConfiguration], Awaitable[str]]
"""Applies a validated config; returns a summary of what changed, or raises UserError."""

Notice = Callable[[str, str, str], None]
"""An event about the scheduler itself: (type, reason, note)."""


def digest_of(path: Path) -> str | None:
    """The file's content digest; None when it cannot be read (reported on load)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


class ConfigReloader:
    """Polls one config file and applies each new version of it, or reports why not."""

    def __init__(
        self,
        path: Path,
        running: SchedulerConfiguration,
        apply: Apply,
        *,
        metrics: SchedulerMetrics,
        notice: Notice,
        loaded_digest: str | None = None,
    ) -> None:
        self.path = path
        self.running = running
        self._apply = apply
        self._metrics = metrics
        self._notice = notice
        #: The bytes last tried (applied or refused): not tried again.
        self._seen = loaded_digest if loaded_digest is not None else digest_of(path)
        metrics.config_loaded()

    @property
    def period(self) -> float:
        return self.running.pluggable_scheduler.config_reload_period

    async def run(self) -> None:
        """Check every period until cancelled."""
        while True:
            await asyncio.sleep(self.period)
            await self.check()

    async def check(self) -> bool | None:
        """Apply the file if it changed: True applied, False refused, None unchanged."""
        digest = digest_of(self.path)
        if digest is None and self._seen is None:
            return None
        if digest == self._seen:
            return None
        self._seen = digest
        try:
            # The command line's --feature-gates still win over the new file.
            config = load_config(self.path).with_feature_gate_flags(self.running.feature_gate_flags)
            fixed = fixed_field_changes(self.running, config)
            if fixed:
                raise UserError(
                    "these fields cannot change while the scheduler runs (restart it to "
                    "apply them)",
                    details=fixed,
                )
            summary = await self._apply(config)
        except UserError as err:
            self._failed(err)
            return False
        except Exception as err:  # a bug must cost this reload, not the daemon
            log.exception("configuration reload crashed", config=str(self.path))
            self._failed(UserError(f"reload failed: {type(err).__name__}: {err}"))
            return False
        self.running = config
        self._metrics.config_reload(success=True)
        log.info("configuration reloaded", config=str(self.path), changes=summary)
        self._notice("Normal", "ConfigReloaded", f"applied {self.path}: {summary}")
        return True

    def _failed(self, err: UserError) -> None:
        self._metrics.config_reload(success=False)
        text = err.render()
        log.error(
            "configuration reload failed; the running configuration stays",
            config=str(self.path),
            error=text,
        )
        self._notice(
            "Warning",
            "ConfigReloadFailed",
            f"{self.path} not applied, the running configuration stays: {text}",
        )
