"""Checkpoints of the Spark engine (``checker.spark_search``): while the levels run on the
driver, the rows search's snapshot; once they run on Spark, the store's files of the last
complete level linked under ``data_dir(data_root, depth)`` and named, with their sizes and
SHA-256, in the snapshot. A resume re-splits them for its own partition count."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from .batch import ROWS_FORMAT
from .checkpoint import CheckpointError, claim_data_dir
from .errors import EngineError
from .spark_rows_store import _digests, _link, _load, _meta_path, _owners, _split_frontier
from .spark_store import verify_files

SNAPSHOT_FORMAT = "spark-rows-1"  # the snapshot format of the Spark engine
STATES_FORMAT = "spark-states-1"  # ... on the per-state path (rows of Python states)


def snapshot_parts(search) -> dict:
    """The parts of a snapshot the search owns (the driver adds the stats and violations).

    Raises:
        EngineError: the level's files are needed but were never saved (no ``data_root``
            during ``run()``).
        CheckpointError: the level's files cannot be written.
    """
    engine = search.engine
    head = {"head": {"format": engine.snapshot_format}}
    if search.phase == "driver":
        rows = search.rows
        return {
            **head,
            "phase": "driver",
            "local": {"format": ROWS_FORMAT, "frontier": rows.frontier, "seen": rows.seen},
        }
    save_level(search)
    key, where, files = engine.saved
    root = Path(engine.data_root).resolve()
    if where.parent != root:
        # Resumed from another directory and stopped before a new level: the checkpoint
        # written here must not depend on the old directory.
        target = claim_data_dir(root, engine.stats.depth)
        shutil.copytree(where, target, dirs_exist_ok=True)
        engine.saved = key, target, files
        where = target
    return {
        **head,
        "phase": "spark",
        "data": where.name,
        "files": files,
        "runs": search.runs,
        "counts": search.counts,
        "sources": search.sources,
        "handoff": search.handoff,
        "handoff_depth": search.handoff_depth,
        "local_seen": search.rows.seen,
        "partitions": search.n,
        "frontier": sum(search.counts),
    }


def restore_parts(search, snapshot, directory=None) -> None:
    """Take a snapshot's parts back (see ``SparkRowsEngine.restore``)."""
    engine = search.engine
    if snapshot.get("format") not in (SNAPSHOT_FORMAT, STATES_FORMAT):
        raise CheckpointError(
            "the checkpoint was written by the retired per-state Spark engine, whose "
            "format this kmc no longer reads; start a new run"
        )
    if snapshot["format"] != engine.snapshot_format:
        path = "--per-state" if snapshot["format"] == STATES_FORMAT else "without --per-state"
        raise EngineError(f"the checkpoint was written on the other path of the Spark engine; resume it {path}")
    if snapshot["phase"] == "driver":
        search.rows.restore_parts(snapshot["local"])
        return
    directory = engine.data_root if directory is None else directory
    if directory is None:
        raise EngineError("restore: name the checkpoint directory")
    where = Path(directory).resolve() / snapshot["data"]
    verify_files(where, snapshot["files"])
    stats = snapshot["stats"]
    search.phase = "spark"
    search.resume_from = (where, snapshot)
    search.runs, search.counts, search.sources = snapshot["runs"], snapshot["counts"], snapshot["sources"]
    search.handoff, search.handoff_depth = snapshot["handoff"], snapshot["handoff_depth"]
    search.rows.seen, search.n = snapshot["local_seen"], snapshot["partitions"]
    search.distinct = stats["distinct"]
    engine.saved = ((stats["depth"], stats["distinct"], stats["generated"]), where, snapshot["files"])


def save_level(search) -> None:
    """Link the store's files of the last complete level under ``data_dir(data_root,
    depth)``, unless done."""
    engine = search.engine
    stats = engine.stats
    key = (stats.depth, stats.distinct, stats.generated)
    if engine.saved is not None and engine.saved[0] == key:
        return
    store = search.store
    if store is None or engine.data_root is None:
        raise EngineError("snapshot: the level's files were not saved (set data_root before run())")
    target = claim_data_dir(Path(engine.data_root).resolve(), stats.depth)
    try:
        target.mkdir()
        for i, runs in enumerate(search.runs):
            for d, _ in runs:
                _link(store.run(i, d), target / f"run-{i:04d}-{d:06d}.npy")
            for d in range(search.handoff_depth + 1, stats.depth + 1):
                meta = _meta_path(store.root, i, d)
                if os.path.exists(meta):
                    _link(meta, target / f"meta-{i:04d}-{d:06d}.bin")
        for t, owners in enumerate(search.sources):
            for i in owners:
                _link(store.front(stats.depth, t, i), target / f"front-{t:04d}-{i:04d}.bin")
        files = _digests(target)
    except OSError as e:
        shutil.rmtree(target, ignore_errors=True)
        raise CheckpointError(f"{target}: cannot save the level's states ({e.strerror or e})") from None
    engine.saved = (key, target, files)


def load_saved(store, where, snap, n, depth):
    """Write a saved level into ``store``, re-split for ``n`` partitions; return the
    partitions' seen runs, the level's count per rank partition and their writers."""
    first = snap["handoff_depth"] + 1
    names = sorted(snap["files"])
    fps = np.concatenate(
        [np.load(where / name) for name in names if name.startswith("run-")] or [np.zeros(0, np.uint64)]
    )
    fps.sort()
    cuts = np.searchsorted(_owners(fps, n), np.arange(n + 1))
    runs = []
    for i in range(n):
        store.save(store.run(i, depth), fps[cuts[i] : cuts[i + 1]])
        runs.append([(depth, int(cuts[i + 1] - cuts[i]))])
    del fps
    for d in range(first, depth + 1):
        parts = [
            _load(where / name, 3) for name in names if name.startswith("meta-") and name.endswith(f"-{d:06d}.bin")
        ]
        if not parts:
            continue
        mfps, parents, choices = (np.concatenate(a) for a in zip(*parts))
        order = np.argsort(mfps)
        mfps, parents, choices = mfps[order], parents[order], choices[order]
        cuts = np.searchsorted(_owners(mfps, n), np.arange(n + 1))
        for i in range(n):
            if cuts[i + 1] > cuts[i]:
                cut = slice(cuts[i], cuts[i + 1])
                store.save(_meta_path(store.root, i, d), mfps[cut], parents[cut], choices[cut])
    parts = [_load(where / name, 3) for name in names if name.startswith("front-")]
    if not parts:
        return runs, [0] * n, [[] for _ in range(n)]
    keys, ffps, rows = (np.concatenate(a) for a in zip(*parts))
    order = np.argsort(keys, kind="stable")
    if len(order) != snap["frontier"]:
        raise CheckpointError(
            f"{where}: damaged (it holds {len(order)} frontier states, "
            f"not {snap['frontier']}); the checkpoint cannot be resumed, start a new run"
        )
    counts, sources = _split_frontier(store, depth, n, np.arange(len(order), dtype=np.int64), ffps[order], rows[order])
    return runs, counts, sources
