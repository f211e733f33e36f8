"""Plugins found through entry points of pip-installed distributions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scheduler.api.version import PLUGIN_API_VERSION
from scheduler.config import load_config
from scheduler.errors import UserError
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.loader import PluginCatalog, PluginLoadError
from scheduler.framework.profile import build_profiles
from scheduler.state.nodetable import NodeTable
from tests.framework.conftest import run_cli

BROKEN = ["scheduler-plugin-brokenimport", "scheduler-plugin-oldapi", "scheduler-plugin-badhook"]


def config_enabling(*names: str, args: dict | None = None) -> dict:
    profile: dict = {
        "schedulerName": "pluggable-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": n} for n in names]}},
    }
    if args:
        profile["pluginConfig"] = [{"name": k, "args": v} for k, v in args.items()]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def test_plugins_list_reports_a_pip_installed_plugin(dist_sites):
    proc = run_cli([dist_sites["scheduler-plugin-zonegate"]], "plugins", "list", "--output", "json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["plugins"]}
    zone = rows["ZoneGate"]
    assert zone["distribution"] == "scheduler-plugin-zonegate"
    assert zone["version"] == "1.2.3"
    assert zone["api_version"] == "1.0"
    assert zone["extension_points"] == ["filter", "score"]
    assert zone["error"] is None
    assert zone["enabled_in"] == []  # installed is not enabled


def test_plugins_list_text_shows_load_errors_of_every_tier(dist_sites):
    sites = [dist_sites[d] for d in BROKEN]
    proc = run_cli(sites, "plugins", "list")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert (
        "load error: BrokenImport (scheduler-plugin-brokenimport 0.1.0): import failed: "
        "ModuleNotFoundError" in out
    )
    assert (
        "load error: OldApi (scheduler-plugin-oldapi 0.2.0): written for plugin API 0.9, "
        f"incompatible with this framework's plugin API {PLUGIN_API_VERSION}" in out
    )
    assert (
        "load error: BadHook (scheduler-plugin-badhook 0.3.0): invalid hook implementation" in out
    )
    assert "weather" in out


def test_duplicate_plugin_name_is_an_error_naming_both_distributions(with_dists):
    with_dists("scheduler-plugin-zonegate", "scheduler-plugin-zonegate-fork")
    catalog = PluginCatalog.discover()
    with pytest.raises(PluginLoadError) as err:
        catalog.load("ZoneGate")
    message = str(err.value)
    assert "scheduler-plugin-zonegate" in message and "scheduler-plugin-zonegate-fork" in message


def test_enabled_plugin_is_loaded_configured_and_run(with_dists):
    with_dists("scheduler-plugin-zonegate", *BROKEN)
    catalog = PluginCatalog.discover()
    config = load_config(
        config_enabling("ZoneGate", args={"ZoneGate": {"allowedZones": ["b", "c"]}})
    )
    table = NodeTable()
    for name, zone in [("n1", "a"), ("n2", "b"), ("n3", "c")]:
        table.upsert_node(
            {
                "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
                "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}},
            }
        )
    profiles = build_profiles(config, catalog, lambda name: FrameworkHandle(name, table))
    # Only enabled plugins are imported: the broken ones stay untouched.
    assert "brokenimport" not in sys.modules and "badhook" not in sys.modules
    from scheduler.api import CycleState
    from scheduler.framework.cycle import Algorithm
    from scheduler.state.pod import PodInfo

    framework = profiles["pluggable-scheduler"].framework
    pod = PodInfo.from_dict(
        {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []}}
    )
    result = Algorithm(framework, seed=0).schedule(CycleState(), pod, table)
    assert result.filter_outcome is not None, result.status
    assert sorted(result.filter_outcome.feasible.names) == ["n2", "n3"]
    assert result.node == "n2"  # ZoneGate scores its first allowed zone highest


@pytest.mark.parametrize(
    ("dist", "plugin", "expected"),
    [
        ("scheduler-plugin-brokenimport", "BrokenImport", "import failed: ModuleNotFoundError"),
        ("scheduler-plugin-oldapi", "OldApi", "written for plugin API 0.9"),
        ("scheduler-plugin-badhook", "BadHook", "invalid hook implementation"),
    ],
)
def test_enabling_a_broken_plugin_fails_startup_naming_plugin_and_distribution(
    with_dists, dist, plugin, expected
):
    with_dists(dist)
    catalog = PluginCatalog.discover()
    with pytest.raises(UserError) as err:
        build_profiles(
            load_config(config_enabling(plugin)),
            catalog,
            lambda name: FrameworkHandle(name, NodeTable()),
        )
    text = err.value.render()
    assert plugin in text and dist in text and expected in text


@pytest.mark.parametrize(
    ("dist", "plugin"),
    [
        ("scheduler-plugin-brokenimport", "BrokenImport"),
        ("scheduler-plugin-oldapi", "OldApi"),
        ("scheduler-plugin-badhook", "BadHook"),
    ],
)
def test_plugin_load_failure_names_the_config_file(with_dists, tmp_path: Path, dist, plugin):
    with_dists(dist)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config_enabling(plugin)))
    with pytest.raises(UserError) as err:
        build_profiles(
            load_config(path),
            PluginCatalog.discover(),
            lambda name: FrameworkHandle(name, NodeTable()),
        )
    assert str(path) in err.value.message and plugin in err.value.render()


def test_config_validate_accepts_plugin_args_and_rejects_wrong_types(dist_sites, tmp_path: Path):
    site = [dist_sites["scheduler-plugin-zonegate"]]
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(config_enabling("ZoneGate", args={"ZoneGate": {"allowedZones": ["a"]}}))
    )
    proc = run_cli(site, "config", "validate", str(good))
    assert proc.returncode == 0, proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(config_enabling("ZoneGate", args={"ZoneGate": {"allowedZones": 7}})))
    proc = run_cli(site, "config", "validate", str(bad))
    assert proc.returncode == 1
    assert "profiles[0].pluginConfig[0].args.allowedZones" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_plugin_lists_closest_installed_names(dist_sites, tmp_path: Path):
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(config_enabling("ZoneGat")))
    proc = run_cli([dist_sites["scheduler-plugin-zonegate"]], "config", "validate", str(path))
    assert proc.returncode == 1
    assert "ZoneGat" in proc.stderr and "ZoneGate" in proc.stderr


def test_run_with_a_broken_enabled_plugin_exits_1_naming_it_without_traceback(
    dist_sites, tmp_path: Path
):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_enabling("OldApi")))
    kubeconfig = tmp_path / "kubeconfig"  # never reached: start-up fails first
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    site = [dist_sites["scheduler-plugin-oldapi"]]
    proc = run_cli(site, "run", "--config", str(config), "--kubeconfig", str(kubeconfig))
    assert proc.returncode == 1
    assert "OldApi" in proc.stderr and "scheduler-plugin-oldapi 0.2.0" in proc.stderr
    assert "Traceback" not in proc.stderr
    debug = run_cli(
        site, "--debug", "run", "--config", str(config), "--kubeconfig", str(kubeconfig)
    )
    assert debug.returncode == 1 and "Traceback" in debug.stderr
