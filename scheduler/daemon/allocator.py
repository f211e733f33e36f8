"""Keep freed memory in the process: glibc malloc settings for numpy temporaries.

Every decision allocates and frees arrays of one value per candidate node
(gathers of the resource matrices, masks, scores). From 128 KiB on, glibc
serves such a block with a fresh ``mmap`` and unmaps it on free, and it
trims the top of its heap back to the kernel as soon as a free leaves more
than twice that spare, so the next decision faults in and zeroes the same
pages again. On the 2-core benchmark machine that doubled the CPU time of
a Filter and Score pass over 65,000 nodes (10.5 ms against 4.8 ms with the
settings below) and cost about a tenth at 5,000 nodes (BENCHMARKS.md,
"Decision time"). Fixed thresholds keep blocks up to 32 MiB on the heap and
hold up to 256 MiB of freed heap for reuse instead of returning it.
"""

from __future__ import annotations

import ctypes
import sys

#: mallopt parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: glibc's largest allowed mmap threshold on 64-bit systems.
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 256 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Apply the settings; False where the C library has no ``mallopt`` (not glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
