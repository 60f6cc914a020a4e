"""The blob store in a directory (``checker.blobs``): one file an object, written under a
name of its writer and renamed (a reader sees it whole or not at all), read with
read-ahead (``posix_fadvise``) and ``mmap``, hard-linked into a checkpoint. Every
executor and the driver must see the directory at the same path."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterable, Sequence
from typing import IO

from . import FileStream


class PosixBlobs:
    """Objects as files under the directory ``root`` (an object's name is its relative path)."""

    def __init__(self, root: str) -> None:
        self.root = str(root)

    def __repr__(self) -> str:
        return f"PosixBlobs({self.root!r})"

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def put(self, name: str, parts: Sequence[bytes | memoryview]) -> int:
        stream = self.stream(name)
        try:
            for part in parts:
                stream.write(part)
        except BaseException:
            stream.abort()  # (a write that failed leaves no file under the writer's name)
            raise
        return stream.commit()

    def stream(self, name: str) -> FileStream:
        """The object's file written under a name of its writer, renamed at the commit."""
        path = self.path(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return FileStream(f"{path}.{os.getpid()}-{threading.get_ident()}.tmp", lambda tmp: os.replace(tmp, path))

    def open(self, name: str) -> IO[bytes]:
        return open(self.path(name), "rb")

    def get(self, name: str) -> bytes:
        with self.open(name) as f:
            return f.read()

    def local_path(self, name: str) -> str | None:
        return self.path(name)

    def cached(self, name: str) -> str:
        return self.path(name)  # the file itself: no copy to make

    def forget(self, names: Iterable[str]) -> None:
        """No copies to drop: the objects are this machine's files."""

    def forget_all(self) -> None:
        """No copies to drop: the objects are this machine's files."""

    def read_ahead(self, names: Iterable[str]) -> None:
        """Ask the kernel to start reading the files now, all at once
        (``POSIX_FADV_WILLNEED``): a task about to read them one after another, or to
        search them, finds them in memory instead of waiting on the disk for each in turn.
        Where the system has no such call, or a file is gone, nothing happens."""
        advise = getattr(os, "posix_fadvise", None)
        if advise is None:
            return
        for name in names:
            try:
                fd = os.open(self.path(name), os.O_RDONLY)
            except OSError:
                continue
            try:
                advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            except OSError:
                pass
            finally:
                os.close(fd)

    def delete(self, names: Iterable[str]) -> None:
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path(name))

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self.path(prefix), ignore_errors=True)

    def sizes(self, prefix: str = "") -> dict[str, int]:
        found: dict[str, int] = {}
        stack = [self.path(prefix) if prefix else self.root]
        while stack:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        with contextlib.suppress(FileNotFoundError):
                            found[os.path.relpath(entry.path, self.root)] = entry.stat(follow_symlinks=False).st_size
        return found

    def free_bytes(self) -> int | None:
        try:
            return shutil.disk_usage(self.root).free
        except OSError:
            return None

    def copy_out(self, name: str, target: str) -> None:
        """Hard-link the object's file as ``target`` (an object is never rewritten), or
        copy it when they are on different file systems."""
        try:
            os.link(self.path(name), target)
        except OSError:
            shutil.copyfile(self.path(name), target)

    def child(self, prefix: str) -> PosixBlobs:
        return PosixBlobs(self.path(prefix))
