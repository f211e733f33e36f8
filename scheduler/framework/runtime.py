"""Running a profile's plugins at each extension point, with kube-scheduler's semantics.

One :class:`Framework` per profile. Hook implementations are resolved once,
at construction, into ordered lists of direct calls, so a scheduling cycle
pays neither pluggy's dispatch nor a per-call lookup. Every call is guarded:
a plugin that raises, or returns something that is not what its hook
promises, produces an Error status naming the plugin for this pod's attempt
only.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from scheduler.api.cyclestate import CycleState
from scheduler.api.events import ClusterEventWithHint
from scheduler.api.results import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Diagnosis,
    FilterResult,
    PostFilterResult,
    PreFilterResult,
    Rejection,
)
from scheduler.api.status import Code, Status
from scheduler.config.points import ExtensionPoint
from scheduler.framework.pluginmanager import SchedulerPluginManager
from scheduler.state.nodetable import NodeInfo, NodeSet
from scheduler.state.pod import PodInfo, QueuedPodInfo

ScoreArray = npt.NDArray[np.int64]
_INT64 = np.dtype(np.int64)
_SUCCESS = Status.success()
PREFILTER_NARROWING_KEY = "framework/prefilter-narrowing"


class FrameworkRecorder(Protocol):
    """Where durations and plugin failures go (Prometheus in the daemon)."""

    def plugin_duration(self, point: str, plugin: str, code: Code, seconds: float) -> None: ...

    def point_duration(self, point: str, code: Code, seconds: float) -> None: ...

    def plugin_error(self, point: str, plugin: str) -> None: ...


class NullRecorder:
    def plugin_duration(self, point: str, plugin: str, code: Code, seconds: float) -> None:
        pass

    def point_duration(self, point: str, code: Code, seconds: float) -> None:
        pass

    def plugin_error(self, point: str, plugin: str) -> None:
        pass


@dataclass(slots=True)
class PluginCall:
    """One plugin's implementation of one hook, ready to call.

    Callers pass the hook's arguments as a tuple in hookspec order;
    ``indices`` picks the subset this implementation declared (None: all of
    them, in order), which is cheaper than building keyword dicts per call.
    """

    plugin: str
    fn: Callable[..., Any]
    indices: tuple[int, ...] | None
    weight: int = 1

    def __call__(self, args: tuple[Any, ...]) -> Any:
        if self.indices is None:
            return self.fn(*args)
        return self.fn(*[args[i] for i in self.indices])


# kube-scheduler times individual plugins on a sample of cycles only
# (pluginMetricsSamplePercent = 10): timing every call would cost more than
# the plugins themselves. Extension points are always timed.
PLUGIN_METRICS_SAMPLE_EVERY = 10


class PluginFailure(Exception):
    """Internal: carries the Error status of a failed plugin call up to the point."""

    def __init__(self, status: Status) -> None:
        super().__init__(str(status))
        self.status = status


@dataclass(slots=True)
class FilterOutcome:
    feasible: NodeSet
    diagnosis: Diagnosis
    status: Status  # Error aborts the attempt; otherwise Success


@dataclass(slots=True)
class PluginScores:
    raw: ScoreArray
    normalized: ScoreArray
    weighted: ScoreArray


@dataclass(slots=True)
class ScoreOutcome:
    nodes: NodeSet
    total: ScoreArray
    by_plugin: dict[str, PluginScores] = field(default_factory=dict)
    status: Status = field(default_factory=Status.success)


@dataclass(slots=True)
class Timeouts:
    """Per-point limits for binding-cycle hooks (seconds); Permit caps Wait."""

    permit_max: float = 900.0
    pre_bind: float = 30.0
    bind: float = 30.0
    post_bind: float = 30.0


def _describe(value: Any) -> str:
    return type(value).__name__ if value is not None else "None"


class Framework:
    """A profile's plugins, in order, per extension point."""

    def __init__(
        self,
        profile_name: str,
        manager: SchedulerPluginManager,
        order: dict[ExtensionPoint, list[tuple[str, int]]],
        *,
        recorder: FrameworkRecorder | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.profile_name = profile_name
        self.manager = manager
        self.recorder: FrameworkRecorder = recorder or NullRecorder()
        self.timeouts = timeouts or Timeouts()
        self.order = order
        self._cycles = 0
        self.plugins: dict[str, object] = {}
        for name, plugin in manager.list_name_plugin():
            if name is not None:
                self.plugins[name] = plugin

        def calls(point: ExtensionPoint, hook: str) -> list[PluginCall]:
            return self._calls(hook, order.get(point, []))

        self.pre_enqueue_calls = calls(ExtensionPoint.PRE_ENQUEUE, "pre_enqueue")
        self.queue_sort_calls = calls(ExtensionPoint.QUEUE_SORT, "queue_sort_key")
        self.pre_filter_calls = calls(ExtensionPoint.PRE_FILTER, "pre_filter")
        self.add_pod_calls = calls(ExtensionPoint.PRE_FILTER, "pre_filter_add_pod")
        self.remove_pod_calls = calls(ExtensionPoint.PRE_FILTER, "pre_filter_remove_pod")
        self.filter_calls = calls(ExtensionPoint.FILTER, "filter")
        self.post_filter_calls = calls(ExtensionPoint.POST_FILTER, "post_filter")
        self.pre_score_calls = calls(ExtensionPoint.PRE_SCORE, "pre_score")
        self.score_calls = calls(ExtensionPoint.SCORE, "score")
        normalize = calls(ExtensionPoint.SCORE, "normalize_score")
        self.normalize_calls = {c.plugin: c for c in normalize}
        self.reserve_calls = calls(ExtensionPoint.RESERVE, "reserve")
        self.unreserve_calls = calls(ExtensionPoint.RESERVE, "unreserve")
        self.permit_calls = calls(ExtensionPoint.PERMIT, "permit")
        self.pre_bind_calls = calls(ExtensionPoint.PRE_BIND, "pre_bind")
        self.bind_calls = calls(ExtensionPoint.BIND, "bind")
        self.post_bind_calls = calls(ExtensionPoint.POST_BIND, "post_bind")

    def _calls(self, hook: str, plugins: Sequence[tuple[str, int]]) -> list[PluginCall]:
        caller = getattr(self.manager.hook, hook)
        spec_args = tuple(caller.spec.argnames)
        impls = {impl.plugin_name: impl for impl in caller.get_hookimpls()}
        out = []
        for name, weight in plugins:
            impl = impls.get(name)
            if impl is not None:
                indices = tuple(spec_args.index(a) for a in impl.argnames)
                positional = indices == tuple(range(len(spec_args)))
                out.append(PluginCall(name, impl.function, None if positional else indices, weight))
        return out

    def new_cycle_state(self) -> CycleState:
        """A CycleState for one attempt, deciding whether its plugin calls are timed."""
        state = CycleState()
        self._cycles += 1
        state.record_plugin_metrics = self._cycles % PLUGIN_METRICS_SAMPLE_EVERY == 0
        return state

    # -- guarded invocation -----------------------------------------------------

    def _invoke(
        self, point: str, call: PluginCall, args: tuple[Any, ...], timed: bool = True
    ) -> Any:
        if not timed:
            try:
                if call.indices is None:
                    return call.fn(*args)
                return call(args)
            except Exception as err:
                raise self._raised(point, call, err) from err
        start = time.perf_counter()
        try:
            result = call(args)
        except Exception as err:
            self.recorder.plugin_duration(
                point, call.plugin, Code.ERROR, time.perf_counter() - start
            )
            raise self._raised(point, call, err) from err
        code = result.code if isinstance(result, Status) else Code.SUCCESS
        self.recorder.plugin_duration(point, call.plugin, code, time.perf_counter() - start)
        return result

    def _raised(self, point: str, call: PluginCall, err: Exception) -> PluginFailure:
        self.recorder.plugin_error(point, call.plugin)
        message = f"running {point} plugin {call.plugin!r}: {type(err).__name__}: {err}"
        return PluginFailure(Status(Code.ERROR, (message,), call.plugin, err))

    def _garbage(self, point: str, call: PluginCall, got: Any, expected: str) -> PluginFailure:
        self.recorder.plugin_error(point, call.plugin)
        message = f"{point} plugin {call.plugin!r} returned {_describe(got)}, expected {expected}"
        return PluginFailure(Status(Code.ERROR, (message,), call.plugin))

    def _status(self, point: str, call: PluginCall, result: Any) -> Status:
        if result is None:
            return _SUCCESS
        if isinstance(result, Status):
            return result.with_plugin(call.plugin)
        raise self._garbage(point, call, result, "Status or None")

    # -- queue ------------------------------------------------------------------

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        args = (pod,)
        for call in self.pre_enqueue_calls:
            try:
                status = self._status("PreEnqueue", call, self._invoke("PreEnqueue", call, args))
            except PluginFailure as failure:
                return failure.status
            if not status.is_success():
                return status
        return Status.success()

    def queue_sort_key(self, queued: QueuedPodInfo) -> Any:
        """The QueueSort plugin's key (the queue falls back to FIFO without one)."""
        if not self.queue_sort_calls:
            return (queued.timestamp,)
        return self.queue_sort_calls[0]((queued,))

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Each enabled plugin's requeue events (plugins without the hook: all events)."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        impls = {i.plugin_name: i for i in self.manager.hook.events_to_register.get_hookimpls()}
        for name in self.plugins:
            impl = impls.get(name)
            if impl is not None:
                events = cast("Iterable[ClusterEventWithHint] | None", impl.function())
                out[name] = list(events or ())
        return out

    # -- scheduling cycle ---------------------------------------------------------

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> tuple[PreFilterResult, Status]:
        """Run PreFilter; returns the merged node subset and the first failure.

        A Skip status disables the same plugin's Filter for this pod.
        """
        start = time.perf_counter()
        merged = PreFilterResult()
        narrowing: list[str] = []
        args = (state, pod, nodes)
        timed = state.record_plugin_metrics
        status = Status.success()
        for call in self.pre_filter_calls:
            try:
                result = self._invoke("PreFilter", call, args, timed)
            except PluginFailure as failure:
                status = failure.status
                break
            if isinstance(result, PreFilterResult):
                if result.node_names is not None:
                    narrowing.append(call.plugin)
                merged = merged.merge(result)
                continue
            try:
                call_status = self._status("PreFilter", call, result)
            except PluginFailure as failure:
                status = failure.status
                break
            if call_status.is_skip():
                state.skip_filter_plugins.add(call.plugin)
            elif not call_status.is_success():
                status = call_status
                break
        if status.is_success() and merged.node_names is not None and not merged.node_names:
            status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{', '.join(narrowing)}] simultaneously",),
                narrowing[0] if narrowing else None,
            )
        self.recorder.point_duration("PreFilter", status.code, time.perf_counter() - start)
        if narrowing:
            state.write(PREFILTER_NARROWING_KEY, narrowing)
        return merged, status

    def run_filter(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeSet,
        diagnosis: Diagnosis | None = None,
    ) -> FilterOutcome:
        """Narrow ``nodes`` plugin by plugin; each node is charged to the first rejecter.

        Rejections are added to ``diagnosis`` (a new one if not given).
        """
        start = time.perf_counter()
        if diagnosis is None:
            diagnosis = Diagnosis(names=nodes.table.names, total_nodes=len(nodes.table))
        candidates = nodes
        timed = state.record_plugin_metrics
        for call in self.filter_calls:
            if not len(candidates):
                break
            if call.plugin in state.skip_filter_plugins:
                continue
            try:
                result = self._invoke("Filter", call, (state, pod, candidates), timed)
                if isinstance(result, FilterResult):
                    if len(result) != len(candidates):
                        raise self._garbage(
                            "Filter",
                            call,
                            result,
                            f"a FilterResult of {len(candidates)} nodes (got {len(result)})",
                        )
                    feasible = result.feasible
                    if feasible.all():
                        continue
                    rejected = ~feasible
                    diagnosis.add(
                        Rejection(
                            call.plugin,
                            candidates.rows[rejected],
                            result.codes[rejected],
                            result.reason_bits[rejected],
                            list(result.reasons),
                        )
                    )
                    candidates = candidates.subset(feasible)
                else:
                    status = self._status("Filter", call, result)
                    if status.is_success():
                        continue
                    if status.code is Code.ERROR:
                        raise PluginFailure(status)
                    if not status.is_rejected() or status.code is Code.PENDING:
                        raise self._garbage(
                            "Filter", call, result, "Success, Unschedulable(AndUnresolvable)"
                        )
                    n = len(candidates)
                    code = (
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                        else Code.UNSCHEDULABLE
                    )
                    reasons = list(status.reasons) or [f"node(s) rejected by {call.plugin}"]
                    diagnosis.add(
                        Rejection(
                            call.plugin,
                            candidates.rows,
                            np.full(n, code, dtype=np.int8),
                            np.full(n, (1 << len(reasons)) - 1, dtype=np.uint64),
                            reasons,
                        )
                    )
                    candidates = candidates.subset(np.zeros(n, dtype=np.bool_))
            except PluginFailure as failure:
                self.recorder.point_duration("Filter", Code.ERROR, time.perf_counter() - start)
                return FilterOutcome(candidates, diagnosis, failure.status)
        diagnosis.unschedulable_plugins = {r.plugin for r in diagnosis.rejections}
        self.recorder.point_duration("Filter", Code.SUCCESS, time.perf_counter() - start)
        return FilterOutcome(candidates, diagnosis, Status.success())

    def filters_read_requested_only(self, state: CycleState) -> bool:
        """Whether a what-if may add or remove pods by editing ``requested`` rows alone.

        True when no PreFilter AddPod/RemovePod extension runs for the pod and
        every Filter plugin that runs declares ``pods_via_requested``. As a
        Filter verdict for a node depends on that node alone, one Filter run
        then judges many nodes, each in its own what-if state.
        """
        skip = state.skip_filter_plugins
        for call in (*self.add_pod_calls, *self.remove_pod_calls):
            if call.plugin not in skip:
                return False
        plugins = self.plugins
        return all(
            getattr(plugins.get(c.plugin), "pods_via_requested", False)
            for c in self.filter_calls
            if c.plugin not in skip
        )

    def run_filter_with_nominated(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Filter one node (preemption's what-if check); the first rejection wins."""
        nodes = NodeSet(node.table, np.asarray([node.row], dtype=np.int64))
        outcome = self.run_filter(state, pod, nodes)
        if not outcome.status.is_success():
            return outcome.status
        if len(outcome.feasible):
            return Status.success()
        verdict = outcome.diagnosis.node_verdicts.get(node.name)
        if verdict is None:
            return Status.unschedulable()
        return Status(verdict.code, tuple(verdict.reasons), verdict.plugin)

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        return self._run_extension(self.add_pod_calls, state, pod, "pod_to_add", pod_to_add, node)

    def run_pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        return self._run_extension(
            self.remove_pod_calls, state, pod, "pod_to_remove", pod_to_remove, node
        )

    def _run_extension(
        self,
        calls: Iterable[PluginCall],
        state: CycleState,
        pod: PodInfo,
        arg: str,
        other: PodInfo,
        node: NodeInfo,
    ) -> Status:
        args = (state, pod, other, node)
        for call in calls:
            if call.plugin in state.skip_filter_plugins:
                continue
            try:
                status = self._status(
                    "PreFilterExtension", call, self._invoke("PreFilter", call, args)
                )
            except PluginFailure as failure:
                return failure.status
            if not status.is_success():
                return status
        return Status.success()

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> PostFilterResult:
        """Run PostFilter plugins until one succeeds (or one errors)."""
        start = time.perf_counter()
        args = (state, pod, diagnosis)
        result = PostFilterResult(Status.unschedulable())
        messages = []
        for call in self.post_filter_calls:
            try:
                got = self._invoke("PostFilter", call, args)
                if got is None:
                    continue  # no opinion: let the next PostFilter plugin try
                if isinstance(got, PostFilterResult):
                    candidate = PostFilterResult(
                        got.status.with_plugin(call.plugin), got.nominated_node_name
                    )
                else:
                    candidate = PostFilterResult(self._status("PostFilter", call, got))
            except PluginFailure as failure:
                result = PostFilterResult(failure.status)
                break
            if candidate.status.is_success() or candidate.status.code is Code.ERROR:
                result = candidate
                break
            if candidate.status.message():
                messages.append(candidate.status.message())
            result = candidate
        if messages and not result.status.is_success():
            diagnosis.post_filter_message = ", ".join(messages)  # kube: Status.Message()
        self.recorder.point_duration("PostFilter", result.status.code, time.perf_counter() - start)
        return result

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status:
        start = time.perf_counter()
        args = (state, pod, nodes)
        timed = state.record_plugin_metrics
        status = Status.success()
        for call in self.pre_score_calls:
            try:
                call_status = self._status(
                    "PreScore", call, self._invoke("PreScore", call, args, timed)
                )
            except PluginFailure as failure:
                status = failure.status
                break
            if call_status.is_skip():
                state.skip_score_plugins.add(call.plugin)
            elif not call_status.is_success():
                status = call_status
                break
        self.recorder.point_duration("PreScore", status.code, time.perf_counter() - start)
        return status

    def active_score_plugins(self, state: CycleState) -> list[str]:
        """Score plugins that run for this pod (PreScore did not skip them), in order."""
        return [c.plugin for c in self.score_calls if c.plugin not in state.skip_score_plugins]

    def run_raw_scores(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet
    ) -> tuple[dict[str, ScoreArray], Status]:
        """Only the Score hooks (no normalizing): raw scores per active plugin, and the status."""
        n = len(nodes)
        args = (state, pod, nodes)
        timed = state.record_plugin_metrics
        raw: dict[str, ScoreArray] = {}
        try:
            for call in self.score_calls:
                if call.plugin not in state.skip_score_plugins:
                    got = self._invoke("Score", call, args, timed)
                    raw[call.plugin] = self._scores("Score", call, got, n)
        except PluginFailure as failure:
            return raw, failure.status
        return raw, Status.success()

    def run_score(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeSet,
        raw_scores: Mapping[str, ScoreArray] | None = None,
    ) -> ScoreOutcome:
        """Score, normalize to [0, 100], weight and sum per node.

        ``raw_scores`` (every active plugin's raw scores aligned with
        ``nodes``, see :meth:`run_raw_scores`) replaces the Score calls: the
        batching cache supplies them for identical pods.
        """
        start = time.perf_counter()
        n = len(nodes)
        total = np.zeros(n, dtype=np.int64)
        outcome = ScoreOutcome(nodes, total)
        args = (state, pod, nodes)
        timed = state.record_plugin_metrics
        try:
            for call in self.score_calls:
                if call.plugin in state.skip_score_plugins:
                    continue
                if raw_scores is None:
                    got = self._invoke("Score", call, args, timed)
                    raw = self._scores("Score", call, got, n)
                else:
                    raw = raw_scores[call.plugin]
                normalized = raw
                normalize = self.normalize_calls.get(call.plugin)
                if normalize is not None:
                    normalized = raw.copy()  # keep the raw scores for `explain`
                    got = self._invoke(
                        "NormalizeScore", normalize, (state, pod, nodes, normalized), timed
                    )
                    if got is not None:
                        normalized = self._scores("NormalizeScore", normalize, got, n)
                # One reduction checks both bounds: negatives wrap to huge unsigned values.
                if n and normalized.view(np.uint64).max() > MAX_NODE_SCORE:
                    raise self._garbage(
                        "Score",
                        call,
                        normalized,
                        f"scores in [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                        f"(got {int(normalized.min())}..{int(normalized.max())})",
                    )
                weighted = normalized * call.weight if call.weight != 1 else normalized
                total += weighted
                outcome.by_plugin[call.plugin] = PluginScores(raw, normalized, weighted)
        except PluginFailure as failure:
            outcome.status = failure.status
        self.recorder.point_duration("Score", outcome.status.code, time.perf_counter() - start)
        return outcome

    def _scores(self, point: str, call: PluginCall, got: Any, n: int) -> ScoreArray:
        if isinstance(got, Status):
            status = got.with_plugin(call.plugin)
            if status.is_success():
                raise self._garbage(point, call, got, "an array of scores")
            raise PluginFailure(
                status
                if status.code is Code.ERROR
                else Status(Code.ERROR, status.reasons, call.plugin)
            )
        if type(got) is np.ndarray and got.dtype is _INT64 and got.shape == (n,):
            return got
        if isinstance(got, np.ndarray) and got.shape == (n,) and got.dtype.kind in "iu":
            return got.astype(np.int64, copy=False)
        if (
            isinstance(got, (list, tuple))
            and len(got) == n
            and all(isinstance(v, int) for v in got)
        ):
            return np.asarray(got, dtype=np.int64)
        raise self._garbage(point, call, got, f"an integer array of {n} scores")

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Reserve in order; on failure, Unreserve every Reserve plugin in reverse."""
        start = time.perf_counter()
        args = (state, pod, node_name)
        status = Status.success()
        for call in self.reserve_calls:
            try:
                got = self._invoke("Reserve", call, args, state.record_plugin_metrics)
                status = self._status("Reserve", call, got)
            except PluginFailure as failure:
                status = failure.status
            if not status.is_success():
                break
        self.recorder.point_duration("Reserve", status.code, time.perf_counter() - start)
        if not status.is_success():
            self.run_unreserve(state, pod, node_name)
        return status

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> list[Status]:
        """Unreserve in reverse order; errors are collected, never stop the rollback."""
        args = (state, pod, node_name)
        errors = []
        for call in reversed(self.unreserve_calls):
            try:
                self._invoke("Unreserve", call, args)
            except PluginFailure as failure:
                errors.append(failure.status)
        return errors

    def run_permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status, dict[str, float]]:
        """Permit: returns the overall status and, for Wait, each waiting plugin's timeout."""
        start = time.perf_counter()
        args = (state, pod, node_name)
        waits: dict[str, float] = {}
        status = Status.success()
        for call in self.permit_calls:
            try:
                call_status = self._status(
                    "Permit", call, self._invoke("Permit", call, args, state.record_plugin_metrics)
                )
            except PluginFailure as failure:
                status = failure.status
                break
            if call_status.is_wait():
                timeout = call_status.timeout if call_status.timeout is not None else 0.0
                waits[call.plugin] = min(max(timeout, 0.0), self.timeouts.permit_max)
            elif not call_status.is_success():
                status = call_status
                if call_status.is_rejected():
                    status = Status(Code.UNSCHEDULABLE, call_status.reasons, call.plugin)
                break
        if status.is_success() and waits:
            status = Status(Code.WAIT, (), next(iter(waits)))
        self.recorder.point_duration("Permit", status.code, time.perf_counter() - start)
        return status, waits

    # -- binding cycle -----------------------------------------------------------

    async def _invoke_async(
        self, point: str, call: PluginCall, args: tuple[Any, ...], limit: float
    ) -> Any:
        start = time.perf_counter()
        try:
            result = call(args)
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, limit)
        except TimeoutError as err:
            self.recorder.plugin_error(point, call.plugin)
            message = f"{point} plugin {call.plugin!r} timed out after {limit:g}s"
            raise PluginFailure(Status(Code.ERROR, (message,), call.plugin, err)) from err
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.recorder.plugin_error(point, call.plugin)
            message = f"running {point} plugin {call.plugin!r}: {type(err).__name__}: {err}"
            raise PluginFailure(Status(Code.ERROR, (message,), call.plugin, err)) from err
        code = result.code if isinstance(result, Status) else Code.SUCCESS
        self.recorder.plugin_duration(point, call.plugin, code, time.perf_counter() - start)
        return result

    def _pre_bind_limit(self, plugin: str) -> float:
        """The configured PreBind limit, or more for a plugin that declares a longer wait.

        kube-scheduler puts no limit on PreBind; VolumeBinding legitimately
        waits up to its ``bindTimeoutSeconds`` (600 s by default) for the PV
        controller, so a plugin may declare ``pre_bind_timeout`` (seconds).
        """
        declared = getattr(self.plugins.get(plugin), "pre_bind_timeout", None)  # API 1.2
        limit = self.timeouts.pre_bind
        if isinstance(declared, (int, float)) and declared > limit:
            return float(declared)
        return limit

    async def _run_binding_point(
        self, point: str, calls: list[PluginCall], limit: float, args: tuple[Any, ...]
    ) -> Status | None:
        """Run plugins until one neither succeeds nor skips; return its status.

        Rejections pass through unchanged (the pod goes back as unschedulable),
        anything else is an error, as in kube-scheduler.
        """
        for call in calls:
            if point == "PreBind":
                limit = self._pre_bind_limit(call.plugin)
            try:
                got = await self._invoke_async(point, call, args, limit)
                status = self._status(point, call, got)
            except PluginFailure as failure:
                return failure.status
            if status.is_skip():
                continue
            if point == "Bind" or not status.is_success():
                if status.is_success() or status.is_rejected() or status.code is Code.ERROR:
                    return status
                return Status(Code.ERROR, status.reasons, call.plugin)
        return None

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        args = (state, pod, node_name)
        failed = await self._run_binding_point(
            "PreBind", self.pre_bind_calls, self.timeouts.pre_bind, args
        )
        return failed or Status.success()

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """The first Bind plugin that does not Skip binds the pod."""
        args = (state, pod, node_name)
        result = await self._run_binding_point("Bind", self.bind_calls, self.timeouts.bind, args)
        if result is None:
            return Status(Code.ERROR, ("no Bind plugin bound the pod (all returned Skip)",))
        return result

    async def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> list[Status]:
        """PostBind is informational: failures are returned for logging, nothing else."""
        args = (state, pod, node_name)
        errors = []
        for call in self.post_bind_calls:
            try:
                await self._invoke_async("PostBind", call, args, self.timeouts.post_bind)
            except PluginFailure as failure:
                errors.append(failure.status)
        return errors
