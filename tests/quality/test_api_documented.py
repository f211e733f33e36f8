"""The public plugin API stays documented and versioned."""

from __future__ import annotations

import inspect

import scheduler.api as api
from scheduler.api.hookspecs import HOOK_NAMES, SchedulerHookSpecs
from scheduler.api.version import PLUGIN_API_VERSION, parse_api_version


def test_every_hook_has_a_docstring_naming_its_extension_point() -> None:
    assert HOOK_NAMES, "no hooks found"
    for name in HOOK_NAMES:
        doc = inspect.getdoc(getattr(SchedulerHookSpecs, name))
        assert doc and len(doc) > 40, f"hook {name} is not documented"


def test_every_public_api_name_is_documented() -> None:
    for name in api.__all__:
        obj = getattr(api, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"scheduler.api.{name} has no docstring"


def test_api_version_is_well_formed() -> None:
    assert parse_api_version(PLUGIN_API_VERSION) >= (1, 0)
