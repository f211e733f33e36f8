"""VolumeBinding: place a pod where its PersistentVolumeClaims can be satisfied.

kube-scheduler's plugin, decision for decision:

- **PreFilter** skips pods without claims (``persistentVolumeClaim`` or
  generic ``ephemeral`` volumes). A missing claim, a lost one, one being
  deleted, an ephemeral claim not owned by the pod, or an unbound claim
  whose class binds immediately makes the pod UnschedulableAndUnresolvable
  with kube's message.
- **Filter**: a bound claim's PV must admit the node (node affinity). An
  unbound claim of a WaitForFirstConsumer class is matched to the smallest
  available PV of its class that fits (size, access modes, volume mode,
  selector, node affinity), or else must be provisionable there: a real
  provisioner, the class's ``allowedTopologies``, and, when the CSIDriver
  asks for capacity tracking, a CSIStorageCapacity with room that the node
  can reach. A claim already pinned by ``volume.kubernetes.io/selected-node``
  fits only that node.
- **Score** (when ``shape`` is configured; kube's StorageCapacityScoring):
  the utilization of the matched PVs, or of the provisioning capacity,
  through the shape.
- **Reserve** assumes the PV ``claimRef`` and claim annotation in memory so
  the next pods see them; **PreBind** writes them as kube-scheduler does
  and waits (polling each second, up to ``bindTimeoutSeconds``) for the PV
  controller to complete every binding; **Unreserve** drops the assumptions.

Filter is vectorized: each candidate PV's node affinity is one mask over
the nodes, and the greedy per-node choice of kube's ``findMatchingVolumes``
is a first-true pick over those masks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from scheduler.api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterResult,
    Plugin,
    QuantityError,
    QueueingHint,
    Resource,
    Status,
    hookimpl,
)
from scheduler.api.handle import Handle
from scheduler.api.results import MAX_NODE_SCORE
from scheduler.model.selectors import LabelSelector, SelectorError
from scheduler.plugins._helpers import PluginArgs, coerce_args
from scheduler.plugins.assumecache import AssumeCache, AssumeError, newer
from scheduler.plugins.noderesources.allocation import broken_linear
from scheduler.plugins.noderesources.fit import UtilizationShapePoint
from scheduler.plugins.volumes.objects import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    CLAIM_LOST,
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    NO_PROVISIONER,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    VOLUME_AVAILABLE,
    WAIT_FOR_FIRST_CONSUMER,
    NodeAffinityCache,
    Obj,
    annotations_of,
    check_access_modes,
    claim_class,
    claim_hint,
    claim_ref,
    claim_request,
    ephemeral_owner_error,
    is_fully_bound,
    is_volume_bound_to_claim,
    label_selector_mask,
    labels,
    meta,
    name,
    quantity,
    resource_version,
    spec,
    topology_terms_mask,
    volume_capacity,
    volume_class,
    volume_mode,
)
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo

NAME = "VolumeBinding"
STATE_KEY = NAME
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
#: How often PreBind looks whether the PV controller completed the bindings (kube: 1 s).
BIND_POLL_SECONDS = 1.0

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


class VolumeBindingArgs(PluginArgs):
    """kube's ``VolumeBindingArgs``.

    ``shape`` turns on storage capacity scoring (kube's StorageCapacityScoring
    feature gate, alpha and off by default in 1.36): without it the plugin
    does not score, as kube-scheduler does by default.
    """

    bind_timeout_seconds: int = Field(
        default=600,
        ge=0,
        description="How long PreBind waits for the PV controller to complete the "
        "pod's volume bindings.",
    )
    shape: list[UtilizationShapePoint] | None = None

    @model_validator(mode="after")
    def _shape_increasing(self) -> VolumeBindingArgs:
        shape = self.shape or []
        for i in range(1, len(shape)):
            if shape[i].utilization <= shape[i - 1].utilization:
                raise ValueError(
                    f"shape[{i}].utilization: Invalid value: {shape[i].utilization}: "
                    "utilization values must be sorted in increasing order"
                )
        return self


@dataclass(slots=True)
class _Delayed:
    """An unbound claim of a WaitForFirstConsumer class, with what it may use."""

    pvc: Obj
    request: Fraction
    klass: str
    selected_node: str | None
    #: PVs it may bind to, smallest first (node affinity still to check per node).
    candidates: list[Obj] = field(default_factory=list)


@dataclass(slots=True)
class _Claims:
    bound: list[Obj]
    delayed: list[_Delayed]


@dataclass(slots=True)
class _NodeVolumes:
    """What the pod's delayed claims get on one node (kube's PodVolumes)."""

    static: list[tuple[Obj, Obj]]  # (pv, pvc)
    provisions: list[tuple[Obj, Obj | None]]  # (pvc, CSIStorageCapacity used)


class _State:
    """PreFilter's reading of the claims and Filter's choice for every node it saw."""

    def __init__(self, claims: _Claims | None) -> None:
        self.claims = claims
        self.capacity = 0
        # Per delayed claim and table row: index of the chosen PV among the
        # claim's candidates, -1 for none (then it is provisioned, if feasible).
        self.chosen: IntArray = np.zeros((0, 0), dtype=np.int64)
        # Per delayed claim and row: index of the CSIStorageCapacity used, -1 none.
        self.capacity_used: IntArray = np.zeros((0, 0), dtype=np.int64)
        self.capacities: list[Obj] = []
        self.has_static = False
        self.all_bound = False
        self.reserved: _NodeVolumes | None = None

    def clone(self) -> _State:
        return self  # read-mostly, as kube's stateData

    def ensure(self, rows: int, claims: int) -> None:
        if self.capacity < rows:
            chosen = np.full((claims, rows), -1, dtype=np.int64)
            used = np.full((claims, rows), -1, dtype=np.int64)
            if self.capacity:
                chosen[:, : self.capacity] = self.chosen
                used[:, : self.capacity] = self.capacity_used
            self.chosen, self.capacity_used, self.capacity = chosen, used, rows

    def node_volumes(self, row: int) -> _NodeVolumes:
        claims = self.claims
        static: list[tuple[Obj, Obj]] = []
        provisions: list[tuple[Obj, Obj | None]] = []
        if claims is None or row >= self.capacity:
            return _NodeVolumes(static, provisions)
        for i, delayed in enumerate(claims.delayed):
            pick = int(self.chosen[i, row])
            if pick >= 0:
                static.append((delayed.candidates[pick], delayed.pvc))
            else:
                used = int(self.capacity_used[i, row])
                provisions.append((delayed.pvc, self.capacities[used] if used >= 0 else None))
        return _NodeVolumes(static, provisions)


class _Unschedulable(Exception):
    """PreFilter's UnschedulableAndUnresolvable verdict, with kube's message."""


def _claim_names(pod: PodInfo) -> list[tuple[str, bool]]:
    ephemeral = set(pod.ephemeral_pvc_names)
    return [(claim, claim in ephemeral) for claim in pod.pvc_names]


class VolumeBinding(Plugin):
    api_version: ClassVar[str] = "1.2"
    name: ClassVar[str] = NAME
    Args = VolumeBindingArgs
    # Verdicts never look at the pods on a node: what-ifs may edit `requested` only.
    pods_via_requested: ClassVar[bool] = True
    watches: ClassVar[tuple[tuple[str, str, str], ...]] = (
        PVCS,
        PVS,
        STORAGE_CLASSES,
        CSI_NODES,
        CSI_DRIVERS,
        CSI_STORAGE_CAPACITIES,
    )

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = coerce_args(VolumeBindingArgs, args)
        #: PreBind waits up to bindTimeoutSeconds; the framework honours that
        #: over its shorter default PreBind limit.
        self.pre_bind_timeout = float(self.args.bind_timeout_seconds) + 5.0
        self.pvcs = AssumeCache(lambda: handle.store(*PVCS))
        self.pvs = AssumeCache(lambda: handle.store(*PVS))
        self.affinity = NodeAffinityCache()
        self._shape: list[tuple[int, int]] | None = (
            [
                (p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE))
                for p in self.args.shape
            ]
            if self.args.shape
            else None
        )

    # -- reading the pod's claims ---------------------------------------------------

    def _classes(self) -> Any:
        return self.handle.store(*STORAGE_CLASSES)

    def _check_claims_exist(self, pod: PodInfo) -> None:
        """kube's podHasPVCs: every claim exists, is usable and, if ephemeral, is ours."""
        for claim, ephemeral in _claim_names(pod):
            pvc = self.pvcs.api_object(pod.namespace, claim)
            if pvc is None:
                if ephemeral:
                    raise _Unschedulable(
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{claim}"'
                    )
                raise _Unschedulable(f'persistentvolumeclaim "{claim}" not found')
            status = pvc.get("status")
            if isinstance(status, Mapping) and status.get("phase") == CLAIM_LOST:
                raise _Unschedulable(
                    f'persistentvolumeclaim "{claim}" bound to non-existent persistentvolume '
                    f'"{spec(pvc).get("volumeName") or ""}"'
                )
            if meta(pvc).get("deletionTimestamp"):
                raise _Unschedulable(f'persistentvolumeclaim "{claim}" is being deleted')
            if ephemeral:
                error = ephemeral_owner_error(pod, pvc)
                if error is not None:
                    raise _Unschedulable(error)

    def _delay_binding(self, pvc: Obj) -> bool:
        """kube's IsDelayBindingMode; a class without a binding mode is an error."""
        klass = claim_class(pvc)
        if not klass:
            return False
        sc = self._classes().get("", klass)
        if sc is None:
            return False
        mode = sc.get("volumeBindingMode")
        if mode is None:
            raise _Unschedulable(f'VolumeBindingMode not set for StorageClass "{klass}"')
        return bool(mode == WAIT_FOR_FIRST_CONSUMER)

    def _pod_claims(self, pod: PodInfo) -> _Claims:
        """kube's GetPodVolumeClaims, plus the PVs each delayed claim may bind to."""
        bound: list[Obj] = []
        delayed: list[_Delayed] = []
        immediate = False
        for claim, _ in _claim_names(pod):
            pvc = self.pvcs.get(pod.namespace, claim)
            if pvc is None:
                raise _Unschedulable(f'persistentvolumeclaim "{claim}" not found')
            if is_fully_bound(pvc):
                bound.append(pvc)
                continue
            if self._delay_binding(pvc) and not spec(pvc).get("volumeName"):
                try:
                    request = claim_request(pvc)
                except (QuantityError, ValueError) as err:
                    raise _Unschedulable(
                        f'persistentvolumeclaim "{claim}" has an invalid storage request: {err}'
                    ) from None
                selected = annotations_of(pvc).get(ANN_SELECTED_NODE)
                delayed.append(
                    _Delayed(
                        pvc,
                        request,
                        claim_class(pvc),
                        str(selected) if selected is not None else None,
                    )
                )
            else:
                immediate = True
        if immediate:
            raise _Unschedulable(UNBOUND_IMMEDIATE)
        if delayed:
            by_class: dict[str, list[Obj]] = {}
            for pv in self.pvs.list():
                by_class.setdefault(volume_class(pv), []).append(pv)
            for item in delayed:
                item.candidates = self._candidates(item, by_class.get(item.klass, []))
            # kube matches smaller claims first (byPVCSize).
            delayed.sort(key=lambda d: d.request)
        return _Claims(bound, delayed)

    def _candidates(self, item: _Delayed, pvs: list[Obj]) -> list[Obj]:
        """The node-independent half of kube's FindMatchingVolume, smallest PV first.

        A PV already bound to the claim is its only candidate (kube returns it
        whenever its node affinity fits, and nothing otherwise).
        """
        pvc = item.pvc
        pvc_spec = spec(pvc)
        try:
            selector = (
                LabelSelector.from_dict(pvc_spec["selector"], "spec.selector")
                if isinstance(pvc_spec.get("selector"), Mapping)
                else None
            )
        except SelectorError as err:
            raise _Unschedulable(
                f"error creating internal label selector for claim: "
                f"{meta(pvc).get('namespace')}/{name(pvc)}: {err}"
            ) from None
        claim_mode = volume_mode(pvc_spec)
        claim_vac = pvc_spec.get("volumeAttributesClassName") or ""
        fitting: list[tuple[Fraction, int, Obj]] = []
        for index, pv in enumerate(pvs):
            pv_spec = spec(pv)
            if claim_ref(pv) is not None and not is_volume_bound_to_claim(pv, pvc):
                continue
            try:
                size = volume_capacity(pv)
            except (QuantityError, ValueError):
                continue
            if size < item.request or volume_mode(pv_spec) != claim_mode:
                continue
            if (pv_spec.get("volumeAttributesClassName") or "") != claim_vac:
                continue
            if meta(pv).get("deletionTimestamp"):
                continue
            if is_volume_bound_to_claim(pv, pvc):
                return [pv]
            status = pv.get("status")
            phase = status.get("phase") if isinstance(status, Mapping) else None
            if phase != VOLUME_AVAILABLE:
                continue
            if selector is not None and not selector.matches(labels(pv)):
                continue
            if not check_access_modes(pvc, pv):
                continue
            fitting.append((size, index, pv))
        fitting.sort(key=lambda t: (t[0], t[1]))
        return [pv for _, _, pv in fitting]

    # -- PreFilter / Filter ---------------------------------------------------------

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        if not pod.pvc_names:
            state.write(STATE_KEY, _State(None))
            return Status.skip()
        try:
            self._check_claims_exist(pod)
            claims = self._pod_claims(pod)
        except _Unschedulable as verdict:
            return Status.unresolvable(str(verdict))
        state.write(STATE_KEY, _State(claims))
        return None

    def _state(self, state: CycleState, pod: PodInfo) -> _State:
        data = state.get(STATE_KEY)
        if isinstance(data, _State):
            return data
        raise RuntimeError(f"{NAME}: no PreFilter state for pod {pod.key}")

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> FilterResult | Status:
        data = self._state(state, pod)
        claims = data.claims
        n = len(nodes)
        result = FilterResult(n)
        if claims is None or n == 0:
            return result
        node_conflict = np.zeros(n, dtype=np.bool_)
        pv_missing = False
        done = np.zeros(n, dtype=np.bool_)
        for pvc in claims.bound:
            pv = self.pvs.get("", str(spec(pvc).get("volumeName") or ""))
            if pv is None:
                pv_missing = True
                break
            fails = ~self.affinity.mask(pv, nodes) & ~done
            node_conflict |= fails
            done |= fails
        bind_conflict = np.zeros(n, dtype=np.bool_)
        no_space = np.zeros(n, dtype=np.bool_)
        if claims.delayed:
            got = self._filter_delayed(data, claims.delayed, nodes)
            if isinstance(got, Status):
                return got
            bind_conflict, no_space = got
        result.reject_unresolvable(node_conflict, ERR_REASON_NODE_CONFLICT)
        result.reject_unresolvable(bind_conflict, ERR_REASON_BIND_CONFLICT)
        result.reject_unresolvable(no_space, ERR_REASON_NOT_ENOUGH_SPACE)
        if pv_missing:
            result.reject_unresolvable(np.ones(n, dtype=np.bool_), ERR_REASON_PV_NOT_EXIST)
        return result

    def _filter_delayed(
        self, data: _State, delayed: Sequence[_Delayed], nodes: NodeSet
    ) -> tuple[BoolArray, BoolArray] | Status:
        """kube's FindPodVolumes for unbound delayed claims, for every node at once.

        Returns the nodes with a bind conflict and those without enough free
        storage, and records each node's choice in ``data``.
        """
        n = len(nodes)
        rows = nodes.rows
        table = nodes.table
        data.ensure(max(table.capacity, int(rows.max()) + 1), len(delayed))
        names = np.asarray(nodes.names, dtype=object)
        # A claim already pinned to a node fits no other (kube returns early).
        pinned_elsewhere = np.zeros(n, dtype=np.bool_)
        for item in delayed:
            if item.selected_node is not None:
                pinned_elsewhere |= names != item.selected_node
        live = ~pinned_elsewhere
        # Static matching, smallest claims first, each PV used once per node.
        chosen = np.full((len(delayed), n), -1, dtype=np.int64)
        taken: dict[int, BoolArray] = {}  # id(pv) -> nodes where an earlier claim took it
        unmatched = np.zeros((len(delayed), n), dtype=np.bool_)
        for i, item in enumerate(delayed):
            if item.selected_node is not None:
                unmatched[i] = live  # to provision, on its node only
                continue
            open_ = live.copy()
            for j, pv in enumerate(item.candidates):
                if not open_.any():
                    break
                fits = open_ & self.affinity.mask(pv, nodes)
                used = taken.get(id(pv))
                if used is not None:
                    fits &= ~used
                if fits.any():
                    chosen[i, fits] = j
                    taken[id(pv)] = fits if used is None else used | fits
                    open_ &= ~fits
            unmatched[i] = open_
        # Provisioning for what static matching left (pinned claims first, as kube).
        order = [i for i, d in enumerate(delayed) if d.selected_node is not None] + [
            i for i, d in enumerate(delayed) if d.selected_node is None
        ]
        decided = ~live
        bind_conflict = np.zeros(n, dtype=np.bool_)
        no_space = np.zeros(n, dtype=np.bool_)
        used_capacity = np.full((len(delayed), n), -1, dtype=np.int64)
        data.capacities = []
        capacity_ids: dict[int, int] = {}
        for i in order:
            applies = unmatched[i] & ~decided
            if not applies.any():
                continue
            got = self._provisionable(delayed[i], nodes)
            if isinstance(got, Status):
                return got
            topology_ok, capacity_pick = got
            fail_topology = applies & ~topology_ok
            bind_conflict |= fail_topology
            decided |= fail_topology
            ok = applies & topology_ok
            if capacity_pick is not None:
                picks, objects = capacity_pick
                fail_space = ok & (picks < 0)
                no_space |= fail_space
                decided |= fail_space
                for k, obj in enumerate(objects):
                    index = capacity_ids.get(id(obj))
                    if index is None:
                        index = capacity_ids[id(obj)] = len(data.capacities)
                        data.capacities.append(obj)
                    used_capacity[i, ok & (picks == k)] = index
        bind_conflict |= pinned_elsewhere
        data.chosen[:, rows] = chosen
        data.capacity_used[:, rows] = used_capacity
        if (chosen >= 0).any():
            data.has_static = True
        return bind_conflict, no_space

    def _provisionable(
        self, item: _Delayed, nodes: NodeSet
    ) -> tuple[BoolArray, tuple[IntArray, list[Obj]] | None] | Status:
        """kube's checkVolumeProvisions for one claim: where it can be provisioned.

        Returns the nodes whose topology allows it and, when the driver tracks
        capacity, for each node the index of the first CSIStorageCapacity with
        room it can reach (-1: none), with those objects.
        """
        n = len(nodes)
        claim = f"{meta(item.pvc).get('namespace')}/{name(item.pvc)}"
        if not item.klass:
            return Status.error_status(f'no class for claim "{claim}"')
        sc = self._classes().get("", item.klass)
        if sc is None:
            return Status.error_status(f'failed to find storage class "{item.klass}"')
        provisioner = str(sc.get("provisioner") or "")
        if not provisioner or provisioner == NO_PROVISIONER:
            return np.zeros(n, dtype=np.bool_), None
        topology_ok = topology_terms_mask(sc.get("allowedTopologies"), nodes)
        requests = spec(item.pvc).get("resources")
        if not isinstance(requests, Mapping) or "storage" not in (requests.get("requests") or {}):
            return topology_ok, None
        driver = self.handle.store(*CSI_DRIVERS).get("", provisioner)
        if driver is None or spec(driver).get("storageCapacity") is not True:
            return topology_ok, None
        size = item.request
        picks = np.full(n, -1, dtype=np.int64)
        objects: list[Obj] = []
        for capacity in self.handle.store(*CSI_STORAGE_CAPACITIES).list(None):
            if capacity.get("storageClassName") != sc_name(sc):
                continue
            limit = capacity.get("maximumVolumeSize")
            if limit is None:
                limit = capacity.get("capacity")
            if limit is None:
                continue
            try:
                if parse_limit(limit) < size:
                    continue
            except (QuantityError, ValueError):
                continue
            topology = capacity.get("nodeTopology")
            if not isinstance(topology, Mapping):
                continue  # nil topology: no node has access
            try:
                selector = LabelSelector.from_dict(topology, "nodeTopology")
            except SelectorError:
                continue
            reach = label_selector_mask(selector, nodes) & (picks < 0)
            if reach.any():
                picks[reach] = len(objects)
                objects.append(capacity)
        return topology_ok, (picks, objects)

    # -- Score ----------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        data = state.get(STATE_KEY)
        if self._shape is None or not isinstance(data, _State) or data.claims is None:
            return Status.skip()
        return None

    @hookimpl
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> IntArray:
        data = self._state(state, pod)
        n = len(nodes)
        claims = data.claims
        if self._shape is None or claims is None or not claims.delayed or data.capacity == 0:
            return np.zeros(n, dtype=np.int64)
        rows = nodes.rows
        chosen = data.chosen[:, rows]
        used = data.capacity_used[:, rows]
        static_nodes = (chosen >= 0).any(axis=0)
        # Per class: requested and capacity over the nodes (kube's classResourceMap).
        requested: dict[str, npt.NDArray[np.float64]] = {}
        capacity: dict[str, npt.NDArray[np.float64]] = {}
        present: dict[str, BoolArray] = {}
        for i, item in enumerate(claims.delayed):
            req = float(item.request)
            for j, pv in enumerate(item.candidates):
                hit = static_nodes & (chosen[i] == j)
                if not hit.any():
                    continue
                klass = volume_class(pv)
                self._add(requested, capacity, present, klass, n)
                requested[klass][hit] += req
                capacity[klass][hit] += float(volume_capacity(pv))
                present[klass] |= hit
            for k, obj in enumerate(data.capacities):
                hit = ~static_nodes & (chosen[i] < 0) & (used[i] == k)
                if not hit.any():
                    continue
                klass = item.klass
                self._add(requested, capacity, present, klass, n)
                requested[klass][hit] += req
                raw_capacity = obj.get("capacity")
                capacity[klass][hit] = (
                    float(quantity({"storage": raw_capacity})) if raw_capacity else 0.0
                )
                present[klass] |= hit
        total = np.zeros(n, dtype=np.int64)
        classes = np.zeros(n, dtype=np.int64)
        for klass, mask in present.items():
            req_sum, cap_sum = requested[klass], capacity[klass]
            safe = np.where(cap_sum > 0, cap_sum, 1.0)
            utilization = np.where(
                (cap_sum == 0) | (req_sum > cap_sum),
                MAX_UTILIZATION,
                (req_sum * MAX_UTILIZATION) // safe,
            ).astype(np.int64)
            total += np.where(mask, broken_linear(utilization, self._shape), 0)
            classes += mask
        out = np.zeros(n, dtype=np.int64)
        scored = classes > 0
        out[scored] = np.floor(total[scored] / classes[scored] + 0.5).astype(np.int64)
        return out

    @staticmethod
    def _add(
        requested: dict[str, Any], capacity: dict[str, Any], present: dict[str, Any], k: str, n: int
    ) -> None:
        if k not in requested:
            requested[k] = np.zeros(n, dtype=np.float64)
            capacity[k] = np.zeros(n, dtype=np.float64)
            present[k] = np.zeros(n, dtype=np.bool_)

    # -- Reserve / PreBind / Unreserve ----------------------------------------------

    def _all_bound(self, pod: PodInfo) -> bool:
        for claim, ephemeral in _claim_names(pod):
            pvc = self.pvcs.get(pod.namespace, claim)
            if pvc is None or not is_fully_bound(pvc):
                return False
            if ephemeral and ephemeral_owner_error(pod, pvc) is not None:
                return False
        return True

    @hookimpl
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State) or data.claims is None:
            return None
        data.all_bound = False
        data.reserved = None
        if self._all_bound(pod):
            data.all_bound = True
            return None
        row = self.handle.table.row_of(node_name)
        volumes = data.node_volumes(row if row is not None else data.capacity)
        assumed_pvs: list[Obj] = []
        assumed_pvcs: list[Obj] = []
        try:
            static: list[tuple[Obj, Obj]] = []
            for pv, pvc in volumes.static:
                new_pv, dirty = _bind_volume_to_claim(pv, pvc)
                if dirty:
                    self.pvs.assume(new_pv)
                    assumed_pvs.append(new_pv)
                static.append((new_pv, pvc))
            provisions: list[tuple[Obj, Obj | None]] = []
            for pvc, used in volumes.provisions:
                new_pvc = _with_annotation(pvc, ANN_SELECTED_NODE, node_name)
                self.pvcs.assume(new_pvc)
                assumed_pvcs.append(new_pvc)
                provisions.append((new_pvc, used))
        except AssumeError as err:
            for obj in assumed_pvs:
                self.pvs.restore(obj)
            for obj in assumed_pvcs:
                self.pvcs.restore(obj)
            return Status.error_status(str(err))
        data.reserved = _NodeVolumes(static, provisions)
        return None

    @hookimpl
    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State) or data.reserved is None:
            return
        for pv, _ in data.reserved.static:
            self.pvs.restore(pv)
        for pvc, _ in data.reserved.provisions:
            self.pvcs.restore(pvc)

    @hookimpl
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _State) or data.claims is None or data.all_bound:
            return None
        volumes = data.reserved
        if volumes is None:
            return Status.error_status(f'no pod volume found for node "{node_name}"')
        client = self.handle.client
        written_pvs: list[Obj] = []
        written_pvcs: list[Obj] = []
        for pv, _ in volumes.static:
            written = await client.request("PUT", f"/api/v1/persistentvolumes/{name(pv)}", body=pv)
            written_pvs.append(written if isinstance(written, Mapping) else pv)
        for pvc, _ in volumes.provisions:
            namespace = meta(pvc).get("namespace")
            written = await client.request(
                "PUT",
                f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name(pvc)}",
                body=pvc,
            )
            written_pvcs.append(written if isinstance(written, Mapping) else pvc)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.args.bind_timeout_seconds
        while True:
            done = self._bindings_done(pod, node_name, written_pvs, volumes, written_pvcs)
            if isinstance(done, Status):
                return done
            if done:
                return None
            if loop.time() >= deadline:
                return Status.error_status("binding volumes: context deadline exceeded")
            await asyncio.sleep(BIND_POLL_SECONDS)

    def _bindings_done(
        self,
        pod: PodInfo,
        node_name: str,
        written_pvs: list[Obj],
        volumes: _NodeVolumes,
        written_pvcs: list[Obj],
    ) -> bool | Status:
        """kube's checkBindings: True when complete, a Status when it cannot complete."""
        table = self.handle.table
        row = table.row_of(node_name)
        if row is None:
            return Status.error_status(f'failed to get node "{node_name}": not found')
        node_labels = table.node_info(row).labels
        if self.handle.store("", "v1", "pods").get(pod.namespace, pod.name) is None:
            return Status.error_status("pod does not exist any more")
        for written, (_, pvc) in zip(written_pvs, volumes.static, strict=True):
            pv = self.pvs.api_object("", name(written))
            api_pvc = self.pvcs.api_object(str(meta(pvc).get("namespace") or ""), name(pvc))
            if pv is None or api_pvc is None:
                missing = "persistentvolume" if pv is None else "persistentvolumeclaim"
                return Status.error_status(f"failed to check binding: {missing} not found")
            if newer(written, pv):
                return False
            selector = self.affinity.selector(pv)
            if selector is not None and not selector.matches(node_labels, node_name):
                return Status.error_status(
                    f'pv "{name(pv)}" node affinity doesn\'t match node "{node_name}": '
                    "no matching NodeSelectorTerms"
                )
            ref = claim_ref(pv)
            if ref is None or not ref.get("uid"):
                return Status.error_status(f'ClaimRef got reset for pv "{name(pv)}"')
            if not is_fully_bound(api_pvc):
                return False
        for written in written_pvcs:
            api_claim = self.pvcs.api_object(
                str(meta(written).get("namespace") or ""), name(written)
            )
            if api_claim is None:
                return Status.error_status(
                    "failed to check provisioning pvc: persistentvolumeclaim not found"
                )
            if newer(written, api_claim):
                return False
            if annotations_of(api_claim).get(ANN_SELECTED_NODE) != node_name:
                return Status.error_status(f'provisioning failed for PVC "{name(api_claim)}"')
            volume_name = str(spec(api_claim).get("volumeName") or "")
            if volume_name:
                provisioned = self.pvs.api_object("", volume_name)
                if provisioned is None:
                    return False
                selector = self.affinity.selector(provisioned)
                if selector is not None and not selector.matches(node_labels, node_name):
                    return Status.error_status(
                        f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": '
                        "no matching NodeSelectorTerms"
                    )
            if not is_fully_bound(api_claim):
                return False
        return True

    # -- queueing hints -------------------------------------------------------------

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("StorageClass", ActionType.ADD | ActionType.UPDATE),
                _storage_class_changed,
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE),
                claim_hint(ephemeral=True),
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent("CSINode", ActionType.ADD | ActionType.UPDATE), _csinode_changed
            ),
            ClusterEventWithHint(ClusterEvent("CSIDriver", ActionType.UPDATE), _csidriver_changed),
            ClusterEventWithHint(
                ClusterEvent("CSIStorageCapacity", ActionType.ADD | ActionType.UPDATE),
                _capacity_grew,
            ),
        ]


# -- helpers ------------------------------------------------------------------------


def sc_name(sc: Obj) -> str:
    return name(sc)


def parse_limit(value: Any) -> Fraction:
    return quantity({"storage": value})


def _with_annotation(obj: Obj, key: str, value: str) -> Obj:
    m = dict(meta(obj))
    m["annotations"] = {**annotations_of(obj), key: value}
    return {**obj, "metadata": m}


def _bind_volume_to_claim(pv: Obj, pvc: Obj) -> tuple[Obj, bool]:
    """kube's GetBindVolumeToClaim: the PV with ``claimRef`` naming the claim."""
    dirty = False
    bound = is_volume_bound_to_claim(pv, pvc)
    new: dict[str, Any] = dict(pv)
    ref = claim_ref(pv)
    pvc_meta = meta(pvc)
    if (
        ref is None
        or ref.get("name") != pvc_meta.get("name")
        or ref.get("namespace") != pvc_meta.get("namespace")
        or ref.get("uid") != pvc_meta.get("uid")
    ):
        new["spec"] = {
            **spec(pv),
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": pvc_meta.get("namespace"),
                "name": pvc_meta.get("name"),
                "uid": pvc_meta.get("uid"),
                "apiVersion": "v1",
                "resourceVersion": resource_version(pvc),
            },
        }
        dirty = True
    if not bound and ANN_BOUND_BY_CONTROLLER not in annotations_of(pv):
        new = dict(_with_annotation(new, ANN_BOUND_BY_CONTROLLER, "yes"))
        dirty = True
    return new, dirty


def _storage_class_changed(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE
    if (old or {}).get("allowedTopologies") != (new or {}).get("allowedTopologies"):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _csinode_changed(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE
    key = "storage.alpha.kubernetes.io/migrated-plugins"
    if annotations_of(old).get(key) != annotations_of(new or {}).get(key):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _csidriver_changed(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Only turning capacity tracking off for a driver the pod's inline volumes use."""
    driver = name(new or {})
    volumes = pod.raw.get("spec", {}).get("volumes") or []
    uses = any(
        isinstance(v, Mapping)
        and isinstance(v.get("csi"), Mapping)
        and v["csi"].get("driver") == driver
        for v in volumes
    )
    was = spec(old or {}).get("storageCapacity") is True
    now = spec(new or {}).get("storageCapacity") is True
    return QueueingHint.QUEUE if uses and was and not now else QueueingHint.SKIP


def _capacity_limit(obj: Any) -> Fraction | None:
    if not isinstance(obj, Mapping):
        return None
    value = obj.get("maximumVolumeSize")
    if value is None:
        value = obj.get("capacity")
    if value is None:
        return None
    try:
        return parse_limit(value)
    except (QuantityError, ValueError):
        return None


def _capacity_grew(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE
    before, after = _capacity_limit(old), _capacity_limit(new)
    if after is not None and (before is None or after > before):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


__all__ = ["NAME", "VolumeBinding", "VolumeBindingArgs"]
