"""Reading storage objects as kube's volume helpers do.

The volume plugins see PVCs, PVs and the rest as raw API JSON from informer
stores. These functions give them kube's meaning (component-helpers'
``storage/volume`` and ``storage/ephemeral``): the class of a claim (the beta
annotation wins over ``spec.storageClassName``), when a claim counts as
bound, whether a PV is bound to a claim, and which nodes a PV's node
affinity admits, as a mask over a NodeSet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from scheduler.api import NodeSelector, QuantityError, QueueingHint, parse_quantity
from scheduler.api.events import HintFn
from scheduler.model.selectors import LabelSelector, SelectorError
from scheduler.plugins._helpers import meta as meta
from scheduler.plugins._helpers import object_name
from scheduler.plugins._helpers import resource_version as resource_version
from scheduler.plugins.nodeaffinity import selector_mask
from scheduler.state.nodetable import NodeSet
from scheduler.state.pod import PodInfo

Obj = Mapping[str, Any]
BoolArray = npt.NDArray[np.bool_]

PVCS: Final = ("", "v1", "persistentvolumeclaims")
PVS: Final = ("", "v1", "persistentvolumes")
STORAGE_CLASSES: Final = ("storage.k8s.io", "v1", "storageclasses")
CSI_NODES: Final = ("storage.k8s.io", "v1", "csinodes")
CSI_DRIVERS: Final = ("storage.k8s.io", "v1", "csidrivers")
CSI_STORAGE_CAPACITIES: Final = ("storage.k8s.io", "v1", "csistoragecapacities")
VOLUME_ATTACHMENTS: Final = ("storage.k8s.io", "v1", "volumeattachments")

ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS: Final = "storage.alpha.kubernetes.io/migrated-plugins"
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"
CLAIM_LOST: Final = "Lost"
VOLUME_AVAILABLE: Final = "Available"
FILESYSTEM: Final = "Filesystem"


def spec(obj: Obj) -> Mapping[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def annotations_of(obj: Obj) -> Mapping[str, Any]:
    value = meta(obj).get("annotations")
    return value if isinstance(value, Mapping) else {}


def labels(obj: Obj) -> Mapping[str, str]:
    value = meta(obj).get("labels")
    return value if isinstance(value, Mapping) else {}


name = object_name


def claim_key(namespace: str, claim: str) -> str:
    return f"{namespace}/{claim}"


def claim_class(pvc: Obj) -> str:
    """kube's GetPersistentVolumeClaimClass: the beta annotation, then the spec field."""
    ann = annotations_of(pvc)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    value = spec(pvc).get("storageClassName")
    return str(value) if value is not None else ""


def volume_class(pv: Obj) -> str:
    """kube's GetPersistentVolumeClass."""
    ann = annotations_of(pv)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str(spec(pv).get("storageClassName") or "")


def is_fully_bound(pvc: Obj) -> bool:
    """A claim the PV controller finished binding: a volume name and bind-completed."""
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(pvc)


def claim_ref(pv: Obj) -> Mapping[str, Any] | None:
    ref = spec(pv).get("claimRef")
    return ref if isinstance(ref, Mapping) else None


def is_volume_bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    """kube's IsVolumeBoundToClaim: the claimRef names the claim (and its uid, if set)."""
    ref = claim_ref(pv)
    if ref is None:
        return False
    pvc_meta = meta(pvc)
    if ref.get("name") != pvc_meta.get("name") or ref.get("namespace") != pvc_meta.get("namespace"):
        return False
    uid = ref.get("uid")
    return not uid or uid == pvc_meta.get("uid")


def quantity(resources: Any, key: str = "storage") -> Fraction:
    """A storage quantity of a ``requests`` or ``capacity`` map; absent is zero, as in Go."""
    if not isinstance(resources, Mapping) or key not in resources:
        return Fraction(0)
    return parse_quantity(resources[key])


def claim_request(pvc: Obj) -> Fraction:
    """``spec.resources.requests.storage``; QuantityError for a malformed one."""
    resources = spec(pvc).get("resources")
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    return quantity(requests)


def volume_capacity(pv: Obj) -> Fraction:
    return quantity(spec(pv).get("capacity"))


def volume_mode(obj_spec: Mapping[str, Any]) -> str:
    return str(obj_spec.get("volumeMode") or FILESYSTEM)


def access_modes(obj: Obj) -> list[str]:
    modes = spec(obj).get("accessModes")
    return [str(m) for m in modes] if isinstance(modes, list) else []


def check_access_modes(pvc: Obj, pv: Obj) -> bool:
    """kube's CheckAccessModes: the volume offers every mode the claim asks for."""
    offered = set(access_modes(pv))
    return all(mode in offered for mode in access_modes(pvc))


def ephemeral_owner_error(pod: PodInfo, pvc: Obj) -> str | None:
    """kube's ephemeral.VolumeIsForPod: the claim must be controlled by the pod."""
    pvc_meta = meta(pvc)
    namespace = str(pvc_meta.get("namespace") or "")
    owners = pvc_meta.get("ownerReferences")
    controlled = namespace == pod.namespace and any(
        isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid") == pod.uid
        for ref in (owners if isinstance(owners, list) else ())
    )
    if controlled:
        return None
    return (
        f"PVC {namespace}/{name(pvc)} was not created for pod {pod.namespace}/{pod.name} "
        "(pod is not owner)"
    )


class NodeAffinityCache:
    """PV node affinity parsed once per PV version.

    A PV whose affinity cannot be parsed admits no node, as kube's
    CheckNodeAffinity returns an error for it (treated as a mismatch).
    """

    def __init__(self) -> None:
        self._parsed: dict[str, tuple[str, NodeSelector | None]] = {}

    def selector(self, pv: Obj) -> NodeSelector | None:
        """None when the PV has no required node affinity (every node is fine)."""
        key = name(pv)
        version = resource_version(pv)
        cached = self._parsed.get(key)
        if cached is not None and cached[0] == version and version:
            return cached[1]
        affinity = spec(pv).get("nodeAffinity")
        required = affinity.get("required") if isinstance(affinity, Mapping) else None
        selector: NodeSelector | None
        if required is None:
            selector = None
        else:
            try:
                selector = NodeSelector.from_dict(required, "spec.nodeAffinity.required", lazy=True)
            except SelectorError:
                selector = NodeSelector()  # matches nothing
        if len(self._parsed) > 100_000:
            self._parsed.clear()
        self._parsed[key] = (version, selector)
        return selector

    def mask(self, pv: Obj, nodes: NodeSet) -> BoolArray:
        selector = self.selector(pv)
        if selector is None:
            return np.ones(len(nodes), dtype=np.bool_)
        return selector_mask(selector, nodes.view())


def label_selector_mask(selector: LabelSelector, nodes: NodeSet) -> BoolArray:
    """Which nodes' labels a metav1 LabelSelector matches."""
    if selector.matches_nothing:
        return np.zeros(len(nodes), dtype=np.bool_)
    return nodes.table.labels.match_all(selector.requirements, nodes.rows)


def topology_terms_mask(terms: Any, nodes: NodeSet) -> BoolArray:
    """kube's MatchTopologySelectorTerms for a StorageClass's ``allowedTopologies``.

    No terms admits every node; otherwise a node must satisfy every
    ``matchLabelExpressions`` entry (key In values) of at least one term, and
    a term without expressions selects nothing.
    """
    if not isinstance(terms, list) or not terms:
        return np.ones(len(nodes), dtype=np.bool_)
    table = nodes.table
    out = np.zeros(len(nodes), dtype=np.bool_)
    for term in terms:
        exprs = term.get("matchLabelExpressions") if isinstance(term, Mapping) else None
        requirements: list[tuple[str, str, Sequence[str]]] = []
        for expr in exprs if isinstance(exprs, list) else ():
            if not isinstance(expr, Mapping):
                continue
            values = expr.get("values")
            requirements.append(
                (
                    str(expr.get("key") or ""),
                    "In",
                    [str(v) for v in values] if isinstance(values, list) else [],
                )
            )
        if requirements:
            out |= table.labels.match_all(requirements, nodes.rows)
    return out


def storage_error(what: str, obj: Obj, err: QuantityError | ValueError) -> str:
    """A per-pod reason for a storage object the scheduler cannot read."""
    return f"{what} {name(obj)!r} is invalid: {err}"


def claim_hint(*, ephemeral: bool) -> HintFn:
    """A queueing hint: the changed claim is one the pod uses.

    With ``ephemeral`` the generic ephemeral volumes' claims count too
    (VolumeBinding, NodeVolumeLimits); VolumeZone and VolumeRestrictions
    read ``persistentVolumeClaim`` sources only, as in kube.
    """

    def hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        m = meta(new) if isinstance(new, Mapping) else {}
        if m.get("namespace") != pod.namespace:
            return QueueingHint.SKIP
        claim = m.get("name")
        if claim in pod.pvc_names and (ephemeral or claim not in pod.ephemeral_pvc_names):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    return hint
