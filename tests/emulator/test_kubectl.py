"""The real kubectl binary against the backend: get, apply, and get --watch."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from .kube_helpers import pod

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


def _kubectl(
    kubeconfig: Path, cache: Path, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


async def test_kubectl_get_apply_watch(
    kube_backend,
    api_client: client.ApiClient,
    namespace: str,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(api_client)
    node = f"kubectl-node-{namespace}"
    await core.create_node({"metadata": {"name": node}})
    try:
        await core.create_namespaced_pod(namespace, pod("existing"))
        kc, cache = kube_backend.kubeconfig, tmp_path / "cache"
        got = await asyncio.to_thread(_kubectl, kc, cache, "get", "nodes,pods", "-A")
        assert got.returncode == 0, got.stderr
        assert (
            f"node/{node}" in got.stdout
            and "pod/existing" in got.stdout
            and namespace in got.stdout
        )

        manifest = tmp_path / "pod.yaml"
        manifest.write_text(
            f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: applied\n  namespace: {namespace}\n"
            "  labels: {tier: one}\nspec:\n  containers:\n"
            "  - {name: c, image: registry.k8s.io/pause:3.9}\n"
        )
        applied = await asyncio.to_thread(_kubectl, kc, cache, "apply", "-f", str(manifest))
        assert applied.returncode == 0 and "pod/applied created" in applied.stdout, applied.stderr
        manifest.write_text(manifest.read_text().replace("tier: one", "tier: two"))
        applied = await asyncio.to_thread(_kubectl, kc, cache, "apply", "-f", str(manifest))
        assert applied.returncode == 0 and "pod/applied configured" in applied.stdout, (
            applied.stderr
        )
        assert (await core.read_namespaced_pod("applied", namespace)).metadata.labels == {
            "tier": "two"
        }

        watcher = await asyncio.create_subprocess_exec(
            KUBECTL,
            "--kubeconfig",
            str(kc),
            "--cache-dir",
            str(cache),
            "get",
            "pods",
            "-n",
            namespace,
            "--watch",
            "-o",
            "name",
            "--request-timeout",
            "20s",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert watcher.stdout is not None
        try:
            async with asyncio.timeout(30):
                initial = sorted(
                    [(await watcher.stdout.readline()).decode().split()[-1] for _ in range(2)]
                )
                assert initial == ["pod/applied", "pod/existing"]
                await core.create_namespaced_pod(namespace, pod("watched"))
                line = (await watcher.stdout.readline()).decode()
            assert line.strip() == "pod/watched"
        finally:
            watcher.kill()
            await watcher.wait()
    finally:
        await core.delete_node(node)


async def test_kubectl_wide_columns_and_watch(
    kube_backend,
    api_client: client.ApiClient,
    namespace: str,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """``get pods -o wide`` and ``get pods -w`` show kube's columns (server-side Tables)."""
    core = client.CoreV1Api(api_client)
    node = f"wide-{namespace}"
    await core.create_node({"metadata": {"name": node}})
    try:
        await _wide_and_watch(kube_backend.kubeconfig, core, namespace, node, tmp_path)
    finally:
        await core.delete_node(node)


async def _wide_and_watch(
    kc: Path, core: client.CoreV1Api, namespace: str, node: str, tmp_path: Path
) -> None:
    await core.create_namespaced_pod(namespace, pod("placed", node=node))
    cache = tmp_path / "cache"
    got = await asyncio.to_thread(_kubectl, kc, cache, "get", "pods", "-A", "-o", "wide")
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].split() == [
        "NAMESPACE",
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    row = next(line.split() for line in lines if line.startswith(namespace))
    assert row[:5] == [namespace, "placed", "0/1", "Pending", "0"]
    assert row[6:] == ["<none>", node, "<none>", "<none>"]

    got = await asyncio.to_thread(_kubectl, kc, cache, "get", "nodes")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]

    watcher = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--kubeconfig",
        str(kc),
        "--cache-dir",
        str(cache),
        "get",
        "pods",
        "-n",
        namespace,
        "--watch",
        "--request-timeout",
        "20s",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert watcher.stdout is not None
    try:
        async with asyncio.timeout(30):
            header = (await watcher.stdout.readline()).decode().split()
            first = (await watcher.stdout.readline()).decode().split()
            await core.create_namespaced_pod(namespace, pod("later"))
            later = (await watcher.stdout.readline()).decode().split()
        assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert first[:4] == ["placed", "0/1", "Pending", "0"]
        assert later[:4] == ["later", "0/1", "Pending", "0"]
    finally:
        watcher.kill()
        await watcher.wait()
