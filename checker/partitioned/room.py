"""The partitioned level's room and failures (``checker.partitioned.levels``): whether the
store's disk can hold the next level and whether its rows are packed; what a failed level's
error says (a full disk, a task out of memory, a store some executor cannot see)."""

from __future__ import annotations

import errno
import re
import shutil

from ..base.errors import EngineError
from ..base.units import format_size
from ..core.parts import ResourceStop
from .cluster import one_line
from .rows import RowsStore

# A store, or the path of a directory (a store not made yet).
Where = RowsStore | str

# Rows are packed (``checker.partitioned.rows_write.save_arrays``) in a level whose store files, at
# about PACK_BYTES a frontier state (successors and both frontiers, unpacked), would take
# more than PACK_SHARE of the store's free disk space.
PACK_BYTES = 300
PACK_SHARE = 0.1


def level_bytes(level: int, pack: bool) -> int:
    """The least a level of ``level`` states writes to the store: its successors and the
    next frontier, ``PACK_BYTES`` a state, half of it packed (the billion-state run wrote
    about 270 bytes a state of its largest level, packed: docs/spark.md). A lower bound, so
    that a level that would fit is never refused; one that fills the disk all the same
    stops the run in the same way, the level dropped."""
    return level * (PACK_BYTES // 2 if pack else PACK_BYTES)


def check_room(store: Where, level: int, pack: bool) -> None:
    """Stop the run (``ResourceStop``, resumable) before a level the store's disk cannot
    hold; nothing where the store cannot tell its room (an object store)."""
    free = _free(store)
    if free is None:
        return
    need = level_bytes(level, pack)
    if need > free:
        raise ResourceStop(
            "disk-full",
            f"the Spark store {_root(store)} has {format_size(free)} free, and the next "
            f"level ({level:,} states) needs at least {format_size(need)}",
        )


def _root(store: Where) -> str:
    return store if isinstance(store, str) else store.root


def _free(store: Where) -> int | None:
    """The free bytes of ``store`` (a ``RowsStore``, or a directory's path), or None."""
    if isinstance(store, str):
        try:
            return shutil.disk_usage(store).free
        except OSError:
            return None
    return store.free_bytes()


# What a full disk looks like: an errno, or numpy's short write (``np.save`` through
# ``fwrite``: "51195 requested and 4592 written"), also inside a Spark task's traceback.
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_FULL_TEXT = re.compile(r"No space left on device|Disk quota exceeded|\b\d+ requested and \d+ written\b")


def disk_full(e: BaseException) -> bool:
    """Whether the exception ``e`` (an ``OSError`` of the driver, or a failed Spark job
    carrying a task's traceback) says that the disk was full."""
    if isinstance(e, OSError) and e.errno in _FULL_ERRNOS:
        return True
    return bool(_FULL_TEXT.search(str(e)) or _FULL_TEXT.search(one_line(e)))


def out_of_memory(e: BaseException) -> bool:
    """Whether a failed Spark job's error is a task's ``MemoryError`` (its Python traceback)."""
    return "MemoryError" in one_line(e) or bool(re.search(r"^\s*MemoryError\b", str(e), re.M))


def full_line(store: Where, e: BaseException) -> str:
    free = _free(store)
    room = f" ({format_size(free)} free)" if free is not None else ""
    return f"the Spark store {_root(store)} is full{room}: {one_line(e)}"


def pack_rows(level: int, store: Where) -> bool:
    """Whether a level's rows are packed: its objects would take a large share of the
    store's free room (never where the room is unknown)."""
    free = _free(store)
    if free is None:
        return False
    return level * PACK_BYTES > PACK_SHARE * free


class StoreUnseenError(EngineError):
    """Some executor cannot read the store (``checker.spark.probe.probe_store``)."""


def unseen_line(root: str, why: str) -> str:
    return (
        f"the Spark store {root} is not seen by every executor ({why}): the driver and every executor "
        "must see it (a directory mounted at the same path on every machine, or an object store URL: "
        "s3://, gs://, hdfs://, abfs://)"
    )
