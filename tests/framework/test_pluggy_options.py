"""pluggy's hookimpl options on real plugin distributions: each works or is refused at load.

The runtime calls each plugin's implementation itself with kube-scheduler's
per-point semantics, so the options that change how pluggy makes a hook call
(wrappers, tryfirst/trylast) are refused when the plugin is loaded, with a
message naming the plugin, its distribution and the hook; ``specname`` and
``optionalhook`` work as a pluggy user expects.
"""

from __future__ import annotations

import pytest

from scheduler.api import CycleState, Plugin, hookimpl
from scheduler.config import load_config
from scheduler.errors import UserError
from scheduler.framework.cycle import Algorithm
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.loader import PluginCatalog, PluginLoadError
from scheduler.framework.profile import build_profiles
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from tests.framework.test_discovery import config_enabling

DIST = "scheduler-plugin-pluggyopts"


@pytest.mark.parametrize(
    ("plugin", "hook", "expected"),
    [
        ("NewWrapper", "filter", "is a pluggy hook wrapper (wrapper=True)"),
        ("OldWrapper", "score", "is a pluggy hook wrapper (hookwrapper=True)"),
        ("TryFirst", "filter", "is marked tryfirst=True"),
        ("TryLast", "pre_bind", "is marked trylast=True"),
        ("Generator", "filter", "is a generator function"),
        ("AsyncFilter", "filter", "is async def, but the filter extension point runs"),
    ],
)
def test_enabling_a_plugin_with_a_refused_option_fails_startup_naming_it(
    with_dists, plugin, hook, expected
):
    with_dists(DIST)
    catalog = PluginCatalog.discover()
    with pytest.raises(UserError) as err:
        build_profiles(
            load_config(config_enabling(plugin)),
            catalog,
            lambda name: FrameworkHandle(name, NodeTable()),
        )
    text = err.value.render()
    assert f"plugin {plugin!r} (distribution {DIST} 0.4.0" in text
    assert f"unsupported hook implementation: hook {hook!r} ({plugin}." in text
    assert expected in text
    assert "Traceback" not in text


def test_refusals_say_what_to_do_instead(with_dists):
    with_dists(DIST)
    catalog = PluginCatalog.discover()
    with pytest.raises(PluginLoadError) as wrapper:
        catalog.load("NewWrapper")
    assert "there is no hook call over all plugins to wrap" in wrapper.value.cause
    with pytest.raises(PluginLoadError) as tryfirst:
        catalog.load("TryFirst")
    assert "order the plugin in the configuration" in tryfirst.value.cause
    assert tryfirst.value.distribution == DIST


def test_plugins_list_shows_the_refusal_as_a_load_error(with_dists):
    with_dists(DIST)
    rows = {d.name: d for d in PluginCatalog.discover().describe_all()}
    assert rows["OldWrapper"].error is not None
    assert "hookwrapper=True" in rows["OldWrapper"].error
    assert rows["SpecName"].error is None and rows["SpecName"].extension_points == ["filter"]
    assert rows["OptionalHook"].error is None
    assert rows["OptionalHook"].extension_points == ["score"]


def test_specname_and_optionalhook_work_in_a_real_profile(with_dists):
    """``specname`` answers the named hook; an optional hook the framework lacks is never called."""
    with_dists(DIST)
    catalog = PluginCatalog.discover()
    table = NodeTable()
    for name, pool in [("a", "cpu"), ("b", "gpu"), ("c", "gpu")]:
        table.upsert_node(
            {
                "metadata": {"name": name, "labels": {"pool": pool}},
                "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}},
            }
        )
    profiles = build_profiles(
        load_config(config_enabling("SpecName", "OptionalHook")),
        catalog,
        lambda name: FrameworkHandle(name, table),
    )
    framework = profiles["pluggable-scheduler"].framework
    assert "SpecName" in [c.plugin for c in framework.filter_calls]
    assert "OptionalHook" in [c.plugin for c in framework.score_calls]
    pod = PodInfo.from_dict({"metadata": {"name": "p", "namespace": "d"}, "spec": {}})
    result = Algorithm(framework, seed=0).schedule(CycleState(), pod, table)
    assert result.filter_outcome is not None, result.status
    assert sorted(result.filter_outcome.feasible.names) == ["b", "c"]
    rejected = result.filter_outcome.diagnosis.node_verdicts["a"]
    assert rejected.plugin == "SpecName" and rejected.reasons == ["node(s) not in the gpu pool"]
    assert result.score_outcome is not None
    assert result.score_outcome.by_plugin["OptionalHook"].raw.tolist() == [0, 10]
    assert result.node == "c"  # the nodes tie on every other score


def test_async_binding_hooks_stay_allowed():
    """Only the scheduling-cycle hooks must be synchronous; PreBind/Bind/PostBind may await."""

    class AsyncBinder(Plugin):
        api_version = "1.0"

        @hookimpl
        async def bind(self, state, pod, node_name):
            return None

    loaded = PluginCatalog.from_classes({"AsyncBinder": AsyncBinder}).load("AsyncBinder")
    assert loaded.hooks == {"bind"}
