"""Reading a config file and turning every problem into one readable line.

Users fix configs from error messages, so each problem is reported on its own
line prefixed with the path of the field at fault, written the way the user
wrote it (``profiles[0].plugins.score.enabled[1].weight``), and all problems
are reported together rather than one per run.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from scheduler.config.models import SchedulerConfiguration, semantic_problems
from scheduler.config.yamlfiles import DepthLimitedSafeLoader, read_text, yaml_error_text
from scheduler.errors import UserError

__all__ = ["format_path", "load_config", "read_config_document", "validation_error_lines"]

_REQUIRED_TYPE_KEYS = ("apiVersion", "kind")


#: The configuration used when none is given: every profile default, as kube-scheduler.
DEFAULT_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
}


def format_path(loc: Sequence[int | str], prefix: str = "") -> str:
    """Render a pydantic error location as ``a.b[0].c``, appended to ``prefix``."""
    path = prefix
    for item in loc:
        if isinstance(item, int):
            path += f"[{item}]"
        else:
            path += f".{item}" if path else str(item)
    return path


def _unwrap(annotation: Any) -> Any:
    """Strip ``Optional``/``Annotated`` wrappers to find the type an error walked into."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _model_at(model: type[BaseModel], loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model class reached by following ``loc`` from ``model``, if it is a model."""
    current: Any = model
    for item in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            if not isinstance(item, str):
                return None
            field = next((f for n, f in current.model_fields.items() if item in (n, f.alias)), None)
            if field is None:
                return None
            current = field.annotation
        else:
            origin = typing.get_origin(current)
            args = typing.get_args(current)
            if origin is list and args and isinstance(item, int):
                current = args[0]
            elif origin is dict and len(args) == 2:
                current = args[1]
            else:
                return None
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _unknown_field_message(model: type[BaseModel] | None, loc: Sequence[int | str]) -> str:
    if not loc or not isinstance(loc[-1], str):
        return "unknown field"
    parent = _model_at(model, loc[:-1]) if model is not None else None
    if parent is None:
        return "unknown field"
    known = [f.alias or n for n, f in parent.model_fields.items()]
    close = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6)
    if close:
        return f"unknown field (did you mean {close[0]!r}?)"
    return f"unknown field; valid fields here: {', '.join(known)}"


def validation_error_lines(
    error: ValidationError, *, prefix: str = "", model: type[BaseModel] | None = None
) -> list[str]:
    """One ``path: message`` line per error in ``error``.

    ``prefix`` is the path of the validated object inside the whole config
    (used for plugin args); ``model`` is the validated class, used to suggest
    the field a typo meant.
    """
    lines: list[str] = []
    for item in error.errors(include_url=False):
        loc = item["loc"]
        if item["type"] == "extra_forbidden":
            message = _unknown_field_message(model, loc)
        elif item["type"] == "missing":
            message = "required field is missing"
        else:
            message = item["msg"]
        path = format_path(loc, prefix)
        lines.append(f"{path}: {message}" if path else message)
    return lines


class _StrictLoader(DepthLimitedSafeLoader):
    """A safe, depth-limited loader that rejects duplicate keys, as kube's strict decoder does."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Hashable, yaml.Mark] = {}
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable):
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    f"while reading a mapping (first {key!r} on line {seen[key].line + 1})",
                    node.start_mark,
                    f"duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_config_document(path: Path) -> Any:
    """Parse a YAML or JSON file (JSON is YAML) into Python data, or raise ``UserError``."""
    text = read_text(path, "config file")
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as err:
        raise UserError(f"config file {path} is not valid YAML: {yaml_error_text(err)}") from None


def load_config(source: Path | str | Mapping[str, Any]) -> SchedulerConfiguration:
    """Load and validate a ``KubeSchedulerConfiguration``.

    ``source`` is a path to a YAML or JSON file (a ``str`` is a path, never
    YAML text) or already-parsed data. Raises :class:`UserError` listing every
    problem with its field path. Plugin names and args are not checked here
    (they need the installed plugins): see :func:`scheduler.config.resolve_profiles`.
    """
    if isinstance(source, Mapping):
        data: Any = source
        origin = "configuration"
    else:
        path = Path(source)
        data = read_config_document(path)
        origin = str(path)
    if data is None:
        raise UserError(f"{origin} is empty: expected a KubeSchedulerConfiguration")
    if not isinstance(data, Mapping):
        raise UserError(
            f"{origin} must be a mapping (a KubeSchedulerConfiguration), "
            f"not a {type(data).__name__}"
        )
    problems = [
        f"{key}: required field is missing" for key in _REQUIRED_TYPE_KEYS if key not in data
    ]
    try:
        config = SchedulerConfiguration.model_validate(data)
    except ValidationError as err:
        problems.extend(validation_error_lines(err, model=SchedulerConfiguration))
    else:
        problems.extend(semantic_problems(config))
    if problems:
        raise UserError(f"invalid scheduler configuration in {origin}", details=problems)
    if not isinstance(source, Mapping):
        config._source = origin
    return config
