"""The owners of the rows stores (``checker.partitioned.rows``): a store is marked with the
run that made it, so that a later run removes the stores of runs that were killed and names
those it cannot tell (an older kmc's)."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time

from ..base.owner import owner_gone, start_time
from ..base.units import format_size
from ..blobs import Blobs, open_blobs
from ..blobs.posix import PosixBlobs
from .rows import KEPT, OWNER, PREFIX, RowsStore


def _owner_gone(root: str) -> bool | None:
    """True when the store ``root``'s owner surely ended; False when it runs, or might
    (another host or PID namespace: a shared store, a container); None without an owner
    mark."""
    try:
        with open(os.path.join(root, OWNER), encoding="utf-8") as f:
            return _gone(f.read(400))
    except (OSError, UnicodeDecodeError):
        return None


def _gone(mark: str) -> bool | None:
    """``_owner_gone`` of an owner mark's text (None: not a mark): ``checker.base.owner.owner_gone``
    for a mark ``host pid-namespace pid start-time``; a mark of an older kmc (``host pid
    start-time``, no namespace) is taken as it was then: gone when no process of this host
    runs with that PID and start time."""
    words = mark.split()
    if len(words) == 4 and words[2].isdigit():
        return owner_gone(" ".join(words))
    if len(words) != 3 or not words[1].isdigit():
        return None
    host, pid_text, started = words
    if host != socket.gethostname():
        return False
    if not os.path.isdir("/proc/self"):
        return False  # no /proc: whether the owner still runs cannot be told
    now = start_time(int(pid_text))
    return now is None or (started != "-" and now != started)


# A store without an owner mark is named only once nothing in it has changed for this long
# (a run of an older kmc may still be using it).
IDLE_SECONDS = 600


def _idle(root: str) -> bool:
    try:
        newest = max([os.stat(root).st_mtime] + [os.stat(os.path.join(root, n)).st_mtime for n in os.listdir(root)])
    except OSError:
        return False
    return time.time() - newest > IDLE_SECONDS


def clean_stale(parent: str | None = None) -> str | None:
    """Remove the stores in ``parent`` (default: the temporary directory; or an object
    store's URL) whose run was killed (its owner process, on this host, is gone), and name
    those of an older kmc (no owner mark). Returns one line saying what was freed and
    named, or None when there were none."""
    parent = parent or tempfile.gettempdir()
    blobs = open_blobs(parent)
    if not isinstance(blobs, PosixBlobs):
        return _clean_stale_objects(blobs)
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return None
    removed, freed, unknown = 0, 0, list[str]()
    for entry in entries:
        gone = _owner_gone(entry.path)
        if gone:
            size = RowsStore(PosixBlobs(entry.path)).disk_bytes()
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.exists(entry.path):
                removed, freed = removed + 1, freed + size
        elif gone is None and os.path.isdir(os.path.join(entry.path, "seen")) and _idle(entry.path):
            unknown.append(entry.path)
    parts: list[str] = []
    if removed:
        parts.append(
            f"removed {removed} Spark store{'s' if removed > 1 else ''} of runs that were killed "
            f"({format_size(freed)} freed in {parent})"
        )
    if unknown:
        parts.append(
            f"{len(unknown)} store{'s' if len(unknown) > 1 else ''} without an owner mark (an older kmc's; "
            f"remove {'them' if len(unknown) > 1 else 'it'} if no run uses "
            f"{'them' if len(unknown) > 1 else 'it'}): {', '.join(unknown[:3])}" + (", ..." if len(unknown) > 3 else "")
        )
    return "; ".join(parts) if parts else None


def _clean_stale_objects(blobs: Blobs) -> str | None:
    """``clean_stale`` in an object store: the prefixes ``kmc-rows-*`` whose owner mark
    names a process of this host that has ended are deleted (one listing of the URL), unless
    a checkpoint names their objects (``KEPT``)."""
    try:
        sizes = blobs.sizes()
    except OSError:
        return None
    runs: dict[str, int] = {}
    for name, size in sizes.items():
        top = name.split("/", 1)[0]
        if top.startswith(PREFIX):
            runs[top] = runs.get(top, 0) + size
    removed, freed = 0, 0
    for prefix, size in sorted(runs.items()):
        if f"{prefix}/{KEPT}" in sizes:
            continue  # a checkpoint names its objects: a resumed run removes it
        try:
            mark = blobs.get(f"{prefix}/{OWNER}").decode("utf-8", "replace")
        except OSError:
            continue
        if _gone(mark):
            blobs.delete_prefix(prefix)
            removed, freed = removed + 1, freed + size
    if not removed:
        return None
    return (
        f"removed {removed} Spark store{'s' if removed > 1 else ''} of runs that were killed "
        f"({format_size(freed)} freed in {blobs.root})"
    )
