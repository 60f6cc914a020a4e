"""The partitioned level's rows store (``checker.partitioned.levels``): where a run keeps
what outlives a level, as immutable objects in a blob store (``checker.blobs``: a
directory, or an object store such as ``s3://``), the names of its objects, and the owner
of a fingerprint. Its objects are written by ``rows_write`` and read by ``rows_read``;
the stores of killed runs are found by ``rows_stale``."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable

import numpy as np

from ..base.errors import EngineError
from ..base.owner import owner_line
from ..blobs import Blobs, open_blobs
from ..blobs.posix import PosixBlobs
from .rows_read import load_arrays
from .rows_write import save_arrays


class RowsStore:
    """Where a run keeps what outlives a level (TLC keeps its fingerprint set and its
    trace file on disk the same way), as objects under the run's own prefix of a blob
    store: for every fingerprint partition ``i``, its sorted runs of fingerprints
    (``seen/iiii/run-DDDDDD.npy``, the newest named by the depth that wrote it) and, for
    every depth, its new states' fingerprints, parent fingerprints and choices
    (``seen/iiii/meta-DDDDDD.bin``); the frontier of the next level, one object per rank
    partition and owner (``front/DDDDDD/tTTTT-pIIII.bin``); a level's successors, one
    object per expanding task and owner (``succ/DDDDDD/oOOOO-pIIII.bin``), and what the
    graph visitor records, one object per task (``graph/DDDDDD/pIIII.bin``).

    Every object is written whole, by a task whose output depends only on its inputs: a
    retried task rewrites the same bytes. Objects are found by the names the tasks
    return, never by listing. ``digests`` holds the size and SHA-256 of the objects a
    checkpoint names, as their writers computed them (when ``digest`` is set)."""

    def __init__(self, blobs: Blobs, digest: bool = False) -> None:
        self.blobs = blobs
        self.root = blobs.root
        self.digest = digest
        self.digests: dict[str, tuple[int, str]] = {}
        # Objects a checkpoint names (``pin``), and those the levels dropped while they were
        # (a name, or a prefix ending in "/"): deleted once no checkpoint names them.
        self.pinned: set[str] = set()
        self.deferred: set[str] = set()

    @classmethod
    def create(cls, location: str | None = None, digest: bool = False) -> RowsStore:
        """A new store under ``location`` (a directory, default the temporary directory,
        or an object store URL): a prefix of its own, marked with its owner (``OWNER``:
        this host, pid and process start time) so that a later run can tell it from a
        store whose run was killed (``clean_stale``)."""
        parent = open_blobs(location if location is not None else tempfile.gettempdir())
        owner = owner_line(os.getpid()).encode()
        if isinstance(parent, PosixBlobs):
            try:
                os.makedirs(parent.root, exist_ok=True)
                root = tempfile.mkdtemp(prefix=PREFIX, dir=parent.root)
                store = cls(PosixBlobs(root), digest)
                store.blobs.put(OWNER, [owner])
                return store
            except OSError as e:
                raise EngineError(
                    f"spark store: cannot create a directory in {parent.root} ({e.strerror or e})"
                ) from None
        name = PREFIX + os.urandom(6).hex()
        store = cls(parent.child(name), digest)
        try:
            store.blobs.put(OWNER, [owner])
        except OSError as e:
            raise EngineError(f"spark store: cannot write to {parent.root} ({one_line_os(e)})") from None
        return store

    def remove(self) -> None:
        if isinstance(self.blobs, PosixBlobs):
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            self.blobs.delete_prefix("")
            self.blobs.forget_all()  # the driver's copies (levels it ran in process)

    # Object names (also used on the executors, through the module functions below).
    def run(self, i: int, depth: int) -> str:
        return run_name(i, depth)

    def front(self, depth: int, t: int, i: int) -> str:
        return front_name(depth, t, i)

    def meta(self, i: int, depth: int) -> str:
        return meta_name(i, depth)

    def save(self, name: str, *arrays: np.ndarray) -> None:
        """Write ``name`` from the driver (its digest kept when ``digest`` is set)."""
        save_arrays((self.blobs, name), *arrays, digests=self.digests if self.digest else None)

    def load(self, name: str, count: int) -> list[np.ndarray]:
        return load_arrays((self.blobs, name), count)

    def drop_run(self, i: int, depth: int) -> None:
        self._drop(self.run(i, depth))
        self.digests.pop(self.run(i, depth), None)

    def drop_front(self, depth: int) -> None:
        prefix = f"front/{depth:06d}/"
        if any(name.startswith(prefix) for name in self.pinned):
            self.deferred.add(prefix)  # a checkpoint names the level's frontier: kept until released
        else:
            self.blobs.delete_prefix(prefix.rstrip("/"))
        for name in [n for n in self.digests if n.startswith(prefix)]:
            del self.digests[name]

    def _drop(self, name: str) -> None:
        if name in self.pinned:
            self.deferred.add(name)
        else:
            self.blobs.delete([name])

    # -- objects a checkpoint names (an object store's checkpoint is a manifest of them) --

    def pin(self, names: Iterable[str]) -> None:
        """Keep the objects ``names`` (a checkpoint being written names them) when the
        levels drop them, until ``release``; the store is marked as named by a checkpoint
        (``KEPT``), so that ``clean_stale`` leaves it when this run ends or is killed."""
        if not self.pinned and not self.deferred:
            self.blobs.put(KEPT, [b"named by a checkpoint of kmc: kept until a resumed run replaces it\n"])
        self.pinned.update(names)

    def release(self, names: Iterable[str]) -> None:
        """A checkpoint naming exactly ``names`` of this store is written: the objects the
        levels dropped meanwhile that it does not name are deleted now."""
        keep = set(names)
        self.pinned = set(keep)
        for name in sorted(self.deferred):
            if name.endswith("/"):
                if not any(k.startswith(name) for k in keep):
                    self.blobs.delete_prefix(name.rstrip("/"))
                    self.deferred.discard(name)
            elif name not in keep:
                self.blobs.delete([name])
                self.deferred.discard(name)

    def drop_graph(self, depth: int) -> None:
        self.blobs.delete_prefix(f"graph/{depth:06d}")

    def drop_successors(self, depth: int) -> None:
        self.blobs.delete_prefix(f"succ/{depth:06d}")

    def disk_bytes(self) -> int:
        """The bytes of the store's objects (one listing)."""
        return sum(self.blobs.sizes().values())

    def free_bytes(self) -> int | None:
        return self.blobs.free_bytes()

    def parent(self, i: int, depth: int, fp: int) -> tuple[int, int]:
        fps, parents, choices = self.load(self.meta(i, depth), 3)
        at = int(np.searchsorted(fps, np.uint64(fp)))
        if at == len(fps) or int(fps[at]) != fp:
            raise EngineError("trace rebuild: a state's parent is missing from the seen-set")
        return int(parents[at]), int(choices[at])


def one_line_os(e: OSError) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return (e.strerror if isinstance(e.strerror, str) else None) or (lines[0] if lines else type(e).__name__)


PREFIX = "kmc-rows-"
OWNER = "owner"  # "host pid-namespace pid start-time": the run that made the store
KEPT = "kept"  # present: a checkpoint names the store's objects (``RowsStore.pin``)


def split_frontier(
    store: RowsStore, depth: int, n: int, keys: np.ndarray, fps: np.ndarray, rows: np.ndarray
) -> tuple[list[int], list[list[int]]]:
    """Write a level (in rank order) into ``store`` as ``n`` rank partitions: partition
    ``j`` holds the ranks ``g`` with ``g * n // L == j``. Returns the count of each and
    the owners that wrote each (the driver, as owner 0)."""
    level = len(keys)
    bounds = [(j * level + n - 1) // n for j in range(n)] + [level]
    sources: list[list[int]] = []
    for j in range(n):
        cut = slice(bounds[j], bounds[j + 1])
        if bounds[j + 1] > bounds[j]:
            store.save(store.front(depth, j, 0), keys[cut], fps[cut], rows[cut])
            sources.append([0])
        else:
            sources.append([])
    return [bounds[j + 1] - bounds[j] for j in range(n)], sources


def run_name(i: int, depth: int) -> str:
    return f"seen/{i:04d}/run-{depth:06d}.npy"


def meta_name(i: int, depth: int) -> str:
    return f"seen/{i:04d}/meta-{depth:06d}.bin"


def succ_name(depth: int, o: int, i: int) -> str:
    """The successors for owner ``o`` of rank partition ``i``'s expansion: one object a
    task and owner, a record a slice of the frontier, in slice order."""
    return f"succ/{depth:06d}/o{o:04d}-p{i:04d}.bin"


def succ_order(name: str) -> int:
    """Where a ``succ_name`` object's successors stand in the order of their keys: its
    rank partition (a partition's ranks all precede the next's; inside the object, the
    slices are in order)."""
    return int(os.path.basename(name)[: -len(".bin")].split("-")[1][1:])


def graph_name(depth: int, i: int) -> str:
    """What a rank partition's expansion of a level records for the graph visitor
    (``checker.partitioned.tasks.graph_records``): a record a slice, in slice order."""
    return f"graph/{depth:06d}/p{i:04d}.bin"


def front_name(depth: int, t: int, i: int) -> str:
    return f"front/{depth:06d}/t{t:04d}-p{i:04d}.bin"


def owners(fps: np.ndarray, n: int) -> np.ndarray:
    """The fingerprint partition of each fingerprint: ``floor(fp * n / 2**64)`` (to 32
    bits), which grows with ``fp``, so that a sorted array of fingerprints splits into
    its owners' shares by position."""
    return ((fps >> np.uint64(32)) * np.uint64(n) >> np.uint64(32)).astype(np.int64)


def owner_of(fp: int, n: int) -> int:
    return ((int(fp) >> 32) * n) >> 32
