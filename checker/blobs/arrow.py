"""The blob store on any file system ``pyarrow.fs`` opens from a URL (``checker.blobs``):
``s3://bucket/prefix`` (another S3 server: ``?endpoint_override=host:port&scheme=http``),
``gs://``, ``hdfs://``, ``abfs://``, ``file://``. An object is written through one output
stream (S3: one upload, visible whole once closed), read through a random-access file.
Credentials come from the environment or the machine's role, as pyarrow finds them.

The store pickles as its URL: a Spark task opens the file system again, once a process."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Sequence
from typing import IO, Any, cast

from . import FileStream

_OPENED: dict[str, tuple[Any, str]] = {}  # URL -> (file system, its base path), once a process
_LOCK = threading.Lock()


def _open(url: str) -> tuple[Any, str]:
    with _LOCK:
        if url not in _OPENED:
            from pyarrow import fs

            filesystem, base = fs.FileSystem.from_uri(url)
            _OPENED[url] = (filesystem, base.rstrip("/"))
        return _OPENED[url]


class ArrowBlobs:
    """Objects under the URL ``url`` (``prefix``: a folder below it), through pyarrow.fs."""

    def __init__(self, url: str, prefix: str = "") -> None:
        self.url, self.prefix = url, prefix.strip("/")
        base, _, query = url.partition("?")
        base = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", r"\1", base)  # never a key in a message
        self.root = base.rstrip("/") + (f"/{self.prefix}" if self.prefix else "")
        self.query = query

    def __repr__(self) -> str:
        return f"ArrowBlobs({self.root!r})"

    def __reduce__(self) -> tuple[type[ArrowBlobs], tuple[str, str]]:
        return (ArrowBlobs, (self.url, self.prefix))

    @property
    def fs(self) -> Any:
        return _open(self.url)[0]

    def path(self, name: str = "") -> str:
        base = _open(self.url)[1]
        return "/".join(p for p in (base, self.prefix, name.strip("/")) if p)

    def put(self, name: str, parts: Sequence[bytes | memoryview]) -> int:
        written = 0
        with self.fs.open_output_stream(self.path(name)) as out:
            for part in parts:
                out.write(part)
                written += len(part)
        return written

    def stream(self, name: str) -> FileStream:
        """The object's parts kept in a file of this machine's scratch directory
        (``use_scratch``) and uploaded at the commit: an object is uploaded only once it is
        whole, and a task that fails before the commit leaves none."""
        spool = os.path.join(_cache_root(), "spool")
        os.makedirs(spool, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=spool, suffix=".part")
        os.close(fd)
        return FileStream(tmp, lambda path: self._upload(name, path))

    def _upload(self, name: str, path: str) -> None:
        with open(path, "rb") as f, self.fs.open_output_stream(self.path(name)) as out:
            while chunk := f.read(1 << 22):
                out.write(chunk)

    def open(self, name: str) -> IO[bytes]:
        try:
            return cast(IO[bytes], self.fs.open_input_file(self.path(name)))
        except OSError as e:
            if _missing(e):
                raise FileNotFoundError(f"{self.root}/{name}: no such object") from None
            raise

    def get(self, name: str) -> bytes:
        with self.open(name) as f:
            return f.read()

    def local_path(self, name: str) -> str | None:
        return None

    def cached(self, name: str) -> str:
        """A copy of the immutable object ``name`` on this machine's disk, fetched at the
        first call (under the scratch directory the back end named, ``use_scratch``: a
        Spark task's is its executor's own): an owner's seen runs are read at every level."""
        path = os.path.join(_cache_root(), hashlib.sha256(self.root.encode()).hexdigest()[:16], name)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
            self.copy_out(name, tmp)
            os.replace(tmp, path)
        return path

    def forget(self, names: Iterable[str]) -> None:
        """Drop this machine's copies of ``names`` (``cached``)."""
        base = os.path.join(_cache_root(), hashlib.sha256(self.root.encode()).hexdigest()[:16])
        for name in names:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(base, name))

    def forget_all(self) -> None:
        """Drop this machine's copies of every object of the store."""
        root = _cache_root()
        shutil.rmtree(os.path.join(root, hashlib.sha256(self.root.encode()).hexdigest()[:16]), True)
        for folder in (os.path.join(root, "spool"), root):  # when no other stream or store's copies are there
            with contextlib.suppress(OSError):
                os.rmdir(folder)

    def read_ahead(self, names: Iterable[str]) -> None:
        pass

    def delete(self, names: Iterable[str]) -> None:
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                try:
                    self.fs.delete_file(self.path(name))
                except OSError as e:
                    if not _missing(e):
                        raise

    def delete_prefix(self, prefix: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            try:
                self.fs.delete_dir(self.path(prefix))
            except OSError as e:
                if not _missing(e):
                    raise

    def sizes(self, prefix: str = "") -> dict[str, int]:
        from pyarrow import fs

        where = self.path(prefix)
        try:
            infos = self.fs.get_file_info(fs.FileSelector(where, recursive=True, allow_not_found=True))
        except OSError:
            return {}
        top = self.path()
        return {info.path[len(top) + 1 :]: info.size or 0 for info in infos if info.type == fs.FileType.File}

    def free_bytes(self) -> int | None:
        return None

    def copy_out(self, name: str, target: str) -> None:
        with self.open(name) as f, open(target, "wb") as out:
            while chunk := f.read(1 << 22):
                out.write(chunk)

    def child(self, prefix: str) -> ArrowBlobs:
        return ArrowBlobs(self.url, "/".join(p for p in (self.prefix, prefix.strip("/")) if p))


# The scratch directory of this machine where ``cached`` keeps its copies, as the back end
# running the tasks names it (``use_scratch``: the Spark adapter names a Spark task's, which
# Spark removes with its executor); None: a folder of the temporary directory.
_SCRATCH: str | None = None


def use_scratch(directory: str | None) -> None:
    """Keep this process's copies of objects (``ArrowBlobs.cached``) under ``directory``."""
    global _SCRATCH
    _SCRATCH = directory


def _cache_root() -> str:
    """Where ``ArrowBlobs.cached`` keeps its copies: the scratch directory ``use_scratch``
    named, else a folder of the temporary directory for this process."""
    if _SCRATCH is not None:
        return os.path.join(_SCRATCH, "kmc-cache")
    return os.path.join(tempfile.gettempdir(), f"kmc-cache-{os.getpid()}")


def _missing(e: OSError) -> bool:
    text = str(e)
    return (
        isinstance(e, FileNotFoundError)
        or "NoSuchKey" in text
        or "not found" in text.lower()
        or "Path does not exist" in text
    )
