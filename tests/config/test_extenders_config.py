"""The ``extenders`` section: kube-scheduler 1.36's defaults and validation, with paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.config import API_VERSION, KIND, load_config
from scheduler.config.changes import fixed_field_changes
from scheduler.config.extenders import DEFAULT_EXTENDER_TIMEOUT, EXTENDER_PLUGIN
from scheduler.config.points import ExtensionPoint
from scheduler.config.resolve import resolve_profiles
from scheduler.errors import UserError
from scheduler.framework.loader import PluginCatalog

REPO = Path(__file__).resolve().parents[2]


def doc(*extenders: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, "extenders": list(extenders), **fields}


def problems(source: Any) -> list[str]:
    with pytest.raises(UserError) as info:
        resolve_profiles(load_config(source), PluginCatalog.discover())
    return info.value.details


def test_defaults_are_kubes() -> None:
    ext = load_config(doc({"urlPrefix": "http://127.0.0.1:8888/scheduler"})).extenders[0]
    assert (ext.filter_verb, ext.prioritize_verb, ext.bind_verb, ext.weight) == ("", "", "", 0)
    assert not ext.enable_https and not ext.node_cache_capable and not ext.ignorable
    assert ext.timeout == DEFAULT_EXTENDER_TIMEOUT == 5.0
    assert ext.name == "http://127.0.0.1:8888/scheduler"
    timed = load_config(doc({"urlPrefix": "http://x", "httpTimeout": "1.5s"})).extenders[0]
    assert timed.timeout == 1.5


def test_kube_validation_rules_with_field_paths() -> None:
    got = problems(
        doc(
            {"urlPrefix": "http://a", "prioritizeVerb": "prioritize"},
            {
                "urlPrefix": "http://b",
                "bindVerb": "bind",
                "managedResources": [{"name": "example.com/gpu"}, {"name": "cpu"}],
            },
            {
                "urlPrefix": "http://c",
                "bindVerb": "bind",
                "managedResources": [{"name": "example.com/gpu"}, {"name": "bad name/x"}],
            },
        )
    )
    assert got == [
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
        "extenders[1].managedResources[1].name: Invalid value: 'cpu': is an invalid extended "
        "resource name",
        "extenders[2].managedResources[0].name: Invalid value: 'example.com/gpu': duplicate "
        "extender managed resource name",
        "extenders[2].managedResources[1].name: Invalid value: 'bad name/x': prefix part a "
        "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        "regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "extenders: Invalid value: found 2 extenders implementing bind: only one extender can "
        "implement bind",
    ]


def test_type_and_shape_errors_name_the_field() -> None:
    with pytest.raises(UserError) as info:
        load_config(
            doc(
                {"urlPrefix": "http://x", "weight": "1"},
                {"urlPrefix": "http://y", "httpTimeout": "soon", "tlsConfig": {"caFile": 3}},
                {"filterVerb": "filter"},
            )
        )
    details = info.value.details
    assert details[0].startswith("extenders[0].weight: Input should be a valid integer")
    assert details[1].startswith("extenders[1].tlsConfig.caFile: Input should be a valid string")
    assert details[2].startswith("extenders[1].httpTimeout: ")
    assert details[3] == "extenders[2].urlPrefix: required field is missing"


def test_preempt_verb_is_accepted() -> None:
    config = load_config(doc({"urlPrefix": "http://x", "preemptVerb": "preempt"}))
    assert config.extenders[0].preempt_verb == "preempt"
    profiles = resolve_profiles(config, PluginCatalog.discover())
    assert profiles


def test_every_profile_runs_the_extenders_and_binds_through_them_first() -> None:
    config = load_config(
        doc(
            {"urlPrefix": "http://ign", "filterVerb": "f", "ignorable": True},
            {
                "urlPrefix": "http://b",
                "bindVerb": "bind",
                "managedResources": [
                    {"name": "example.com/vgpu", "ignoredByScheduler": True},
                    {"name": "example.com/vmem"},
                ],
            },
            profiles=[{"schedulerName": "a"}, {"schedulerName": "b"}],
        )
    )
    for profile in resolve_profiles(config, PluginCatalog.discover()):
        assert profile.names_at(ExtensionPoint.BIND)[:2] == (EXTENDER_PLUGIN, "DefaultBinder")
        args = profile.plugin_args[EXTENDER_PLUGIN]
        # kube's buildExtenders: ignorable extenders are called last.
        assert [e.url_prefix for e in args.extenders] == ["http://b", "http://ign"]  # type: ignore[attr-defined]
        fit = profile.plugin_args["NodeResourcesFit"]
        assert fit.ignored_resources == ["example.com/vgpu"]  # type: ignore[attr-defined]


def test_no_extenders_no_extender_plugin() -> None:
    (profile,) = resolve_profiles(load_config(doc()), PluginCatalog.discover())
    assert EXTENDER_PLUGIN not in profile.enabled_plugins


def test_failure_policy_ignore_applies_to_the_extender_step() -> None:
    config = load_config(
        doc(
            {"urlPrefix": "http://x", "filterVerb": "filter"},
            profiles=[{"pluggableScheduler": {"failurePolicy": {EXTENDER_PLUGIN: "Ignore"}}}],
        )
    )
    (profile,) = resolve_profiles(config, PluginCatalog.discover())
    assert profile.failure_policy == {EXTENDER_PLUGIN: "Ignore"}


def test_changing_extenders_needs_a_restart() -> None:
    old = load_config(doc({"urlPrefix": "http://x", "filterVerb": "filter"}))
    new = load_config(doc({"urlPrefix": "http://y", "filterVerb": "filter"}))
    assert fixed_field_changes(old, new) == ["extenders"]
    assert fixed_field_changes(old, old) == []
