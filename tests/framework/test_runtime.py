"""The extension-point runner, one kube-scheduler semantic per test."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from scheduler.api import (
    Code,
    CycleState,
    FilterResult,
    PostFilterResult,
    PreFilterResult,
    Status,
    hookimpl,
)
from scheduler.framework.cycle import Algorithm
from scheduler.framework.waiting import WaitingPodEntry, WaitingPods
from tests.framework.helpers import budgets, make_framework, node, pod, table_of


class Recorder:
    """Remembers which hooks ran, in order, across plugins."""

    def __init__(self) -> None:
        self.calls: list[str] = []


def three_nodes():
    return table_of(node("n1", zone="a"), node("n2", zone="b"), node("n3", zone="c"))


class RejectNodes:
    def __init__(
        self, log: Recorder, name: str, reject: set[str], reason: str, code=Code.UNSCHEDULABLE
    ):
        self.log, self.name, self.reject, self.reason, self.code = log, name, reject, reason, code
        self.seen: list[list[str]] = []

    @hookimpl
    def filter(self, state, pod, nodes):
        self.log.calls.append(f"{self.name}.filter")
        self.seen.append(list(nodes.names))
        mask = np.array([n in self.reject for n in nodes.names], dtype=bool)
        return FilterResult(len(nodes)).reject(mask, self.reason, self.code)


def test_filter_narrows_plugin_by_plugin_and_charges_first_rejecter():
    log = Recorder()
    first = RejectNodes(log, "A", {"n1"}, "Insufficient cpu")
    second = RejectNodes(log, "B", {"n1", "n2"}, "node(s) had untolerated taint {x: y}")
    fw = make_framework([("A", first), ("B", second)])
    table = three_nodes()
    out = fw.run_filter(CycleState(), pod("p"), table.all_nodes())
    assert out.status.is_success()
    assert out.feasible.names == ["n3"]
    assert second.seen == [["n2", "n3"]]  # B never sees the node A rejected
    verdicts = out.diagnosis.node_verdicts
    assert verdicts["n1"].plugin == "A" and verdicts["n1"].reasons == ["Insufficient cpu"]
    assert verdicts["n2"].plugin == "B"
    assert out.diagnosis.unschedulable_plugins == {"A", "B"}


def test_failure_message_matches_kube_scheduler_format():
    log = Recorder()
    fw = make_framework(
        [
            ("Fit", RejectNodes(log, "Fit", {"n1", "n2"}, "Insufficient cpu")),
            ("Taint", RejectNodes(log, "Taint", {"n3"}, "node(s) had untolerated taint {a: b}")),
        ]
    )
    table = three_nodes()
    result = Algorithm(fw, seed=1).schedule(CycleState(), pod("p"), table)
    assert result.node is None
    assert result.status.code is Code.UNSCHEDULABLE
    assert result.diagnosis.message() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu."
    )


def test_a_node_rejected_for_two_reasons_counts_for_both():
    class TwoReasons:
        @hookimpl
        def filter(self, state, pod, nodes):
            r = FilterResult(len(nodes))
            r.reject(np.array([True, True, False]), "Insufficient cpu")
            r.reject(np.array([True, False, False]), "Insufficient memory")
            return r

    fw = make_framework([("Fit", TwoReasons())])
    out = fw.run_filter(CycleState(), pod("p"), three_nodes().all_nodes())
    assert out.diagnosis.reason_counts() == {"Insufficient cpu": 2, "Insufficient memory": 1}
    assert out.diagnosis.node_verdicts["n1"].reasons == ["Insufficient cpu", "Insufficient memory"]


def test_prefilter_results_intersect_and_skip_disables_that_filter():
    log = Recorder()

    class Narrow:
        def __init__(self, names):
            self.names = names

        @hookimpl
        def pre_filter(self, state, pod, nodes):
            return PreFilterResult.only(self.names)

    class Skipper:
        @hookimpl
        def pre_filter(self, state, pod, nodes):
            return Status.skip()

        @hookimpl
        def filter(self, state, pod, nodes):
            log.calls.append("Skipper.filter")
            return FilterResult(len(nodes)).reject(np.ones(len(nodes), bool), "never")

    fw = make_framework(
        [("N1", Narrow({"n1", "n2"})), ("N2", Narrow({"n2", "n3"})), ("Skipper", Skipper())]
    )
    result = Algorithm(fw, seed=0).schedule(CycleState(), pod("p"), three_nodes())
    assert result.node == "n2"
    assert "Skipper.filter" not in log.calls
    verdict = result.diagnosis.node_verdicts["n1"]
    assert verdict.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert verdict.reasons == ["node(s) didn't satisfy plugin(s) [N1, N2]"]


def test_prefilter_with_empty_intersection_is_unresolvable():
    class Narrow:
        def __init__(self, names):
            self.names = names

        @hookimpl
        def pre_filter(self, state, pod, nodes):
            return PreFilterResult.only(self.names)

    fw = make_framework([("A", Narrow({"n1"})), ("B", Narrow({"n2"}))])
    result = Algorithm(fw).schedule(CycleState(), pod("p"), three_nodes())
    assert result.status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "didn't satisfy plugin(s) [A, B] simultaneously" in result.status.message()


def test_prefilter_rejection_is_reported_as_the_prefilter_message():
    class Gate:
        @hookimpl
        def pre_filter(self, state, pod, nodes):
            return Status.unresolvable("pod carries a forbidden annotation")

    result = Algorithm(make_framework([("Gate", Gate())])).schedule(
        CycleState(), pod("p"), three_nodes()
    )
    assert result.status.plugin == "Gate"
    assert result.diagnosis.message() == (
        "0/3 nodes are available: pod carries a forbidden annotation."
    )


def test_postfilter_runs_only_on_failure_and_first_success_wins():
    log = Recorder()

    class Post:
        def __init__(self, name, status, nominate=None):
            self.name, self.status, self.nominate = name, status, nominate

        @hookimpl
        def post_filter(self, state, pod, diagnosis):
            log.calls.append(self.name)
            return PostFilterResult(self.status, self.nominate)

    plugins = [
        ("P1", Post("P1", Status.unschedulable("preemption: not helpful"))),
        ("P2", Post("P2", Status.success(), "n2")),
        ("P3", Post("P3", Status.success(), "n3")),
    ]
    fw = make_framework(plugins)
    ok = make_framework([("Pass", RejectNodes(Recorder(), "Pass", set(), "x")), *plugins])
    res = Algorithm(ok).schedule(CycleState(), pod("p"), three_nodes())
    assert res.node and log.calls == []  # no PostFilter after a success
    diagnosis = Algorithm(fw).schedule(CycleState(), pod("p"), three_nodes()).diagnosis
    post = fw.run_post_filter(CycleState(), pod("p"), diagnosis)
    assert log.calls == ["P1", "P2"]
    assert post.status.is_success() and post.nominated_node_name == "n2"


def test_score_normalize_weight_and_sum():
    class Raw:
        def __init__(self, values, normalize=False):
            self.values, self.normalize = values, normalize

        @hookimpl
        def score(self, state, pod, nodes):
            return np.array([self.values[n] for n in nodes.names], dtype=np.int64)

    class Normalizing(Raw):
        @hookimpl
        def normalize_score(self, state, pod, nodes, scores):
            scores[:] = scores * 100 // scores.max()

    fw = make_framework(
        [
            ("Small", Normalizing({"n1": 1, "n2": 2, "n3": 4})),
            ("Plain", Raw({"n1": 90, "n2": 10, "n3": 0})),
        ],
        weights={"Small": 2, "Plain": 1},
    )
    nodes = three_nodes().all_nodes()
    out = fw.run_score(CycleState(), pod("p"), nodes)
    assert out.status.is_success()
    assert out.by_plugin["Small"].raw.tolist() == [1, 2, 4]
    assert out.by_plugin["Small"].normalized.tolist() == [25, 50, 100]
    assert out.by_plugin["Small"].weighted.tolist() == [50, 100, 200]
    assert out.total.tolist() == [140, 110, 200]


def test_score_out_of_range_after_normalize_is_an_error_naming_the_plugin():
    class Wild:
        @hookimpl
        def score(self, state, pod, nodes):
            return np.full(len(nodes), 1000, dtype=np.int64)

    out = make_framework([("Wild", Wild())]).run_score(
        CycleState(), pod("p"), three_nodes().all_nodes()
    )
    assert out.status.code is Code.ERROR and out.status.plugin == "Wild"
    assert "[0, 100]" in out.status.message()


def test_prescore_skip_skips_that_plugins_score():
    class Lazy:
        @hookimpl
        def pre_score(self, state, pod, nodes):
            return Status.skip()

        @hookimpl
        def score(self, state, pod, nodes):
            raise AssertionError("Score must be skipped")

    fw = make_framework([("Lazy", Lazy())])
    state = CycleState()
    nodes = three_nodes().all_nodes()
    assert fw.run_pre_score(state, pod("p"), nodes).is_success()
    out = fw.run_score(state, pod("p"), nodes)
    assert out.status.is_success() and out.by_plugin == {}


def test_ties_are_all_reported_and_pick_is_among_them():
    class Flat:
        @hookimpl
        def score(self, state, pod, nodes):
            return np.array([50 if n != "n1" else 10 for n in nodes.names], dtype=np.int64)

    algo = Algorithm(make_framework([("Flat", Flat())]), seed=3)
    picks = {algo.schedule(CycleState(), pod("p"), three_nodes()).node for _ in range(30)}
    result = algo.schedule(CycleState(), pod("p"), three_nodes())
    assert result.tied == ["n2", "n3"]
    assert picks == {"n2", "n3"}


def test_plugin_that_raises_gives_error_naming_it_and_others_keep_working():
    class Boom:
        @hookimpl
        def filter(self, state, pod, nodes):
            if pod.name == "bad":
                raise ValueError("kaput")
            return None

    fw = make_framework([("Boom", Boom())])
    bad = Algorithm(fw).schedule(CycleState(), pod("bad"), three_nodes())
    assert bad.status.code is Code.ERROR and bad.status.plugin == "Boom"
    assert "ValueError: kaput" in bad.status.message()
    good = Algorithm(fw).schedule(CycleState(), pod("good"), three_nodes())
    assert good.status.is_success() and good.node


@pytest.mark.parametrize("garbage", ["yes", 3, [True, False], FilterResult(1)])
def test_filter_returning_garbage_is_an_error(garbage: Any):
    class Garbage:
        @hookimpl
        def filter(self, state, pod, nodes):
            return garbage

    out = make_framework([("G", Garbage())]).run_filter(
        CycleState(), pod("p"), three_nodes().all_nodes()
    )
    assert out.status.code is Code.ERROR and out.status.plugin == "G"
    assert "returned" in out.status.message()


def test_reserve_failure_unreserves_all_in_reverse_order():
    log = Recorder()

    class Res:
        def __init__(self, name, ok=True):
            self.name, self.ok = name, ok

        @hookimpl
        def reserve(self, state, pod, node_name):
            log.calls.append(f"reserve {self.name}")
            return None if self.ok else Status.unschedulable("no room")

        @hookimpl
        def unreserve(self, state, pod, node_name):
            log.calls.append(f"unreserve {self.name}")

    fw = make_framework([("A", Res("A")), ("B", Res("B", ok=False)), ("C", Res("C"))])
    status = fw.run_reserve(CycleState(), pod("p"), "n1")
    assert not status.is_success() and status.plugin == "B"
    assert log.calls == [
        "reserve A",
        "reserve B",
        "unreserve C",
        "unreserve B",
        "unreserve A",
    ]


async def test_permit_wait_allow_reject_and_timeout():
    class Waiter:
        @hookimpl
        def permit(self, state, pod, node_name):
            return Status.wait(0.05 if pod.name == "slow" else 10)

    fw = make_framework([("Gang", Waiter())])
    waiting = WaitingPods()

    async def attempt(p):
        status, waits = fw.run_permit(CycleState(), p, "n1")
        assert status.is_wait() and waits == {"Gang": pytest.approx(waits["Gang"])}
        entry = WaitingPodEntry(p, "n1", waits)
        waiting.add(entry)
        return entry

    allowed = await attempt(pod("a"))
    rejected = await attempt(pod("r"))
    slow = await attempt(pod("slow"))
    waiting.get("uid-a").allow("Gang")
    assert waiting.reject("uid-r", "Gang", "group failed")
    assert (await allowed.wait()).is_success()
    rej = await rejected.wait()
    assert rej.code is Code.UNSCHEDULABLE and rej.message() == "group failed"
    timed_out = await asyncio.wait_for(slow.wait(), 2)
    assert "rejected due to timeout after waiting 0.05s at plugin Gang" in timed_out.message()


def test_permit_wait_is_capped_by_the_profile_limit():
    class Forever:
        @hookimpl
        def permit(self, state, pod, node_name):
            return Status.wait(10_000)

    fw = make_framework([("F", Forever())], timeouts=budgets(permitMaxWait="60s"))
    _, waits = fw.run_permit(CycleState(), pod("p"), "n1")
    assert waits == {"F": 60}


def test_permit_rejection_names_the_plugin():
    class No:
        @hookimpl
        def permit(self, state, pod, node_name):
            return Status.unschedulable("quota exhausted")

    status, _ = make_framework([("Quota", No())]).run_permit(CycleState(), pod("p"), "n1")
    assert status.code is Code.UNSCHEDULABLE and status.plugin == "Quota"


async def test_bind_first_non_skip_wins_and_all_skip_is_an_error():
    log = Recorder()

    class Binder:
        def __init__(self, name, skip):
            self.name, self.skip = name, skip

        @hookimpl
        async def bind(self, state, pod, node_name):
            log.calls.append(self.name)
            return Status.skip() if self.skip else None

    fw = make_framework(
        [("S", Binder("S", True)), ("B", Binder("B", False)), ("C", Binder("C", False))]
    )
    assert (await fw.run_bind(CycleState(), pod("p"), "n1")).is_success()
    assert log.calls == ["S", "B"]
    none = make_framework([("S", Binder("S", True))])
    status = await none.run_bind(CycleState(), pod("p"), "n1")
    assert status.code is Code.ERROR and "Skip" in status.message()


async def test_binding_hooks_with_nothing_to_wait_for_take_no_loop_iteration():
    # VolumeBinding and DynamicResources return at once for a pod without
    # volumes or claims: that must not cost a task hand-off per hook.
    class Quick:
        def __init__(self):
            self.tasks = []

        @hookimpl
        async def pre_bind(self, state, pod, node_name):
            self.tasks.append(asyncio.current_task())

        @hookimpl
        async def bind(self, state, pod, node_name):
            self.tasks.append(asyncio.current_task())

    quick = Quick()
    fw = make_framework([("Quick", quick), ("Other", Quick())])
    turned = [False]
    asyncio.get_running_loop().call_soon(turned.__setitem__, 0, True)
    assert (await fw.run_pre_bind(CycleState(), pod("p"), "n1")).is_success()
    assert (await fw.run_bind(CycleState(), pod("p"), "n1")).is_success()
    assert turned == [False]
    # Each call still ran as a task of its own (abandonable past its budget).
    caller = asyncio.current_task()
    assert len(quick.tasks) == 2 and caller not in quick.tasks


async def test_async_prebind_past_its_timeout_is_an_error_naming_the_plugin():
    class Hang:
        @hookimpl
        async def pre_bind(self, state, pod, node_name):
            await asyncio.sleep(30)

    fw = make_framework([("Hang", Hang())], timeouts=budgets(preBind="50ms"))
    status = await fw.run_pre_bind(CycleState(), pod("p"), "n1")
    assert status.code is Code.ERROR and status.plugin == "Hang"
    assert "timed out after 0.05s" in status.message()


async def test_prebind_may_declare_a_longer_limit_than_the_configured_one():
    class SlowBinder:
        pre_bind_timeout = 0.5  # plugin API 1.2 (VolumeBinding: bindTimeoutSeconds)

        @hookimpl
        async def pre_bind(self, state, pod, node_name):
            await asyncio.sleep(0.1)

    class Impatient:
        pre_bind_timeout = 0.01  # never shortens the configured limit

        @hookimpl
        async def pre_bind(self, state, pod, node_name):
            await asyncio.sleep(0.02)

    fw = make_framework(
        [("Slow", SlowBinder()), ("Impatient", Impatient())], timeouts=budgets(preBind="50ms")
    )
    assert (await fw.run_pre_bind(CycleState(), pod("p"), "n1")).is_success()


async def test_postbind_failures_are_reported_not_raised():
    class Flaky:
        @hookimpl
        def post_bind(self, state, pod, node_name):
            raise RuntimeError("metrics backend down")

    errors = await make_framework([("Flaky", Flaky())]).run_post_bind(CycleState(), pod("p"), "n1")
    assert [e.plugin for e in errors] == ["Flaky"]


def test_single_feasible_node_is_chosen_without_scoring():
    class NoScore:
        @hookimpl
        def score(self, state, pod, nodes):
            raise AssertionError("no scoring with a single feasible node")

    fw = make_framework(
        [("Only", RejectNodes(Recorder(), "Only", {"n1", "n2"}, "nope")), ("NoScore", NoScore())]
    )
    assert Algorithm(fw).schedule(CycleState(), pod("p"), three_nodes()).node == "n3"


def test_pod_with_resource_claims_is_refused_not_misplaced():
    claims = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    p = pod("trainer", resourceClaims=claims)
    assert p.resource_claims == ["gpu"]
    result = Algorithm(make_framework([])).schedule(CycleState(), p, three_nodes())
    assert result.node is None
    assert result.status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "ResourceClaims (spec.resourceClaims)" in result.status.message()


def test_postfilter_none_means_no_opinion_and_the_next_plugin_tries():
    class Abstain:
        @hookimpl
        def post_filter(self, state, pod, diagnosis):
            return None

    class Nominate:
        @hookimpl
        def post_filter(self, state, pod, diagnosis):
            return PostFilterResult(Status.success(), "n3")

    fw = make_framework([("Abstain", Abstain()), ("Nominate", Nominate())])
    diagnosis = Algorithm(fw).schedule(CycleState(), pod("p"), three_nodes()).diagnosis
    post = fw.run_post_filter(CycleState(), pod("p"), diagnosis)
    assert post.status.is_success() and post.status.plugin == "Nominate"
    assert post.nominated_node_name == "n3"
