"""A toy HTTP scheduler extender on loopback, speaking kube's extender JSON.

For tests and examples: it filters by a node label (or a set of names),
scores from a node label, narrows preemption (drops candidate nodes, spares
victims), binds through a callback (the caller's API client), and can
misbehave on purpose (slow, 500, garbage), so the scheduler's handling of a
bad extender can be checked against kube-scheduler's with the very same
server.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web

from scheduler.plugins.extender.wire import field_of

Mode = Literal["ok", "slow", "error", "garbage", "error-field"]
Binder = Callable[[str, str, str, str], Awaitable[str]]
"""``(namespace, name, uid, node) -> error text ('' when bound)``."""


@dataclass
class ToyExtender:
    """What the toy extender answers; change the fields while it runs."""

    #: Nodes without this label ``=true`` fail the filter (None: every node passes).
    require_label: str | None = None
    #: Nodes failed as UnschedulableAndUnresolvable, by name, with the reason.
    unresolvable: dict[str, str] = field(default_factory=dict)
    #: The node label the prioritize score (0..10) is read from.
    score_label: str = "extender-score"
    mode: Mode = "ok"
    #: The verbs ``mode`` applies to (None: every verb; the others answer normally).
    mode_verbs: set[str] | None = None
    #: Seconds a ``slow`` answer waits.
    delay: float = 10.0
    binder: Binder | None = None
    #: Every call: (verb, request body).
    calls: list[tuple[str, Any]] = field(default_factory=list)
    reason: str = "node(s) refused by the toy extender"
    #: Whether ``calls`` records anything (off for a long-running no-op extender).
    record: bool = True
    #: Node objects by name, as a nodeCacheCapable extender keeps them itself.
    known_nodes: dict[str, Any] = field(default_factory=dict)
    #: preempt: candidate nodes it drops, by name.
    drop_nodes: set[str] = field(default_factory=set)
    #: preempt: victims it spares, by pod name or UID; a node left without victims is dropped.
    spare: set[str] = field(default_factory=set)
    #: preempt: answer this ``ExtenderPreemptionResult`` instead (to send unknown nodes or UIDs).
    preempt_answer: Any = None

    def app(self) -> web.Application:
        app = web.Application()
        for verb in ("filter", "prioritize", "preempt", "bind"):
            app.router.add_post(f"/{verb}", self._handler(verb))
        app.router.add_get("/healthz", self._healthz)
        return app

    async def _healthz(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    def _handler(self, verb: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            # orjson, not aiohttp's stdlib json: a benchmark's extender shares the
            # machine with both schedulers, and 5,000 node names cost ms in json.
            body = orjson.loads(await request.read())
            if self.record:
                self.calls.append((verb, body))
            mode = self.mode if self.mode_verbs is None or verb in self.mode_verbs else "ok"
            if mode == "slow":
                await asyncio.sleep(self.delay)
            if mode == "error":
                return web.Response(status=500, text="toy extender failure")
            if mode == "garbage":
                return web.Response(text="{not json", content_type="application/json")
            if mode == "error-field" and verb != "prioritize":
                return web.json_response({"Error": "toy extender says no"})
            answer = await getattr(self, f"_{verb}")(body)
            return web.Response(body=orjson.dumps(answer), content_type="application/json")

        return handle

    def _passes(self, node: Mapping[str, Any]) -> bool:
        if self.require_label is None:
            return True
        labels = (node.get("metadata") or {}).get("labels") or {}
        return bool(labels.get(self.require_label) == "true")

    def _nodes(self, body: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
        """The node names of an ExtenderArgs and, when sent, their objects."""
        if field_of(body, "NodeNames") is not None:
            return list(field_of(body, "NodeNames")), {}
        items = (field_of(body, "Nodes") or {}).get("items") or []
        objects = {item["metadata"]["name"]: item for item in items}
        return list(objects), objects

    async def _filter(self, body: Mapping[str, Any]) -> dict[str, Any]:
        names, objects = self._nodes(body)
        cache = objects or self.known_nodes
        passed: list[str] = []
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        for name in names:
            if name in self.unresolvable:
                unresolvable[name] = self.unresolvable[name]
            elif self._passes(cache.get(name, {})):
                passed.append(name)
            else:
                failed[name] = self.reason
        answer: dict[str, Any] = {
            "Nodes": None,
            "NodeNames": None,
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable,
            "Error": "",
        }
        if objects:
            answer["Nodes"] = {"metadata": {}, "items": [objects[n] for n in passed]}
        else:
            answer["NodeNames"] = passed
        return answer

    async def _prioritize(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        names, objects = self._nodes(body)
        cache = objects or self.known_nodes
        out = []
        for name in names:
            labels = (cache.get(name, {}).get("metadata") or {}).get("labels") or {}
            out.append({"Host": name, "Score": int(labels.get(self.score_label, "0"))})
        return out

    async def _preempt(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Each candidate's victims less the spared ones, as ``MetaVictims`` (UIDs)."""
        if self.preempt_answer is not None:
            return dict(self.preempt_answer)
        meta = field_of(body, "NodeNameToMetaVictims")
        full = field_of(body, "NodeNameToVictims")
        out: dict[str, Any] = {}
        for node, victims in (meta or full or {}).items():
            if node in self.drop_nodes:
                continue
            kept = []
            for pod in victims.get("Pods") or ():
                if meta is not None:
                    uid, name = pod["UID"], None
                else:
                    uid = pod["metadata"].get("uid")
                    name = pod["metadata"].get("name")
                if uid in self.spare or name in self.spare:
                    continue
                kept.append({"UID": uid})
            if kept:
                out[node] = {"Pods": kept, "NumPDBViolations": victims.get("NumPDBViolations", 0)}
        return {"NodeNameToMetaVictims": out}

    async def _bind(self, body: Mapping[str, Any]) -> dict[str, Any]:
        if self.binder is None:
            return {"Error": "the toy extender has no binder"}
        error = await self.binder(
            field_of(body, "PodNamespace"),
            field_of(body, "PodName"),
            field_of(body, "PodUID"),
            field_of(body, "Node"),
        )
        return {"Error": error}

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]


class RunningExtender:
    """A :class:`ToyExtender` served on ``127.0.0.1`` (``url`` is its urlPrefix)."""

    def __init__(self, toy: ToyExtender, tls: ssl.SSLContext | None = None) -> None:
        self.toy = toy
        self._tls = tls
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self, port: int = 0) -> RunningExtender:
        runner = web.AppRunner(self.toy.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=self._tls)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        bound = sockets[0].getsockname()[1]
        self._runner = runner
        scheme = "https" if self._tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{bound}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


class ThreadedExtender:
    """A :class:`ToyExtender` served from a thread of its own (its own event loop).

    For callers that block their own loop or have none: ``explain``,
    ``simulate``, a synchronous test. Use as a context manager.
    """

    def __init__(self, toy: ToyExtender, port: int = 0) -> None:
        self.toy = toy
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._running = RunningExtender(toy)

    @property
    def url(self) -> str:
        return self._running.url

    def __enter__(self) -> ThreadedExtender:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._running.start(self._port), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._running.stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def main(argv: list[str] | None = None) -> None:
    """``python -m scheduler.testing.extender``: serve the toy extender until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m scheduler.testing.extender",
        description="A toy scheduler extender on 127.0.0.1 (filterVerb filter, "
        "prioritizeVerb prioritize), for trying extenders with simulate and explain.",
    )
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument(
        "--require-label",
        default=None,
        help="nodes without LABEL=true fail the filter (default: every node passes)",
    )
    parser.add_argument(
        "--score-label",
        default="extender-score",
        help="the node label its score (0..10) is read from",
    )
    args = parser.parse_args(argv)
    toy = ToyExtender(require_label=args.require_label, score_label=args.score_label, record=False)
    print(f"toy extender on http://127.0.0.1:{args.port}", flush=True)
    web.run_app(toy.app(), host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
