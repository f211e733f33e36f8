"""Extender: kube-scheduler's HTTP extenders (``extenders:``) in our framework.

Config resolution enables this plugin in every profile when the config has
``extenders`` (its args are that list, ignorable extenders moved last as
kube does). The framework calls its filter and prioritize step between
Filter and Score for the pods an extender is interested in
(:mod:`scheduler.framework.extenders`); its Bind hook runs before the other
Bind plugins and lets the interested ``bindVerb`` extender bind the pod.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from scheduler.api import CycleState, Plugin, Status, hookimpl
from scheduler.api.status import Code
from scheduler.api.views import Pod
from scheduler.config.extenders import Extender as ExtenderConfig
from scheduler.framework.extenders import (
    ExtenderFilterOutcome,
    ExtenderFilterVerdict,
    ExtenderNodes,
    ExtenderPreemptOutcome,
    ExtenderScores,
    ExtenderVictims,
    PodsOn,
)
from scheduler.model._quote import go_quote
from scheduler.observability.logging import get_logger
from scheduler.plugins.extender import wire
from scheduler.plugins.extender.wire import ExtenderCallError

log = get_logger("scheduler.plugins.extender")


class ExtenderArgs(BaseModel):
    """The plugin's args: the config's ``extenders``, in the order kube calls them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    extenders: list[ExtenderConfig] = Field(default_factory=list)


def _requests_any(raw: Mapping[str, Any], names: frozenset[str]) -> bool:
    """kube's ``IsInterested``: a container or init container requests or limits one."""
    spec = raw.get("spec") or {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            resources = container.get("resources") or {}
            for part in ("requests", "limits"):
                if any(name in names for name in resources.get(part) or {}):
                    return True
    return False


class _One:
    """One configured extender and its connection pool."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self.name = config.name
        # The HTTP client (aiohttp) loads only when an extender is configured.
        from scheduler.plugins.extender.client import ExtenderClient

        self.client = ExtenderClient(config)
        self.managed = frozenset(r.name for r in config.managed_resources)

    def interested(self, pod: Pod) -> bool:
        return not self.managed or _requests_any(pod.raw, self.managed)

    async def filter(
        self, pod: Pod, nodes: ExtenderNodes, deadline: float
    ) -> ExtenderFilterVerdict:
        config = self.config
        body = wire.extender_args(pod.raw, nodes.names, nodes.raws, config.node_cache_capable)
        got = await self.client.send(config.filter_verb, body, deadline)
        try:
            answer = wire.parse_filter(got, config.node_cache_capable)
        except wire.ExtenderAnswerError as err:
            raise ExtenderCallError(
                f"extender {self.name} answered {config.filter_verb} with an invalid "
                f"ExtenderFilterResult: {err}"
            ) from err
        if answer.error:
            raise ExtenderCallError(answer.error)
        passed = answer.node_names or []
        if passed == nodes.names:
            passed = nodes.names  # every node passed: the caller keeps its rows
        elif config.node_cache_capable and answer.node_names is not None:
            unknown = set(passed).difference(nodes.names)
            if unknown:
                raise ExtenderCallError(
                    f"extender {self.name!r} claims a filtered node {min(unknown)!r} which is "
                    "not found in the input node list"
                )
        return ExtenderFilterVerdict(
            self.name, passed, answer.failed, answer.failed_and_unresolvable
        )

    async def prioritize(self, pod: Pod, nodes: ExtenderNodes, deadline: float) -> ExtenderScores:
        config = self.config
        body = wire.extender_args(pod.raw, nodes.names, nodes.raws, config.node_cache_capable)
        got = await self.client.send(config.prioritize_verb, body, deadline)
        try:
            pairs = wire.parse_priorities(got)
        except wire.ExtenderAnswerError as err:
            raise ExtenderCallError(
                f"extender {self.name} answered {config.prioritize_verb} with an invalid "
                f"HostPriorityList: {err}"
            ) from err
        raw: dict[str, int] = {}
        for host, score in pairs:
            raw[host] = raw.get(host, 0) + score
        return ExtenderScores(self.name, config.weight, raw)

    async def preempt(
        self,
        pod: Pod,
        victims: Mapping[str, ExtenderVictims],
        pods_on: PodsOn,
        deadline: float,
    ) -> dict[str, ExtenderVictims]:
        """kube's ``ProcessPreemption``: the extender's answer, UIDs resolved to pods.

        A node the cluster does not have, or a UID not on its node, is an
        error (kube's ``convertToVictims``), as is an answer that is not an
        ``ExtenderPreemptionResult``.
        """
        config = self.config
        sent = {
            node: ([p.raw for p in v.pods], v.num_pdb_violations) for node, v in victims.items()
        }
        body = wire.preemption_args(pod.raw, sent, config.node_cache_capable)
        got = await self.client.send(config.preempt_verb, body, deadline)
        try:
            answer = wire.parse_preemption(got)
        except wire.ExtenderAnswerError as err:
            raise ExtenderCallError(
                f"extender {self.name} answered {config.preempt_verb} with an invalid "
                f"ExtenderPreemptionResult: {err}"
            ) from err
        out: dict[str, ExtenderVictims] = {}
        for node, meta in answer.items():
            on_node = pods_on(node)
            if on_node is None:
                raise ExtenderCallError(f"nodeinfo not found for node name {go_quote(node)}")
            pods: list[Pod] = []
            for uid in meta.uids:
                found = on_node.get(uid)
                if found is None:
                    raise ExtenderCallError(
                        f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on "
                        f"node: {node}, but the pod is not found on that node"
                    )
                pods.append(found)
            out[node] = ExtenderVictims(pods, meta.num_pdb_violations)
        return out

    async def bind(self, pod: Pod, node: str) -> None:
        body = wire.binding_args(pod.namespace, pod.name, pod.uid, node)
        got = await self.client.send(self.config.bind_verb, body, None)
        try:
            error = wire.parse_binding(got)
        except wire.ExtenderAnswerError as err:
            raise ExtenderCallError(
                f"extender {self.name} answered {self.config.bind_verb} with an invalid "
                f"ExtenderBindingResult: {err}"
            ) from err
        if error:
            raise ExtenderCallError(error)


class Extender(Plugin):
    """Every configured HTTP extender of the profile (see the module docstring)."""

    api_version: ClassVar[str] = "2.0"
    name: ClassVar[str] = "Extender"
    Args: ClassVar[type[BaseModel]] = ExtenderArgs

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        parsed = args if isinstance(args, ExtenderArgs) else ExtenderArgs.model_validate(args or {})
        self.extenders = [_One(c) for c in parsed.extenders]

    # -- the framework's extender step (framework/extenders.py) -------------------

    def interested(self, pod: Pod) -> bool:
        return any(
            (e.config.filter_verb or e.config.prioritize_verb) and e.interested(pod)
            for e in self.extenders
        )

    def needs_objects(self, pod: Pod) -> bool:
        return any(
            not e.config.node_cache_capable
            and (e.config.filter_verb or e.config.prioritize_verb)
            and e.interested(pod)
            for e in self.extenders
        )

    def prioritizes(self, pod: Pod) -> bool:
        return any(e.config.prioritize_verb and e.interested(pod) for e in self.extenders)

    def filters(self, pod: Pod) -> bool:
        """Whether a ``filterVerb`` extender is interested in the pod."""
        return any(e.config.filter_verb and e.interested(pod) for e in self.extenders)

    def binds(self, pod: Pod) -> bool:
        """Whether a ``bindVerb`` extender is interested in the pod."""
        return any(e.config.bind_verb and e.interested(pod) for e in self.extenders)

    def preempts(self, pod: Pod) -> bool:
        return any(e.config.preempt_verb and e.interested(pod) for e in self.extenders)

    def preempt_budget(self) -> float:
        """Preempt calls run one after another: their timeouts add up."""
        return sum(e.config.timeout for e in self.extenders if e.config.preempt_verb)

    def step_budget(self) -> float:
        """Filters run one after another, prioritizers together: their timeouts add up."""
        filters = sum(e.config.timeout for e in self.extenders if e.config.filter_verb)
        scores = max(
            (e.config.timeout for e in self.extenders if e.config.prioritize_verb), default=0.0
        )
        return filters + scores

    async def filter_nodes(
        self, pod: Pod, nodes: ExtenderNodes, deadline: float
    ) -> ExtenderFilterOutcome:
        """kube's ``findNodesThatPassExtenders``: in order, each on what the last left."""
        outcome = ExtenderFilterOutcome(passed=nodes.names)
        current = nodes
        for ext in self.extenders:
            if not current:
                break
            if not ext.config.filter_verb or not ext.interested(pod):
                continue
            try:
                verdict = await ext.filter(pod, current, deadline)
            except ExtenderCallError as err:
                if ext.config.ignorable:
                    log.info(
                        "Skipping extender as it returned error and has ignorable flag set",
                        extender=ext.name,
                        pod=f"{pod.namespace}/{pod.name}",
                        error=str(err),
                    )
                    outcome.skipped.append((ext.name, str(err)))
                    continue
                outcome.error = str(err)
                outcome.passed = []
                return outcome
            outcome.verdicts.append(verdict)
            current = current if verdict.passed is current.names else current.only(verdict.passed)
            outcome.passed = current.names
        return outcome

    async def prioritize_nodes(
        self, pod: Pod, nodes: ExtenderNodes, deadline: float
    ) -> list[ExtenderScores]:
        """Every interested prioritizer at once; one that fails gives no score (as kube)."""
        chosen = [e for e in self.extenders if e.config.prioritize_verb and e.interested(pod)]
        got = await asyncio.gather(
            *(e.prioritize(pod, nodes, deadline) for e in chosen), return_exceptions=True
        )
        out: list[ExtenderScores] = []
        for ext, result in zip(chosen, got, strict=True):
            if isinstance(result, ExtenderScores):
                out.append(result)
            elif isinstance(result, ExtenderCallError):
                log.info(
                    "Failed to run extender's priority function. No score given by this extender.",
                    extender=ext.name,
                    pod=f"{pod.namespace}/{pod.name}",
                    error=str(result),
                )
            elif isinstance(result, BaseException):
                raise result
        return out

    async def process_preemption(
        self,
        pod: Pod,
        victims: dict[str, ExtenderVictims],
        pods_on: PodsOn,
        deadline: float,
    ) -> ExtenderPreemptOutcome:
        """kube's ``callExtenders``: in order, each on what the last left.

        An extender that fails is skipped when ignorable and fails the
        preemption otherwise; so does a node it answers without victims (an
        ignorable extender's such node is dropped).
        """
        outcome = ExtenderPreemptOutcome(victims=victims)
        for ext in self.extenders:
            if not ext.config.preempt_verb or not ext.interested(pod):
                continue
            try:
                got = await ext.preempt(pod, outcome.victims, pods_on, deadline)
            except ExtenderCallError as err:
                if ext.config.ignorable:
                    log.info(
                        "Skipped extender as it returned error and has ignorable flag set",
                        extender=ext.name,
                        pod=f"{pod.namespace}/{pod.name}",
                        error=str(err),
                    )
                    outcome.skipped.append((ext.name, str(err)))
                    continue
                return ExtenderPreemptOutcome(error=str(err), skipped=outcome.skipped)
            for node in list(got):
                if got[node].pods:
                    continue
                if ext.config.ignorable:
                    log.info(
                        "Ignored node for which the extender didn't report victims",
                        node=node,
                        extender=ext.name,
                    )
                    del got[node]
                    continue
                return ExtenderPreemptOutcome(
                    error=f"expected at least one victim pod on node {go_quote(node)}",
                    skipped=outcome.skipped,
                )
            outcome.victims = got
            if not got:
                break
        return outcome

    # -- Bind ---------------------------------------------------------------------

    @hookimpl
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """kube's ``extendersBinding``: the first interested binder binds, or fails the pod."""
        for ext in self.extenders:
            if not ext.config.bind_verb or not ext.interested(pod):
                continue
            try:
                await ext.bind(pod, node_name)
            except ExtenderCallError as err:
                if ext.config.ignorable:
                    log.info(
                        "Skipping extender in bind as it returned error and has ignorable flag set",
                        extender=ext.name,
                        pod=f"{pod.namespace}/{pod.name}",
                        error=str(err),
                    )
                    continue
                return Status(Code.ERROR, (str(err),))
            return Status.success()
        return Status(Code.SKIP)

    async def close(self) -> None:
        """Close every extender's connection pool."""
        for ext in self.extenders:
            await ext.client.close()
