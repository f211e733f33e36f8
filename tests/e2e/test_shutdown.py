"""``pluggable-scheduler run`` as a real process: SIGTERM means a clean exit 0, lease released."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from tests.e2e.conftest import Cluster, scheduler_config, wait_until


async def test_sigterm_exits_zero_and_releases_the_lease(cluster: Cluster, tmp_path: Path) -> None:
    await cluster.create_node("n1")
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}],
        leader_elect=True,
        namespace=cluster.namespace,
        lease="run-lease",
    )
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    log_file = tmp_path / "daemon.log"
    with log_file.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "scheduler",
            "run",
            "--config",
            str(config_file),
            "--kubeconfig",
            str(cluster.backend.kubeconfig),
            stdout=log,
            stderr=log,
        )
        try:
            await cluster.create_pod("p")
            await cluster.wait_bound(["p"], within=30)
            lease_path = (
                f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/run-lease"
            )
            lease = await cluster.client.get(lease_path)
            assert lease["spec"]["holderIdentity"]
            assert proc.returncode is None
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 20)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert code == 0, log_file.read_text()[-3000:]

    async def released() -> bool:
        spec = (await cluster.client.get(lease_path)).get("spec") or {}
        return not spec.get("holderIdentity")

    await wait_until(released, within=2, message="the lease to be released")
    await cluster.wait_event("p", "Scheduled")
