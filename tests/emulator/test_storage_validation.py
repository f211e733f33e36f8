"""What kube-apiserver refuses in the storage objects a scheduler's volume plugins read.

PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers and
CSIStorageCapacities: each rule with an object that passes and one that fails with
the apiserver's field path, reason and message. Asserted on both backends.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client

from .kube_helpers import pod, raw
from .test_validation import SUBDOMAIN_MSG, causes

Obj = dict[str, Any]
ACCESS_MODES = '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
STORAGE = "/apis/storage.k8s.io/v1"


async def create(api: client.ApiClient, path: str, body: Obj) -> tuple[int, Any]:
    """POST ``body``; a cluster-scoped object that got created is deleted again."""
    status, answer, _ = await raw(api, "POST", path, body=body)
    if status == 201 and "/namespaces/" not in path:
        await raw(api, "DELETE", f"{path}/{body['metadata']['name']}")
    return status, answer


def pv(name: str, **spec: Any) -> Obj:
    body: Obj = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/tmp/pv"},
    }
    body.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": body,
    }


def without(body: Obj, *keys: str) -> Obj:
    out = copy.deepcopy(body)
    for key in keys:
        out["spec"].pop(key)
    return out


def pvc(name: str, **spec: Any) -> Obj:
    body: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    body.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": body,
    }


def storage_class(name: str, **fields: Any) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "csi.example.com",
        **fields,
    }


def csi_node(name: str, *drivers: Obj) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": list(drivers)},
    }


def driver(name: str = "csi.example.com", node_id: str = "n1", **more: Any) -> Obj:
    return {"name": name, "nodeID": node_id, **more}


def csi_driver(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": spec,
    }


def capacity(name: str, **fields: Any) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name},
        "storageClassName": "fast",
        "capacity": "10Gi",
        **fields,
    }


AFFINITY = {
    "required": {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}
                ]
            }
        ]
    }
}


def affinity(operator: str, values: list[str]) -> Obj:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": operator, "values": values}]}
            ]
        }
    }


TERM0 = "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0]"

# (name, object factory, expected cause or None when the object is valid)
Factory = Callable[[str], Obj]
CASES: list[tuple[str, str, Factory, tuple[str, str, str] | None]] = [
    ("pv-valid", "pv", lambda n: pv(n), None),
    (
        "pv-no-access-modes",
        "pv",
        lambda n: without(pv(n), "accessModes"),
        ("spec.accessModes", "FieldValueRequired", "Required value"),
    ),
    (
        "pv-bad-access-mode",
        "pv",
        lambda n: pv(n, accessModes=["ReadWriteSometimes"]),
        (
            "spec.accessModes",
            "FieldValueNotSupported",
            f'Unsupported value: "ReadWriteSometimes": supported values: {ACCESS_MODES}',
        ),
    ),
    ("pv-rwop-alone", "pv", lambda n: pv(n, accessModes=["ReadWriteOncePod"]), None),
    (
        "pv-rwop-combined",
        "pv",
        lambda n: pv(n, accessModes=["ReadWriteOncePod", "ReadWriteOnce"]),
        (
            "spec.accessModes",
            "FieldValueForbidden",
            "Forbidden: may not use ReadWriteOncePod with other access modes",
        ),
    ),
    (
        "pv-no-capacity",
        "pv",
        lambda n: without(pv(n), "capacity"),
        ("spec.capacity", "FieldValueRequired", "Required value"),
    ),
    (
        "pv-zero-capacity",
        "pv",
        lambda n: pv(n, capacity={"storage": "0"}),
        (
            "spec.capacity[storage]",
            "FieldValueInvalid",
            'Invalid value: "0": must be greater than zero',
        ),
    ),
    (
        "pv-no-source",
        "pv",
        lambda n: without(pv(n), "hostPath"),
        ("spec", "FieldValueRequired", "Required value: must specify a volume type"),
    ),
    (
        "pv-two-sources",
        "pv",
        lambda n: pv(n, nfs={"server": "nfs.example.com", "path": "/export"}),
        ("spec.nfs", "FieldValueForbidden", "Forbidden: may not specify more than 1 volume type"),
    ),
    (
        "pv-local-with-affinity",
        "pv",
        lambda n: without(pv(n, local={"path": "/mnt/disk"}, nodeAffinity=AFFINITY), "hostPath"),
        None,
    ),
    (
        "pv-local-without-affinity",
        "pv",
        lambda n: without(pv(n, local={"path": "/mnt/disk"}), "hostPath"),
        (
            "spec.nodeAffinity",
            "FieldValueRequired",
            "Required value: Local volume requires node affinity",
        ),
    ),
    (
        "pv-affinity-no-terms",
        "pv",
        lambda n: pv(n, nodeAffinity={"required": {"nodeSelectorTerms": []}}),
        (
            "spec.nodeAffinity.required.nodeSelectorTerms",
            "FieldValueRequired",
            "Required value: must have at least one node selector term",
        ),
    ),
    ("pv-affinity-gt", "pv", lambda n: pv(n, nodeAffinity=affinity("Gt", ["3"])), None),
    (
        "pv-affinity-gt-two-values",
        "pv",
        lambda n: pv(n, nodeAffinity=affinity("Gt", ["3", "4"])),
        (
            f"{TERM0}.values",
            "FieldValueRequired",
            "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
        ),
    ),
    (
        "pv-affinity-exists-with-values",
        "pv",
        lambda n: pv(n, nodeAffinity=affinity("Exists", ["a"])),
        (
            f"{TERM0}.values",
            "FieldValueForbidden",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
    ),
    (
        "pv-affinity-bad-operator",
        "pv",
        lambda n: pv(n, nodeAffinity=affinity("Near", ["a"])),
        (
            f"{TERM0}.operator",
            "FieldValueInvalid",
            'Invalid value: "Near": not a valid selector operator',
        ),
    ),
    ("pv-reclaim-recycle", "pv", lambda n: pv(n, persistentVolumeReclaimPolicy="Recycle"), None),
    (
        "pv-reclaim-keep",
        "pv",
        lambda n: pv(n, persistentVolumeReclaimPolicy="Keep"),
        (
            "spec.persistentVolumeReclaimPolicy",
            "FieldValueNotSupported",
            'Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"',
        ),
    ),
    (
        "pv-csi-no-handle",
        "pv",
        lambda n: without(pv(n, csi={"driver": "csi.example.com"}), "hostPath"),
        ("spec.csi.volumeHandle", "FieldValueRequired", "Required value"),
    ),
    ("pvc-valid", "pvc", lambda n: pvc(n, storageClassName="fast"), None),
    (
        "pvc-no-access-modes",
        "pvc",
        lambda n: without(pvc(n), "accessModes"),
        (
            "spec.accessModes",
            "FieldValueRequired",
            "Required value: at least 1 access mode is required",
        ),
    ),
    (
        "pvc-rwop-combined",
        "pvc",
        lambda n: pvc(n, accessModes=["ReadWriteOncePod", "ReadOnlyMany"]),
        (
            "spec.accessModes",
            "FieldValueForbidden",
            "Forbidden: may not use ReadWriteOncePod with other access modes",
        ),
    ),
    (
        "pvc-no-storage",
        "pvc",
        lambda n: pvc(n, resources={"requests": {}}),
        ("spec.resources[storage]", "FieldValueRequired", "Required value"),
    ),
    (
        "pvc-zero-storage",
        "pvc",
        lambda n: pvc(n, resources={"requests": {"storage": "0"}}),
        (
            "spec.resources[storage]",
            "FieldValueInvalid",
            'Invalid value: "0": must be greater than zero',
        ),
    ),
    (
        "pvc-selector",
        "pvc",
        lambda n: pvc(n, selector={"matchLabels": {"tier": "fast"}}),
        None,
    ),
    (
        "pvc-bad-selector",
        "pvc",
        lambda n: pvc(
            n, selector={"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]}
        ),
        (
            "spec.selector.matchExpressions[0].operator",
            "FieldValueInvalid",
            'Invalid value: "Gt": not a valid selector operator',
        ),
    ),
    (
        "pvc-bad-class",
        "pvc",
        lambda n: pvc(n, storageClassName="Fast_Disks"),
        (
            "spec.storageClassName",
            "FieldValueInvalid",
            f'Invalid value: "Fast_Disks": {SUBDOMAIN_MSG}',
        ),
    ),
    ("sc-valid", "sc", lambda n: storage_class(n, volumeBindingMode="WaitForFirstConsumer"), None),
    (
        "sc-no-provisioner",
        "sc",
        lambda n: {**storage_class(n), "provisioner": ""},
        ("provisioner", "FieldValueRequired", "Required value"),
    ),
    (
        "sc-bad-binding-mode",
        "sc",
        lambda n: storage_class(n, volumeBindingMode="Later"),
        (
            "volumeBindingMode",
            "FieldValueNotSupported",
            'Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"',
        ),
    ),
    (
        "sc-bad-reclaim",
        "sc",
        lambda n: storage_class(n, reclaimPolicy="Recycle"),
        (
            "reclaimPolicy",
            "FieldValueNotSupported",
            'Unsupported value: "Recycle": supported values: "Delete", "Retain"',
        ),
    ),
    (
        "sc-topology",
        "sc",
        lambda n: storage_class(
            n,
            allowedTopologies=[
                {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a"]}]}
            ],
        ),
        None,
    ),
    (
        "sc-topology-no-values",
        "sc",
        lambda n: storage_class(
            n,
            allowedTopologies=[
                {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": []}]}
            ],
        ),
        (
            "allowedTopologies[0].matchLabelExpressions[0].values",
            "FieldValueRequired",
            "Required value",
        ),
    ),
    (
        "sc-empty-parameter-key",
        "sc",
        lambda n: storage_class(n, parameters={"": "x"}),
        ("parameters", "FieldValueInvalid", 'Invalid value: "": field can not be empty.'),
    ),
    ("csinode-valid", "csinode", lambda n: csi_node(n, driver(allocatable={"count": 0})), None),
    (
        "csinode-negative-count",
        "csinode",
        lambda n: csi_node(n, driver(allocatable={"count": -1})),
        (
            "spec.drivers[0].allocatable.count",
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
    ),
    (
        "csinode-duplicate-driver",
        "csinode",
        lambda n: csi_node(n, driver(), driver(node_id="n2")),
        ("spec.drivers[1].name", "FieldValueDuplicate", 'Duplicate value: "csi.example.com"'),
    ),
    (
        "csinode-no-node-id",
        "csinode",
        lambda n: csi_node(n, driver(node_id="")),
        ("spec.drivers[0].nodeID", "FieldValueRequired", "Required value"),
    ),
    (
        "csinode-no-driver-name",
        "csinode",
        lambda n: csi_node(n, driver(name="")),
        ("spec.drivers[0].name", "FieldValueRequired", "Required value"),
    ),
    ("csidriver-valid", "csidriver", lambda n: csi_driver(n, storageCapacity=True), None),
    (
        "csidriver-bad-fsgroup",
        "csidriver",
        lambda n: csi_driver(n, fsGroupPolicy="Sometimes"),
        (
            "spec.fsGroupPolicy",
            "FieldValueNotSupported",
            'Unsupported value: "Sometimes": supported values: "File", "None", '
            '"ReadWriteOnceWithFSType"',
        ),
    ),
    ("csisc-valid", "csisc", lambda n: capacity(n, maximumVolumeSize="5Gi"), None),
    (
        "csisc-no-class",
        "csisc",
        lambda n: {k: v for k, v in capacity(n).items() if k != "storageClassName"},
        ("storageClassName", "FieldValueInvalid", f'Invalid value: "": {SUBDOMAIN_MSG}'),
    ),
    (
        "csisc-negative",
        "csisc",
        lambda n: capacity(n, capacity="-1Gi"),
        (
            "capacity",
            "FieldValueInvalid",
            'Invalid value: "-1Gi": must be greater than or equal to 0',
        ),
    ),
    (
        "csisc-bad-topology",
        "csisc",
        lambda n: capacity(
            n, nodeTopology={"matchExpressions": [{"key": "zone", "operator": "In"}]}
        ),
        (
            "nodeTopology.matchExpressions[0].values",
            "FieldValueRequired",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
    ),
]


def _path(kind: str, namespace: str) -> str:
    return {
        "pv": "/api/v1/persistentvolumes",
        "pvc": f"/api/v1/namespaces/{namespace}/persistentvolumeclaims",
        "sc": f"{STORAGE}/storageclasses",
        "csinode": f"{STORAGE}/csinodes",
        "csidriver": f"{STORAGE}/csidrivers",
        "csisc": f"{STORAGE}/namespaces/{namespace}/csistoragecapacities",
    }[kind]


@pytest.mark.parametrize(
    ("kind", "make", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_storage_objects_are_validated(
    api_client: client.ApiClient,
    namespace: str,
    kind: str,
    make: Factory,
    expected: tuple[str, str, str] | None,
) -> None:
    status, answer = await create(api_client, _path(kind, namespace), make(f"{namespace}-o"))
    if expected is None:
        assert status == 201, answer
    else:
        assert status == 422, answer
        assert expected in causes(answer)
        assert expected[0] in answer["message"]


async def test_storage_defaults(api_client: client.ApiClient, namespace: str) -> None:
    """What decoding fills in, which the volume plugins and the PV controller rely on."""
    name = f"{namespace}-d"
    status, sc, _ = await raw(
        api_client, "POST", f"{STORAGE}/storageclasses", body=storage_class(name)
    )
    assert status == 201, sc
    await raw(api_client, "DELETE", f"{STORAGE}/storageclasses/{name}")
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    status, drv, _ = await raw(api_client, "POST", f"{STORAGE}/csidrivers", body=csi_driver(name))
    assert status == 201, drv
    await raw(api_client, "DELETE", f"{STORAGE}/csidrivers/{name}")
    spec = drv["spec"]
    assert (spec["attachRequired"], spec["podInfoOnMount"], spec["storageCapacity"]) == (
        True,
        False,
        False,
    )
    status, volume, _ = await raw(api_client, "POST", "/api/v1/persistentvolumes", body=pv(name))
    assert status == 201, volume
    await raw(api_client, "DELETE", f"/api/v1/persistentvolumes/{name}")
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert volume["spec"]["volumeMode"] == "Filesystem"
    assert volume["status"]["phase"] == "Pending"
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    status, claim, _ = await raw(api_client, "POST", claims, body=pvc("c"))
    assert status == 201, claim
    assert claim["status"]["phase"] == "Pending" and claim["spec"]["volumeMode"] == "Filesystem"


async def test_csi_driver_booleans_must_be_booleans(
    api_client: client.ApiClient, namespace: str
) -> None:
    status, answer = await create(
        api_client, f"{STORAGE}/csidrivers", csi_driver(f"{namespace}-b", attachRequired="yes")
    )
    assert status == 400
    assert answer["message"] == (
        'CSIDriver in version "v1" cannot be handled as a CSIDriver: json: cannot unmarshal '
        "string into Go struct field CSIDriverSpec.spec.attachRequired of type bool"
    )


async def _put(api: client.ApiClient, path: str, change: Callable[[Obj], None]) -> tuple[int, Any]:
    status, current, _ = await raw(api, "GET", path)
    assert status == 200, current
    change(current)
    status, answer, _ = await raw(api, "PUT", path, body=current)
    return status, answer


async def test_claim_spec_is_immutable_but_volume_name_is_set_once(
    api_client: client.ApiClient, namespace: str
) -> None:
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    status, answer, _ = await raw(api_client, "POST", claims, body=pvc("c"))
    assert status == 201, answer
    path = f"{claims}/c"

    def modes(claim: Obj) -> None:
        claim["spec"]["accessModes"] = ["ReadOnlyMany"]

    status, answer = await _put(api_client, path, modes)
    assert status == 422
    [(_, reason, message)] = [c for c in causes(answer) if c[0] == "spec"]
    assert reason == "FieldValueForbidden"
    assert message.startswith(
        "Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims"
    )

    def bind(volume: str) -> Callable[[Obj], None]:
        def change(claim: Obj) -> None:
            claim["spec"]["volumeName"] = volume

        return change

    status, answer = await _put(api_client, path, bind("pv-1"))
    assert status == 200, answer
    assert answer["spec"]["volumeName"] == "pv-1"
    status, answer = await _put(api_client, path, bind("pv-2"))
    assert status == 422
    assert any(c[0] == "spec" for c in causes(answer))


async def test_storage_class_binding_mode_and_provisioner_are_immutable(
    api_client: client.ApiClient, namespace: str
) -> None:
    name = f"{namespace}-i"
    path = f"{STORAGE}/storageclasses/{name}"
    status, answer, _ = await raw(
        api_client, "POST", f"{STORAGE}/storageclasses", body=storage_class(name)
    )
    assert status == 201, answer
    try:

        def mode(sc: Obj) -> None:
            sc["volumeBindingMode"] = "WaitForFirstConsumer"

        status, answer = await _put(api_client, path, mode)
        assert status == 422
        assert (
            "volumeBindingMode",
            "FieldValueInvalid",
            'Invalid value: "WaitForFirstConsumer": field is immutable',
        ) in causes(answer)

        def provisioner(sc: Obj) -> None:
            sc["provisioner"] = "other.example.com"

        status, answer = await _put(api_client, path, provisioner)
        assert status == 422
        assert (
            "provisioner",
            "FieldValueInvalid",
            'Invalid value: "other.example.com": field is immutable',
        ) in causes(answer)

        def label(sc: Obj) -> None:
            sc["metadata"]["labels"] = {"tier": "fast"}

        status, answer = await _put(api_client, path, label)
        assert status == 200, answer
    finally:
        await raw(api_client, "DELETE", path)


async def test_csi_driver_attach_required_is_immutable(
    api_client: client.ApiClient, namespace: str
) -> None:
    name = f"{namespace}-a"
    path = f"{STORAGE}/csidrivers/{name}"
    status, answer, _ = await raw(
        api_client, "POST", f"{STORAGE}/csidrivers", body=csi_driver(name)
    )
    assert status == 201, answer
    try:

        def flip(drv: Obj) -> None:
            drv["spec"]["attachRequired"] = False

        status, answer = await _put(api_client, path, flip)
        assert status == 422
        assert (
            "spec.attachedRequired",
            "FieldValueInvalid",
            "Invalid value: false: field is immutable",
        ) in causes(answer)
    finally:
        await raw(api_client, "DELETE", path)


async def test_pod_ephemeral_claim_template_is_validated(
    api_client: client.ApiClient, namespace: str
) -> None:
    body = pod("p")
    template: Obj = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {}}}}
    body["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}]
    pods = f"/api/v1/namespaces/{namespace}/pods"
    status, answer, _ = await raw(api_client, "POST", pods, body=body)
    assert status == 422, answer
    assert (
        "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]",
        "FieldValueRequired",
        "Required value",
    ) in causes(answer)
    template["spec"]["resources"]["requests"]["storage"] = "1Gi"
    status, answer, _ = await raw(api_client, "POST", pods, body=body)
    assert status == 201, answer
