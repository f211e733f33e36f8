"""Emulated Kubernetes API server: the embedded cluster behind simulate, explain and tests.

It speaks the real wire protocol (discovery, list/watch with resourceVersions
and bookmarks, patches, bindings, CRDs) so that unmodified clients -
kubernetes-asyncio, kubectl, client-go - cannot tell it from kube-apiserver
for everything a scheduler does.
"""

from scheduler.simulation.emulator.server import EmulatorServer

__all__ = ["EmulatorServer"]
