"""kube-apiserver's DRA validation pieces every resource.k8s.io kind shares, and DeviceClass.

``pkg/apis/resource/validation``'s hand-written rules, which are authoritative in
kube 1.36 (declarative validation only shadows them for these kinds), with their
field paths and messages: names, qualified attribute names, device selectors
(CEL through :mod:`scheduler.model.devicecel` once it is there), opaque
configuration, taints and tolerations, list size limits and duplicates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import Any

from scheduler.model.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from scheduler.model.resources import is_extended_resource_name
from scheduler.simulation.emulator import gojson
from scheduler.simulation.emulator.validation import (
    Cause,
    csi_driver_name,
    duplicate,
    invalid,
    not_supported,
    required,
)

Obj = dict[str, Any]

SELECTORS_MAX = 32
CONFIG_MAX = 32
REQUESTS_MAX = 32  # DeviceRequestsMaxSize = AllocationResultsMaxSize
CEL_MAX_LENGTH = 10 * 1024
OPAQUE_MAX_LENGTH = 10 * 1024
DEVICE_MAX_ID_LENGTH = 32
POOL_NAME_MAX = 253
BINDING_CONDITIONS_MAX = 4
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")  # sets.List: sorted
TOLERATION_OPERATORS = ("Equal", "Exists")
C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a "
    "string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
    "'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"
)
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def mapping(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def too_long(path: str, limit: int) -> Cause:
    unit = "byte" if limit == 1 else "bytes"
    return (path, "FieldValueTooLong", f"Too long: may not be more than {limit} {unit}")


def too_many(path: str, count: int, limit: int) -> Cause:
    unit = "item" if limit == 1 else "items"
    return (path, "FieldValueTooMany", f"Too many: {count}: must have at most {limit} {unit}")


def not_found(path: str, value: Any, why: str = "") -> Cause:
    return (
        path,
        "FieldValueNotFound",
        f"Not found: {gojson.marshal(value)}" + (f": {why}" if why else ""),
    )


def immutable(path: str, value: Any, type_name: str = "") -> Cause:
    """ValidateImmutableField's error; structs print as the internal Go type."""
    shown = gojson.render(type_name, value) if type_name else None
    if shown is None:
        return invalid(path, value, "field is immutable")
    return (path, "FieldValueInvalid", f"Invalid value: {shown}: field is immutable")


def check_list(
    values: Any,
    limit: int,
    check: Callable[[Any, str], list[Cause]],
    path: str,
    key: Callable[[Any], Hashable] | None = None,
) -> list[Cause]:
    """validateSlice / validateSet: too many entries stop there; else each entry,
    then (for sets) ``Duplicate value`` on repeated keys."""
    entries = items(values)
    if limit >= 0 and len(entries) > limit:
        return [too_many(path, len(entries), limit)]
    causes: list[Cause] = []
    for i, entry in enumerate(entries):
        causes += check(entry, f"{path}[{i}]")
    if key is not None:
        seen: set[Hashable] = set()
        for i, entry in enumerate(entries):
            k = key(entry)
            if k in seen:
                causes.append(duplicate(f"{path}[{i}]", k))
            else:
                seen.add(k)
    return causes


def name_of(entry: Any) -> str:
    return str(mapping(entry).get("name") or "")


def dns_label(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in dns1123_label_errors(value)]


def dns_subdomain(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in dns1123_subdomain_errors(value)]


def label_name(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in qualified_name_errors(value)]


def label_value(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in label_value_errors(value)]


def pool_name(name: str, path: str) -> list[Cause]:
    if not name:
        return [required(path)]
    causes: list[Cause] = []
    if len(name) > POOL_NAME_MAX:
        causes.append(too_long(path, POOL_NAME_MAX))
    for part in name.split("/"):
        causes += dns_subdomain(part, path)
    return causes


def device_class_name(name: str, path: str) -> list[Cause]:
    return [required(path)] if not name else dns_subdomain(name, path)


# -- qualified names ----------------------------------------------------------------


def _c_identifier(value: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if len(value) > DEVICE_MAX_ID_LENGTH:
        causes.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.match(value):
        causes.append(invalid(path, value, C_IDENTIFIER_MSG))
    return causes


def qualified_name(name: str, path: str) -> list[Cause]:
    """validateQualifiedName: a C identifier, optionally behind ``<driver domain>/``.
    Like kube, more than one slash goes unchecked."""
    parts = name.split("/")
    if len(parts) == 1:
        return _c_identifier(name, path)
    if len(parts) != 2:
        return []
    causes: list[Cause] = []
    if not parts[0]:
        causes.append(invalid(path, "", "the domain must not be empty"))
    else:
        causes += csi_driver_name(parts[0], path)
    if not parts[1]:
        causes.append(invalid(path, "", "the name must not be empty"))
    else:
        causes += _c_identifier(parts[1], path)
    return causes


def fully_qualified_name(name: str, path: str) -> list[Cause]:
    causes = qualified_name(name, path)
    if "/" not in name:
        causes.append(
            invalid(
                path,
                name,
                "a fully qualified name must be a domain and a name separated by a slash",
            )
        )
    return causes


def truncated(key: str, limit: int) -> str:
    """truncateIfTooLong: map keys in field paths are shortened in the middle."""
    limit = max(limit, 16)
    if len(key) <= limit:
        return key
    remaining = limit - 3
    return key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2 :]


# -- selectors and configuration ----------------------------------------------------

_CAUSE_PREFIXES = (
    ("Invalid value: ", "FieldValueInvalid"),
    ("Required value", "FieldValueRequired"),
    ("Forbidden: ", "FieldValueForbidden"),
    ("Too long: ", "FieldValueTooLong"),
    ("Internal error: ", "InternalError"),
)


def cel_expression(expression: str, path: str, *, stored: bool) -> list[Cause]:
    """validateCELSelector. Expressions stored before (an update that leaves the
    selectors alone) are not recompiled: kube compiles them in its more lenient
    stored-expressions environment, which accepts what was accepted before."""
    if len(expression) > CEL_MAX_LENGTH:
        return [too_long(path, CEL_MAX_LENGTH)]
    if stored:
        return []
    try:
        from scheduler.model.devicecel import validate_expression  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # the CEL module is not there yet: accept, as before
        return []
    causes: list[Cause] = []
    for message in validate_expression(expression):
        text = str(message)
        reason = next((r for prefix, r in _CAUSE_PREFIXES if text.startswith(prefix)), None)
        if reason is not None:
            causes.append((path, reason, text))
        else:
            causes.append(invalid(path, expression, text))
    return causes


def selectors(values: Any, path: str, *, stored: bool) -> list[Cause]:
    def one(selector: Any, where: str) -> list[Cause]:
        cel = mapping(selector).get("cel")
        if not isinstance(cel, dict):
            return [required(f"{where}.cel")]
        return cel_expression(
            str(cel.get("expression") or ""), f"{where}.cel.expression", stored=stored
        )

    return check_list(values, SELECTORS_MAX, one, path)


def raw_extension(value: Any, path: str, *, stored: bool, limit: int) -> list[Cause]:
    """validateRawExtension on the decoded JSON (its size: the compact encoding)."""
    if value is None:
        return [required(path)]
    if not stored and len(gojson.marshal(value).encode()) > limit:
        return [too_long(path, limit)]
    if not isinstance(value, dict):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def device_configuration(config: Any, path: str, *, stored: bool) -> list[Cause]:
    opaque = mapping(config).get("opaque")
    if not isinstance(opaque, dict):
        return [required(f"{path}.opaque")]
    causes = csi_driver_name(str(opaque.get("driver") or ""), f"{path}.opaque.driver")
    causes += raw_extension(
        opaque.get("parameters"),
        f"{path}.opaque.parameters",
        stored=stored,
        limit=OPAQUE_MAX_LENGTH,
    )
    return causes


# -- taints and tolerations ---------------------------------------------------------


def toleration(tol: Any, path: str) -> list[Cause]:
    tol = mapping(tol)
    causes: list[Cause] = []
    key = str(tol.get("key") or "")
    if key:
        causes += label_name(key, f"{path}.key")
    op = str(tol.get("operator") or "")
    value = str(tol.get("value") or "")
    if op == "Exists":
        if value:
            causes.append(invalid(f"{path}.value", value, "must be empty for operator `Exists`"))
    elif op == "Equal":
        causes += label_value(value, f"{path}.value")
    elif not op:
        causes.append(required(f"{path}.operator"))
    else:
        causes.append(not_supported(f"{path}.operator", op, TOLERATION_OPERATORS))
    effect = str(tol.get("effect") or "")
    if effect and effect not in TAINT_EFFECTS:
        causes.append(not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return causes


def tolerations(values: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, tol in enumerate(items(values)):
        causes += toleration(tol, f"{path}[{i}]")
    return causes


def taint(value: Any, path: str) -> list[Cause]:
    value = mapping(value)
    key = str(value.get("key") or "")
    causes = label_name(key, f"{path}.key")
    if value.get("value"):
        causes += label_value(str(value["value"]), f"{path}.value")
    effect = str(value.get("effect") or "")
    if not effect:
        causes.append(required(f"{path}.effect"))
    elif effect not in TAINT_EFFECTS:
        causes.append(not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return causes


def binding_conditions(device: Obj, path: str) -> list[Cause]:
    """validateDeviceBindingParameters (devices and allocation results)."""
    conditions = [str(c) for c in items(device.get("bindingConditions"))]
    failures = [str(c) for c in items(device.get("bindingFailureConditions"))]
    conds_path, fails_path = f"{path}.bindingConditions", f"{path}.bindingFailureConditions"
    causes = check_list(
        conditions, BINDING_CONDITIONS_MAX, lambda c, w: label_name(c, w), conds_path
    )
    causes += check_list(
        failures, BINDING_CONDITIONS_MAX, lambda c, w: label_name(c, w), fails_path
    )
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        if condition in seen:
            causes.append(duplicate(f"{conds_path}[{i}]", condition))
        seen.add(condition)
    seen_failures: set[str] = set()
    for i, condition in enumerate(failures):
        if condition in seen_failures:
            causes.append(duplicate(f"{fails_path}[{i}]", condition))
        seen_failures.add(condition)
        if condition in conditions:
            causes.append(
                invalid(
                    f"{fails_path}[{i}]",
                    condition,
                    "bindingFailureConditions must not overlap with bindingConditions",
                )
            )
    if not conditions and failures:
        causes.append(
            invalid(
                conds_path,
                device.get("bindingConditions"),
                "bindingConditions are required to use bindingFailureConditions",
            )
        )
    if not failures and conditions:
        causes.append(
            invalid(
                fails_path,
                device.get("bindingFailureConditions"),
                "bindingFailureConditions are required to use bindingConditions",
            )
        )
    return causes


# -- DeviceClass -----------------------------------------------------------------------


def device_class(obj: Obj, old: Obj | None = None) -> list[Cause]:
    """ValidateDeviceClass(Update): selectors and configs unchanged by an update are
    treated as stored (not recompiled, no new size limit)."""
    spec = mapping(obj.get("spec"))
    old_spec = mapping(old.get("spec")) if old is not None else None
    stored = old_spec is not None and old_spec.get("selectors") == spec.get("selectors")
    causes = selectors(spec.get("selectors"), "spec.selectors", stored=stored)
    stored = old_spec is not None and old_spec.get("config") == spec.get("config")
    causes += check_list(
        spec.get("config"),
        CONFIG_MAX,
        lambda config, where: device_configuration(config, where, stored=stored),
        "spec.config",
    )
    name = spec.get("extendedResourceName")
    if name is not None and not is_extended_resource_name(str(name)):
        causes.append(
            invalid("spec.extendedResourceName", name, "must be a valid extended resource name")
        )
    return causes
