"""An emulated PV controller: what kube-controller-manager does for a scheduler's volumes.

Without it a claim never binds and a WaitForFirstConsumer pod never gets its volume:
the scheduler's VolumeBinding plugin writes ``spec.claimRef`` or the
``volume.kubernetes.io/selected-node`` annotation and then waits for a controller to
finish. This one does, with the objects, fields and annotations of the real ones:

* the ephemeral-volume controller: a pod's ``ephemeral.volumeClaimTemplate`` becomes
  claim ``<pod>-<volume>``, owned by the pod;
* the persistentvolume-binder: a volume pre-bound to a claim (by the scheduler, or
  by a provisioner) is bound both ways; an unbound claim of an Immediate class (or of
  no class) binds to the smallest Available volume that fits (``findBestMatch``);
  unbound volumes become Available;
* an external CSI provisioner, for classes whose provisioner is not
  ``kubernetes.io/no-provisioner``: a WaitForFirstConsumer claim that got a selected
  node gets a volume ``pvc-<claim uid>`` restricted to that node's topology (the
  class's allowedTopologies keys, else ``kubernetes.io/hostname``: it emulates a
  node-local driver); an Immediate claim gets one without node affinity.

Like :class:`~scheduler.simulation.emulator.kubelet.FakeKubelet` it reacts to store commits
but acts on the next loop iteration, outside the write in progress, and writes
through the store like any client, so every change is validated and watched.
Objects it cannot make sense of are skipped with a warning naming them.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from typing import Any

from scheduler.model.selectors import LabelSelector
from scheduler.simulation.emulator import quantity
from scheduler.simulation.emulator.reconciler import Reconciler
from scheduler.simulation.emulator.resources import ResourceType
from scheduler.simulation.emulator.store import Store
from scheduler.simulation.emulator.watch import Change

Obj = dict[str, Any]
Key = tuple[str, str]

log = logging.getLogger(__name__)

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def _class_of(obj: Obj) -> str:
    """GetPersistentVolume(Claim)Class: spec.storageClassName, unset meaning ""."""
    return str((obj.get("spec") or {}).get("storageClassName") or "")


def _storage(resources: Any) -> Fraction:
    """The ``storage`` quantity of a resource list; ValueError if missing or bad."""
    if not isinstance(resources, dict) or "storage" not in resources:
        raise ValueError("no storage quantity")
    return quantity.from_json(resources["storage"]).value


def _bound_to(volume: Obj, claim: Obj) -> bool:
    """IsVolumeBoundToClaim: claimRef names the claim (a claimRef without uid matches)."""
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    meta = claim["metadata"]
    return (
        ref.get("name") == meta["name"]
        and ref.get("namespace") == meta.get("namespace")
        and ref.get("uid", "") in ("", meta.get("uid"))
    )


def _claim_ref(claim: Obj) -> Obj:
    meta = claim["metadata"]
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "apiVersion": "v1",
        "resourceVersion": meta.get("resourceVersion", ""),
    }


class VolumeController(Reconciler):
    """Binds claims and volumes and provisions volumes, as the controllers would."""

    def __init__(self, store: Store) -> None:
        super().__init__(store, "volume controller", log)
        self.pods = store.type("", "v1", "pods")
        self.nodes = store.type("", "v1", "nodes")
        self.claims = store.type("", "v1", "persistentvolumeclaims")
        self.volumes = store.type("", "v1", "persistentvolumes")
        self.classes = store.type("storage.k8s.io", "v1", "storageclasses")
        self._pods: set[Key] = set()
        self._claims: set[Key] = set()
        self._volumes: set[Key] = set()

    def _seed(self) -> None:
        self._pods.update(self.store.collection(self.pods).objects)
        self._claims.update(self.store.collection(self.claims).objects)
        self._volumes.update(self.store.collection(self.volumes).objects)

    # -- what to look at ---------------------------------------------------------

    def _on_change(self, rt: ResourceType, change: Change) -> None:
        if change.type == "DELETED":
            return
        key = rt.storage_key
        obj = change.entry.obj
        if key == self.pods.storage_key:
            if any(
                isinstance(v, dict) and "ephemeral" in v
                for v in (obj.get("spec") or {}).get("volumes") or []
            ):
                self._pods.add(change.key)
        elif key == self.claims.storage_key:
            self._claims.add(change.key)
        elif key == self.volumes.storage_key:
            self._volumes.add(change.key)
            ref = (obj.get("spec") or {}).get("claimRef") or {}
            if ref.get("name"):
                self._claims.add((str(ref.get("namespace") or ""), str(ref["name"])))
            if change.type == "ADDED":
                self._all_unbound_claims()  # a new volume may fit a waiting claim
        elif key == self.classes.storage_key:
            self._all_unbound_claims()
        else:
            return
        self._schedule()

    def _all_unbound_claims(self) -> None:
        for claim_key, entry in self.store.collection(self.claims).objects.items():
            if not (entry.obj.get("spec") or {}).get("volumeName"):
                self._claims.add(claim_key)

    def _reconcile(self) -> None:
        pods, self._pods = self._pods, set()
        volumes, self._volumes = self._volumes, set()
        claims, self._claims = self._claims, set()
        for key in sorted(pods):
            self._guard("Pod", key, self._sync_pod)
        for key in sorted(volumes):
            self._guard("PersistentVolume", key, self._sync_volume)
        for key in sorted(claims):
            self._guard("PersistentVolumeClaim", key, self._sync_claim)

    # -- ephemeral volumes -------------------------------------------------------

    def _sync_pod(self, key: Key) -> None:
        pod = self._get(self.pods, key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate")
            if not isinstance(template, dict):
                continue
            name = f"{meta['name']}-{volume['name']}"
            if (namespace, name) in self.store.collection(self.claims).objects:
                continue  # ours already, or someone else's: the scheduler reports that
            template_meta = template.get("metadata") or {}
            claim_meta: Obj = {
                "name": name,
                "namespace": namespace,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta.get("uid", ""),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            }
            for field in ("labels", "annotations"):
                if template_meta.get(field):
                    claim_meta[field] = dict(template_meta[field])
            body = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": claim_meta,
                "spec": dict(template.get("spec") or {}),
            }
            self.store.create(self.claims, body)

    # -- volumes -----------------------------------------------------------------

    def _sync_volume(self, key: Key) -> None:
        volume = self._get(self.volumes, key)
        if volume is None or volume["metadata"].get("deletionTimestamp"):
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        phase = (volume.get("status") or {}).get("phase")
        if (not ref or not ref.get("uid")) and phase in (None, "", "Pending"):
            self._set_volume_phase(volume, "Available")

    def _set_volume_phase(self, volume: Obj, phase: str) -> None:
        if (volume.get("status") or {}).get("phase") == phase:
            return

        def change(obj: Obj) -> Obj:
            return {**obj, "status": {**(obj.get("status") or {}), "phase": phase}}

        name = volume["metadata"]["name"]
        self.store.mutate(self.volumes, "", name, change, subresource="status")

    # -- claims ------------------------------------------------------------------

    def _sync_claim(self, key: Key) -> None:
        claim = self._get(self.claims, key)
        if claim is None or claim["metadata"].get("deletionTimestamp"):
            return
        spec = claim.get("spec") or {}
        if spec.get("volumeName"):
            self._sync_bound_claim(claim)
            return
        class_name = _class_of(claim)
        storage_class = self._get(self.classes, ("", class_name)) if class_name else None
        # A class that does not exist binds like Immediate (kube's IsDelayBindingMode
        # is false for it): to an existing volume of that class name, never provisioned.
        delayed = (storage_class or {}).get("volumeBindingMode") == "WaitForFirstConsumer"
        request = _storage((spec.get("resources") or {}).get("requests"))
        volume = self._find_best_match(claim, request, delayed)
        if volume is not None:
            self._bind(volume, claim)
            return
        if storage_class is None:
            return  # no class, nothing to provision from: the claim stays Pending
        provisioner = str(storage_class.get("provisioner") or "")
        if provisioner == NO_PROVISIONER:
            return
        selected = _annotations(claim).get(ANN_SELECTED_NODE, "")
        if delayed and not selected:
            return  # WaitForFirstConsumer: the scheduler picks the node first
        self._provision(claim, request, storage_class, selected)

    def _sync_bound_claim(self, claim: Obj) -> None:
        """A claim naming its volume: finish the binding if the volume is there for it."""
        name = claim["spec"]["volumeName"]
        volume = self._get(self.volumes, ("", name))
        if volume is None:
            return  # kube marks it Lost; the scheduler only sees it unbindable
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref and not _bound_to(volume, claim):
            return  # the volume belongs to another claim
        self._bind(volume, claim)

    def _find_best_match(self, claim: Obj, request: Fraction, delayed: bool) -> Obj | None:
        """findMatchingVolume without a node: a volume pre-bound to the claim, else the
        smallest Available one that fits (only pre-bound ones when binding is delayed)."""
        spec = claim.get("spec") or {}
        wanted_modes = set(spec.get("accessModes") or [])
        wanted_mode = spec.get("volumeMode") or "Filesystem"
        selector = (
            LabelSelector.from_dict(spec["selector"], "spec.selector")
            if spec.get("selector") is not None
            else None
        )
        class_name = _class_of(claim)
        best: Obj | None = None
        best_size = Fraction(0)
        for entry in self.store.collection(self.volumes).objects.values():
            volume = entry.obj
            vspec = volume.get("spec") or {}
            if vspec.get("claimRef") and not _bound_to(volume, claim):
                continue
            if not wanted_modes <= set(vspec.get("accessModes") or []):
                continue
            try:
                size = _storage(vspec.get("capacity"))
            except ValueError:
                log.warning(
                    "volume controller: skipping PersistentVolume %s: bad capacity",
                    volume["metadata"]["name"],
                )
                continue
            if size < request or (vspec.get("volumeMode") or "Filesystem") != wanted_mode:
                continue
            if volume["metadata"].get("deletionTimestamp"):
                continue
            if _bound_to(volume, claim):
                return volume
            if delayed:
                continue
            if (volume.get("status") or {}).get("phase") != "Available":
                continue
            if selector is not None and not selector.matches(
                volume["metadata"].get("labels") or {}
            ):
                continue
            if _class_of(volume) != class_name:
                continue
            if best is None or size < best_size:
                best, best_size = volume, size
        return best

    def _bind(self, volume: Obj, claim: Obj) -> None:
        """bindVolumeToClaim, volume phase Bound, bindClaimToVolume, claim status Bound."""
        volume_name = volume["metadata"]["name"]
        claim_meta = claim["metadata"]
        namespace, claim_name = claim_meta.get("namespace", ""), claim_meta["name"]
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        # Only a binding the controller makes itself is marked as such; a claimRef
        # without uid (pre-bound by a user) just gets completed.
        by_controller = not _bound_to(volume, claim)
        if by_controller or ref.get("uid") != claim_meta.get("uid"):

            def bind_volume(obj: Obj) -> Obj:
                meta = dict(obj["metadata"])
                annotations = dict(meta.get("annotations") or {})
                if by_controller:
                    annotations.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
                meta["annotations"] = annotations
                return {
                    **obj,
                    "metadata": meta,
                    "spec": {**obj["spec"], "claimRef": _claim_ref(claim)},
                }

            volume = self.store.mutate(self.volumes, "", volume_name, bind_volume).obj
        self._set_volume_phase(volume, "Bound")

        def bind_claim(obj: Obj) -> Obj:
            meta = dict(obj["metadata"])
            annotations = dict(meta.get("annotations") or {})
            spec = dict(obj.get("spec") or {})
            if spec.get("volumeName") != volume_name:
                spec["volumeName"] = volume_name
                annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
            annotations.setdefault(ANN_BIND_COMPLETED, "yes")
            meta["annotations"] = annotations
            return {**obj, "metadata": meta, "spec": spec}

        current = self.store.collection(self.claims).objects[(namespace, claim_name)].obj
        if bind_claim(current) != current:
            current = self.store.mutate(self.claims, namespace, claim_name, bind_claim).obj
        vspec = volume.get("spec") or {}
        bound_status = {
            "phase": "Bound",
            "accessModes": list(vspec.get("accessModes") or []),
            "capacity": dict(vspec.get("capacity") or {}),
        }
        if {k: (current.get("status") or {}).get(k) for k in bound_status} != bound_status:

            def claim_status(obj: Obj) -> Obj:
                return {**obj, "status": {**(obj.get("status") or {}), **bound_status}}

            self.store.mutate(
                self.claims, namespace, claim_name, claim_status, subresource="status"
            )

    # -- provisioning ------------------------------------------------------------

    def _provision(self, claim: Obj, request: Fraction, storage_class: Obj, node: str) -> None:
        """What the PV controller and an external CSI provisioner do for a claim."""
        provisioner = str(storage_class["provisioner"])
        meta = claim["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        volume_name = f"pvc-{meta.get('uid', '')}"
        affinity = self._topology(storage_class, node) if node else None
        annotations = _annotations(claim)
        if (
            annotations.get(ANN_STORAGE_PROVISIONER) != provisioner
            or annotations.get(ANN_BETA_STORAGE_PROVISIONER) != provisioner
        ):

            def announce(obj: Obj) -> Obj:
                obj_meta = dict(obj["metadata"])
                obj_meta["annotations"] = {
                    **(obj_meta.get("annotations") or {}),
                    ANN_STORAGE_PROVISIONER: provisioner,
                    ANN_BETA_STORAGE_PROVISIONER: provisioner,
                }
                return {**obj, "metadata": obj_meta}

            claim = self.store.mutate(self.claims, namespace, name, announce).obj
        if ("", volume_name) in self.store.collection(self.volumes).objects:
            return  # provisioned already; its commit queues the binding
        spec = claim.get("spec") or {}
        volume_spec: Obj = {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": list(spec.get("accessModes") or []),
            "claimRef": _claim_ref(claim),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": storage_class["metadata"]["name"],
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "csi": {"driver": provisioner, "volumeHandle": volume_name},
        }
        if storage_class.get("mountOptions"):
            volume_spec["mountOptions"] = list(storage_class["mountOptions"])
        if affinity is not None:
            volume_spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [affinity]}}
        self.store.create(
            self.volumes,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {
                    "name": volume_name,
                    "annotations": {ANN_PROVISIONED_BY: provisioner},
                },
                "spec": volume_spec,
            },
        )

    def _topology(self, storage_class: Obj, node_name: str) -> Obj:
        """The node selector term a node-local CSI driver reports for ``node_name``."""
        node = self._get(self.nodes, ("", node_name))
        if node is None:
            raise ValueError(f"selected node {node_name!r} not found")
        labels = node["metadata"].get("labels") or {}
        keys: list[str] = []
        for term in storage_class.get("allowedTopologies") or []:
            for req in term.get("matchLabelExpressions") or []:
                if req.get("key") and req["key"] not in keys:
                    keys.append(req["key"])
        if not keys:
            return {
                "matchExpressions": [
                    {
                        "key": HOSTNAME_LABEL,
                        "operator": "In",
                        "values": [labels.get(HOSTNAME_LABEL) or node_name],
                    }
                ]
            }
        missing = [key for key in keys if key not in labels]
        if missing:
            raise ValueError(f"node {node_name!r} has no label {missing[0]!r}")
        return {
            "matchExpressions": [
                {"key": key, "operator": "In", "values": [labels[key]]} for key in keys
            ]
        }
