"""What the machine gives a run: its memory ceiling (sizes as users write them, ``8G``,
``512M``, and the process's resident memory, which the engines compare with ``max_memory``)
and its processors (``default_workers``)."""

from __future__ import annotations

import os
from typing import Any

# The sizes a ceiling is written in are ``checker.base.units``'s; they are offered here too,
# beside the ceiling they bound.
from .units import MAX_CEILING as MAX_CEILING
from .units import MIN_CEILING as MIN_CEILING
from .units import check_ceiling as check_ceiling
from .units import format_size as format_size
from .units import parse_size as parse_size

# Without --max-memory, kmc check stops cleanly at this share of the machine's memory
# (or of its control group's limit) rather than meet the out-of-memory killer.
DEFAULT_SHARE = 0.8


def machine_bytes() -> int | None:
    """The memory this process may use: the machine's (``MemTotal``), or its control
    group's limit, or what its address-space limit (``ulimit -v``, ``prlimit --as``)
    leaves for resident memory, whichever is lowest; ``None`` when none can be read."""
    sizes = []
    room = address_space_room()
    if room is not None:
        sizes.append(room)
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemTotal:"):
                    sizes.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, "rb") as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # "max", or v1's "no limit" (near 2**63)
            sizes.append(int(text))
    return min(sizes) if sizes else None


def address_space_room() -> int | None:
    """The resident memory this process may still reach under its address-space limit
    (``RLIMIT_AS``): the limit less what its address space holds beyond its resident
    memory now (mappings never touched: libraries, thread stacks, allocator arenas), or
    ``None`` without such a limit."""
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return None
    try:
        with open("/proc/self/statm", "rb") as f:
            fields = f.read().split()
        page = os.sysconf("SC_PAGE_SIZE")
        virtual, resident = int(fields[0]) * page, int(fields[1]) * page
    except (OSError, ValueError, IndexError):
        return soft
    return max(0, soft - (virtual - resident))


def default_ceiling() -> int | None:
    """The memory ceiling of a run given none: ``DEFAULT_SHARE`` of ``machine_bytes()``."""
    total = machine_bytes()
    return int(total * DEFAULT_SHARE) if total else None


def resident_bytes() -> int | None:
    """The resident memory of this process in bytes, or ``None`` when it cannot be read.

    Reads ``/proc/self/statm`` (Linux; cheap enough to call every few thousand states).
    Elsewhere falls back to the peak resident size from ``getrusage``, which never goes
    down: a ceiling is then reached no later than with the current size, only earlier.
    """
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    except (ImportError, OSError):
        return None


# The C allocator's settings (glibc's mallopt) for a long run of large arrays: an array up
# to HEAP_ARRAYS comes from the allocator's heap instead of a mapping of its own, and up to
# KEEP_FREED of freed memory stays with the process. A level's chunks then reuse the same
# pages, rather than the system mapping and zeroing new ones for every large array and
# unmapping them again (measured: a third of the search's system time).
HEAP_ARRAYS = 256 << 20
KEEP_FREED = 512 << 20
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


_M_MMAP_MAX = -4


def reuse_freed_memory() -> bool:
    """Set the allocator as above (processes forked later inherit it). Returns whether it
    was set: not outside glibc, where the allocator keeps its own policy."""
    return _mallopt((_M_TRIM_THRESHOLD, KEEP_FREED), (_M_MMAP_THRESHOLD, HEAP_ARRAYS))


def keep_freed_memory() -> bool:
    """The Spark workers' setting, further than ``reuse_freed_memory``: no allocation gets
    a mapping of its own (not even an owner's arrays of gigabytes) and freed memory is
    never handed back, so a worker's resident size stays at its largest need. A worker
    makes and drops arrays of tens of megabytes a slice and of gigabytes a partition; the
    kernel cleared every new page of them first, a fifth of a worker's time in a profile of
    the billion-state run, which took 13% less CPU with this (docs/spark.md). Not for the
    kmc process itself: its memory ceiling reads the resident size, which would no longer
    fall. Returns whether it was set (not outside glibc)."""
    return _mallopt((_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, 2**31 - 1))


def release_freed_memory() -> bool:
    """Hand back to the system every page this process has freed and the allocator kept
    (glibc's ``malloc_trim(0)``, which also releases free pages between live blocks). For a
    process whose large arrays are done with for good: the Spark engine's driver once its
    leading levels are handed over (``checker.partitioned.levels``), which otherwise holds
    what they freed for the whole run while the executors do the work. Returns whether
    anything was handed back (never outside glibc)."""
    trim = _allocator("malloc_trim", "c_size_t")
    return trim is not None and bool(trim(0))


def _mallopt(*settings: tuple[int, int]) -> bool:
    mallopt = _allocator("mallopt", "c_int", "c_int")
    return mallopt is not None and all([bool(mallopt(option, value)) for option, value in settings])


def _allocator(name: str, *argtypes: str) -> Any:
    """The C allocator's function ``name`` (glibc's) taking ``argtypes`` (``ctypes`` type
    names), or None where the C library has none."""
    try:
        import ctypes

        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = [getattr(ctypes, t) for t in argtypes]
    return function


def default_workers() -> int:
    """The processes the machine gives this one (its CPU affinity): the default of ``--workers``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
