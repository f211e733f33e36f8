"""EmulatorServer: the emulated Kubernetes API over plain HTTP on loopback.

One catch-all aiohttp route parses Kubernetes URLs itself: the URL space is
regular, and one dispatcher is cheaper per request than a router with a
route per resource, and keeps fault injection and the request log in one
place. Runs on the caller's event loop (``async with``) or on its own loop in
a daemon thread (``start_in_thread``) for synchronous callers and
session-scoped fixtures.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import orjson
from aiohttp import web

from scheduler.simulation.emulator import discovery, openapi, statuserrors
from scheduler.simulation.emulator.claimcontroller import ClaimController
from scheduler.simulation.emulator.clusterfile import load_objects
from scheduler.simulation.emulator.crds import BUILTIN_CRDS, CrdController
from scheduler.simulation.emulator.faults import Faults, LostAnswer
from scheduler.simulation.emulator.handlers import ResourceHandlers, json_response, verb_of
from scheduler.simulation.emulator.http import DiscoveryPath, ResourcePath, parse_bool, parse_path
from scheduler.simulation.emulator.kubeconfig import write_kubeconfig
from scheduler.simulation.emulator.kubelet import FakeKubelet
from scheduler.simulation.emulator.requestlog import RequestLog, RequestRecord
from scheduler.simulation.emulator.store import DEFAULT_LOG_SIZE, Store
from scheduler.simulation.emulator.volumecontroller import VolumeController
from scheduler.simulation.emulator.watch import Watcher

T = TypeVar("T")
ADMIN_PREFIX = "/_emulator/"
MAX_BODY = 64 * 1024 * 1024


class EmulatorServer:
    def __init__(
        self,
        cluster_objects: list[dict[str, Any]] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        fake_kubelet: bool = False,
        volume_controller: bool = False,
        claim_controller: bool = False,
        builtin_crds: bool = True,
        bookmark_interval: float = 60.0,
        log_size: int = DEFAULT_LOG_SIZE,
        record_requests: bool = True,
    ) -> None:
        self.host = host
        self.port = port
        self.bookmark_interval = bookmark_interval
        self.store = Store(log_size=log_size)
        self.crds = CrdController(self.store)
        if builtin_crds:
            crd_type = self.store.type("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            for crd in BUILTIN_CRDS:
                self.store.create(crd_type, crd)
        if cluster_objects:
            load_objects(self.store, cluster_objects)
        self.faults = Faults()
        self.faults._drop_watches = self._drop_watches
        self.faults._expire = self._expire_watches
        self.request_log = RequestLog()
        self.record_requests = record_requests
        self.kubelet = FakeKubelet(self.store) if fake_kubelet else None
        self.volume_controller = VolumeController(self.store) if volume_controller else None
        self.claim_controller = ClaimController(self.store) if claim_controller else None
        self._handlers = ResourceHandlers(self)
        self._watches: dict[Watcher, web.BaseRequest] = {}
        self._runner: web.ServerRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._runner is None:
            raise RuntimeError("the emulator is not started")
        return f"http://{self.host}:{self.port}"

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the emulator is already started")
        # The low-level server: no router or middleware chain per request.
        loop = asyncio.get_running_loop()

        def make_request(
            message: Any, payload: Any, protocol: Any, writer: Any, task: Any
        ) -> web.BaseRequest:
            # Large bodies are legitimate here (a CRD with its schema, a big List).
            return web.BaseRequest(
                message, payload, protocol, writer, task, loop, client_max_size=MAX_BODY
            )

        handler = web.Server(
            self._dispatch, request_factory=make_request, handler_cancellation=True, access_log=None
        )
        runner = web.ServerRunner(handler, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        await site.start()
        self._runner = runner
        self._loop = asyncio.get_running_loop()
        for address in runner.addresses:
            if isinstance(address, tuple):
                self.port = int(address[1])
                break
        if self.kubelet is not None:
            self.kubelet.start()
        if self.volume_controller is not None:
            self.volume_controller.start()
        if self.claim_controller is not None:
            self.claim_controller.start()

    async def stop(self) -> None:
        if self._runner is None:
            return
        if self.kubelet is not None:
            self.kubelet.stop()
        if self.volume_controller is not None:
            self.volume_controller.stop()
        if self.claim_controller is not None:
            self.claim_controller.stop()
        for watcher in list(self._watches):
            watcher.close()
        runner, self._runner = self._runner, None
        await runner.cleanup()

    async def __aenter__(self) -> EmulatorServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def start_in_thread(self, timeout: float = 30.0) -> EmulatorServer:
        """Serve from a daemon thread with its own event loop; returns once listening."""
        if self._thread is not None:
            raise RuntimeError("the emulator thread is already running")
        loop = asyncio.new_event_loop()
        started: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # reported to the starting thread
                started.set_exception(exc)
                loop.close()
                return
            started.set_result(None)
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="k8s-api-emulator", daemon=True)
        self._thread.start()
        try:
            started.result(timeout)
        except BaseException:
            self._thread = None
            raise
        return self

    def stop_thread(self, timeout: float = 30.0) -> None:
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._thread = None

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the server's loop (store and faults are not thread-safe)."""
        loop = self._loop
        if loop is None or self._thread is None or threading.current_thread() is self._thread:
            return fn(*args)

        async def run() -> T:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), loop).result(30)

    @contextlib.contextmanager
    def without_validation(self) -> Iterator[None]:
        """Within the block, store what clients send as they send it.

        No decoding checks (400), validation (422) or admission (403): an API
        server that does not validate, so robustness tests can put objects a
        real kube-apiserver would refuse in front of a client.
        """
        self.call(setattr, self.store, "lax", True)
        try:
            yield
        finally:
            self.call(setattr, self.store, "lax", False)

    def write_kubeconfig(self, path: str | Path) -> Path:
        return write_kubeconfig(path, self.url)

    # -- watches ----------------------------------------------------------------

    def watch_started(self, watcher: Watcher, request: web.BaseRequest) -> None:
        self._watches[watcher] = request

    def watch_ended(self, watcher: Watcher) -> None:
        self._watches.pop(watcher, None)

    def _drop_watches(self, abrupt: bool) -> int:
        def drop() -> int:
            watchers = list(self._watches)
            for watcher in watchers:
                watcher.close(abort=abrupt)
            return len(watchers)

        return self.call(drop)

    def _expire_watches(self) -> int:
        def expire() -> int:
            self.store.compact()
            watchers = list(self._watches)
            status = statuserrors.expired(f"too old resource version: {self.store.rv}").status()
            for watcher in watchers:
                watcher.send_error(status)
            return len(watchers)

        return self.call(expire)

    # -- dispatch ---------------------------------------------------------------

    async def _dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        started = time.perf_counter()
        path = request.path
        verb, resource, namespace, name = "", "", "", ""
        try:
            if path.startswith(ADMIN_PREFIX):
                return await self._admin(request, path[len(ADMIN_PREFIX) :])
            parsed = parse_path(path)
            if isinstance(parsed, ResourcePath):
                watch = parsed.legacy_watch or (
                    request.method == "GET" and parse_bool(request.query.get("watch"), "watch")
                )
                verb = verb_of(request.method, parsed, watch)
                resource = parsed.resource + (
                    f"/{parsed.subresource}" if parsed.subresource else ""
                )
                namespace, name = parsed.namespace or "", parsed.name
            else:
                verb = "get"
            delay, fault = self.faults.check(verb, resource, path)
            if delay > 0:
                await asyncio.sleep(delay)
            if fault is not None and not isinstance(fault, LostAnswer):
                raise fault
            if isinstance(parsed, ResourcePath):
                response = await self._handlers.handle(request, parsed, verb)
            else:
                response = self._non_resource(request, path, parsed)
            if fault is not None:
                # Applied, but the client gets an error: "committed, answer lost".
                raise fault
        except statuserrors.ApiError as exc:
            response = web.Response(
                body=exc.body(),
                status=exc.code,
                content_type="application/json",
                headers=exc.headers,
            )
        if self.record_requests:
            self.request_log.append(
                RequestRecord(
                    request.method,
                    path,
                    request.query_string,
                    verb,
                    resource,
                    namespace,
                    name,
                    response.status,
                    (time.perf_counter() - started) * 1000.0,
                    request.headers.get("User-Agent", ""),
                )
            )
        return response

    def _non_resource(
        self, request: web.BaseRequest, path: str, parsed: DiscoveryPath | None
    ) -> web.Response:
        if request.method != "GET":
            raise statuserrors.method_not_allowed()
        registry = self.store.registry
        doc: dict[str, Any] | None = None
        if parsed is None:
            if path.rstrip("/") == "/version":
                doc = dict(discovery.KUBE_VERSION)
            elif path.rstrip("/") in ("/healthz", "/livez", "/readyz"):
                return web.Response(text="ok", content_type="text/plain")
            elif path.rstrip("/") == "/openapi/v3":
                doc = openapi.root(registry)
            elif path.startswith("/openapi/v3/"):
                doc = openapi.group_version(registry, path[len("/openapi/v3/") :])
        elif parsed.kind == "api":
            doc = discovery.api_versions(f"{self.host}:{self.port}")
        elif parsed.kind == "apis":
            doc = discovery.api_group_list(registry)
        elif parsed.kind == "group":
            doc = discovery.api_group(registry, parsed.group)
        else:
            doc = discovery.resource_list(registry, parsed.group, parsed.version)
        if doc is None:
            raise statuserrors.path_not_found()
        return json_response(orjson.dumps(doc))

    async def _admin(self, request: web.BaseRequest, what: str) -> web.Response:
        if what == "faults":
            if request.method == "GET":
                return json_response(orjson.dumps(self.faults.to_json()))
            if request.method == "DELETE":
                self.faults.clear()
                return json_response(orjson.dumps(self.faults.to_json()))
            if request.method == "POST":
                try:
                    command = orjson.loads(await request.read())
                    if not isinstance(command, dict):
                        raise ValueError("expected a JSON object")
                    return json_response(orjson.dumps(self.faults.apply_json(command)))
                except (ValueError, KeyError, TypeError) as exc:
                    raise statuserrors.bad_request(f"bad fault command: {exc}") from exc
        elif what == "requests":
            if request.method == "GET":
                return json_response(orjson.dumps([r.to_json() for r in self.request_log]))
            if request.method == "DELETE":
                self.request_log.clear()
                return json_response(b"[]")
        else:
            raise statuserrors.path_not_found()
        raise statuserrors.method_not_allowed()
