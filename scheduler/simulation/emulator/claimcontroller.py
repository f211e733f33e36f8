"""An emulated ResourceClaim controller: what kube-controller-manager does for DRA pods.

Without it a pod naming a ``resourceClaimTemplateName`` never gets its claim, and
a claim stays allocated and reserved for pods long gone. This one behaves like
kube's ``pkg/controller/resourceclaim`` (plus the garbage collector's part):

* for each pod claim with a template, a claim is created from the template with
  generateName ``<pod>-<claim>-`` (both cut proportionally past 57 characters),
  the template's labels, annotations and spec, the annotation
  ``resource.kubernetes.io/pod-claim-name: <claim>`` and a controller owner
  reference to the pod, and recorded in the pod's ``status.resourceClaimStatuses``;
  a claim the pod already owns under that annotation is adopted instead;
* a scheduled pod whose claim is allocated but not reserved for it gets reserved;
* ``status.reservedFor`` loses pods that are deleted, replaced (another uid) or
  done (Succeeded/Failed, or deleted before being scheduled); when the last one
  goes, a claim carrying the scheduler's ``resource.kubernetes.io/delete-protection``
  finalizer is deallocated (``status.allocation`` cleared) and the finalizer removed;
* an unreserved claim generated for a pod that is done, replaced or gone is deleted.

Unlike kube it creates no claims for pods that are already done (kube would, and
delete them again at once). Like the volume controller it reacts to store
commits, acts on the next loop iteration and writes through the store, so every
write is validated and watched. Objects it cannot handle are skipped with a
warning naming them.
"""

from __future__ import annotations

import logging
from typing import Any

from scheduler.simulation.emulator.dracommon import items, mapping
from scheduler.simulation.emulator.reconciler import Reconciler
from scheduler.simulation.emulator.resources import ResourceType
from scheduler.simulation.emulator.store import Store
from scheduler.simulation.emulator.watch import Change

Obj = dict[str, Any]
Key = tuple[str, str]

log = logging.getLogger(__name__)

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX = 256
_MAX_BASE = 57  # room for the apiserver's 5 random characters in a 63-character name


def is_pod_done(pod: Obj) -> bool:
    """isPodDone: terminal, or deleted before it was ever scheduled."""
    phase = mapping(pod.get("status")).get("phase")
    spec = mapping(pod.get("spec"))
    return phase in ("Succeeded", "Failed") or bool(
        pod["metadata"].get("deletionTimestamp") and not spec.get("nodeName")
    )


def generate_name(pod_name: str, claim_name: str) -> str:
    """handleClaim's generateName: truncated proportionally so both parts survive."""
    name = f"{pod_name}-{claim_name}-"
    if len(name) <= _MAX_BASE:
        return name
    total = len(name)
    return (
        pod_name[: len(pod_name) * _MAX_BASE // total]
        + "-"
        + claim_name[: len(claim_name) * _MAX_BASE // total]
    )


def _controlling_pods(claim: Obj) -> list[tuple[str, str]]:
    """(name, uid) of each controller owner reference to a pod (kube's claimPodOwnerIndexFunc)."""
    return [
        (str(ref.get("name") or ""), str(ref.get("uid") or ""))
        for ref in map(mapping, items(claim["metadata"].get("ownerReferences")))
        if ref.get("controller") and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod"
    ]


def owning_pod(claim: Obj) -> tuple[str, str]:
    """The pod that controls ``claim`` (name, uid), or empty strings."""
    found = _controlling_pods(claim)
    return found[0] if found else ("", "")


class ClaimsByPod:
    """Claims by the UID of the pod controlling them, and of each pod they are reserved for.

    kube's controller finds a pod's claims through an informer index
    (``claimPodOwnerIndex``); scanning every claim instead made each pod's
    sync cost grow with the claims of the cluster (88% of the emulator's
    time once a 15,000-node DRA workload had created a few thousand).
    """

    def __init__(self) -> None:
        self._owned: dict[str, set[Key]] = {}
        self._reserved: dict[str, set[Key]] = {}
        self._uids: dict[Key, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def put(self, key: Key, claim: Obj) -> None:
        owners = tuple(uid for _, uid in _controlling_pods(claim))
        consumers = tuple(
            str(mapping(r).get("uid") or "")
            for r in items(mapping(claim.get("status")).get("reservedFor"))
        )
        if self._uids.get(key) == (owners, consumers):
            return
        self.drop(key)
        self._uids[key] = (owners, consumers)
        for uid in owners:
            self._owned.setdefault(uid, set()).add(key)
        for uid in consumers:
            self._reserved.setdefault(uid, set()).add(key)

    def drop(self, key: Key) -> None:
        owners, consumers = self._uids.pop(key, ((), ()))
        for index, uids in ((self._owned, owners), (self._reserved, consumers)):
            for uid in uids:
                keys = index.get(uid)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[uid]

    def owned_by(self, uid: str) -> list[Key]:
        """Keys of the claims ``uid`` controls, sorted."""
        return sorted(self._owned.get(uid, ()))

    def of(self, uid: str) -> set[Key]:
        """Keys of the claims ``uid`` controls or is reserved in."""
        return self._owned.get(uid, set()) | self._reserved.get(uid, set())


def _status_claim(pod: Obj, name: str) -> tuple[bool, str | None]:
    """(recorded, claim name) of a template pod claim in pod.status.resourceClaimStatuses."""
    for entry in items(mapping(pod.get("status")).get("resourceClaimStatuses")):
        if mapping(entry).get("name") == name:
            value = entry.get("resourceClaimName")
            return True, str(value) if value is not None else None
    return False, None


class ClaimController(Reconciler):
    """Creates claims from templates, releases reservations, deallocates and deletes."""

    def __init__(self, store: Store) -> None:
        super().__init__(store, "claim controller", log)
        self.pods = store.type("", "v1", "pods")
        self.claims = store.type("resource.k8s.io", "v1", "resourceclaims")
        self.templates = store.type("resource.k8s.io", "v1", "resourceclaimtemplates")
        self._pods: set[Key] = set()
        self._claims: set[Key] = set()
        self._deleted: set[str] = set()  # uids of pods seen deleted (kube's deletedObjects)
        self._by_pod = ClaimsByPod()

    def _seed(self) -> None:
        for key, entry in self.store.collection(self.pods).objects.items():
            if items(mapping(entry.obj.get("spec")).get("resourceClaims")):
                self._pods.add(key)
        for key, entry in self.store.collection(self.claims).objects.items():
            self._by_pod.put(key, entry.obj)
            self._claims.add(key)

    # -- what to look at ---------------------------------------------------------

    def _on_change(self, rt: ResourceType, change: Change) -> None:
        key = rt.storage_key
        obj = change.entry.obj
        if key == self.pods.storage_key:
            if not items(mapping(obj.get("spec")).get("resourceClaims")):
                return
            if change.type == "DELETED":
                self._deleted.add(str(obj["metadata"].get("uid") or ""))
            else:
                self._pods.add(change.key)
            if change.type == "DELETED" or is_pod_done(obj):
                self._claims_of(obj)
        elif key == self.claims.storage_key:
            if change.type == "DELETED":
                self._by_pod.drop(change.key)
                pod_name, _ = owning_pod(obj)
                if pod_name:  # a generated claim deleted under a live pod is re-created
                    self._pods.add((change.key[0], pod_name))
            else:
                self._by_pod.put(change.key, obj)
                self._claims.add(change.key)
        elif key == self.templates.storage_key and change.type != "DELETED":
            namespace, name = change.key
            for pod_key, entry in self.store.collection(self.pods).objects.items():
                if pod_key[0] == namespace and any(
                    mapping(c).get("resourceClaimTemplateName") == name
                    for c in items(mapping(entry.obj.get("spec")).get("resourceClaims"))
                ):
                    self._pods.add(pod_key)
        else:
            return
        self._schedule()

    def _claims_of(self, pod: Obj) -> None:
        """Claims in the pod's namespace it holds a reservation in or owns."""
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        self._claims.update(
            key for key in self._by_pod.of(str(meta.get("uid") or "")) if key[0] == namespace
        )

    def _reconcile(self) -> None:
        pods, self._pods = self._pods, set()
        claims, self._claims = self._claims, set()
        for key in sorted(pods):
            self._guard("Pod", key, self._sync_pod)
        for key in sorted(claims):
            self._guard("ResourceClaim", key, self._sync_claim)

    # -- pods ----------------------------------------------------------------------

    def _sync_pod(self, key: Key) -> None:
        pod = self._get(self.pods, key)
        if pod is None or pod["metadata"].get("deletionTimestamp") or is_pod_done(pod):
            return
        created: dict[str, str] = {}
        for pod_claim in items(mapping(pod.get("spec")).get("resourceClaims")):
            pod_claim = mapping(pod_claim)
            if pod_claim.get("resourceClaimTemplateName") is None:
                continue
            name = self._claim_for_template(pod, pod_claim)
            if name is not None:
                created[str(pod_claim.get("name"))] = name
        if created:
            self._record(pod, created)
            pod = self._get(self.pods, key) or pod
        if mapping(pod.get("spec")).get("nodeName"):
            self._reserve_for(pod)

    def _claim_for_template(self, pod: Obj, pod_claim: Obj) -> str | None:
        """handleClaim: the name of a claim to record in the pod's status, if any."""
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        name = str(pod_claim.get("name") or "")
        recorded, claim_name = _status_claim(pod, name)
        if recorded and claim_name is None:
            return None  # recorded as not needed
        if claim_name is not None:
            claim = self._get(self.claims, (namespace, claim_name))
            if claim is not None and owning_pod(claim)[1] == meta.get("uid"):
                return None  # created before, nothing to do
        claim = self._find_owned(pod, name)
        if claim is None:
            template_name = str(pod_claim["resourceClaimTemplateName"])
            template = self._get(self.templates, (namespace, template_name))
            if template is None:
                raise ValueError(
                    f"PodResourceClaim {name}: resource claim template {template_name!r}: "
                    f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found'
                )
            claim = self.store.create(self.claims, self._claim_from(pod, name, template))
        return str(claim["metadata"]["name"])

    def _find_owned(self, pod: Obj, pod_claim_name: str) -> Obj | None:
        """findPodResourceClaim: a claim the pod controls, annotated for this pod claim."""
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        for key in self._by_pod.owned_by(str(meta.get("uid") or "")):
            claim = self._get(self.claims, key)
            if key[0] != namespace or claim is None:
                continue
            annotations = claim["metadata"].get("annotations") or {}
            if annotations.get(POD_CLAIM_ANNOTATION) == pod_claim_name:
                return claim
        return None

    @staticmethod
    def _claim_from(pod: Obj, pod_claim_name: str, template: Obj) -> Obj:
        meta = pod["metadata"]
        spec = mapping(template.get("spec"))
        template_meta = mapping(spec.get("metadata"))
        annotations = dict(mapping(template_meta.get("annotations")))
        annotations[POD_CLAIM_ANNOTATION] = pod_claim_name
        claim_meta: Obj = {
            "generateName": generate_name(str(meta["name"]), pod_claim_name),
            "namespace": meta.get("namespace", ""),
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "controller": True,
                }
            ],
            "annotations": annotations,
        }
        if template_meta.get("labels"):
            claim_meta["labels"] = dict(template_meta["labels"])
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": claim_meta,
            "spec": spec.get("spec") or {},
        }

    def _record(self, pod: Obj, created: dict[str, str]) -> None:
        """Apply the new entries to status.resourceClaimStatuses (a map list keyed by name)."""

        def change(obj: Obj) -> Obj:
            status = dict(mapping(obj.get("status")))
            entries = [
                e
                for e in items(status.get("resourceClaimStatuses"))
                if mapping(e).get("name") not in created
            ]
            entries += [{"name": n, "resourceClaimName": c} for n, c in created.items()]
            status["resourceClaimStatuses"] = entries
            return {**obj, "status": status}

        meta = pod["metadata"]
        self.store.mutate(
            self.pods, meta.get("namespace", ""), meta["name"], change, subresource="status"
        )

    def _reserve_for(self, pod: Obj) -> None:
        """A pod bound without the scheduler: reserve its allocated claims for it."""
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        for pod_claim in items(mapping(pod.get("spec")).get("resourceClaims")):
            pod_claim = mapping(pod_claim)
            claim_name = pod_claim.get("resourceClaimName")
            if claim_name is None:
                claim_name = _status_claim(pod, str(pod_claim.get("name") or ""))[1]
            claim = self._get(self.claims, (namespace, str(claim_name))) if claim_name else None
            if claim is None:
                continue
            status = mapping(claim.get("status"))
            reserved = items(status.get("reservedFor"))
            if (
                status.get("allocation") is None
                or any(mapping(r).get("uid") == meta.get("uid") for r in reserved)
                or len(reserved) >= RESERVED_FOR_MAX
            ):
                continue
            consumer = {"resource": "pods", "name": meta["name"], "uid": meta.get("uid", "")}

            def change(obj: Obj, consumer: Obj = consumer) -> Obj:
                status = dict(mapping(obj.get("status")))
                status["reservedFor"] = [*items(status.get("reservedFor")), consumer]
                return {**obj, "status": status}

            self.store.mutate(self.claims, namespace, str(claim_name), change, subresource="status")

    # -- claims ------------------------------------------------------------------------

    def _keeps(self, namespace: str, ref: Obj) -> bool:
        """Whether a reservedFor entry still stands: non-pod consumers always do."""
        if ref.get("apiGroup") or ref.get("resource") != "pods":
            return True
        if ref.get("uid") in self._deleted:
            return False
        pod = self._get(self.pods, (namespace, str(ref.get("name") or "")))
        return (
            pod is not None
            and pod["metadata"].get("uid") == ref.get("uid")
            and not (is_pod_done(pod))
        )

    def _sync_claim(self, key: Key) -> None:
        claim = self._get(self.claims, key)
        if claim is None:
            return
        namespace, name = key
        status = mapping(claim.get("status"))
        reserved = items(status.get("reservedFor"))
        remaining = [r for r in reserved if self._keeps(namespace, mapping(r))]
        finalizers = list(claim["metadata"].get("finalizers") or [])
        if len(remaining) < len(reserved):
            # The last consumer gone: a claim the scheduler allocated is deallocated.
            deallocate = not remaining and FINALIZER in finalizers

            def release(obj: Obj) -> Obj:
                new_status = dict(mapping(obj.get("status")))
                if remaining:
                    new_status["reservedFor"] = remaining
                else:
                    new_status.pop("reservedFor", None)
                if deallocate:
                    new_status.pop("allocation", None)
                return {**obj, "status": new_status}

            claim = self.store.mutate(
                self.claims, namespace, name, release, subresource="status"
            ).obj
            if FINALIZER in finalizers and "allocation" not in mapping(claim.get("status")):
                claim = self._drop_finalizer(claim)
        elif (
            FINALIZER in finalizers and claim["metadata"].get("deletionTimestamp") and not remaining
        ):
            if "allocation" in status:

                def deallocate_only(obj: Obj) -> Obj:
                    new_status = dict(mapping(obj.get("status")))
                    new_status.pop("allocation", None)
                    return {**obj, "status": new_status}

                claim = self.store.mutate(
                    self.claims, namespace, name, deallocate_only, subresource="status"
                ).obj
            claim = self._drop_finalizer(claim)
        if claim is None or remaining:
            return
        self._delete_if_orphaned(claim)

    def _drop_finalizer(self, claim: Obj) -> Obj | None:
        meta = claim["metadata"]

        def change(obj: Obj) -> Obj:
            new_meta = dict(obj["metadata"])
            new_meta["finalizers"] = [f for f in new_meta.get("finalizers") or [] if f != FINALIZER]
            if not new_meta["finalizers"]:
                del new_meta["finalizers"]
            return {**obj, "metadata": new_meta}

        entry = self.store.mutate(self.claims, meta.get("namespace", ""), meta["name"], change)
        gone = (meta.get("namespace", ""), meta["name"]) not in self.store.collection(
            self.claims
        ).objects
        return None if gone else entry.obj

    def _delete_if_orphaned(self, claim: Obj) -> None:
        """An unreserved generated claim whose pod is done, replaced or gone (kube's
        controller for the first two, the garbage collector for the last) is deleted."""
        pod_name, pod_uid = owning_pod(claim)
        meta = claim["metadata"]
        if not pod_name or meta.get("deletionTimestamp"):
            return
        namespace = meta.get("namespace", "")
        pod = self._get(self.pods, (namespace, pod_name))
        if pod is None or pod["metadata"].get("uid") != pod_uid or is_pod_done(pod):
            self.store.delete(self.claims, namespace, meta["name"])
