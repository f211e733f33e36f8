"""Test distribution claiming a plugin name another distribution already provides."""

from scheduler.api import Plugin, hookimpl


class ZoneGate(Plugin):
    api_version = "1.0"

    @hookimpl
    def filter(self, state, pod, nodes):
        return None
