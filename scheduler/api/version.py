"""Versioning of the plugin API.

A plugin declares the API version it was written against as the class
attribute ``api_version = "MAJOR.MINOR"``. It is compatible with this
framework when the majors are equal and the plugin's minor is not newer than
ours: minors only add things, majors may remove or change them.
"""

from __future__ import annotations

PLUGIN_API_VERSION = "1.3"


def parse_api_version(value: object) -> tuple[int, int]:
    """Parse ``"MAJOR.MINOR"`` (or ``"MAJOR"``); raise ValueError on anything else."""
    if not isinstance(value, str):
        raise ValueError(f"api_version must be a string like '1.0', got {value!r}")
    parts = value.strip().split(".")
    if not 1 <= len(parts) <= 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"api_version must look like 'MAJOR.MINOR', got {value!r}")
    major = int(parts[0])
    minor = int(parts[1]) if len(parts) == 2 else 0
    return major, minor


def is_compatible(plugin_version: str, framework_version: str = PLUGIN_API_VERSION) -> bool:
    """Whether a plugin written for ``plugin_version`` can run on ``framework_version``."""
    p_major, p_minor = parse_api_version(plugin_version)
    f_major, f_minor = parse_api_version(framework_version)
    return p_major == f_major and p_minor <= f_minor
