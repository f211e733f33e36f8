"""Test distribution declaring a plugin API major this framework does not provide."""

from scheduler.api import Plugin, Status, hookimpl


class OldApi(Plugin):
    api_version = "0.9"

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        return Status.success()
