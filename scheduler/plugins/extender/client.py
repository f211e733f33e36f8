"""One HTTP extender's client: one aiohttp connection pool, kube's URL and error rules.

The calls run on the scheduling loop. They ran on an event loop of their
own on a thread for a while (session 7): under heavy load from other
processes a thread of ours took a larger share of the cores, but on a quiet
machine the two threads fought over the GIL and every call crossed threads
twice, which cost more than the call (BENCHMARKS.md, "SchedulingBasic with
one no-op HTTP extender": 256-357 pods/s with the thread, 475-551 without,
500 nodes, same commit).

The session is created on first use and closed with the plugin. Every call
is bounded by the extender's ``httpTimeout`` and by the pod's scheduling
deadline, whichever comes first.
"""

from __future__ import annotations

import asyncio
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from scheduler.config.extenders import Extender
from scheduler.plugins.extender.wire import ExtenderCallError, encode


def _load_pem(context: ssl.SSLContext, cert: str, key: str) -> None:
    """``load_cert_chain`` needs files: inline PEM data goes through temporary files."""
    with tempfile.TemporaryDirectory() as tmp:
        cert_path = Path(tmp, "cert.pem")
        key_path = Path(tmp, "key.pem")
        cert_path.write_text(cert)
        key_path.write_text(key)
        context.load_cert_chain(cert_path, key_path)


def ssl_context(config: Extender) -> ssl.SSLContext | None:
    """kube's ``makeTransport``: HTTPS without a CA means no verification."""
    if not config.enable_https:
        return None
    tls = config.tls_config
    context = ssl.create_default_context()
    has_ca = tls is not None and bool(tls.ca_file or tls.ca_data)
    if tls is not None:
        if tls.ca_file:
            context.load_verify_locations(cafile=tls.ca_file)
        if tls.ca_data:
            context.load_verify_locations(cadata=tls.ca_data)
        if tls.cert_file and tls.key_file:
            context.load_cert_chain(tls.cert_file, tls.key_file)
        elif tls.cert_data and tls.key_data:
            _load_pem(context, tls.cert_data, tls.key_data)
    if not has_ca or (tls is not None and tls.insecure):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _dial_error(err: aiohttp.ClientConnectorError) -> str:
    """A failed connect as Go's net package words it (``dial tcp ...: connection refused``)."""
    cause = err.os_error
    where = f"{err.host}:{err.port}"
    if isinstance(cause, ConnectionRefusedError):
        return f"dial tcp {where}: connect: connection refused"
    return f"dial tcp {where}: {cause.strerror or cause}"


class ExtenderClient:
    """POSTs kube's extender JSON to ``urlPrefix/verb`` over one pooled session."""

    def __init__(self, config: Extender) -> None:
        self.config = config
        self.base = config.url_prefix.rstrip("/")
        self._ssl = ssl_context(config)
        self._server_name = (
            config.tls_config.server_name if config.tls_config is not None else ""
        ) or None
        self._session: aiohttp.ClientSession | None = None

    def _pool(self) -> aiohttp.ClientSession:
        session = self._session
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else False)
            session = aiohttp.ClientSession(connector=connector, raise_for_status=False)
            self._session = session
        return session

    async def send(self, verb: str, body: Any, deadline: float | None) -> Any:
        """POST ``body`` to ``verb``; the decoded answer, or ExtenderCallError.

        ``deadline`` is a ``time.monotonic()`` instant the answer must come by
        (the pod's scheduling deadline); the extender's ``httpTimeout`` caps it.
        """
        url = f"{self.base}/{verb}"
        timeout = self.config.timeout
        if deadline is not None:
            timeout = min(timeout, max(deadline - time.monotonic(), 0.0))
        try:
            async with asyncio.timeout(timeout):
                async with self._pool().post(
                    url,
                    data=encode(body),
                    headers={"Content-Type": "application/json"},
                    server_hostname=self._server_name,
                ) as resp:
                    if resp.status != 200:
                        raise ExtenderCallError(
                            f"failed {verb} with extender at URL {url}, code {resp.status}"
                        )
                    text = await resp.read()
        except TimeoutError as err:
            # Go's http.Client text, as kube-scheduler reports it.
            raise ExtenderCallError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while '
                "awaiting headers)"
            ) from err
        except aiohttp.ClientConnectorError as err:
            raise ExtenderCallError(f'Post "{url}": {_dial_error(err)}') from err
        except aiohttp.ClientError as err:
            raise ExtenderCallError(f'Post "{url}": {err}') from err
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError as err:
            raise ExtenderCallError(
                f"decoding the answer of extender {self.config.name} to {verb}: {err}"
            ) from err

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
