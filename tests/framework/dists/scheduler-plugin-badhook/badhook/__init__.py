"""Test distribution whose hook takes an argument the hookspec does not offer."""

from scheduler.api import Plugin, hookimpl


class BadHook(Plugin):
    api_version = "1.0"

    @hookimpl
    def filter(self, state, pod, nodes, weather):
        return None
