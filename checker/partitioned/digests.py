"""A saved level of the Spark engine on disk: the size and SHA-256 of its files, written
into the checkpoint, and their verification before a resume (a damaged file is one line,
not a stack trace)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..checkpoints.file import CheckpointError


def digests(paths: Iterable[Path]) -> dict[str, Any]:
    """``{file name: (size, sha256)}`` of ``paths``."""
    files = {}
    for path in paths:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        files[path.name] = (path.stat().st_size, digest.hexdigest())
    return files


def verify_files(
    directory: Path, files: dict[str, Any], pattern: str = "*", listing: Callable[[Path], dict[str, Any]] | None = None
) -> None:
    """Refuse a saved level whose files (those matching ``pattern``) are not exactly
    ``files``, the sizes and SHA-256 its checkpoint lists; ``listing(directory)`` gives
    the actual ones (default: ``digests`` of the files)."""
    damaged = f"{directory}: damaged ({{}}); the checkpoint cannot be resumed, start a new run"
    if not directory.is_dir():
        raise CheckpointError(
            f"{directory}: missing (the checkpoint keeps the last level's states there); "
            "the checkpoint cannot be resumed, start a new run"
        )
    present = {path.name for path in directory.glob(pattern)}
    if present != set(files):
        what = sorted(set(files) - present) or sorted(present - set(files))
        verb = "missing" if set(files) - present else "unexpected"
        raise CheckpointError(damaged.format(f"{verb} {what[0]}"))
    try:
        actual = (listing or (lambda d: digests(sorted(d.glob(pattern)))))(directory)
    except OSError as e:
        raise CheckpointError(damaged.format(e.strerror or str(e))) from None
    for name, (size, digest) in sorted(files.items()):
        if actual[name][0] != size:
            raise CheckpointError(damaged.format(f"{name} has {actual[name][0]} bytes, not {size}"))
        if actual[name][1] != digest:
            raise CheckpointError(damaged.format(f"{name}: checksum mismatch"))
