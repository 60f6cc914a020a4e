"""Resuming and writing checkpoints during a run: is a checkpoint of the same run
(``ensure_compatible``), and the writer an engine's ``on_level`` hook calls
(``Checkpointer``). The file format is ``checker.checkpoints.file``'s."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

from ..base.units import format_size
from ..core.parts import ResourceStop

if TYPE_CHECKING:
    from ..core.driver import Engine
from .file import (
    LOCK_NAME,
    TMP_PREFIX,
    TMP_SUFFIX,
    CheckpointError,
    is_kmc_directory,
    prune_data,
    read_manifest,
    write,
    write_manifest,
)

_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))

# -- resuming: is this the same run? --------------------------------------------------------

_SAME = (
    ("engine", "the {} engine"),
    ("kmc_version", "kmc {}"),
    ("spec_sha256", "spec sha256 {:.12}"),
    ("model_ref", "model {}"),
    ("model_params", "params {}"),
    ("model_sha256", "model sha256 {:.12}"),
    ("properties", "invariants {}"),
    ("options", "options {}"),
)


def ensure_compatible(directory: str | Path, header: dict[str, Any], want: dict[str, Any]) -> None:
    """Refuse to resume a checkpoint that was written for another run.

    Args:
        directory: the checkpoint directory (named in the message).
        header: the checkpoint's header.
        want: the values this run has, under the header's keys: ``engine``,
            ``kmc_version``, ``spec_sha256`` (a spec's) or ``model_ref``, ``model_params``
            and ``model_sha256`` (a model's, ``--model``), ``properties``, ``options``;
            keys left out are not compared.

    Raises:
        CheckpointError: with a one-line message naming the first difference.
    """
    if ("model_ref" in header) != ("model_ref" in want):
        what = f"the model {header['model_ref']}" if "model_ref" in header else f"the spec {header.get('spec_path')}"
        raise CheckpointError(
            f"{directory}: cannot resume, it is a checkpoint of {what}, and this run checks "
            f"{'a spec' if 'model_ref' not in want else 'a model (--model)'}; resume it with kmc check --resume "
            f"{directory} alone, or start a new run"
        )
    for key, show in _SAME:
        if key not in want:
            continue
        have, need = header.get(key), want[key]
        if isinstance(need, tuple):
            need = list(need)
        if have == need:
            continue
        what = {
            "engine": "engine differs",
            "kmc_version": "kmc version differs",
            "spec_sha256": "spec differs",
            "properties": "invariants differ",
            "options": "options differ",
            "model_ref": "model differs (model_ref)",
            "model_params": "model's parameters differ (model_params)",
            "model_sha256": "model's source differs (model_sha256)",
        }[key]
        hint = {
            "engine": "resume it with the engine that wrote it",
            "kmc_version": "finish it with that version, or start a new run",
            "spec_sha256": f"resume it with the spec it was written for ({header.get('spec_path')}), "
            "or start a new run",
            "properties": "resume it with the same --invariant choices, or start a new run",
            "options": "resume it with the same options, or start a new run",
            "model_ref": "resume it with the model it was written for, or start a new run",
            "model_params": "resume it with the same --param values (or none: they are taken over), or start a new run",
            "model_sha256": f"resume it with the source it was written for ({header.get('model_ref')}), "
            "or start a new run",
        }[key]
        raise CheckpointError(
            f"{directory}: cannot resume, the {what}: the checkpoint has "
            f"{_show(show, have)}, this run has {_show(show, need)}; {hint}"
        )


def _show(fmt: str, value: Any) -> str:
    if isinstance(value, list):
        value = ", ".join(map(str, value)) or "none"
    elif isinstance(value, dict):
        value = ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "none"
    return fmt.format(value if value is not None else "?")


# -- writing checkpoints during a run -------------------------------------------------------


class Checkpointer:
    """Writes a run's checkpoints into one directory, at most once every ``every`` seconds.

    Use it as a context manager (it creates the directory and holds a lock on it, so two
    runs cannot write one checkpoint), pass ``on_level`` to the engine, and call ``save``
    once the engine has returned.

    Args:
        directory: the checkpoint directory.
        run: the run's identity (see ``write``).
        every: the least number of seconds between two checkpoints written at level
            boundaries (0: every level).
    """

    def __init__(
        self,
        directory: str | Path,
        run: dict[str, Any],
        every: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = Path(directory)
        self.run = run
        self.every = every
        self.clock = clock
        self.last = clock()
        self.written: tuple[int, int, int] | None = None  # (depth, distinct, generated) of the last checkpoint written
        self._lock: IO[bytes] | None = None
        self.full: str | None = None  # the line of a checkpoint that found its disk full

    def __enter__(self) -> Checkpointer:
        if not self.directory.is_dir() and self.directory.exists():
            raise CheckpointError(f"{self.directory}: not a directory")
        if not is_kmc_directory(self.directory):
            raise CheckpointError(
                f"{self.directory}: not empty and not a kmc checkpoint directory; "
                "kmc checkpoints only into a new or empty directory"
            )
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock = open(self.directory / LOCK_NAME, "a+b")
        except OSError as e:
            raise CheckpointError(
                f"{self.directory}: cannot use it as a checkpoint directory ({e.strerror or e})"
            ) from None
        try:
            import fcntl

            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # not POSIX: no lock
            pass
        except OSError:
            holder = _holder(self._lock)
            self._lock.close()
            self._lock = None
            raise CheckpointError(f"{self.directory}: in use by another kmc run{holder}") from None
        else:  # the holder's process, for the message of a run refused meanwhile
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock.fileno(), 0)
                os.pwrite(self._lock.fileno(), f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        # Temporary files left by a run that was killed while writing (we hold the lock).
        for stale in self.directory.glob(f"{TMP_PREFIX}*{TMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                stale.unlink()
        try:
            if read_manifest(self.directory) is None:
                write_manifest(self.directory, [])
        except (OSError, CheckpointError) as e:
            self.__exit__()
            if isinstance(e, CheckpointError):
                raise
            raise CheckpointError(
                f"{self.directory}: cannot use it as a checkpoint directory ({e.strerror or e})"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.close()  # releases the lock
            self._lock = None

    def on_level(self, engine: Engine) -> None:
        """The engine's level-boundary callback: write a checkpoint if one is due."""
        if self.clock() - self.last >= self.every:
            self.save(engine)

    def save(self, engine: Engine) -> Path | None:
        """Write the engine's snapshot now, unless it is the one last written, or a
        checkpoint of this run already found the disk full (the last one written stands).

        Raises:
            ResourceStop: the checkpoint directory's disk is full (``"disk-full"``: the run
                stops there as when the store's disk is full, and the last checkpoint
                written stands; ``full`` holds the line).
            CheckpointError: the write failed otherwise (permissions, ...).
        """
        if self.full is not None:
            return None
        try:
            snap = engine.snapshot()  # (a disk store's files are linked, or copied, here)
        except OSError as e:
            self._failed(e)
        stats = snap["stats"]
        key = (stats["depth"], stats["distinct"], stats["generated"])
        if key == self.written:
            return None
        try:
            path = write(self.directory, self.run, snap)
        except OSError as e:
            self._failed(e)
        self.written = key
        self.last = self.clock()
        # Only now is an older level directory no longer named by the checkpoint file (nor,
        # for an engine that keeps a level in an object store, its older objects).
        data = snap.get("data")
        prune_data(self.directory, data if isinstance(data, str) else None)
        engine.committed(snap)
        return path

    def _failed(self, e: OSError) -> NoReturn:
        if e.errno in _FULL:
            try:
                free = f" ({format_size(shutil.disk_usage(self.directory).free)} free)"
            except OSError:
                free = ""
            self.full = f"the checkpoint directory {self.directory} is full{free}: {e.strerror or e}"
            raise ResourceStop("disk-full", self.full) from None
        raise CheckpointError(f"{self.directory}: cannot write the checkpoint ({e.strerror or e})") from None


def _holder(lock: IO[bytes]) -> str:
    """`` (process PID on HOST)``, as the lock's holder wrote it in the lock file, or ""."""
    try:
        words = os.pread(lock.fileno(), 200, 0).decode("ascii").split()
    except (OSError, UnicodeDecodeError):
        return ""
    if not words or not words[0].isdigit():
        return ""
    host = words[1] if len(words) > 1 and words[1].replace("-", "").replace(".", "").isalnum() else None
    if host is None or host == socket.gethostname():
        return f" (process {int(words[0])})"
    return f" (process {int(words[0])} on {host})"
