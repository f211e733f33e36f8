"""Test distribution: plugins using pluggy's hookimpl options, as pytest plugin authors do."""

import numpy as np

from scheduler.api import FilterResult, Plugin, Status, hookimpl


class NewWrapper(Plugin):
    api_version = "1.0"

    @hookimpl(wrapper=True)
    def filter(self, state, pod, nodes):
        result = yield
        return result


class OldWrapper(Plugin):
    api_version = "1.0"

    @hookimpl(hookwrapper=True)
    def score(self, state, pod, nodes):
        outcome = yield
        outcome.get_result()


class TryFirst(Plugin):
    api_version = "1.0"

    @hookimpl(tryfirst=True)
    def filter(self, state, pod, nodes):
        return None


class TryLast(Plugin):
    api_version = "1.0"

    @hookimpl(trylast=True)
    async def pre_bind(self, state, pod, node_name):
        return None


class Generator(Plugin):
    api_version = "1.0"

    @hookimpl
    def filter(self, state, pod, nodes):
        yield Status.success()


class AsyncFilter(Plugin):
    api_version = "1.0"

    @hookimpl
    async def filter(self, state, pod, nodes):
        return None


class SpecName(Plugin):
    """Answers Filter from a method of another name: keeps nodes labelled ``pool=gpu``."""

    api_version = "1.0"

    @hookimpl(specname="filter")
    def only_gpu_pool(self, state, pod, nodes):
        result = FilterResult(len(nodes))
        outside = np.array([node.labels.get("pool") != "gpu" for node in nodes], dtype=bool)
        result.reject(outside, "node(s) not in the gpu pool")
        return result


class OptionalHook(Plugin):
    """Implements a hook this framework does not have (optionalhook) and Score."""

    api_version = "1.0"

    @hookimpl(optionalhook=True)
    def post_everything(self, pod):
        raise AssertionError("a hook the framework does not have is never called")

    @hookimpl
    def score(self, state, pod, nodes):
        return [10 * i for i in range(len(nodes))]
