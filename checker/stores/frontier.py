"""The frontier queues of the rows search (``checker.core.parts.FrontierQueue``): the level
being expanded and the next one, as rows.

- ``MemoryQueue``: each level a list of the row blocks appended to it (the queue of a run
  with the memory store);
- ``DiskQueue``: each level one append-only file in the disk store's directory
  (``q-SEQ.rows``), the queue of every run with ``--store disk``. Rows of fixed width are
  written raw, row after row, and the current level is read back a chunk at a time at
  its offset (``np.fromfile``): resident memory is one chunk, whatever the level's size,
  and the pages read are handed back to the page cache at once. Rows of Python states
  (``checker.core.states_kernel``) are written as pickled blocks, each after its length. The
  file of a finished level is deleted at the swap; a checkpoint links the current
  level's file where the store's files go, and a resumed run links it back.

A write that finds the disk full stops the run cleanly (``ResourceStop``, as the disk
store does): the next level is dropped and the last boundary stands. Every write goes
through ``checker.stores.disk_files.write_bytes`` (the seam where the tests make the disk full).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np

from ..base.errors import EngineError
from ..core.parts import FrontierQueue, ResourceStop, SavedQueue
from . import disk_files
from .disk_files import DiskFiles, level_source, verify_level

READ_ROWS = 1 << 15  # rows a block when a saved level is read back
_LENGTH = np.dtype("<u8")  # the length before a pickled block
_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def chunks(blocks: Iterable[np.ndarray], size: int) -> Iterator[np.ndarray]:
    """Consecutive chunks of ``size`` rows (the last one shorter) from blocks of rows, in
    order."""
    buf: list[np.ndarray] = []
    count = 0
    for a in blocks:
        start = 0
        while start < len(a):
            take = min(size - count, len(a) - start)
            buf.append(a[start : start + take])
            count += take
            start += take
            if count >= size:
                yield buf[0] if len(buf) == 1 else np.concatenate(buf)
                buf, count = [], 0
    if buf:
        yield buf[0] if len(buf) == 1 else np.concatenate(buf)


# -- in memory ----------------------------------------------------------------------------


@attrs.frozen
class MemorySaved:
    """A memory queue's checkpoint part: the current level's blocks."""

    rows: tuple[np.ndarray, ...]

    kind = "memory"

    def blocks(self, directory: Any = None) -> Iterator[np.ndarray]:
        return iter(self.rows)


class MemoryQueue:
    """Each level a list of the row blocks appended to it."""

    kind = "memory"

    def __init__(self) -> None:
        self.current: list[np.ndarray] = []
        self.next: list[np.ndarray] = []

    def append(self, rows: np.ndarray) -> None:
        if len(rows):
            self.next.append(rows)

    def __len__(self) -> int:
        return sum(len(c) for c in self.current)

    def next_len(self) -> int:
        return sum(len(c) for c in self.next)

    def chunks(self, size: int) -> Iterator[np.ndarray]:
        return chunks(self.current, size)

    def swap(self) -> None:
        self.current, self.next = self.next, []

    def rollback(self) -> None:
        self.next = []

    def clear(self) -> None:
        self.current, self.next = [], []

    def saved(self, beside: dict[str, Any]) -> dict[str, Any]:
        return {"queue": MemorySaved(tuple(self.current))}

    def restored(self, saved: SavedQueue, directory: Any = None) -> MemoryQueue:
        queue = MemoryQueue()
        queue.current = list(saved.blocks(directory))
        return queue

    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.current + self.next)

    def disk_bytes(self) -> int:
        return 0

    def peak_disk_bytes(self) -> int:
        return 0

    def written_bytes(self) -> int:
        return 0

    def close(self) -> None:
        self.clear()


# -- on disk ------------------------------------------------------------------------------


@attrs.frozen
class Layout:
    """How a level file holds its rows: raw rows of ``dtype`` and ``shape`` (a row's), or
    pickled blocks (``dtype`` None: rows of Python states)."""

    dtype: str | None
    shape: tuple[int, ...]

    @classmethod
    def of(cls, rows: np.ndarray) -> Layout:
        raw = rows.dtype != object
        return cls(rows.dtype.str if raw else None, tuple(rows.shape[1:]))

    def encode(self, rows: np.ndarray) -> np.ndarray:
        """The bytes a block of rows adds to a level file."""
        if self.dtype is not None:
            return np.ascontiguousarray(rows, dtype=self.dtype)
        data = pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)
        return np.concatenate([np.array([len(data)], dtype=_LENGTH).view(np.uint8), np.frombuffer(data, np.uint8)])

    def read(self, path: Path, count: int, size: int) -> Iterator[np.ndarray]:
        """The ``count`` rows of the level file ``path`` in blocks (of ``size`` rows when
        raw; as appended when pickled), its pages handed back once read."""
        with open(path, "rb") as f:
            if self.dtype is not None:
                dtype = np.dtype(self.dtype)
                width = int(np.prod(self.shape, dtype=np.int64))
                row_bytes = dtype.itemsize * width
                for start in range(0, count, size):
                    n = min(size, count - start)
                    block = np.fromfile(f, dtype=dtype, count=n * width)
                    if len(block) != n * width:
                        raise EngineError(f"frontier queue: {path}: cut short")
                    _release(f, start * row_bytes, n * row_bytes)
                    yield block.reshape((n, *self.shape))
                return
            done = 0
            while done < count:
                head = f.read(_LENGTH.itemsize)
                if len(head) != _LENGTH.itemsize:
                    raise EngineError(f"frontier queue: {path}: cut short")
                length = int(np.frombuffer(head, dtype=_LENGTH)[0])
                rows = pickle.loads(f.read(length))  # a file kmc wrote in its own run
                done += len(rows)
                yield rows


def _release(f: Any, offset: int, length: int) -> None:
    """Hand the pages of a read range back to the page cache."""
    if hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):
            os.posix_fadvise(f.fileno(), offset, length, os.POSIX_FADV_DONTNEED)


@attrs.frozen
class DiskQueueSaved:
    """A disk queue's checkpoint part: its current level's file (linked beside the
    store's files), its row count and layout."""

    name: str | None  # the level file (None: an empty level)
    count: int
    layout: Layout | None
    data: str | None  # the level directory's name in the checkpoint directory
    path: str  # the directory the file was linked into
    # {file name: (size, sha256)} of the level file (None in a checkpoint of a kmc that
    # recorded none: refused, it cannot be verified)
    files: dict[str, tuple[int, str]] | None = None

    kind = "disk"

    def source(self, directory: Any = None) -> Path:
        """The level file (or the level directory of an empty level), once checked against
        the size and SHA-256 the checkpoint recorded.

        Raises:
            CheckpointError: the directory or the file is missing, a link, or damaged.
        """
        where = level_source(directory, self.data, self.path)
        if self.name is None:
            return where
        verify_level(directory, where, [self.name], self.files)
        return where / self.name

    def blocks(self, directory: Any = None) -> Iterator[np.ndarray]:
        if self.name is None or self.layout is None:
            return iter(())
        return self.layout.read(self.source(directory), self.count, READ_ROWS)


class DiskQueue(DiskFiles):
    """Each level one append-only file of rows in ``root`` (the disk store's directory);
    see the module."""

    kind = "disk"
    what = "frontier queue"

    def __init__(self, root: str) -> None:
        self.root = root
        self.layout: Layout | None = None  # learned from the first block
        self.current: tuple[str, int] | None = None  # (file name, rows)
        self.next: tuple[str, int] | None = None
        self._seq = 1

    def append(self, rows: np.ndarray) -> None:
        if not len(rows):
            return
        if self.layout is None:
            self.layout = Layout.of(rows)
        if self.next is None:
            self.next = (self._new_name(), 0)
        name, count = self.next
        self._write(name, self.layout.encode(rows), append=True)
        self.next = (name, count + len(rows))

    def __len__(self) -> int:
        return 0 if self.current is None else self.current[1]

    def next_len(self) -> int:
        return 0 if self.next is None else self.next[1]

    def chunks(self, size: int) -> Iterator[np.ndarray]:
        if self.current is None or self.layout is None:
            return iter(())
        name, count = self.current
        blocks = self.layout.read(Path(self.root) / name, count, size)
        return blocks if self.layout.dtype is not None else chunks(blocks, size)

    def swap(self) -> None:
        if self.current is not None:
            self._remove(self.current[0])
        self.current, self.next = self.next, None

    def rollback(self) -> None:
        if self.next is not None:
            self._remove(self.next[0])
        self.next = None

    def clear(self) -> None:
        self.rollback()
        self.swap()

    def saved(self, beside: dict[str, Any]) -> dict[str, Any]:
        part = beside["seen"]  # the disk store's (checker.stores.disk.DiskSaved)
        target = Path(part.path)
        name, count = self.current if self.current is not None else (None, 0)
        if name is not None and not (target / name).exists():  # (saved again at one boundary)
            try:
                disk_files.link(Path(self.root) / name, target / name)
            except OSError:  # (a full disk: the caller stops the run; no half-copied file stays)
                with contextlib.suppress(OSError):
                    os.unlink(target / name)
                raise
        try:
            files = {} if name is None else self.seal(target, [name])
        except OSError as e:
            raise EngineError(f"{self.what}: cannot read {target} to checksum it ({e.strerror or e})") from None
        return {"queue": DiskQueueSaved(name, count, self.layout, beside.get("data"), str(target), files)}

    def restored(self, saved: SavedQueue, directory: Any = None) -> DiskQueue:
        queue = DiskQueue(self.root)
        queue._seq = self._seq
        if saved.kind == self.kind:  # the same kind: its file linked in
            part = cast(DiskQueueSaved, saved)
            if part.name is not None:
                name = queue._new_name()
                disk_files.link(part.source(directory), Path(self.root) / name)
                queue.layout, queue.current = part.layout, (name, part.count)
                queue._disk = queue._peak = os.path.getsize(Path(self.root) / name)
            return queue
        try:  # another kind (a run stopped at its memory ceiling): its rows written in
            for block in saved.blocks(directory):
                queue.append(block)
        except ResourceStop as e:
            raise EngineError(e.detail) from None
        queue.swap()
        return queue

    def nbytes(self) -> int:
        return 0

    def close(self) -> None:
        self.rollback()
        self.swap()

    def _new_name(self) -> str:
        self._seq += 1
        return f"q-{self._seq - 1:08d}.rows"


# the queue of a store's kind, where it is not the memory queue
QUEUES: dict[str, Callable[[Any], FrontierQueue]] = {"disk": lambda store: DiskQueue(store.root)}


def new_queue(store: Any) -> FrontierQueue:
    """The frontier queue that goes with ``store`` (a ``checker.core.parts.Store``): files in
    its directory with the disk store, else in memory."""
    make = QUEUES.get(store.kind)
    return MemoryQueue() if make is None else make(store)


# -- an append-only column of items, spilled to a temporary file (the liveness log's edges,
# the numbering of the rows search's states)

CHUNK = 1 << 20  # items a reader of a column (a liveness decision) reads at a time
_BUFFER = 1 << 21  # bytes a column keeps in memory before it writes them to its file


class Column:
    """An append-only array of ``dtype`` items (rows of ``width`` items when ``width`` is
    given) kept in an unnamed temporary file, the last appended ones in memory until they
    fill ``_BUFFER`` bytes; the file is removed when the column is collected."""

    def __init__(self, dtype: Any, width: int | None = None) -> None:
        self.dtype, self.width = np.dtype(dtype), width
        self._row = self.dtype.itemsize * (width or 1)
        self._file: Any = None
        self._stored = 0  # items in the file
        self._pending: list[np.ndarray] = []
        self._waiting = 0  # items in _pending

    def __len__(self) -> int:
        return self._stored + self._waiting

    @property
    def nbytes(self) -> int:
        return int(len(self) * self._row)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the items not yet written to the file."""
        return int(self._waiting * self._row)

    def append(self, items: np.ndarray) -> None:
        items = np.array(items, dtype=self.dtype)  # a copy: the caller's array may change
        if self.width is not None:
            items = items.reshape(-1, self.width)
        if not len(items):
            return
        self._pending.append(items)
        self._waiting += len(items)
        if self._waiting * self._row >= _BUFFER:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="kmc-liveness-")
        self._file.seek(self._stored * self._row)
        for items in self._pending:
            self._file.write(np.ascontiguousarray(items).data)
        self._stored += self._waiting
        self._pending, self._waiting = [], 0

    def read(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Items ``lo .. hi - 1`` (all by default), as a new array."""
        self._flush()
        hi = self._stored if hi is None else min(hi, self._stored)
        lo = min(lo, hi)
        shape = (hi - lo,) if self.width is None else (hi - lo, self.width)
        out = np.empty(shape, dtype=self.dtype)
        if hi > lo:
            view = out.data.cast("B")
            self._file.seek(lo * self._row)
            done = 0
            while done < len(view):
                got = self._file.readinto(view[done:])
                if not got:
                    raise OSError("a liveness column's temporary file is shorter than what was written")
                done += got
        return out

    def chunks(self, size: int = CHUNK) -> Iterator[tuple[int, np.ndarray]]:
        """``(lo, items)`` over the whole column, ``size`` items at a time."""
        for lo in range(0, len(self), size):
            yield lo, self.read(lo, lo + size)

    def __iter__(self) -> Iterator[np.ndarray]:
        """The items, as arrays of at most a chunk each (``numpy.concatenate`` of them
        is the whole column)."""
        return (items for _, items in self.chunks())

    def truncate(self, count: int) -> None:
        """Keep the first ``count`` items."""
        self._flush()
        if count < self._stored:
            self._file.truncate(count * self._row)
            self._stored = count

    def replace(self, items: np.ndarray, dtype: Any = None) -> None:
        """Hold ``items`` (of ``dtype``, by default the column's) instead."""
        self.truncate(0)
        if dtype is not None:
            self.dtype = np.dtype(dtype)
            self._row = self.dtype.itemsize * (self.width or 1)
        self.append(items)

    def __getstate__(self) -> dict[str, Any]:
        return {"dtype": self.dtype.str, "width": self.width, "items": self.read()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(np.dtype(state["dtype"]), state["width"])  # type: ignore[misc]
        self.append(state["items"])
