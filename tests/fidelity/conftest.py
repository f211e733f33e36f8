"""Fidelity tests always compare with the real kube-scheduler on a real kube-apiserver.

They do not use the ``--backend`` fixtures: kube's side needs the real control
plane whatever backend the rest of the suite runs on, and our side runs
``explain`` in-process. So they run once per session, under both backends, and
the binaries are built on first use (see ``ensure_binaries``) instead of skipping.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fidelity: compares our placement with the real kube-scheduler "
        "(real kube-apiserver + etcd, whatever --backend says)",
    )
