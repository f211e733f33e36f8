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

#: Columns of the resource matrices (``nodes.allocatable[:, CPU]``): the four
#: base resources always sit here; extended resources follow, see ``resource_column``.
CPU, MEMORY, EPHEMERAL_STORAGE, PODS = 0, 1, 2, 3
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
    def raw(self) -> Mapping[str, Any]: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def key(self) -> str:
        """``namespace/name``, as kube-scheduler names pods in messages."""

    @property
    def uid(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def annotations(self) -> Mapping[str, str]: ...
    @property
    def scheduler_name(self) -> str: ...
    @property
    def node_name(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def creation_timestamp(self) -> str: ...
    @property
    def requests(self) -> Mapping[str, int]:
        """Effective requests (kube's rules for init containers and overhead), in base units."""

    @property
    def non_zero_requests(self) -> tuple[int, int]:
        """cpu (milli) and memory with kube's defaults for unset requests, for scoring."""

    @property
    def node_selector(self) -> Mapping[str, str]: ...
    @property
    def affinity(self) -> Mapping[str, Any]: ...
    @property
    def tolerations(self) -> Sequence[Toleration]: ...
    @property
    def host_ports(self) -> Sequence[HostPort]: ...
    @property
    def scheduling_gates(self) -> Sequence[str]: ...
    @property
    def topology_spread_constraints(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def images(self) -> Sequence[str]: ...
    @property
    def pvc_names(self) -> Sequence[str]: ...
    @property
    def ephemeral_pvc_names(self) -> Sequence[str]: ...
    @property
    def resource_claims(self) -> Sequence[str]: ...
    @property
    def nominated_node_name(self) -> str: ...
    @property
    def deleting(self) -> bool: ...
    @property
    def phase(self) -> str: ...
    @property
    def cache(self) -> dict[str, Any]:
        """This plugin's memo for the pod (key it by the plugin's name)."""


class QueuedPod(Protocol):
    """A pod in the scheduling queue, as QueueSort sees it."""

    @property
    def pod(self) -> Pod: ...
    @property
    def timestamp(self) -> float:
        """When it last entered the queue (monotonic seconds): PrioritySort's tie-break."""

    @property
    def attempts(self) -> int: ...


class Node(Protocol):
    """One node, for plugins that think node by node (the per-node extension hooks)."""

    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def taints(self) -> Sequence[Taint]: ...
    @property
    def unschedulable(self) -> bool: ...
    @property
    def images(self) -> Mapping[str, int]:
        """Image name -> size in bytes, from ``status.images``."""

    @property
    def raw(self) -> Mapping[str, Any]: ...
    @property
    def allocatable(self) -> Mapping[str, int]: ...
    @property
    def requested(self) -> Mapping[str, int]:
        """What the pods accounted on the node request, by resource."""

    @property
    def pods(self) -> Sequence[Pod]:
        """The pods accounted on the node (bound, assumed, or nominated in a what-if)."""

    @property
    def host_ports(self) -> Sequence[HostPort]: ...


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
