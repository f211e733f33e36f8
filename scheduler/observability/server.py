"""The daemon's HTTP side: kube-style health endpoints and Prometheus metrics.

Kubelet probes, load balancers and people with ``curl`` already know how
kube components answer ``/healthz``, ``/livez`` and ``/readyz``: ``200 ok``,
or ``500`` with one ``[+]``/``[-]`` line per check, ``?verbose`` for the
listing on success, ``?exclude=name`` to skip a check and ``/readyz/<name>``
for one check. This server answers the same way so the same probes and
habits work.

Two kinds of checks, because the two probes mean different things:

- *liveness* (``/livez``, ``/healthz``): "is this process working at all?"
  Kubelet restarts the container when it fails, so it must not depend on
  leadership: a healthy standby that restarted whenever it was not leader
  would never be ready to take over.
- *readiness* (``/readyz``): liveness plus what the daemon registers, e.g.
  informers synced. A failing readiness check only takes the pod out of
  service.

Unlike kube-apiserver, a failed check's reason is shown in the body rather
than withheld: the checks here report scheduler state (which informer has
not synced), nothing an unauthenticated caller could misuse, and the reason
is what the person reading the probe output needs.

Served as ``run`` serves it, with a :class:`Serving` that has a TLS context
and delegated authentication and authorization, this is kube-scheduler's
secure port (:mod:`scheduler.observability.delegated_auth`); without them it
is plain HTTP open to anyone who can connect, for local and in-process use.
"""

from __future__ import annotations

import asyncio
import inspect
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

from aiohttp import web

from scheduler.observability.delegated_auth import DelegatedAuth, DelegatedAuthOptions
from scheduler.observability.logging import get_logger
from scheduler.observability.metrics import SchedulerMetrics

__all__ = [
    "DEFAULT_ADDRESS",
    "Check",
    "CheckResult",
    "HealthServer",
    "Serving",
    "override_address",
    "parse_address",
]

CheckResult = bool | str
"""``True`` or ``""`` means healthy; ``False`` or a non-empty reason means failing."""

Check = Callable[[], CheckResult | Awaitable[CheckResult]]
"""A health check: cheap, side-effect free; may be ``async`` (then it is given a timeout)."""

DEFAULT_ADDRESS: Final = "0.0.0.0:10259"
"""kube-scheduler's port, so existing probes and ServiceMonitors need no change."""

PING: Final = "ping"
"""The always-passing check every endpoint has, as in kube: proves the server answers."""

_ENDPOINTS: Final = ("healthz", "livez", "readyz")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
"""An added endpoint's handler (:meth:`HealthServer.add_route`)."""

MAX_BODY: Final = 64 * 1024 * 1024
"""Largest request body: a what-if request with thousands of pod objects fits."""

_log = get_logger("scheduler.observability.server")


def parse_address(address: str) -> tuple[str | None, int]:
    """Split ``host:port`` (``[v6]:port``, ``:port`` for every interface) for binding."""
    if address.startswith("["):
        host, sep, port = address[1:].partition("]:")
        if not sep:
            raise ValueError(f"invalid address {address!r}: want [host]:port")
    else:
        host, sep, port = address.rpartition(":")
        if not sep or ":" in host:
            raise ValueError(f"invalid address {address!r}: want host:port")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"invalid address {address!r}: port {port!r} is not a number") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"invalid address {address!r}: port {number} out of range")
    return (host or None), number


def override_address(address: str, host: str | None = None, port: int | None = None) -> str:
    """``address`` with host and/or port replaced (``--bind-address``, ``--secure-port``)."""
    current_host, current_port = parse_address(address)
    if host is not None:
        current_host = host.strip("[]")
    if port is not None:
        current_port = port
    shown = current_host or ""
    return f"[{shown}]:{current_port}" if ":" in shown else f"{shown}:{current_port}"


@dataclass(frozen=True, slots=True)
class Serving:
    """Where and how the server listens: plain HTTP unless given ``tls``.

    ``auth`` (only with ``tls``: a bearer token must not cross the network in
    clear) makes every request go through delegated authentication and
    authorization, as on kube-scheduler's secure port.
    """

    address: str = DEFAULT_ADDRESS
    tls: ssl.SSLContext | None = None
    auth: DelegatedAuthOptions | None = None

    def __post_init__(self) -> None:
        if self.auth is not None and self.tls is None:
            raise ValueError("delegated authentication needs TLS")

    @property
    def scheme(self) -> str:
        return "http" if self.tls is None else "https"


@dataclass(frozen=True, slots=True)
class _Outcome:
    name: str
    ok: bool
    reason: str
    excluded: bool = False

    def line(self) -> str:
        if self.excluded:
            return f"[+]{self.name} excluded: ok"
        if self.ok:
            return f"[+]{self.name} ok"
        return f"[-]{self.name} failed: {self.reason or 'reason unknown'}"


class HealthServer:
    """Serves ``/healthz``, ``/livez``, ``/readyz`` and ``/metrics``.

    Over plain HTTP to anyone, unless ``serving`` (which then also gives the
    address) has a TLS context and delegated authentication.

    ``checks`` are readiness checks; ``liveness_checks`` count for every
    endpoint. More can be added before or after :meth:`start` with
    :meth:`add_readiness_check` and :meth:`add_liveness_check`, which is how
    the daemon adds a check once the thing it checks exists.
    """

    def __init__(
        self,
        address: str = DEFAULT_ADDRESS,
        metrics: SchedulerMetrics | None = None,
        checks: Mapping[str, Check] | None = None,
        *,
        liveness_checks: Mapping[str, Check] | None = None,
        check_timeout: float = 5.0,
        serving: Serving | None = None,
    ) -> None:
        """Prepare the server; nothing binds until :meth:`start`.

        Without ``metrics``, ``/metrics`` answers 404: a command that runs
        the daemon without exposing metrics should say so, not serve an
        empty page a scraper would take for a healthy target.
        """
        if serving is not None:
            address = serving.address
        self.address = address
        self.serving = serving or Serving(address)
        self._host, self._port = parse_address(address)
        self._auth: DelegatedAuth | None = None
        self.metrics = metrics
        self.check_timeout = check_timeout
        self._liveness: dict[str, Check] = {}
        self._readiness: dict[str, Check] = {}
        for name, check in (liveness_checks or {}).items():
            self.add_liveness_check(name, check)
        for name, check in (checks or {}).items():
            self.add_readiness_check(name, check)
        self._runner: web.AppRunner | None = None
        self._bound_port: int | None = None
        self._last_failed: dict[str, tuple[str, ...]] = {}
        self._routes: list[tuple[str, str, Handler]] = []

    # -- checks -------------------------------------------------------------------

    def _validate_name(self, name: str) -> None:
        if not name or "/" in name or any(c.isspace() for c in name):
            raise ValueError(f"invalid check name {name!r}: non-empty, no '/' or spaces")
        if name == PING or name in self._liveness or name in self._readiness:
            raise ValueError(f"health check {name!r} is already registered")

    def add_liveness_check(self, name: str, check: Check) -> None:
        """Add a check to every endpoint; keep it independent of leadership."""
        self._validate_name(name)
        self._liveness[name] = check

    def add_readiness_check(self, name: str, check: Check) -> None:
        """Add a check to ``/readyz`` only."""
        self._validate_name(name)
        self._readiness[name] = check

    def _checks_for(self, endpoint: str) -> dict[str, Check | None]:
        """The ordered checks of an endpoint; ``None`` stands for the built-in ping."""
        out: dict[str, Check | None] = {PING: None}
        out.update(self._liveness)
        if endpoint == "readyz":
            out.update(self._readiness)
        return out

    async def _run(self, name: str, check: Check | None) -> _Outcome:
        if check is None:
            return _Outcome(name, True, "")
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, self.check_timeout)
        except TimeoutError:
            return _Outcome(name, False, f"timed out after {self.check_timeout:g}s")
        except Exception as err:
            return _Outcome(name, False, f"{type(err).__name__}: {err}")
        if isinstance(result, str):
            return _Outcome(name, not result, result)
        return _Outcome(name, bool(result), "")

    def add_route(self, method: str, path: str, handler: Handler) -> None:
        """Serve another endpoint (before :meth:`start`), behind the same authn/authz.

        How the daemon adds its APIs (``/whatif``): with delegated auth the
        caller needs the non-resource ``path`` with the lower-cased
        ``method`` as verb, as for ``/metrics``.
        """
        if self._runner is not None:
            raise RuntimeError("routes are added before the server starts")
        self._routes.append((method, path, handler))

    # -- handlers -----------------------------------------------------------------

    @staticmethod
    def _text(body: str, status: int = 200) -> web.Response:
        response = web.Response(text=body, status=status, content_type="text/plain")
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-cache, private"
        return response

    async def _handle_all(self, request: web.Request) -> web.Response:
        endpoint = request.path.strip("/").split("/", 1)[0]
        checks = self._checks_for(endpoint)
        excluded = set(request.query.getall("exclude", []))
        verbose = "verbose" in request.query and request.query["verbose"].lower() != "false"

        outcomes: list[_Outcome] = []
        for name, check in checks.items():
            if name in excluded:
                outcomes.append(_Outcome(name, True, "", excluded=True))
            else:
                outcomes.append(await self._run(name, check))
        failed = tuple(o.name for o in outcomes if not o.ok)
        self._note_transition(endpoint, outcomes, failed)

        if not failed and not verbose:
            return self._text("ok")
        lines = [o.line() for o in outcomes]
        unknown = sorted(excluded - checks.keys())
        if unknown:
            quoted = ", ".join(f'"{n}"' for n in unknown)
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        verdict = "failed" if failed else "passed"
        lines.append(f"{endpoint} check {verdict}")
        return self._text("\n".join(lines) + "\n", 500 if failed else 200)

    async def _handle_one(self, request: web.Request) -> web.Response:
        endpoint = request.path.strip("/").split("/", 1)[0]
        name = request.match_info["name"]
        checks = self._checks_for(endpoint)
        if name not in checks:
            return self._text(f"no health check named {name!r} at /{endpoint}\n", 404)
        outcome = await self._run(name, checks[name])
        if outcome.ok:
            return self._text("ok")
        return self._text(f"internal server error: {outcome.reason or 'reason unknown'}\n", 500)

    def _note_transition(
        self, endpoint: str, outcomes: list[_Outcome], failed: tuple[str, ...]
    ) -> None:
        """Log when an endpoint's set of failing checks changes, not on every probe.

        Probes arrive every few seconds; one line per change says when a
        check started and stopped failing without burying everything else.
        """
        if self._last_failed.get(endpoint, ()) == failed:
            return
        self._last_failed[endpoint] = failed
        if failed:
            reasons = {o.name: o.reason for o in outcomes if not o.ok}
            _log.warning(f"{endpoint} check failed", endpoint=endpoint, failed=reasons)
        else:
            _log.info(f"{endpoint} check passed", endpoint=endpoint)

    async def _handle_metrics(self, _request: web.Request) -> web.Response:
        if self.metrics is None:
            return self._text("metrics are not enabled\n", 404)
        response = web.Response(body=self.metrics.render())
        response.headers["Content-Type"] = SchedulerMetrics.CONTENT_TYPE
        # Compressed only if the scraper's Accept-Encoding allows it (Prometheus
        # asks for gzip); large exposition pages shrink ~10x.
        response.enable_compression()
        return response

    def _app(self) -> web.Application:
        middlewares = [self._auth.middleware] if self._auth is not None else []
        app = web.Application(middlewares=middlewares, client_max_size=MAX_BODY)
        for endpoint in _ENDPOINTS:
            app.router.add_get(f"/{endpoint}", self._handle_all)
            app.router.add_get(f"/{endpoint}/{{name}}", self._handle_one)
        app.router.add_get("/metrics", self._handle_metrics)
        for method, path, handler in self._routes:
            app.router.add_route(method, path, handler)
        return app

    # -- lifecycle ----------------------------------------------------------------

    async def start(self) -> None:
        """Bind and serve; after this :attr:`port` is the real port (even for port 0)."""
        if self._runner is not None:
            raise RuntimeError("health server already started")
        if self.serving.auth is not None:
            # The review clients belong to the loop that serves (the control thread's).
            auth = DelegatedAuth(self.serving.auth)
            await auth.open()
            self._auth = auth
        # No access log: probes and scrapes every few seconds would drown the
        # scheduler's own lines.
        runner = web.AppRunner(self._app(), access_log=None, shutdown_timeout=1.0)
        try:
            await runner.setup()
            site = web.TCPSite(runner, self._host, self._port, ssl_context=self.serving.tls)
            await site.start()
        except BaseException:
            await runner.cleanup()
            await self._close_auth()
            raise
        self._runner = runner
        self._bound_port = int(runner.addresses[0][1])
        _log.info(
            "health server listening",
            address=self.address,
            port=self._bound_port,
            scheme=self.serving.scheme,
            authorization="delegated" if self._auth is not None else "none",
        )

    async def _close_auth(self) -> None:
        auth, self._auth = self._auth, None
        if auth is not None:
            await auth.close()

    async def stop(self) -> None:
        """Stop serving; safe to call when not started or already stopped."""
        runner, self._runner = self._runner, None
        self._bound_port = None
        if runner is not None:
            await runner.cleanup()
        await self._close_auth()

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        """The port actually bound; only valid while started."""
        if self._bound_port is None:
            raise RuntimeError("health server is not started")
        return self._bound_port
