"""Checkpoints of the partitioned level (``checker.partitioned.levels``): the objects of
the last complete level (every partition's seen runs and parent pointers, the frontier),
named in the snapshot with the sizes and SHA-256 their writers computed (the driver does
not read a level back to hash it). In a directory store they are hard-linked (or copied)
under ``data_dir(data_root, depth)``; in an object store the snapshot is a manifest of
their names (``save_manifest``): they stay in the store, under the run's prefix, kept
while a checkpoint names them (``RowsStore.pin``). A resume checks every one (its size and
digest) and re-splits the level for its own partition count.

The search objects own what they save and take back (``snapshot_parts``,
``restore_parts``); these functions write and read the objects.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import EngineError
from ..checkpoints.file import CheckpointError, claim_data_dir
from .digests import verify_files
from .rows import RowsStore, one_line_os, owners, split_frontier
from .rows_read import load_arrays
from .rows_write import digest_of


def verify_saved(snapshot: dict[str, Any], directory: Any) -> Path:
    """The level directory of a snapshot of a Spark level, under the checkpoint directory
    ``directory``, once its files are checked against those the snapshot lists.

    Raises:
        EngineError: no ``directory``.
        CheckpointError: the level directory is missing or its files differ.
    """
    if directory is None:
        raise EngineError("restore: name the checkpoint directory")
    where: Path = Path(directory).resolve() / snapshot["data"]
    if where.is_symlink():  # another run's level, or a copy of this one elsewhere: not what was saved
        raise CheckpointError(
            f"{where}: a symbolic link, not the level directory the checkpoint saved; "
            "the checkpoint cannot be resumed, start a new run"
        )
    verify_files(where, snapshot["files"])
    return where


def level_objects(
    store: RowsStore, runs: list[Any], sources: list[Any], handoff_depth: int, depth: int
) -> list[tuple[str, str]]:
    """``(object name, saved name)`` of the store's objects of the level of ``depth``:
    every partition's seen ``runs`` and parent pointers since ``handoff_depth``, and the
    frontier's objects, written by the owners ``sources`` names."""
    objects = []
    for i, partition_runs in enumerate(runs):
        for d, _ in partition_runs:
            objects.append((store.run(i, d), f"run-{i:04d}-{d:06d}.npy"))
        for d in range(handoff_depth + 1, depth + 1):
            meta = store.meta(i, d)
            if meta in store.digests or _exists(store, meta):
                objects.append((meta, f"meta-{i:04d}-{d:06d}.bin"))
    for t, writers in enumerate(sources):
        for i in writers:
            objects.append((store.front(depth, t, i), f"front-{t:04d}-{i:04d}.bin"))
    return objects


def save_level(
    store: RowsStore, runs: list[Any], sources: list[Any], handoff_depth: int, depth: int, data_root: Any
) -> tuple[Path, dict[str, Any]]:
    """Copy the store's objects of the level of ``depth`` (``level_objects``) under
    ``data_dir(data_root, depth)``; returns that directory and ``{file name: (size,
    sha256)}`` of its files, the digests their writers computed (``RowsStore.digests``).

    Raises:
        CheckpointError: the files cannot be written.
    """
    target = claim_data_dir(Path(data_root).resolve(), depth)
    files = {}
    try:
        target.mkdir()
        for name, as_name in level_objects(store, runs, sources, handoff_depth, depth):
            store.blobs.copy_out(name, str(target / as_name))
            known = store.digests.get(name)
            if known is None:  # written before digests were asked for: hashed from the copy
                known = digest_of([(target / as_name).read_bytes()])
            files[as_name] = known
    except OSError as e:
        shutil.rmtree(target, ignore_errors=True)
        raise CheckpointError(f"{target}: cannot save the level's states ({e.strerror or e})") from None
    return target, files


def save_manifest(
    store: RowsStore, runs: list[Any], sources: list[Any], handoff_depth: int, depth: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The level of ``depth`` as a manifest of the store's objects (``level_objects``),
    which stay where they are, pinned (``RowsStore.pin``): ``(files, objects)``, the
    first ``{saved name: (size, sha256)}`` as their writers computed them, the second
    ``{"store": the run's prefix, "root": the store's location, "names": {saved name:
    object name}}``.

    Raises:
        CheckpointError: the store cannot be read or written.
    """
    files, names = {}, {}
    try:
        for name, as_name in level_objects(store, runs, sources, handoff_depth, depth):
            known = store.digests.get(name)
            if known is None:  # written before digests were asked for (never in a run that checkpoints)
                known = digest_of([store.blobs.get(name)])
            files[as_name], names[as_name] = known, name
        store.pin(names.values())
    except OSError as e:
        raise CheckpointError(f"{store.root}: cannot save the level's states ({one_line_os(e)})") from None
    return files, {"store": store.root.rsplit("/", 1)[-1], "root": store.root, "names": names}


def verify_objects(blobs: Any, snapshot: dict[str, Any]) -> None:
    """Refuse a manifest (``save_manifest``) whose objects in ``blobs`` (the run's prefix)
    are missing, or differ from the sizes and SHA-256 it lists, in one line.

    Raises:
        CheckpointError: an object is missing or damaged.
    """
    damaged = f"{blobs.root}: damaged ({{}}); the checkpoint cannot be resumed, start a new run"
    names = snapshot["objects"]["names"]
    for as_name, (size, digest) in sorted(snapshot["files"].items()):
        name = names[as_name]
        try:
            data = blobs.get(name)
        except FileNotFoundError:
            raise CheckpointError(damaged.format(f"missing {name}")) from None
        except OSError as e:
            raise CheckpointError(damaged.format(f"{name}: {one_line_os(e)}")) from None
        if len(data) != size:
            raise CheckpointError(damaged.format(f"{name} has {len(data)} bytes, not {size}"))
        if digest_of([data])[1] != digest:
            raise CheckpointError(damaged.format(f"{name}: checksum mismatch"))


def _exists(store: RowsStore, name: str) -> bool:
    """Whether the object ``name`` exists (a level's parent pointers: an owner that found
    no new state wrote none)."""
    try:
        store.blobs.open(name).close()
    except FileNotFoundError:
        return False
    return True


def relocate(where: Path, data_root: Any, depth: int) -> Path:
    """A saved level's directory ``where`` moved under ``data_root`` when it is elsewhere
    (resumed from another directory and stopped before a new level: the checkpoint written
    under ``data_root`` must not depend on the old directory); else ``where``."""
    root = Path(data_root).resolve()
    if where.parent == root:
        return where
    target = claim_data_dir(root, depth)
    shutil.copytree(where, target, dirs_exist_ok=True)
    return target


def load_saved(
    store: RowsStore, where: Any, snap: dict[str, Any], n: int, depth: int
) -> tuple[list[Any], list[int], list[list[int]]]:
    """Write a saved level into ``store``, re-split for ``n`` partitions; return the
    partitions' seen runs, the level's count per rank partition and their writers.
    ``where``: the level's directory (a ``Path``), or the blob store of the run's prefix
    its manifest names (``snap["objects"]``)."""
    first = snap["handoff_depth"] + 1
    names = sorted(snap["files"])

    def source(name: str) -> Any:
        return where / name if isinstance(where, Path) else (where, snap["objects"]["names"][name])

    fps = np.concatenate(
        [load_arrays(source(name), 1)[0] for name in names if name.startswith("run-")] or [np.zeros(0, np.uint64)]
    )
    fps.sort()
    cuts = np.searchsorted(owners(fps, n), np.arange(n + 1))
    runs = []
    for i in range(n):
        store.save(store.run(i, depth), fps[cuts[i] : cuts[i + 1]])
        runs.append([(depth, int(cuts[i + 1] - cuts[i]))])
    del fps
    for d in range(first, depth + 1):
        suffix = f"-{d:06d}.bin"
        parts = [load_arrays(source(name), 3) for name in names if name.startswith("meta-") and name.endswith(suffix)]
        if not parts:
            continue
        mfps, parents, choices = (np.concatenate(a) for a in zip(*parts))
        order = np.argsort(mfps)
        mfps, parents, choices = mfps[order], parents[order], choices[order]
        cuts = np.searchsorted(owners(mfps, n), np.arange(n + 1))
        for i in range(n):
            if cuts[i + 1] > cuts[i]:
                cut = slice(cuts[i], cuts[i + 1])
                store.save(store.meta(i, d), mfps[cut], parents[cut], choices[cut])
    parts = [load_arrays(source(name), 3) for name in names if name.startswith("front-")]
    if not parts:
        return runs, [0] * n, [[] for _ in range(n)]
    keys, ffps, rows = (np.concatenate(a) for a in zip(*parts))
    order = np.argsort(keys, kind="stable")
    if len(order) != snap["frontier"]:
        raise CheckpointError(
            f"{getattr(where, 'root', where)}: damaged (it holds {len(order)} frontier states, "
            f"not {snap['frontier']}); the checkpoint cannot be resumed, start a new run"
        )
    counts, sources = split_frontier(store, depth, n, np.arange(len(order), dtype=np.int64), ffps[order], rows[order])
    return runs, counts, sources
