"""Builders and bounded polling shared by the kube adapter tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.kube.client import RetryPolicy

# Retries in tests back off in milliseconds, not seconds, to keep the suite fast.
FAST_RETRY = RetryPolicy(max_retries=4, backoff_base=0.01, backoff_max=0.05)


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "schedulerName": "pluggable-scheduler",
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


async def eventually(
    predicate: Callable[[], bool], *, within: float = 5.0, message: str = "condition"
) -> None:
    """Poll ``predicate`` every few milliseconds; fail after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        if loop.time() > deadline:
            pytest.fail(f"timed out after {within}s waiting for {message}")
        await asyncio.sleep(0.01)
