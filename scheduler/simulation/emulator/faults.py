"""Fault injection: the failures a scheduler must survive, on demand.

Rules are matched per request (by verb, resource and path) before it is
served, so a test can make the third binding fail with 500 or every list
answer 429 with Retry-After. Watch-level faults (dropped streams, forced
compaction) act on the live watchers through callbacks the server installs.
The same operations are reachable over HTTP at ``/_emulator/faults`` for an
emulator running in another process.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from scheduler.simulation.emulator.statuserrors import ApiError

_REASONS = {
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "Internal error occurred: injected by the emulator"),
    503: ("ServiceUnavailable", "The server is currently unable to handle the request"),
    504: ("Timeout", "The server was unable to return a response in the time allotted"),
}


@dataclass
class FaultRule:
    """Fail (``status``) and/or delay (``delay`` seconds) matching requests.

    ``verb`` is a Kubernetes verb (get, list, watch, create, update, patch,
    delete); ``resource`` a plural optionally with subresource
    (``pods/binding``); ``path`` a regular expression searched in the URL path.
    ``count`` limits how many requests the rule affects (None: until cleared).
    ``skip`` lets the first that many matching requests through untouched
    (counted in ``skipped``, not in ``hits`` or against ``count``).
    ``after`` (failing rules only) applies the request first and then answers
    with the error: the write is committed but the client never learns it
    ("the answer was lost"). Watches are never failed ``after``.

    Several rules may match one request: see :meth:`Faults.check`.
    """

    status: int | None = None
    delay: float = 0.0
    verb: str | None = None
    resource: str | None = None
    path: str | None = None
    count: int | None = 1
    retry_after: int | None = None
    message: str | None = None
    skip: int = 0
    after: bool = False
    hits: int = 0
    skipped: int = 0
    _pattern: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.hits >= self.count

    def matches(self, verb: str, resource: str, path: str) -> bool:
        """Whether the request is in scope and the rule has budget left."""
        if self.exhausted:
            return False
        if self.verb is not None and self.verb != verb:
            return False
        if self.resource is not None and self.resource != resource:
            return False
        if self.after and verb == "watch":
            return False
        if self.path is not None:
            if self._pattern is None:
                self._pattern = re.compile(self.path)
            if not self._pattern.search(path):
                return False
        return True

    def error(self) -> ApiError | None:
        if self.status is None:
            return None
        reason, message = _REASONS.get(self.status, ("InternalError", "injected fault"))
        details: dict[str, Any] = {}
        headers: dict[str, str] = {}
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
            headers["Retry-After"] = str(self.retry_after)
        kind = LostAnswer if self.after else ApiError
        return kind(self.status, reason, self.message or message, details or None, headers=headers)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("_pattern", None)
        return data


class LostAnswer(ApiError):
    """An injected error the server answers *after* applying the request (``after``)."""


class Faults:
    def __init__(self) -> None:
        self.rules: list[FaultRule] = []
        self.latency = 0.0
        # Installed by the server: end every open watch (abruptly or not) and
        # forget history so old resourceVersions answer 410 Expired.
        self._drop_watches: Callable[[bool], int] = lambda _abrupt: 0
        self._expire: Callable[[], int] = lambda: 0

    def fail(
        self,
        status: int = 500,
        *,
        verb: str | None = None,
        resource: str | None = None,
        path: str | None = None,
        count: int | None = 1,
        retry_after: int | None = None,
        message: str | None = None,
        skip: int = 0,
        after: bool = False,
    ) -> FaultRule:
        """Fail matching requests with ``status`` (see :class:`FaultRule`)."""
        rule = FaultRule(
            status=status,
            verb=verb,
            resource=resource,
            path=path,
            count=count,
            retry_after=retry_after,
            message=message,
            skip=skip,
            after=after,
        )
        self.rules.append(rule)
        return rule

    def delay(
        self,
        seconds: float,
        *,
        verb: str | None = None,
        resource: str | None = None,
        path: str | None = None,
        count: int | None = None,
        skip: int = 0,
    ) -> FaultRule:
        rule = FaultRule(
            delay=seconds, verb=verb, resource=resource, path=path, count=count, skip=skip
        )
        self.rules.append(rule)
        return rule

    def drop_watches(self, *, abrupt: bool = True) -> int:
        """End every open watch stream; returns how many were open."""
        return self._drop_watches(abrupt)

    def expire_watches(self) -> int:
        """Compact history and send ``ERROR 410 Expired`` to every open watch."""
        return self._expire()

    def clear(self) -> None:
        self.rules.clear()
        self.latency = 0.0

    def check(self, verb: str, resource: str, path: str) -> tuple[float, ApiError | None]:
        """Delay and error for one request.

        Rules are considered in the order they were added; a rule takes part
        if it matches the request and has budget left (``count``).

        - A rule still skipping (``skip``) lets the request pass it: it counts
          in ``skipped`` and the next rules are considered.
        - Every delay-only rule that takes part adds its delay and counts a hit.
        - Of the failing rules (``status`` set), only the first that takes part
          applies: it counts a hit and its delay and error are used. Failing
          rules after it are untouched (no hit, budget kept), so two rules
          for the same requests fail them one after the other, not together.

        An error that is a :class:`LostAnswer` (``after`` rules) is to be
        returned after the request has been applied instead of before.
        """
        delay = self.latency
        error: ApiError | None = None
        if not self.rules:
            return delay, None
        for rule in self.rules:
            if not rule.matches(verb, resource, path):
                continue
            if rule.status is not None and error is not None:
                continue
            if rule.skipped < rule.skip:
                rule.skipped += 1
                continue
            rule.hits += 1
            delay += rule.delay
            if rule.status is not None:
                error = rule.error()
        return delay, error

    def to_json(self) -> dict[str, Any]:
        return {"latency": self.latency, "rules": [r.to_json() for r in self.rules]}

    def apply_json(self, command: dict[str, Any]) -> dict[str, Any]:
        """Run one admin command (the body of ``POST /_emulator/faults``)."""
        action = command.get("action")
        scope = {k: command.get(k) for k in ("verb", "resource", "path")}
        if action == "fail":
            rule = self.fail(
                int(command.get("status", 500)),
                count=command.get("count", 1),
                retry_after=command.get("retryAfter"),
                message=command.get("message"),
                skip=int(command.get("skip", 0)),
                after=bool(command.get("after", False)),
                **scope,
            )
            return rule.to_json()
        if action == "delay":
            return self.delay(
                float(command["seconds"]),
                count=command.get("count"),
                skip=int(command.get("skip", 0)),
                **scope,
            ).to_json()
        if action == "latency":
            self.latency = float(command["seconds"])
            return self.to_json()
        if action == "dropWatches":
            return {"dropped": self.drop_watches(abrupt=bool(command.get("abrupt", True)))}
        if action == "expireWatches":
            return {"expired": self.expire_watches()}
        if action == "clear":
            self.clear()
            return self.to_json()
        raise ValueError(
            f"unknown fault action {action!r}; expected fail, delay, latency, "
            "dropWatches, expireWatches or clear"
        )
