"""The disk store: the ``checker.core.parts.Store`` of a run larger than its machine's memory.

What it keeps, in a directory of its own (``.kmc-store-*``, under the checkpoint
directory, ``--store-dir``, or the temporary directory):

- **fingerprints**, in ``2**bits`` buckets by their high bits, each bucket a few sorted
  runs (``fp-BB-SEQ.u64``: raw little-endian ``uint64``). A level's new fingerprints stay
  in memory (sorted runs, as in ``checker.stores.seen.CompactSeenSet``, behind a bitmap of
  their high bits, ``checker.stores.seen.PrefixFilter``) until the first block of the next
  level, which writes each bucket's share as a new run; a bucket's newest run is merged
  into the one before it while it is at least two thirds as large (``merges``), so a
  bucket has a few runs and a merge rewrites only that bucket (the disk's peak is the
  store plus two copies of one bucket, never two copies of the store);
- **the frontier** (``checker.stores.frontier.DiskQueue``): one file of rows a level, written
  as the level is found and read back a chunk at a time;
- **parents and choices**, 5 bytes a state (``uint32`` parent number, ``uint8``
  choice), one flat file a level (``pc-SEQ.bin``), written once in number order and read
  back by memory map only to rebuild a path.

Membership is answered from the memory-mapped runs and the in-memory runs. The index
held in memory is the list of files, their lengths and buckets, and each run's every
``STRIDE``-th fingerprint (1/256 of the store: 50 MB for a billion and a half states): a
lookup finds its block of ``STRIDE`` in that sample, then searches the block in the
file, so it reads one page of a run instead of one a step of a binary search over the
whole file. A bucket's runs are searched newest first, and a key found in one is not
asked of the older ones. Pages of the runs read by a lookup are handed back to the page
cache at once (``MADV_DONTNEED``), so resident memory stays the index and one level's
fingerprints, whatever the store's size.

Files are never changed once written (a merge writes a new file and removes the two it
replaces), so a checkpoint links them (hard links: no bytes copied) into a level
directory of the checkpoint (``checker.checkpoints.file.claim_data_dir``), and a resumed run
links them back into a new directory of its own.

A write that finds the disk full stops the run cleanly inside a level
(``checker.core.driver.ResourceStop``, ``"disk-full"``): the level is dropped, the last one
stands, and its checkpoint resumes. Every write goes through
``checker.stores.disk_files.write_bytes`` (the one seam where the tests make the disk full).
"""

from __future__ import annotations

import bisect
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np

from ..base.errors import EngineError
from ..base.owner import owner_gone, owner_line
from ..checkpoints.file import claim_data_dir, read_manifest
from ..core.parts import ResourceStop, SavedStore, Store
from . import disk_files
from .disk_files import DiskFiles, level_source, verify_level
from .disk_runs import STRIDE, Run, merges
from .seen import PrefixFilter, block_contains, block_index, merge_runs, merge_tail, runs_contain

BUCKET_BITS = 6  # 64 buckets: a merge rewrites at most 1/64 of the fingerprints
PREFIX = ".kmc-store-"
MARK = "KMC-DISK-STORE"  # the file that says kmc made a directory (a stale one may be removed)
RECORD = np.dtype([("parent", "<u4"), ("choice", "u1")])  # 5 bytes, packed


@attrs.frozen
class DiskSaved:
    """A disk store's checkpoint part (``checker.core.parts.SavedStore``): its index, the
    fingerprints of levels not yet written, and where its files were linked."""

    bits: int
    runs: tuple[tuple[tuple[str, int], ...], ...]  # per bucket: ((file name, length), ...)
    levels: tuple[tuple[int, str, int], ...]  # ((first number, file name, count), ...)
    pending: tuple[np.ndarray, ...]  # sorted uint64 arrays
    length: int
    written: int
    peak: int
    data: str | None  # the level directory's name in the checkpoint directory
    path: str  # the directory the files were linked into
    # {file name: (size, sha256)} of every file above, checked before a resume links them
    # (None in a checkpoint of a kmc that recorded none: refused, it cannot be verified)
    files: dict[str, tuple[int, str]] | None = None

    kind = "disk"

    def reopen(self, directory: Any = None, parent: Any = None) -> DiskStore:
        """The store, its files linked from the checkpoint ``directory`` into a new
        directory in ``parent`` (default: the checkpoint directory), once each file is
        checked against the size and SHA-256 the checkpoint recorded.

        Raises:
            CheckpointError: the level directory or a file of it is missing, a link, or
                not what the checkpoint recorded (one line naming the checkpoint and the file).
        """
        source = level_source(directory, self.data, self.path)
        names = [name for bucket in self.runs for name, _ in bucket] + [name for _, name, _ in self.levels]
        verify_level(directory, source, names, self.files)
        store = DiskStore(parent=directory if parent is None else parent, bits=self.bits)
        store.checkpoint_dir = None if directory is None else str(directory)
        for name in names:
            disk_files.link(source / name, Path(store.root) / name)
        store.buckets = [[Run(name, length) for name, length in bucket] for bucket in self.runs]
        store.levels = [(first, name, count) for first, name, count in self.levels]
        store.pending = list(self.pending)
        store._len = store._level_start = self.length
        store._written, store._peak = self.written, self.peak
        store._disk = sum(os.path.getsize(Path(store.root) / name) for name in names)
        store._seq = 1 + max((_seq_of(name) for name in names), default=0)
        return store


class DiskStore(DiskFiles):
    """Fingerprints in bucketed sorted runs on disk, parents and choices in flat files
    (see the module).

    Args:
        parent: the directory to make the store's own directory in (default: the
            temporary directory).
        checkpoint_dir: the run's checkpoint directory (a checkpoint links the files
            into one of its level directories), or ``None``.
        bits: the buckets are ``2**bits``.
    """

    def __init__(self, parent: Any = None, checkpoint_dir: Any = None, bits: int = BUCKET_BITS) -> None:
        try:
            if parent is not None:
                os.makedirs(parent, exist_ok=True)
            self.root = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
            with open(os.path.join(self.root, MARK), "w", encoding="utf-8") as f:
                f.write(owner_line())  # host, PID namespace, PID, start time (checker.base.owner)
        except OSError as e:
            where = parent or tempfile.gettempdir()
            raise EngineError(f"disk store: cannot create a directory in {where} ({e.strerror or e})") from None
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.root, True)
        self.checkpoint_dir = None if checkpoint_dir is None else str(checkpoint_dir)
        self.bits = bits
        self.buckets: list[list[Run]] = [[] for _ in range(1 << bits)]
        self.levels: list[tuple[int, str, int]] = []  # (first number, parents file, count) a level
        self.pending: list[np.ndarray] = []  # fingerprints of closed levels, not written yet
        self.level_runs: list[np.ndarray] = []  # fingerprints of the level being added
        self.level_index: list[np.ndarray] = []  # each level run's every STRIDE-th fingerprint
        self.level_filter: PrefixFilter | None = None  # the level's fingerprints' high bits
        self._len = self._level_start = 0
        self._seq = 1  # the next file's sequence number
        self._written = self._disk = self._peak = 0
        self._records: dict[str, np.memmap] = {}
        self._saved: tuple[int, dict[str, Any]] | None = None  # the last saved() part, at its length

    def close(self) -> None:
        """Remove the store's directory (a checkpoint keeps its own links)."""
        for bucket in self.buckets:
            for run in bucket:
                run.close()
        self._records.clear()
        self._cleanup()

    # -- the protocol -----------------------------------------------------------------

    kind = "disk"
    # Eight times the rows a chunk: a lookup maps (and then hands back) the pages of the
    # runs it reads, a cost that grows with the store and is spread over the chunk's keys
    # (measured: four times the keys a lookup, a third of the system time a key).
    chunk_factor = 8

    def __len__(self) -> int:
        return self._len

    def add(self, fps: np.ndarray, parents: np.ndarray, choices: np.ndarray) -> np.ndarray:
        fps = np.asarray(fps, dtype=np.uint64)
        _, first = np.unique(fps, return_index=True)
        order = np.sort(first)  # the first of each fingerprint, in block order
        candidates = fps[order]
        by_fp = np.argsort(candidates, kind="stable")
        fresh = np.zeros(len(candidates), dtype=bool)
        fresh[by_fp] = ~self.contains_sorted(candidates[by_fp])
        new = np.zeros(len(fps), dtype=bool)
        new[order[fresh]] = True
        if new.any():
            self.add_sorted(np.sort(fps[new]), np.asarray(parents)[new], np.asarray(choices)[new])
        return new

    def contains_sorted(self, fps: np.ndarray) -> np.ndarray:
        fps = np.asarray(fps, dtype=np.uint64)
        hit: np.ndarray = self.contains_older_sorted(fps) | self.contains_level_sorted(fps)
        return hit

    def begin_level(self) -> None:
        """Write the closed levels' fingerprints out now: the runs then change only at the
        next level's first ``add_sorted``."""
        self._flush()
        for bucket in self.buckets:  # a reopened run's index, read here once rather than in each worker
            for run in bucket:
                if run.index is None:
                    run.open(self.root)
                    run.release()

    def contains_level_sorted(self, fps: np.ndarray) -> np.ndarray:
        fps = np.asarray(fps, dtype=np.uint64)
        hit = np.zeros(len(fps), dtype=bool)
        if len(fps) and self.level_filter is not None:
            asked = np.flatnonzero(self.level_filter.maybe(fps))  # most new keys stop here
            for run, index in zip(reversed(self.level_runs), reversed(self.level_index)):
                if not len(asked):
                    break
                found = block_contains(run, index, STRIDE, fps[asked])
                hit[asked[found]] = True
                asked = asked[~found]  # a key found is not asked again
        return hit

    def contains_older_sorted(self, fps: np.ndarray) -> np.ndarray:
        fps = np.asarray(fps, dtype=np.uint64)
        hit = runs_contain(self.pending, fps)
        if not len(fps):
            return hit
        cuts = self._cuts(fps)
        for b in np.flatnonzero(np.diff(cuts)).tolist():
            runs = self.buckets[b]
            if not runs:
                continue
            lo, hi = int(cuts[b]), int(cuts[b + 1])
            keys, at = fps[lo:hi], np.arange(lo, hi)
            for run in reversed(runs):  # the newest first: a key found is not asked again
                found = run.contains(self.root, keys)
                run.release()
                if found.any():
                    hit[at[found]] = True
                    keys, at = keys[~found], at[~found]
                    if not len(keys):
                        break
        return hit

    def add_sorted(self, fps: np.ndarray, parents: np.ndarray, choices: np.ndarray) -> None:
        if not len(fps):
            return
        self._flush()
        records = np.empty(len(fps), dtype=RECORD)
        records["parent"] = np.asarray(parents, dtype=np.int64).astype(np.uint32)
        records["choice"] = np.asarray(choices).astype(np.uint8)
        if not self.levels or self.levels[-1][0] + self.levels[-1][2] <= self._level_start:
            self.levels.append((self._len, self._name("pc", "bin"), 0))
        first, name, count = self.levels[-1]
        self._write(name, records, append=True)
        self.levels[-1] = (first, name, count + len(fps))
        self._records.pop(name, None)
        self.level_runs.append(np.asarray(fps, dtype=np.uint64))
        merge_tail(self.level_runs)  # changes only the last run
        self.level_index[len(self.level_runs) - 1 :] = [block_index(self.level_runs[-1], STRIDE)]
        if self.level_filter is None:
            self.level_filter = PrefixFilter()
        self.level_filter.add(fps, self.level_runs)
        self._len += len(fps)

    def parent_and_choice(self, number: int) -> tuple[int, int]:
        k = bisect.bisect_right([first for first, _, _ in self.levels], number) - 1
        first, name, count = self.levels[k]
        records = self._records.get(name)
        if records is None:
            records = np.memmap(os.path.join(self.root, name), dtype=RECORD, mode="r", shape=(count,))
            self._records[name] = records
        parent, choice = records[number - first]
        parent = int(parent)
        return (-1 if parent == 0xFFFFFFFF else parent), int(choice)

    def end_level(self) -> None:
        if self.level_runs:
            merged = np.concatenate(self.level_runs)
            merged.sort(kind="stable")
            self.pending.append(merged)
        self.level_runs, self.level_index, self.level_filter = [], [], None
        self._level_start = self._len

    def rollback(self) -> None:
        self.level_runs, self.level_index, self.level_filter = [], [], None
        if self.levels and self.levels[-1][0] >= self._level_start:
            _first, name, _count = self.levels.pop()
            self._records.pop(name, None)
            self._remove(name)
        self._len = self._level_start

    def fingerprints(self) -> np.ndarray:
        parts = [np.array(run.open(self.root)) for bucket in self.buckets for run in bucket]
        for bucket in self.buckets:
            for run in bucket:
                run.release()
        parts += self.pending + self.level_runs
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)

    def parents_and_choices(self) -> tuple[np.ndarray, np.ndarray]:
        parts = [
            np.array(np.memmap(os.path.join(self.root, name), dtype=RECORD, mode="r", shape=(count,)))
            for _, name, count in self.levels
            if count
        ]
        records = np.concatenate(parts) if parts else np.zeros(0, dtype=RECORD)
        parents = records["parent"]
        return np.where(parents == 0xFFFFFFFF, -1, parents.astype(np.int64)), records["choice"].copy()

    def restored(self, saved: SavedStore, directory: Any = None) -> Store:
        """A checkpoint's store on disk: its files linked in; a store of another kind (a
        run stopped at its memory ceiling) has its states written into this one."""
        if saved.kind == self.kind:  # in this store's place (--store-dir)
            store = cast(DiskSaved, saved).reopen(directory, parent=os.path.dirname(self.root))
            self.close()
            return store
        other = saved.reopen(directory)
        if len(self) or self.levels:
            raise EngineError("disk store: a checkpoint is restored only into an empty store")
        fps = np.sort(other.fingerprints())
        parents, choices = other.parents_and_choices()
        del other
        try:
            self._take(fps, parents, choices)
        except ResourceStop as e:
            raise EngineError(e.detail) from None
        return self

    def _take(self, fps: np.ndarray, parents: np.ndarray, choices: np.ndarray) -> None:
        if len(fps):
            self.levels.append((0, self._name("pc", "bin"), 0))
            records = np.empty(len(fps), dtype=RECORD)
            records["parent"] = parents.astype(np.uint32)
            records["choice"] = choices
            del parents, choices
            self._write(self.levels[0][1], records)
            self.levels[0] = (0, self.levels[0][1], len(fps))
            self.pending = [fps]
        self._len = self._level_start = len(fps)

    def merge_reserve(self) -> int:
        """The next boundary merges the level's runs (twice its fingerprints); its first
        block writes them out, merging bucket runs (three times the largest bucket)."""
        level = sum(len(r) for r in self.level_runs) + sum(len(r) for r in self.pending)
        largest = max((sum(run.length for run in bucket) for bucket in self.buckets), default=0)
        return 16 * level + 24 * largest

    def nbytes(self) -> int:
        held: int = sum(r.nbytes for r in self.level_runs + self.pending)
        index = sum(run.index.nbytes for bucket in self.buckets for run in bucket if run.index is not None)
        index += sum(i.nbytes for i in self.level_index)
        index += 0 if self.level_filter is None else self.level_filter.nbytes
        return held + index + 64 * (sum(len(b) for b in self.buckets) + len(self.levels))

    def saved(self) -> dict[str, Any]:
        """Link the files into a new level directory of the checkpoint (or of the store's
        own directory when the run has none); the index and the unwritten levels go into
        the snapshot itself. At the boundary of the last call, its part again: the states
        numbered below a boundary never change."""
        last = self._saved
        if last is not None and last[0] == self._len and Path(last[1]["seen"].path).is_dir():
            return last[1]
        if self.checkpoint_dir is not None:
            owned = (read_manifest(self.checkpoint_dir) or {"owned": []})["owned"]
            number = 1 + max((int(name.split("-")[1]) for name in owned), default=0)
            target = claim_data_dir(self.checkpoint_dir, number)
            data: str | None = target.name
        else:
            target = Path(self.root) / f"saved-{self._name('s', 'd')}"
            data = None
        names = [run.name for bucket in self.buckets for run in bucket] + [name for _, name, _ in self.levels]
        try:
            target.mkdir()
            for name in names:
                disk_files.link(Path(self.root) / name, target / name)
        except OSError:  # (a full disk: the caller stops the run; the half-made directory goes)
            shutil.rmtree(target, ignore_errors=True)
            raise
        try:
            files = self.seal(target, names)
        except OSError as e:
            raise EngineError(f"{self.what}: cannot read {target} to checksum it ({e.strerror or e})") from None
        part = DiskSaved(
            bits=self.bits,
            runs=tuple(tuple((run.name, run.length) for run in bucket) for bucket in self.buckets),
            levels=tuple(self.levels),
            pending=tuple(self.pending),
            length=self._len,
            written=self._written,
            peak=self._peak,
            data=data,
            path=str(target),
            files=files,
        )
        parts = {"seen": part, "data": data} if data is not None else {"seen": part}
        self._saved = (self._len, parts)
        return parts

    # -- files --------------------------------------------------------------------------

    def _cuts(self, fps: np.ndarray) -> np.ndarray:
        """Where each bucket's share of the sorted ``fps`` starts (and the end)."""
        shift = np.uint64(64 - self.bits)
        starts = np.arange((1 << self.bits) + 1, dtype=np.uint64)
        cuts = np.searchsorted(fps >> shift, starts[:-1])
        return np.append(cuts, len(fps))

    def _flush(self) -> None:
        """Write the closed levels' fingerprints out, a new run a bucket, and merge."""
        if not self.pending:
            return
        merged = self.pending[0] if len(self.pending) == 1 else np.sort(np.concatenate(self.pending))
        cuts = self._cuts(merged)
        made: list[tuple[int, Run]] = []
        try:
            for b in np.flatnonzero(np.diff(cuts)).tolist():
                part = merged[int(cuts[b]) : int(cuts[b + 1])]
                run = Run(self._name(f"fp-{b:02x}", "u64"), len(part), block_index(part, STRIDE))
                made.append((b, run))
                self._write(run.name, part)
        except BaseException:
            for _, run in made:
                self._remove(run.name)
            raise
        self.pending = []
        del merged
        for b, run in made:
            self.buckets[b].append(run)
        for b in sorted({b for b, _ in made}):
            self._merge_bucket(b)

    def _merge_bucket(self, b: int) -> None:
        runs = self.buckets[b]
        while len(runs) > 1 and merges(runs[-1].length, runs[-2].length):
            older, newer = runs[-2], runs[-1]
            merged = merge_runs(older.open(self.root), newer.open(self.root))
            run = Run(self._name(f"fp-{b:02x}", "u64"), len(merged), block_index(merged, STRIDE))
            self._write(run.name, merged)  # the old runs stand until the new one is whole
            del merged
            for old in (older, newer):
                old.close()
                self._remove(old.name)
            runs[-2:] = [run]

    def _name(self, kind: str, ext: str) -> str:
        self._seq += 1
        return f"{kind}-{self._seq - 1:08d}.{ext}"


def _seq_of(name: str) -> int:
    try:
        return int(name.rsplit("-", 1)[1].split(".")[0])
    except (IndexError, ValueError):
        return 0


def remove_stale(parent: Any) -> int:
    """Remove the store directories that kmc made in ``parent`` for runs that surely ended
    (killed: their own cleanup never ran); returns the bytes freed. A store is removed
    only when its mark names a process of this host and PID namespace that no longer runs
    (``checker.base.owner.owner_gone``): one of a run on another host or in another container
    sharing the directory, or of an older kmc that recorded only a PID, is left alone."""
    try:
        entries = [p for p in Path(parent).glob(f"{PREFIX}*") if p.is_dir() and not p.is_symlink()]
    except OSError:
        return 0
    freed = 0
    for path in entries:
        try:
            line = (path / MARK).read_text(encoding="utf-8")[:400]
        except (OSError, UnicodeDecodeError):
            continue  # not kmc's: left as it is
        if owner_gone(line):
            size = sum(f.stat().st_size for f in path.iterdir() if f.is_file() and not f.is_symlink())
            shutil.rmtree(path, ignore_errors=True)
            freed += size
    return freed
