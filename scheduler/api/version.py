"""Versioning of the plugin API.

A plugin declares the API version it was written against as the class
attribute ``api_version = "MAJOR.MINOR"``. The rule:

- Within a major, minors only add things: a plugin runs on this framework
  when its major is ours and its minor is not newer than ours.
- A major may remove or change things. The framework still runs plugins of
  the majors in :data:`LEGACY_MAJORS` through a compatibility layer, up to
  the last minor that major had (:data:`LEGACY_MAJORS` maps the major to it):
  such plugins get exactly the arguments they were written for.
- ``api_version`` is how the two are told apart: the framework hands 2.x
  plugins the read-only views of :mod:`scheduler.api.views` and 1.x plugins
  the objects of API 1.3 (the live ``NodeSet``/``NodeInfo``/``PodInfo``).

History: 1.0 first release; 1.1 ``node_local`` and ``pods_via_requested``;
1.2 ``ObjectStore.revision`` and ``pre_bind_timeout``; 1.3 ``Diagnosis.pre_filter_code``;
2.0 hooks get read-only views, ``Handle.nodes()``, a small ``__all__``
(internals such as ``NodeTable`` import with a DeprecationWarning);
2.1 preemption for plugins: ``Handle.preemption(policy)`` and
:mod:`scheduler.api.preemption` (kube's ``preemption.Interface``);
``ObjectStore.list(namespace, labels=...)`` answered from a label index; the
transformer hooks (``before_pre_filter``, ``after_pre_filter``,
``before_filter``, ``before_score``), ``NodeAdjustment``,
``handle.framework.pod_from_object``, ``handle.framework.find_node`` and
``Handle.is_leader``;
2.2 feature gates: ``FeatureSpec``, ``Plugin.feature_gates``, ``Plugin.gated_by``,
``Handle.feature_gates``;
2.3 ``ObjectStore.changed_since(revision)``: which objects changed, so an index
of many objects is kept current at the cost of the changes.
"""

from __future__ import annotations

#: The plugin API this framework provides; a plugin's ``api_version`` is checked against it.
PLUGIN_API_VERSION = "2.3"

#: Majors still served through the compatibility layer -> their last minor.
LEGACY_MAJORS: dict[int, int] = {1: 3}


def parse_api_version(value: object) -> tuple[int, int]:
    """Parse ``"MAJOR.MINOR"`` (or ``"MAJOR"``); raise ValueError on anything else."""
    if not isinstance(value, str):
        raise ValueError(f"api_version must be a string like '2.0', got {value!r}")
    parts = value.strip().split(".")
    if not 1 <= len(parts) <= 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"api_version must look like 'MAJOR.MINOR', got {value!r}")
    major = int(parts[0])
    minor = int(parts[1]) if len(parts) == 2 else 0
    return major, minor


def is_compatible(plugin_version: str, framework_version: str = PLUGIN_API_VERSION) -> bool:
    """Whether a plugin written for ``plugin_version`` can run on ``framework_version``.

    Examples:
        >>> is_compatible("2.3"), is_compatible("1.3"), is_compatible("2.4"), is_compatible("3.0")
        (True, True, False, False)
    """
    p_major, p_minor = parse_api_version(plugin_version)
    f_major, f_minor = parse_api_version(framework_version)
    if p_major == f_major:
        return p_minor <= f_minor
    if framework_version == PLUGIN_API_VERSION and p_major in LEGACY_MAJORS:
        return p_minor <= LEGACY_MAJORS[p_major]
    return False


def uses_views(plugin_version: str) -> bool:
    """Whether a plugin of this (compatible) version gets 2.0's read-only views."""
    return parse_api_version(plugin_version)[0] >= 2
