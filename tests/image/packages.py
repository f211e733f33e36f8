"""Where pip inside an image build gets packages, with no registry and no trusted TLS.

PyPI answers this machine only through a TLS-intercepting egress proxy whose CA
a fresh image does not trust (checked: a container on the host network gets
``CERTIFICATE_VERIFY_FAILED`` from pypi.org). So builds use the session's
package index on loopback (``package_index`` in tests/conftest.py: our
distributions uploaded with twine, the locked dependencies mirrored), with
``docker build --network host``.

A build gets it as pip's own variables, passed as build arguments
(:meth:`PipSource.build_args`): the Dockerfiles declare ``ARG PIP_INDEX_URL``,
``PIP_FIND_LINKS``, ``PIP_NO_INDEX`` and the like, exactly as a user with a
private index or mirror would pass them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class PipSource:
    """Where pip looks: an index (``/simple/`` URL) and/or find-links pages."""

    find_links: tuple[str, ...] = ()
    index_url: str | None = None

    def build_args(self) -> list[str]:
        """``--build-arg`` options setting pip's variables for a Dockerfile that declares them."""
        values = {"PIP_FIND_LINKS": " ".join(self.find_links)}
        if self.index_url is None:
            values["PIP_NO_INDEX"] = "1"
        else:
            values["PIP_INDEX_URL"] = self.index_url
        return [arg for key, value in values.items() for arg in ("--build-arg", f"{key}={value}")]
