"""How an offload worker process uses memory.

A worker frames blocks of a few MiB one after another and drops each once
it is written. By default glibc's malloc serves every such block with a
fresh ``mmap`` and returns it with ``munmap`` when freed, so each block's
pages are faulted in (and zeroed by the kernel) anew. Measured framing
64 MB of 1 KB entries into 4 MiB blocks with three blocks queued: 70-80 ms
and 4,000-7,700 page faults by default, 25-50 ms and none with freed memory
kept. A worker is a process of ours doing one job, so it keeps freed
memory for the next block instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

__all__ = ["KEPT_BYTES", "keep_freed_memory"]

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# glibc's ceiling for the mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX):
# a block up to this size comes from the heap, where freed memory is reused.
_MMAP_THRESHOLD = 32 << 20
KEPT_BYTES = 256 << 20
"""Freed memory a worker keeps at the top of its heap before giving it back."""


def keep_freed_memory() -> bool:
    """In this process, have malloc serve allocations up to 32 MiB from the
    heap and keep up to :data:`KEPT_BYTES` of freed heap memory rather than
    return it to the kernel. For worker processes only: it changes the
    whole process. Returns whether it applied (it needs glibc; elsewhere
    it does nothing and returns false). Never raises."""
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))
