"""``pluggable-scheduler config validate`` / ``config defaults``, with a fake plugin catalog.

These are the examples of the issue: a realistic kube-scheduler config
validates; each kind of bad config exits 1 and names the path of every error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from config_fakes import FakeCatalog

from scheduler.cli import config_cmd
from scheduler.cli import main as cli_main
from scheduler.config import ExtensionPoint, load_config, resolve_profiles

GOOD = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 30s
  renewDeadline: 20s
clientConnection:
  qps: 100
  burst: 200
profiles:
  - schedulerName: default-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: GpuBinPack
            weight: 4
      score:
        disabled:
          - name: ImageLocality
    pluginConfig:
      - name: NodeResourcesFit
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: NodeResourcesFitArgs
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: cpu
                weight: 1
              - name: nvidia.com/gpu
                weight: 5
  - schedulerName: gang-scheduler
    plugins:
      multiPoint:
        disabled:
          - name: TaintToleration
      score:
        enabled:
          - name: NodeAffinity
            weight: 10
    pluginConfig:
      - name: InterPodAffinity
        args:
          hardPodAffinityWeight: 5
    pluggableScheduler:
      pluginPriorities:
        NodeAffinity: 10
"""


@pytest.fixture(autouse=True)
def fake_catalog(monkeypatch: pytest.MonkeyPatch) -> FakeCatalog:
    catalog = FakeCatalog()
    monkeypatch.setattr(config_cmd, "discover_catalog", lambda: catalog)
    # Only this command: the test is about it, not about every module registered.
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("config_cmd",))
    return catalog


def run(*argv: str) -> int:
    return cli_main.main(list(argv))


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def test_realistic_two_profile_config_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, GOOD)
    assert run("config", "validate", path) == 0
    out = capsys.readouterr().out
    assert f"{path}: valid (2 profiles)" in out
    assert "profile 'gang-scheduler'" in out


def test_realistic_config_resolves_as_expected(tmp_path: Path) -> None:
    first, second = resolve_profiles(load_config(write(tmp_path, GOOD)), FakeCatalog())
    assert "ImageLocality" not in first.names_at(ExtensionPoint.SCORE)
    assert first.score_weights["GpuBinPack"] == 4
    fit = first.plugin_args["NodeResourcesFit"].model_dump()
    assert fit["scoring_strategy"]["type"] == "MostAllocated"
    assert "TaintToleration" not in second.enabled_plugins
    assert second.at(ExtensionPoint.SCORE)[0] == ("NodeAffinity", 10)
    assert second.plugin_args["InterPodAffinity"].model_dump() == {"hard_pod_affinity_weight": 5}


BAD_CASES = {
    "unknown plugin": (
        GOOD.replace("name: GpuBinPack", "name: GpuBinPak"),
        [
            "profiles[0].plugins.multiPoint.enabled[0].name: plugin 'GpuBinPak' is not "
            "installed; closest installed plugins: GpuBinPack"
        ],
    ),
    "wrong arg type": (
        GOOD.replace("hardPodAffinityWeight: 5", "hardPodAffinityWeight: lots"),
        ["profiles[1].pluginConfig[0].args.hardPodAffinityWeight: Input should be a valid integer"],
    ),
    "unknown field": (
        GOOD.replace(
            "    pluginConfig:\n      - name: Inter", "    pluginConfigs:\n      - name: Inter"
        ),
        ["profiles[1].pluginConfigs: unknown field (did you mean 'pluginConfig'?)"],
    ),
    "two QueueSort plugins": (
        GOOD.replace(
            "      score:\n        enabled:",
            "      queueSort:\n        enabled:\n          - name: FifoSort\n"
            "      score:\n        enabled:",
        ),
        ["profiles[1].plugins.queueSort: exactly one QueueSort plugin must be enabled, found 2"],
    ),
    "score plugin without weight": (
        GOOD.replace("weight: 10", "weight: 0"),
        ["profiles[1].plugins.score.enabled[0].weight: score plugin 'NodeAffinity' has weight 0"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_configs_exit_1_with_each_error_path(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, expected = BAD_CASES[case]
    path = write(tmp_path, text)
    assert run("config", "validate", path) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: invalid scheduler configuration in {path}")
    for line in expected:
        assert f"  - {line}" in err, err


def test_several_errors_are_all_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = GOOD.replace("name: GpuBinPack", "name: GpuBinPak").replace(
        "hardPodAffinityWeight: 5", "hardPodAffinityWeight: lots"
    )
    assert run("config", "validate", write(tmp_path, text)) == 1
    err = capsys.readouterr().err
    assert "profiles[0].plugins.multiPoint.enabled[0].name" in err
    assert "profiles[1].pluginConfig[0].args.hardPodAffinityWeight" in err


def test_schema_errors_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD.replace("leaseDuration: 30s", "leaseDuration: 30"))
    assert run("config", "validate", path) == 1
    assert "leaderElection.leaseDuration: must be a Go duration" in capsys.readouterr().err


def test_missing_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("config", "validate", str(tmp_path / "missing.yaml")) == 1
    assert "cannot read config file" in capsys.readouterr().err


def test_defaults_output_is_a_valid_config_equal_to_no_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_catalog: FakeCatalog
) -> None:
    assert run("config", "defaults") == 0
    text = capsys.readouterr().out
    document = yaml.safe_load(text)
    assert document["profiles"][0]["schedulerName"] == "pluggable-scheduler"
    assert document["leaderElection"]["leaseDuration"] == "15s"
    assert document["pluggableScheduler"]["serverAddress"] == "0.0.0.0:10259"
    enabled = [p["name"] for p in document["profiles"][0]["plugins"]["multiPoint"]["enabled"]]
    assert "VolumeBinding" not in enabled  # not installed in the fake catalog
    config_names = [c["name"] for c in document["profiles"][0]["pluginConfig"]]
    assert "NodeResourcesFit" in config_names

    path = write(tmp_path, text)
    assert run("config", "validate", path) == 0
    from_defaults = resolve_profiles(load_config(path), fake_catalog)
    from_nothing = resolve_profiles(
        load_config({"apiVersion": document["apiVersion"], "kind": document["kind"]}),
        fake_catalog,
    )
    assert from_defaults == from_nothing


def test_defaults_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("config", "defaults", "--output", "json") == 0
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "KubeSchedulerConfiguration"


def test_defaults_without_catalog_show_kube_full_list() -> None:
    from scheduler.config import DEFAULT_MULTI_POINT, default_config_document

    document = default_config_document()
    enabled = document["profiles"][0]["plugins"]["multiPoint"]["enabled"]
    # kube's defaults at its default feature gates: GangScheduling's gate is off.
    assert [p["name"] for p in enabled] == [
        p.name for p in DEFAULT_MULTI_POINT if p.name != "GangScheduling"
    ]
    assert {"name": "TaintToleration", "weight": 3} in enabled
