"""Garbage-collector settings for a process that holds a whole cluster in memory.

Both the daemon (``pluggable-scheduler run``) and an emulator serving in a
process of its own keep every node and pod: millions of long-lived container
objects. CPython's collector is stop-the-world, and with its defaults a full
collection walks all of them: in the daemon the initial list of 150,000 pods
ran 14 full collections (6.8 s of a 21 s sync; 3 and 3.2 s with
:data:`THRESHOLDS`); in the emulator serving 15,000 nodes, full collections
paused every request for 44-302 ms, seven times in one benchmark run (a real
kube-apiserver's collector runs beside its requests). Only for a process of
its own: freezing in a test process would keep its earlier tests' garbage
cycles forever.
"""

from __future__ import annotations

import gc

#: A gen-0 collection every 10,000 net allocations (default 700); gen 1 and
#: 2 after ten of the one below (default 10, 10).
THRESHOLDS = (10_000, 10, 10)


def hold_a_cluster() -> None:
    """Collect less often: call before the cluster is loaded."""
    gc.set_threshold(*THRESHOLDS)


def freeze_what_is_held() -> None:
    """Move everything alive now to the permanent generation: call once loaded.

    A full collection then scans only what came after. Reference counting
    still frees frozen objects (the cluster's objects are acyclic), so
    nothing leaks but the odd cycle made before.
    """
    gc.freeze()
