"""The ``extenders`` section of ``KubeSchedulerConfiguration`` v1 (kube's ``Extender``).

Field names, defaults and validation are kube-scheduler 1.36's
(``pkg/scheduler/apis/config/{v1,validation}``), so a config written for
kube-scheduler, an HTTP extender's (HAMi, Stork) included, loads unchanged.
Cross-field rules (``weight`` when ``prioritizeVerb`` is set, one binder,
managed resource names unique across extenders) are in
:func:`extender_problems`, which names each field by its path
(``extenders[0].weight``) as kube's ``field.Path`` does.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from scheduler.model.durations import GoDuration
from scheduler.model.names import qualified_name_errors
from scheduler.model.resources import is_extended_resource_name

EXTENDER_PLUGIN: Final = "Extender"
"""The built-in plugin that runs the configured extenders in every profile."""
DEFAULT_EXTENDER_TIMEOUT: Final = 5.0
"""kube-scheduler's ``DefaultExtenderTimeout``: an unset (or zero) ``httpTimeout``."""
MAX_EXTENDER_PRIORITY: Final = 10
"""``k8s.io/kube-scheduler/extender/v1`` ``MaxExtenderPriority``."""


class _ExtenderModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,
        extra="forbid",
        strict=True,
        frozen=True,
    )


class ExtenderTLSConfig(_ExtenderModel):
    """kube's ``ExtenderTLSConfig``: how the HTTPS client trusts and presents itself."""

    insecure: bool = Field(default=False, description="Do not verify the server's certificate.")
    server_name: str = Field(
        default="", description="Name to check the server's certificate against (SNI)."
    )
    cert_file: str = Field(default="", description="Client certificate file (PEM).")
    key_file: str = Field(default="", description="Client key file (PEM).")
    ca_file: str = Field(default="", description="Trusted root certificates file (PEM).")
    cert_data: str = Field(default="", description="Client certificate (PEM), inline.")
    key_data: str = Field(default="", description="Client key (PEM), inline.")
    ca_data: str = Field(default="", description="Trusted root certificates (PEM), inline.")


class ExtenderManagedResource(_ExtenderModel):
    """An extended resource the extender manages."""

    name: str = Field(description="The extended resource's name (`example.com/gpu`).")
    ignored_by_scheduler: bool = Field(
        default=False,
        description="NodeResourcesFit does not check this resource; the extender does.",
    )


class Extender(_ExtenderModel):
    """One HTTP extender, called as kube-scheduler calls it (see [HTTP extenders](extenders.md))."""

    url_prefix: str = Field(
        alias="urlPrefix",
        min_length=1,
        description="Base URL of the extender; each verb is POSTed to `urlPrefix/verb`.",
    )
    filter_verb: str = Field(default="", description="Verb of the filter call; empty: none.")
    preempt_verb: str = Field(
        default="",
        description="Verb of the preemption call: the extender may drop candidate nodes or "
        "narrow their victims.",
    )
    prioritize_verb: str = Field(default="", description="Verb of the prioritize call.")
    weight: int = Field(
        default=0,
        description="Multiplier of the extender's scores (0..10, scaled to 0..100); "
        "must be positive with `prioritizeVerb`.",
    )
    bind_verb: str = Field(
        default="", description="Verb of the bind call: the extender binds, not DefaultBinder."
    )
    enable_https: bool = Field(
        default=False, alias="enableHTTPS", description="Call the extender over HTTPS."
    )
    tls_config: ExtenderTLSConfig | None = Field(
        default=None, alias="tlsConfig", description="TLS settings with `enableHTTPS`."
    )
    http_timeout: GoDuration = Field(
        default=0.0,
        alias="httpTimeout",
        description="Timeout of each call; 0 means kube's default, 5s.",
    )
    node_cache_capable: bool = Field(
        default=False,
        description="The extender caches nodes: it is sent node names, not node objects.",
    )
    managed_resources: list[ExtenderManagedResource] = Field(
        default_factory=list,
        description="Only pods requesting one of these go to the extender (none: every pod).",
    )
    ignorable: bool = Field(
        default=False,
        description="An extender that fails or cannot be reached is skipped instead of "
        "failing the pod.",
    )

    @property
    def timeout(self) -> float:
        """The call timeout in seconds, kube's default applied."""
        return self.http_timeout if self.http_timeout > 0 else DEFAULT_EXTENDER_TIMEOUT

    @property
    def name(self) -> str:
        """How kube-scheduler names an extender (``Name()``): its URL prefix."""
        return self.url_prefix


def _resource_name_problems(path: str, name: str) -> list[str]:
    """kube's ``validateExtendedResourceName``."""
    errors = qualified_name_errors(name)
    if errors:
        return [f"{path}: Invalid value: {name!r}: {e}" for e in errors]
    if not is_extended_resource_name(name):
        return [f"{path}: Invalid value: {name!r}: is an invalid extended resource name"]
    return []


def extender_problems(extenders: list[Extender]) -> list[str]:
    """kube's ``validateExtenders``: one ``path: message`` line per problem."""
    problems: list[str] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        path = f"extenders[{i}]"
        if ext.prioritize_verb and ext.weight <= 0:
            problems.append(
                f"{path}.weight: Invalid value: {ext.weight}: must have a positive weight "
                "applied to it"
            )
        if ext.bind_verb:
            binders += 1
        if ext.http_timeout < 0:
            problems.append(f"{path}.httpTimeout: must not be negative")
        for j, resource in enumerate(ext.managed_resources):
            rpath = f"{path}.managedResources[{j}].name"
            problems.extend(_resource_name_problems(rpath, resource.name))
            if resource.name in managed:
                problems.append(
                    f"{rpath}: Invalid value: {resource.name!r}: duplicate extender managed "
                    "resource name"
                )
            managed.add(resource.name)
    if binders > 1:
        problems.append(
            f"extenders: Invalid value: found {binders} extenders implementing bind: only one "
            "extender can implement bind"
        )
    return problems


def in_call_order(extenders: list[Extender]) -> list[Extender]:
    """kube's ``buildExtenders`` order: ignorable extenders after all the others."""
    return [e for e in extenders if not e.ignorable] + [e for e in extenders if e.ignorable]


def ignored_resources(extenders: list[Extender]) -> frozenset[str]:
    """Resources NodeResourcesFit must not check: ``ignoredByScheduler`` managed ones.

    kube-scheduler passes these to NodeResourcesFit as ``IgnoredResources``.
    """
    return frozenset(
        r.name for ext in extenders for r in ext.managed_resources if r.ignored_by_scheduler
    )
