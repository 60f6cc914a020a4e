"""The rows engine's store (``checker.spark_rows``): the directory where a run keeps what
outlives a level, and the owner of a fingerprint."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from .errors import EngineError
from .owner import owner_gone, owner_line, start_time
from .spark_store import digests


class Store:
    """The directory where a run keeps what outlives a level (TLC keeps its fingerprint
    set and its trace file on disk the same way): for every fingerprint partition ``i``,
    its sorted runs of fingerprints (``seen/iiii/run-DDDDDD.npy``, the newest named by the
    depth that wrote it) and, for every depth, its new states' fingerprints, parent
    fingerprints and choices (``seen/iiii/meta-DDDDDD.bin``); and the frontier of the
    next level, one file per rank partition and owner (``front/DDDDDD/tTTTT-pIIII.bin``).

    Every file is written whole under a temporary name and renamed, by a task whose
    output depends only on its inputs: a retried task rewrites the same bytes. The
    executors and the driver must all see the directory at the same path (on a cluster:
    a shared file system)."""

    def __init__(self, root) -> None:
        self.root = str(root)

    @classmethod
    def create(cls, parent=None) -> Store:
        """A new store in ``parent`` (default: the temporary directory), marked with its
        owner (``OWNER``: this host, PID namespace, pid and process start time) so that a later run can
        tell it from a store whose run was killed (``clean_stale``)."""
        try:
            if parent is not None:
                os.makedirs(parent, exist_ok=True)
            root = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
            with open(os.path.join(root, OWNER), "w", encoding="utf-8") as f:
                f.write(_owner_line(os.getpid()))
            return cls(root)
        except OSError as e:
            raise EngineError(
                f"spark store: cannot create a directory in {parent or tempfile.gettempdir()} ({e.strerror or e})"
            ) from None

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # Paths (also used on the executors, through the module functions below).
    def run(self, i, depth) -> str:
        return run_path(self.root, i, depth)

    def front(self, depth, t, i) -> str:
        return front_path(self.root, depth, t, i)

    def meta(self, i, depth) -> str:
        return meta_path(self.root, i, depth)

    def save(self, path, *arrays) -> None:
        save_arrays(path, *arrays)

    def drop_run(self, i, depth) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.run(i, depth))

    def drop_front(self, depth) -> None:
        shutil.rmtree(os.path.join(self.root, "front", f"{depth:06d}"), ignore_errors=True)

    def drop_graph(self, depth) -> None:
        shutil.rmtree(os.path.join(self.root, "graph", f"{depth:06d}"), ignore_errors=True)

    def graph_files(self, depth) -> list[str]:
        """A level's graph records, in rank order (partition, then slice)."""
        where = os.path.join(self.root, "graph", f"{depth:06d}")
        try:
            names = sorted(n for n in os.listdir(where) if n.endswith(".bin"))
        except FileNotFoundError:
            return []
        return [os.path.join(where, n) for n in names]

    def drop_successors(self, depth) -> None:
        shutil.rmtree(os.path.join(self.root, "succ", f"{depth:06d}"), ignore_errors=True)

    def disk_bytes(self) -> int:
        """The bytes of the store's files (their sizes; one walk of the directory)."""
        total = 0
        stack = [self.root]
        while stack:
            with contextlib.suppress(FileNotFoundError), os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        with contextlib.suppress(FileNotFoundError):
                            total += entry.stat(follow_symlinks=False).st_size
        return total

    def parent(self, i, depth, fp) -> tuple[int, int]:
        fps, parents, choices = load_arrays(self.meta(i, depth), 3)
        at = int(np.searchsorted(fps, np.uint64(fp)))
        if at == len(fps) or int(fps[at]) != fp:
            raise EngineError("trace rebuild: a state's parent is missing from the seen-set")
        return int(parents[at]), int(choices[at])


PREFIX = "kmc-rows-"
OWNER = "owner"  # "host pid-namespace pid start-time": the run that made the store


def _owner_line(pid) -> str:
    """``host pid-namespace pid start-time`` (``checker.owner``)."""
    return owner_line(pid)


def _owner_gone(root) -> bool | None:
    """True when the store ``root``'s owner surely ended (a process of this host and PID
    namespace that no longer runs: ``checker.owner.owner_gone``); False when it runs, or
    might (another host or PID namespace: a shared store, a container); None without an
    owner mark. A mark of an older kmc (``host pid start-time``, no namespace) is taken
    as it was then: gone when no process of this host runs with that PID and start time."""
    import socket

    try:
        with open(os.path.join(root, OWNER), encoding="utf-8") as f:
            words = f.read(400).split()
    except (OSError, UnicodeDecodeError):
        return None
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


def _idle(root) -> bool:
    import time

    try:
        newest = max([os.stat(root).st_mtime] + [os.stat(os.path.join(root, n)).st_mtime for n in os.listdir(root)])
    except OSError:
        return False
    return time.time() - newest > IDLE_SECONDS


def clean_stale(parent=None) -> str | None:
    """Remove the stores in ``parent`` (default: the temporary directory) whose run was
    killed (its owner process is gone), and name those of an older kmc (no owner mark).
    Returns one line saying what was freed and named, or None when there were none."""
    parent = parent or tempfile.gettempdir()
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return None
    removed, freed, unknown = 0, 0, []
    for entry in entries:
        gone = _owner_gone(entry.path)
        if gone:
            size = Store(entry.path).disk_bytes()
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.exists(entry.path):
                removed, freed = removed + 1, freed + size
        elif gone is None and os.path.isdir(os.path.join(entry.path, "seen")) and _idle(entry.path):
            unknown.append(entry.path)
    parts = []
    if removed:
        from .memory import format_size

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


def split_frontier(store, depth, n, keys, fps, rows) -> tuple[list[int], list[list[int]]]:
    """Write a level (in rank order) into ``store`` as ``n`` rank partitions: partition
    ``j`` holds the ranks ``g`` with ``g * n // L == j``. Returns the count of each and
    the owners that wrote each (the driver, as owner 0)."""
    level = len(keys)
    bounds = [(j * level + n - 1) // n for j in range(n)] + [level]
    sources = []
    for j in range(n):
        cut = slice(bounds[j], bounds[j + 1])
        if bounds[j + 1] > bounds[j]:
            store.save(store.front(depth, j, 0), keys[cut], fps[cut], rows[cut])
            sources.append([0])
        else:
            sources.append([])
    return [bounds[j + 1] - bounds[j] for j in range(n)], sources


def link(source, target) -> None:
    """Hard-link ``source`` as ``target`` (the store never rewrites a file), or copy it
    when they are on different file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def level_digests(directory) -> dict:
    """``{file name: (size, sha256)}`` of a saved level's files."""
    return digests(sorted(Path(directory).iterdir()))


def run_path(root, i, depth) -> str:
    return os.path.join(root, "seen", f"{i:04d}", f"run-{depth:06d}.npy")


def meta_path(root, i, depth) -> str:
    return os.path.join(root, "seen", f"{i:04d}", f"meta-{depth:06d}.bin")


def succ_path(root, depth, o, i, s) -> str:
    """The successors for owner ``o`` of rank partition ``i``'s slice at ``s``."""
    return os.path.join(root, "succ", f"{depth:06d}", f"o{o:04d}-p{i:04d}-{s:09d}.bin")


def succ_order(path) -> tuple[int, int]:
    """Where a ``succ_path`` file's successors stand in the order of their keys: its rank
    partition and slice (a partition's ranks, and a slice's, all precede the next's)."""
    _o, i, s = os.path.basename(path)[: -len(".bin")].split("-")
    return int(i[1:]), int(s)


def graph_path(root, depth, i, s) -> str:
    """What a rank partition's slice of a level records for the graph visitor
    (``checker.spark_rows_tasks.graph_records``)."""
    return os.path.join(root, "graph", f"{depth:06d}", f"p{i:04d}-{s:09d}.bin")


def front_path(root, depth, t, i) -> str:
    return os.path.join(root, "front", f"{depth:06d}", f"t{t:04d}-p{i:04d}.bin")


def save_arrays(path, *arrays, pack=False) -> int:
    """Write ``arrays`` to ``path`` whole: under a name of this process, then renamed;
    with ``pack``, rows that fit four bits a column take half their bytes (``_pack``).
    Returns the bytes written."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        for a in arrays:
            if a.dtype == object:  # rows of Python states: pickled as Spark pickles them
                np.save(f, _PICKLED, allow_pickle=False)
                a = np.frombuffer(_cloudpickle().dumps(list(a)), dtype=np.uint8)
            elif pack and _nibbles_fit(a):  # rows of small numbers: two columns a byte
                np.save(f, _NIBBLES, allow_pickle=False)
                a = _pack(a)
            np.save(f, np.ascontiguousarray(a), allow_pickle=False)
        written = f.tell()
    os.replace(tmp, path)
    return written


def load_arrays(path, count) -> list[np.ndarray]:
    with open(path, "rb") as f:
        return [_load_one(f) for _ in range(count)]


def read_ahead(paths) -> None:
    """Ask the kernel to start reading the files ``paths`` now, all at once
    (``POSIX_FADV_WILLNEED``), so that a task about to read them one after another, or to
    search them, finds them in memory instead of waiting on the disk for each in turn. A
    hint only: where the system has no such call, or a file is gone, nothing happens."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)


class Writer:
    """``save_arrays`` on a thread of its own: a task hands it a file to write and goes on
    computing while the file is written (a write may wait on the disk; numpy writes
    without holding the interpreter). At most ``depth`` files wait their turn, so the
    arrays held for them stay few. ``close`` waits for every file, raises the first
    write's error, and returns the bytes of the files saved with ``tally`` (what a task
    reports as shipped). Used as a context manager, it is closed on the way out, without
    raising again when an error is already on its way."""

    def __init__(self, depth: int = 32) -> None:
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kmc-writer")
        self._pending: Any = deque()
        self._depth = depth
        self.written = 0

    def save(self, path, *arrays, pack=False, tally=True) -> None:
        while len(self._pending) >= self._depth:
            self._done()
        self._pending.append((self._pool.submit(save_arrays, path, *arrays, pack=pack), tally))

    def _done(self) -> None:
        future, tally = self._pending.popleft()
        written = future.result()
        if tally:
            self.written += written

    def close(self) -> int:
        try:
            while self._pending:
                self._done()
        finally:
            for future, _tally in self._pending:
                future.cancel()
            self._pool.shutdown(wait=True)
        return self.written

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, kind, *_rest) -> None:
        if kind is None:
            self.close()
        else:
            with contextlib.suppress(Exception):
                self.close()


def load_joined(paths, count) -> list[np.ndarray]:
    """The ``count`` arrays of each file of ``paths`` (``save_arrays``), joined file after
    file: what ``np.concatenate`` makes of their ``load_arrays``, but each file's bytes read
    straight into their place in the joined arrays (or unpacked there), never copied from
    one array into another. An empty ``paths`` gives ``[]``."""
    if len(paths) <= 1:
        return load_arrays(paths[0], count) if paths else []
    read_ahead(paths)
    found = [_places(path, count) for path in paths]  # per file, per array: its place in the file
    where = [w for w in found if w is not None]
    if len(where) < len(found):  # rows of Python states: unpickled, then joined
        return [np.concatenate(a) for a in zip(*(load_arrays(p, count) for p in paths))]
    out = []
    for k in range(count):
        parts = [w[k] for w in where]
        dtype, tail = parts[0][1], parts[0][2][1:]
        if any(d != dtype or shape[1:] != tail for _offset, d, shape, _packed in parts):
            raise ValueError(f"spark store: the files {paths[0]} and others hold arrays of other shapes")
        out.append(np.empty((sum(shape[0] for _o, _d, shape, _p in parts), *tail), dtype=dtype))
    starts = [0] * count
    for path, places in zip(paths, where):
        with open(path, "rb") as f:
            for k, (offset, _dtype, shape, packed) in enumerate(places):
                target = out[k][starts[k] : starts[k] + shape[0]]
                starts[k] += shape[0]
                f.seek(offset)
                if packed:
                    packed_rows = np.fromfile(f, dtype=np.uint8, count=shape[0] * shape[1] // 2)
                    _unpack(packed_rows.reshape(shape[0], -1), target)
                elif target.nbytes and f.readinto(target.data.cast("B")) != target.nbytes:
                    raise EOFError(f"spark store: {path} is shorter than its arrays")
    return out


def _places(path, count) -> list[tuple] | None:
    """Per array of the file ``path``: ``(offset of its data, dtype, shape, packed)``, with
    a packed array's dtype and shape those of its rows unpacked; ``None`` for a file of
    pickled rows."""
    places = []
    with open(path, "rb") as f:
        for _ in range(count):
            form, offset, dtype, shape = _marked(f)
            if form == "pickled":
                return None
            f.seek(offset + int(np.prod(shape)) * dtype.itemsize)
            if form == "packed":
                dtype, shape = np.dtype(np.int8), (shape[0], 2 * shape[1])
            places.append((offset, dtype, shape, form == "packed"))
    return places


def _marked(f) -> tuple[str, int, np.dtype, tuple]:
    """The next array of a file ``save_arrays`` wrote, from ``f``'s position:
    ``(form, offset of its data, dtype, shape)``, ``form`` being ``"plain"``, or
    ``"packed"`` or ``"pickled"`` after its marker (then the header is the data's
    that follows the marker)."""
    offset, dtype, shape = _header(f)
    if dtype.kind == "S" and shape == (1,):
        marker = np.fromfile(f, dtype=dtype, count=1)[0]
        for form, mark in (("packed", _NIBBLES), ("pickled", _PICKLED)):
            if marker == mark[0]:
                return (form, *_header(f))
        f.seek(offset)
    return "plain", offset, dtype, shape


def _header(f) -> tuple[int, np.dtype, tuple]:
    """The ``.npy`` header at ``f``'s position: ``(offset of the data, dtype, shape)``."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    if fortran and len(shape) > 1:
        raise ValueError(f"spark store: {f.name} holds an array in Fortran order")
    return f.tell(), dtype, tuple(shape)


# Rows of Python states (``checker.states_kernel``) are object arrays: saved as this marker
# and the bytes of the list of states, pickled with cloudpickle (a model defined in a
# script travels by value, as in Spark's own tasks).
_PICKLED = np.array([b"kmc-pickled-objects"])


# Rows whose columns all hold -1 to 14 (the Kafka model's, in the configurations that
# need the Spark engine) can be saved as this marker and half as many bytes: a byte holds
# two columns, each plus one in four bits. The store's largest files are rows; packing
# costs CPU (about 5% of a run's), so the engine packs only a level whose files would
# take a large share of the disk's free space (``checker.spark_search``).
_NIBBLES = np.array([b"kmc-nibbles"])


def _nibbles_fit(a) -> bool:
    return a.dtype == np.int8 and a.ndim == 2 and a.shape[1] % 2 == 0 and a.size > 0 and a.min() >= -1 and a.max() <= 14


def _pack(rows) -> np.ndarray:
    u = rows.view(np.uint8) + np.uint8(1)  # -1..14 -> 0..15
    return (u[:, 0::2] << np.uint8(4)) | u[:, 1::2]


def _unpack(packed, out=None) -> np.ndarray:
    """The rows ``_pack`` packed, in a new array or written into ``out`` (int8)."""
    rows = np.empty((len(packed), 2 * packed.shape[1]), dtype=np.int8) if out is None else out
    u = rows.view(np.uint8)
    np.right_shift(packed, np.uint8(4), out=u[:, 0::2])
    np.bitwise_and(packed, np.uint8(15), out=u[:, 1::2])
    u -= np.uint8(1)
    return rows


def _load_one(f) -> np.ndarray:
    form, _offset, dtype, shape = _marked(f)
    a = np.fromfile(f, dtype=dtype, count=int(np.prod(shape))).reshape(shape)
    if form == "packed":
        return _unpack(a)
    if form == "plain":
        return a
    values = _cloudpickle().loads(a.tobytes())
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _cloudpickle() -> Any:
    from pyspark import cloudpickle

    return cloudpickle


def owners(fps, n) -> np.ndarray:
    """The fingerprint partition of each fingerprint: ``floor(fp * n / 2**64)`` (to 32
    bits), which grows with ``fp``, so that a sorted array of fingerprints splits into
    its owners' shares by position."""
    return ((fps >> np.uint64(32)) * np.uint64(n) >> np.uint64(32)).astype(np.int64)


def owner_of(fp, n) -> int:
    return ((int(fp) >> 32) * n) >> 32
