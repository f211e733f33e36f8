"""``GET /shadow`` on the daemon's serving: the shadow profiles' latest divergences.

Served with the daemon's authentication and authorization (``get`` on the
non-resource URL ``/shadow``), read from the control thread: the list of
divergences is only appended to by the scheduling loop, and a copy of it is
taken at once. ``?limit=N`` returns the newest N; ``?profile=NAME`` those of
one shadow profile. Newest first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from aiohttp import web

if TYPE_CHECKING:
    from scheduler.engine.shadow import Shadows

PATH = "/shadow"


def _json(body: object, status: int = 200) -> web.Response:
    response = web.Response(body=orjson.dumps(body), status=status)
    response.headers["Content-Type"] = "application/json"
    response.headers["Cache-Control"] = "no-cache, private"
    return response


class ShadowEndpoint:
    def __init__(self, shadows: Shadows) -> None:
        self.shadows = shadows

    async def handle(self, request: web.Request) -> web.Response:
        recent = list(self.shadows.recent)
        recent.reverse()
        profile = request.query.get("profile")
        if profile:
            recent = [d for d in recent if d.profile == profile]
        limit = request.query.get("limit")
        if limit is not None:
            if not limit.isdigit():
                return _json(
                    {"error": f"limit: must be a non-negative integer, got {limit!r}"}, 400
                )
            recent = recent[: int(limit)]
        return _json({"divergences": [d.to_json() for d in recent]})
