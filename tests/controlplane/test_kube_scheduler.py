"""kube-scheduler on the real kube-apiserver: the peer for benchmarks works.

kube-scheduler is what our benchmarks compare against and the oracle of the
fidelity tests, so it must run against the same API server our scheduler uses,
with a JSON content type (as our client speaks) and under its own RBAC identity.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from scheduler.tools.controlplane import KUBE_SCHEDULER, ControlPlane, run_kube_scheduler

if TYPE_CHECKING:
    from conftest import SpreadScenario


def test_kube_scheduler_schedules_pods_on_the_real_apiserver(
    real_control_plane: ControlPlane, spread_scenario: SpreadScenario, tmp_path: Path
) -> None:
    admin = real_control_plane.client()
    kubeconfig = real_control_plane.write_user_kubeconfig(KUBE_SCHEDULER.name)
    spread_scenario.create(admin)
    try:
        with run_kube_scheduler(kubeconfig, workdir=tmp_path) as scheduler:
            config = json.loads(scheduler.config_path.read_text())
            assert config["clientConnection"]["contentType"] == "application/json"
            pods = spread_scenario.wait_for_outcome(admin)
            spread_scenario.check(pods)
            spread_scenario.wait_for_events(admin)
            assert scheduler.running(), scheduler.log_tail()
    finally:
        spread_scenario.delete(admin)
