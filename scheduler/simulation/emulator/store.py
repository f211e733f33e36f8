"""The object store: one global resourceVersion, per-collection event logs, watchers.

Stored objects are never mutated after commit; every write builds a new dict
(sharing untouched sub-trees with the old one) and encodes it once. Lists and
watch events reuse that encoding, which is what lets one core serve
thousands of bindings per second with their watch events.
"""

from __future__ import annotations

import base64
import binascii
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from scheduler.simulation.emulator import admission, schema, statuserrors, strategy
from scheduler.simulation.emulator.builtin import builtin_types
from scheduler.simulation.emulator.queryselectors import FieldQuery, LabelQuery
from scheduler.simulation.emulator.resources import Obj, Registry, ResourceType
from scheduler.simulation.emulator.watch import Change, Entry, Watcher

DEFAULT_LOG_SIZE = 100_000
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

Key = tuple[str, str]
Listener = Callable[[ResourceType, Change], None]


_clock: list[Any] = [0, ""]


def _now() -> str:
    """RFC 3339 seconds, formatted once per second (every write stamps one)."""
    second = int(time.time())
    if _clock[0] != second:
        _clock[0], _clock[1] = second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
    return str(_clock[1])


class Collection:
    """All objects of one storage, their bounded change log and live watchers."""

    def __init__(self, key: str, log_size: int) -> None:
        self.key = key
        self.objects: dict[Key, Entry] = {}
        self.log: deque[Change] = deque()
        self.log_size = log_size
        # Changes at or below this version are no longer in the log.
        self.compacted_rv = 0
        self.watchers: set[Watcher] = set()

    def append(self, change: Change) -> None:
        if len(self.log) >= self.log_size:
            self.compacted_rv = self.log.popleft().rv
        self.log.append(change)

    def compact(self, rv: int) -> None:
        self.log.clear()
        self.compacted_rv = max(self.compacted_rv, rv)

    def snapshot(self, rv: int) -> dict[Key, Entry]:
        """The collection as it was at ``rv`` (which must not be compacted)."""
        state = dict(self.objects)
        for change in reversed(self.log):
            if change.rv <= rv:
                break
            if change.prev is None:
                state.pop(change.key, None)
            else:
                state[change.key] = change.prev
        return state


class Store:
    def __init__(self, *, log_size: int = DEFAULT_LOG_SIZE) -> None:
        self.registry = Registry(builtin_types())
        self.rv = 0
        self.log_size = log_size
        self.collections: dict[str, Collection] = {}
        self.listeners: list[Listener] = []
        # Store writes as given: no decoding checks, validation or admission, like
        # an API server that does not validate (robustness tests; see
        # EmulatorServer.without_validation).
        self.lax = False
        # Hooks run after a commit of a given kind (CRDs register types, ...).
        self.after_commit: dict[str, Callable[[ResourceType, Change], None]] = {}
        for name in SYSTEM_NAMESPACES:
            self.create(self.type("", "v1", "namespaces"), {"metadata": {"name": name}})
        # kube-apiserver creates these at start-up (and refuses to delete them).
        for pc in admission.SYSTEM_PRIORITY_CLASSES:
            self.create(self.type("scheduling.k8s.io", "v1", "priorityclasses"), pc)

    # -- lookup -----------------------------------------------------------------

    def type(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.registry.lookup(group, version, plural)
        if rt is None:
            raise statuserrors.path_not_found()
        return rt

    def collection(self, rt: ResourceType) -> Collection:
        coll = self.collections.get(rt.storage_key)
        if coll is None:
            coll = self.collections[rt.storage_key] = Collection(rt.storage_key, self.log_size)
        return coll

    def entry(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        found = self.collection(rt).objects.get((namespace if rt.namespaced else "", name))
        if found is None:
            raise statuserrors.not_found(rt.group, rt.plural, name)
        return found

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        """A private copy of the object, safe to mutate."""
        return self._served(rt, self.entry(rt, namespace, name))

    def _served(self, rt: ResourceType, entry: Entry) -> Obj:
        result: Obj = orjson.loads(entry.encoded(rt.codec))
        return result

    def field_values(self, rt: ResourceType) -> Callable[[Obj], dict[str, str]]:
        extra = rt.field_labels

        def values(obj: Obj) -> dict[str, str]:
            meta = obj["metadata"]
            out = {
                "metadata.name": meta.get("name", ""),
                "metadata.namespace": meta.get("namespace", ""),
            }
            if extra is not None:
                out.update(extra(obj))
            return out

        return values

    def supported_fields(self, rt: ResourceType) -> frozenset[str]:
        sample: Obj = {"metadata": {}}
        return frozenset(self.field_values(rt)(sample))

    # -- commit -----------------------------------------------------------------

    def _commit(
        self, rt: ResourceType, type_: str, key: Key, obj: Obj, prev: Entry | None
    ) -> Entry:
        self.rv += 1
        rv = self.rv
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        entry = Entry(obj)
        coll = self.collection(rt)
        if type_ == "DELETED":
            coll.objects.pop(key, None)
        else:
            coll.objects[key] = entry
        change = Change(rv, type_, key, entry, prev)
        coll.append(change)
        for watcher in coll.watchers:
            watcher.offer(change)
        hook = self.after_commit.get(rt.storage_key)
        if hook is not None:
            hook(rt, change)
        for listener in self.listeners:
            listener(rt, change)
        return entry

    # -- create -----------------------------------------------------------------

    def _require_namespace(self, namespace: str) -> None:
        ns_type = self.type("", "v1", "namespaces")
        entry = self.collection(ns_type).objects.get(("", namespace))
        if entry is None:
            raise statuserrors.not_found("", "namespaces", namespace)
        if entry.obj["metadata"].get("deletionTimestamp"):
            raise statuserrors.forbidden(
                "",
                "namespaces",
                namespace,
                f"unable to create new content in namespace {namespace} "
                "because it is being terminated",
            )

    def create(
        self,
        rt: ResourceType,
        body: Obj,
        *,
        namespace: str | None = None,
        preserve: bool = False,
        admit: bool = False,
    ) -> Obj:
        """Create ``body`` (served form).

        ``preserve`` keeps status, uid and timestamps, for cluster files. ``admit``
        runs the apiserver's admission (API requests; not snapshots of admitted state).
        """
        return self._served(
            rt, self.create_entry(rt, body, namespace=namespace, preserve=preserve, admit=admit)
        )

    def create_entry(
        self,
        rt: ResourceType,
        body: Obj,
        *,
        namespace: str | None = None,
        preserve: bool = False,
        admit: bool = False,
    ) -> Entry:
        if not self.lax:
            body = schema.check(rt, body)
        obj = rt.codec.from_served(body) if rt.codec else dict(body)
        self._check_type(rt, obj)
        meta = obj.get("metadata")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise statuserrors.bad_request("metadata must be an object")
        meta = dict(meta)
        obj["metadata"] = meta
        if rt.namespaced:
            ns = namespace or meta.get("namespace") or ""
            if namespace and meta.get("namespace") and meta["namespace"] != namespace:
                raise statuserrors.bad_request(statuserrors.NAMESPACE_MISMATCH)
            if not ns:
                raise statuserrors.bad_request(
                    "the server could not find the requested resource: namespace is required"
                )
            meta["namespace"] = ns
            self._require_namespace(ns)
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion") and not preserve:
            raise statuserrors.bad_request(
                "resourceVersion should not be set on objects to be created"
            )
        coll = self.collection(rt)
        if not meta.get("name") and meta.get("generateName"):
            prefix = str(meta["generateName"])
            for _ in range(8):
                name = prefix + "".join(random.choices(_GENERATE_ALPHABET, k=5))
                if (meta.get("namespace", ""), name) not in coll.objects:
                    meta["name"] = name
                    break
        for field in (
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "managedFields",
        ):
            if not preserve or field in ("selfLink", "managedFields"):
                meta.pop(field, None)
        if not preserve or not meta.get("uid"):
            meta["uid"] = str(uuid.uuid4())
        if not preserve or not meta.get("creationTimestamp"):
            meta["creationTimestamp"] = _now()
        meta["generation"] = 1 if not preserve else meta.get("generation", 1)
        if not self.lax:
            if admit:
                admission.admit_create(self, rt, obj)
            if rt.group == "events.k8s.io" and rt.kind == "Event":
                strategy.validate_served_event(rt, body, meta["name"] if meta.get("name") else "")
        strategy.prepare_for_create(rt, obj, keep_status=preserve, validate=not self.lax)
        key = (meta.get("namespace", ""), meta["name"])
        if key in coll.objects:
            raise statuserrors.already_exists(rt.group, rt.plural, meta["name"])
        return self._commit(rt, "ADDED", key, obj, None)

    def _check_type(self, rt: ResourceType, obj: Obj) -> None:
        stored_version = "v1" if rt.codec is not None and not rt.custom else rt.api_version
        api_version = obj.get("apiVersion")
        if rt.custom:
            stored_version = rt.extra.get("storage_api_version", rt.api_version)
        if api_version and api_version not in (rt.api_version, stored_version):
            raise statuserrors.bad_request(
                f"the API version in the data ({api_version}) does not match "
                f"the expected API version ({rt.api_version})"
            )
        kind = obj.get("kind")
        if kind and kind != rt.kind:
            raise statuserrors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        obj["apiVersion"] = stored_version
        obj["kind"] = rt.kind

    # -- update -----------------------------------------------------------------

    def update(
        self, rt: ResourceType, namespace: str, name: str, body: Obj, *, subresource: str = ""
    ) -> tuple[Obj, bool]:
        """PUT semantics. Returns (object, created)."""
        entry, created = self.update_entry(rt, namespace, name, body, subresource=subresource)
        return self._served(rt, entry), created

    def update_entry(
        self, rt: ResourceType, namespace: str, name: str, body: Obj, *, subresource: str = ""
    ) -> tuple[Entry, bool]:
        ns = namespace if rt.namespaced else ""
        if not self.lax:
            body = schema.check(rt, body)
        new = rt.codec.from_served(body) if rt.codec else dict(body)
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        meta = dict(meta)
        new["metadata"] = meta
        if meta.get("name") and meta["name"] != name:
            raise statuserrors.name_mismatch(meta["name"], name)
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            raise statuserrors.bad_request(statuserrors.NAMESPACE_MISMATCH)
        current = self.collection(rt).objects.get((ns, name))
        if current is None:
            if rt.allow_create_on_update and not subresource:
                meta["name"] = name
                meta.pop("resourceVersion", None)
                return self.create_entry(rt, new, namespace=namespace), True
            raise statuserrors.not_found(rt.group, rt.plural, name)
        self._check_type(rt, new)
        rv = meta.get("resourceVersion")
        if not rv and not rt.allow_unconditional_update:
            raise statuserrors.invalid(
                rt.group,
                rt.kind,
                name,
                [
                    (
                        "metadata.resourceVersion",
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        return self._apply_update(
            rt, current, new, subresource=subresource, expect_rv=rv or None
        ), False

    def _apply_update(
        self, rt: ResourceType, current: Entry, new: Obj, *, subresource: str, expect_rv: str | None
    ) -> Entry:
        old = current.obj
        old_meta = old["metadata"]
        name = old_meta["name"]
        if expect_rv is not None and expect_rv != old_meta["resourceVersion"]:
            raise statuserrors.conflict(rt.group, rt.plural, name, statuserrors.STALE)
        meta = new["metadata"]
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise statuserrors.uid_precondition(
                rt.group, rt.plural, name, meta["uid"], old_meta["uid"]
            )
        if subresource == "status":
            merged = dict(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            merged["metadata"] = dict(old_meta)
            new = merged
        else:
            for field in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            meta["name"] = name
            if rt.namespaced:
                meta["namespace"] = old_meta["namespace"]
            else:
                meta.pop("namespace", None)
            meta.pop("managedFields", None)
            meta.pop("selfLink", None)
            if rt.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            admission.admit_update(self, rt, old, new)
            strategy.check_update(rt, old, new)
            if rt.kind == "Namespace" and not rt.group:
                new.setdefault("metadata", {}).setdefault("labels", {})[
                    "kubernetes.io/metadata.name"
                ] = name
            if strategy.spec_changed(old, new):
                meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if not self.lax:
            strategy.validate_update(rt, old, new, subresource)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if new == old:
            return current
        if (
            new["metadata"].get("deletionTimestamp")
            and not new["metadata"].get("finalizers")
            and new["metadata"].get("deletionGracePeriodSeconds", 0) == 0
        ):
            return self._commit(rt, "DELETED", (old_meta.get("namespace", ""), name), new, current)
        return self._commit(rt, "MODIFIED", (old_meta.get("namespace", ""), name), new, current)

    def mutate(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        change: Callable[[Obj], Obj],
        *,
        subresource: str = "",
        expect_rv: str | None = None,
    ) -> Entry:
        """Read-modify-write for patches: ``change`` gets and returns a served-form copy."""
        current = self.entry(rt, namespace, name)
        served = self._served(rt, current)
        new = change(served)
        if not isinstance(new, dict):
            raise statuserrors.ApiError(422, "Invalid", "patched object must be a JSON object")
        if not self.lax:
            new = schema.check_patched(rt, new)
        new = rt.codec.from_served(new) if rt.codec else new
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise statuserrors.ApiError(422, "Invalid", "metadata must be an object")
        if meta.get("name") != name:
            raise statuserrors.name_mismatch(meta.get("name"), name)
        self._check_type(rt, new)
        rv = meta.get("resourceVersion")
        if rv == current.obj["metadata"]["resourceVersion"]:
            rv = None
        return self._apply_update(
            rt, current, new, subresource=subresource, expect_rv=rv or expect_rv
        )

    # -- delete -----------------------------------------------------------------

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: Obj | None = None
    ) -> tuple[Obj, bool]:
        """Returns (object as of the delete, gone). ``gone`` is False while graceful/finalizing."""
        entry, gone = self.delete_entry(rt, namespace, name, options or {})
        return self._served(rt, entry), gone

    def delete_entry(
        self, rt: ResourceType, namespace: str, name: str, options: Obj
    ) -> tuple[Entry, bool]:
        current = self.entry(rt, namespace, name)
        admission.check_delete(rt, name)
        obj = current.obj
        meta = obj["metadata"]
        pre = options.get("preconditions") or {}
        # kube-apiserver checks these up front (rest.BeforeDelete), naming the kind.
        kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise statuserrors.conflict(
                "",
                kind,
                name,
                f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                f"({meta['uid']}). The object might have been deleted and then recreated",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise statuserrors.conflict(
                "",
                kind,
                name,
                f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not "
                f"match the ResourceVersion in record ({meta['resourceVersion']}). "
                "The object might have been modified",
            )
        key = (meta.get("namespace", ""), name)
        grace = 0
        if rt.kind == "Pod" and not rt.group:
            grace = self._pod_grace(obj, options.get("gracePeriodSeconds"))
        if rt.kind == "Namespace" and not rt.group:
            self._delete_namespace_contents(name)
        finalizers = meta.get("finalizers") or []
        if grace > 0 or finalizers:
            existing = meta.get("deletionGracePeriodSeconds")
            if meta.get("deletionTimestamp") and (existing is None or existing <= grace):
                return current, False
            new = dict(obj)
            new_meta = dict(meta)
            new_meta["deletionTimestamp"] = time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + grace)
            )
            new_meta["deletionGracePeriodSeconds"] = grace
            new["metadata"] = new_meta
            if grace > 0 or not meta.get("deletionTimestamp") or existing != grace:
                return self._commit(rt, "MODIFIED", key, new, current), False
            return current, False
        if rt.kind == "Pod" and not rt.group and meta.get("deletionGracePeriodSeconds") != 0:
            # Pods delete gracefully even with grace 0: marked first, then removed.
            marked = dict(obj)
            marked["metadata"] = {
                **meta,
                "deletionTimestamp": _now(),
                "deletionGracePeriodSeconds": 0,
            }
            current = self._commit(rt, "MODIFIED", key, marked, current)
            obj, meta = current.obj, current.obj["metadata"]
        final = dict(obj)
        final["metadata"] = dict(meta)
        if rt.kind == "Namespace" and not rt.group:
            final["metadata"]["deletionTimestamp"] = _now()
            final["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
        return self._commit(rt, "DELETED", key, final, current), True

    def _pod_grace(self, pod: Obj, requested: Any) -> int:
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if requested is None:
            requested = spec.get("terminationGracePeriodSeconds", 30)
        try:
            grace = int(requested)
        except (TypeError, ValueError) as exc:
            raise statuserrors.bad_request(f"invalid gracePeriodSeconds: {requested!r}") from exc
        return max(grace, 0)

    def _delete_namespace_contents(self, namespace: str) -> None:
        seen: set[str] = set()
        for rt in self.registry.all():
            if not rt.namespaced or rt.storage_key in seen:
                continue
            seen.add(rt.storage_key)
            coll = self.collection(rt)
            for key in [k for k in coll.objects if k[0] == namespace]:
                entry = coll.objects[key]
                final = dict(entry.obj)
                final["metadata"] = dict(entry.obj["metadata"])
                self._commit(rt, "DELETED", key, final, entry)

    # -- binding ----------------------------------------------------------------

    def bind(self, namespace: str, name: str, binding: Obj) -> None:
        """pods/binding with kube-apiserver's checks (BindingREST.Create)."""
        pods = self.type("", "v1", "pods")
        meta = binding.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise statuserrors.bad_request("name in URL does not match name in Binding object")
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise statuserrors.bad_request(statuserrors.NAMESPACE_MISMATCH)
        target = binding.get("target") or {}
        node = target.get("name") or ""
        if not node:
            raise statuserrors.invalid(
                "", "Binding", name, [("target.name", "FieldValueRequired", "Required value")]
            )
        if target.get("kind") not in (None, "", "Node"):
            raise statuserrors.invalid(
                "",
                "Binding",
                name,
                [
                    (
                        "target.kind",
                        "FieldValueNotSupported",
                        f'Unsupported value: "{target["kind"]}": supported values: "Node"',
                    )
                ],
            )
        current = self.collection(pods).objects.get((namespace, name))
        if current is None:
            raise statuserrors.not_found("", "pods", name)
        pod = current.obj
        pod_meta = pod["metadata"]
        if meta.get("uid") and meta["uid"] != pod_meta["uid"]:
            raise statuserrors.uid_precondition("", "pods", name, meta["uid"], pod_meta["uid"])
        spec = pod.get("spec") or {}
        if pod_meta.get("deletionTimestamp"):
            raise statuserrors.conflict(
                "",
                "pods/binding",
                name,
                f"pod {name} is being deleted, cannot be assigned to a host",
            )
        if spec.get("nodeName"):
            raise statuserrors.conflict(
                "",
                "pods/binding",
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        if spec.get("schedulingGates"):
            raise statuserrors.conflict(
                "", "pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates"
            )
        new_meta = dict(pod_meta)
        if meta.get("annotations"):
            new_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **meta["annotations"]}
        status = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        previous = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None
        )
        condition: Obj = {"type": "PodScheduled", "status": "True", "lastProbeTime": None}
        if previous is not None and previous.get("status") == "True":
            condition["lastTransitionTime"] = previous.get("lastTransitionTime")
        else:
            condition["lastTransitionTime"] = _now()
        status["conditions"] = (
            [*conditions, condition]
            if previous is None
            else [
                condition if c.get("type") == "PodScheduled" else c
                for c in status.get("conditions") or []
            ]
        )
        new = {**pod, "metadata": new_meta, "spec": {**spec, "nodeName": node}, "status": status}
        self._commit(pods, "MODIFIED", (namespace, name), new, current)

    # -- list -------------------------------------------------------------------

    def list_entries(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelQuery,
        fields: FieldQuery,
        *,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        match: str = "",
    ) -> tuple[list[Entry], int, str, int]:
        """Returns (entries, list resourceVersion, continue token, remaining count)."""
        coll = self.collection(rt)
        start_after: Key | None = None
        snapshot_rv = self.rv
        if continue_token:
            snapshot_rv, start_after = self._decode_continue(continue_token)
            if snapshot_rv < coll.compacted_rv:
                raise statuserrors.expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. "
                    "You can start a new list without the continue parameter."
                )
        elif resource_version and resource_version != "0":
            try:
                wanted = int(resource_version)
            except ValueError as exc:
                raise statuserrors.bad_request(
                    f"invalid resource version: {resource_version}"
                ) from exc
            if match == "Exact":
                if wanted > self.rv:
                    raise statuserrors.ApiError(
                        504,
                        "Timeout",
                        f"Too large resource version: {wanted}, current: {self.rv}",
                        {
                            "causes": [
                                {
                                    "reason": "ResourceVersionTooLarge",
                                    "message": "Too large resource version",
                                }
                            ],
                            "retryAfterSeconds": 1,
                        },
                    )
                if wanted < coll.compacted_rv:
                    raise statuserrors.expired(
                        f"too old resource version: {wanted} ({coll.compacted_rv})"
                    )
                snapshot_rv = wanted
            elif wanted > self.rv:
                raise statuserrors.ApiError(
                    504,
                    "Timeout",
                    f"Too large resource version: {wanted}, current: {self.rv}",
                    {
                        "causes": [
                            {
                                "reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version",
                            }
                        ],
                        "retryAfterSeconds": 1,
                    },
                )
        objects = coll.objects if snapshot_rv == self.rv else coll.snapshot(snapshot_rv)
        keys: Iterable[Key] = objects.keys()
        if namespace is not None:
            keys = [k for k in keys if k[0] == namespace]
        ordered = sorted(keys)
        if start_after is not None:
            import bisect

            ordered = ordered[bisect.bisect_right(ordered, start_after) :]
        check_labels = not labels.empty
        check_fields = not fields.empty
        values = self.field_values(rt) if check_fields else None
        out: list[Entry] = []
        token = ""
        remaining = 0
        for i, key in enumerate(ordered):
            entry = objects[key]
            obj = entry.obj
            if check_labels and not labels.matches(obj["metadata"].get("labels")):
                continue
            if values is not None and not fields.matches(values(obj)):
                continue
            if limit and len(out) >= limit:
                token = self._encode_continue(
                    snapshot_rv,
                    out[-1].obj["metadata"].get("namespace", ""),
                    out[-1].obj["metadata"]["name"],
                )
                if not check_labels and not check_fields:
                    remaining = len(ordered) - i
                break
            out.append(entry)
        return out, snapshot_rv, token, remaining

    @staticmethod
    def _encode_continue(rv: int, namespace: str, name: str) -> str:
        raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": [namespace, name]})
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def _decode_continue(token: str) -> tuple[int, Key]:
        try:
            data = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            start = data["start"]
            return int(data["rv"]), (str(start[0]), str(start[1]))
        except (ValueError, KeyError, TypeError, IndexError, binascii.Error) as exc:
            raise statuserrors.bad_request(f"continue key is not valid: {exc}") from exc

    # -- watch ------------------------------------------------------------------

    def add_watcher(self, rt: ResourceType, watcher: Watcher, since: int | None) -> list[bytes]:
        """Register and return the backlog: synthetic ADDEDs (since=None) or replay."""
        coll = self.collection(rt)
        backlog: list[bytes] = []
        if since is None:
            for key in sorted(coll.objects):
                if watcher.namespace is not None and key[0] != watcher.namespace:
                    continue
                entry = coll.objects[key]
                if watcher.filtered and not watcher.matches(entry.obj):
                    continue
                backlog.append(b'{"type":"ADDED","object":' + entry.encoded(watcher.codec) + b"}\n")
        else:
            if since < coll.compacted_rv:
                raise statuserrors.expired(
                    f"too old resource version: {since} ({coll.compacted_rv})"
                )
            for change in coll.log:
                if change.rv > since:
                    watcher.offer(change)
        coll.watchers.add(watcher)
        return backlog

    def remove_watcher(self, rt: ResourceType, watcher: Watcher) -> None:
        self.collection(rt).watchers.discard(watcher)

    def compact(self) -> None:
        """Forget all history: any watch or continue from an older version gets 410."""
        for coll in self.collections.values():
            coll.compact(self.rv)

    def all_watchers(self) -> list[Watcher]:
        return [w for coll in self.collections.values() for w in coll.watchers]
