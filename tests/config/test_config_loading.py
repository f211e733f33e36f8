"""Loading the config file: kube's schema and defaults, our block, readable error paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from scheduler.config import (
    API_VERSION,
    KIND,
    HookTimeouts,
    SchedulerConfiguration,
    load_config,
    models,
)
from scheduler.errors import UserError


def doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def _shadow(name: str, primary: str) -> dict[str, Any]:
    return {"schedulerName": name, "pluggableScheduler": {"shadowOf": primary}}


def problems(source: Any) -> list[str]:
    with pytest.raises(UserError) as info:
        load_config(source)
    return info.value.details


# ----------------------------------------------------------------- defaults


def test_defaults_follow_kube_scheduler_except_our_names() -> None:
    config = load_config(doc())
    assert config.parallelism == 16
    assert config.percentage_of_nodes_to_score is None  # ours: every node up to 5000
    assert config.pod_initial_backoff_seconds == 1
    assert config.pod_max_backoff_seconds == 10
    assert config.enable_profiling is True
    assert config.enable_contention_profiling is True
    assert config.delay_cache_until_active is False
    le = config.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True,
        15.0,
        10.0,
        2.0,
    )
    assert (le.resource_lock, le.resource_namespace, le.resource_name) == (
        "leases",
        "kube-system",
        "pluggable-scheduler",
    )
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)
    assert [p.scheduler_name for p in config.profiles] == ["pluggable-scheduler"]


def test_our_extension_defaults() -> None:
    ours = load_config(doc()).pluggable_scheduler
    assert ours.server_address == "0.0.0.0:10259"
    assert ours.binding_concurrency > 0
    assert ours.timeouts.model_dump() == {
        "pre_enqueue": 5.0,
        "pre_filter": 5.0,
        "filter": 5.0,
        "post_filter": 30.0,
        "pre_score": 5.0,
        "score": 5.0,
        "reserve": 5.0,
        "permit": 5.0,
        "permit_max_wait": 900.0,
        "pre_bind": 30.0,
        "bind": 30.0,
        "post_bind": 30.0,
        "plugins": {},
    }
    assert ours.circuit_breaker.model_dump() == {"consecutive_failures": 5, "cool_down": 30.0}
    assert HookTimeouts.model_validate({"preBind": "1m"}).pre_bind == 60.0


def test_single_unnamed_profile_gets_default_name_only_when_alone() -> None:
    config = load_config(doc(profiles=[{"percentageOfNodesToScore": 30}]))
    assert config.profiles[0].scheduler_name == "pluggable-scheduler"
    assert problems(doc(profiles=[{"schedulerName": "a"}, {}])) == [
        "profiles[1].schedulerName: required field is missing"
    ]


def test_null_means_unset() -> None:
    config = load_config(
        doc(leaderElection=None, profiles=[{"schedulerName": "x", "plugins": {"score": None}}])
    )
    assert config.leader_election.leader_elect is True
    assert config.profiles[0].plugins.score.enabled == []


def test_contention_profiling_follows_profiling_unless_set() -> None:
    assert load_config(doc(enableProfiling=False)).enable_contention_profiling is False
    config = load_config(doc(enableProfiling=False, enableContentionProfiling=True))
    assert config.enable_contention_profiling is True


def test_zero_qps_and_burst_select_scheduler_defaults() -> None:
    config = load_config(doc(clientConnection={"qps": 0, "burst": 0}))
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)


def test_fields_are_camel_case_and_python_names_also_work() -> None:
    by_alias = load_config(doc(podMaxBackoffSeconds=20, leaderElection={"leaseDuration": "1m"}))
    assert by_alias.pod_max_backoff_seconds == 20
    assert by_alias.leader_election.lease_duration == 60.0
    by_name = SchedulerConfiguration(pod_max_backoff_seconds=20)
    assert by_name.pod_max_backoff_seconds == 20


def test_profile_timeouts_override_globals() -> None:
    config = load_config(
        doc(
            pluggableScheduler={"timeouts": {"bind": "5s"}},
            profiles=[{"pluggableScheduler": {"timeouts": {"preBind": "1m30s"}}}],
        )
    )
    merged = config.profiles[0].pluggable_scheduler.timeouts.apply_to(
        config.pluggable_scheduler.timeouts
    )
    assert (merged.pre_bind, merged.bind, merged.post_bind) == (90.0, 5.0, 30.0)


# ----------------------------------------------------------------- files


def test_loads_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaderElect: false\n"
        "profiles:\n  - schedulerName: fast\n    percentageOfNodesToScore: 20\n"
    )
    config = load_config(path)
    assert config.leader_election.leader_elect is False
    assert config.profiles[0].scheduler_name == "fast"
    assert load_config(str(path)) == config


def test_loads_json_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc(parallelism=4)))
    assert load_config(path).parallelism == 4


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read config file"):
        load_config(tmp_path / "nope.yaml")


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: x\nkind: [unclosed\n")
    with pytest.raises(UserError, match=r"not valid YAML.*line \d+"):
        load_config(path)


def test_duplicate_yaml_keys_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "parallelism: 2\nparallelism: 3\n"
    )
    with pytest.raises(UserError, match="duplicate key 'parallelism'"):
        load_config(path)


def test_empty_and_non_mapping_documents(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(UserError, match="is empty"):
        load_config(empty)
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(UserError, match="must be a mapping"):
        load_config(listed)


# ----------------------------------------------------------------- errors with paths


def test_type_errors_carry_readable_paths() -> None:
    bad = doc(
        profiles=[
            {
                "schedulerName": "a",
                "plugins": {
                    "score": {"enabled": [{"name": "ImageLocality"}, {"name": "X", "weight": "x"}]}
                },
            }
        ]
    )
    assert problems(bad) == [
        "profiles[0].plugins.score.enabled[1].weight: Input should be a valid integer"
    ]


def test_strict_types_like_kube_decoder() -> None:
    assert problems(doc(parallelism="4")) == ["parallelism: Input should be a valid integer"]


def test_unknown_fields_are_errors_with_suggestion() -> None:
    bad = doc(
        profiles=[{"schedulerNmae": "a", "plugins": {"scores": {}}}],
        leaderElection={"leaseDuraton": "15s"},
    )
    lines = problems(bad)
    assert "leaderElection.leaseDuraton: unknown field (did you mean 'leaseDuration'?)" in lines
    assert "profiles[0].schedulerNmae: unknown field (did you mean 'schedulerName'?)" in lines
    assert "profiles[0].plugins.scores: unknown field (did you mean 'score'?)" in lines


def test_unknown_field_without_close_match_lists_valid_fields() -> None:
    (line,) = problems(doc(pluggableScheduler={"zzz": 1}))
    assert line.startswith("pluggableScheduler.zzz: unknown field; valid fields here: ")
    assert "serverAddress" in line


def test_all_problems_reported_together() -> None:
    lines = problems(doc(parallelism=0, percentageOfNodesToScore=101, podInitialBackoffSeconds=-1))
    assert [line.split(":")[0] for line in lines] == [
        "parallelism",
        "percentageOfNodesToScore",
        "podInitialBackoffSeconds",
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "apiVersion: Input should be"),
        ({"kind": "Pod"}, "kind: Input should be 'KubeSchedulerConfiguration'"),
        ({"leaderElection": {"leaseDuration": 15}}, "leaderElection.leaseDuration: must be a Go"),
        ({"leaderElection": {"retryPeriod": "2 s"}}, "leaderElection.retryPeriod: invalid"),
        (
            {"extenders": [{"urlPrefix": "http://x", "weight": "1"}]},
            "extenders[0].weight: Input should be",
        ),
        ({"pluggableScheduler": {"serverAddress": "10259"}}, "pluggableScheduler.serverAddress"),
        ({"pluggableScheduler": {"timeouts": {"bind": "0s"}}}, "pluggableScheduler.timeouts.bind"),
        ({"profiles": [{"percentageOfNodesToScore": -1}]}, "profiles[0].percentageOfNodesToScore"),
        ({"clientConnection": {"burst": -1}}, "clientConnection.burst"),
    ],
)
def test_field_errors(fields: dict[str, Any], expected: str) -> None:
    lines = problems(doc(**fields))
    assert any(line.startswith(expected) for line in lines), lines


def test_api_version_and_kind_are_required() -> None:
    assert problems({"parallelism": 1}) == [
        "apiVersion: required field is missing",
        "kind: required field is missing",
    ]


def test_empty_extenders_list_is_fine() -> None:
    assert load_config(doc(extenders=[])).extenders == []


# ----------------------------------------------------------------- cross-field rules (kube)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"leaderElection": {"leaseDuration": "5s", "renewDeadline": "10s"}},
            "leaderElection.leaseDuration: must be greater than renewDeadline (5s <= 10s)",
        ),
        (
            {"leaderElection": {"resourceLock": "endpointsleases"}},
            "leaderElection.resourceLock: must be \"leases\", got 'endpointsleases'",
        ),
        (
            {"leaderElection": {"retryPeriod": "-1s"}},
            "leaderElection.retryPeriod: must be greater than zero",
        ),
        (
            {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
            "podMaxBackoffSeconds: must be greater than or equal to "
            "podInitialBackoffSeconds (2 < 5)",
        ),
        (
            {"profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"}]},
            "profiles[2].schedulerName: duplicate 'a', already used by profiles[0]",
        ),
        (
            {"profiles": [{"schedulerName": "a"}, _shadow("b", "nope")]},
            "profiles[1].pluggableScheduler.shadowOf: no profile named 'nope' (profiles: 'a', 'b')",
        ),
        (
            {"profiles": [{"schedulerName": "a"}, _shadow("b", "b")]},
            "profiles[1].pluggableScheduler.shadowOf: a profile cannot be its own shadow",
        ),
        (
            {"profiles": [{"schedulerName": "a"}, _shadow("b", "a"), _shadow("c", "b")]},
            "profiles[2].pluggableScheduler.shadowOf: 'b' is itself a shadow (of 'a'); "
            "a shadow follows a profile that schedules",
        ),
        (
            {"profiles": [_shadow("b", "a"), {"schedulerName": "a"}]},
            "profiles[0].pluggableScheduler.shadowOf: the first profile cannot be a shadow "
            "(its QueueSort orders the queue of every profile); list the shadow after its "
            "primary",
        ),
    ],
)
def test_cross_field_rules(fields: dict[str, Any], expected: str) -> None:
    assert problems(doc(**fields)) == [expected]


def test_shadows_of_one_primary_are_accepted() -> None:
    config = load_config(
        doc(profiles=[{"schedulerName": "a"}, _shadow("b", "a"), _shadow("c", "a")])
    )
    assert [p.pluggable_scheduler.shadow_of for p in config.profiles] == [None, "a", "a"]


def test_leader_election_timing_not_checked_when_disabled() -> None:
    config = load_config(
        doc(leaderElection={"leaderElect": False, "leaseDuration": "1s", "renewDeadline": "5s"})
    )
    assert config.leader_election.leader_elect is False


def test_config_is_immutable() -> None:
    config = load_config(doc())
    with pytest.raises(ValueError):
        config.parallelism = 3  # type: ignore[misc]


def _models() -> list[type[BaseModel]]:
    return [
        obj
        for obj in vars(models).values()
        if isinstance(obj, type)
        and issubclass(obj, BaseModel)
        and obj.__module__ == models.__name__
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_every_field_is_documented_for_the_reference(model: type[BaseModel]) -> None:
    assert model.__doc__
    for name, info in model.model_fields.items():
        assert info.description, f"{model.__name__}.{name} has no description"


def test_json_schema_shows_durations_as_written() -> None:
    schema = SchedulerConfiguration.model_json_schema(by_alias=True)
    lease = schema["$defs"]["LeaderElectionConfiguration"]["properties"]["leaseDuration"]
    assert (lease["type"], lease["default"]) == ("string", "15s")


# ------------------------------------------------- bounds of what Kubernetes accepts


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # Lease spec.leaseDurationSeconds is an int32: the API server would
        # refuse every Lease write and the daemon would never lead.
        (
            {"leaderElection": {"leaseDuration": "1000000h", "renewDeadline": "10s"}},
            "leaderElection.leaseDuration: must be at most 2147483647s (Lease "
            "spec.leaseDurationSeconds is an int32), got 1000000h0m0s",
        ),
        # component-base: leaseDuration <= renewDeadline is invalid (equal too).
        (
            {"leaderElection": {"leaseDuration": "10s", "renewDeadline": "10s"}},
            "leaderElection.leaseDuration: must be greater than renewDeadline (10s <= 10s)",
        ),
        # client-go's NewLeaderElector refuses renewDeadline <= retryPeriod * 1.2.
        (
            {"leaderElection": {"renewDeadline": "2s", "retryPeriod": "2s"}},
            "leaderElection.renewDeadline: must be greater than retryPeriod*1.2 "
            "(client-go's JitterFactor) (2s <= 2.4s)",
        ),
        (
            {"leaderElection": {"leaseDuration": "0s"}},
            "leaderElection.leaseDuration: must be greater than zero",
        ),
    ],
)
def test_leader_election_bounds(fields: dict[str, Any], expected: str) -> None:
    assert expected in problems(doc(**fields))


def test_longest_valid_lease_loads() -> None:
    config = load_config(
        doc(leaderElection={"leaseDuration": "2147483647s", "renewDeadline": "2147483646s"})
    )
    assert config.leader_election.lease_duration == 2147483647


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("leaseDuration", "99999999999h"),
        ("renewDeadline", "2562047h47m16.854775808s"),
        ("retryPeriod", "-99999999999h"),
    ],
)
def test_durations_beyond_go_are_refused_with_their_path(field: str, text: str) -> None:
    lines = problems(doc(leaderElection={field: text}))
    assert lines == [
        f"leaderElection.{field}: duration {text!r} is out of range: Go durations are at "
        "most 2562047h47m16.854775807s (about 292 years)"
    ]


def test_hook_timeout_beyond_go_is_refused() -> None:
    lines = problems(doc(pluggableScheduler={"timeouts": {"bind": "99999999999999h"}}))
    assert len(lines) == 1
    assert lines[0].startswith("pluggableScheduler.timeouts.bind: duration '99999999999999h'")


@pytest.mark.parametrize("qps", [float("nan"), float("inf"), float("-inf"), 1e39])
def test_qps_must_be_a_finite_float32(qps: float) -> None:
    lines = problems(doc(clientConnection={"qps": qps}))
    assert len(lines) == 1 and lines[0].startswith("clientConnection.qps: "), lines


def test_negative_qps_means_no_limit_as_in_client_go() -> None:
    assert load_config(doc(clientConnection={"qps": -1.0})).client_connection.qps == -1.0


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds"),
        (
            {"podInitialBackoffSeconds": 10**13, "podMaxBackoffSeconds": 10**13},
            "podMaxBackoffSeconds",
        ),
        ({"clientConnection": {"burst": -1}}, "clientConnection.burst"),
        ({"clientConnection": {"burst": 2**31}}, "clientConnection.burst"),
        ({"parallelism": 0}, "parallelism"),
        ({"percentageOfNodesToScore": 101}, "percentageOfNodesToScore"),
        (
            {"pluggableScheduler": {"bindingConcurrency": 0}},
            "pluggableScheduler.bindingConcurrency",
        ),
    ],
)
def test_counts_out_of_kube_range_name_their_field(fields: dict[str, Any], path: str) -> None:
    assert any(line.startswith(f"{path}: ") for line in problems(doc(**fields)))


def test_backoff_beyond_a_go_duration_is_refused() -> None:
    # kube-scheduler multiplies these by time.Second: past this it overflows.
    load_config(doc(podInitialBackoffSeconds=9223372036, podMaxBackoffSeconds=9223372036))
    assert problems(doc(podMaxBackoffSeconds=9223372037)) == [
        "podMaxBackoffSeconds: Input should be less than or equal to 9223372036"
    ]


@pytest.mark.parametrize("address", ["[::1]:10259", ":10259", "0.0.0.0:0", "localhost:8080"])
def test_server_addresses_the_health_server_can_bind(address: str) -> None:
    config = load_config(doc(pluggableScheduler={"serverAddress": address}))
    assert config.pluggable_scheduler.server_address == address


@pytest.mark.parametrize("address", ["::1:10259", "[::1]", "host", "h:99999", "[]:1"])
def test_server_addresses_refused_before_start_up(address: str) -> None:
    lines = problems(doc(pluggableScheduler={"serverAddress": address}))
    assert len(lines) == 1 and lines[0].startswith("pluggableScheduler.serverAddress: must be")


# ----------------------------------------------------------------- unreadable files


def test_non_utf8_config_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"apiVersion: kubescheduler.config.k8s.io/v1\n# caf\xe9\n")
    with pytest.raises(UserError) as info:
        load_config(path)
    assert info.value.message == (
        f"config file {path} is not UTF-8 text: invalid continuation byte at byte 48 (line 2)"
    )


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 600 + "]" * 600,
        "".join("  " * i + "k:\n" for i in range(600)),
    ],
)
def test_deep_nesting_is_a_yaml_error_not_a_recursion_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as info:
        load_config(path)
    assert info.value.message.startswith(
        f"config file {path} is not valid YAML: nested more than 100 levels deep (line "
    )


def test_nesting_up_to_the_limit_loads(tmp_path: Path) -> None:
    path = tmp_path / "deep-args.yaml"
    # root, profiles, [0], pluginConfig, [0], args: 6 levels, then 94 lists = 100.
    nested = "[" * 94 + "]" * 94
    path.write_text(
        f"apiVersion: {API_VERSION}\nkind: {KIND}\nprofiles:\n- pluginConfig:\n"
        f"  - name: X\n    args: {{deep: {nested}}}\n"
    )
    config = load_config(path)
    assert config.profiles[0].plugin_config[0].name == "X"
