"""Writing the rows store's objects (``checker.partitioned.rows``): arrays encoded as
``.npy`` headers and data, one object whole; rows of small numbers packed four bits a
column, rows of Python states pickled; and the ``Writer`` that a task writes through while
it goes on computing."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from types import ModuleType, TracebackType

import numpy as np

from ..blobs import Blobs, FileStream
from ..blobs.posix import PosixBlobs

# Where arrays are written and read: a file of this machine (its path), or an object of a
# blob store (``(blobs, name)``).
Target = str | os.PathLike[str] | tuple[Blobs, str]
# An object's bytes, in the parts it is written from (the data of an array is not copied).
Part = bytes | memoryview
# Per object name: its size and SHA-256 (hex), as its writer computed them.
Digests = dict[str, tuple[int, str]]


def target_of(target: Target) -> tuple[Blobs, str]:
    """The blob store and the name of ``target``: a path is its directory's object."""
    if isinstance(target, tuple):
        return target
    path = os.fspath(target)
    return PosixBlobs(os.path.dirname(path) or os.curdir), os.path.basename(path)


def encode_arrays(*arrays: np.ndarray, pack: bool = False) -> list[Part]:
    """The bytes of ``arrays`` as ``save_arrays`` writes them (a ``.npy`` header and the
    data, for each), as parts (the data not copied); with ``pack``, rows that fit four
    bits a column take half their bytes (``_pack``)."""
    parts: list[Part] = []

    def add(a: np.ndarray) -> None:
        a = np.ascontiguousarray(a)
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(a))
        parts.append(header.getvalue())
        if a.size:
            parts.append(a.reshape(-1).view(np.uint8).data)

    for a in arrays:
        if a.dtype == object:  # rows of Python states: pickled as Spark pickles them
            add(PICKLED)
            a = np.frombuffer(_PICKLER.dumps(list(a)), dtype=np.uint8)
        elif pack and _nibbles_fit(a):  # rows of small numbers: two columns a byte
            add(NIBBLES)
            a = _pack(a)
        add(a)
    return parts


def digest_of(parts: list[Part]) -> tuple[int, str]:
    """``(size, SHA-256)`` of the object made of ``parts``."""
    digest, size = hashlib.sha256(), 0
    for part in parts:
        digest.update(part)
        size += len(part)
    return size, digest.hexdigest()


def save_arrays(target: Target, *arrays: np.ndarray, pack: bool = False, digests: Digests | None = None) -> int:
    """Write ``arrays`` to ``target`` (a path, or ``(blobs, name)``) whole; with ``pack``,
    rows that fit four bits a column take half their bytes (``_pack``); with ``digests``
    (a dict), the object's size and SHA-256 are put there under its name. Returns the
    bytes written."""
    blobs, name = target_of(target)
    parts = encode_arrays(*arrays, pack=pack)
    if digests is not None:
        digests[name] = digest_of(parts)
    return blobs.put(name, parts)


class Writer:
    """Objects written on a thread of its own: a task hands it arrays to write and goes
    on computing while they are encoded and written (a write may wait on the disk or the
    network; numpy writes without holding the interpreter). ``save`` writes an object at
    once; ``append`` adds a record to an object streamed to its store as it comes
    (``Blobs.stream``: one object a task and owner, however many slices the task expands,
    none of it held in memory) and committed at ``close``. At most ``depth`` writes wait
    their turn, so that the arrays held for them stay few. ``close`` waits for every
    write, raises the first one's error, and returns the bytes of the objects saved with
    ``tally`` and of every appended one (what a task reports as shipped); with
    ``digests`` (a dict), the size and SHA-256 of each object saved with ``digest`` goes
    there. Used as a context manager, it is closed on the way out; when an error is on its
    way instead, the writes still waiting are cancelled and the appended objects dropped."""

    def __init__(self, depth: int = 32, digests: Digests | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kmc-writer")
        # The writes waiting or running, each with whether its bytes count (``tally``).
        self._pending: deque[tuple[Future[int], bool]] = deque()
        self._streams: dict[Target, FileStream] = {}  # the appended objects (the writer thread's)
        self._depth = depth
        self.digests = digests
        self.written = 0

    def save(
        self, target: Target, *arrays: np.ndarray, pack: bool = False, tally: bool = True, digest: bool = False
    ) -> None:
        digests = self.digests if digest else None
        self._submit(partial(save_arrays, target, *arrays, pack=pack, digests=digests), tally)

    def append(self, target: Target, *arrays: np.ndarray, pack: bool = False) -> None:
        self._submit(partial(self._append, target, *arrays, pack=pack), True)

    def _submit(self, write: Callable[[], int], tally: bool) -> None:
        while len(self._pending) >= self._depth:
            self._done()
        self._pending.append((self._pool.submit(write), tally))

    def _append(self, target: Target, *arrays: np.ndarray, pack: bool) -> int:
        """(On the writer thread, in the order the records came.)"""
        stream = self._streams.get(target)
        if stream is None:
            blobs, name = target_of(target)
            stream = self._streams[target] = blobs.stream(name)
        return sum(stream.write(part) for part in encode_arrays(*arrays, pack=pack))

    def _done(self) -> None:
        future, tally = self._pending.popleft()
        written = future.result()
        if tally:
            self.written += written

    def close(self) -> int:
        try:
            while self._pending:
                self._done()
            for stream in self._streams.values():
                stream.commit()
        finally:
            self._end()
        return self.written

    def _end(self) -> None:
        """No write left: those waiting are cancelled, the appended objects not committed dropped."""
        for future, _tally in self._pending:
            future.cancel()
        self._pool.shutdown(wait=True)
        for stream in self._streams.values():
            stream.abort()  # (nothing for a committed one)
        self._streams = {}

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self._end()


# Rows of Python states (``checker.core.states_kernel``) are object arrays: saved as this marker
# and the bytes of the list of states, pickled (``use_pickler``).
PICKLED = np.array([b"kmc-pickled-objects"])


# Rows whose columns all hold -1 to 14 (the Kafka model's, in the configurations that
# need the Spark engine) can be saved as this marker and half as many bytes: a byte holds
# two columns, each plus one in four bits. The store's largest files are rows; packing
# costs CPU (about 5% of a run's), so the engine packs only a level whose files would
# take a large share of the disk's free space (``checker.partitioned.levels``).
NIBBLES = np.array([b"kmc-nibbles"])


def _nibbles_fit(a: np.ndarray) -> bool:
    shaped = a.dtype == np.int8 and a.ndim == 2 and a.shape[1] % 2 == 0 and a.size > 0
    return bool(shaped and a.min() >= -1 and a.max() <= 14)


def _pack(rows: np.ndarray) -> np.ndarray:
    u = rows.view(np.uint8) + np.uint8(1)  # -1..14 -> 0..15
    return (u[:, 0::2] << np.uint8(4)) | u[:, 1::2]


# How rows of Python states are pickled: the standard library's pickle, unless the back end
# that runs the tasks sets another (``use_pickler``: the Spark adapter sets Spark's
# cloudpickle, so that a model defined in a script travels by value, as in Spark's own
# tasks). Either's bytes load with ``pickle.loads``.
_PICKLER: ModuleType = pickle


def use_pickler(module: ModuleType) -> None:
    """Pickle rows of Python states with ``module`` (its ``dumps``) in this process."""
    global _PICKLER
    _PICKLER = module
