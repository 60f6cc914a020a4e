"""The Spark engine on rows: the batch engine's search, distributed with Apache Spark.

Used for every model that has a batch kernel (``model.batch_kernel()``, see
``checker.batch``); it reports exactly what ``checker.batch.BatchEngine`` reports (counts,
per-action counters, verdicts, counterexample paths, choices and explanations).

No Python object per state goes through Spark: states are rows, always moved as whole
numpy arrays, and what outlives a level is kept in files (the *store*,
``checker.spark_rows_store.Store``); the executors run ``checker.spark_rows_tasks``.

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
   one small record per file goes through Spark's shuffle.
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

import os
import shutil
import time
from functools import partial
from pathlib import Path

import attrs
import numpy as np

from .batch import BatchEngine, add_counts
from .checkpoint import CheckpointError, claim_data_dir
from .errors import EngineError, UsageError
from .kernel import canonical_encoder, keep_least, require_symmetric, result_of, split_properties, stop_after_level
from .local import Options
from .protocol import POSSIBLY
from .result import CheckResult, Stats, Violation
from .spark_rows_store import Store, _digests, _link, _load, _meta_path, _owner_of, _owners, _split_frontier
from .spark_rows_tasks import _expand_partition, _fingerprints, _own_partition, _owner
from .spark_session import _cancel_group, _default_partitions, _one_line, _quiet_py4j, partitions_bad, spark_context
from .spark_store import verify_files
from .states_kernel import StatesKernel
from .trace import extend, replay_choices

SNAPSHOT_FORMAT = "spark-rows-1"  # the snapshot format of this engine
STATES_FORMAT = "spark-states-1"  # ... on the per-state path (rows of Python states)
DRIVER_LEVEL_LIMIT = 50_000  # levels up to this many states are expanded on the driver
_HANDOFF = "kmc-handoff"  # the driver phase's stop reason when a level outgrows the limit


class SparkRowsEngine:
    """Breadth-first exploration of a model with a batch kernel, on Apache Spark.

    Same hooks as ``checker.driver.LevelDriver`` (``run()``, ``stop_requested``,
    ``on_level``, ``snapshot()``/``restore()``) and ``cancel()``; gives exactly the
    results of ``checker.batch.BatchEngine`` (and so of ``checker.local.LocalEngine``).

    Args:
        model, properties, options, progress: as ``checker.local.LocalEngine``.
        master: the Spark master URL (default ``local[*]``); partitions: the number of
            partitions (default: Spark's parallelism); verbose: Spark's own log lines.
        per_state: run the model's own successor function over rows of Python states
            (``checker.states_kernel.StatesKernel``) instead of its batch kernel; a model
            without a batch kernel always runs so.
        driver_level_limit: leading levels of at most this many states are expanded on
            the driver (``BatchEngine``); 0 hands over to Spark right after the initial
            states.

    After ``run()``, ``metrics`` holds what ``kmc bench`` reports: the session's start
    time, every Spark level's states and seconds, and the bytes routed through both
    shuffles.
    """

    name = "spark"
    path = "rows"

    def __init__(
        self,
        model,
        properties=None,
        options=None,
        progress=None,
        *,
        master=None,
        partitions=None,
        verbose=False,
        checkpoint_dir=None,
        driver_level_limit=DRIVER_LEVEL_LIMIT,
        store_dir=None,
        per_state=False,
        on_level=None,
        on_status=None,
        data_root=None,
        _fail_first_attempt=False,
    ):
        self.model = model
        for p in model.properties() if properties is None else properties:
            if p.kind == POSSIBLY:
                raise UsageError(
                    f"{p.name} (an always-possibly property) is checked by the local engine only; "
                    "run without --engine spark"
                )
        if per_state or not hasattr(model, "batch_kernel"):
            # The per-state model as rows of Python states: the same search, for models
            # with no batch kernel and for comparing a batch kernel with its model.
            self.kernel = StatesKernel(model)
            self.path, self._format = "per-state", STATES_FORMAT
        else:
            self.kernel = model.batch_kernel()
            self._format = SNAPSHOT_FORMAT
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
        self.data_root = data_root  # the checkpoint directory snapshot() saves levels under
        self._store = None
        self._n = None
        self._phase = "driver"  # then "spark", once the store holds the search
        self._restored = None  # what restore() gave run(): ("driver", snapshot) or ("spark", dir, snapshot)
        self._saved = None  # (level key, directory, files) of the last level saved
        self._runs = self._counts = self._sources = None
        self._local_seen = self._handoff = self._handoff_depth = None
        self._owned = None
        # Test hook: every expansion task of rank partition 0 fails on its first attempt
        # (see checker.spark_rows_tasks._test_fault).
        self._fail_first_attempt = _fail_first_attempt
        self.stop_requested = None
        self.on_level = on_level
        self.on_status = on_status  # called with a short message while Spark starts
        self.stats = Stats()
        # property -> (kind, explanation, where); where is ("driver", number) or
        # ("driver", (number, choice)) for a violation found on the driver, ("fp", fp) or
        # ("step", (parent fp, choice)) for one found on Spark.
        self.found: dict[str, tuple] = {}
        self.metrics: dict = {"session_start_seconds": None, "spark_levels": [], "shuffle_bytes": 0, "driver_levels": 0}
        self._local = None
        self._sc = None
        self._group = f"kmc-rows-{id(self):x}"
        self._canceller = None
        if self.options.symmetry:
            require_symmetric(self.properties)
            if isinstance(self.kernel, StatesKernel):
                canonical_encoder(model)  # refuses a model that declares no symmetries

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
            Store.create(self.store_dir).remove()  # likewise: not after hours on the driver
        started = time.perf_counter()
        restored, self._restored = self._restored, None
        local = self._local = BatchEngine(
            self.model, self.properties, self.options, self.progress, kernel=self.kernel, on_level=self._driver_level
        )
        if restored is not None and restored[0] == "spark":
            snap = restored[2]
            local.search.seen = self._local_seen
            self._n = None  # chosen again: this run's partitions, else the saved level's
            self._handoff, self._handoff_depth = snap["handoff"], snap["handoff_depth"]
            return self._spark_phase(partial(self._load_saved, restored[1], snap), started, resumed=True)
        if restored is not None:
            local.restore(restored[1])
        else:
            local.start()
        if local.frontier_size() > self.driver_level_limit and local.stop_reason_after_level() is None:
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
        store = self._store = Store.create(self.store_dir)
        self._owned = None
        leave_running = False
        try:
            level, self._counts, self._sources = prepare(store)
            self._phase = "spark"
            stopped = self.stop_requested
            if resumed and stopped is None:  # a checkpoint of a decided run: nothing to run
                stopped = stop_after_level(self.found, self.properties, self.options, self.stats.distinct, bool(level))
            with _quiet_py4j(not self.verbose):
                result = self._levels(started, store, level, stopped)
            if self.data_root is not None:
                self._save_level()  # what snapshot() returns once run() has returned
            return result
        except KeyboardInterrupt:
            leave_running = True  # SparkContext.stop() inside a signal's unwinding can hang
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
                self.on_status(
                    f"Spark session ready (master {self._sc.master}, {self._n} partitions); running the first level"
                )
        return self._sc

    def cancel(self, reason="interrupted"):
        """Stop as soon as possible: abort the level being computed (it is dropped)."""
        self.stop_requested = reason
        if self._local is not None and self._local.stop_requested is None:
            self._local.stop_requested = reason
        sc = self._sc
        if sc is not None and self._canceller is None:
            import threading

            self._canceller = threading.Thread(
                target=_cancel_group, args=(sc, self._group), name="kmc-spark-cancel", daemon=True
            )
            self._canceller.start()

    def _driver_level(self, local):
        """``BatchEngine.on_level``: hand over to Spark once a level outgrows the limit."""
        self.stats = local.stats
        if self.on_level is not None:
            self.on_level(self)
        if self.stop_requested is not None:
            local.stop_requested = self.stop_requested
        elif local.frontier_size() > self.driver_level_limit:
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
            grow = partial(
                _expand_partition,
                self.kernel,
                self.model,
                self.step_props,
                found,
                symmetry,
                n,
                offsets,
                store.root,
                depth,
                sources,
                self._fail_first_attempt,
            )
            own = partial(
                _own_partition,
                self.kernel,
                self.model,
                self.invariants,
                found,
                n,
                level,
                store.root,
                depth + 1,
                self._runs,
            )
            # One job, two stages: the rank partitions (expand their share of the
            # frontier, read from the store) and, after the shuffle to the owners, the
            # owners (merge with the seen runs, check, write the next frontier).
            job = (
                sc.parallelize(range(n), n)
                .mapPartitionsWithIndex(grow)
                .partitionBy(n, _owner)
                .mapPartitionsWithIndex(own)
            )
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
            raise EngineError(f"a Spark job failed at depth {self.stats.depth + 1}{where}: {_one_line(e)}") from None

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
        for index, per_target, new_codes, state_bad, metas, out_bytes, own_busy, runs in sorted(
            summaries, key=lambda s: s[0]
        ):
            counts += per_target
            for t in np.flatnonzero(per_target).tolist():
                sources[t].append(index)
            shipped += out_bytes
            busy += own_busy
            add_counts(stats.new, names, new_codes)
            for prop, (key, why, fp) in state_bad.items():
                keep_least(candidates, prop, (key, "always", why, ("fp", (depth, fp))))
            for terminal, generated, fired, step_bad, in_bytes, expand_busy in metas:
                shipped += in_bytes
                busy += expand_busy
                stats.terminal += terminal
                stats.generated += generated
                add_counts(stats.fired, names, fired)
                for prop, (key, why, pfp, choice) in step_bad.items():
                    keep_least(candidates, prop, (key, "step", why, ("step", (depth - 1, pfp, choice))))
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
        self.progress(
            attrs.evolve(
                self.stats,
                seconds=self.stats.seconds + time.perf_counter() - started,
                levels=list(self.stats.levels),
                fired=dict(self.stats.fired),
                new=dict(self.stats.new),
            )
        )

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
        base = {"engine": self.name, "format": self._format}
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
        return {
            **base,
            "phase": "spark",
            "stats": attrs.asdict(self.stats),
            "found": dict(self.found),
            "data": where.name,
            "files": files,
            "runs": self._runs,
            "counts": self._counts,
            "sources": self._sources,
            "handoff": self._handoff,
            "handoff_depth": self._handoff_depth,
            "local_seen": self._local_seen,
            "partitions": self._n,
            "frontier": sum(self._counts),
        }

    def restore(self, snapshot: dict, directory=None) -> None:
        """Continue from a ``snapshot()`` (of this model, properties and options) whose
        checkpoint directory is ``directory`` (default ``data_root``): the next ``run()``
        re-splits the saved level for this run's partitions (their number may differ) and
        goes on.

        Raises:
            EngineError: the snapshot is not of this engine.
            CheckpointError: the level directory is missing or its files differ from
                those the snapshot lists (damaged, cut short, a file added or removed).
        """
        if snapshot.get("format") not in (SNAPSHOT_FORMAT, STATES_FORMAT):
            raise CheckpointError(
                "the checkpoint was written by the retired per-state Spark engine, whose "
                "format this kmc no longer reads; start a new run"
            )
        if snapshot["format"] != self._format:
            path = "--per-state" if snapshot["format"] == STATES_FORMAT else "without --per-state"
            raise EngineError(f"the checkpoint was written on the other path of the Spark engine; resume it {path}")
        self.stats = Stats(**snapshot["stats"])
        self.found = dict(snapshot["found"])
        if snapshot["phase"] == "driver":
            self._restored = ("driver", snapshot["local"])
            return
        directory = self.data_root if directory is None else directory
        if directory is None:
            raise EngineError("restore: name the checkpoint directory")
        where = Path(directory).resolve() / snapshot["data"]
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
        fps = np.concatenate(
            [np.load(where / name) for name in names if name.startswith("run-")] or [np.zeros(0, np.uint64)]
        )
        fps.sort()
        cuts = np.searchsorted(_owners(fps, n), np.arange(n + 1))
        self._runs = []
        for i in range(n):
            store.save(store.run(i, depth), fps[cuts[i] : cuts[i + 1]])
            self._runs.append([(depth, int(cuts[i + 1] - cuts[i]))])
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
            return 0, [0] * n, [[] for _ in range(n)]
        keys, ffps, rows = (np.concatenate(a) for a in zip(*parts))
        order = np.argsort(keys, kind="stable")
        if len(order) != snap["frontier"]:
            raise CheckpointError(
                f"{where}: damaged (it holds {len(order)} frontier states, "
                f"not {snap['frontier']}); the checkpoint cannot be resumed, start a new run"
            )
        return (
            len(order),
            *_split_frontier(store, depth, n, np.arange(len(order), dtype=np.int64), ffps[order], rows[order]),
        )

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
        return result_of(self, violations, stopped, frontier, stats)

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


# -- driver helpers ---------------------------------------------------------------------


def _rows_partitions(sc) -> int:
    configured = sc.getConf().get("spark.default.parallelism")
    if configured:
        return _default_partitions(sc)
    return max(1, sc.defaultParallelism)


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
