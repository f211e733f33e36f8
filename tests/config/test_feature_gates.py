"""Feature gates: kube's table and rules, the config field and flag, gated and declaring plugins."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from config_fakes import KUBE_LIKE, THIRD_PARTY, FakeCatalog, FakePlugin

from scheduler.api import FeatureSpec, Plugin, Status, hookimpl
from scheduler.config import API_VERSION, KIND, ExtensionPoint, load_config, resolve_profiles
from scheduler.config.changes import fixed_field_changes
from scheduler.errors import UserError
from scheduler.framework.loader import PluginCatalog, PluginLoadError
from scheduler.model.featuregates import (
    FeatureGateError,
    effective_gates,
    parse_feature_gates_flag,
)
from scheduler.model.kubegates import KUBE_FEATURE_GATE_DEPENDENCIES, KUBE_FEATURE_GATES
from scheduler.testing import PluginTestKit

P = ExtensionPoint
ROOT = Path(__file__).resolve().parents[2]
KUBE_MODULE = Path("/root/go/pkg/mod/k8s.io/kubernetes@v1.36.3")

GANG = FakePlugin(frozenset({P.PRE_ENQUEUE, P.PERMIT}), gated_by="GangScheduling")
OWN = FakePlugin(
    frozenset({P.SCORE}),
    gated_by="MyAlphaScore",
    feature_gates={"MyAlphaScore": FeatureSpec(default=False, stage="Alpha")},
)


def catalog() -> FakeCatalog:
    return FakeCatalog(plugins={**KUBE_LIKE, **THIRD_PARTY, "GangScheduling": GANG, "MyScore": OWN})


def doc(gates: dict[str, bool] | None = None, **profile: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "profiles": [{"schedulerName": "p", **profile}],
    }
    if gates is not None:
        document["pluggableScheduler"] = {"featureGates": gates}
    return document


def problems(document: dict[str, Any], flags: dict[str, bool] | None = None) -> list[str]:
    config = load_config(document).with_feature_gate_flags(flags or {})
    with pytest.raises(UserError) as info:
        resolve_profiles(config, catalog())
    return info.value.details


# -- kube's table ---------------------------------------------------------------------


@pytest.mark.skipif(not KUBE_MODULE.is_dir(), reason="the kube 1.36.3 Go module is not here")
def test_kube_table_is_what_the_generator_reads_from_kube_features_go() -> None:
    spec = importlib.util.spec_from_file_location(
        "generate_gates", ROOT / "tools" / "featuregates" / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_gates"] = module
    spec.loader.exec_module(module)
    generated = module.generate(KUBE_MODULE)
    assert generated == (ROOT / "scheduler" / "model" / "kubegates.py").read_text()


def test_kube_136_defaults_and_stages() -> None:
    assert KUBE_FEATURE_GATES["GangScheduling"] == FeatureSpec(False, "Alpha")
    assert KUBE_FEATURE_GATES["GenericWorkload"] == FeatureSpec(False, "Alpha")
    assert KUBE_FEATURE_GATES["DynamicResourceAllocation"] == FeatureSpec(True, "GA", locked=True)
    assert KUBE_FEATURE_GATES["NodeDeclaredFeatures"] == FeatureSpec(True, "Beta")
    assert KUBE_FEATURE_GATE_DEPENDENCIES["GangScheduling"] == ("GenericWorkload",)


# -- kube's rules ---------------------------------------------------------------------


def test_flag_syntax_is_kubes() -> None:
    assert parse_feature_gates_flag("A=true, B=false,,C=1") == {"A": True, "B": False, "C": True}
    with pytest.raises(FeatureGateError, match="missing bool value for A"):
        parse_feature_gates_flag("A")
    with pytest.raises(FeatureGateError, match=r"invalid value of A=yes, err: strconv.ParseBool"):
        parse_feature_gates_flag("A=yes")


def test_unknown_locked_and_dependency_errors_use_kubes_words() -> None:
    def errors(requested: dict[str, bool]) -> list[str]:
        _, errs = effective_gates(KUBE_FEATURE_GATES, requested, KUBE_FEATURE_GATE_DEPENDENCIES)
        return [str(e) for e in errs]

    assert errors({"Nope": True}) == ["unrecognized feature gate: Nope"]
    assert errors({"DynamicResourceAllocation": False}) == [
        "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"
    ]
    assert errors({"DynamicResourceAllocation": True}) == []  # its default: allowed
    assert errors({"GangScheduling": True}) == [
        "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"
    ]
    assert errors({"GangScheduling": True, "GenericWorkload": True}) == []


def test_all_alpha_sets_unlocked_alpha_gates_and_a_named_gate_wins() -> None:
    gates, errs = effective_gates(
        KUBE_FEATURE_GATES,
        {"AllAlpha": True, "TopologyAwareWorkloadScheduling": False},
        KUBE_FEATURE_GATE_DEPENDENCIES,
    )
    assert errs == []
    assert gates["GangScheduling"] is True and gates["TopologyAwareWorkloadScheduling"] is False
    assert gates["NodeDeclaredFeatures"] is True  # beta: untouched


# -- the config -----------------------------------------------------------------------


def test_gated_default_plugin_joins_the_defaults_only_with_its_gate_on() -> None:
    (off,) = resolve_profiles(load_config(doc()), catalog())
    assert "GangScheduling" not in off.enabled_plugins
    assert off.feature_gates["GangScheduling"] is False
    gates = {"GenericWorkload": True, "GangScheduling": True}
    (on,) = resolve_profiles(load_config(doc(gates)), catalog())
    assert on.names_at(P.PERMIT)[-1] == "GangScheduling"
    assert on.names_at(P.PRE_ENQUEUE) == ("SchedulingGates", "GangScheduling")
    assert on.feature_gates["GangScheduling"] is True


def test_enabling_a_plugin_whose_gate_is_off_names_the_gates_to_turn_on() -> None:
    plugins = {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}
    assert problems(doc(plugins=plugins)) == [
        "profiles[0].plugins.multiPoint.enabled[0].name: plugin 'GangScheduling' is behind "
        "feature gate GangScheduling, which is off: turn it on with "
        "pluggableScheduler.featureGates {GangScheduling: true, GenericWorkload: true} or "
        "--feature-gates=GangScheduling=true,GenericWorkload=true"
    ]


def test_bad_gates_are_errors_with_their_field_path_or_the_flag() -> None:
    assert problems(doc({"Nope": True})) == [
        "pluggableScheduler.featureGates.Nope: unrecognized feature gate: Nope"
    ]
    assert problems(doc(), {"DynamicResourceAllocation": False}) == [
        "--feature-gates: cannot set feature gate DynamicResourceAllocation to false, "
        "feature is locked to true"
    ]
    assert problems(doc({"GangScheduling": True})) == [
        "pluggableScheduler.featureGates.GangScheduling: GangScheduling is enabled, but "
        "depends on features that are disabled: [GenericWorkload]"
    ]


def test_flag_wins_over_the_file_gate_by_gate() -> None:
    config = load_config(doc({"GenericWorkload": True, "GangScheduling": True}))
    config = config.with_feature_gate_flags({"GangScheduling": False})
    (resolved,) = resolve_profiles(config, catalog())
    assert resolved.feature_gates["GenericWorkload"] is True
    assert resolved.feature_gates["GangScheduling"] is False
    assert "GangScheduling" not in resolved.enabled_plugins


def test_a_plugin_declared_gate_is_known_set_and_gates_its_plugin() -> None:
    plugins = {"multiPoint": {"enabled": [{"name": "MyScore"}]}}
    assert problems(doc(plugins=plugins))[0].endswith(
        "plugin 'MyScore' is behind feature gate MyAlphaScore, which is off: turn it on with "
        "pluggableScheduler.featureGates {MyAlphaScore: true} or "
        "--feature-gates=MyAlphaScore=true"
    )
    (resolved,) = resolve_profiles(
        load_config(doc({"MyAlphaScore": True}, plugins=plugins)), catalog()
    )
    assert "MyScore" in resolved.names_at(P.SCORE)
    assert resolved.feature_gates["MyAlphaScore"] is True
    # Enabled but not named in featureGates: the plugin's declaration still shows.
    (plain,) = resolve_profiles(load_config(doc()), catalog())
    assert "MyAlphaScore" not in plain.feature_gates


def test_feature_gates_need_a_restart() -> None:
    old = load_config(doc())
    new = load_config(doc({"GenericWorkload": True}))
    assert fixed_field_changes(old, new) == ["pluggableScheduler.featureGates.GenericWorkload"]
    flagged = old.with_feature_gate_flags({"GenericWorkload": True})
    # A reload re-applies the command line's gates to the new file: no change.
    assert (
        fixed_field_changes(flagged, new.with_feature_gate_flags(flagged.feature_gate_flags)) == []
    )


# -- plugins --------------------------------------------------------------------------


class _Declares(Plugin):
    api_version = "2.1"
    feature_gates: ClassVar[dict[str, FeatureSpec]] = {"FancyFilter": FeatureSpec(False, "Beta")}
    gated_by: ClassVar[str | None] = "FancyFilter"

    @hookimpl
    def pre_enqueue(self, pod: Any) -> Status | None:
        return None if self.handle.feature_gates["FancyFilter"] else Status.unresolvable("off")


class _ClaimsKubeGate(_Declares):
    feature_gates: ClassVar[dict[str, FeatureSpec]] = {"GangScheduling": FeatureSpec(True, "Beta")}


class _GatedByNothing(_Declares):
    gated_by: ClassVar[str | None] = "Undeclared"


def test_plugin_gate_declarations_are_checked_at_load() -> None:
    loaded = PluginCatalog.from_classes({"Fancy": _Declares})
    assert loaded.gated_by("Fancy") == "FancyFilter"
    assert dict(loaded.declared_feature_gates("Fancy")) == {
        "FancyFilter": FeatureSpec(False, "Beta")
    }
    with pytest.raises(PluginLoadError, match="already a kube feature gate"):
        PluginCatalog.from_classes({"Bad": _ClaimsKubeGate}).load("Bad")
    with pytest.raises(PluginLoadError, match="gated_by must name a kube feature gate"):
        PluginCatalog.from_classes({"Bad": _GatedByNothing}).load("Bad")


def test_plugins_read_the_effective_gates_through_the_handle() -> None:
    on = PluginTestKit(feature_gates={"FancyFilter": True}).build(_Declares)
    assert on.handle.feature_gates["FancyFilter"] is True
    assert on.handle.feature_gates["DynamicResourceAllocation"] is True
    off = PluginTestKit().build(_Declares)
    assert off.handle.feature_gates["FancyFilter"] is False
    with pytest.raises(TypeError):
        off.handle.feature_gates["FancyFilter"] = True  # type: ignore[index]


@pytest.mark.parametrize("command", ["simulate", "explain"])
def test_the_flag_is_checked_by_the_commands_that_schedule(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from scheduler.cli import main as cli_main

    argv = [command, "--cluster", str(ROOT / "examples" / "small-cluster.yaml")]
    if command == "explain":
        argv += ["--pod", str(ROOT / "examples" / "explain-pod.yaml")]
    assert cli_main.main([*argv, "--feature-gates", "GenericWorkload=maybe"]) == 1
    err = capsys.readouterr().err
    assert "--feature-gates: invalid value of GenericWorkload=maybe" in err
    assert cli_main.main([*argv, "--feature-gates", "DynamicResourceAllocation=false"]) == 1
    assert (
        "--feature-gates: cannot set feature gate DynamicResourceAllocation to false, "
        "feature is locked to true" in capsys.readouterr().err
    )
