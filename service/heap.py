"""The API process keeps the heap memory it frees, up to a bound, instead of handing it back to the system at once.

A large response (a sweep's page of 200 points is about 2 MB of JSON) is built from a few copies of its text, each
freed as soon as the next exists. glibc's allocator serves blocks of that size from a fresh mapping, or from the top
of a thread's heap, and returns the memory to the system once more than twice the block size lies free: so every
response faults every page of every copy in again (about 4 µs a page on a virtual machine, 1 ms a megabyte). With
allocations below ``MMAP_BYTES`` taken from the heap and up to ``TRIM_BYTES`` of free heap kept per arena, the
second response of that size reuses the first one's pages: a 2.2 MB page of a finished sweep was answered in 6–10 ms
instead of 15–19 ms (the time to its first byte, 3–4 ms instead of 10–15 ms). Only the API process is set this
way: a solve or a job line runs in a process of its own, which starts with an empty heap and ends after one task.

What it may cost: up to ``TRIM_BYTES`` of free memory at the top of each arena's heap stays with the process. glibc
moves to the same bounds by itself once a block of ``MMAP_BYTES`` has been freed (its dynamic threshold rises to
the freed block's size and the trim threshold to twice that); here they hold from the start, whatever the sizes
seen so far.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger("saddlelab.api")

#: mallopt's parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks below this size come from the heap (glibc's own bound for this setting is 32 MiB).
MMAP_BYTES = 16 * 2**20
#: Free memory at the top of a heap kept for the next allocations, per arena.
TRIM_BYTES = 32 * 2**20


def keep_heap() -> bool:
    """Set the allocator as the module docstring says; False where the C library has no ``mallopt`` or refuses (not
    glibc): the process then runs as before."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    kept = mallopt(M_MMAP_THRESHOLD, MMAP_BYTES) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_BYTES) == 1
    if not kept:
        log.info("the C library's allocator cannot be set (mallopt refused): large responses fault their pages in")
    return kept
