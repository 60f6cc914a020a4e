"""The Spark engine on rows: the batch engine's search, distributed with Apache Spark.

Used for every model that has a batch kernel (``model.batch_kernel()``, see
``checker.batch``); it reports exactly what ``checker.batch.BatchEngine`` reports (counts,
per-action counters, verdicts, counterexample paths, choices and explanations).

No Python object per state goes through Spark: states are rows, always moved as whole
numpy arrays, and what outlives a level is kept in files (the *store*, ``_Store``).

Small leading levels run on the driver
--------------------------------------
While a level has at most ``driver_level_limit`` states, the search runs on the driver
with ``BatchEngine`` itself (no Spark session is even started). When a level grows past
the limit, the driver's seen-set is written into the store split by owner, its frontier
split into P *rank ranges*, and Spark continues. A spec whose levels all stay small
never starts Spark.

Tie-breaking without paths
--------------------------
``BatchEngine`` numbers a level's states in discovery order: by the least ``(parent
number, choice)`` that reaches each new fingerprint. Here every frontier state of level
``d`` has a *dense global rank* ``g`` in ``[0, L_d)``, its position in that order. The
frontier is kept in P *rank partitions*: partition ``j`` holds a contiguous range of ranks,
and the driver knows every partition's count, so ``g = offset_j + local index`` (the
offsets are a few ints in the task closure). A successor's *key* is ``g * 256 +
choice``; the least key reaching a fingerprint is its discovery, and the new states in
key order are the next level's discovery order. A fingerprint's *owner* is
``floor(fp * P / 2**64)``, so a sorted array of fingerprints splits into owners by
position. One level is one Spark job of two stages:

1. Rank partition ``j`` reads its share of the frontier from the store (one file per
   owner that found some of it), sorts it by key, runs ``kernel.expand``, checks the
   step properties (``kernel.step_mask``, the least-key violator per property), keeps
   the least key of each fingerprint within a slice, and writes the successors (key,
   fingerprint, parent fingerprint, action code, row) for each owner into the store;
   one small record per file goes through Spark's shuffle (or, with ``exchange =
   "shuffle"``, the arrays themselves).
2. Owner ``i`` reads the successors for it, keeps the least key per fingerprint, drops
   those in its seen runs, writes the new fingerprints as a run (merged with the newest
   runs as ``checker.seen.CompactSeenSet`` merges) and the level's parent pointers,
   checks the invariants on the new rows (``kernel.invariant_mask``; only a violating
   row is decoded), and writes the new rows for their next rank partition ``g * P //
   L_d``, which grows with ``g``: the next level's order is (rank partition, key order
   inside it). It returns one summary, which gives the driver the counts, the
   violations, its runs and the next level's per-rank-partition counts.

Counts come from the summaries (no accumulators), every file is written whole under a
temporary name and renamed by a task whose output depends only on its inputs, and a
level's job reads only files the driver names: a retried task cannot change anything,
and no RDD outlives its level.

Counterexamples: the parent pointers (fingerprint, parent fingerprint, choice) of every
depth are kept per owner; the driver follows fp -> parent fp down to a state it handed
over, whose path its own seen-set gives, and replays the choices
(``checker.trace.replay_choices``, and ``extend`` for a step property).

Checkpoints: ``snapshot()`` links the store's files of the last complete level under
``data_dir(data_root, depth)``; ``restore()`` checks them and ``run()`` re-splits them for
its own partition count.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from functools import partial
from pathlib import Path

import attrs
import numpy as np

from .batch import BatchEngine
from .checkpoint import CheckpointError, claim_data_dir
from .errors import EngineError
from .fingerprint import fingerprint_rows
from .kernel import require_symmetric, split_properties, stop_after_level
from .local import Options
from .protocol import successors
from .result import CheckResult, Stats, Violation
from .spark_session import _cancel_group, _default_partitions, _one_line, _quiet_py4j, partitions_bad, spark_context
from .spark_store import digests, verify_files
from .spark_tasks import _owner, _test_fault
from .trace import extend, replay_choices

SNAPSHOT_FORMAT = "spark-rows-1"  # the snapshot format of this engine
DRIVER_LEVEL_LIMIT = 50_000  # levels up to this many states are expanded on the driver
SLICE_ROWS = 1 << 16  # frontier rows expanded and deduplicated together in a task
_CHUNK = 1 << 14  # rows per kernel call
_HANDOFF = "kmc-handoff"  # the driver phase's stop reason when a level outgrows the limit


class SparkRowsEngine:
    """Breadth-first exploration of a model with a batch kernel, on Apache Spark.

    Same arguments, attributes and hooks as ``checker.spark.SparkEngine`` (``run()``,
    ``stop_requested``, ``cancel()``, ``on_level``), and gives exactly the results of
    ``checker.batch.BatchEngine``.

    Args:
        model, properties, options, progress, master, partitions, verbose: as
            ``SparkEngine``.
        driver_level_limit: leading levels of at most this many states are expanded on
            the driver (``BatchEngine``); 0 hands over to Spark right after the initial
            states.

    After ``run()``, ``metrics`` holds what ``kmc bench`` reports: the session's start
    time, every Spark level's states and seconds, and the bytes routed through both
    shuffles.
    """

    name = "spark"
    path = "rows"

    def __init__(self, model, properties=None, options=None, progress=None, *,
                 master=None, partitions=None, verbose=False, checkpoint_dir=None,
                 driver_level_limit=DRIVER_LEVEL_LIMIT, store_dir=None, exchange="store",
                 _fail_first_attempt=False):
        self.model = model
        self.kernel = model.batch_kernel()
        self.properties = list(model.properties() if properties is None else properties)
        self.invariants, self.step_props = split_properties(self.properties)
        self.options = options or Options()
        self.progress = progress
        self.master = master
        self.partitions = partitions
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        self.driver_level_limit = driver_level_limit
        self.store_dir = store_dir
        if exchange not in ("store", "shuffle"):
            raise EngineError(f"exchange must be 'store' or 'shuffle', got {exchange!r}")
        self.exchange = exchange
        self.data_root = None  # the checkpoint directory snapshot() saves levels under
        self._store = None
        self._n = None
        self._phase = "driver"  # then "spark", once the store holds the search
        self._restored = None  # what restore() gave run(): ("driver", snapshot) or ("spark", dir, snapshot)
        self._saved = None  # (level key, directory, files) of the last level saved
        self._runs = self._counts = self._sources = None
        self._local_seen = self._handoff = self._handoff_depth = None
        self._owned = None
        # Test hook: every expansion task of rank partition 0 fails on its first attempt
        # (see checker.spark_tasks._test_fault).
        self._fail_first_attempt = _fail_first_attempt
        self.stop_requested = None
        self.on_level = None
        self.on_status = None  # called with a short message while Spark starts
        self.stats = Stats()
        # property -> (kind, explanation, where); where is ("driver", number) or
        # ("driver", (number, choice)) for a violation found on the driver, ("fp", fp) or
        # ("step", (parent fp, choice)) for one found on Spark.
        self.found: dict[str, tuple] = {}
        self.metrics: dict = {"session_start_seconds": None, "spark_levels": [], "shuffle_bytes": 0,
                              "driver_levels": 0}
        self._local = None
        self._sc = None
        self._group = f"kmc-rows-{id(self):x}"
        self._canceller = None
        if self.options.symmetry:
            require_symmetric(self.properties)

    # -- the search ---------------------------------------------------------------------

    def run(self) -> CheckResult:
        """Explore, and return the result (with full counterexample paths).

        Raises:
            EngineError: Spark could not start, or a Spark job failed.
            CheckpointError: ``data_root`` is set and the last level cannot be saved.
        """
        if partitions_bad(self.partitions):
            raise EngineError(f"spark partitions must be a positive integer, got {self.partitions!r}")
        _check_master(self.master)  # at once, even when every level stays on the driver
        if self.store_dir is not None:
            _Store.create(self.store_dir).remove()  # likewise: not after hours on the driver
        started = time.perf_counter()
        restored, self._restored = self._restored, None
        local = self._local = BatchEngine(self.model, self.properties, self.options, self.progress)
        if restored is not None and restored[0] == "spark":
            snap = restored[2]
            local.seen = self._local_seen
            self._n = None  # chosen again: this run's partitions, else the saved level's
            self._handoff, self._handoff_depth = snap["handoff"], snap["handoff_depth"]
            return self._spark_phase(partial(self._load_saved, restored[1], snap), started, resumed=True)
        local.on_level = self._driver_level
        if restored is not None:
            local.restore(restored[1])
        else:
            local._start()
        if local._frontier_size() > self.driver_level_limit and local._stop_reason_after_level() is None:
            local.stop_requested = _HANDOFF
        if self.stop_requested is not None:
            local.stop_requested = self.stop_requested
        result = local.run()
        self.stats = local.stats
        self.metrics["driver_levels"] = local.stats.depth
        if result.stopped != _HANDOFF:
            return attrs.evolve(result, engine=self.name)
        self.found = {prop: (kind, why, ("driver", where)) for prop, (kind, why, where) in local.found.items()}
        return self._spark_phase(self._hand_over, time.perf_counter())

    def _spark_phase(self, prepare, started, resumed=False) -> CheckResult:
        """The levels on Spark, from the files ``prepare(store)`` writes into a new store."""
        store = self._store = _Store.create(self.store_dir)
        self._owned = None
        leave_running = False
        try:
            level, self._counts, self._sources = prepare(store)
            self._phase = "spark"
            stopped = self.stop_requested
            if resumed and stopped is None:  # a checkpoint of a decided run: nothing to run
                stopped = stop_after_level(self.found, self.properties, self.options, self.stats.distinct,
                                           bool(level))
            with _quiet_py4j(not self.verbose):
                result = self._levels(started, store, level, stopped)
            if self.data_root is not None:
                self._save_level()  # what snapshot() returns once run() has returned
            return result
        except KeyboardInterrupt:
            leave_running = True  # see SparkEngine.run: stopping now could hang
            raise
        except (EngineError, CheckpointError):
            raise
        except Exception as e:
            if type(e).__module__.startswith(("py4j", "pyspark")):
                where = f" (master {self.master})" if self.master else ""
                raise EngineError(f"Spark failed{where}: {_one_line(e)}") from None
            raise
        finally:
            sc, owned = self._sc, self._owned
            self._sc = None
            if owned and not leave_running:
                sc.stop()
            store.remove()
            self._store = None

    def _session(self):
        """The SparkContext, started at the first level that needs it."""
        if self._sc is None:
            begin = time.perf_counter()
            self._sc, self._owned = spark_context(self.master, self.verbose, status=self.on_status)
            self.metrics["session_start_seconds"] = round(time.perf_counter() - begin, 3)
            self._sc.setJobGroup(self._group, "kmc breadth-first search (rows)", interruptOnCancel=False)
            if self._n is None:
                self._n = self.partitions or _rows_partitions(self._sc)
            if self.on_status is not None:
                self.on_status(f"Spark session ready (master {self._sc.master}, {self._n} partitions); "
                               "running the first level")
        return self._sc

    def cancel(self, reason="interrupted"):
        """Stop as soon as possible: abort the level being computed (it is dropped)."""
        self.stop_requested = reason
        if self._local is not None and self._local.stop_requested is None:
            self._local.stop_requested = reason
        sc = self._sc
        if sc is not None and self._canceller is None:
            import threading

            self._canceller = threading.Thread(target=_cancel_group, args=(sc, self._group),
                                               name="kmc-spark-cancel", daemon=True)
            self._canceller.start()

    def _driver_level(self, local):
        """``BatchEngine.on_level``: hand over to Spark once a level outgrows the limit."""
        self.stats = local.stats
        if self.on_level is not None:
            self.on_level(self)
        if self.stop_requested is not None:
            local.stop_requested = self.stop_requested
        elif local._frontier_size() > self.driver_level_limit:
            local.stop_requested = _HANDOFF

    def _hand_over(self, store):
        """Write the driver's seen-set (split by owner) and frontier (split by rank) into
        ``store``; return the level's size, its count per rank partition, and the owners
        that wrote each rank partition's share."""
        local, stats = self._local, self.stats
        self._session()
        n, depth = self._n, stats.depth
        seen_fps = np.concatenate(local.seen._runs + local.seen._level_runs)
        owners = _owners(seen_fps, n)
        self._runs = []
        for i in range(n):
            fps = np.sort(seen_fps[owners == i])
            store.save(store.run(i, depth), fps)
            self._runs.append([(depth, len(fps))])
        del seen_fps, owners
        rows = np.concatenate(local.frontier)
        fps = _fingerprints(self.kernel, rows, bool(self.options.symmetry))
        self._local_seen = local.seen
        self._handoff = {int(fp): len(local.seen) - len(rows) + i for i, fp in enumerate(fps.tolist())}
        self._handoff_depth = depth
        return (len(rows), *_split_frontier(store, depth, n, np.arange(len(rows), dtype=np.int64), fps, rows))

    def _levels(self, started, store, level, stopped) -> CheckResult:
        stats, symmetry = self.stats, bool(self.options.symmetry)
        counts, sources = self._counts, self._sources
        while level and stopped is None:
            if self.options.max_depth is not None and stats.depth >= self.options.max_depth:
                stopped = "max-depth"
                break
            sc = self._session()
            n = self._n
            t0 = time.perf_counter()
            depth = stats.depth
            offsets = np.concatenate(([0], np.cumsum(counts))).tolist()
            found = frozenset(self.found)
            grow = partial(_expand_partition, self.kernel, self.model, self.step_props, found, symmetry,
                           n, offsets, store.root, depth, sources, self.exchange == "store",
                           self._fail_first_attempt)
            own = partial(_own_partition, self.kernel, self.model, self.invariants, found, n, level,
                          store.root, depth + 1, self._runs)
            # One job, two stages: the rank partitions (expand their share of the
            # frontier, read from the store) and, after the shuffle to the owners, the
            # owners (merge with the seen runs, check, write the next frontier).
            job = (sc.parallelize(range(n), n).mapPartitionsWithIndex(grow)
                   .partitionBy(n, _owner).mapPartitionsWithIndex(own))
            summaries = self._collect(job)
            if summaries is None:  # cancelled: the level is dropped, the last one stands
                stopped = self.stop_requested
                break
            counts, sources, shipped = self._absorb(summaries, depth + 1)
            store.drop_front(depth)
            store.drop_successors(depth)
            level = sum(counts)
            if level:
                stats.depth += 1
                stats.levels.append(level)
            stats.distinct += level
            seconds = time.perf_counter() - t0
            self.metrics["spark_levels"].append((level, round(seconds, 3), shipped, round(self._busy, 3)))
            self.metrics["shuffle_bytes"] += shipped
            self._sources, self._counts = sources, counts
            self._tick(started, level)
            if self.on_level is not None:
                stats.queue = level
                self.on_level(self)
            stopped = stop_after_level(self.found, self.properties, self.options, stats.distinct, bool(level))
            if stopped is None and self.stop_requested is not None:
                stopped = self.stop_requested
        return self._result(stopped, level, started)

    def _collect(self, rdd):
        """Run the level's job; ``None`` when it was cancelled by a stop request."""
        try:
            return rdd.collect()
        except Exception as e:
            if self.stop_requested is not None:
                return None
            where = f" (master {self.master})" if self.master else ""
            raise EngineError(f"a Spark job failed at depth {self.stats.depth + 1}{where}: "
                              f"{_one_line(e)}") from None

    def _absorb(self, summaries, depth):
        """Add a level's summaries to the stats and its first violations to ``found``;
        take the owners' new seen runs (dropping the runs they merged).

        Returns the next level's count per rank partition, the owners that wrote a share
        of each rank partition, and the bytes shipped.
        """
        stats, names, n = self.stats, self.kernel.action_names, self._n
        counts = np.zeros(n, dtype=np.int64)
        sources = [[] for _ in range(n)]
        shipped = 0
        candidates: dict[str, tuple] = {}  # property -> (key, kind, explanation, where)
        busy = 0.0
        for index, per_target, new_codes, state_bad, metas, out_bytes, own_busy, runs in sorted(summaries,
                                                                                              key=lambda s: s[0]):
            counts += per_target
            for t in np.flatnonzero(per_target).tolist():
                sources[t].append(index)
            shipped += out_bytes
            busy += own_busy
            _add_counts(stats.new, names, new_codes)
            for prop, (key, why, fp) in state_bad.items():
                _keep_least(candidates, prop, (key, "always", why, ("fp", (depth, fp))))
            for terminal, generated, fired, step_bad, in_bytes, expand_busy in metas:
                shipped += in_bytes
                busy += expand_busy
                stats.terminal += terminal
                stats.generated += generated
                _add_counts(stats.fired, names, fired)
                for prop, (key, why, pfp, choice) in step_bad.items():
                    _keep_least(candidates, prop, (key, "step", why, ("step", (depth - 1, pfp, choice))))
            stale = {d for d, _ in self._runs[index]} - {d for d, _ in runs}
            for d in stale:
                self._store.drop_run(index, d)
            self._runs[index] = runs
        # The local engine checks step properties while expanding a level and state
        # invariants on its new states; either way a property's first violation is the
        # least key of this level.
        for prop, (_key, kind, why, where) in candidates.items():
            if prop not in self.found:
                self.found[prop] = (kind, why, where)
        self._busy = busy
        return counts.tolist(), sources, shipped

    def _tick(self, started, queue):
        if self.progress is None:
            return
        self.stats.queue = queue
        self.progress(attrs.evolve(self.stats, seconds=self.stats.seconds + time.perf_counter() - started,
                                   levels=list(self.stats.levels), fired=dict(self.stats.fired),
                                   new=dict(self.stats.new)))

    # -- checkpoints ------------------------------------------------------------------------

    def snapshot(self) -> dict:
        """The search at its last complete level, for ``checker.checkpoint``.

        Valid from ``on_level`` and after ``run()`` returned. While the levels run on the
        driver it is the driver's ``BatchEngine`` snapshot; once they run on Spark, the
        store's files of the level (every partition's seen runs and parent pointers, and
        the frontier) are linked, or copied, under ``data_dir(data_root, depth)`` first,
        once per level (``run()`` saves the last level before it returns whenever
        ``data_root`` is set), and the snapshot names them with their sizes and SHA-256.

        Raises:
            EngineError: the level's files are needed but were never saved (no
                ``data_root`` during ``run()``).
            CheckpointError: the level's files cannot be written.
        """
        base = {"engine": self.name, "format": SNAPSHOT_FORMAT}
        if self._phase == "driver":
            local = self._restored[1] if self._local is None else self._local.snapshot()
            return {**base, "phase": "driver", "stats": local["stats"], "found": local["found"], "local": local}
        self._save_level()
        _key, where, files = self._saved
        root = Path(self.data_root).resolve()
        if where.parent != root:
            # Resumed from another directory and stopped before a new level: the
            # checkpoint written here must not depend on the old directory.
            target = claim_data_dir(root, self.stats.depth)
            shutil.copytree(where, target, dirs_exist_ok=True)
            self._saved = _key, target, files
            where = target
        return {**base, "phase": "spark", "stats": attrs.asdict(self.stats), "found": dict(self.found),
                "data": where.name, "files": files, "runs": self._runs, "counts": self._counts,
                "sources": self._sources, "handoff": self._handoff, "handoff_depth": self._handoff_depth,
                "local_seen": self._local_seen, "partitions": self._n, "frontier": sum(self._counts)}

    def restore(self, snapshot: dict) -> None:
        """Continue from a ``snapshot()`` (of this model, properties and options) whose
        checkpoint directory is ``data_root``: the next ``run()`` re-splits the saved level
        for this run's partitions (their number may differ) and goes on.

        Raises:
            EngineError: the snapshot is not of this engine.
            CheckpointError: the level directory is missing or its files differ from
                those the snapshot lists (damaged, cut short, a file added or removed).
        """
        if snapshot.get("format") != SNAPSHOT_FORMAT:
            raise EngineError("the checkpoint was not written by the Spark rows engine")
        self.stats = Stats(**snapshot["stats"])
        self.found = dict(snapshot["found"])
        if snapshot["phase"] == "driver":
            self._restored = ("driver", snapshot["local"])
            return
        if self.data_root is None:
            raise EngineError("restore: set data_root to the checkpoint directory first")
        where = Path(self.data_root).resolve() / snapshot["data"]
        verify_files(where, snapshot["files"])
        self._restored = ("spark", where, snapshot)
        self._phase = "spark"
        self._runs, self._counts, self._sources = snapshot["runs"], snapshot["counts"], snapshot["sources"]
        self._handoff, self._handoff_depth = snapshot["handoff"], snapshot["handoff_depth"]
        self._local_seen, self._n = snapshot["local_seen"], snapshot["partitions"]
        self._saved = ((self.stats.depth, self.stats.distinct, self.stats.generated), where, snapshot["files"])

    def _save_level(self):
        """Link the store's files of the last complete level under ``data_dir(data_root,
        depth)``, unless done."""
        key = (self.stats.depth, self.stats.distinct, self.stats.generated)
        if self._saved is not None and self._saved[0] == key:
            return
        store = self._store
        if store is None or self.data_root is None:
            raise EngineError("snapshot: the level's files were not saved (set data_root before run())")
        target = claim_data_dir(Path(self.data_root).resolve(), self.stats.depth)
        try:
            target.mkdir()
            for i, runs in enumerate(self._runs):
                for d, _ in runs:
                    _link(store.run(i, d), target / f"run-{i:04d}-{d:06d}.npy")
                for d in range(self._handoff_depth + 1, self.stats.depth + 1):
                    meta = _meta_path(store.root, i, d)
                    if os.path.exists(meta):
                        _link(meta, target / f"meta-{i:04d}-{d:06d}.bin")
            for t, owners in enumerate(self._sources):
                for i in owners:
                    _link(store.front(self.stats.depth, t, i), target / f"front-{t:04d}-{i:04d}.bin")
            files = _digests(target)
        except OSError as e:
            shutil.rmtree(target, ignore_errors=True)
            raise CheckpointError(f"{target}: cannot save the level's states ({e.strerror or e})") from None
        self._saved = (key, target, files)

    def _load_saved(self, where, snap, store):
        """Write a saved level into ``store``, re-split for this run's partitions."""
        # The saved level's partition count unless one is asked for: a decided run is
        # reported again without starting Spark.
        n = self._n = self.partitions or snap["partitions"]
        depth, first = self.stats.depth, snap["handoff_depth"] + 1
        names = sorted(snap["files"])
        fps = np.concatenate([np.load(where / name) for name in names if name.startswith("run-")]
                             or [np.zeros(0, np.uint64)])
        fps.sort()
        cuts = np.searchsorted(_owners(fps, n), np.arange(n + 1))
        self._runs = []
        for i in range(n):
            store.save(store.run(i, depth), fps[cuts[i]:cuts[i + 1]])
            self._runs.append([(depth, int(cuts[i + 1] - cuts[i]))])
        del fps
        for d in range(first, depth + 1):
            parts = [_load(where / name, 3) for name in names if name.startswith("meta-") and name.endswith(f"-{d:06d}.bin")]
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
            return 0, [0] * n, [[] for _ in range(n)]
        keys, ffps, rows = (np.concatenate(a) for a in zip(*parts))
        order = np.argsort(keys, kind="stable")
        if len(order) != snap["frontier"]:
            raise CheckpointError(f"{where}: damaged (it holds {len(order)} frontier states, "
                                  f"not {snap['frontier']}); the checkpoint cannot be resumed, start a new run")
        return (len(order), *_split_frontier(store, depth, n, np.arange(len(order), dtype=np.int64),
                                             ffps[order], rows[order]))

    # -- results --------------------------------------------------------------------------

    def _result(self, stopped, frontier, started) -> CheckResult:
        stats = self.stats
        stats.seconds += time.perf_counter() - started  # the driver phase's time is in already
        stats.queue = frontier
        violations = {}
        for prop in (p.name for p in self.properties):
            if prop not in self.found:
                continue
            kind, why, (where_kind, where) = self.found[prop]
            if where_kind == "driver":
                if kind == "step":
                    init, choices = self._local.seen.path_to(where[0])
                    path = extend(self.model, replay_choices(self.model, init, choices), where[1])
                else:
                    init, choices = self._local.seen.path_to(where)
                    path = replay_choices(self.model, init, choices)
            elif where_kind == "step":
                depth, parent, choice = where
                init, choices = self._chain(depth, parent)
                path = extend(self.model, replay_choices(self.model, init, choices), choice)
            else:
                init, choices = self._chain(*where)
                path = replay_choices(self.model, init, choices)
            violations[prop] = Violation(prop, kind, why, path)
        complete = stopped is None or (stopped == "violation" and not frontier)
        return CheckResult(
            engine=self.name,
            checked=[p.name for p in self.properties],
            stats=stats,
            violations=violations,
            complete=complete,
            stopped=stopped,
            max_depth=self.options.max_depth,
        )

    def _chain(self, depth, fp):
        """``(init index, choices)`` of the state ``fp`` of depth ``depth``: its parent
        pointers followed in the store's per-level records back to a state the driver
        handed over, whose path the driver's own seen-set gives."""
        tail = []
        while depth > self._handoff_depth:
            parent, choice = self._store.parent(_owner_of(fp, self._n), depth, fp)
            tail.append(choice)
            fp, depth = parent, depth - 1
        if fp not in self._handoff:
            raise EngineError("trace rebuild: reached a handed-over state the driver does not know")
        init, choices = self._local.seen.path_to(self._handoff[fp])
        return init, choices + tail[::-1]


# -- the store --------------------------------------------------------------------------


class _Store:
    """The directory where a run keeps what outlives a level (TLC keeps its fingerprint
    set and its trace file on disk the same way): for every fingerprint partition ``i``,
    its sorted runs of fingerprints (``seen/iiii/run-DDDDDD.npy``, the newest named by the
    depth that wrote it) and, for every depth, its new states' fingerprints, parent
    fingerprints and choices (``seen/iiii/meta-DDDDDD.bin``); and the frontier of the
    next level, one file per rank partition and owner (``front/DDDDDD/tTTTT-pIIII.bin``).

    Every file is written whole under a temporary name and renamed, by a task whose
    output depends only on its inputs: a retried task rewrites the same bytes. The
    executors and the driver must all see the directory at the same path (on a cluster:
    a shared file system)."""

    def __init__(self, root):
        self.root = str(root)

    @classmethod
    def create(cls, parent=None):
        import tempfile

        try:
            if parent is not None:
                os.makedirs(parent, exist_ok=True)
            return cls(tempfile.mkdtemp(prefix="kmc-rows-", dir=parent))
        except OSError as e:
            raise EngineError(f"spark store: cannot create a directory in {parent or tempfile.gettempdir()} "
                              f"({e.strerror or e})") from None

    def remove(self):
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)

    # Paths (also used on the executors, through the module functions below).
    def run(self, i, depth):
        return _run_path(self.root, i, depth)

    def front(self, depth, t, i):
        return _front_path(self.root, depth, t, i)

    def save(self, path, *arrays):
        _save(path, *arrays)

    def drop_run(self, i, depth):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.run(i, depth))

    def drop_front(self, depth):
        import shutil

        shutil.rmtree(os.path.join(self.root, "front", f"{depth:06d}"), ignore_errors=True)

    def drop_successors(self, depth):
        import shutil

        shutil.rmtree(os.path.join(self.root, "succ", f"{depth:06d}"), ignore_errors=True)

    def parent(self, i, depth, fp):
        fps, parents, choices = _load(_meta_path(self.root, i, depth), 3)
        at = int(np.searchsorted(fps, np.uint64(fp)))
        if at == len(fps) or int(fps[at]) != fp:
            raise EngineError("trace rebuild: a state's parent is missing from the seen-set")
        return int(parents[at]), int(choices[at])


def _split_frontier(store, depth, n, keys, fps, rows):
    """Write a level (in rank order) into ``store`` as ``n`` rank partitions: partition
    ``j`` holds the ranks ``g`` with ``g * n // L == j``. Returns the count of each and
    the owners that wrote each (the driver, as owner 0)."""
    level = len(keys)
    bounds = [(j * level + n - 1) // n for j in range(n)] + [level]
    sources = []
    for j in range(n):
        cut = slice(bounds[j], bounds[j + 1])
        if bounds[j + 1] > bounds[j]:
            store.save(store.front(depth, j, 0), keys[cut], fps[cut], rows[cut])
            sources.append([0])
        else:
            sources.append([])
    return [bounds[j + 1] - bounds[j] for j in range(n)], sources


def _link(source, target):
    """Hard-link ``source`` as ``target`` (the store never rewrites a file), or copy it
    when they are on different file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _digests(directory) -> dict:
    """``{file name: (size, sha256)}`` of a saved level's files."""
    return digests(sorted(Path(directory).iterdir()))

def _run_path(root, i, depth):
    return os.path.join(root, "seen", f"{i:04d}", f"run-{depth:06d}.npy")


def _meta_path(root, i, depth):
    return os.path.join(root, "seen", f"{i:04d}", f"meta-{depth:06d}.bin")


def _succ_path(root, depth, o, i, s):
    return os.path.join(root, "succ", f"{depth:06d}", f"o{o:04d}-p{i:04d}-{s:09d}.bin")


def _front_path(root, depth, t, i):
    return os.path.join(root, "front", f"{depth:06d}", f"t{t:04d}-p{i:04d}.bin")


def _save(path, *arrays):
    """Write ``arrays`` to ``path`` whole: under a name of this process, then renamed."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        for a in arrays:
            np.save(f, np.ascontiguousarray(a), allow_pickle=False)
    os.replace(tmp, path)
    return sum(a.nbytes for a in arrays)


def _load(path, count):
    with open(path, "rb") as f:
        return [np.load(f, allow_pickle=False) for _ in range(count)]


def _owners(fps, n):
    """The fingerprint partition of each fingerprint: ``floor(fp * n / 2**64)`` (to 32
    bits), which grows with ``fp``, so that a sorted array of fingerprints splits into
    its owners' shares by position."""
    return ((fps >> np.uint64(32)) * np.uint64(n) >> np.uint64(32)).astype(np.int64)


def _owner_of(fp, n):
    return ((int(fp) >> 32) * n) >> 32


def _contains(runs, fps):
    """Which of the sorted ``fps`` are in the sorted runs."""
    hit = np.zeros(len(fps), dtype=bool)
    for run in runs:
        if not len(run) or not len(fps):
            continue
        at = np.searchsorted(run, fps)
        at[at == len(run)] = 0
        hit |= run[at] == fps
    return hit


def _least_per_fingerprint(keys, fps):
    """Indices of one successor per distinct fingerprint, the one with the least key (keys
    are distinct), in fingerprint order."""
    order = np.argsort(fps, kind="stable")
    sfps = fps[order]
    starts = np.flatnonzero(np.concatenate(([True], sfps[1:] != sfps[:-1])))
    if len(starts) == len(order):
        return order
    skeys = keys[order]
    least = np.minimum.reduceat(skeys, starts)
    sizes = np.diff(np.append(starts, len(order)))
    return order[skeys == np.repeat(least, sizes)]


# -- what runs on the executors -----------------------------------------------------------
# Module-level functions bound with functools.partial. On its way through the shuffle a
# record is (owner, ("s", keys, fps, parent fps, codes, rows)) or (owner, ("m", meta)).


def _fingerprints(kernel, rows, symmetry):
    return fingerprint_rows(kernel.canonical(rows) if symmetry else rows)


def _expand_partition(kernel, model, step_props, found, symmetry, n, offsets, root, depth, sources,
                      through_store, fail_first_attempt, index, _records):
    """Stage 1: expand rank partition ``index`` of the frontier of ``depth`` (its first
    rank is ``offsets[index]``), read from the store.

    Yields ``(owner, ("s", keys, fps, parent fps, codes, rows))`` for the successors owned
    by ``owner`` (per slice of the frontier, the successor with the least key of each
    fingerprint), then ``(index, ("m", (terminal, generated, fired per code, step
    violations, bytes, seconds)))`` where a step violation maps a property to its least
    ``(key, explanation, parent fp, choice)`` in this partition.
    """
    if fail_first_attempt and index == 0:
        from pyspark import TaskContext

        if TaskContext.get().attemptNumber() == 0:
            _test_fault(fail_first_attempt)
    clock = time.perf_counter()
    names = kernel.action_names
    terminal = generated = shipped = 0
    fired = np.zeros(len(names), dtype=np.int64)
    step_bad: dict[str, tuple] = {}
    checks = [p for p in step_props if p.name not in found]
    base = offsets[index]
    busy = 0.0
    parts = [_load(_front_path(root, depth, index, i), 3) for i in sources[index]]
    if parts:
        keys, fps, rows = (np.concatenate(a) if len(parts) > 1 else a[0] for a in zip(*parts))
        order = np.argsort(keys, kind="stable")  # the rank order: this partition's frontier
        fps, rows = fps[order], rows[order]
        del keys, order, parts
        for s in range(0, len(rows), SLICE_ROWS):
            parts = []
            for c in range(s, min(s + SLICE_ROWS, len(rows)), _CHUNK):
                chunk = rows[c:c + _CHUNK]
                parents, choices, codes, succ = kernel.expand(chunk)
                generated += len(succ)
                terminal += int(np.count_nonzero(np.bincount(parents, minlength=len(chunk)) == 0))
                fired += np.bincount(codes, minlength=len(names))
                if not len(succ):
                    continue
                keys = (base + c + parents.astype(np.int64)) * 256 + choices
                for prop in checks:
                    if prop.name in step_bad:
                        continue  # an earlier chunk has a smaller key
                    mask = kernel.step_mask(prop.name, chunk, parents, succ)
                    if mask is None:
                        mask = np.array([_step_why(model, kernel, prop, chunk[p], ch) is not None
                                         for p, ch in zip(parents.tolist(), choices.tolist())], dtype=bool)
                    hits = np.flatnonzero(mask)
                    if len(hits):
                        i = int(hits[np.argmin(keys[hits])])
                        why = _step_why(model, kernel, prop, chunk[parents[i]], int(choices[i]))
                        if why is None:
                            raise EngineError(f"the batch kernel and the model disagree on {prop.name}")
                        step_bad[prop.name] = (int(keys[i]), why, int(fps[c + parents[i]]), int(choices[i]))
                parts.append((keys, _fingerprints(kernel, succ, symmetry), fps[c + parents], codes, succ))
            if not parts:
                continue
            keys, sfps, pfps, codes, succ = (np.concatenate(a) for a in zip(*parts))
            del parts
            pick = _least_per_fingerprint(keys, sfps)  # in fingerprint order, so by owner
            keys, sfps, pfps, codes, succ = keys[pick], sfps[pick], pfps[pick], codes[pick], succ[pick]
            cuts = np.searchsorted(_owners(sfps, n), np.arange(n + 1))
            for o in range(n):
                a, b = int(cuts[o]), int(cuts[o + 1])
                if b > a:
                    arrays = (keys[a:b], sfps[a:b], pfps[a:b], codes[a:b], succ[a:b])
                    shipped += sum(x.nbytes for x in arrays)
                    if through_store:
                        path = _succ_path(root, depth, o, index, s)
                        _save(path, *arrays)
                        payload = ("f", path)
                    else:
                        payload = ("s", *arrays)
                    busy += time.perf_counter() - clock
                    yield (o, payload)
                    clock = time.perf_counter()
    busy += time.perf_counter() - clock
    yield (index, ("m", (terminal, generated, fired, step_bad, shipped, busy)))


def _step_why(model, kernel, prop, row, choice):
    state = kernel.decode(row)
    action, nxt = successors(model, state)[choice]
    return prop.check(model, state, action, nxt)


def _own_partition(kernel, model, invariants, found, n, level, root, depth, runs, index, records):
    """Stage 2: fingerprint partition ``index`` takes the successors routed to it, keeps
    the least key of each fingerprint, drops those in its seen runs, writes the new ones
    to the store (a seen run, merged with older ones as ``checker.seen.CompactSeenSet``
    merges, the level's parent pointers, and their rows routed to their next rank
    partition ``g * n // level``) and checks the invariants on them.

    Yields one summary ``(index, new per rank partition, new per code, state violations,
    expansion summaries, bytes written, seconds, runs)``; a state violation maps a
    property to its least ``(key, explanation, fp)``; ``runs`` lists the ``(depth,
    length)`` of the partition's seen runs from now on.
    """
    names = kernel.action_names
    parts, metas = [], []
    clock = time.perf_counter()
    for _key, value in records:
        if value[0] == "s":
            parts.append(value[1:])
        elif value[0] == "f":
            parts.append(_load(value[1], 5))
        else:
            metas.append(value[1])
    new_codes = np.zeros(len(names), dtype=np.int64)
    per_target = np.zeros(n, dtype=np.int64)
    state_bad: dict[str, tuple] = {}
    shipped = 0
    mine = list(runs[index])
    if parts:
        keys, fps, pfps, codes, rows = (np.concatenate(a) if len(parts) > 1 else a[0] for a in zip(*parts))
        del parts
        sel = _least_per_fingerprint(keys, fps)  # sorted by fingerprint
        old = [np.load(_run_path(root, index, d), mmap_mode="r") for d, _ in mine]
        sel = sel[~_contains(old, fps[sel])]
        del old
        if len(sel):
            keys, fps, pfps, codes, rows = keys[sel], fps[sel], pfps[sel], codes[sel], rows[sel]
            _save(_meta_path(root, index, depth), fps, pfps, (keys & 255).astype(np.int16))
            # The new run, merged with the newest runs while it is at least half as large.
            run, mine = fps, mine + [(depth, len(fps))]
            while len(mine) > 1 and 2 * mine[-1][1] >= mine[-2][1]:
                d, _ = mine[-2]
                run = np.concatenate((np.load(_run_path(root, index, d)), run))
                run.sort(kind="stable")  # two sorted runs: a linear merge
                mine[-2:] = [(depth, len(run))]
            _save(_run_path(root, index, depth), run)
            del run
            new_codes += np.bincount(codes, minlength=len(names))
            for prop in invariants:
                if prop.name in found:
                    continue
                mask = kernel.invariant_mask(prop.name, rows)
                if mask is None:
                    mask = np.array([prop.check(model, kernel.decode(r)) is not None for r in rows], dtype=bool)
                if mask.any():
                    hits = np.flatnonzero(mask)
                    j = int(hits[np.argmin(keys[hits])])
                    why = prop.check(model, kernel.decode(rows[j]))
                    if why is None:
                        raise EngineError(f"the batch kernel and the model disagree on {prop.name}")
                    state_bad[prop.name] = (int(keys[j]), why, int(fps[j]))
            order = np.argsort(keys)
            keys, fps, rows = keys[order], fps[order], rows[order]
            target = (keys >> 8) * n // level  # grows with the key
            per_target += np.bincount(target, minlength=n)
            cuts = np.searchsorted(target, np.arange(n + 1))
            for t in range(n):
                a, b = int(cuts[t]), int(cuts[t + 1])
                if b > a:
                    shipped += _save(_front_path(root, depth, t, index), keys[a:b], fps[a:b], rows[a:b])
    busy = time.perf_counter() - clock
    yield (index, per_target, new_codes, state_bad, metas, shipped, busy, mine)


# -- driver helpers ---------------------------------------------------------------------


def _rows_partitions(sc) -> int:
    configured = sc.getConf().get("spark.default.parallelism")
    if configured:
        return _default_partitions(sc)
    return max(1, sc.defaultParallelism)


def _add_counts(counter, names, counts):
    for code, k in enumerate(np.asarray(counts).tolist()):
        if k:
            counter[names[code]] = counter.get(names[code], 0) + k


def _keep_least(candidates, prop, entry):
    old = candidates.get(prop)
    if old is None or entry[0] < old[0]:
        candidates[prop] = entry


def _check_master(master) -> None:
    """Refuse a malformed or unreachable master before any work, as the Spark session
    would (``checker.spark_master``), unless a session is already running."""
    try:
        from pyspark import SparkContext
    except ImportError as e:
        raise EngineError(f"the spark engine needs pyspark ({e})") from None
    if SparkContext._active_spark_context is None:
        from .spark_master import DEFAULT_MASTER, check_reachable, validate_master

        check_reachable(validate_master(DEFAULT_MASTER if master is None else master))
