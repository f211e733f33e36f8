"""Every plugin we know of still loads and behaves the same under plugin API 2.0.

Parametrized over the in-tree plugins (the core's entry points), the
plugins-contrib distributions (imported from this checkout) and a freshly
scaffolded plugin, both as generated (2.0) and with its ``api_version`` set
back to 1.3. For each:

- it loads through the plugin catalog of this framework (the version rule
  accepts it, its hooks validate);
- every scheduling-cycle hook it implements, called by the framework on a
  small cluster, answers exactly as a direct call given the objects its
  declared API version promises (1.x: the live ``NodeSet``/``PodInfo`` of
  API 1.3; 2.x: the read-only views), so a 1.x plugin sees nothing new;
- the scaffolded plugin answers the same as 1.3 and as 2.0.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scheduler.api import CycleState, FilterResult, Status
from scheduler.api.version import PLUGIN_API_VERSION, parse_api_version
from scheduler.framework.runtime import Framework, PluginCall
from scheduler.state.nodetable import NodeSet
from scheduler.testing import PluginTestKit, make_node, make_pod
from scheduler.testing.harness import build_catalog
from scheduler.tools.scaffold import scaffold
from tests.framework.helpers import make_framework

REPO = Path(__file__).resolve().parents[2]
CONTRIB = REPO / "plugins-contrib"

ARGS: dict[str, dict[str, Any]] = {"AnnotationGate": {"key": "example.com/env"}}
CYCLE_HOOKS = ("pre_filter", "filter", "pre_score", "score")


def entry_points(pyproject: Path) -> dict[str, str]:
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    points: dict[str, str] = data["project"]["entry-points"]["scheduler.plugins"]
    return points


IN_TREE = sorted(entry_points(REPO / "pyproject.toml").items())
CONTRIB_PLUGINS = sorted(
    (name, target, dist)
    for dist in CONTRIB.iterdir()
    if (dist / "pyproject.toml").is_file()
    for name, target in entry_points(dist / "pyproject.toml").items()
)


def import_target(target: str, path: Path | None, monkeypatch: pytest.MonkeyPatch) -> type:
    """``module:Class``, imported from ``path`` (not from an installed copy) if given."""
    module_name, _, attr = target.partition(":")
    if path is not None:
        package = module_name.split(".")[0]
        for loaded in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            monkeypatch.delitem(sys.modules, loaded)
        monkeypatch.syspath_prepend(str(path))
    module = importlib.import_module(module_name)
    if path is not None:
        assert str(path) in str(module.__file__), f"{module_name} came from {module.__file__}"
    cls = getattr(module, attr)
    assert isinstance(cls, type)
    return cls


def cluster() -> PluginTestKit:
    nodes = [
        make_node("a", labels={"zone": "z1", "disk": "ssd"}),
        make_node("b", cpu="2", labels={"zone": "z2"}),
        make_node("c", labels={"zone": "z1"}, taints=[{"key": "t", "effect": "NoSchedule"}]),
        make_node("d", cpu="8", labels={"zone": "z2"}, unschedulable=True),
    ]
    return PluginTestKit(
        nodes=nodes,
        pods=[make_pod("running-1", cpu="1", node_name="a"), make_pod("running-2", node_name="b")],
    )


def pods() -> Iterator[dict[str, Any]]:
    yield make_pod("plain")
    yield make_pod(
        "picky",
        cpu="1500m",
        labels={"app": "web"},
        spec={
            "nodeSelector": {"zone": "z1"},
            "tolerations": [{"key": "t", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 3,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "disk", "operator": "In", "values": ["ssd"]}
                                ]
                            },
                        }
                    ]
                }
            },
        },
    )
    yield make_pod("named", node_name=None, spec={"nodeName": "b"})


def comparable(result: Any) -> Any:
    """A hook's answer in a form ``==`` can compare."""
    if isinstance(result, FilterResult):
        return ("FilterResult", result.codes.tolist(), result.reason_counts())
    if isinstance(result, np.ndarray):
        return ("array", result.tolist())
    if isinstance(result, Status):
        return ("Status", result.code, result.reasons)
    return result


def promised(plugin: object, nodes: NodeSet) -> Any:
    """What a direct call passes: the objects of the plugin's declared API version."""
    major, _ = parse_api_version(str(getattr(plugin, "api_version", "")))
    return nodes.view() if major >= 2 else nodes


def calls_of(framework: Framework, hook: str) -> list[PluginCall]:
    by_hook = {
        "pre_filter": framework.pre_filter_calls,
        "filter": framework.filter_calls,
        "pre_score": framework.pre_score_calls,
        "score": framework.score_calls,
    }
    return by_hook[hook]


def check_plugin(name: str, cls: type) -> None:
    loaded = build_catalog({name: cls}).load(name)
    assert loaded.plugin_class is cls
    declared = str(cls.api_version)  # type: ignore[attr-defined]
    assert loaded.api_version == declared
    hooks = [h for h in CYCLE_HOOKS if h in loaded.hooks]

    kit_framework, kit_direct = cluster(), cluster()
    via_framework = kit_framework.build(cls, ARGS.get(name))
    direct = kit_direct.build(cls, ARGS.get(name))
    framework = make_framework([(name, via_framework)])
    for raw in pods():
        state_f, state_d = CycleState(), CycleState()
        skipped: set[str] = set()  # a PreFilter/PreScore Skip skips Filter/Score, as in a cycle
        for hook in hooks:
            if hook in skipped:
                continue
            (call,) = calls_of(framework, hook)
            nodes_f = kit_framework.nodes().node_set  # type: ignore[attr-defined]
            nodes_d = kit_direct.nodes().node_set  # type: ignore[attr-defined]
            pod_f, pod_d = kit_framework.pod(raw), kit_direct.pod(raw)
            got = call((state_f, pod_f, nodes_f))
            want = getattr(direct, hook)(state_d, pod_d, promised(direct, nodes_d))
            assert comparable(got) == comparable(want), f"{name}.{hook} on pod {pod_f.name}"
            if isinstance(got, Status) and got.is_skip():
                skipped.add(hook.removeprefix("pre_"))


@pytest.mark.parametrize(("name", "target"), IN_TREE, ids=[n for n, _ in IN_TREE])
def test_in_tree_plugin(name: str, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    check_plugin(name, import_target(target, None, monkeypatch))


@pytest.mark.parametrize(
    ("name", "target", "dist"), CONTRIB_PLUGINS, ids=[n for n, _, _ in CONTRIB_PLUGINS]
)
def test_contrib_plugin(
    name: str, target: str, dist: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 1.x plugin imports 1.x names: they resolve, with a warning. A 2.x one
    # imports the 2.x API only: no warning at all.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cls = import_target(target, dist, monkeypatch)
    legacy = [w for w in caught if "is not part of plugin API 2.0" in str(w.message)]
    major = parse_api_version(cls.api_version)[0]  # type: ignore[attr-defined]
    assert major in (1, 2), cls.api_version  # type: ignore[attr-defined]
    if major == 1:
        assert legacy and all(w.category is DeprecationWarning for w in legacy)
    else:
        assert legacy == [], [str(w.message) for w in legacy]
    check_plugin(name, cls)


@pytest.mark.parametrize("api_version", [PLUGIN_API_VERSION, "1.3"])
def test_scaffolded_plugin(
    api_version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names, target_dir, _ = scaffold("CompatProbe", tmp_path / "probe")
    source = target_dir / names.package / "plugin.py"
    text = source.read_text(encoding="utf-8")
    assert f'api_version = "{PLUGIN_API_VERSION}"' in text
    source.write_text(text.replace(PLUGIN_API_VERSION, api_version, 1), encoding="utf-8")
    cls = import_target(f"{names.package}.plugin:CompatProbe", target_dir, monkeypatch)
    assert cls.api_version == api_version  # type: ignore[attr-defined]
    check_plugin("CompatProbe", cls)

    kit = cluster()
    plugin = kit.build(cls, {"nodeLabel": "disk", "required": True})
    assert kit.feasible_names(kit.call(plugin, "filter", make_pod("w"))) == ["a"]
    assert kit.call(plugin, "score", make_pod("w")).tolist() == [100, 0, 0, 0]


def test_every_1x_name_still_imports_with_a_warning_naming_its_replacement() -> None:
    import scheduler.api
    from scheduler.api._compat import LEGACY_NAMES

    for name, (_module, replacement) in LEGACY_NAMES.items():
        with pytest.warns(DeprecationWarning, match="is not part of plugin API 2.0") as seen:
            value = getattr(scheduler.api, name)
        assert value is not None
        assert replacement in str(seen[0].message), name
    assert scheduler.api.ApiClient is scheduler.api.handle.KubeClient
