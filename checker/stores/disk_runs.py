"""The sorted runs of fingerprints a disk store keeps in its buckets: each a file mapped
on first use with its index of every ``STRIDE``-th fingerprint, and the rule that says when
a bucket's newest run is merged into the one before it."""

from __future__ import annotations

import contextlib
import mmap
import os

import attrs
import numpy as np

from .seen import block_contains, block_index

STRIDE = 256  # a run's index holds every STRIDE-th fingerprint (a lookup reads 2 KiB of its file)


@attrs.define
class Run:
    """A sorted run of fingerprints in a file, mapped on first use, with its index: every
    ``STRIDE``-th fingerprint, in memory (taken from the run as written, or read once from
    the file when a checkpoint is reopened)."""

    name: str
    length: int
    index: np.ndarray | None = None
    mm: mmap.mmap | None = None
    array: np.ndarray | None = None

    def open(self, root: str) -> np.ndarray:
        if self.array is None:
            with open(os.path.join(root, self.name), "rb") as f:
                self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self.array = np.frombuffer(self.mm, dtype="<u8", count=self.length)
        if self.index is None:
            self.index = block_index(self.array, STRIDE)
        return self.array

    def contains(self, root: str, fps: np.ndarray) -> np.ndarray:
        """Which of the sorted ``fps`` are in the run (``checker.stores.seen.block_contains``)."""
        run = self.open(root)
        assert self.index is not None  # (read by ``open``)
        return block_contains(run, self.index, STRIDE, fps)

    def release(self) -> None:
        """Hand the pages read back to the page cache (resident memory stays small)."""
        if self.mm is not None and hasattr(self.mm, "madvise"):
            with contextlib.suppress(OSError, ValueError):
                self.mm.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        self.array = None
        if self.mm is not None:
            self.mm.close()
            self.mm = None


def merges(newer: int, older: int) -> bool:
    """Whether a bucket's newest run (``newer`` fingerprints) is merged into the one before
    it (``older``): while it is at least two thirds as large, so sizes grow by at least
    half from run to run. A lookup searches every run of its bucket, and once the levels
    shrink (the second half of a search) each level would otherwise add a run; merging
    at two thirds rather than at equal sizes cut a lookup's time by 29% for 1.5 times
    the bytes written (measured on a store grown level by level: docs/long-runs.md)."""
    return 3 * newer >= 2 * older
