"""The base of plugin args models: what ``pluginConfig`` args look like to a plugin.

kube-scheduler's plugin args are camelCase and strict: an unknown field is a
configuration error, not something silently ignored. A plugin's ``Args``
model derived from :class:`PluginArgs` gets the same behaviour, and the
scheduler validates it before it starts, naming the field path on errors.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

ArgsT = TypeVar("ArgsT", bound=BaseModel)


class PluginArgs(BaseModel):
    """Base of ``pluginConfig`` args: kube's camelCase aliases, nothing unknown, frozen."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
    )


def coerce_args(model: type[ArgsT], args: Any) -> ArgsT:
    """The plugin's args as its model: ``None`` means the defaults, a dict is validated.

    For a plugin constructed outside the scheduler (its own tests, another
    tool), which may pass None, a dict from YAML, or the model itself.

    Examples:
        >>> class ZoneArgs(PluginArgs):
        ...     node_label: str = "topology.kubernetes.io/zone"
        ...     required: bool = False
        >>> coerce_args(ZoneArgs, {"nodeLabel": "zone", "required": True})
        ZoneArgs(node_label='zone', required=True)
        >>> coerce_args(ZoneArgs, None).node_label
        'topology.kubernetes.io/zone'
        >>> coerce_args(ZoneArgs, {"nodeLable": "zone"})
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for ZoneArgs
        nodeLable
          Extra inputs are not permitted ...
    """
    if args is None:
        return model()
    if isinstance(args, model):
        return args
    if isinstance(args, BaseModel):
        args = args.model_dump(by_alias=True, exclude_unset=True)
    return model.model_validate(args)
