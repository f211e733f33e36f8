"""Pure Kubernetes object logic: quantities, resources, selectors, taints, host ports.

Everything here works on raw JSON dicts as the API server sends them and has no
dependency on the rest of the scheduler, so the NodeTable, the plugins and the
emulator all agree on what an object means. Import from the submodules:
:mod:`~scheduler.model.quantity`, :mod:`~scheduler.model.resources`,
:mod:`~scheduler.model.selectors`, :mod:`~scheduler.model.taints`,
:mod:`~scheduler.model.ports`.
"""
