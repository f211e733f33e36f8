"""Who may read the secure port: authentication and authorization delegated to the API server.

What kube-scheduler does (k8s.io/apiserver's ``DelegatingAuthenticationOptions``
and ``DelegatingAuthorizationOptions``), so that the RBAC a cluster already has
for scraping kube-scheduler works here unchanged:

- *Authentication*: a bearer token (``Authorization: Bearer ...``) is checked
  with a ``TokenReview``; a request without one is ``system:anonymous`` (group
  ``system:unauthenticated``); a token the API server rejects, or a review that
  fails, is answered ``401 Unauthorized``. Answers are cached for
  ``--authentication-token-webhook-cache-ttl`` (10 s), so a scrape every few
  seconds costs one review per TTL, not one per scrape.
- *Authorization*, in this order: members of ``system:masters`` are allowed
  everything; paths of ``--authorization-always-allow-paths`` (``/healthz``,
  ``/readyz``, ``/livez``: kubelet probes carry no token) are allowed to
  anyone; everything else is a ``SubjectAccessReview`` of the user with
  ``nonResourceAttributes`` (the path and the lower-cased HTTP method, so
  ``get`` for a scrape), cached for 10 s whether allowed or denied. A denial is
  ``403 Forbidden``; a review that fails is ``500``.
- Without ``--authentication-kubeconfig`` the in-cluster config is used, and
  outside a cluster nobody is authenticated (every request is anonymous);
  without ``--authorization-kubeconfig`` likewise, and then only the
  always-allowed paths are served. Both are logged at start, as kube does.

The identity the reviews are made with needs ``create`` on ``tokenreviews`` and
``subjectaccessreviews`` (the ``system:auth-delegator`` ClusterRole).
Client certificates and the front-proxy headers that kube-scheduler also
accepts (looked up in ``kube-system/extension-apiserver-authentication``) are
not: a scraper authenticates with a token.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

import orjson
from aiohttp import web

from scheduler.errors import UserError
from scheduler.kube.client import KubeClient
from scheduler.observability.logging import get_logger
from scheduler.observability.servingdefaults import (
    DEFAULT_ALWAYS_ALLOW_GROUPS,
    DEFAULT_ALWAYS_ALLOW_PATHS,
    DEFAULT_CACHE_TTL,
)

__all__ = [
    "ANONYMOUS",
    "DEFAULT_ALWAYS_ALLOW_PATHS",
    "DelegatedAuth",
    "DelegatedAuthOptions",
    "PathMatcher",
    "User",
]

_log = get_logger("scheduler.observability.delegated_auth")


#: Where a pod finds its ServiceAccount token: in-cluster config is usable.
_IN_CLUSTER_TOKEN: Final = "/var/run/secrets/kubernetes.io/serviceaccount/token"

#: kube's review clients: high limits, since they bound how fast scrapes are answered.
_REVIEW_QPS: Final = 200.0
_REVIEW_BURST: Final = 400
_REVIEW_TIMEOUT: Final = 10.0

#: Most cached answers kept per cache; expired ones go first, then the oldest.
_CACHE_SIZE: Final = 4096

_TOKEN_REVIEWS: Final = "/apis/authentication.k8s.io/v1/tokenreviews"
_ACCESS_REVIEWS: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True, slots=True)
class User:
    """Who made a request, as a TokenReview answers (or anonymous)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


ANONYMOUS: Final = User("system:anonymous", groups=("system:unauthenticated",))


class PathMatcher:
    """``--authorization-always-allow-paths``: exact paths, or prefixes ending in ``*``.

    A leading ``/`` is optional, as in kube; ``*`` anywhere but at the end is
    an error (raised as ``ValueError`` naming the entry).
    """

    def __init__(self, patterns: Sequence[str]) -> None:
        self._exact: set[str] = set()
        self._prefixes: list[str] = []
        for pattern in patterns:
            trimmed = pattern.removeprefix("/")
            if "*" in trimmed[:-1]:
                raise ValueError(f"only a trailing * is allowed in {pattern!r}")
            if trimmed.endswith("*"):
                self._prefixes.append(trimmed[:-1])
            else:
                self._exact.add(trimmed)

    def __call__(self, path: str) -> bool:
        trimmed = path.removeprefix("/")
        return trimmed in self._exact or any(trimmed.startswith(p) for p in self._prefixes)


@dataclass(frozen=True, slots=True)
class DelegatedAuthOptions:
    """The flags of ``run`` that say how the secure port checks its callers.

    ``None`` for a kubeconfig means the in-cluster config when in a pod, and
    otherwise no delegation at all (kube-scheduler's optional kubeconfigs).
    """

    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    token_cache_ttl: float = DEFAULT_CACHE_TTL
    allow_cache_ttl: float = DEFAULT_CACHE_TTL
    deny_cache_ttl: float = DEFAULT_CACHE_TTL
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS


K = TypeVar("K")
V = TypeVar("V")


class _TTLCache(Generic[K, V]):
    """Answers kept for a while; a TTL of 0 keeps nothing."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> tuple[bool, V | None]:
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        if entry[0] <= self._clock():
            del self._entries[key]
            return False, None
        return True, entry[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        now = self._clock()
        if len(self._entries) >= _CACHE_SIZE:
            self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
            while len(self._entries) >= _CACHE_SIZE:
                del self._entries[next(iter(self._entries))]
        self._entries[key] = (now + ttl, value)


class AuthenticationError(Exception):
    """The request carried credentials that could not be verified: 401."""


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (kube's parsing)."""
    if not authorization:
        return None
    parts = authorization.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return None
    token = parts[1]
    return token or None


def _user_of(review_user: Mapping[str, Any]) -> User:
    groups = tuple(str(g) for g in review_user.get("groups") or ())
    if "system:authenticated" not in groups and "system:unauthenticated" not in groups:
        # kube's AuthenticatedGroupAdder: every authenticated user is in this group.
        groups += ("system:authenticated",)
    extra = {
        str(k): tuple(str(v) for v in values or ())
        for k, values in (review_user.get("extra") or {}).items()
    }
    return User(
        name=str(review_user.get("username") or ""),
        uid=str(review_user.get("uid") or ""),
        groups=groups,
        extra=extra,
    )


def in_cluster() -> bool:
    """Whether the in-cluster config is available (kube's ``rest.InClusterConfig``)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and Path(_IN_CLUSTER_TOKEN).is_file()


ClientOpener = Callable[[str | None], Awaitable[KubeClient]]


async def _open_client(kubeconfig: str | None) -> KubeClient:
    return await KubeClient.from_kubeconfig(
        kubeconfig, qps=_REVIEW_QPS, burst=_REVIEW_BURST, request_timeout=_REVIEW_TIMEOUT
    )


class DelegatedAuth:
    """Authenticates and authorizes requests to the secure port through the API server.

    :meth:`open` makes the review clients on the loop that serves (the
    control thread's); :attr:`middleware` then guards every request.
    """

    def __init__(
        self,
        options: DelegatedAuthOptions,
        *,
        open_client: ClientOpener = _open_client,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self._open_client = open_client
        self._always_allowed = PathMatcher(options.always_allow_paths)
        self._privileged = frozenset(options.always_allow_groups)
        self._tokens: _TTLCache[str, User | None] = _TTLCache(clock)
        self._decisions: _TTLCache[bytes, tuple[bool, str]] = _TTLCache(clock)
        self._authn: KubeClient | None = None
        self._authz: KubeClient | None = None
        self._owned: list[KubeClient] = []

    # -- lifecycle --------------------------------------------------------------------

    async def open(self) -> None:
        """Make the review clients (a kubeconfig named for both gets one client)."""
        opened: dict[str | None, KubeClient] = {}

        async def client_for(kubeconfig: str | None, flag: str, loss: str) -> KubeClient | None:
            if kubeconfig is None and not in_cluster():
                _log.warning(f"no {flag} given and not in a cluster: {loss}", flag=flag)
                return None
            if kubeconfig not in opened:
                try:
                    opened[kubeconfig] = await self._open_client(kubeconfig)
                except Exception as error:
                    source = kubeconfig or "the in-cluster config"
                    raise UserError(f"{flag}: cannot use {source}: {error}") from error
                self._owned.append(opened[kubeconfig])
            return opened[kubeconfig]

        try:
            self._authn = await client_for(
                self.options.authentication_kubeconfig,
                "--authentication-kubeconfig",
                "tokens are not reviewed, every request is anonymous",
            )
            self._authz = await client_for(
                self.options.authorization_kubeconfig,
                "--authorization-kubeconfig",
                "only --authorization-always-allow-paths are served",
            )
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        owned, self._owned = self._owned, []
        self._authn = self._authz = None
        for client in owned:
            await client.close()

    # -- authentication ---------------------------------------------------------------

    async def authenticate(self, authorization: str | None) -> User:
        """The user of a request's ``Authorization`` header; raises AuthenticationError."""
        token = bearer_token(authorization)
        if token is None or self._authn is None:
            return ANONYMOUS
        key = hashlib.sha256(token.encode()).hexdigest()
        hit, cached = self._tokens.get(key)
        if not hit:
            cached = await self._review_token(token)
            self._tokens.put(key, cached, self.options.token_cache_ttl)
        if cached is None:
            raise AuthenticationError("invalid bearer token")
        return cached

    async def _review_token(self, token: str) -> User | None:
        assert self._authn is not None
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        try:
            answer = await self._authn.request("POST", _TOKEN_REVIEWS, body=body, idempotent=True)
        except Exception as error:
            # Not cached: the next request asks again.
            _log.warning("TokenReview failed", error=str(error))
            raise AuthenticationError(f"TokenReview failed: {error}") from error
        status = (answer or {}).get("status") or {}
        if not status.get("authenticated"):
            return None
        return _user_of(status.get("user") or {})

    # -- authorization ----------------------------------------------------------------

    async def authorize(self, user: User, path: str, verb: str) -> tuple[bool, str]:
        """Whether ``user`` may ``verb`` ``path``, and the reviewer's reason if not.

        Raises when the SubjectAccessReview itself fails (the caller answers 500).
        """
        if self._privileged.intersection(user.groups):
            return True, ""
        if self._always_allowed(path):
            return True, ""
        if self._authz is None:
            return False, "no authorization-kubeconfig to review the request with"
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
        hit, cached = self._decisions.get(key)
        if hit and cached is not None:
            return cached
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        answer = await self._authz.request("POST", _ACCESS_REVIEWS, body=body, idempotent=True)
        status = (answer or {}).get("status") or {}
        allowed = bool(status.get("allowed")) and not status.get("denied")
        reason = str(status.get("reason") or "")
        if not allowed and status.get("evaluationError") and not reason:
            reason = str(status["evaluationError"])
        decision = (allowed, reason)
        ttl = self.options.allow_cache_ttl if allowed else self.options.deny_cache_ttl
        self._decisions.put(key, decision, ttl)
        return decision

    # -- the middleware ---------------------------------------------------------------

    @web.middleware
    async def middleware(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        """Authenticate, then authorize, then serve: kube's filter order."""
        try:
            user = await self.authenticate(request.headers.get("Authorization"))
        except AuthenticationError:
            return _status(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()
        path = request.path
        try:
            allowed, reason = await self.authorize(user, path, verb)
        except Exception as error:
            _log.warning("SubjectAccessReview failed", path=path, user=user.name, error=str(error))
            return _status(500, "InternalError", f'Internal Server Error: "{path}": {error}')
        if not allowed:
            message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
            if reason:
                message += f": {reason}"
            return _status(403, "Forbidden", message)
        return await handler(request)


def _status(code: int, reason: str, message: str) -> web.Response:
    """A ``Status`` object, as kube answers 401, 403 and 500."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if code == 403:
        body["details"] = {}
    response = web.Response(body=orjson.dumps(body), status=code)
    response.headers["Content-Type"] = "application/json"
    response.headers["Cache-Control"] = "no-cache, private"
    return response
