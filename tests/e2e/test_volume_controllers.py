"""The ``pv_controller`` fixture on each backend: claims get bound.

Scheduler tests with PersistentVolumeClaims need something to bind them, as
kube-controller-manager does in a real cluster. On the real backend the fixture
runs it; on the emulator, the emulator's volume controller does the same.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from kubernetes_asyncio import client

from scheduler.tools.controlplane import KubeControllerManagerProcess


async def test_a_claim_is_bound_to_the_matching_volume(
    api_client: Any,
    namespace: str,
    pv_controller: None,
    request: pytest.FixtureRequest,
) -> None:
    core = client.CoreV1Api(api_client)
    label = {"volume-test": uuid.uuid4().hex[:8]}
    pv_name = f"{namespace}-pv"
    await core.create_persistent_volume(
        {
            "metadata": {"name": pv_name, "labels": label},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "manual",
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": f"/tmp/{pv_name}"},
            },
        }
    )
    try:
        await core.create_namespaced_persistent_volume_claim(
            namespace,
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "manual",
                    "selector": {"matchLabels": label},
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        for _ in range(300):
            pvc = await core.read_namespaced_persistent_volume_claim("data", namespace)
            if pvc.status.phase == "Bound":
                break
            await asyncio.sleep(0.1)
        else:
            manager = request.node.funcargs.get("volume_controllers")
            detail = manager.log_tail() if isinstance(manager, KubeControllerManagerProcess) else ""
            raise AssertionError(f"claim not bound within 30 s: {pvc.status}\n{detail}")
        assert pvc.spec.volume_name == pv_name
    finally:
        await core.delete_namespaced_persistent_volume_claim("data", namespace)
        await core.delete_persistent_volume(pv_name)
