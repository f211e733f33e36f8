"""Helpers for the API contract tests: raw HTTP next to kubernetes-asyncio, watch reading."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    node: str = "",
    scheduler: str = "",
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}
    if node:
        spec["nodeName"] = node
    if scheduler:
        spec["schedulerName"] = scheduler
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def binding(name: str, node: str, uid: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if uid:
        meta["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"kind": "Node", "name": node},
    }


async def _connection(api: client.ApiClient) -> tuple[dict[str, str], ssl.SSLContext | bool]:
    """Auth headers and TLS settings of ``api``'s kubeconfig, for plain aiohttp requests."""
    conf = api.configuration
    headers: dict[str, str] = {}
    for setting in (await conf.auth_settings()).values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    if not conf.host.startswith("https"):
        return headers, False
    context = ssl.create_default_context(cafile=conf.ssl_ca_cert)
    if conf.cert_file:
        context.load_cert_chain(conf.cert_file, conf.key_file)
    if not conf.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return headers, context


async def raw(
    api: client.ApiClient,
    method: str,
    path: str,
    *,
    body: Any = None,
    data: bytes | None = None,
    content_type: str | None = "application/json",
    params: dict[str, str] | None = None,
    accept: str = "application/json",
) -> tuple[int, Any, dict[str, str]]:
    """One request with full control over body bytes and headers.

    ``content_type=None`` sends no Content-Type header at all.
    Returns (status, parsed JSON body, headers).
    """
    auth, tls = await _connection(api)
    headers = {"Accept": accept, **auth}
    if content_type is not None:
        headers["Content-Type"] = content_type
    if body is not None:
        data = json.dumps(body).encode()
    url = api.configuration.host + path
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method,
            url,
            data=data,
            headers=headers,
            params=params,
            ssl=tls,
            skip_auto_headers=() if content_type is not None else ("Content-Type",),
        ) as resp,
    ):
        text = await resp.text()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return resp.status, parsed, dict(resp.headers)


async def read_json(resp: Any) -> Any:
    """Body of a ``_preload_content=False`` response."""
    data = await resp.read()
    resp.release()
    return json.loads(data)


def error(exc: client.ApiException) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(exc.body)
    return result


class WatchStream:
    """Reads newline-delimited watch events from an HTTP watch with bounded waits."""

    def __init__(self, session: aiohttp.ClientSession, resp: aiohttp.ClientResponse) -> None:
        self.session = session
        self.resp = resp

    @classmethod
    async def open(cls, api: client.ApiClient, path: str, **params: str) -> WatchStream:
        auth, tls = await _connection(api)
        session = aiohttp.ClientSession(headers=auth)
        query = {"watch": "true", **params}
        resp = await session.get(api.configuration.host + path, params=query, ssl=tls)
        assert resp.status == 200, await resp.text()
        return cls(session, resp)

    async def next(self, wait: float = 5.0) -> dict[str, Any] | None:
        """The next event, or None at end of stream."""
        async with asyncio.timeout(wait):
            line = await self.resp.content.readline()
        if not line:
            return None
        event: dict[str, Any] = json.loads(line)
        return event

    async def next_of(self, types: set[str], wait: float = 5.0) -> dict[str, Any]:
        """Next event whose type is in ``types`` (skipping bookmarks and others)."""
        async with asyncio.timeout(wait):
            while True:
                event = await self.next(wait)
                assert event is not None, f"stream ended while waiting for {types}"
                if event["type"] in types:
                    return event

    async def close(self) -> None:
        self.resp.close()
        await self.session.close()

    async def __aenter__(self) -> WatchStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def api_client(server: Any, tmp_path: Path) -> client.ApiClient:
    """A kubernetes-asyncio client for an emulator, through the kubeconfig it writes."""
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(server.write_kubeconfig(tmp_path / "kc")),
        client_configuration=configuration,
    )
    return client.ApiClient(configuration)


async def post(api: client.ApiClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST that must create (201); the created object."""
    status, answer, _ = await raw(api, "POST", path, body=body)
    assert status == 201, answer
    result: dict[str, Any] = answer
    return result


async def get(api: client.ApiClient, path: str) -> dict[str, Any]:
    """GET that must find (200); the object."""
    status, answer, _ = await raw(api, "GET", path)
    assert status == 200, answer
    result: dict[str, Any] = answer
    return result
