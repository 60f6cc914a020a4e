"""The hand-over (``checker.partitioned.levels.PartitionedLevels.hand_over``): the driver's
seen-set and frontier written into the rows store, the seen-set split by owner, the frontier
by rank, so that the levels from there on run partitioned."""

from __future__ import annotations

import attrs
import numpy as np

from ..core.parts import ResourceStop
from .ports import DriverSearch
from .room import check_room, disk_full, full_line, pack_rows
from .rows import RowsStore, owners, split_frontier
from .stages import Runs


@attrs.frozen
class HandedOver:
    """What the partitioned levels keep of the hand-over."""

    runs: list[Runs]  # per fingerprint partition: its one seen run
    handoff: dict[int, int]  # a handed-over frontier state's fingerprint -> its number
    counts: list[int]  # the frontier's count per rank partition
    sources: list[list[int]]  # per rank partition: the owners that wrote its share (the driver)


def write_hand_over(store: RowsStore, rows: DriverSearch, depth: int, n: int, symmetry: bool) -> HandedOver:
    """Write the driver's seen-set and frontier (of ``depth``) into ``store`` in ``n``
    partitions, once the store's room is checked (``checker.partitioned.room``).

    Raises:
        ResourceStop: the store's disk cannot hold them, or filled as they were written.
    """
    level = rows.size()
    check_room(store, level, pack_rows(level, store))
    try:
        return _write(store, rows, depth, n, symmetry)
    except OSError as e:
        if not disk_full(e):
            raise
        raise ResourceStop("disk-full", full_line(store, e)) from None


def _write(store: RowsStore, rows: DriverSearch, depth: int, n: int, symmetry: bool) -> HandedOver:
    seen = rows.seen
    seen_fps = seen.fingerprints()
    owner = owners(seen_fps, n)
    runs: list[Runs] = []
    for i in range(n):
        fps = np.sort(seen_fps[owner == i])
        store.save(store.run(i, depth), fps)
        runs.append([(depth, len(fps))])
    del seen_fps, owner
    frontier = np.concatenate(rows.frontier)
    fps = rows.kernel.fingerprints(frontier, symmetry)
    handoff = {int(fp): len(seen) - len(frontier) + i for i, fp in enumerate(fps.tolist())}
    keys = np.arange(len(frontier), dtype=np.int64)
    counts, sources = split_frontier(store, depth, n, keys, fps, frontier)
    return HandedOver(runs, handoff, counts, sources)
