"""The extension points a profile configures, named as in the config file.

The enum values are the camelCase keys of ``profiles[].plugins`` so that a
point read from YAML, printed in an error, or reported by the plugin catalog is
the same string everywhere. ``multiPoint`` is deliberately *not* a member: it
is a configuration shorthand that expands into the real points, never a place
where a plugin runs.
"""

from __future__ import annotations

import enum

__all__ = ["MULTI_POINT", "ExtensionPoint"]

MULTI_POINT = "multiPoint"
"""Config key of the shorthand that enables a plugin at every point it implements."""


class ExtensionPoint(enum.StrEnum):
    """A configurable extension point of the scheduling framework, in run order.

    NormalizeScore and Unreserve are parts of the Score and Reserve points (as
    in kube-scheduler), so they are not configured separately.
    """

    PRE_ENQUEUE = "preEnqueue"
    QUEUE_SORT = "queueSort"
    PRE_FILTER = "preFilter"
    FILTER = "filter"
    POST_FILTER = "postFilter"
    PRE_SCORE = "preScore"
    SCORE = "score"
    RESERVE = "reserve"
    PERMIT = "permit"
    PRE_BIND = "preBind"
    BIND = "bind"
    POST_BIND = "postBind"

    @property
    def field_name(self) -> str:
        """The attribute name of this point on :class:`~scheduler.config.models.Plugins`."""
        return _FIELD_NAMES[self]


_FIELD_NAMES: dict[ExtensionPoint, str] = {
    ExtensionPoint.PRE_ENQUEUE: "pre_enqueue",
    ExtensionPoint.QUEUE_SORT: "queue_sort",
    ExtensionPoint.PRE_FILTER: "pre_filter",
    ExtensionPoint.FILTER: "filter",
    ExtensionPoint.POST_FILTER: "post_filter",
    ExtensionPoint.PRE_SCORE: "pre_score",
    ExtensionPoint.SCORE: "score",
    ExtensionPoint.RESERVE: "reserve",
    ExtensionPoint.PERMIT: "permit",
    ExtensionPoint.PRE_BIND: "pre_bind",
    ExtensionPoint.BIND: "bind",
    ExtensionPoint.POST_BIND: "post_bind",
}
