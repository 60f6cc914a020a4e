"""Reading the rows store's objects (``checker.partitioned.rows``), as
``checker.partitioned.rows_write`` wrote them: an object's arrays, its records, the records
of many objects joined straight into one array each, and the seen runs mapped from this
machine's copy."""

from __future__ import annotations

import io
import pickle
from collections.abc import Sequence

import numpy as np

from ..blobs import Blobs
from .rows_write import NIBBLES, PICKLED, Target, target_of

# Where an array of an object is (``_places``): the offset of its data, its dtype and
# shape (those of its rows unpacked, when packed) and whether it is packed.
Place = tuple[int, np.dtype, tuple[int, ...], bool]


def _reader(source: Target) -> io.BufferedIOBase:
    """``source`` (a path, or ``(blobs, name)``) open for reading: a file of this machine,
    or the object fetched whole (one request)."""
    blobs, name = target_of(source)
    local = blobs.local_path(name)
    if local is not None:
        return open(local, "rb")
    return io.BytesIO(blobs.get(name))


def load_arrays(source: Target, count: int) -> list[np.ndarray]:
    """The first ``count`` arrays of ``source`` (a path, or ``(blobs, name)``)."""
    with _reader(source) as f:
        return [_load_one(f) for _ in range(count)]


def load_records(source: Target, count: int) -> list[list[np.ndarray]]:
    """Every record (``count`` arrays) of ``source``, in order (``Writer.append``)."""
    with _reader(source) as f:
        size = _size(f)
        records = []
        while f.tell() < size:
            records.append([_load_one(f) for _ in range(count)])
        return records


def load_run(blobs: Blobs, name: str) -> np.ndarray:
    """A seen run, mapped from its file: the store's where it is a directory, else this
    machine's copy of it (runs are immutable: fetched once per machine, ``cached``)."""
    run: np.ndarray = np.load(blobs.cached(name), mmap_mode="r")
    return run


def read_ahead(sources: Sequence[Target]) -> None:
    """Ask for ``sources`` (paths, or ``(blobs, name)``) to be read now, all at once
    (``PosixBlobs.read_ahead``): a hint only, that never fails."""
    for source in sources:
        blobs, name = target_of(source)
        blobs.read_ahead([name])


def load_joined(sources: Sequence[Target], count: int) -> list[np.ndarray]:
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


def _size(f: io.BufferedIOBase) -> int:
    at = f.tell()
    size = f.seek(0, 2)
    f.seek(at)
    return size


def _places(f: io.BufferedIOBase, count: int) -> list[list[Place]] | None:
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


def _read_array(f: io.BufferedIOBase, dtype: np.dtype, count: int) -> np.ndarray:
    out = np.empty(count, dtype=dtype)
    if out.nbytes and _readinto(f, out.view(np.uint8).data) != out.nbytes:
        raise EOFError("spark store: an object is shorter than its arrays")
    return out


def _readinto(f: io.BufferedIOBase, buffer: memoryview) -> int:
    """``f.readinto(buffer)`` until ``buffer`` is full or the object ends; the bytes read."""
    view, done = memoryview(buffer), 0
    while done < len(view):
        n = f.readinto(view[done:])
        if not n:
            break
        done += n
    return done


def _marked(f: io.BufferedIOBase) -> tuple[str, int, np.dtype, tuple[int, ...]]:
    """The next array of an object ``save_arrays`` wrote, from ``f``'s position:
    ``(form, offset of its data, dtype, shape)``, ``form`` being ``"plain"``, or
    ``"packed"`` or ``"pickled"`` after its marker (then the header is the data's
    that follows the marker)."""
    offset, dtype, shape = _header(f)
    if dtype.kind == "S" and shape == (1,):
        marker = _read_array(f, dtype, 1)[0]
        for form, mark in (("packed", NIBBLES), ("pickled", PICKLED)):
            if marker == mark[0]:
                return (form, *_header(f))
        f.seek(offset)
    return "plain", offset, dtype, shape


def _header(f: io.BufferedIOBase) -> tuple[int, np.dtype, tuple[int, ...]]:
    """The ``.npy`` header at ``f``'s position: ``(offset of the data, dtype, shape)``."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    if fortran and len(shape) > 1:
        raise ValueError("spark store: an object holds an array in Fortran order")
    return f.tell(), dtype, tuple(shape)


def _unpack(packed: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The rows ``_pack`` packed, in a new array or written into ``out`` (int8)."""
    rows = np.empty((len(packed), 2 * packed.shape[1]), dtype=np.int8) if out is None else out
    u = rows.view(np.uint8)
    np.right_shift(packed, np.uint8(4), out=u[:, 0::2])
    np.bitwise_and(packed, np.uint8(15), out=u[:, 1::2])
    u -= np.uint8(1)
    return rows


def _load_one(f: io.BufferedIOBase) -> np.ndarray:
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
