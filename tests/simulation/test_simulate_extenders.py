"""The extender examples: the HAMi-like config validates unchanged, and ``simulate``
runs examples/extender-cluster.yaml with the bundled toy extender."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scheduler.cli.main import main
from scheduler.config import load_config
from scheduler.framework.loader import PluginCatalog
from scheduler.simulation.emulator.clusterfile import load_cluster_file
from scheduler.simulation.simulate import simulate
from scheduler.testing.extender import RunningExtender, ToyExtender

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def test_the_gpu_sharing_extender_config_validates_unchanged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = EXAMPLES / "hami-extender-config.yaml"
    assert main(["config", "validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "valid (1 profile)" in out
    assert "bind Extender, DefaultBinder" in out
    config = load_config(path)
    (ext,) = config.extenders
    assert ext.node_cache_capable and ext.bind_verb == "bind" and ext.enable_https
    assert len(ext.managed_resources) == 15
    assert all(r.ignored_by_scheduler for r in ext.managed_resources)


async def test_simulate_example_with_the_toy_extender() -> None:
    raw = yaml.safe_load((EXAMPLES / "extender-config.yaml").read_text())
    toy = ToyExtender(require_label="vgpu-capable")
    running = await RunningExtender(toy).start()
    try:
        raw["extenders"][0]["urlPrefix"] = running.url  # the example's port may be taken
        result = await simulate(
            load_cluster_file(EXAMPLES / "extender-cluster.yaml"),
            load_config(raw),
            PluginCatalog.discover(),
        )
    finally:
        await running.stop()
    placed = {p.pod: (p.node, p.reason) for p in result.placements}
    assert placed["default/train"][0] == "gpu-2"  # the extender's 8 * 2 * 10 wins
    assert placed["default/web"][0] is not None
    node, reason = placed["default/infer-on-cpu-node"]
    assert node is None
    assert reason.startswith(
        "0/3 nodes are available: 1 node(s) refused by the toy extender, "
        "2 node(s) didn't match Pod's node affinity/selector."
    )
    # web asks for no vGPU: the extender never saw it.
    seen = {body["Pod"]["metadata"]["name"] for _, body in toy.calls}
    assert seen == {"train", "infer-on-cpu-node"}


def test_the_toy_extender_runs_as_a_module() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "scheduler.testing.extender", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--require-label" in out
