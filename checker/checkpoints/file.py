"""Checkpoints: what lets a long run be stopped and resumed (with clean stops on signals,
``checker.base.signals``, and a memory ceiling, ``checker.base.memory``).

A checkpoint is one file, ``DIR/checkpoint.kmc``, holding a search at a level boundary:
every state of depth <= d has been stored and every state of depth < d expanded. Resuming
re-expands level d from its start, so a resumed run ends with exactly the counts, verdicts
and counterexamples of a run that was never stopped.

File layout (``FORMAT`` 2)::

    b"KMC-CHECKPOINT\n"      magic
    payload                  the engine's snapshot, pickled
    header                   UTF-8 JSON (see ``write``): format, kmc and spec identity,
                             the payload's size, ...
    8 bytes, big-endian      length of the header
    32 bytes                 sha256 of everything before them

The header comes after the payload so that it can state the payload's size (the payload
is streamed, its size known only once written): a reader checks the file's size against
the header, and every header field, before it hashes a byte of the payload, so a file
cut short, extended, or sparse (holes where data should be; kmc never writes one) is
refused at once instead of being hashed for hours.

Writing goes to a temporary file in DIR, which is flushed, fsynced, renamed over
``checkpoint.kmc`` and followed by an fsync of DIR. A reader therefore finds the previous
checkpoint or the new one, never half of one, even after SIGKILL or a power cut; the
checksum catches a file damaged or cut short afterwards (a bad disk, a partial copy).

The snapshot is the contract between an engine and this module: a dict with at least
``"engine"`` (its name), ``"stats"`` (the fields of ``checker.core.result.Stats``) and
``"found"`` (keyed by the names of the properties violated so far), tagged with the format
of the search that wrote it, each of whose parts saves and restores itself; its schema,
and the one reader of the shapes older kmc versions wrote, are ``checker.checkpoints.schema``.
An engine whose frontier and seen-set live outside the process (Spark) writes them under
``data_dir(DIR, depth)`` first and names that directory in its snapshot under ``"data"``
(its name), as the disk store and its queue do; the checkpoint file, replaced last, is the
commit point, after which ``Checkpointer`` removes every other level directory
that kmc created. kmc deletes only what it wrote: ``DIR/.kmc-checkpoint`` (the manifest)
lists every level directory before it is created (``claim_data_dir``), only listed
directories are ever removed, and a non-empty DIR that is not a kmc checkpoint directory
is refused.

Known limitation: the payload is a pickle, and loading a pickle runs code named in it.
Resume only checkpoints your own runs wrote. The checksum detects accidents, not attacks.
The kmc version is checked on resume, but two checkouts of the same version with different
state classes are not told apart: unpickling then fails (refused) or, if the classes still
load, the resumed run explores with the new code from the old frontier.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NoReturn, TypeAlias

from ..base.errors import KmcError

StrPath: TypeAlias = str | os.PathLike[str]  # a directory, as a path or its text

FORMAT = 2
FILE_NAME = "checkpoint.kmc"
MAGIC = b"KMC-CHECKPOINT\n"
LOCK_NAME = ".lock"
MANIFEST_NAME = ".kmc-checkpoint"  # names the level directories kmc created (see prune_data)
_MANIFEST_KIND = "kmc-checkpoint-directory"
_LEVEL_NAME = re.compile(r"level-\d{6}")
TMP_PREFIX = ".checkpoint-"
TMP_SUFFIX = ".tmp"
_DIGEST = 32
_MAX_HEADER = 1 << 20
_CHUNK = 1 << 20
_SPARSE_MIN = 1 << 24  # smaller files are not checked for holes (file systems vary)


class CheckpointError(KmcError):
    """A checkpoint is missing, damaged, in use, or was written for another run."""


# -- the file ----------------------------------------------------------------------------


def checkpoint_file(directory: StrPath) -> Path:
    """The checkpoint file of a checkpoint directory."""
    return Path(directory) / FILE_NAME


def data_dir(directory: StrPath, depth: int) -> Path:
    """Where an engine keeps out-of-process data (files) for the checkpoint of ``depth``."""
    return Path(directory) / f"level-{depth:06d}"


def prune_data(directory: StrPath, keep: str | None = None) -> None:
    """Remove the level directories (``data_dir``) of ``directory`` other than ``keep`` (a
    directory name) that the manifest lists: those of older checkpoints, and those a killed
    run left unnamed. A directory the manifest does not list is never touched: kmc did not
    create it."""
    manifest = read_manifest(directory)
    if manifest is None:
        return
    owned = manifest["owned"]
    for name in owned:
        path = Path(directory) / name
        if name != keep and _LEVEL_NAME.fullmatch(name) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
    left = [name for name in owned if name == keep or (Path(directory) / name).exists()]
    if left != owned:
        write_manifest(directory, left)


def claim_data_dir(directory: StrPath, depth: int) -> Path:
    """``data_dir(directory, depth)``, listed in the manifest before it is created (so a
    run killed while writing it still leaves it to be removed), and emptied when an
    earlier run of kmc left it behind.

    Raises:
        CheckpointError: the directory exists and kmc did not create it.
    """
    path = data_dir(directory, depth)
    Path(directory).mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(directory) or {"owned": []}
    if path.exists() or path.is_symlink():
        if path.name not in manifest["owned"]:
            raise CheckpointError(
                f"{path}: exists and was not created by kmc; it is left as it is "
                "(move it away, or checkpoint into another directory)"
            )
        shutil.rmtree(path)
    if path.name not in manifest["owned"]:
        write_manifest(directory, [*manifest["owned"], path.name])
    return path


def own_files(directory: StrPath) -> list[Path]:
    """The files kmc keeps in a checkpoint directory (outputs must never replace them)."""
    d = Path(directory)
    return [d / FILE_NAME, d / LOCK_NAME, d / MANIFEST_NAME]


def read_manifest(directory: StrPath) -> dict[str, Any] | None:
    """The manifest of a checkpoint directory: ``{"owned": [level directory names]}``, or
    ``None`` when there is none (a new directory, or one written by an older kmc)."""
    path = Path(directory) / MANIFEST_NAME
    try:
        doc = json.loads(path.read_bytes()[:_MAX_HEADER].decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        raise CheckpointError(f"{path}: unreadable kmc manifest; kmc will not manage this directory") from None
    owned = doc.get("owned") if isinstance(doc, dict) else None
    if (
        doc.get("kind") != _MANIFEST_KIND
        or not isinstance(owned, list)
        or not all(isinstance(x, str) and _LEVEL_NAME.fullmatch(x) for x in owned)
    ):
        raise CheckpointError(f"{path}: not a kmc checkpoint manifest; kmc will not manage this directory")
    return {"owned": owned}


def write_manifest(directory: StrPath, owned: Iterable[str]) -> None:
    path = Path(directory) / MANIFEST_NAME
    tmp = path.with_name(f"{TMP_PREFIX}manifest-{os.getpid()}{TMP_SUFFIX}")
    tmp.write_text(json.dumps({"kind": _MANIFEST_KIND, "owned": list(owned)}), encoding="utf-8")
    os.replace(tmp, path)


def is_kmc_directory(directory: StrPath) -> bool:
    """True when ``directory`` is new, empty, or a checkpoint directory of kmc (it has a
    manifest or a checkpoint file, or only the files a kmc run leaves)."""
    d = Path(directory)
    if not d.exists():
        return True
    if (d / MANIFEST_NAME).is_file() or (d / FILE_NAME).is_file():
        return True
    try:
        names = [p.name for p in d.iterdir()]
    except OSError:
        return False
    return all(n == LOCK_NAME or (n.startswith(TMP_PREFIX) and n.endswith(TMP_SUFFIX)) for n in names)


def exists(directory: StrPath) -> bool:
    return checkpoint_file(directory).is_file()


def write(directory: StrPath, run: dict[str, Any], snapshot: dict[str, Any]) -> Path:
    """Write ``snapshot`` as the checkpoint of ``directory``, atomically.

    Args:
        directory: the checkpoint directory (it must exist).
        run: what identifies the run, copied into the header: ``kmc_version``,
            ``spec_sha256``, ``spec_path``, ``properties`` (names), ``options`` (the
            options that change what is explored), ``limits`` (resource limits, not
            compared on resume).
        snapshot: the engine's snapshot (see the module docstring).

    Returns:
        The path of the checkpoint file.

    Raises:
        OSError: the directory is not writable or the disk is full (the temporary file is
            removed and the previous checkpoint is left as it was).
    """
    stats = snapshot["stats"]
    target = checkpoint_file(directory)
    tmp = target.with_name(f"{TMP_PREFIX}{os.getpid()}-{time.monotonic_ns()}{TMP_SUFFIX}")
    try:
        with open(tmp, "xb") as f:
            out = _HashingWriter(f)
            out.write(MAGIC)
            # Streamed through the hash: no second copy of a payload that can be gigabytes.
            pickle.dump(snapshot, out, protocol=pickle.HIGHEST_PROTOCOL)
            header = {
                "format": FORMAT,
                **run,
                "engine": snapshot["engine"],
                "depth": stats["depth"],
                "distinct": stats["distinct"],
                "generated": stats["generated"],
                "violated": sorted(snapshot["found"]),
                "written": datetime.now(UTC).isoformat(timespec="seconds"),
                "payload_bytes": out.count - len(MAGIC),
            }
            head = json.dumps(header, sort_keys=True).encode("utf-8")
            out.write(head)
            out.write(len(head).to_bytes(8, "big"))
            f.write(out.digest.digest())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)
    return target


# Where the checker's modules were before they moved into its wings: a checkpoint of an
# older kmc names its snapshot's classes by their old modules.
_MOVED = {
    "kmc.checker.errors": "kmc.checker.base.errors",
    "kmc.checker.exitcodes": "kmc.checker.base.exitcodes",
    "kmc.checker.files": "kmc.checker.base.files",
    "kmc.checker.text": "kmc.checker.base.text",
    "kmc.checker.units": "kmc.checker.base.units",
    "kmc.checker.signals": "kmc.checker.base.signals",
    "kmc.checker.memory": "kmc.checker.base.memory",
    "kmc.checker.owner": "kmc.checker.base.owner",
    "kmc.checker.tree_usage": "kmc.checker.base.tree_usage",
    "kmc.checker.protocol": "kmc.checker.contract.protocol",
    "kmc.checker.model_errors": "kmc.checker.contract.model_errors",
    "kmc.checker.kernel_check": "kmc.checker.contract.kernel_check",
    "kmc.checker.masks": "kmc.checker.contract.properties",
    "kmc.checker.states_kernel": "kmc.checker.core.states_kernel",
    "kmc.checker.driver": "kmc.checker.core.driver",
    "kmc.checker.level": "kmc.checker.core.level",
    "kmc.checker.keys": "kmc.checker.core.keys",
    "kmc.checker.trace": "kmc.checker.core.trace",
    "kmc.checker.result": "kmc.checker.core.result",
    "kmc.checker.kernel": "kmc.checker.core.kernel",
    "kmc.checker.options": "kmc.checker.core.options",
    "kmc.checker.search": "kmc.checker.core.parts",
    "kmc.checker.fingerprint": "kmc.checker.base.fingerprint",
    "kmc.checker.deadlock": "kmc.checker.core.deadlock",
    "kmc.checker.coverage": "kmc.checker.core.coverage",
    "kmc.checker.local": "kmc.checker.local.states",
    "kmc.checker.batch": "kmc.checker.local.rows",
    "kmc.checker.workers": "kmc.checker.local.workers",
    "kmc.checker.simulate": "kmc.checker.local.simulate",
    "kmc.checker.seen": "kmc.checker.stores.seen",
    "kmc.checker.disk_store": "kmc.checker.stores.disk",
    "kmc.checker.frontier": "kmc.checker.stores.frontier",
    "kmc.checker.visitor": "kmc.checker.core.visitor",
    "kmc.checker.possibly": "kmc.checker.graph.possibly",
    "kmc.checker.liveness": "kmc.checker.graph.liveness",
    "kmc.checker.lasso_check": "kmc.checker.graph.lasso",
    "kmc.checker.graph": "kmc.checker.graph.export",
    "kmc.checker.checkpoint": "kmc.checker.checkpoints.file",
    "kmc.checker.checkpointer": "kmc.checker.checkpoints.writer",
}


class _Unpickler(pickle.Unpickler):
    """The snapshot's reader: a class named by a module that has since moved is looked up where it is now."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_MOVED.get(module, module), name)


def read_header(directory: StrPath) -> dict[str, Any]:
    """The header of ``directory``'s checkpoint, after verifying the whole file's checksum.

    Raises:
        CheckpointError: no checkpoint, or it is truncated, corrupted or not a checkpoint.
    """
    with _open(directory) as (f, header, _):
        return header


def read(directory: StrPath) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``(header, snapshot)`` of ``directory``'s checkpoint; see ``read_header``."""
    with _open(directory) as (f, header, end):
        where = checkpoint_file(directory)
        try:
            snapshot = _Unpickler(f).load()
        except Exception as e:  # a class that moved or changed since the file was written
            raise CheckpointError(f"{where}: cannot load its states ({type(e).__name__}: {_one_line(e)})") from None
        if f.tell() != end or not isinstance(snapshot, dict):
            raise CheckpointError(f"{where}: corrupted (the payload does not end where the header says)")
        return header, snapshot


@contextlib.contextmanager
def _open(directory: StrPath) -> Iterator[tuple[IO[bytes], dict[str, Any], int]]:
    where = checkpoint_file(directory)
    if not Path(directory).is_dir():
        raise CheckpointError(f"{directory}: no such checkpoint directory")
    if not where.is_file():
        raise CheckpointError(
            f"{directory}: no checkpoint here (no {FILE_NAME}; was the run started with --checkpoint?)"
        )
    damaged = f"{where}: truncated or corrupted ({{}}); it cannot be resumed, start a new run"
    try:
        f = open(where, "rb")
    except OSError as e:
        raise CheckpointError(f"{where}: cannot read it ({e.strerror or e})") from None
    with f:
        st = os.fstat(f.fileno())
        size = st.st_size
        head = f.read(len(MAGIC))
        if head != MAGIC:
            if MAGIC.startswith(head):  # empty, or cut inside the magic
                raise CheckpointError(damaged.format("too short"))
            raise CheckpointError(f"{where}: not a kmc checkpoint")
        fixed = len(MAGIC) + 8 + _DIGEST
        if size < fixed:
            raise CheckpointError(damaged.format("too short"))
        # The sizes first, from the header at the end: nothing is hashed before they agree.
        f.seek(size - _DIGEST - 8)
        length = int.from_bytes(f.read(8), "big")
        if length > min(_MAX_HEADER, size - fixed):
            raise CheckpointError(damaged.format("bad header length"))
        f.seek(size - _DIGEST - 8 - length)
        try:
            header = json.loads(f.read(length).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise CheckpointError(damaged.format("unreadable header")) from None
        if not isinstance(header, dict):
            raise CheckpointError(damaged.format("unreadable header"))
        if header.get("format") != FORMAT:
            fmt = _one_line(repr(header.get("format")))[:20]
            raise CheckpointError(f"{where}: written in checkpoint format {fmt}; this kmc reads format {FORMAT}")
        payload = header.get("payload_bytes")
        if type(payload) is not int or payload < 1 or len(MAGIC) + payload + length + 8 + _DIGEST != size:
            raise CheckpointError(damaged.format("its size does not match its header"))
        blocks = getattr(st, "st_blocks", None)
        if blocks is not None and size > _SPARSE_MIN and blocks * 512 * 8 < size:
            raise CheckpointError(damaged.format("a sparse file, with holes where its data should be"))
        digest = hashlib.sha256(MAGIC)
        f.seek(len(MAGIC))
        left = size - _DIGEST - len(MAGIC)
        while left:
            chunk = f.read(min(_CHUNK, left))
            if not chunk:
                raise CheckpointError(damaged.format("too short"))
            digest.update(chunk)
            left -= len(chunk)
        if f.read(_DIGEST) != digest.digest():
            raise CheckpointError(damaged.format("checksum mismatch"))
        # Checked even though the checksum matched: a file re-sealed after an edit has a
        # valid checksum, and every field is used (options, paths, counts).
        _check_header(where, header)
        f.seek(len(MAGIC))
        yield f, header, len(MAGIC) + payload


def _check_header(where: Path, header: dict[str, Any]) -> None:
    """Refuse a header with a missing field or a field of the wrong type or range."""

    def bad(key: str, want: str) -> NoReturn:
        raise CheckpointError(
            f"{where}: corrupted header: {key} must be {want}, got "
            f"{_one_line(repr(header.get(key)))[:60]}; it cannot be resumed, start a new run"
        )

    def count(x: Any, low: int = 0) -> bool:
        return type(x) is int and low <= x < 1 << 62

    def names(x: Any) -> bool:
        return isinstance(x, list) and len(x) <= 64 and all(isinstance(n, str) and 0 < len(n) <= 100 for n in x)

    if header.get("engine") not in ("local", "spark"):
        bad("engine", "'local' or 'spark'")
    for key in ("depth", "distinct", "generated", "payload_bytes"):
        if not count(header.get(key)):
            bad(key, "a non-negative integer")
    if not names(header.get("violated")):
        bad("violated", "a list of property names")

    def text(x: object) -> bool:
        return isinstance(x, str) and 0 < len(x) <= 4096 and "\x00" not in x

    for key in ("kmc_version", "spec_sha256", "spec_path", "written", "model_ref", "model_sha256"):
        if key in header and not text(header[key]):
            bad(key, "a string")
    params = header.get("model_params", {})  # a model's factory's keyword arguments
    if not (
        isinstance(params, dict)
        and len(params) <= 64
        and all(
            k.isidentifier() and len(k) <= 100 and (text(v) or type(v) in (int, float, bool)) for k, v in params.items()
        )
    ):
        bad("model_params", "a table of names to numbers, true/false or strings")
    if "properties" in header and not names(header["properties"]):
        bad("properties", "a list of property names")
    options = header.get("options", {})
    if not isinstance(options, dict) or set(options) - {"max_depth", "keep_going", "symmetry", "kafka"}:
        bad("options", "a table of max_depth, keep_going, symmetry and kafka")
    kafka = options.get("kafka", ["-", None])  # a spec read as a Kafka release (--kafka, --metadata)
    if not (isinstance(kafka, list) and len(kafka) == 2 and text(kafka[0]) and (kafka[1] is None or text(kafka[1]))):
        bad("options", "a table whose kafka is a release and a metadata mode or null")
    if options.get("max_depth") is not None and not count(options["max_depth"], 1):
        bad("options", "a table whose max_depth is a positive integer or null")
    for key in ("keep_going", "symmetry"):
        if not isinstance(options.get(key, False), bool):
            bad("options", f"a table whose {key} is true or false")
    limits = header.get("limits", {})
    if not isinstance(limits, dict) or not all(v is None or count(v, 1) for v in limits.values()):
        bad("limits", "a table of positive integers or nulls")


class _HashingWriter:
    """A binary file wrapper that hashes what goes through it."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.digest = hashlib.sha256()
        self.count = 0

    def write(self, data: Any) -> int:
        # pickle hands large buffers (numpy arrays of the batch engine) over as
        # PickleBuffer objects, which have no len(): count their bytes.
        view = memoryview(data)
        self.digest.update(view)
        self.count += view.nbytes
        return self.f.write(view)


def _fsync_dir(path: str | os.PathLike[str]) -> None:
    # Makes the rename durable; some platforms and file systems cannot open a directory.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _one_line(e: object) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 120 else text[:117] + "..."
