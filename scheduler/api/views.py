"""What a plugin sees of the cluster (API 2.0): read-only views, defined here, built elsewhere.

The scheduler keeps the cluster as a struct-of-arrays table that it updates
in place from watch events. Plugin API 1.x handed hooks that live table;
any change to its layout could break a plugin, and a plugin writing to it
corrupted the state every later pod was scheduled on. API 2.0 hooks get the
protocols below instead: the framework implements them over the table, the
arrays are numpy views with ``flags.writeable = False`` (a write raises
``ValueError: assignment destination is read-only``), and nothing here
depends on how the table is laid out.

Rows of a :class:`Nodes` are positions ``0 .. len(nodes) - 1``: every array
a view returns, and every array a hook returns, is aligned with them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from scheduler.model.ports import HostPort
from scheduler.model.taints import Taint, Toleration

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
LabelIdArray = npt.NDArray[np.int32]

# Columns of the resource matrices (``nodes.allocatable[:, CPU]``): the four
# base resources always sit here; extended resources follow, see ``resource_column``.
#: Column of cpu in ``Nodes.allocatable`` and ``Nodes.requested`` (millicores).
CPU = 0
#: Column of memory (bytes).
MEMORY = 1
#: Column of ephemeral-storage (bytes).
EPHEMERAL_STORAGE = 2
#: Column of the pod count: ``allocatable`` is how many pods the node takes,
#: ``requested`` how many are accounted on it.
PODS = 3
BASE_RESOURCES: tuple[str, ...] = ("cpu", "memory", "ephemeral-storage", "pods")

#: Label value id of a node lacking the key (``label_values`` returns it).
LABEL_ABSENT = -1
#: Label value id of a value no node has (``label_id`` returns it): matches nothing.
LABEL_UNKNOWN = -2


class Pod(Protocol):
    """One pod, parsed once; plugins read it, never change it.

    ``raw`` is the pod's API object (its containers frozen against
    mutation); the other attributes are the parts plugins need, parsed.
    ``cache`` is the one writable part: a memo a plugin may keep per pod,
    keyed by its own name.
    """

    @property
    def raw(self) -> Mapping[str, Any]:
        """The pod's API object as the informer delivered it (read-only: containers are frozen)."""

    @property
    def namespace(self) -> str:
        """``metadata.namespace``."""

    @property
    def name(self) -> str:
        """``metadata.name``: differs between identical pods (``node_local`` must ignore it)."""

    @property
    def key(self) -> str:
        """``namespace/name``, as kube-scheduler names pods in messages."""

    @property
    def uid(self) -> str:
        """``metadata.uid``: the key of Permit's waiting pods (``handle.get_waiting_pod``)."""

    @property
    def labels(self) -> Mapping[str, str]:
        """``metadata.labels`` (a plain mapping: pods' labels are not interned as ids)."""

    @property
    def annotations(self) -> Mapping[str, str]:
        """``metadata.annotations``."""

    @property
    def scheduler_name(self) -> str:
        """``spec.schedulerName``: the profile that schedules the pod."""

    @property
    def node_name(self) -> str:
        """``spec.nodeName``: empty while the pod is unscheduled."""

    @property
    def priority(self) -> int:
        """``spec.priority`` as the admission controller resolved it (0 when unset)."""

    @property
    def creation_timestamp(self) -> str:
        """``metadata.creationTimestamp`` as the API's RFC 3339 string (empty when unset)."""

    @property
    def requests(self) -> Mapping[str, int]:
        """Effective requests (kube's rules for init containers and overhead), in base units."""

    @property
    def non_zero_requests(self) -> tuple[int, int]:
        """cpu (milli) and memory with kube's defaults for unset requests, for scoring."""

    @property
    def node_selector(self) -> Mapping[str, str]:
        """``spec.nodeSelector``."""

    @property
    def affinity(self) -> Mapping[str, Any]:
        """``spec.affinity`` as in the API object (empty when unset)."""

    @property
    def tolerations(self) -> Sequence[Toleration]:
        """``spec.tolerations``, parsed; match them against ``Nodes.taints``."""

    @property
    def host_ports(self) -> Sequence[HostPort]:
        """The host ports its containers ask for (what NodePorts checks)."""

    @property
    def scheduling_gates(self) -> Sequence[str]:
        """Names of ``spec.schedulingGates``: a gated pod is held at PreEnqueue."""

    @property
    def topology_spread_constraints(self) -> Sequence[Mapping[str, Any]]:
        """``spec.topologySpreadConstraints`` as in the API object."""

    @property
    def images(self) -> Sequence[str]:
        """Images of its init and regular containers (what ImageLocality scores)."""

    @property
    def pvc_names(self) -> Sequence[str]:
        """Names of the PersistentVolumeClaims its volumes use, generic ephemeral ones included."""

    @property
    def ephemeral_pvc_names(self) -> Sequence[str]:
        """The subset of ``pvc_names`` created for generic ephemeral volumes."""

    @property
    def resource_claims(self) -> Sequence[str]:
        """Names of ``spec.resourceClaims`` (dynamic resource allocation)."""

    @property
    def nominated_node_name(self) -> str:
        """``status.nominatedNodeName``: where a preemption made room for it (or empty)."""

    @property
    def deleting(self) -> bool:
        """Whether ``metadata.deletionTimestamp`` is set: a terminating pod is not scheduled."""

    @property
    def phase(self) -> str:
        """``status.phase`` (``Pending``, ``Running`` ...)."""

    @property
    def cache(self) -> dict[str, Any]:
        """This plugin's memo for the pod (key it by the plugin's name)."""


class QueuedPod(Protocol):
    """A pod in the scheduling queue, as QueueSort sees it."""

    @property
    def pod(self) -> Pod:
        """The queued pod itself."""

    @property
    def timestamp(self) -> float:
        """When it last entered the queue (monotonic seconds): PrioritySort's tie-break."""

    @property
    def attempts(self) -> int:
        """How many scheduling attempts the pod has had so far."""


class Node(Protocol):
    """One node, for plugins that think node by node (the per-node extension hooks)."""

    @property
    def name(self) -> str:
        """``metadata.name``."""

    @property
    def labels(self) -> Mapping[str, str]:
        """``metadata.labels`` as strings (``Nodes.label_values`` has them as ids)."""

    @property
    def taints(self) -> Sequence[Taint]:
        """``spec.taints``, parsed."""

    @property
    def unschedulable(self) -> bool:
        """``spec.unschedulable``: the node is cordoned."""

    @property
    def images(self) -> Mapping[str, int]:
        """Image name -> size in bytes, from ``status.images``.

        A name listed in two entries has the first entry's size, as in
        kube-scheduler's image states.
        """

    @property
    def raw(self) -> Mapping[str, Any]:
        """The node's API object (read-only), for what the parsed attributes do not cover."""

    @property
    def allocatable(self) -> Mapping[str, int]:
        """``status.allocatable`` in base units (cpu in millicores), by resource name."""

    @property
    def requested(self) -> Mapping[str, int]:
        """What the pods accounted on the node request, by resource."""

    @property
    def pods(self) -> Sequence[Pod]:
        """The pods accounted on the node (bound, assumed, or nominated in a what-if)."""

    @property
    def host_ports(self) -> Sequence[HostPort]:
        """Host ports used by the pods accounted on the node."""


class Nodes(Protocol):
    """The candidate nodes of one hook call, as read-only arrays and lookups.

    Arrays are aligned with the candidates (``len(nodes)`` rows) and read-only;
    derive new arrays from them (``nodes.allocatable[:, CPU] - ...``) rather
    than editing them. They are built once per candidate set and shared by
    the plugins of a cycle, so reading them in every hook costs nothing.
    """

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Node]: ...

    @property
    def names(self) -> Sequence[str]:
        """Node names, aligned with the rows."""

    def node(self, i: int) -> Node:
        """The ``i``-th candidate as a per-node view."""

    def index_of(self, name: str) -> int | None:
        """The row of node ``name`` among the candidates (None if it is not one)."""

    def subset(self, mask: BoolArray) -> Nodes:
        """The candidates where ``mask`` is true (same order)."""

    # -- labels ---------------------------------------------------------------

    def label_values(self, key: str) -> LabelIdArray:
        """The value id of label ``key`` per node (:data:`LABEL_ABSENT` where absent)."""

    def label_id(self, key: str, value: str) -> int:
        """The id ``label_values(key)`` uses for ``value``.

        :data:`LABEL_UNKNOWN` when no node has it, so a comparison matches nothing.
        """

    def label_value(self, key: str, value_id: int) -> str | None:
        """The label value an id stands for (None for a negative id)."""

    def match_labels(self, requirements: Sequence[tuple[str, str, Sequence[str]]]) -> BoolArray:
        """AND of ``(key, operator, values)`` requirements, per node.

        Operators as in label selectors and node selector terms: ``In``,
        ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``.
        """

    # -- resources ------------------------------------------------------------

    @property
    def resources(self) -> Sequence[str]:
        """Resource names by column; :data:`CPU` .. :data:`PODS` first, extended after."""

    def resource_column(self, name: str) -> int | None:
        """The column of resource ``name`` (None: no node offers or uses it)."""

    @property
    def allocatable(self) -> IntArray:
        """``(len(nodes), len(resources))``: what each node offers (cpu in milli)."""

    @property
    def requested(self) -> IntArray:
        """``(len(nodes), len(resources))``: what the pods on a node request (``pods``: count)."""

    @property
    def non_zero_requested(self) -> IntArray:
        """``(len(nodes), 2)``: cpu and memory requested with kube's non-zero defaults."""

    # -- other columns --------------------------------------------------------

    @property
    def unschedulable(self) -> BoolArray:
        """``spec.unschedulable`` (cordoned) per node."""

    @property
    def taints(self) -> Sequence[Taint]:
        """The distinct taints of the cluster: the columns of :attr:`taint_matrix`."""

    @property
    def taint_matrix(self) -> BoolArray:
        """``(len(nodes), len(taints))``: whether each node carries each taint."""

    @property
    def cluster_size(self) -> int:
        """How many nodes the cluster has (candidates or not), e.g. for image spread."""
