"""JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch.

Strategic merge needs each list's patch strategy, which kube-apiserver reads
from Go struct tags. Only lists that carry a merge key in the core API matter
to clients here (conditions merge by ``type`` above all, which is how
kube-scheduler and kubelets patch pod and node status), so they are listed in
one table; every other list is replaced, as its Go type would dictate.
"""

from __future__ import annotations

import copy
from typing import Any

Path = tuple[str, ...]

_CONTAINER_LISTS: dict[Path, str] = {
    ("ports",): "containerPort",
    ("env",): "name",
    ("volumeMounts",): "mountPath",
    ("volumeDevices",): "devicePath",
    ("resizePolicy",): "resourceName",
}

MERGE_KEYS: dict[Path, str] = {
    ("metadata", "ownerReferences"): "uid",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "hostAliases"): "ip",
    ("spec", "resourceClaims"): "name",
    ("spec", "schedulingGates"): "name",
    ("spec", "topologySpreadConstraints"): "topologyKey",
    ("status", "conditions"): "type",
    ("status", "podIPs"): "ip",
    ("status", "hostIPs"): "ip",
    ("status", "addresses"): "type",
}
for _containers in ("containers", "initContainers", "ephemeralContainers"):
    MERGE_KEYS[("spec", _containers)] = "name"
    for _sub, _key in _CONTAINER_LISTS.items():
        MERGE_KEYS[("spec", _containers, *_sub)] = _key

PRIMITIVE_MERGE: frozenset[Path] = frozenset({("metadata", "finalizers"), ("spec", "podCIDRs")})


class PatchError(ValueError):
    """The patch is well formed but cannot be applied (kube answers 422)."""


def _merge_key(path: Path) -> str | None:
    if len(path) > 2 and path[:2] == ("spec", "template"):
        path = path[2:]
    return MERGE_KEYS.get(path)


def _is_primitive_merge(path: Path) -> bool:
    if len(path) > 2 and path[:2] == ("spec", "template"):
        path = path[2:]
    return path in PRIMITIVE_MERGE


def _strip(value: Any) -> Any:
    """Drop ``$`` directives from a value inserted wholesale."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def strategic_merge(
    original: dict[str, Any], patch: dict[str, Any], path: Path = ()
) -> dict[str, Any] | None:
    """Return the merged map, or None when the patch says ``$patch: delete``."""
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return _strip(patch)  # type: ignore[no-any-return]
    if directive not in (None, "merge"):
        raise PatchError(f"Unknown patch type: {directive}")
    result = dict(original)
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = [item for item in result[name] if item not in value]
            continue
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            merged = strategic_merge(
                current if isinstance(current, dict) else {}, value, (*path, key)
            )
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            sub = (*path, key)
            merge_key = _merge_key(sub)
            current = result.get(key)
            current_list = current if isinstance(current, list) else []
            if merge_key is not None:
                result[key] = _merge_list(current_list, value, merge_key, sub)
            elif _is_primitive_merge(sub):
                merged_list = list(current_list)
                for item in value:
                    if item not in merged_list:
                        merged_list.append(item)
                result[key] = merged_list
            else:
                result[key] = _strip(value)
        else:
            result[key] = value
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(original: list[Any], patch: list[Any], key: str, path: Path) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [
            _strip(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "replace")
        ]
    out = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"list at {'.'.join(path)} merges by {key!r}; items must be objects")
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        wanted = item[key]
        pos = next(
            (i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == wanted),
            None,
        )
        if item.get("$patch") == "delete":
            out = [cur for cur in out if not (isinstance(cur, dict) and cur.get(key) == wanted)]
        elif pos is None:
            out.append(_strip(item))
        else:
            merged = strategic_merge(out[pos], item, path)
            if merged is None:
                del out[pos]
            else:
                out[pos] = merged
    return out


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str], op: str) -> tuple[Any, str]:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(
                    f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}"
                )
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise PatchError(
                f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}"
            )
    return node, tokens[-1]


def _index(node: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(node)
    if not token.isdigit():
        raise PatchError(f"invalid array index: {token!r}")
    idx = int(token)
    if idx > len(node) or (idx == len(node) and not allow_end):
        raise PatchError(f"array index out of bounds: {idx}")
    return idx


def _get(doc: Any, tokens: list[str], op: str) -> Any:
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens, op)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(
                f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}"
            )
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise PatchError(f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}")


def _remove(doc: Any, tokens: list[str], op: str) -> Any:
    parent, last = _parent(doc, tokens, op)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(
                f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}"
            )
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, allow_end=False))
    raise PatchError(f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}")


def _add(doc: Any, tokens: list[str], value: Any, op: str, *, replace: bool = False) -> Any:
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, op)
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(
                f"replace operation does not apply: doc is missing key: /{'/'.join(tokens)}"
            )
        parent[last] = value
    elif isinstance(parent, list):
        if replace:
            parent[_index(parent, last, allow_end=False)] = value
        else:
            parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise PatchError(f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}")
    return doc


def validate_json_patch(ops: Any) -> list[dict[str, Any]]:
    """Shape check; failures here are 400 (undecodable), not 422."""
    if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
        raise ValueError("json patch must be a list of operations")
    for o in ops:
        if o.get("op") not in ("add", "remove", "replace", "move", "copy", "test"):
            raise ValueError(f"Unexpected kind: {o.get('op')}")
        if not isinstance(o.get("path"), str):
            raise ValueError("operation missing 'path'")
    return ops


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    doc = copy.deepcopy(doc)
    for o in ops:
        op, tokens = o["op"], _pointer(o["path"])
        if op in ("add", "replace", "test") and "value" not in o:
            raise PatchError(f"{op} operation missing value")
        if op == "add":
            doc = _add(doc, tokens, copy.deepcopy(o["value"]), op)
        elif op == "replace":
            doc = _add(doc, tokens, copy.deepcopy(o["value"]), op, replace=True)
        elif op == "remove":
            _remove(doc, tokens, op)
        elif op == "test":
            if _get(doc, tokens, op) != o["value"]:
                raise PatchError(f"testing value {o['path']} failed: test failed")
        else:
            source = o.get("from")
            if not isinstance(source, str):
                raise PatchError(f"{op} operation missing from")
            src_tokens = _pointer(source)
            value = (
                _remove(doc, src_tokens, op)
                if op == "move"
                else copy.deepcopy(_get(doc, src_tokens, op))
            )
            doc = _add(doc, tokens, value, op)
    return doc
