"""Plugin-set resolution: kube-scheduler's precedence rules, checked against a fake catalog."""

from __future__ import annotations

from typing import Any

import pytest
from config_fakes import FakeCatalog, NodeResourcesFitArgs, _p

from scheduler.config import (
    API_VERSION,
    KIND,
    ExtensionPoint,
    PluginEntry,
    ResolvedProfile,
    load_config,
    resolve_profiles,
)
from scheduler.errors import UserError

P = ExtensionPoint


def doc(*profiles: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, "profiles": list(profiles), **fields}


def resolve(*profiles: dict[str, Any], catalog: FakeCatalog | None = None) -> list[ResolvedProfile]:
    return resolve_profiles(load_config(doc(*profiles)), catalog or FakeCatalog())


def one(plugins: dict[str, Any], **profile: Any) -> ResolvedProfile:
    (resolved,) = resolve({"schedulerName": "p", "plugins": plugins, **profile})
    return resolved


def problems(*profiles: dict[str, Any], catalog: FakeCatalog | None = None) -> list[str]:
    with pytest.raises(UserError) as info:
        resolve(*profiles, catalog=catalog)
    return info.value.details


def names(profile: ResolvedProfile) -> dict[str, list[str]]:
    """Non-empty points only, as {point: [plugin, ...]}."""
    return {p.value: list(profile.names_at(p)) for p in ExtensionPoint if profile.names_at(p)}


# Plugins of the default set, minus the volume plugins nobody installed.
DEFAULT_FILTER = [
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeDeclaredFeatures",
]
DEFAULT_SCORE = [
    PluginEntry("TaintToleration", 3),
    PluginEntry("NodeAffinity", 2),
    PluginEntry("NodeResourcesFit", 1),
    PluginEntry("PodTopologySpread", 2),
    PluginEntry("InterPodAffinity", 2),
    PluginEntry("NodeResourcesBalancedAllocation", 1),
    PluginEntry("ImageLocality", 1),
]
EVERYTHING_ONLY = {"multiPoint": {"enabled": [{"name": "Everything"}], "disabled": [{"name": "*"}]}}


# ----------------------------------------------------------------- defaults


def test_default_profile_is_kube_default_set_without_uninstalled_plugins() -> None:
    (profile,) = resolve_profiles(load_config(doc()), FakeCatalog())
    assert profile.scheduler_name == "pluggable-scheduler"
    assert names(profile) == {
        "preEnqueue": ["SchedulingGates"],
        "queueSort": ["PrioritySort"],
        "preFilter": [
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeDeclaredFeatures",
        ],
        "filter": DEFAULT_FILTER,
        "postFilter": ["DefaultPreemption"],
        "preScore": [
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
        ],
        "score": [e.name for e in DEFAULT_SCORE],
        "bind": ["DefaultBinder"],
    }
    assert list(profile.at(P.SCORE)) == DEFAULT_SCORE
    assert all(entry.weight == 0 for entry in profile.at(P.FILTER))
    assert profile.percentage_of_nodes_to_score is None


def test_default_args_are_filled_for_enabled_plugins() -> None:
    (profile,) = resolve_profiles(load_config(doc()), FakeCatalog())
    assert set(profile.plugin_args) == {
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "DefaultPreemption",
    }
    fit = profile.plugin_args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "LeastAllocated"


def test_resolution_only_asks_about_plugins_it_uses() -> None:
    catalog = FakeCatalog()
    resolve_profiles(load_config(doc()), catalog)
    assert "GpuBinPack" not in catalog.queried
    assert "Coscheduling" not in catalog.queried


# ----------------------------------------------------------------- kube's multiPoint cases


def test_multipoint_expands_to_every_implemented_point_with_weight() -> None:
    profile = one(
        {
            "multiPoint": {
                "enabled": [{"name": "Everything", "weight": 5}],
                "disabled": [{"name": "*"}],
            }
        }
    )
    assert names(profile) == {p.value: ["Everything"] for p in ExtensionPoint}
    assert profile.at(P.SCORE) == (PluginEntry("Everything", 5),)


def test_multipoint_plugin_disabled_at_some_points() -> None:
    profile = one(
        {
            **EVERYTHING_ONLY,
            "preScore": {"disabled": [{"name": "Everything"}]},
            "score": {"disabled": [{"name": "Everything"}]},
        }
    )
    assert set(names(profile)) == {p.value for p in ExtensionPoint} - {"preScore", "score"}


def test_multiple_multipoint_plugins_default_weight_one() -> None:
    profile = one(
        {
            "multiPoint": {
                "enabled": [{"name": "Everything"}, {"name": "GpuBinPack"}],
                "disabled": [{"name": "*"}],
            }
        },
        pluggableScheduler={"pluginPriorities": {"GpuBinPack": 0}},
    )
    assert profile.at(P.SCORE) == (PluginEntry("Everything", 1), PluginEntry("GpuBinPack", 1))
    assert profile.names_at(P.FILTER) == ("Everything", "GpuBinPack")


def test_star_disabled_at_a_point_skips_multipoint_expansion_there() -> None:
    profile = one(
        {
            "multiPoint": {
                "enabled": [{"name": "Everything"}, {"name": "NetworkAware"}],
                "disabled": [{"name": "*"}],
            },
            "score": {"disabled": [{"name": "*"}]},
        }
    )
    assert profile.at(P.SCORE) == ()
    assert profile.names_at(P.FILTER) == ("Everything", "NetworkAware")


def test_specific_point_takes_precedence_and_goes_first() -> None:
    # kube: "Reorder MultiPoint plugins (specified extension takes precedence)".
    profile = one(
        {
            "multiPoint": {
                "enabled": [
                    {"name": "ImageLocality"},
                    {"name": "Everything"},
                    {"name": "NetworkAware"},
                ],
                "disabled": [{"name": "*"}],
            },
            "score": {"enabled": [{"name": "NetworkAware"}, {"name": "Everything"}]},
        }
    )
    assert profile.names_at(P.SCORE) == ("NetworkAware", "Everything", "ImageLocality")


def test_specific_only_plugins_come_after_multipoint_ones() -> None:
    # kube: "specified extension only takes precedence when it exists in MultiPoint".
    profile = one(
        {
            "multiPoint": {
                "enabled": [{"name": "Everything"}, {"name": "NetworkAware"}],
                "disabled": [{"name": "*"}],
            },
            "score": {
                "enabled": [
                    {"name": "ImageLocality"},
                    {"name": "NetworkAware"},
                    {"name": "Everything"},
                ]
            },
        }
    )
    assert profile.names_at(P.SCORE) == ("NetworkAware", "Everything", "ImageLocality")


def test_specific_weights_override_multipoint_weights() -> None:
    # kube: "Override MultiPoint plugins weights and avoid a plugin being loaded multiple times".
    profile = one(
        {
            "multiPoint": {
                "enabled": [{"name": "Everything"}, {"name": "NetworkAware"}],
                "disabled": [{"name": "*"}],
            },
            "score": {
                "enabled": [
                    {"name": "NetworkAware", "weight": 5},
                    {"name": "ImageLocality", "weight": 5},
                    {"name": "Everything", "weight": 3},
                ]
            },
        }
    )
    assert profile.at(P.SCORE) == (
        PluginEntry("NetworkAware", 5),
        PluginEntry("Everything", 3),
        PluginEntry("ImageLocality", 5),
    )


def test_enabled_beats_disabled_within_multipoint() -> None:
    # kube: "disable and enable MultiPoint plugin by name".
    profile = one(
        {
            "multiPoint": {
                "enabled": [
                    {"name": "DefaultBinder"},
                    {"name": "PrioritySort"},
                    {"name": "ImageLocality"},
                ],
                "disabled": [{"name": "ImageLocality"}, {"name": "*"}],
            }
        }
    )
    assert names(profile) == {
        "queueSort": ["PrioritySort"],
        "score": ["ImageLocality"],
        "bind": ["DefaultBinder"],
    }


def test_same_plugin_twice_in_multipoint_is_an_error() -> None:
    lines = problems(
        {
            "schedulerName": "p",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Everything"}, {"name": "Everything"}]}
            },
        }
    )
    assert lines == [
        "profiles[0].plugins.multiPoint.enabled[1].name: plugin 'Everything' is enabled twice "
        "at multiPoint (also at enabled[0])"
    ]


# ----------------------------------------------------------------- defaults vs user config


def test_user_multipoint_replaces_a_default_in_place_with_its_weight() -> None:
    profile = one(
        {
            "multiPoint": {
                "enabled": [{"name": "GpuBinPack"}, {"name": "ImageLocality", "weight": 7}]
            }
        },
        pluggableScheduler={"pluginPriorities": {"GpuBinPack": 0}},
    )
    expected = [*DEFAULT_SCORE[:-1], PluginEntry("ImageLocality", 7), PluginEntry("GpuBinPack", 1)]
    assert list(profile.at(P.SCORE)) == expected
    assert profile.names_at(P.FILTER) == (*DEFAULT_FILTER, "GpuBinPack")


def test_disabling_a_default_in_multipoint_removes_it_everywhere() -> None:
    profile = one({"multiPoint": {"disabled": [{"name": "TaintToleration"}]}})
    assert "TaintToleration" not in profile.enabled_plugins


def test_disabling_a_default_at_one_point_keeps_it_elsewhere() -> None:
    profile = one({"score": {"disabled": [{"name": "NodeResourcesFit"}]}})
    assert "NodeResourcesFit" not in profile.names_at(P.SCORE)
    assert "NodeResourcesFit" in profile.names_at(P.FILTER)
    assert "NodeResourcesFit" in profile.names_at(P.PRE_SCORE)


def test_star_at_score_then_reenable_with_custom_weights() -> None:
    profile = one(
        {
            "score": {
                "disabled": [{"name": "*"}],
                "enabled": [
                    {"name": "NodeResourcesFit", "weight": 10},
                    {"name": "GpuBinPack", "weight": 2},
                ],
            }
        },
        pluggableScheduler={"pluginPriorities": {"GpuBinPack": 0}},
    )
    assert profile.at(P.SCORE) == (
        PluginEntry("NodeResourcesFit", 10),
        PluginEntry("GpuBinPack", 2),
    )
    assert profile.names_at(P.FILTER) == tuple(DEFAULT_FILTER)


def test_specific_score_entry_without_weight_resets_to_one_as_in_kube() -> None:
    profile = one({"score": {"enabled": [{"name": "TaintToleration"}]}})
    assert dict(profile.at(P.SCORE))["TaintToleration"] == 1
    assert profile.names_at(P.SCORE)[0] == "TaintToleration"


def test_replacing_the_queue_sort_plugin() -> None:
    profile = one({"queueSort": {"enabled": [{"name": "FifoSort"}], "disabled": [{"name": "*"}]}})
    assert profile.names_at(P.QUEUE_SORT) == ("FifoSort",)


def test_disabling_an_uninstalled_kube_plugin_is_accepted() -> None:
    profile = one({"multiPoint": {"disabled": [{"name": "VolumeBinding"}, {"name": "EBSLimits"}]}})
    assert "VolumeBinding" not in profile.enabled_plugins


# ----------------------------------------------------------------- errors


def test_unknown_plugin_lists_closest_installed_names() -> None:
    (line,) = problems(
        {"schedulerName": "p", "plugins": {"filter": {"enabled": [{"name": "NodeResourceFit"}]}}}
    )
    assert line.startswith(
        "profiles[0].plugins.filter.enabled[0].name: plugin 'NodeResourceFit' is not installed"
    )
    assert "closest installed plugins: NodeResourcesFit" in line


def test_unknown_plugin_without_close_match_lists_all_installed() -> None:
    (line,) = problems(
        {"schedulerName": "p", "plugins": {"multiPoint": {"enabled": [{"name": "Zzzzzz"}]}}}
    )
    assert "installed plugins: AsyncBinder, Coscheduling," in line


def test_uninstalled_plugin_we_publish_names_its_distribution() -> None:
    (line,) = problems(
        {"schedulerName": "p", "plugins": {"multiPoint": {"enabled": [{"name": "LoadAware"}]}}}
    )
    assert line == (
        "profiles[0].plugins.multiPoint.enabled[0].name: plugin 'LoadAware' is not installed: "
        "it is provided by the distribution scheduler-plugin-loadaware: "
        "pip install scheduler-plugin-loadaware"
    )


def test_unknown_plugin_points_at_plugins_needs() -> None:
    (line,) = problems(
        {"schedulerName": "p", "plugins": {"multiPoint": {"enabled": [{"name": "Zzzzzz"}]}}}
    )
    assert line.endswith(
        "('pluggable-scheduler plugins needs CONFIG' looks for its distribution on an index)"
    )


def not_implemented(name: str) -> str:
    return (
        f"plugin {name!r} is a kube-scheduler 1.36 plugin "
        "that pluggable-scheduler does not implement yet"
    )


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("multiPoint", "VolumeBinding"),
        ("multiPoint", "DynamicResources"),
        ("multiPoint", "GangScheduling"),
        ("preFilter", "DynamicResources"),
        ("filter", "TopologyPlacementGenerator"),
        ("score", "PodGroupPodsCount"),
        ("permit", "GangScheduling"),
    ],
)
def test_enabling_a_kube_plugin_we_do_not_implement_says_so(key: str, name: str) -> None:
    lines = problems(
        {
            "schedulerName": "p",
            "plugins": {key: {"enabled": [{"name": "Everything"}, {"name": name}]}},
        }
    )
    assert lines == [f"profiles[0].plugins.{key}.enabled[1].name: {not_implemented(name)}"]


# kube 1.36's names.go, every one of them.
KUBE_136_PLUGINS = [
    "PrioritySort",
    "DefaultBinder",
    "DefaultPreemption",
    "DynamicResources",
    "GangScheduling",
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeDeclaredFeatures",
    "NodeName",
    "NodePorts",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "NodeVolumeLimits",
    "PodTopologySpread",
    "SchedulingGates",
    "TaintToleration",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
    "TopologyPlacementGenerator",
    "PodGroupPodsCount",
]


@pytest.mark.parametrize("key", ["multiPoint", "preFilter", "filter", "score", "permit"])
def test_disabling_every_kube_136_plugin_is_accepted(key: str) -> None:
    disabled = [{"name": n} for n in KUBE_136_PLUGINS]
    if key == "multiPoint":
        # keep the profile valid: one QueueSort and one Bind plugin must remain
        disabled = [d for d in disabled if d["name"] not in ("PrioritySort", "DefaultBinder")]
    profile = one({key: {"disabled": disabled}})
    assert profile.scheduler_name == "p"


def test_default_multi_point_is_kube_136s_order() -> None:
    from scheduler.config import DEFAULT_MULTI_POINT

    assert [(p.name, p.weight, p.gate) for p in DEFAULT_MULTI_POINT][-8:] == [
        ("InterPodAffinity", 2, None),
        ("DynamicResources", 2, None),
        ("DefaultPreemption", None, None),
        ("NodeResourcesBalancedAllocation", 1, None),
        ("ImageLocality", 1, None),
        ("DefaultBinder", None, None),
        ("NodeDeclaredFeatures", None, "NodeDeclaredFeatures"),
        ("GangScheduling", None, "GangScheduling"),
    ]


def test_kube_plugin_set_is_kube_136s() -> None:
    from scheduler.config import KUBE_PLUGINS

    assert sorted(KUBE_PLUGINS) == sorted(KUBE_136_PLUGINS)


def test_enabling_a_removed_kube_plugin_is_an_error() -> None:
    (line,) = problems(
        {"schedulerName": "p", "plugins": {"multiPoint": {"enabled": [{"name": "SelectorSpread"}]}}}
    )
    assert line.startswith(
        "profiles[0].plugins.multiPoint.enabled[0].name: plugin 'SelectorSpread' is not installed "
        "(a plugin of older kube-schedulers that kube-scheduler 1.36 no longer has either)"
    )


def test_priority_for_a_kube_plugin_we_do_not_implement_says_so() -> None:
    assert problems(
        {"schedulerName": "p", "pluggableScheduler": {"pluginPriorities": {"GangScheduling": 3}}}
    ) == [
        "profiles[0].pluggableScheduler.pluginPriorities.GangScheduling: "
        + not_implemented("GangScheduling")
    ]


def test_disabling_an_unknown_non_kube_plugin_is_an_error() -> None:
    (line,) = problems(
        {"schedulerName": "p", "plugins": {"score": {"disabled": [{"name": "GpuBinPak"}]}}}
    )
    assert line.startswith("profiles[0].plugins.score.disabled[0].name: plugin 'GpuBinPak'")
    assert "GpuBinPack" in line


def test_plugin_enabled_at_a_point_it_does_not_implement() -> None:
    assert problems(
        {"schedulerName": "p", "plugins": {"score": {"enabled": [{"name": "NodePorts"}]}}}
    ) == [
        "profiles[0].plugins.score.enabled[0].name: plugin 'NodePorts' does not implement score; "
        "it implements: preFilter, filter"
    ]


def test_star_in_enabled_is_an_error() -> None:
    (line,) = problems({"schedulerName": "p", "plugins": {"filter": {"enabled": [{"name": "*"}]}}})
    assert line.startswith("profiles[0].plugins.filter.enabled[0].name:")


def test_two_queue_sort_plugins() -> None:
    assert problems(
        {"schedulerName": "p", "plugins": {"queueSort": {"enabled": [{"name": "FifoSort"}]}}}
    ) == [
        "profiles[0].plugins.queueSort: exactly one QueueSort plugin must be enabled, "
        "found 2 (PrioritySort, FifoSort)"
    ]


def test_no_bind_plugin() -> None:
    assert problems(
        {"schedulerName": "p", "plugins": {"multiPoint": {"disabled": [{"name": "DefaultBinder"}]}}}
    ) == ["profiles[0].plugins.bind: at least one Bind plugin must be enabled"]


@pytest.mark.parametrize(
    ("plugins", "path"),
    [
        (
            {"score": {"enabled": [{"name": "GpuBinPack", "weight": 0}]}},
            "plugins.score.enabled[0].weight",
        ),
        (
            {"multiPoint": {"enabled": [{"name": "GpuBinPack", "weight": 0}]}},
            "plugins.multiPoint.enabled[0].weight",
        ),
        (
            {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 0}]}},
            "plugins.multiPoint.enabled[0].weight",
        ),
    ],
)
def test_score_plugin_with_weight_zero_is_an_error(plugins: dict[str, Any], path: str) -> None:
    (line,) = problems({"schedulerName": "p", "plugins": plugins})
    assert line.startswith(f"profiles[0].{path}: score plugin")
    assert "weight must be at least 1" in line


def test_weight_zero_on_a_plugin_not_scoring_here_is_ignored() -> None:
    profile = one({"multiPoint": {"enabled": [{"name": "NodePorts", "weight": 0}]}})
    assert "NodePorts" in profile.names_at(P.FILTER)


def test_installed_plugin_that_fails_to_load_is_reported_with_other_problems() -> None:
    catalog = FakeCatalog(broken={"Broken": "ImportError: no module named foo"})
    lines = problems(
        {
            "schedulerName": "p",
            "plugins": {"multiPoint": {"enabled": [{"name": "Broken"}, {"name": "Nope"}]}},
        },
        catalog=catalog,
    )
    assert "plugin 'Broken' failed to load: ImportError: no module named foo" in lines
    assert any("plugin 'Nope' is not installed" in line for line in lines)


# ----------------------------------------------------------------- profiles


def test_two_profiles_must_share_the_queue_sort_plugin() -> None:
    lines = problems(
        {"schedulerName": "a"},
        {
            "schedulerName": "b",
            "plugins": {
                "queueSort": {"enabled": [{"name": "FifoSort"}], "disabled": [{"name": "*"}]}
            },
        },
    )
    assert lines == [
        "profiles[1].plugins.queueSort: must be the same in all profiles: "
        "'FifoSort' here, 'PrioritySort' in profiles[0]"
    ]


def test_two_profiles_must_share_queue_sort_args() -> None:
    cosched = {
        "multiPoint": {
            "enabled": [{"name": "Coscheduling"}],
            "disabled": [{"name": "PrioritySort"}],
        }
    }
    lines = problems(
        {"schedulerName": "a", "plugins": cosched},
        {
            "schedulerName": "b",
            "plugins": cosched,
            "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 5}}],
        },
    )
    assert lines == [
        "profiles[1].pluginConfig[0].args: args of QueueSort plugin 'Coscheduling' must be the "
        "same in all profiles (they differ from profiles[0])"
    ]


def test_two_profiles_with_same_queue_sort_args_resolve() -> None:
    cosched = {
        "multiPoint": {
            "enabled": [{"name": "Coscheduling"}],
            "disabled": [{"name": "PrioritySort"}],
        }
    }
    a, b = resolve(
        {"schedulerName": "a", "plugins": cosched},
        {
            "schedulerName": "b",
            "plugins": cosched,
            "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 60}}],
        },
    )
    assert a.names_at(P.QUEUE_SORT) == b.names_at(P.QUEUE_SORT) == ("Coscheduling",)


def test_profile_percentage_overrides_global() -> None:
    config = load_config(
        doc(
            {"schedulerName": "a"},
            {"schedulerName": "b", "percentageOfNodesToScore": 40},
            percentageOfNodesToScore=10,
        )
    )
    a, b = resolve_profiles(config, FakeCatalog())
    assert (a.percentage_of_nodes_to_score, b.percentage_of_nodes_to_score) == (10, 40)


def test_problems_from_all_profiles_are_reported() -> None:
    lines = problems(
        {"schedulerName": "a", "plugins": {"filter": {"enabled": [{"name": "Nope1"}]}}},
        {"schedulerName": "b", "plugins": {"filter": {"enabled": [{"name": "Nope2"}]}}},
    )
    assert [line.split(":")[0] for line in lines] == [
        "profiles[0].plugins.filter.enabled[0].name",
        "profiles[1].plugins.filter.enabled[0].name",
    ]


def test_duplicate_scheduler_names_are_rejected_by_resolution_too() -> None:
    from scheduler.config import SchedulerConfiguration, SchedulerProfile

    config = SchedulerConfiguration(
        profiles=[SchedulerProfile(scheduler_name="x"), SchedulerProfile(scheduler_name="x")]
    )
    with pytest.raises(UserError) as info:
        resolve_profiles(config, FakeCatalog())
    assert info.value.details == [
        "profiles[1].schedulerName: duplicate 'x', already used by profiles[0]"
    ]


# ----------------------------------------------------------------- pluginConfig


def test_plugin_args_validated_and_kube_type_meta_stripped() -> None:
    profile = one(
        {},
        pluginConfig=[
            {
                "name": "NodeResourcesFit",
                "args": {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "NodeResourcesFitArgs",
                    "scoringStrategy": {"type": "MostAllocated"},
                },
            }
        ],
    )
    fit = profile.plugin_args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "MostAllocated"


def test_plugin_args_errors_are_pathed() -> None:
    lines = problems(
        {"schedulerName": "a"},
        {
            "schedulerName": "b",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "Random"}, "bogus": 1},
                }
            ],
        },
    )
    assert lines[0].startswith(
        "profiles[1].pluginConfig[0].args.scoringStrategy.type: Input should be"
    )
    assert (
        lines[1] == "profiles[1].pluginConfig[0].args.bogus: unknown field; "
        "valid fields here: ignoredResources, scoringStrategy"
    )


def test_plugin_args_kind_must_match_plugin() -> None:
    assert problems(
        {
            "schedulerName": "a",
            "pluginConfig": [{"name": "InterPodAffinity", "args": {"kind": "NodeAffinityArgs"}}],
        }
    ) == [
        "profiles[0].pluginConfig[0].args.kind: must be InterPodAffinityArgs for plugin "
        "'InterPodAffinity', got 'NodeAffinityArgs'"
    ]


def test_duplicate_plugin_config_is_rejected() -> None:
    assert problems(
        {
            "schedulerName": "a",
            "pluginConfig": [
                {"name": "InterPodAffinity", "args": {}},
                {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 2}},
            ],
        }
    ) == [
        "profiles[0].pluginConfig[1].name: duplicate pluginConfig for plugin 'InterPodAffinity' "
        "(first at pluginConfig[0])"
    ]


def test_plugin_config_for_installed_but_not_enabled_plugin_is_allowed_and_validated() -> None:
    profile = one(
        {}, pluginConfig=[{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 3}}]
    )
    assert "Coscheduling" not in profile.plugin_args
    (line,) = problems(
        {
            "schedulerName": "a",
            "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": "x"}}],
        }
    )
    assert line.startswith("profiles[0].pluginConfig[0].args.permitWaitingTimeSeconds:")


def test_plugin_config_for_uninstalled_plugin_is_an_error() -> None:
    (line,) = problems({"schedulerName": "a", "pluginConfig": [{"name": "GpuBinPak", "args": {}}]})
    assert line.startswith("profiles[0].pluginConfig[0].name: plugin 'GpuBinPak' is not installed")


def test_plugin_config_for_a_kube_plugin_we_do_not_implement_is_ignored_with_a_warning() -> None:
    """kube's own effective configs carry DynamicResourcesArgs; they must load."""
    profile = one(
        {},
        pluginConfig=[
            {"name": "DynamicResources", "args": {"filterTimeout": "10s"}},
            {"name": "ImageLocality", "args": {}},
        ],
    )
    assert "DynamicResources" not in profile.plugin_args
    assert "DynamicResources" not in profile.enabled_plugins
    assert profile.warnings == (
        f"profiles[0].pluginConfig[0].name: {not_implemented('DynamicResources')}; "
        "its args are ignored",
    )
    assert one({}).warnings == ()


def test_args_for_plugin_without_args_model() -> None:
    assert problems(
        {"schedulerName": "a", "pluginConfig": [{"name": "ImageLocality", "args": {"x": 1}}]}
    ) == ["profiles[0].pluginConfig[0].args: plugin 'ImageLocality' takes no args; remove x"]
    profile = one(
        {}, pluginConfig=[{"name": "ImageLocality", "args": {"kind": "ImageLocalityArgs"}}]
    )
    assert "ImageLocality" not in profile.plugin_args


def test_enabled_plugin_with_required_args_needs_plugin_config() -> None:
    plugins = {"filter": {"enabled": [{"name": "NeedsEndpoint"}]}}
    (line,) = problems({"schedulerName": "a", "plugins": plugins})
    assert line.startswith("profiles[0].pluginConfig: plugin 'NeedsEndpoint' needs args")
    assert "endpoint" in line
    profile = one(
        plugins, pluginConfig=[{"name": "NeedsEndpoint", "args": {"endpoint": "http://x"}}]
    )
    assert profile.plugin_args["NeedsEndpoint"].model_dump() == {"endpoint": "http://x"}


# ----------------------------------------------------------------- priorities and timeouts


def test_priority_orders_each_point_ties_keep_config_order() -> None:
    profile = one({"multiPoint": {"enabled": [{"name": "NetworkAware"}, {"name": "GpuBinPack"}]}})
    # GpuBinPack declares priority 5; everything else 0 keeps kube's order.
    assert profile.names_at(P.FILTER) == ("GpuBinPack", *DEFAULT_FILTER, "NetworkAware")
    assert profile.priorities["GpuBinPack"] == 5
    assert profile.priorities["NodeName"] == 0


def test_profile_priority_overrides_default() -> None:
    profile = one(
        {"multiPoint": {"enabled": [{"name": "NetworkAware"}, {"name": "GpuBinPack"}]}},
        pluggableScheduler={
            "pluginPriorities": {"NetworkAware": 10, "GpuBinPack": -1, "NodeName": 1}
        },
    )
    filters = profile.names_at(P.FILTER)
    assert filters[:2] == ("NetworkAware", "NodeName")
    assert filters[-1] == "GpuBinPack"
    assert profile.names_at(P.SCORE)[0] == "NetworkAware"


def test_priority_for_uninstalled_plugin_is_an_error() -> None:
    (line,) = problems(
        {"schedulerName": "a", "pluggableScheduler": {"pluginPriorities": {"GpuBinPak": 1}}}
    )
    assert line.startswith(
        "profiles[0].pluggableScheduler.pluginPriorities.GpuBinPak: plugin 'GpuBinPak'"
    )


def test_resolved_timeouts_merge_profile_overrides() -> None:
    config = load_config(
        doc(
            {"schedulerName": "a"},
            {"schedulerName": "b", "pluggableScheduler": {"timeouts": {"bind": "1m"}}},
            pluggableScheduler={"timeouts": {"postBind": "5s"}},
        )
    )
    a, b = resolve_profiles(config, FakeCatalog())
    assert (a.timeouts.bind, a.timeouts.post_bind) == (30.0, 5.0)
    assert (b.timeouts.bind, b.timeouts.post_bind) == (60.0, 5.0)
    assert a.timeouts.permit_max_wait == 900.0


def test_enabled_plugins_and_score_weights_helpers() -> None:
    profile = one({"multiPoint": {"enabled": [{"name": "AsyncBinder"}]}})
    assert profile.enabled_plugins[0] == "SchedulingGates"
    assert "AsyncBinder" in profile.enabled_plugins
    assert profile.names_at(P.BIND) == ("DefaultBinder", "AsyncBinder")
    assert profile.score_weights["TaintToleration"] == 3


def test_catalog_with_custom_table() -> None:
    catalog = FakeCatalog(
        plugins={"Sort": _p(P.QUEUE_SORT), "Bind": _p(P.BIND), "ImageLocality": _p(P.SCORE)}
    )
    (profile,) = resolve(
        {
            "schedulerName": "x",
            "plugins": {"multiPoint": {"enabled": [{"name": "Sort"}, {"name": "Bind"}]}},
        },
        catalog=catalog,
    )
    assert names(profile) == {"queueSort": ["Sort"], "score": ["ImageLocality"], "bind": ["Bind"]}


def test_installed_default_profile_is_kube_136s_with_node_declared_features_last() -> None:
    """The real catalog: kube 1.36 appends NodeDeclaredFeatures after the static list."""
    from scheduler.framework.loader import PluginCatalog

    (profile,) = resolve_profiles(load_config(doc()), PluginCatalog.discover())
    assert profile.names_at(P.PRE_FILTER)[-1] == "NodeDeclaredFeatures"
    assert profile.names_at(P.FILTER)[-1] == "NodeDeclaredFeatures"
    assert "NodeDeclaredFeatures" not in profile.names_at(P.SCORE)
    # DynamicResources (GA, locked on) sits just before DefaultPreemption, so that
    # PostFilter frees an idle claim before it evicts a pod.
    post_filter = profile.names_at(P.POST_FILTER)
    assert list(post_filter) == ["DynamicResources", "DefaultPreemption"]
    assert "DynamicResources" in profile.names_at(P.RESERVE)
    assert profile.warnings == ()


def test_profile_percentage_zero_overrides_a_positive_top_level_value() -> None:
    """As in kube: unset takes the top-level value, an explicit 0 is adaptive (0)."""
    explicit_zero, unset = resolve_profiles(
        load_config(
            doc(
                {"schedulerName": "a", "percentageOfNodesToScore": 0},
                {"schedulerName": "b"},
                percentageOfNodesToScore=30,
            )
        ),
        FakeCatalog(),
    )
    assert explicit_zero.percentage_of_nodes_to_score == 0
    assert unset.percentage_of_nodes_to_score == 30


def test_percentage_unset_everywhere_resolves_to_none_and_a_top_level_zero_to_zero() -> None:
    """None (ours: every node while small) differs from an explicit 0 (kube's adaptive)."""
    (unset,) = resolve_profiles(load_config(doc({"schedulerName": "a"})), FakeCatalog())
    (top_zero,) = resolve_profiles(
        load_config(doc({"schedulerName": "a"}, percentageOfNodesToScore=0)), FakeCatalog()
    )
    assert unset.percentage_of_nodes_to_score is None
    assert top_zero.percentage_of_nodes_to_score == 0


# ----------------------------------------------------------------- budgets, failurePolicy


def test_plugin_budgets_merge_global_and_profile_per_field() -> None:
    config = load_config(
        doc(
            {
                "schedulerName": "a",
                "pluggableScheduler": {
                    "timeouts": {"filter": "1s", "plugins": {"GpuBinPack": {"score": "3s"}}}
                },
            },
            pluggableScheduler={
                "timeouts": {"plugins": {"GpuBinPack": {"filter": "9s", "score": "2s"}}},
                "circuitBreaker": {"consecutiveFailures": 2, "coolDown": "1m"},
            },
        )
    )
    (profile,) = resolve_profiles(config, FakeCatalog())
    assert profile.timeouts.budget("filter", "GpuBinPack") == 9.0
    assert profile.timeouts.budget("score", "GpuBinPack") == 3.0
    assert profile.timeouts.budget("filter", "NodeName") == 1.0
    assert profile.timeouts.budget("score", "NodeName") == 5.0
    assert (profile.circuit_breaker.consecutive_failures, profile.circuit_breaker.cool_down) == (
        2,
        60.0,
    )


def test_plugin_budget_for_a_point_it_does_not_implement_or_unknown_plugin() -> None:
    lines = problems(
        {
            "schedulerName": "a",
            "pluggableScheduler": {"timeouts": {"plugins": {"GpuBinPack": {"preBind": "1s"}}}},
        },
    )
    assert lines == [
        "profiles[0].pluggableScheduler.timeouts.plugins.GpuBinPack.preBind: "
        "plugin 'GpuBinPack' does not implement preBind"
    ]
    with pytest.raises(UserError) as info:
        resolve_profiles(
            load_config(
                doc(pluggableScheduler={"timeouts": {"plugins": {"GpuBinPak": {"filter": "1s"}}}})
            ),
            FakeCatalog(),
        )
    assert info.value.details[0].startswith(
        "pluggableScheduler.timeouts.plugins.GpuBinPak: plugin 'GpuBinPak' is not installed"
    )


def test_failure_policy_is_resolved_per_profile() -> None:
    profile = one(
        {"multiPoint": {"enabled": [{"name": "GpuBinPack"}]}},
        pluggableScheduler={"failurePolicy": {"GpuBinPack": "Ignore", "NodeName": "Fail"}},
    )
    assert profile.failure_policy == {"GpuBinPack": "Ignore", "NodeName": "Fail"}


def test_ignore_is_refused_where_it_could_never_apply() -> None:
    lines = problems(
        {
            "schedulerName": "a",
            "plugins": {"multiPoint": {"enabled": [{"name": "AsyncBinder"}]}},
            "pluggableScheduler": {"failurePolicy": {"AsyncBinder": "Ignore", "Nope": "Fail"}},
        }
    )
    assert lines[0] == (
        "profiles[0].pluggableScheduler.failurePolicy.AsyncBinder: Ignore cannot apply to "
        "plugin 'AsyncBinder': it runs only at preBind, bind, postBind, whose failures always "
        "fail the attempt (Reserve, Permit, PreBind, Bind) or never fail anything "
        "(Unreserve, PostBind)"
    )
    assert lines[1].startswith("profiles[0].pluggableScheduler.failurePolicy.Nope: plugin 'Nope'")


def test_failure_policy_values_are_fail_or_ignore() -> None:
    with pytest.raises(UserError) as info:
        load_config(
            doc({"schedulerName": "a", "pluggableScheduler": {"failurePolicy": {"X": "Skip"}}})
        )
    assert info.value.details[0].startswith("profiles[0].pluggableScheduler.failurePolicy.X:")
