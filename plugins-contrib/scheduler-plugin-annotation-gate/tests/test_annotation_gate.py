"""AnnotationGate: args validation, the PreFilter verdict, and the plugin in a running scheduler."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from scheduler_plugin_annotation_gate import AnnotationGate, AnnotationGateArgs

from scheduler.api import Code
from scheduler.testing import PluginTestKit, UserError, installed_plugin, make_node, make_pod

KEY = "mycompany.com/environment"
KIT = PluginTestKit(nodes=[make_node("n1")])


def gate(**args: Any) -> AnnotationGate:
    return KIT.build(AnnotationGate, args)


def verdict(plugin: AnnotationGate, annotations: dict[str, str]) -> Any:
    return KIT.call(plugin, "pre_filter", make_pod("p", annotations=annotations))


@pytest.mark.parametrize(
    "key",
    ["environment", KEY, "a/b", "example.com/My_Name.1", "x" * 63, f"{'a' * 253}/n"],
)
def test_valid_keys(key: str) -> None:
    assert AnnotationGateArgs(key=key).key == key


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "name part must be non-empty"),
        ("/env", "prefix part must be non-empty"),
        ("Example.com/env", "prefix part a lowercase RFC 1123 subdomain must consist of"),
        ("a/b/c", "with an optional DNS subdomain prefix and '/'"),
        ("-env", "must start and end with an alphanumeric character"),
        ("env!", "name part must consist of alphanumeric characters"),
        ("x" * 64, "name part must be no more than 63 bytes"),
        (f"{'a' * 254}/n", "prefix part must be no more than 253 bytes"),
    ],
)
def test_invalid_keys_are_explained(key: str, problem: str) -> None:
    with pytest.raises(ValidationError, match="invalid annotation key") as raised:
        AnnotationGateArgs(key=key)
    assert problem in str(raised.value)


def test_args_reject_unknown_fields_and_repeated_values() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        AnnotationGateArgs.model_validate({"key": KEY, "value": "x"})
    with pytest.raises(ValidationError, match="values must not repeat"):
        AnnotationGateArgs(key=KEY, values=["a", "a"])
    with pytest.raises(ValidationError, match="Field required"):
        AnnotationGateArgs.model_validate({})


def test_any_value_is_rejected_without_values() -> None:
    plugin = gate(key=KEY)
    status = verdict(plugin, {KEY: "staging"})
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (f"pod has annotation {KEY}='staging', which this scheduler refuses")
    assert verdict(plugin, {}) is None
    assert verdict(plugin, {"other.com/environment": "staging"}) is None


def test_only_listed_values_are_rejected() -> None:
    plugin = gate(key=KEY, values=["staging", "dev"], message="ask #platform")
    assert verdict(plugin, {KEY: "prod"}) is None
    status = verdict(plugin, {KEY: "dev"})
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message().endswith("which this scheduler refuses: ask #platform")


def test_installed_entry_point_loads() -> None:
    loaded = installed_plugin("AnnotationGate")
    assert loaded.plugin_class is AnnotationGate
    assert loaded.args_model is AnnotationGateArgs
    assert loaded.hooks == {"pre_filter"}


NODES = [make_node("n1"), make_node("n2")]


async def test_gated_pods_stay_pending_with_a_clear_reason(
    emulated_cluster: Any, running_scheduler: Any
) -> None:
    cluster = await emulated_cluster(NODES)
    sched = await running_scheduler(
        cluster,
        enable=["AnnotationGate"],
        plugin_config={"AnnotationGate": {"key": KEY, "values": ["staging"]}},
    )
    cluster.create(
        make_pod("plain"),
        make_pod("prod", annotations={KEY: "prod"}),
        make_pod("staging", annotations={KEY: "staging"}),
    )
    await sched.wait_for_placements(["plain", "prod"])
    await sched.wait_for_placements({"staging": None})
    event = await sched.wait_for_event("staging", "FailedScheduling")
    assert event["note"].startswith(
        f"0/2 nodes are available: pod has annotation {KEY}='staging', "
        "which this scheduler refuses."
    )
    # Editing the pod requeues it: without the annotation it is scheduled.
    cluster.patch("v1", "Pod", "staging", {"metadata": {"annotations": {KEY: None}}}, "default")
    await sched.wait_for_placements(["staging"])


async def test_invalid_args_stop_start_up_with_the_field_path(running_scheduler: Any) -> None:
    with pytest.raises(UserError) as raised:
        await running_scheduler(
            enable=["AnnotationGate"], plugin_config={"AnnotationGate": {"key": "Bad Key"}}
        )
    text = raised.value.render()
    assert "profiles[0].pluginConfig[0].args.key" in text
    assert "invalid annotation key 'Bad Key'" in text
