"""Blob stores: immutable, whole objects under a store root, the only way the Spark
engine's tasks, store, checkpoints and search read and write what outlives a level.

An object is written once, whole (``put``, or part by part through a ``stream`` that is
committed: it appears complete or not at all, under its name), read back whole or in part
(``open``), and deleted; nothing is ever rewritten in
place, and an object is found by its name, never by listing (``sizes`` lists, for
measures and clean-up only). Two implementations:

- ``checker.blobs.posix.PosixBlobs``: a directory (every executor and the driver must see
  it at the same path); files written under a temporary name and renamed, read with
  ``mmap`` and read-ahead, hard-linked into a checkpoint.
- ``checker.blobs.arrow.ArrowBlobs``: any file system ``pyarrow.fs.FileSystem.from_uri``
  opens: ``s3://bucket/prefix`` (``?endpoint_override=host:port&scheme=http`` for another
  S3 server), ``gs://``, ``hdfs://``, ``abfs://``, ``file://``; no shared mount needed.
  Credentials come from the environment or the machine's role, as pyarrow finds them.

``store_location`` checks a store's text before anything starts.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Protocol, runtime_checkable

from ..base.errors import EngineError

# The URL schemes of the object stores (pyarrow.fs); anything else with "://" is refused.
URL_SCHEMES = ("s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss", "file")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@runtime_checkable
class Blobs(Protocol):
    """Immutable whole objects under ``root`` (see the module)."""

    root: str  # the store's location, as a user names it (a directory, or a URL)

    def put(self, name: str, parts: Sequence[bytes | memoryview]) -> int:
        """Write the object ``name`` whole from ``parts`` (joined); returns its bytes."""
        ...

    def stream(self, name: str) -> FileStream:
        """The object ``name`` written part by part, never held whole in memory: it appears
        when the stream is committed, and not at all when it is aborted (``FileStream``)."""
        ...

    def open(self, name: str) -> IO[bytes]:
        """The object ``name`` for reading (seekable, ``readinto``).

        Raises:
            FileNotFoundError: no such object.
        """
        ...

    def get(self, name: str) -> bytes:
        """The whole object ``name``."""
        ...

    def local_path(self, name: str) -> str | None:
        """A path of this machine's file system holding the object (for ``mmap``,
        read-ahead), or None: the object is read through ``open``."""
        ...

    def read_ahead(self, names: Iterable[str]) -> None:
        """A hint: the objects ``names`` will be read soon."""
        ...

    def delete(self, names: Iterable[str]) -> None:
        """Delete the objects ``names`` (one that is gone already is no error)."""
        ...

    def delete_prefix(self, prefix: str) -> None:
        """Delete every object whose name starts with ``prefix/``."""
        ...

    def sizes(self, prefix: str = "") -> dict[str, int]:
        """``{name: bytes}`` of the objects under ``prefix/`` (a listing: for measures
        and clean-up, never to find a level's objects)."""
        ...

    def free_bytes(self) -> int | None:
        """The room left for objects, or None when the store cannot tell (an object store)."""
        ...

    def copy_out(self, name: str, target: str) -> None:
        """Copy the object ``name`` to the local file ``target`` (a checkpoint's)."""
        ...

    def child(self, prefix: str) -> Blobs:
        """The store of the objects under ``prefix/``."""
        ...

    def cached(self, name: str) -> str:
        """A path of this machine's file system holding the immutable object ``name``: the
        object's own file in a directory, else a copy fetched at the first call."""
        ...

    def forget(self, names: Iterable[str]) -> None:
        """Drop this machine's copies of ``names`` (``cached``; nothing in a directory)."""
        ...

    def forget_all(self) -> None:
        """Drop this machine's copies of every object of the store (nothing in a directory)."""
        ...


class FileStream:
    """An object written part by part into the local file ``tmp``: ``commit`` hands the
    file to ``finish`` (a directory's store renames it to the object's path; an object
    store uploads it), ``abort`` removes it. Either is the stream's end; an abort after a
    commit does nothing."""

    def __init__(self, tmp: str, finish: Callable[[str], None]) -> None:
        self.tmp, self._finish = tmp, finish
        self._file: IO[bytes] | None = open(tmp, "wb")  # (closed by commit or abort)
        self.written = 0

    def write(self, part: bytes | memoryview) -> int:
        """Add ``part`` to the object; returns its bytes."""
        assert self._file is not None, "the stream has ended"
        self._file.write(part)
        self.written += len(part)
        return len(part)

    def commit(self) -> int:
        """The object, whole, under its name; returns its bytes."""
        assert self._file is not None, "the stream has ended"
        self._file.close()
        self._file = None
        try:
            self._finish(self.tmp)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.tmp)  # (an object store's upload; a renamed file is gone already)
        return self.written

    def abort(self) -> None:
        """No object: the parts written are dropped."""
        if self._file is None:
            return
        self._file.close()
        self._file = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


def is_url(location: str | os.PathLike[str]) -> bool:
    return _SCHEME.match(os.fspath(location)) is not None


def store_location(location: str, master: str | None) -> str:
    """``location`` if kmc can keep a Spark store there with the master ``master``
    (None: the local default), else one line.

    Raises:
        EngineError: an empty location, an unknown URL scheme, or a relative directory
            with a master that is not local (each executor would resolve it in its own
            working directory).
    """
    where = f"--spark-store {location}"
    if not location.strip():
        raise EngineError("--spark-store: the location is empty; name a directory or an object store URL")
    m = _SCHEME.match(location)
    if m:
        scheme = m.group(1).lower()
        if scheme not in URL_SCHEMES:
            raise EngineError(
                f"{where}: unknown scheme {scheme}:// (use a directory every executor sees, or "
                f"{', '.join(s + '://' for s in URL_SCHEMES)})"
            )
        return location
    local = master is None or master.startswith("local")
    if not os.path.isabs(location) and not local:
        raise EngineError(
            f"{where}: a relative directory with the master {master} would be resolved in each "
            "executor's own working directory; give an absolute path every executor sees, or an "
            "object store URL (s3://, gs://, hdfs://, abfs://)"
        )
    return location


def open_blobs(location: str | os.PathLike[str]) -> Blobs:
    """The blob store at ``location``: a URL's (``checker.blobs.arrow``), else a directory's."""
    location = os.fspath(location)
    if is_url(location):
        from .arrow import ArrowBlobs

        return ArrowBlobs(location)
    from .posix import PosixBlobs

    return PosixBlobs(os.path.abspath(location))
