"""DynamicResources: place a pod where the devices its ResourceClaims ask for can be allocated.

kube-scheduler 1.36's plugin, extension point by extension point:

- **PreEnqueue** holds a pod back until every claim it names exists (a
  template's claim once the resourceclaim controller created it and wrote
  its name into the pod's status).
- **PreFilter** resolves the claims; a claim being deleted, not owned by
  the pod, in the middle of another pod's allocation, or asking for a
  DeviceClass that does not exist makes the pod UnschedulableAndUnresolvable
  with kube's message. For the claims still to allocate it sets up one
  allocator over the ResourceSlices, DeviceClasses and every device already
  taken (allocated, written, or allocated in flight by another pod).
- **Filter**: an allocated claim must be usable on the node (its
  allocation's node selector); the others must all be allocatable there
  together. Nodes that see no ResourceSlice at all are rejected as a whole
  (one mask), the allocator runs only on the rest.
- **Score**: firstAvailable alternatives chosen earlier in their list score
  higher (kube's computeScore), normalized to [0, 100].
- **Reserve** keeps the node's allocation in flight, so the next pods see
  its devices as taken; **Unreserve** releases it (and drops the pod from
  ``reservedFor`` if PreBind got that far); **PreBind** writes the
  finalizer, ``status.allocation`` and the pod's ``reservedFor`` entry.
- **PostFilter**: when no node fits and a claim the pod uses is allocated
  where the pod cannot go, and no other pod uses it, deallocate it, so the
  next attempt can allocate it afresh.

Extended resources backed by DeviceClasses (kube's DRAExtendedResource,
see :mod:`.extended`) add a scheduler-owned *special claim* after the
pod's own: PreFilter takes the one an earlier attempt created, or starts
an in-memory one without requests; Filter gives it, node by node, one
request per container for the mapped resources the node does not
advertise (nodes whose device plugins cover everything and that have no
claim to allocate pass untouched); Reserve keeps its allocation in flight;
PreBind creates it in the API, writes allocation and ``reservedFor``, and
records the container mappings in the pod's
``status.extendedResourceClaimStatus``; Unreserve deletes a created one;
a claim left from an earlier attempt rejects every node and PostFilter
deletes it, so the next attempt starts afresh.

Rejections are UnschedulableAndUnresolvable, as kube's plugin makes them:
preemption cannot free devices.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterResult,
    Plugin,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.api.handle import Handle
from scheduler.api.results import PostFilterResult
from scheduler.model.durations import GoDuration
from scheduler.model.selectors import NodeSelector, SelectorError
from scheduler.plugins._helpers import (
    FromStore,
    PluginArgs,
    StoreIndex,
    coerce_args,
    default_normalize_score,
    meta,
    object_name,
    resource_version,
)
from scheduler.plugins.dynamicresources.allocator import AllocationTimeout, Allocator, SelectorCache
from scheduler.plugins.dynamicresources.bindingconditions import (
    ERR_BINDING_TIMEOUT,
    BindingFailed,
    claim_ready,
    claim_timed_out,
    has_binding_conditions,
)
from scheduler.plugins.dynamicresources.claims import (
    CLAIMS,
    CLASSES,
    FINALIZER,
    SLICES,
    ClaimUnusable,
    Obj,
    allocation,
    consumer_ref,
    first_available_score,
    is_reserved_for,
    key,
    owner_error,
    reserved_for,
    resolve,
    uid,
)
from scheduler.plugins.dynamicresources.diagnosis import explain_node
from scheduler.plugins.dynamicresources.extended import (
    DeviceClassResolver,
    find_extended_claim,
    is_dra_extended_resource_name,
    is_special,
    mapped_requests,
    owner_uid,
    requests_and_mappings,
    template_claim,
)
from scheduler.plugins.dynamicresources.fastpath import DeviceTable, PerNodeSet, simple_request
from scheduler.plugins.dynamicresources.pools import (
    AllocationError,
    NodeAllocationError,
    SliceIndex,
)
from scheduler.plugins.dynamicresources.tracker import ClaimTracker
from scheduler.plugins.nodeaffinity import selector_mask
from scheduler.state.nodetable import NodeSet, NodeTable
from scheduler.state.pod import PodInfo

NAME = "DynamicResources"
STATE_KEY = NAME

MSG_CANNOT_ALLOCATE = "cannot allocate all claims"
#: How often PreBind looks at the claims while devices' binding conditions are pending.
BINDING_POLL_SECONDS = 5.0
MSG_NOT_AVAILABLE = "resourceclaim not available on the node"
#: Filter, for every node, while the pod's extended-resource claim from an
#: earlier attempt still exists (PostFilter deletes it).
MSG_STALE_EXTENDED_CLAIM = "cannot schedule extended resource claim"
#: Filter: an extended resource no DeviceClass maps and the node does not list.
MSG_CANNOT_FIT = "cannot fit resource"
#: PreBind polls the assume cache this long for the claim it created (kube's
#: AssumeExtendedResourceTimeoutDefaultSeconds), every second.
ASSUME_EXTENDED_TIMEOUT_SECONDS = 120.0
ASSUME_EXTENDED_POLL_SECONDS = 1.0
#: PreBind's attempts at a claim write that loses resourceVersion races (DefaultRetry).
CONFLICT_RETRIES = 5

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


class DynamicResourcesArgs(PluginArgs):
    """kube's ``DynamicResourcesArgs`` with kube 1.36's defaults."""

    filter_timeout: GoDuration = Field(
        default=10.0,
        ge=0,
        description="How long Filter may search for an allocation on one node before the "
        "pod's attempt fails with an error (0: no limit).",
    )
    binding_timeout: GoDuration = Field(
        default=600.0,
        ge=1,
        description="How long PreBind waits for devices' binding conditions (at least 1s).",
    )


@dataclass
class _State:
    """One pod's scheduling cycle: its claims and the allocations found per node."""

    claims: list[Obj]
    #: For allocated claims: where the allocation can be used (None: anywhere).
    available_on: list[NodeSelector | None]
    #: Indices of the claims still to allocate, in the pod's order.
    to_allocate: list[int]
    allocator: Allocator | None = None
    #: Per feasible node, the allocation Filter found (None: Filter only counted
    #: devices there; Reserve searches for kube's choice).
    node_allocations: dict[str, list[Mapping[str, Any]] | None] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    #: Set at Reserve: the allocation each claim gets (index -> result).
    reserved: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    #: The last claim is the special claim for extended resources (kube's claimStore).
    extended: bool = False
    #: Its UID at PreFilter (temporary for an in-memory one): its in-flight key.
    extended_uid: str = ""
    #: The pod's DRA-extended requests (resource -> amount), when one is mapped.
    extended_requests: dict[str, int] = field(default_factory=dict)
    #: Per node from Filter: the special claim with that node's requests, and
    #: the container mappings PreBind records in the pod's status.
    node_extended: dict[str, tuple[Obj, list[dict[str, str]]]] = field(default_factory=dict)

    @property
    def num_user(self) -> int:
        return len(self.claims) - 1 if self.extended else len(self.claims)

    @property
    def extended_index(self) -> int | None:
        return len(self.claims) - 1 if self.extended else None

    def clone(self) -> _State:
        return self  # kube shares it too: nothing a what-if changes lives here


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class DynamicResources(Plugin):
    api_version: ClassVar[str] = "1.3"
    name: ClassVar[str] = NAME
    Args = DynamicResourcesArgs
    # Verdicts never look at the pods on a node.
    pods_via_requested: ClassVar[bool] = True
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (CLAIMS, SLICES, CLASSES)

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = coerce_args(DynamicResourcesArgs, args)
        #: PreBind may wait up to bindingTimeout for binding conditions; the
        #: framework honours that over its shorter default PreBind limit.
        self.pre_bind_timeout = float(self.args.binding_timeout) + 5.0
        self.tracker = ClaimTracker(lambda: handle.store(*CLAIMS))
        self.cel = SelectorCache()
        self._slices = FromStore(lambda: handle.store(*SLICES), SliceIndex)
        self._classes = FromStore(
            lambda: handle.store(*CLASSES), lambda objs: {object_name(c): c for c in objs}
        )
        self._resolver = FromStore(lambda: handle.store(*CLASSES), DeviceClassResolver)
        self._extended_claims = StoreIndex(lambda: handle.store(*CLAIMS), owner_uid)
        self._selectors: dict[str, tuple[str, NodeSelector | None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._device_table: tuple[SliceIndex, DeviceTable | None] | None = None
        self._local_mask: PerNodeSet[BoolArray] = PerNodeSet()

    # -- cluster objects, re-read only when they change --------------------------------

    def slice_index(self) -> SliceIndex:
        return self._slices.get()

    def device_classes(self) -> dict[str, Obj]:
        return self._classes.get()

    def resolver(self) -> DeviceClassResolver:
        """Extended resource name -> DeviceClass, rebuilt when the classes change."""
        return self._resolver.get()

    def _find_extended_claim(self, pod: PodInfo) -> Obj | None:
        """kube's findExtendedResourceClaim, through an index of annotated claims by owner.

        kube scans every claim of the cluster for each such pod; the index
        follows the claims that change, and the claims it names are read
        through the assume cache, as kube's list is.
        """
        found = self._extended_claims.get(pod.uid)
        if not found:
            return None
        claims = [self.tracker.get(ns, name) for ns, name in found]
        return find_extended_claim(pod, [c for c in claims if c is not None])

    def _pod_claims(self, pod: PodInfo) -> list[Obj]:
        """kube's foreachPodResourceClaim: every claim the pod uses, or ClaimUnusable."""
        out: list[Obj] = []
        for ref in resolve(pod):
            if ref.claim is None:
                continue
            claim = self.tracker.get(pod.namespace, ref.claim)
            if claim is None:
                raise ClaimUnusable(f'could not find ResourceClaim "{pod.namespace}/{ref.claim}"')
            if meta(claim).get("deletionTimestamp"):
                raise ClaimUnusable(f'resourceclaim "{ref.claim}" is being deleted')
            if ref.must_check_owner:
                problem = owner_error(pod, claim)
                if problem is not None:
                    raise ClaimUnusable(problem)
            out.append(claim)
        return out

    # -- PreEnqueue -------------------------------------------------------------------

    @hookimpl
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.resource_claims:
            return None
        try:
            self._pod_claims(pod)
        except ClaimUnusable as err:
            return Status.unresolvable(str(err))
        return None

    # -- PreFilter --------------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        wanted: dict[str, int] = {}
        if any(is_dra_extended_resource_name(name) for name in pod.requests):
            wanted = mapped_requests(pod, self.resolver())
        if not pod.resource_claims and not wanted:
            return Status.skip()
        try:
            claims = self._pod_claims(pod)
        except ClaimUnusable as err:
            return Status.unresolvable(str(err))
        extended: Obj | None = None
        if wanted:
            # A claim an earlier attempt created, else kube's in-memory one
            # with a temporary UID (its key while its allocation is in flight).
            extended = self._find_extended_claim(pod) or template_claim(pod, str(uuid.uuid4()))
            claims.append(extended)
        if not claims:
            return Status.skip()
        # Written only once PreFilter succeeds: after a rejection PostFilter must
        # find no claims, as kube's does ("no new claims to deallocate").
        data = _State(claims, [None] * len(claims), [])
        if extended is not None:
            data.extended = True
            data.extended_uid = uid(extended)
            data.extended_requests = wanted
        classes = self.device_classes()
        for index, claim in enumerate(claims):
            found = allocation(claim)
            if found is not None:
                raw_selector = found.get("nodeSelector")
                if raw_selector:
                    data.available_on[index] = self._node_selector(claim, raw_selector)
                continue
            data.to_allocate.append(index)
            if self.tracker.pending_allocation(uid(claim)) is not None:
                m = meta(claim)
                return Status.unresolvable(
                    f"resource claim {m.get('namespace')}/{m.get('name')} "
                    "is in the process of being allocated"
                )
            if claim is extended:
                continue  # no requests yet, or left for Filter to reject
            problem = _class_problem(claim, classes)
            if problem is not None:
                return problem
        if data.to_allocate:
            data.allocator = Allocator(self.slice_index(), classes, self.tracker.taken(), self.cel)
        state.write(STATE_KEY, data)
        return None

    def _node_selector(self, claim: Obj, raw: Any) -> NodeSelector | None:
        claim_key, version = key(claim), resource_version(claim)
        cached = self._selectors.get(claim_key)
        if cached is not None and cached[0] == version and version:
            return cached[1]
        try:
            selector: NodeSelector | None = NodeSelector.from_dict(
                raw, "status.allocation.nodeSelector", lazy=True
            )
        except SelectorError:
            selector = NodeSelector()  # matches nothing
        if len(self._selectors) > 100_000:
            self._selectors.clear()
        self._selectors[claim_key] = (version, selector)
        return selector

    # -- Filter -----------------------------------------------------------------------

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult | Status:
        data = state.get(STATE_KEY)
        result = FilterResult(len(nodes))
        if not isinstance(data, _State):
            return result
        # Nodes still to judge; every node is rejected for one reason at most.
        open_ = np.ones(len(nodes), dtype=np.bool_)
        # Which of the extended resources each node must get through DRA.
        need: BoolArray | None = None
        if data.extended:
            special = data.claims[-1]
            if _requests(special):
                # Created by an earlier attempt: PostFilter deletes it, the next
                # attempt starts afresh (kube's filterExtendedResources).
                return result.reject(open_, MSG_STALE_EXTENDED_CLAIM, UNRESOLVABLE)
            need, cannot_fit = self._extended_need(data.extended_requests, nodes)
            result.reject(cannot_fit, MSG_CANNOT_FIT, UNRESOLVABLE)
            open_ &= ~cannot_fit
            if allocation(special) is not None:
                need = None
            if data.num_user == 0:
                # Device plugins cover everything there: nothing to allocate.
                open_ &= need.any(axis=1) if need is not None else False
        # kube collects the claims unusable on a node, runs the allocator there
        # anyway, and says "not available" only where the allocation succeeded
        # (or there was nothing to allocate): that is also where PostFilter
        # may free such a claim.
        unavailable = np.zeros(len(nodes), dtype=np.bool_)
        claim_misses: list[tuple[int, BoolArray]] = []
        for index, selector in enumerate(data.available_on):
            if selector is None:
                continue
            misses = ~selector_mask(selector, nodes.view()) & open_
            if misses.any():
                claim_misses.append((index, misses))
                unavailable |= misses
        for index, claim in enumerate(data.claims):
            if allocation(claim) is None or not has_binding_conditions((claim,)):
                continue
            try:
                blocked = not claim_ready(claim) and claim_timed_out(
                    claim, self.args.binding_timeout
                )
            except BindingFailed:
                blocked = True
            if blocked and open_.any():
                # Its devices never became ready: PostFilter may deallocate it.
                claim_misses.append((index, open_.copy()))
                unavailable |= open_
        allocator = data.allocator
        if allocator is None:
            return self._reject_unavailable(result, data, unavailable, claim_misses)
        groups = self._claim_groups(data, pod, need, open_)
        table = nodes.table
        names = table.names
        rows = nodes.rows.tolist()
        summary = allocator.slices.nodes_with_devices()
        cannot = np.zeros(len(nodes), dtype=np.bool_)
        invalid_pools: str | None = None
        invalid = np.zeros(len(nodes), dtype=np.bool_)
        timeout = self.args.filter_timeout
        for members, claims, variant in groups:
            fast = self._fast_counts(allocator, claims) if variant is None else None
            if summary.non_local or not all(_requests(c) for c in claims):
                # A claim without requests allocates anywhere; other slices may
                # reach any node: only the allocator can tell.
                reachable = members
            else:
                # No slice but node-local ones: nodes without one see no device.
                reachable = members & self._local_rows(allocator.slices, table)[nodes.rows]
            cannot |= members & ~reachable
            searched = np.flatnonzero(reachable)
            if fast is not None:
                # Judged by the counts (the devices themselves are searched at Reserve).
                device_table, counts, wanted = fast
                positions = device_table.positions(table)[nodes.rows[searched]]
                judged = positions >= 0
                fits = np.zeros(len(searched), dtype=np.bool_)
                fits[judged] = counts[positions[judged]] >= wanted
                cannot[searched[judged & ~fits]] = True
                data.node_allocations.update(
                    dict.fromkeys([names[rows[k]] for k in searched[fits].tolist()])
                )
                searched = searched[~judged]
            for k in searched.tolist():
                row = rows[k]
                node_name = names[row]
                node = {"metadata": {"name": node_name, "labels": table.node_info(row).labels}}
                deadline = time.monotonic() + timeout if timeout > 0 else None
                try:
                    found = allocator.allocate(node, claims, deadline=deadline)
                except AllocationTimeout:
                    return Status.error_status(
                        f"node {node_name}: timed out trying to allocate devices"
                    )
                except NodeAllocationError as err:
                    # kube's ErrFailedAllocationOnNode: this node only.
                    invalid[k] = True
                    invalid_pools = str(err)
                    continue
                except AllocationError as err:
                    return Status.error_status(str(err))
                if found is None or len(found) != len(claims):
                    cannot[k] = True
                    continue
                data.node_allocations[node_name] = found
                if variant is not None:
                    data.node_extended[node_name] = variant
        if cannot.any():
            result.reject(cannot, MSG_CANNOT_ALLOCATE, UNRESOLVABLE)
        if invalid_pools is not None:
            result.reject(invalid, invalid_pools, UNRESOLVABLE)
        unavailable &= ~(cannot | invalid)
        for k in np.flatnonzero(unavailable).tolist():
            data.node_allocations.pop(names[rows[k]], None)
            data.node_extended.pop(names[rows[k]], None)
        return self._reject_unavailable(result, data, unavailable, claim_misses)

    @staticmethod
    def _reject_unavailable(
        result: FilterResult,
        data: _State,
        unavailable: BoolArray,
        claim_misses: list[tuple[int, BoolArray]],
    ) -> FilterResult:
        """Reject where an allocated claim cannot be used; remember those claims for PostFilter."""
        if unavailable.any():
            for index, misses in claim_misses:
                if (misses & unavailable).any():
                    data.unavailable.add(index)
            result.reject(unavailable, MSG_NOT_AVAILABLE, UNRESOLVABLE)
        return result

    def _local_rows(self, slices: SliceIndex, table: NodeTable) -> BoolArray:
        """Which rows of ``table`` are nodes with node-local slices (kept per slice set and
        node set: Filter asks for every pod, and testing each sampled name cost milliseconds)."""
        local = slices.nodes_with_devices().local_nodes

        def make(names: list[str]) -> BoolArray:
            return np.fromiter((name in local for name in names), dtype=np.bool_, count=len(names))

        return self._local_mask.get(table, make, slices)

    def _fast_counts(
        self, allocator: Allocator, claims: list[Obj]
    ) -> tuple[DeviceTable, IntArray, int] | None:
        """Free usable devices per node, when the claims are one plain request."""
        wanted = simple_request(claims)
        if wanted is None:
            return None
        device_class = allocator.classes.get(wanted.class_name)
        if device_class is None:
            return None
        slices = allocator.slices
        if self._device_table is None or self._device_table[0] is not slices:
            self._device_table = (slices, DeviceTable.build(slices))
        device_table = self._device_table[1]
        if device_table is None:
            return None
        mask = device_table.selectable(
            device_class, wanted.selectors, self.cel, slices.verdicts, allocator.device_input
        )
        if mask is None:
            return None
        return (
            device_table,
            device_table.free_counts(mask, allocator.allocated.devices),
            wanted.count,
        )

    def _extended_need(
        self, wanted: Mapping[str, int], nodes: NodeSet
    ) -> tuple[BoolArray, BoolArray]:
        """Per node and extended resource (sorted by name): must DRA provide it there?

        kube's filterExtendedResources: a resource a DeviceClass maps comes
        from DRA where the node's allocatable has none of it (a device plugin
        covers it elsewhere, NodeResourcesFit checks that); a resource no class
        maps must at least be listed by the node, or the pod cannot fit.
        """
        resolver = self.resolver()
        table = nodes.table
        rows = nodes.rows
        names = sorted(wanted)
        need = np.zeros((len(nodes), len(names)), dtype=np.bool_)
        cannot_fit = np.zeros(len(nodes), dtype=np.bool_)
        for j, name in enumerate(names):
            col = table.resource_index.get(name)
            if col is None:
                none = np.ones(len(nodes), dtype=np.bool_)
            else:
                none = table.allocatable[:, col].take(rows) == 0
            if resolver.get(name) is not None:
                need[:, j] = none
                continue
            for k in np.flatnonzero(none & ~cannot_fit).tolist():
                # Zero allocatable: listed (fit's business) or not at all.
                cannot_fit[k] = not _lists_resource(table.node_info(int(rows[k])).raw, name)
        return need, cannot_fit

    def _claim_groups(
        self, data: _State, pod: PodInfo, need: BoolArray | None, candidates: BoolArray
    ) -> list[tuple[BoolArray, list[Obj], tuple[Obj, list[dict[str, str]]] | None]]:
        """The candidates grouped by the claims the allocator gets for them.

        Without a special claim to allocate that is one group. With one, each
        node gets the claim with requests for the resources it lacks (kube
        builds it per node); nodes lacking the same resources share it.
        """
        claims = [data.claims[i] for i in data.to_allocate]
        special_index = data.extended_index
        if need is None or special_index not in data.to_allocate:
            return [(candidates, claims, None)]
        position = data.to_allocate.index(special_index)
        resources = sorted(data.extended_requests)
        weights = np.left_shift(1, np.arange(len(resources), dtype=np.int64))
        codes = need.astype(np.int64) @ weights
        groups: list[tuple[BoolArray, list[Obj], tuple[Obj, list[dict[str, str]]] | None]] = []
        resolver = self.resolver()
        for code in np.unique(codes[candidates]).tolist():
            members = candidates & (codes == code)
            lacking = [r for j, r in enumerate(resources) if code >> j & 1]
            requests, mappings = requests_and_mappings(pod.raw, lacking, resolver)
            node_claim: dict[str, Any] = _deep_copy(data.claims[special_index])
            node_claim["spec"] = {"devices": {"requests": requests}} if requests else {}
            node_claims = list(claims)
            node_claims[position] = node_claim
            groups.append((members, node_claims, (node_claim, mappings)))
        return groups

    # -- Score ------------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State) or not any(
            r.get("firstAvailable")
            for c in data.claims
            for r in (c.get("spec") or {}).get("devices", {}).get("requests") or ()
        ):
            # kube's Score counts firstAvailable choices only: all zero without them.
            return Status.skip()
        return None

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> IntArray | Status:
        data = state.get(STATE_KEY)
        out = np.zeros(len(nodes), dtype=np.int64)
        if not isinstance(data, _State):
            return out
        names = nodes.table.names
        for k, row in enumerate(nodes.rows.tolist()):
            found = data.node_allocations.get(names[row])
            if found is None and data.to_allocate:
                continue
            new = iter(found or ())
            total = 0
            for claim in data.claims:
                current = allocation(claim)
                total += first_available_score(
                    claim, current if current is not None else next(new, None)
                )
            out[k] = total
        return out

    @hookimpl
    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: NodeSet, scores: IntArray
    ) -> IntArray:
        return default_normalize_score(scores, reverse=False)

    # -- Reserve / Unreserve ----------------------------------------------------------

    @hookimpl
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State) or not data.to_allocate:
            return None
        try:
            found = self.node_allocation(data, node_name)
        except AllocationError as err:
            return Status.error_status(str(err))
        if not found:
            if data.to_allocate == [data.extended_index]:
                return None  # only extended resources, all from device plugins here
            return Status.error_status("claim allocation not found for node")
        if len(found) != len(data.to_allocate):
            return Status.error_status(
                f"internal error, have {len(found)} allocations, "
                f"{len(data.to_allocate)} claims to allocate, "
                f"want {len(data.to_allocate)} claims"
            )
        for index, result in zip(data.to_allocate, found, strict=True):
            claim = data.claims[index]
            if index == data.extended_index:
                # The node's variant of the special claim, with its requests.
                claim = data.node_extended[node_name][0]
            data.reserved[index] = result
            self.tracker.signal_pending(uid(claim), _allocated_copy(claim, result))
        return None

    def explain_rejected_nodes(
        self, state: CycleState, pod: PodInfo, node_names: list[str]
    ) -> dict[str, list[str]]:
        """For `explain`: per rejected node, why its devices did not fit each request."""
        data = state.get(STATE_KEY)
        if not isinstance(data, _State) or data.allocator is None:
            return {}
        claims = [data.claims[i] for i in data.to_allocate]
        table = self.handle.table
        out: dict[str, list[str]] = {}
        for name in node_names:
            row = table.row_of(name)
            labels = table.node_info(row).labels if row is not None else {}
            lines = explain_node(
                data.allocator, {"metadata": {"name": name, "labels": labels}}, claims
            )
            if lines:
                out[name] = lines
        return out

    def node_allocation(self, data: _State, node_name: str) -> list[Mapping[str, Any]] | None:
        """The allocation Reserve keeps for ``node_name`` (what PreBind writes).

        Where Filter only counted free devices, the allocator searches now, for
        that one node, so the devices are kube's choice.
        """
        found = data.node_allocations.get(node_name)
        if found is None and node_name in data.node_allocations and data.allocator is not None:
            row = self.handle.table.row_of(node_name)
            labels = self.handle.table.node_info(row).labels if row is not None else {}
            claims = [data.claims[i] for i in data.to_allocate]
            node = {"metadata": {"name": node_name, "labels": labels}}
            found = data.allocator.allocate(node, claims)
            data.node_allocations[node_name] = found
        return found

    @hookimpl
    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return
        for index, claim in enumerate(data.claims[: data.num_user]):
            if index in data.reserved and self.tracker.maybe_remove_pending(uid(claim)):
                self.tracker.restore(claim)
            if allocation(claim) is not None and is_reserved_for(pod, claim):
                self._spawn(self._unreserve_claim(claim, pod))
        if data.extended:
            # kube's unreserveExtendedResourceClaim.
            special = data.claims[-1]
            if self.tracker.maybe_remove_pending(data.extended_uid):
                self.tracker.restore(special)
            if not is_special(special):
                # PreBind created it: delete it, or it would hold its devices.
                self._spawn(self._delete_claim(special, pod))
        data.reserved.clear()

    async def _delete_claim(self, claim: Obj, pod: PodInfo) -> None:
        """kube's deleteClaim: drop the builtin finalizer (an update), then delete."""
        client = self.handle.client
        current: dict[str, Any] = _deep_copy(claim)
        try:
            for attempt in range(CONFLICT_RETRIES):
                if attempt:
                    current = _deep_copy(await client.request("GET", _claim_path(claim)))
                finalizers = current["metadata"].get("finalizers") or []
                current["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
                try:
                    await client.request("PUT", _claim_path(claim), body=current)
                    break
                except Exception as err:
                    if not _is_conflict(err) or attempt == CONFLICT_RETRIES - 1:
                        raise
            await client.request("DELETE", _claim_path(claim))
        except Exception as err:  # a later attempt finds the claim and deletes it again
            self.handle.logger.warning(
                "delete failed", pod=pod.key, resourceclaim=key(claim), error=str(err)
            )

    async def _unreserve_claim(self, claim: Obj, pod: PodInfo) -> None:
        """Drop the pod from ``reservedFor`` (a strategic-merge patch, as kube sends)."""
        m = meta(claim)
        patch = {
            "metadata": {"uid": m.get("uid")},
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]},
        }
        try:
            await self.handle.client.request(
                "PATCH",
                _claim_path(claim) + "/status",
                body=patch,
                content_type="application/strategic-merge-patch+json",
            )
        except Exception as err:  # retried when the pod is scheduled again
            self.handle.logger.warning(
                "unreserve failed", pod=pod.key, resourceclaim=key(claim), error=str(err)
            )

    def _spawn(self, coro: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            coro.close()
            return
        task: asyncio.Task[None] = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def background_tasks(self) -> frozenset[asyncio.Task[None]]:
        return frozenset(self._tasks)

    # -- PreBind ----------------------------------------------------------------------

    @hookimpl
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return None
        for index, claim in enumerate(data.claims):
            if is_reserved_for(pod, claim):
                continue
            try:
                if index == data.extended_index:
                    if index not in data.reserved and not _requests(claim):
                        continue  # device plugins cover the extended resources
                    data.claims[index] = await self._bind_extended(pod, node_name, data)
                else:
                    data.claims[index] = await self._bind_claim(
                        pod, claim, data.reserved.get(index)
                    )
            except _BindError as err:
                return Status.error_status(str(err))
        if has_binding_conditions(data.claims):
            return await self._await_binding_conditions(pod, node_name, data)
        return None

    async def _await_binding_conditions(
        self, pod: PodInfo, node_name: str, data: _State
    ) -> Status | None:
        """kube's wait for device binding conditions: poll the claims until ready."""
        self.handle.record_event(
            pod,
            "Normal",
            "BindingConditionsPending",
            f"waiting for binding conditions for device on node {node_name}",
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.args.binding_timeout
        while True:
            ready = True
            for index, claim in enumerate(data.claims):
                m = meta(claim)
                current = self.tracker.get(str(m.get("namespace")), str(m.get("name")))
                if current is None:
                    return Status.error_status(f'could not find ResourceClaim "{key(claim)}"')
                data.claims[index] = current
                try:
                    if claim_ready(current):
                        continue
                except BindingFailed as err:
                    return Status.error_status(str(err))
                if claim_timed_out(current, self.args.binding_timeout):
                    return Status.error_status(f"{ERR_BINDING_TIMEOUT}: claim={m.get('name')}")
                ready = False
            if ready:
                return None
            if loop.time() >= deadline:
                return Status.error_status(f"{ERR_BINDING_TIMEOUT}: context deadline exceeded")
            await asyncio.sleep(BINDING_POLL_SECONDS)

    async def _bind_extended(self, pod: PodInfo, node_name: str, data: _State) -> Obj:
        """kube's bindClaim for the special claim: create it, write it, record the mappings."""
        index = len(data.claims) - 1
        claim = data.claims[index]
        result = data.reserved.get(index)
        node_variant = data.node_extended.get(node_name)
        mappings = node_variant[1] if node_variant is not None else []
        if is_special(claim):
            if node_variant is None:
                if result is not None:
                    self.tracker.maybe_remove_pending(data.extended_uid)
                raise _BindError(f"extended resource claim not found for node {node_name}")
            node_claim = node_variant[0]
            try:
                claim = await self._create_extended_claim(node_claim)
            except _BindError:
                if result is not None:
                    self.tracker.maybe_remove_pending(data.extended_uid)
                raise
            data.claims[index] = claim  # Unreserve deletes it from now on
        written = await self._bind_claim(pod, claim, result, pending_uid=data.extended_uid)
        data.claims[index] = written
        if not mappings:
            raise _BindError(
                f"nil or empty request mappings, no update of pod {pod.key} "
                "ExtendedResourceClaimStatus"
            )
        status = {
            "extendedResourceClaimStatus": {
                "requestMappings": mappings,
                "resourceClaimName": meta(written).get("name"),
            }
        }
        try:
            await self.handle.client.request(
                "PATCH",
                f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status",
                body={"status": status},
                content_type="application/strategic-merge-patch+json",
            )
        except Exception as err:
            raise _BindError(f"update pod {pod.key} ExtendedResourceClaimStatus: {err}") from err
        return written

    async def _create_extended_claim(self, node_claim: Obj) -> Obj:
        """kube's createExtendedResourceClaimInAPI: the node's variant, named by the server."""
        body: dict[str, Any] = _deep_copy(node_claim)
        body["metadata"].pop("name", None)
        body["metadata"].pop("uid", None)
        body.pop("status", None)
        namespace = body["metadata"].get("namespace")
        try:
            created = await self.handle.client.request(
                "POST",
                f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims",
                body=body,
            )
        except Exception as err:
            raise _BindError(f"create claim for extended resources {namespace}/: {err}") from err
        if not isinstance(created, Mapping):
            raise _BindError(f"create claim for extended resources {namespace}/: no object")
        return created

    async def _await_assumed(self, written: Obj) -> bool:
        """kube's waitForExtendedClaimInAssumeCache: until the informer has the new claim."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ASSUME_EXTENDED_TIMEOUT_SECONDS
        m = meta(written)
        while True:
            if self.tracker.assume_written(written):
                return True
            if self.tracker.cache.api_object(str(m.get("namespace")), str(m.get("name"))):
                return False  # there, but newer than ours: nothing to assume
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(ASSUME_EXTENDED_POLL_SECONDS)

    async def _bind_claim(
        self,
        pod: PodInfo,
        claim: Obj,
        result: Mapping[str, Any] | None,
        *,
        pending_uid: str | None = None,
    ) -> Obj:
        """kube's bindClaim: write the allocation (if ours) and the pod's reservation.

        ``pending_uid`` is set for the special claim: its allocation is in
        flight under the temporary UID, and the claim was only just created,
        so PreBind waits for the informer to see it before letting go.
        """
        client = self.handle.client
        claim_uid = pending_uid or uid(claim)
        written: Obj | None = None
        try:
            current: dict[str, Any] = _deep_copy(claim)
            for attempt in range(CONFLICT_RETRIES):
                if attempt:
                    try:
                        fetched = await client.request("GET", _claim_path(claim))
                    except Exception as err:
                        raise _BindError(
                            f"get updated claim {key(claim)} after conflict: {err}"
                        ) from err
                    current = _deep_copy(fetched)
                if meta(current).get("deletionTimestamp"):
                    raise _BindError(f"claim {key(claim)} got deleted in the meantime")
                try:
                    written = await self._write_claim(pod, current, result)
                    break
                except _Conflict:
                    continue
            else:
                raise _BindError(
                    f"add reservation to claim {key(claim)}: the object has been "
                    "modified; please apply your changes to the latest version and try again"
                )
        finally:
            if pending_uid is not None:
                if written is not None:
                    await self._await_assumed(written)
                if result is not None:
                    self.tracker.maybe_remove_pending(claim_uid)
            else:
                assumed = written is not None and self.tracker.assume_written(written)
                if result is not None:
                    self.tracker.maybe_remove_pending(claim_uid, force=assumed)
        assert written is not None
        return written

    async def _write_claim(
        self, pod: PodInfo, claim: dict[str, Any], result: Mapping[str, Any] | None
    ) -> Obj:
        client = self.handle.client
        status = claim.setdefault("status", {})
        if result is not None:
            if status.get("allocation") is not None:
                raise _BindError(f"claim {key(claim)} got allocated elsewhere in the meantime")
            finalizers = claim["metadata"].setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
                try:
                    updated = await client.request("PUT", _claim_path(claim), body=claim)
                except Exception as err:
                    if _is_conflict(err):
                        raise _Conflict from err
                    raise _BindError(f"add finalizer to claim {key(claim)}: {err}") from err
                claim = _deep_copy(updated)
                status = claim.setdefault("status", {})
            status["allocation"] = _deep_copy(result)
        status.setdefault("reservedFor", [])
        status["reservedFor"] = [*(status.get("reservedFor") or []), consumer_ref(pod)]
        if status.get("allocation") is None:
            raise _BindError(f"claim {key(claim)} got deallocated elsewhere in the meantime")
        if not status["allocation"].get("allocationTimestamp"):
            status["allocation"]["allocationTimestamp"] = _now()
        try:
            updated = await client.request("PUT", _claim_path(claim) + "/status", body=claim)
        except Exception as err:
            if _is_conflict(err):
                raise _Conflict from err
            what = (
                "add allocation and reservation to" if result is not None else "add reservation to"
            )
            raise _BindError(f"{what} claim {key(claim)}: {err}") from err
        return updated if isinstance(updated, Mapping) else claim

    # -- PostFilter -------------------------------------------------------------------

    @hookimpl
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Any
    ) -> PostFilterResult | Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State):
            return Status.unschedulable("no new claims to deallocate")
        stale = data.extended and not is_special(data.claims[-1])
        for index in sorted(data.unavailable):
            claim = data.claims[index]
            if index == data.extended_index:
                if stale:
                    break  # deleted below
                continue
            users = reserved_for(claim)
            if not users or (len(users) == 1 and str(users[0].get("uid") or "") == pod.uid):
                self._spawn(self._deallocate(claim, pod))
                return Status.unschedulable("deallocation of ResourceClaim completed")
        if stale:
            # The special claim of an earlier attempt: delete it, start afresh.
            self._spawn(self._delete_claim(data.claims[-1], pod))
            return Status.unschedulable("deletion of ResourceClaim completed")
        return Status.unschedulable("still not schedulable")

    async def _deallocate(self, claim: Obj, pod: PodInfo) -> None:
        body = _deep_copy(claim)
        status = body.setdefault("status", {})
        for field_ in ("reservedFor", "allocation", "devices"):
            status.pop(field_, None)
        try:
            await self.handle.client.request("PUT", _claim_path(claim) + "/status", body=body)
        except Exception as err:
            self.handle.logger.warning(
                "deallocation failed", pod=pod.key, resourceclaim=key(claim), error=str(err)
            )

    # -- queueing hints ---------------------------------------------------------------

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(
                ClusterEvent("ResourceClaim", ActionType.ADD | ActionType.UPDATE),
                self._claim_changed,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE), self._pod_changed
            ),
            ClusterEventWithHint(ClusterEvent("DeviceClass", ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent("ResourceSlice", ActionType.ADD | ActionType.UPDATE)),
        ]

    def _claim_changed(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """kube's isSchedulableAfterClaimChange."""
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        try:
            claims = self._pod_claims(pod)
        except ClaimUnusable:
            return QueueingHint.SKIP
        if isinstance(old, Mapping) and allocation(old) is not None and allocation(new) is None:
            return QueueingHint.QUEUE  # devices were freed
        if not any(uid(c) == uid(new) for c in claims):
            return QueueingHint.SKIP
        if not isinstance(old, Mapping):
            return QueueingHint.QUEUE
        if (old.get("status") or {}) == (new.get("status") or {}):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def _pod_changed(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """kube's isSchedulableAfterPodChange: the pod's own claims got created."""
        raw = getattr(new, "raw", new)
        if not isinstance(raw, Mapping) or str((raw.get("metadata") or {}).get("uid") or "") != (
            pod.uid
        ):
            return QueueingHint.SKIP
        changed = new if isinstance(new, PodInfo) else PodInfo.from_dict(dict(raw))
        try:
            self._pod_claims(changed)
        except ClaimUnusable:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


class _BindError(Exception):
    """A claim could not be written at PreBind (kube's bindClaim error text)."""


class _Conflict(Exception):
    """A claim write lost a resourceVersion race: read the claim again and retry."""


def _is_conflict(err: Exception) -> bool:
    return getattr(err, "status", None) == 409


def _class_problem(claim: Obj, classes: Mapping[str, Obj]) -> Status | None:
    """kube's validateDeviceClass over a claim's requests."""
    m = meta(claim)
    shown = f"{m.get('namespace')}/{m.get('name')}"
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
    for request in requests:
        request_name = str(request.get("name") or "")
        exactly = request.get("exactly")
        alternatives: Sequence[Mapping[str, Any]] = request.get("firstAvailable") or ()
        if exactly is not None:
            checks = [(str(exactly.get("deviceClassName") or ""), request_name)]
        elif alternatives:
            checks = [
                (str(sub.get("deviceClassName") or ""), f"{request_name}/{sub.get('name')}")
                for sub in alternatives
            ]
        else:
            return Status.unresolvable(
                f"resource claim {shown}, request {request_name}: unknown request type"
            )
        for class_name, shown_request in checks:
            if not class_name:
                return Status.error_status(f"request {shown_request}: unsupported request type")
            if class_name not in classes:
                return Status.unresolvable(
                    f"request {shown_request}: device class {class_name} does not exist"
                )
    return None


def _lists_resource(node: Obj, name: str) -> bool:
    """Whether the node's allocatable (or capacity, when that is empty) names ``name``."""
    status = node.get("status") or {}
    listed = status.get("allocatable") or status.get("capacity") or {}
    return name in listed


def _requests(claim: Obj) -> list[Any]:
    return list(((claim.get("spec") or {}).get("devices") or {}).get("requests") or ())


def _allocated_copy(claim: Obj, result: Mapping[str, Any]) -> Obj:
    copy: dict[str, Any] = _deep_copy(claim)
    finalizers = copy["metadata"].setdefault("finalizers", [])
    if FINALIZER not in finalizers:
        finalizers.append(FINALIZER)
    copy.setdefault("status", {})["allocation"] = result
    return copy


def _deep_copy(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {k: _deep_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_deep_copy(v) for v in obj]
    return obj


def _claim_path(claim: Obj) -> str:
    m = meta(claim)
    return (
        f"/apis/resource.k8s.io/v1/namespaces/{m.get('namespace')}/resourceclaims/{m.get('name')}"
    )
