"""The partitioned level's rows store (``checker.partitioned.levels``): where a run keeps
what outlives a level, as immutable objects in a blob store (``checker.blobs``: a
directory, or an object store such as ``s3://``), and the owner of a fingerprint."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import shutil
import tempfile
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

from ..base.errors import EngineError
from ..base.owner import owner_gone, owner_line, start_time
from ..blobs import Blobs, open_blobs
from ..blobs.posix import PosixBlobs


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
    def create(cls, location=None, digest: bool = False) -> RowsStore:
        """A new store under ``location`` (a directory, default the temporary directory,
        or an object store URL): a prefix of its own, marked with its owner (``OWNER``:
        this host, pid and process start time) so that a later run can tell it from a
        store whose run was killed (``clean_stale``)."""
        parent = open_blobs(location if location is not None else tempfile.gettempdir())
        owner = _owner_line(os.getpid()).encode()
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
    def run(self, i, depth) -> str:
        return run_name(i, depth)

    def front(self, depth, t, i) -> str:
        return front_name(depth, t, i)

    def meta(self, i, depth) -> str:
        return meta_name(i, depth)

    def save(self, name, *arrays) -> None:
        """Write ``name`` from the driver (its digest kept when ``digest`` is set)."""
        save_arrays((self.blobs, name), *arrays, digests=self.digests if self.digest else None)

    def load(self, name, count) -> list[np.ndarray]:
        return get_arrays(self.blobs, name, count)

    def drop_run(self, i, depth) -> None:
        self._drop(self.run(i, depth))
        self.digests.pop(self.run(i, depth), None)

    def drop_front(self, depth) -> None:
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

    def pin(self, names) -> None:
        """Keep the objects ``names`` (a checkpoint being written names them) when the
        levels drop them, until ``release``; the store is marked as named by a checkpoint
        (``KEPT``), so that ``clean_stale`` leaves it when this run ends or is killed."""
        if not self.pinned and not self.deferred:
            self.blobs.put(KEPT, [b"named by a checkpoint of kmc: kept until a resumed run replaces it\n"])
        self.pinned.update(names)

    def release(self, names) -> None:
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

    def drop_graph(self, depth) -> None:
        self.blobs.delete_prefix(f"graph/{depth:06d}")

    def drop_successors(self, depth) -> None:
        self.blobs.delete_prefix(f"succ/{depth:06d}")

    def disk_bytes(self) -> int:
        """The bytes of the store's objects (one listing)."""
        return sum(self.blobs.sizes().values())

    def free_bytes(self) -> int | None:
        return self.blobs.free_bytes()

    def parent(self, i, depth, fp) -> tuple[int, int]:
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


def _owner_line(pid) -> str:
    """``host pid-namespace pid start-time`` (``checker.base.owner``)."""
    return owner_line(pid)


def _owner_gone(root) -> bool | None:
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
    import socket

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


def _idle(root) -> bool:
    import time

    try:
        newest = max([os.stat(root).st_mtime] + [os.stat(os.path.join(root, n)).st_mtime for n in os.listdir(root)])
    except OSError:
        return False
    return time.time() - newest > IDLE_SECONDS


def clean_stale(parent=None) -> str | None:
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
    removed, freed, unknown = 0, 0, []
    for entry in entries:
        gone = _owner_gone(entry.path)
        if gone:
            size = RowsStore(PosixBlobs(entry.path)).disk_bytes()
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.exists(entry.path):
                removed, freed = removed + 1, freed + size
        elif gone is None and os.path.isdir(os.path.join(entry.path, "seen")) and _idle(entry.path):
            unknown.append(entry.path)
    parts = []
    if removed:
        from ..base.memory import format_size

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
    from ..base.memory import format_size

    return (
        f"removed {removed} Spark store{'s' if removed > 1 else ''} of runs that were killed "
        f"({format_size(freed)} freed in {blobs.root})"
    )


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


def run_name(i, depth) -> str:
    return f"seen/{i:04d}/run-{depth:06d}.npy"


def meta_name(i, depth) -> str:
    return f"seen/{i:04d}/meta-{depth:06d}.bin"


def succ_name(depth, o, i) -> str:
    """The successors for owner ``o`` of rank partition ``i``'s expansion: one object a
    task and owner, a record a slice of the frontier, in slice order."""
    return f"succ/{depth:06d}/o{o:04d}-p{i:04d}.bin"


def succ_order(name) -> int:
    """Where a ``succ_name`` object's successors stand in the order of their keys: its
    rank partition (a partition's ranks all precede the next's; inside the object, the
    slices are in order)."""
    return int(os.path.basename(name)[: -len(".bin")].split("-")[1][1:])


def graph_name(depth, i) -> str:
    """What a rank partition's expansion of a level records for the graph visitor
    (``checker.partitioned.tasks.graph_records``): a record a slice, in slice order."""
    return f"graph/{depth:06d}/p{i:04d}.bin"


def front_name(depth, t, i) -> str:
    return f"front/{depth:06d}/t{t:04d}-p{i:04d}.bin"


# Where arrays are written and read: a file of this machine (its path), or an object of a
# blob store (``(blobs, name)``).
Target = Any


def _target(target) -> tuple[Blobs, str]:
    if isinstance(target, tuple):
        return target
    path = os.fspath(target)
    return PosixBlobs(os.path.dirname(path) or os.curdir), os.path.basename(path)


def encode_arrays(*arrays, pack=False) -> list:
    """The bytes of ``arrays`` as ``save_arrays`` writes them (a ``.npy`` header and the
    data, for each), as parts (the data not copied); with ``pack``, rows that fit four
    bits a column take half their bytes (``_pack``)."""
    parts: list = []

    def add(a) -> None:
        a = np.ascontiguousarray(a)
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(a))
        parts.append(header.getvalue())
        if a.size:
            parts.append(a.reshape(-1).view(np.uint8).data)

    for a in arrays:
        if a.dtype == object:  # rows of Python states: pickled as Spark pickles them
            add(_PICKLED)
            a = np.frombuffer(_PICKLER.dumps(list(a)), dtype=np.uint8)
        elif pack and _nibbles_fit(a):  # rows of small numbers: two columns a byte
            add(_NIBBLES)
            a = _pack(a)
        add(a)
    return parts


def digest_of(parts) -> tuple[int, str]:
    """``(size, SHA-256)`` of the object made of ``parts``."""
    digest, size = hashlib.sha256(), 0
    for part in parts:
        digest.update(part)
        size += len(part)
    return size, digest.hexdigest()


def save_arrays(target, *arrays, pack=False, digests=None) -> int:
    """Write ``arrays`` to ``target`` (a path, or ``(blobs, name)``) whole; with ``pack``,
    rows that fit four bits a column take half their bytes (``_pack``); with ``digests``
    (a dict), the object's size and SHA-256 are put there under its name. Returns the
    bytes written."""
    blobs, name = _target(target)
    parts = encode_arrays(*arrays, pack=pack)
    if digests is not None:
        digests[name] = digest_of(parts)
    return blobs.put(name, parts)


def _reader(source) -> IO[bytes]:
    """``source`` (a path, or ``(blobs, name)``) open for reading: a file of this machine,
    or the object fetched whole (one request)."""
    blobs, name = _target(source)
    local = blobs.local_path(name)
    if local is not None:
        return open(local, "rb")
    return io.BytesIO(blobs.get(name))


def load_arrays(source, count) -> list[np.ndarray]:
    """The first ``count`` arrays of ``source`` (a path, or ``(blobs, name)``)."""
    with _reader(source) as f:
        return [_load_one(f) for _ in range(count)]


def get_arrays(blobs, name, count) -> list[np.ndarray]:
    return load_arrays((blobs, name), count)


def load_records(source, count) -> list[list[np.ndarray]]:
    """Every record (``count`` arrays) of ``source``, in order (``Writer.append``)."""
    with _reader(source) as f:
        size = _size(f)
        records = []
        while f.tell() < size:
            records.append([_load_one(f) for _ in range(count)])
        return records


def load_run(blobs, name) -> np.ndarray:
    """A seen run, mapped from its file: the store's where it is a directory, else this
    machine's copy of it (runs are immutable: fetched once per machine, ``cached``)."""
    return np.load(blobs.cached(name), mmap_mode="r")


def forget_runs(blobs, names) -> None:
    """Drop this machine's copies of seen runs that were merged away (``load_run``)."""
    blobs.forget(names)


def read_ahead(sources) -> None:
    """Ask for ``sources`` (paths, or ``(blobs, name)``) to be read now, all at once
    (``PosixBlobs.read_ahead``): a hint only, that never fails."""
    for source in sources:
        blobs, name = _target(source)
        blobs.read_ahead([name])


class Writer:
    """Objects written on a thread of its own: a task hands it arrays to write and goes
    on computing while they are encoded and written (a write may wait on the disk or the
    network; numpy writes without holding the interpreter). ``save`` writes an object at
    once, with at most ``depth`` of them waiting their turn, so that the arrays held for
    them stay few; ``append`` adds a record to an object written whole at ``close`` (one
    object a task and owner, however many slices the task expands). ``close`` waits for
    every object, raises the first write's error, and returns the bytes of the objects
    saved with ``tally`` and of every appended one (what a task reports as shipped); with
    ``digests`` (a dict), the size and SHA-256 of each object saved with ``digest`` goes
    there. Used as a context manager, it is closed on the way out, without raising again
    when an error is already on its way."""

    def __init__(self, depth: int = 32, digests: dict | None = None) -> None:
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kmc-writer")
        self._pending: Any = deque()
        self._appended: dict[Any, list] = {}
        self._depth = depth
        self.digests = digests
        self.written = 0

    def save(self, target, *arrays, pack=False, tally=True, digest=False) -> None:
        while len(self._pending) >= self._depth:
            self._done()
        digests = self.digests if digest else None
        self._pending.append((self._pool.submit(save_arrays, target, *arrays, pack=pack, digests=digests), tally))

    def append(self, target, *arrays, pack=False) -> None:
        self._appended.setdefault(target, []).append(self._pool.submit(encode_arrays, *arrays, pack=pack))

    def _done(self) -> None:
        future, tally = self._pending.popleft()
        written = future.result()
        if tally:
            self.written += written

    def _put(self, target, parts) -> int:
        blobs, name = _target(target)
        return blobs.put(name, parts)

    def close(self) -> int:
        try:
            for target, futures in self._appended.items():
                parts = [part for future in futures for part in future.result()]
                self._pending.append((self._pool.submit(self._put, target, parts), True))
            self._appended = {}
            while self._pending:
                self._done()
        finally:
            for future, _tally in self._pending:
                future.cancel()
            for futures in self._appended.values():
                for future in futures:
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


def load_joined(sources: Sequence, count) -> list[np.ndarray]:
    """The ``count`` arrays of every record of each of ``sources`` (paths, or ``(blobs,
    name)``), joined record after record: what ``np.concatenate`` makes of their
    ``load_records``, but the bytes read straight into their place in the joined arrays
    (or unpacked there), never copied from one array into another. An empty ``sources``
    gives ``[]``."""
    if not sources:
        return []
    read_ahead(sources)
    readers = [_reader(source) for source in sources]
    try:
        found = [_places(f, count) for f in readers]  # per source, per record, per array: its place
        if any(w is None for w in found):  # rows of Python states: unpickled, then joined
            pickled = [r for source in sources for r in load_records(source, count)]
            return [np.concatenate(a) for a in zip(*pickled)]
        records = [(f, record) for f, where in zip(readers, found) for record in where or ()]
        if not records:
            return load_arrays(sources[0], count)
        out = []
        for k in range(count):
            parts = [record[k] for _f, record in records]
            dtype, tail = parts[0][1], parts[0][2][1:]
            if any(d != dtype or shape[1:] != tail for _offset, d, shape, _packed in parts):
                raise ValueError("spark store: objects of one level hold arrays of other shapes")
            out.append(np.empty((sum(shape[0] for _o, _d, shape, _p in parts), *tail), dtype=dtype))
        starts = [0] * count
        for f, record in records:
            for k, (offset, _dtype, shape, packed) in enumerate(record):
                target = out[k][starts[k] : starts[k] + shape[0]]
                starts[k] += shape[0]
                f.seek(offset)
                if packed:
                    packed_rows = _read_array(f, np.dtype(np.uint8), shape[0] * shape[1] // 2)
                    _unpack(packed_rows.reshape(shape[0], -1), target)
                elif target.nbytes and _readinto(f, target.reshape(-1).view(np.uint8).data) != target.nbytes:
                    raise EOFError("spark store: an object is shorter than its arrays")
        return out
    finally:
        for reader in readers:
            reader.close()


def _size(f) -> int:
    at = f.tell()
    size = f.seek(0, 2)
    f.seek(at)
    return size


def _places(f, count) -> list[list[tuple]] | None:
    """Per record of the open object ``f``, per array: ``(offset of its data, dtype,
    shape, packed)``, with a packed array's dtype and shape those of its rows unpacked;
    ``None`` for an object of pickled rows."""
    records = []
    size = _size(f)
    while f.tell() < size:
        places = []
        for _ in range(count):
            form, offset, dtype, shape = _marked(f)
            if form == "pickled":
                return None
            f.seek(offset + int(np.prod(shape)) * dtype.itemsize)
            if form == "packed":
                dtype, shape = np.dtype(np.int8), (shape[0], 2 * shape[1])
            places.append((offset, dtype, shape, form == "packed"))
        records.append(places)
    return records


def _read_array(f, dtype, count) -> np.ndarray:
    out = np.empty(count, dtype=dtype)
    if out.nbytes and _readinto(f, out.view(np.uint8).data) != out.nbytes:
        raise EOFError("spark store: an object is shorter than its arrays")
    return out


def _readinto(f, buffer) -> int:
    """``f.readinto(buffer)`` until ``buffer`` is full or the object ends; the bytes read."""
    view, done = memoryview(buffer), 0
    while done < len(view):
        n = f.readinto(view[done:])
        if not n:
            break
        done += n
    return done


def _marked(f) -> tuple[str, int, np.dtype, tuple]:
    """The next array of an object ``save_arrays`` wrote, from ``f``'s position:
    ``(form, offset of its data, dtype, shape)``, ``form`` being ``"plain"``, or
    ``"packed"`` or ``"pickled"`` after its marker (then the header is the data's
    that follows the marker)."""
    offset, dtype, shape = _header(f)
    if dtype.kind == "S" and shape == (1,):
        marker = _read_array(f, dtype, 1)[0]
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
        raise ValueError("spark store: an object holds an array in Fortran order")
    return f.tell(), dtype, tuple(shape)


# Rows of Python states (``checker.core.states_kernel``) are object arrays: saved as this marker
# and the bytes of the list of states, pickled (``use_pickler``).
_PICKLED = np.array([b"kmc-pickled-objects"])


# Rows whose columns all hold -1 to 14 (the Kafka model's, in the configurations that
# need the Spark engine) can be saved as this marker and half as many bytes: a byte holds
# two columns, each plus one in four bits. The store's largest files are rows; packing
# costs CPU (about 5% of a run's), so the engine packs only a level whose files would
# take a large share of the disk's free space (``checker.partitioned.levels``).
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
    a = _read_array(f, dtype, int(np.prod(shape))).reshape(shape)
    if form == "packed":
        return _unpack(a)
    if form == "plain":
        return a
    values = pickle.loads(a.tobytes())
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


# How rows of Python states are pickled: the standard library's pickle, unless the back end
# that runs the tasks sets another (``use_pickler``: the Spark adapter sets Spark's
# cloudpickle, so that a model defined in a script travels by value, as in Spark's own
# tasks). Either's bytes load with ``pickle.loads``.
_PICKLER: Any = pickle


def use_pickler(module: Any) -> None:
    """Pickle rows of Python states with ``module`` (its ``dumps``) in this process."""
    global _PICKLER
    _PICKLER = module


def owners(fps, n) -> np.ndarray:
    """The fingerprint partition of each fingerprint: ``floor(fp * n / 2**64)`` (to 32
    bits), which grows with ``fp``, so that a sorted array of fingerprints splits into
    its owners' shares by position."""
    return ((fps >> np.uint64(32)) * np.uint64(n) >> np.uint64(32)).astype(np.int64)


def owner_of(fp, n) -> int:
    return ((int(fp) >> 32) * n) >> 32
