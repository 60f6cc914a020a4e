"""The files of a part of a search kept on disk (the disk store, its frontier queue):
written through one function, ``write_bytes`` (the one seam where the tests make the disk
full), counted, sealed with their SHA-256 when a checkpoint links them, and checked
against those digests before a resume links them back."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import EngineError
from ..base.units import format_size
from ..checkpoints.file import CheckpointError, read_manifest
from ..core.parts import ResourceStop

_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def write_bytes(path: str, data: np.ndarray, append: bool = False) -> None:
    """Write ``data``'s bytes into a new file (or at the end of one): every write of the
    store goes through here (tests replace it to make the disk full)."""
    with open(path, "ab" if append else "xb") as f:
        f.write(np.ascontiguousarray(data).data)


class DiskFiles:
    """The files of a part on disk, in the directory ``root``: each written through
    ``write_bytes`` (a full disk stops the run with ``ResourceStop("disk-full")``), and
    counted: the bytes on disk now, at their peak, and written in all."""

    what = "disk store"  # (a failed write's line names the part)
    root: str
    _written = _disk = _peak = 0
    _sealed: dict[str, tuple[int, int, int, str]] | None = (
        None  # file name -> (size, inode, mtime, sha256), see ``seal``
    )

    def disk_bytes(self) -> int:
        return self._disk

    def peak_disk_bytes(self) -> int:
        return self._peak

    def written_bytes(self) -> int:
        return self._written

    def _write(self, name: str, data: np.ndarray, append: bool = False) -> None:
        path = os.path.join(self.root, name)
        try:
            write_bytes(path, data, append)
        except OSError as e:
            if not append:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            if e.errno in _FULL:
                raise ResourceStop("disk-full", full_line(self.root, e)) from None
            raise EngineError(f"{self.what}: cannot write {path} ({e.strerror or e})") from None
        self._written += data.nbytes
        self._disk += data.nbytes
        self._peak = max(self._peak, self._disk)

    def seal(self, target: Path, names: list[str]) -> dict[str, tuple[int, str]]:
        """``{name: (size, sha256)}`` of the files ``names`` linked into ``target``. A file
        is never changed once a level is closed (a run is written whole, a level's parents
        and rows are appended only while the level is found), so each is read and hashed
        once: a later checkpoint takes the digest it already has while the file is the same
        (its size, inode and modification time)."""
        if self._sealed is None:
            self._sealed = {}
        sealed, files = self._sealed, {}
        for name in names:
            st = os.stat(target / name)
            known = sealed.get(name)
            if known is None or known[:3] != (st.st_size, st.st_ino, st.st_mtime_ns):
                known = (st.st_size, st.st_ino, st.st_mtime_ns, file_sha256(target / name))
                sealed[name] = known
            files[name] = (known[0], known[3])
        return files

    def _remove(self, name: str) -> None:
        path = os.path.join(self.root, name)
        if self._sealed is not None:
            self._sealed.pop(name, None)
        with contextlib.suppress(OSError):
            self._disk = max(0, self._disk - os.path.getsize(path))
            os.unlink(path)


def full_line(root: str, e: OSError) -> str:
    """The one line of a disk store (or its queue) that found its disk full."""
    try:
        free = f" ({format_size(shutil.disk_usage(root).free)} free)"
    except OSError:
        free = ""
    return f"the disk store {root} is full{free}: {e.strerror or e}"


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read a megabyte at a time (its pages handed back to
    the page cache, as the store's reads are)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
        if hasattr(os, "posix_fadvise"):
            with contextlib.suppress(OSError):
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return digest.hexdigest()


def level_source(directory: Any, data: str | None, path: str) -> Path:
    """The level directory a saved part's files are in: ``data`` under the checkpoint
    ``directory``, else ``path`` (where they were saved, in a run without a checkpoint).

    Raises:
        CheckpointError: it is missing, a symbolic link, or not a directory this
            checkpoint's runs created (the checkpoint's manifest does not list it).
    """
    where = directory if directory is not None else Path(path).parent
    source = Path(directory) / data if directory is not None and data else Path(path)
    cannot = "the checkpoint cannot be resumed, start a new run"
    if source.is_symlink():
        raise CheckpointError(
            f"{where}: {source.name} is a symbolic link, not the level directory this checkpoint wrote; {cannot}"
        )
    if not source.is_dir():
        raise CheckpointError(f"{where}: {source.name} is missing (the checkpoint keeps its states there); {cannot}")
    if directory is not None and data:
        manifest = read_manifest(directory)
        if manifest is not None and data not in manifest["owned"]:
            raise CheckpointError(f"{where}: {data} was not created by this checkpoint's runs; {cannot}")
    return source


def verify_level(directory: Any, source: Path, names: list[str], files: dict[str, tuple[int, str]] | None) -> None:
    """Refuse the level directory ``source`` unless each of ``names`` is a file (not a
    link) of the size and SHA-256 ``files`` records: the sizes first, then the digests.

    Raises:
        CheckpointError: one line naming the checkpoint and the file at fault.
    """
    where = directory if directory is not None else source.parent
    cannot = "the checkpoint cannot be resumed, start a new run"
    if files is None:
        raise CheckpointError(
            f"{where}: written by a kmc that did not record the size and SHA-256 of its store's files, "
            f"which therefore cannot be checked; {cannot}"
        )
    for name in names:
        path = source / name
        if name not in files:
            raise CheckpointError(f"{where}: damaged ({source.name}/{name} has no recorded checksum); {cannot}")
        try:
            st = os.lstat(path)
        except OSError:
            raise CheckpointError(f"{where}: damaged ({source.name}/{name} is missing); {cannot}") from None
        if not stat.S_ISREG(st.st_mode):
            raise CheckpointError(f"{where}: damaged ({source.name}/{name} is not a plain file); {cannot}")
        if st.st_size != files[name][0]:
            raise CheckpointError(
                f"{where}: damaged ({source.name}/{name} has {st.st_size} bytes, not {files[name][0]}); {cannot}"
            )
    for name in names:
        try:
            digest = file_sha256(source / name)
        except OSError as e:
            raise CheckpointError(f"{where}: cannot read {source.name}/{name} ({e.strerror or e}); {cannot}") from None
        if digest != files[name][1]:
            raise CheckpointError(f"{where}: damaged ({source.name}/{name}: checksum mismatch); {cannot}")


def link(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source`` (a copy across file systems)."""
    try:
        os.link(source, target)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copyfile(source, target)
