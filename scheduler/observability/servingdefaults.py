"""kube-scheduler's delegated-auth defaults, apart from the code that applies them.

``run --help`` names them, and building the command line's parser must not
import what :mod:`scheduler.observability.delegated_auth` needs (aiohttp and
the API client): every command builds every parser on start.
"""

from __future__ import annotations

from typing import Final

#: kube's defaults (NewDelegatingAuthorizationOptions).
DEFAULT_ALWAYS_ALLOW_PATHS: Final = ("/healthz", "/readyz", "/livez")
DEFAULT_ALWAYS_ALLOW_GROUPS: Final = ("system:masters",)
DEFAULT_CACHE_TTL: Final = 10.0
