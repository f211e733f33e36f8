"""Turning observations into figures, and figures into a table or JSON.

Throughput is scheduler_perf's ``SchedulingThroughput``, computed as its
``throughputCollector`` does (see :func:`throughput_samples`), reported as
average and percentiles of the samples. Latency is creation -> bound as seen
by one watch (both stamps on the harness's clock). Decision time and attempt duration come from each
scheduler's own ``/metrics`` histograms (the same metric names in both),
estimated within buckets as Prometheus' ``histogram_quantile`` does.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import re
import statistics
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

SCHEDULER_LABELS = {"ours": "ours", "kube": "kube-scheduler"}
#: The peer's column when it is scheduler-plugins' kube-scheduler (the batch workloads).
PLUGINS_PEER_LABEL = "sched-plugins"

# Targets from the issue: ours / kube-scheduler throughput.
TARGET_RATIO = {
    "SchedulingBasic": 1.0,
    # The volume workloads' target, set when kube's volume plugins joined our profile.
    "SchedulingInTreePVs": 1.5,
    "SchedulingMigratedInTreePVs": 1.5,
    "SchedulingCSIPVs": 1.5,
    "PreemptionPVs": 1.5,
    # The DRA workloads' target, set when the DynamicResources plugin joined our profile.
    "SchedulingWithResourceClaimTemplate": 1.5,
    "SteadyStateClusterResourceClaimTemplate": 1.5,
}
DEFAULT_TARGET_RATIO = 0.8
#: Issue #22's targets for large clusters, by the smallest node count they apply
#: to (the largest that fits wins): ours / kube-scheduler on every workload.
LARGE_CLUSTER_TARGETS: tuple[tuple[int, float], ...] = ((15000, 2.0), (65000, 1.5))
#: Issue #21's target when both schedulers call one no-op HTTP extender per pod.
EXTENDER_TARGET_RATIO = 1.5
DECISION_P50_TARGET_MS = 1.0
MEMORY_TARGET_MIB = 1024.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def throughput_samples(
    start: float, bound_times: Sequence[float], end: float | None = None
) -> list[float]:
    """Pods/s samples exactly as scheduler_perf's ``throughputCollector`` takes them.

    A tick every second from ``start`` (the measured phase's start) until
    ``end`` (when its last pod was scheduled; default: the last bound time).
    The first tick that sees a scheduled pod only sets the baseline; a tick
    that sees no new pod is skipped, and the next one that does records
    ``new pods / time since the last recorded tick`` once per interval it
    covers. Pods scheduled after the last tick fall in no sample. A run too
    short for two such ticks yields no samples (scheduler_perf warns
    "Failed to measure SchedulingThroughput").
    """
    if not bound_times:
        return []
    ordered = sorted(bound_times)
    stop = ordered[-1] if end is None else end
    samples: list[float] = []
    started = False
    last_count = 0
    last_tick = start
    skipped = 0
    index = 0  # pods bound up to the current tick: ordered[:index]
    tick = 1
    while start + tick <= stop:
        now = start + tick
        tick += 1
        while index < len(ordered) and ordered[index] <= now:
            index += 1
        if index == 0:
            continue
        if not started:
            started, last_count, last_tick = True, index, now
            continue
        new = index - last_count
        if new == 0:
            skipped += 1
            continue
        samples.extend([new / (now - last_tick)] * (skipped + 1))
        last_count, last_tick, skipped = index, now, 0
    return samples


def summarize(values: Sequence[float]) -> dict[str, float | None]:
    return {
        "avg": statistics.fmean(values) if values else None,
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
    }


# -- Prometheus text ----------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def histogram(
    text: str, name: str, match: Mapping[str, str] | None = None
) -> list[tuple[float, float]]:
    """Cumulative ``(le, count)`` buckets of `name`, summed over series matching `match`."""
    buckets: dict[float, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m is None or m.group(1) != f"{name}_bucket":
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        if match and any(labels.get(k) != v for k, v in match.items()):
            continue
        le = labels.get("le")
        if le is None:
            continue
        bound = math.inf if le == "+Inf" else float(le)
        buckets[bound] = buckets.get(bound, 0.0) + float(m.group(3))
    return sorted(buckets.items())


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """Prometheus' estimate: linear within the bucket holding the q-th observation."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if math.isinf(upper):
                return lower
            if count == below:
                return upper
            return lower + (upper - lower) * (rank - below) / (count - below)
        lower, below = upper, count
    return lower


# -- machine ---------------------------------------------------------------------------------


def _proc_field(path: str, prefix: str, parse: Callable[[str], T], default: T) -> T:
    """The first line of a /proc file starting with ``prefix``, parsed (default if absent)."""
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(prefix):
                return parse(line)
    return default


def machine() -> dict[str, Any]:
    model = _proc_field("/proc/cpuinfo", "model name", lambda v: v.split(":", 1)[1].strip(), "")
    mem_total_kib = _proc_field("/proc/meminfo", "MemTotal:", lambda v: int(v.split()[1]), 0)
    try:
        nproc = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip())
    except (OSError, ValueError):
        nproc = os.cpu_count() or 0
    return {
        "nproc": nproc,
        "cpu_model": model,
        "memory_gib": round(mem_total_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


# -- rendering -------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:,.{digits}f}"
    return str(value)


def ratio(ours: float | None, kube: float | None) -> float | None:
    """ours / kube-scheduler (for throughput higher is better; for the rest, lower)."""
    if ours is None or kube is None or ours <= 0 or kube <= 0:
        return None
    return ours / kube


def _get(result: Mapping[str, Any] | None, *path: str) -> Any:
    value: Any = result
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


# (label, path into a scheduler's result, digits)
ROWS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("throughput avg (pods/s)", ("throughput", "avg"), 1),
    ("throughput p50 (pods/s)", ("throughput", "p50"), 1),
    ("throughput p90 (pods/s)", ("throughput", "p90"), 1),
    ("throughput p99 (pods/s)", ("throughput", "p99"), 1),
    ("overall (pods/s)", ("overall_pods_per_second",), 1),
    ("create->bound p50 (ms)", ("latency_ms", "p50"), 0),
    ("create->bound p99 (ms)", ("latency_ms", "p99"), 0),
    ("attempt p50 (ms, /metrics)", ("attempt_ms", "p50_ms"), 2),
    ("attempt p99 (ms, /metrics)", ("attempt_ms", "p99_ms"), 2),
    ("algorithm p50 (ms, /metrics)", ("algorithm_ms", "p50_ms"), 2),
    ("algorithm p99 (ms, /metrics)", ("algorithm_ms", "p99_ms"), 2),
    ("pods scheduled", ("scheduled",), 0),
    ("gangs complete", ("gangs", "complete"), 0),
    ("gangs partial", ("gangs", "partial"), 0),
    ("all gangs bound (s)", ("gangs", "all_bound_seconds"), 2),
    ("gang members' span p50 (ms)", ("gangs", "member_span_ms_p50"), 0),
    ("quota peak used/max (cpu)", ("quota", "peak_used_over_max"), 3),
    ("quota over-max bindings", ("quota", "over_max_events"), 0),
    ("CPU s, measured phase", ("process", "cpu_seconds_measured"), 1),
    ("CPU s, whole run", ("process", "cpu_seconds"), 1),
    ("API server CPU s, measured phase", ("server_cpu_seconds_measured",), 1),
    ("harness CPU s, measured phase", ("harness_cpu_seconds_measured",), 1),
    ("extender CPU s, measured phase", ("extender_cpu_seconds_measured",), 1),
    ("RSS after sync (MiB)", ("process", "rss_after_sync_mib"), 0),
    ("peak RSS (MiB)", ("process", "peak_rss_mib"), 0),
)


def render_workload(result: Mapping[str, Any]) -> str:
    schedulers: Mapping[str, Any] = result.get("schedulers") or {}
    names = [n for n in ("ours", "kube") if n in schedulers]
    header = f"{result['workload']} [{result['backend']}] - {result['description']}"
    lines = [header, "-" * len(header)]
    peer = result.get("peer")
    if peer:
        lines.append(f"  peer ({PLUGINS_PEER_LABEL}): {peer}'s kube-scheduler")
    labels = dict(SCHEDULER_LABELS, kube=PLUGINS_PEER_LABEL) if peer else SCHEDULER_LABELS
    cols = [labels[n] for n in names]
    both = len(names) == 2
    lines.append(
        f"  {'':30}" + "".join(f"{c:>16}" for c in cols) + (f"{'ours/kube':>12}" if both else "")
    )
    for label, path, digits in ROWS:
        values = [_get(schedulers.get(n), *path) for n in names]
        if all(v is None for v in values) or (path == ("scheduled",) and not peer):
            continue
        row = f"  {label:30}" + "".join(f"{_fmt(v, digits):>16}" for v in values)
        if both:
            r = ratio(values[0], values[1])
            row += f"{_fmt(r, 2):>12}"
        lines.append(row)
    for n in names:
        outcome = schedulers[n]
        if outcome.get("error"):
            lines.append(f"  {labels[n]}: FAILED: {outcome['error']}")
        elif outcome.get("incomplete"):
            lines.append(
                f"  {labels[n]}: INCOMPLETE: {outcome.get('scheduled')} of "
                f"{outcome.get('expected')} measured pods scheduled before the timeout"
            )
        if _get(outcome, "gangs", "partial"):
            lines.append(f"  {labels[n]}: PARTIAL GANGS: {outcome['gangs']['partial']}")
        for violation in _get(outcome, "quota", "violations") or ():
            lines.append(f"  {labels[n]}: QUOTA EXCEEDED: {violation}")
    if result.get("profile"):
        lines.append(f"  profile of ours: {result['profile']}")
    return "\n".join(lines)


def target_verdicts(result: Mapping[str, Any], extender: bool = False) -> list[str]:
    """Targets from the issue for one workload: 'met' / 'MISSED' lines.

    ``extender``: both schedulers called the no-op extender (the run's
    ``--extender``), which has a target of its own.
    """
    out: list[str] = []
    name = result["workload"]
    schedulers: Mapping[str, Any] = result.get("schedulers") or {}
    ours = schedulers.get("ours")
    kube = schedulers.get("kube")
    nodes = _get(result, "params", "nodes") or 0
    large = nodes >= LARGE_CLUSTER_TARGETS[0][0]
    if name == "Memory":
        rss = _get(ours, "process", "rss_after_sync_mib")
        kube_rss = _get(kube, "process", "rss_after_sync_mib")
        if large and rss is not None and kube_rss is not None:
            verdict = "met" if rss <= kube_rss else "MISSED"
            out.append(
                f"{name}: RSS after sync {rss:.0f} MiB (target <= kube-scheduler's "
                f"{kube_rss:.0f} MiB): {verdict}"
            )
        elif rss is not None:
            verdict = "met" if rss <= MEMORY_TARGET_MIB else "MISSED"
            out.append(f"{name}: RSS after sync {rss:.0f} MiB (target <= 1024 MiB): {verdict}")
        return out
    r = ratio(_get(ours, "throughput", "avg"), _get(kube, "throughput", "avg"))
    target = TARGET_RATIO.get(name, DEFAULT_TARGET_RATIO)
    for threshold, large_target in LARGE_CLUSTER_TARGETS:
        if nodes >= threshold:
            target = large_target
    if extender:
        target = EXTENDER_TARGET_RATIO
    if r is not None:
        verdict = "met" if r >= target else "MISSED"
        out.append(f"{name}: throughput ours/kube {r:.2f} (target >= {target:.1f}): {verdict}")
    attempt = _get(ours, "attempt_ms", "p50_ms")
    kube_attempt = _get(kube, "attempt_ms", "p50_ms")
    if large and attempt is not None and kube_attempt is not None:
        verdict = "met" if attempt <= kube_attempt else "MISSED"
        out.append(
            f"{name}: attempt p50 {attempt:.2f} ms (target <= kube-scheduler's "
            f"{kube_attempt:.2f} ms): {verdict}"
        )
    return out


def render(report: Mapping[str, Any]) -> str:
    m = report["machine"]
    parts = [
        f"machine: {m['nproc']} cpus ({m['cpu_model']}), {m['memory_gib']} GiB; "
        f"python {m['python']}; kernel {m['kernel']}",
        "",
    ]
    verdicts: list[str] = []
    for result in report["results"]:
        parts.append(render_workload(result))
        parts.append("")
        verdicts += target_verdicts(result, bool(report.get("extender")))
    summary = summary_table(report)
    if summary:
        parts += ["summary (throughput avg, pods/s):", summary, ""]
    if verdicts:
        parts += ["targets:", *(f"  {v}" for v in verdicts)]
    return "\n".join(parts).rstrip() + "\n"


def summary_table(report: Mapping[str, Any]) -> str:
    """A Markdown table: one row per workload, ours and kube-scheduler side by side."""
    rows = [r for r in report["results"] if r["workload"] != "Memory"]
    if not rows:
        return ""
    lines = [
        "| workload | backend | size | ours avg | kube avg | ours/kube | ours p50 / p90 / p99 "
        "| kube p50 / p90 / p99 | ours CPU s | kube CPU s |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        s = r.get("schedulers") or {}
        o, k = s.get("ours"), s.get("kube")

        def pct(x: Any) -> str:
            return " / ".join(_fmt(_get(x, "throughput", q), 0) for q in ("p50", "p90", "p99"))

        rr = ratio(_get(o, "throughput", "avg"), _get(k, "throughput", "avg"))
        lines.append(
            f"| {r['workload']} | {r['backend']} | {r['description']} "
            f"| {_fmt(_get(o, 'throughput', 'avg'), 1)} | {_fmt(_get(k, 'throughput', 'avg'), 1)} "
            f"| {_fmt(rr, 2)} | {pct(o)} | {pct(k)} "
            f"| {_fmt(_get(o, 'process', 'cpu_seconds_measured'), 1)} "
            f"| {_fmt(_get(k, 'process', 'cpu_seconds_measured'), 1)} |"
        )
    return "\n".join(lines)
