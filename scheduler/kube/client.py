"""KubeClient: the daemon's only door to the API server, in raw JSON.

kubernetes-asyncio provides what is hard to get right - kubeconfig and
in-cluster loading, bearer-token refresh (exec plugins, projected service
account tokens), TLS - through its ``Configuration`` and ``ApiClient``. What
it does not provide cheaply is the request itself: its generated models cost
about half a millisecond per pod to decode, and even ``ApiClient.call_api``
with ``_preload_content=False`` runs generic parameter sanitising, header
and body assembly on every call. So requests take a lean path of their own:
URL, headers (the ApiClient's default headers plus ``Authorization`` from the
Configuration's ``auth_settings()``, asked per request so refreshed tokens
apply at once), orjson-encoded body, sent over the ApiClient's connection
pool and TLS context (see :class:`_Transport`); answers are decoded with
orjson into plain dicts that the rest of the scheduler reads directly.

On top of that this module adds what kube-scheduler's client-go gives it:
client-side rate limiting (one token bucket, served by priority - see
:mod:`scheduler.kube.ratelimit`), retries (429 honours Retry-After for every
request, since the server did not act on it; 5xx and dropped connections are
retried with bounded, jittered backoff only where repeating is harmless:
idempotent verbs), list paging and watch streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
import structlog
from aiohttp.helpers import basicauth_from_netrc, get_env_proxy_for_url, netrc_from_env
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from yarl import URL

from scheduler import __version__
from scheduler.kube.apierrors import (
    ApiError,
    Gone,
    ServerError,
    TooManyRequests,
    TransportError,
    error_from_response,
)
from scheduler.kube.ratelimit import Priority, PriorityRateLimiter

__all__ = ["JSON", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "KubeClient", "RetryPolicy"]

log = structlog.get_logger("scheduler.kube")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
_PROTOBUF = "application/vnd.kubernetes.protobuf"
_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_USER_AGENT = f"pluggable-scheduler/{__version__} (kubernetes-asyncio)"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "OPTIONS", "DELETE"})
_DUMPS = orjson.OPT_NON_STR_KEYS  # json.dumps turns int keys into strings too


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounds on retrying one request.

    ``max_retries`` caps attempts after the first (client-go uses 10 for
    Retry-After answers); ``backoff_base``/``backoff_max`` shape the jittered
    exponential delay for 5xx and transport failures without Retry-After;
    ``max_retry_after`` caps how long a server's Retry-After may park a request.
    """

    max_retries: int = 5
    backoff_base: float = 0.1
    backoff_max: float = 2.0
    max_retry_after: float = 30.0

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff for retry number ``attempt`` (0-based)."""
        ceiling = min(self.backoff_max, self.backoff_base * (2.0**attempt))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


class _Transport:
    """What every request of one KubeClient shares: base URL, session, proxy, timeouts.

    The session is a second, thin ``aiohttp.ClientSession`` over the
    connector (connection pool, TLS context with CA and client certificate)
    and cookie jar of the ``ApiClient``'s own session, which stays their
    owner. It differs in one way: ``trust_env`` is off, because with it on
    aiohttp looks up ``~/.netrc`` and the proxy environment in worker threads
    on *every* request - two thread hand-offs that cost more CPU than all the
    rest of the request. Both lookups are made once here instead (the API
    server's address does not change) and their answers passed with every
    request, so proxies and netrc credentials apply as they did before.
    Built on the first request, inside the running loop.
    """

    __slots__ = ("_timeouts", "base", "extra", "netrc_auth", "session")

    def __init__(self, api_client: Any) -> None:
        configuration = api_client.configuration
        rest = api_client.rest_client
        owner: aiohttp.ClientSession = rest.pool_manager
        self.base: str = configuration.host
        extra: dict[str, Any] = {}
        url = URL(self.base)
        if rest.proxy:
            extra["proxy"] = rest.proxy
            if rest.proxy_headers:
                extra["proxy_headers"] = rest.proxy_headers
        elif owner.trust_env:
            try:
                proxy, proxy_auth = get_env_proxy_for_url(url)
            except LookupError:  # no proxy in the environment for this host
                proxy, proxy_auth = None, None
            if proxy is not None:
                extra["proxy"] = proxy
            if proxy_auth is not None:
                extra["proxy_auth"] = proxy_auth
        if rest.server_hostname:
            extra["server_hostname"] = rest.server_hostname
        self.extra = extra
        self.netrc_auth: str | None = None  # an Authorization header value
        if owner.trust_env and url.host is not None:
            with contextlib.suppress(LookupError):
                self.netrc_auth = basicauth_from_netrc(netrc_from_env(), url.host).encode()
        self.session = aiohttp.ClientSession(
            connector=owner.connector,
            connector_owner=False,
            cookie_jar=owner.cookie_jar,
            trust_env=False,
            read_bufsize=2**21,  # as RESTClientObject: big objects in watch events
        )
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}

    def timeout(self, seconds: float) -> aiohttp.ClientTimeout:
        """``ClientTimeout(total=seconds)`` (none at all for 0), as RESTClientObject builds it."""
        timeout = self._timeouts.get(seconds)
        if timeout is None:
            timeout = aiohttp.ClientTimeout(total=seconds) if seconds else aiohttp.ClientTimeout()
            self._timeouts[seconds] = timeout
        return timeout

    async def close(self) -> None:
        await self.session.close()  # leaves the ApiClient's connector open


def _apply_auth(headers: dict[str, str], setting: Mapping[str, Any]) -> None:
    """Put one kubernetes-asyncio auth setting into ``headers`` (ApiClient._apply_auth_params)."""
    value = setting.get("value")
    if not value:
        return
    where = setting.get("in")
    if where == "header":
        headers[setting["key"]] = value
    elif where == "cookie":
        headers["Cookie"] = value
    else:
        raise ValueError(f"unsupported auth setting location {where!r}")


class KubeClient:
    """Raw-JSON, rate-limited, retrying access to one API server.

    Satisfies the plugin API's ``KubeClient`` protocol (``request``) and adds
    the typed helpers the engine uses. ``qps``/``burst`` come from
    ``clientConnection``; ``qps <= 0`` disables client-side limiting.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        qps: float,
        burst: int,
        content_type: str = JSON,
        retry: RetryPolicy | None = None,
        request_timeout: float = 60.0,
        owns_api_client: bool = True,
    ) -> None:
        self.api_client = api_client
        self.limiter = PriorityRateLimiter(qps, burst)
        self.retry = retry or RetryPolicy()
        self.request_timeout = request_timeout
        self._owns_api_client = owns_api_client
        self._lean: _Transport | None = None
        if content_type.startswith(_PROTOBUF):
            # clientConnection.contentType defaults to protobuf in kube-scheduler
            # configs; such a config must load unchanged, and JSON is always served.
            log.info(
                "protobuf is not supported by this client; using JSON", content_type=content_type
            )
            content_type = JSON
        self.content_type = content_type

    # -- construction ------------------------------------------------------------

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | None,
        *,
        qps: float,
        burst: int,
        content_type: str = JSON,
        retry: RetryPolicy | None = None,
        request_timeout: float = 60.0,
    ) -> KubeClient:
        """Load ``path``; ``None`` means in-cluster if available, else the default kubeconfig.

        That is kube-scheduler's order when ``--kubeconfig`` is empty. A fresh
        ``Configuration`` is used (never the process-wide default) so that
        several clients - the daemon and a test's own - cannot leak into each
        other.
        """
        configuration = k8s_client.Configuration()
        in_cluster = False
        if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            try:
                k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
                in_cluster = True
            except k8s_config.ConfigException as exc:
                # The variable alone does not make a pod (e.g. a dev shell
                # inside a cluster without a token mounted).
                log.info(
                    "in-cluster config unavailable; using the default kubeconfig", error=str(exc)
                )
                configuration = k8s_client.Configuration()
        if not in_cluster:
            await k8s_config.load_kube_config(
                config_file=path, client_configuration=configuration, persist_config=False
            )
        # Each open watch holds a connection; bindings must still find one free.
        configuration.connection_pool_maxsize = max(100, 2 * max(int(burst), 1))
        api_client = k8s_client.ApiClient(configuration=configuration)
        api_client.user_agent = _USER_AGENT
        return cls(
            api_client,
            qps=qps,
            burst=burst,
            content_type=content_type,
            retry=retry,
            request_timeout=request_timeout,
            owns_api_client=True,
        )

    @classmethod
    def from_api_client(
        cls,
        api_client: Any,
        *,
        qps: float = 50.0,
        burst: int = 100,
        content_type: str = JSON,
        retry: RetryPolicy | None = None,
        request_timeout: float = 60.0,
        owns_api_client: bool = False,
    ) -> KubeClient:
        """Wrap an existing ``ApiClient`` (the caller keeps ownership unless told otherwise).

        Defaults are kube-scheduler's ``clientConnection`` defaults.
        """
        return cls(
            api_client,
            qps=qps,
            burst=burst,
            content_type=content_type,
            retry=retry,
            request_timeout=request_timeout,
            owns_api_client=owns_api_client,
        )

    async def close(self) -> None:
        lean, self._lean = self._lean, None
        if lean is not None:
            await lean.close()
        if self._owns_api_client:
            await self.api_client.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def host(self) -> str:
        return str(self.api_client.configuration.host)

    # -- transport ---------------------------------------------------------------

    def _transport(self) -> _Transport:
        """The lean request path's fixed parts, built on first use (inside the loop)."""
        transport = self._lean
        if transport is None:
            transport = self._lean = _Transport(self.api_client)
        return transport

    async def _open(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        request_timeout: float | aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Send one request; the caller owns (and must close) the response.

        This is what ``ApiClient.call_api(..., _preload_content=False)`` does,
        minus its generic parameter handling: same URL, headers (the
        ApiClient's default headers, cookie and the Configuration's
        ``auth_settings()`` - asked on every request, so refreshed tokens are
        picked up exactly as before), same connection pool and TLS context.
        """
        transport = self._lean or self._transport()
        api_client = self.api_client
        headers = {"Accept": self.content_type, "Content-Type": content_type}
        headers.update(api_client.default_headers)
        if api_client.cookie:
            headers["Cookie"] = api_client.cookie
        bearer = (await api_client.configuration.auth_settings()).get("BearerToken")
        if bearer:
            _apply_auth(headers, bearer)
        url = transport.base + path
        if query:
            url += "?" + urlencode(list(query.items()))
        data: bytes | None = None
        if body is not None and method in _BODY_METHODS:
            data = body if isinstance(body, bytes) else self._encode(body)
        if not isinstance(request_timeout, aiohttp.ClientTimeout):
            request_timeout = transport.timeout(request_timeout)
        netrc_auth = transport.netrc_auth
        if netrc_auth is not None and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = netrc_auth  # a token wins over ~/.netrc
        try:
            response: aiohttp.ClientResponse = await transport.session.request(
                method,
                url,
                headers=headers,
                data=data,
                timeout=request_timeout,
                **transport.extra,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise TransportError(
                0, "ConnectionError", _describe(exc), method=method, path=path
            ) from exc
        return response

    def _encode(self, body: Any) -> bytes:
        """JSON bytes of ``body``; OpenAPI models and dates as kubernetes-asyncio sends them."""
        return orjson.dumps(body, default=self.api_client.sanitize_for_serialization, option=_DUMPS)

    async def _once(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        request_timeout: float,
    ) -> Any:
        response = await self._open(method, path, query, body, content_type, request_timeout)
        try:
            data = await response.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise TransportError(
                0, "ConnectionError", _describe(exc), method=method, path=path
            ) from exc
        finally:
            response.release()
        if 200 <= response.status < 300:
            if not data:
                return None
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                if "json" not in response.headers.get("Content-Type", ""):
                    return data.decode("utf-8", "replace")  # e.g. /healthz's "ok"
                raise ApiError(
                    0, "BadResponse", f"undecodable JSON answer: {exc}", method=method, path=path
                ) from exc
        raise error_from_response(
            response.status,
            data,
            method=method,
            path=path,
            retry_after_header=response.headers.get("Retry-After"),
        )

    def _retry_delay(self, error: ApiError, attempt: int, retry_failures: bool) -> float | None:
        """Seconds to wait before retrying after ``error``, or None to give up."""
        policy = self.retry
        if attempt >= policy.max_retries:
            return None
        if isinstance(error, TooManyRequests):
            pass  # the server did not act on the request: always safe to repeat
        elif isinstance(error, ServerError | TransportError):
            if not retry_failures:
                return None
        else:
            return None
        if error.retry_after is not None:
            return min(error.retry_after, policy.max_retry_after)
        return policy.backoff(attempt)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: Any,
        content_type: str,
        query: Mapping[str, str] | None,
        priority: Priority,
        retry_failures: bool,
        request_timeout: float | None,
    ) -> Any:
        attempt = 0
        while True:
            await self.limiter.acquire(priority)
            try:
                return await self._once(
                    method, path, query, body, content_type, request_timeout or self.request_timeout
                )
            except ApiError as error:
                delay = self._retry_delay(error, attempt, retry_failures)
                if delay is None:
                    raise
                log.debug(
                    "retrying request",
                    method=method,
                    path=path,
                    status=error.status,
                    reason=error.reason,
                    attempt=attempt + 1,
                    delay=round(delay, 3),
                )
            attempt += 1
            await asyncio.sleep(delay)

    # -- generic API -------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = JSON,
        query: Mapping[str, str] | None = None,
        priority: Priority = "high",
        idempotent: bool | None = None,
        request_timeout: float | None = None,
    ) -> Any:
        """One API request; returns the decoded JSON body (None if empty).

        ``idempotent`` decides whether 5xx/transport failures are retried;
        by default GET/HEAD/PUT/DELETE are, and so are merge and strategic
        merge PATCHes (applying the same patch twice gives the same object),
        while POST and JSON-patch are not. 429 is always retried.
        Raises a :class:`~scheduler.kube.apierrors.ApiError` subclass otherwise.
        """
        method = method.upper()
        if idempotent is None:
            idempotent = method in _IDEMPOTENT_METHODS or (
                method == "PATCH" and content_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH)
            )
        return await self._call(
            method,
            path,
            body=body,
            content_type=content_type,
            query=query,
            priority=priority,
            retry_failures=idempotent,
            request_timeout=request_timeout,
        )

    async def get(self, path: str, *, priority: Priority = "high") -> Any:
        """GET one object (or any JSON document) as a dict."""
        return await self.request("GET", path, priority=priority)

    async def list(
        self,
        path: str,
        query: Mapping[str, str] | None = None,
        *,
        limit: int = 500,
        priority: Priority = "high",
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """All items of a collection and the list's resourceVersion, paging by ``limit``.

        Pages after the first carry only ``continue`` (the API server rejects a
        resourceVersion next to it). If a continue token expires mid-way (410),
        the list restarts once without paging, as client-go's pager does, so a
        big collection under heavy churn still lists. ``transform`` is applied
        to each item as its page arrives, so what it drops is freed before the
        next page is decoded (an informer's transform, see ``Informer``).
        """
        base = dict(query or {})
        if limit > 0:
            base["limit"] = str(limit)
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            if token:
                page_query = {
                    k: v
                    for k, v in base.items()
                    if k not in ("resourceVersion", "resourceVersionMatch")
                }
                page_query["continue"] = token
            else:
                page_query = base
            try:
                doc = await self.request("GET", path, query=page_query, priority=priority)
            except Gone:
                if not token or "limit" not in base:
                    raise
                log.info("list continue token expired; listing in full", path=path)
                base.pop("limit", None)
                base.pop("resourceVersionMatch", None)
                base.pop("resourceVersion", None)
                items, token = [], ""
                continue
            if not isinstance(doc, dict):
                raise ApiError(
                    0, "BadResponse", "list answer is not a JSON object", method="GET", path=path
                )
            page = doc.get("items") or ()
            items.extend(page if transform is None else [transform(item) for item in page])
            meta = doc.get("metadata") or {}
            token = meta.get("continue") or ""
            if not token:
                return items, str(meta.get("resourceVersion") or "")

    async def watch(
        self,
        path: str,
        query: Mapping[str, str] | None = None,
        *,
        priority: Priority = "high",
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """Stream ``(type, object)`` watch events until the server ends the stream.

        An ``ERROR`` event is raised as the matching ApiError (410 -> ``Gone``);
        a broken stream raises ``TransportError``. No retry happens here: the
        informer owns reconnecting, because only it knows the version to resume
        from. Close it early with ``aclose()`` (``contextlib.aclosing``). The
        read timeout is ``timeoutSeconds`` plus slack, so a silently dead
        connection is noticed.
        """
        watch_query = dict(query or {})
        watch_query["watch"] = "true"
        server_timeout = float(watch_query.get("timeoutSeconds") or 0) or 1800.0
        read_timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=30.0, sock_read=server_timeout + 30.0
        )
        await self.limiter.acquire(priority)
        response = await self._open("GET", path, watch_query, None, JSON, read_timeout)
        try:
            if response.status != 200:
                data = await response.read()
                raise error_from_response(
                    response.status,
                    data,
                    method="GET",
                    path=path,
                    retry_after_header=response.headers.get("Retry-After"),
                )
            content = response.content
            while True:
                line = await content.readline()
                if not line:
                    return
                if line.isspace():
                    continue
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ApiError(
                        0,
                        "BadResponse",
                        f"undecodable watch event ({exc}): {line[:200]!r}",
                        method="GET",
                        path=path,
                    ) from exc
                kind = event.get("type")
                obj = event.get("object")
                if kind == "ERROR":
                    status = obj if isinstance(obj, dict) else {}
                    raise error_from_response(
                        int(status.get("code") or 500),
                        orjson.dumps(status),
                        method="GET",
                        path=path,
                    )
                if not isinstance(kind, str) or not isinstance(obj, dict):
                    raise ApiError(
                        0,
                        "BadResponse",
                        f"malformed watch event: {line[:200]!r}",
                        method="GET",
                        path=path,
                    )
                yield kind, obj
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise TransportError(
                0, "ConnectionError", _describe(exc), method="GET", path=path
            ) from exc
        finally:
            response.close()

    # -- typed helpers -----------------------------------------------------------

    async def patch_pod_status(
        self, namespace: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """Strategic-merge ``patch`` into the pod's status (e.g. the PodScheduled condition).

        Conditions merge by ``type``, so the patch carries only the changed
        condition, exactly like kube-scheduler's status updater.
        """
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/status"
        result = await self.request(
            "PATCH",
            path,
            body=patch,
            content_type=STRATEGIC_MERGE_PATCH,
            priority="high",
            idempotent=True,
        )
        return result if isinstance(result, dict) else {}


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
