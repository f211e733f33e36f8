"""Feature gates with kube's rules: stages, defaults, locks, dependencies, the flag syntax.

kube-scheduler turns alpha code on and off with ``--feature-gates``; users of
this scheduler set the same names (``pluggableScheduler.featureGates`` or the
same flag), and plugins may declare gates of their own. Everything here is
pure data and rules so the config resolver, the CLI and the plugin API agree
on what a gate setting means and which words an error uses (component-base's
``featuregate`` package is the reference for both).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal

Stage = Literal["Alpha", "Beta", "GA", "Deprecated"]
STAGES: Final[tuple[Stage, ...]] = ("Alpha", "Beta", "GA", "Deprecated")

#: kube's special gates: set every unlocked alpha (beta) gate at once.
ALL_ALPHA: Final = "AllAlpha"
ALL_BETA: Final = "AllBeta"


@dataclass(frozen=True, slots=True)
class FeatureSpec:
    """One gate: its default, its stage and whether it is locked to its default.

    A locked gate (kube's ``LockToDefault``, usual for GA and for deprecated
    gates about to go) may only be set to its default; anything else is an
    error, as in kube.
    """

    default: bool
    stage: Stage
    locked: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.default, bool):
            raise TypeError(f"FeatureSpec.default must be a bool, got {self.default!r}")
        if self.stage not in STAGES:
            raise ValueError(
                f"FeatureSpec.stage must be one of {', '.join(STAGES)}, got {self.stage!r}"
            )


class FeatureGateError(ValueError):
    """A gate setting kube would refuse; ``gate`` is the offending name ("" for syntax)."""

    def __init__(self, gate: str, message: str) -> None:
        super().__init__(message)
        self.gate = gate


def parse_feature_gates_flag(value: str) -> dict[str, bool]:
    """``Name=true,Other=false`` as kube's ``--feature-gates`` reads it (strconv.ParseBool)."""
    out: dict[str, bool] = {}
    for item in value.split(","):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise FeatureGateError(key, f"missing bool value for {key}")
        raw = raw.strip()
        if raw in ("1", "t", "T", "true", "TRUE", "True"):
            out[key] = True
        elif raw in ("0", "f", "F", "false", "FALSE", "False"):
            out[key] = False
        else:
            raise FeatureGateError(
                key,
                f'invalid value of {key}={raw}, err: strconv.ParseBool: parsing "{raw}": '
                "invalid syntax",
            )
    return out


class FeatureGates(Mapping[str, bool]):
    """The effective gates: every known gate's value (read-only)."""

    __slots__ = ("_known", "_values")

    def __init__(self, known: Mapping[str, FeatureSpec], values: Mapping[str, bool]) -> None:
        self._known = dict(known)
        self._values = {name: values.get(name, spec.default) for name, spec in known.items()}

    def __getitem__(self, name: str) -> bool:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on; an unknown name is a KeyError naming it."""
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"unknown feature gate {name!r}") from None

    def spec(self, name: str) -> FeatureSpec:
        return self._known[name]

    def changed(self) -> dict[str, bool]:
        """The gates whose value differs from their default (what a log line shows)."""
        return {n: v for n, v in self._values.items() if v != self._known[n].default}


def effective_gates(
    known: Mapping[str, FeatureSpec],
    requested: Mapping[str, bool],
    dependencies: Mapping[str, tuple[str, ...]] | None = None,
) -> tuple[FeatureGates, list[FeatureGateError]]:
    """The gates after ``requested``, and every setting kube would refuse.

    kube's rules (component-base featuregate ``unsafeSetFromMap``): an unknown
    name, or a locked gate set away from its default, is an error; ``AllAlpha``
    and ``AllBeta`` set every unlocked gate of that stage, and a gate named
    explicitly wins over them; an enabled gate whose dependencies are off is an
    error naming them. On errors the returned gates are the defaults.
    """
    errors: list[FeatureGateError] = []
    values: dict[str, bool] = {}
    for special, stage in ((ALL_ALPHA, "Alpha"), (ALL_BETA, "Beta")):
        if special in requested:
            for name, gate_spec in known.items():
                if gate_spec.stage == stage and not gate_spec.locked:
                    values[name] = requested[special]
    for name, value in requested.items():
        if name in (ALL_ALPHA, ALL_BETA):
            continue
        spec = known.get(name)
        if spec is None:
            errors.append(FeatureGateError(name, f"unrecognized feature gate: {name}"))
            continue
        if spec.locked and value != spec.default:
            errors.append(
                FeatureGateError(
                    name,
                    f"cannot set feature gate {name} to {str(value).lower()}, feature is locked "
                    f"to {str(spec.default).lower()}",
                )
            )
            continue
        values[name] = value
    if errors:
        return FeatureGates(known, {}), errors
    gates = FeatureGates(known, values)
    for name, deps in sorted((dependencies or {}).items()):
        if gates.get(name):
            off = [d for d in deps if d in gates and not gates[d]]
            if off:
                errors.append(
                    FeatureGateError(
                        name,
                        f"{name} is enabled, but depends on features that are disabled: "
                        f"[{' '.join(off)}]",
                    )
                )
    if errors:
        return FeatureGates(known, {}), errors
    return gates, []
