"""The Spark engine: the local engine's breadth-first search, distributed with Apache Spark.

The search is level-synchronous, like ``checker.local``. Every state and every seen
fingerprint lives in one RDD, partitioned by fingerprint: partition ``fp % n`` owns the
fingerprint ``fp``. Each partition of that RDD holds

- one *seen block*: the partition's share of the seen-set, one flat array of
  fingerprints (no parent pointers: every frontier state carries its path instead);
- the partition's share of the frontier (the newest level), as pickled chunks of
  ``(fingerprint, path, state)``, where ``path = (init_index, choice, ...)``;
- one summary record: what the driver needs to know about the level.

One level is one Spark job of two stages. The first expands the frontier on the
executors with the shared kernel (``checker.kernel.expand``), drops the successors its
own partition has already seen, and routes the others to the partitions that own their
fingerprints (a shuffle of pickled blobs, one per chunk and owner). The second reads
each partition's seen block and its incoming successors side by side (the union of two
RDDs with the same partitioner, which Spark lays out partition by partition, so the
seen-set never moves), drops what was seen, checks the invariants on the new states, and
writes the next version of the partition. The driver collects only the summaries:
counts, per-action counters and, per property, the violation with the least path.

Why the counterexamples equal the local engine's: the local engine expands a level in
discovery order and successors in action order, so the path it reports for a state is the
lexicographically least of its shortest paths, and the violation it reports for a
property is the one with the least path in the first level where the property fails.
This engine carries each frontier state's path, keeps the least path when one
fingerprint arrives several times in a level, and picks the least path among a level's
violations, so both engines report the same paths; the full states of a counterexample
are recovered on the driver by replaying the path (``checker.trace.replay_choices``).

Fault tolerance: tasks have no side effects besides the data they return, and every
count is computed from that data (no accumulators), so a task Spark retries or runs twice
cannot change a result. Lineage is cut after every level: the new RDD is persisted and
locally checkpointed (or, with ``checkpoint_dir``, checkpointed to that directory), and
the previous level's RDD is unpersisted.

Checkpoints for resuming (``snapshot``/``restore``, driven by ``checker.checkpoint``): a
level's partitions, without their summaries, are saved with ``saveAsPickleFile`` under
``data_dir(data_root, depth)``, and the checkpoint file written after them names the
directory and the size and SHA-256 of its part files. Resuming loads them with
``pickleFile`` and re-routes every fingerprint to ``fp % n`` for this run's ``n``, which
can differ from the saved run's: no result depends on the order or chunking of states
inside a partition, because every choice the engine makes is by least path.

Known limitation: a local checkpoint lives in the executors' block managers. When an
executor is lost (a cluster node dies), the blocks it held cannot be recomputed and the
run fails with an ``EngineError``; give ``checkpoint_dir`` (a directory every node can
reach, e.g. on HDFS) to survive that, at the price of writing the seen-set once a level.

This module is the driver's side: the level loop, the summaries, checkpoints and results.
The tasks the executors run are in ``checker.spark_tasks`` (with their pickler,
``checker.spark_pickle``), a saved level's files are checked by ``checker.spark_store``,
and starting Spark and keeping its logs quiet is ``checker.spark_session``'s job.
"""

from __future__ import annotations

import shutil
import threading
import time
from functools import partial
from pathlib import Path

import attrs

from .checkpoint import CheckpointError, claim_data_dir
from .errors import EngineError
from .fingerprint import fingerprint
from .kernel import keep_least, result_of, split_properties, stop_after_level
from .local import Options
from .result import CheckResult, Stats, Violation
from .spark_master import MAX_PARTITIONS
from .spark_pickle import dumps
from .spark_session import (_cancel_group, _default_partitions, _one_line, _quiet_py4j, _union, partitions_bad,
                            spark_context)
from .spark_store import manifest, verify_level
from .spark_tasks import (_assemble_partition, _expand_partition, _is_level_data, _is_summary, _merge_partition,
                          _owner, _payload, _route_saved)
from .trace import replay_choices


class SparkEngine:
    """Breadth-first exploration of a model on Apache Spark.

    Gives exactly the ``LocalEngine``'s counts, verdicts and counterexample paths.

    Args:
        model: an object following ``checker.protocol.Model``; it, its states and the
            property functions are pickled to the executors.
        properties: the properties to check (default: all of ``model.properties()``).
        options: a ``checker.local.Options`` (``progress_seconds`` is not used: progress
            is reported once a level).
        progress: called with a ``Stats`` snapshot after every level.
        master: the Spark master URL for a session this engine creates (default
            ``"local[*,4]"``: four attempts per task, so a crashed worker costs a retry); ignored when a SparkContext is already running (for example
            under ``spark-submit``), which is then used.
        partitions: how many partitions the state space is split into (default:
            ``spark.default.parallelism`` if set, else twice the default parallelism).
        verbose: keep Spark's own log messages.
        checkpoint_dir: checkpoint every level reliably into this directory instead of
            checkpointing locally (see the module's docstring).

    Set ``stop_requested`` to a reason (e.g. ``"interrupted"``) from another thread or a
    signal handler to stop at the next level boundary; ``cancel()`` also aborts the level
    being computed, whose partial work is then dropped.

    Checkpoints (see ``checker.checkpoint``): set ``data_root`` to the checkpoint
    directory and ``on_level`` to a callback; ``snapshot()``, valid in ``on_level`` and
    after ``run()``, saves the level's partitions under ``data_dir(data_root, depth)``
    (with ``saveAsPickleFile``) and returns a dict naming them; ``restore()`` before
    ``run()`` continues from such a dict, on any number of partitions. The directory
    must be reachable at the same path from the driver and every executor (always true
    with a ``local`` master; on a cluster, a shared file system).
    """

    name = "spark"

    def __init__(self, model, properties=None, options=None, progress=None, *,
                 master=None, partitions=None, verbose=False, checkpoint_dir=None,
                 _fail_first_attempt=False):
        self.model = model
        self.properties = list(model.properties() if properties is None else properties)
        self.invariants, self.step_props = split_properties(self.properties)
        self.options = options or Options()
        self.progress = progress
        self.master = master
        self.partitions = partitions
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        # Test hook: every expansion task of partition 0 fails on its first attempt, so
        # that Spark retries it; the result must not change.
        self._fail_first_attempt = _fail_first_attempt
        self.stop_requested = None
        self.on_level = None  # called with the engine at every level boundary
        # Called with a short message at each start-up point (the JVM, the session, the
        # first job), which can take tens of seconds before the first level is counted.
        self.on_status = None
        self.data_root = None  # the checkpoint directory snapshot() saves levels under
        self.stats = Stats()
        self.found: dict[str, tuple] = {}  # property -> (kind, explanation, path, fp)
        self._sc = None
        self._group = f"kmc-{id(self):x}"
        self._canceller = None  # the thread that cancels the running job (see cancel)
        # The last complete level: its RDD (while run() runs) and its number of states.
        self._current = None
        self._frontier = 0
        # Where the last complete level's data is saved: ((depth, distinct, generated),
        # directory, {file name: (size, sha256)}), or None.
        self._saved = None
        self._restored = None  # the directory run() loads its first level from
        self._partitions_used = None

    # -- the search ---------------------------------------------------------------

    def run(self) -> CheckResult:
        """Explore, and return the result (with full counterexample paths).

        Raises:
            EngineError: Spark could not start, or a Spark job failed.
        """
        if partitions_bad(self.partitions):
            raise EngineError(f"spark partitions must be an integer from 1 to {MAX_PARTITIONS}, "
                              f"got {self.partitions!r}")
        started = time.perf_counter()
        if self._restored is not None:
            # A restored run may be decided already (a violation, an empty frontier, its
            # depth limit): its result needs no Spark.
            stopped = self._stop_reason_after_level(self._frontier)
            if stopped is None and self._frontier and self._at_max_depth():
                stopped = "max-depth"
            if stopped is not None or not self._frontier:
                return self._result(stopped, self._frontier, started)
        sc, owned = spark_context(self.master, self.verbose, status=self._status)
        self._sc = sc
        leave_running = False
        try:
            with _quiet_py4j(not self.verbose):
                return self._explore(sc, started)
        except KeyboardInterrupt:
            # A second Ctrl-C, most likely inside a py4j call whose answer is still on
            # this thread's connection: stopping the context now could hang. The JVM
            # exits with this process (PySpark's gateway watches its stdin).
            leave_running = True
            raise
        except EngineError:
            raise
        except Exception as e:  # py4j: the context died under us (e.g. the master never answered)
            if type(e).__module__.startswith(("py4j", "pyspark")) and self.stop_requested is not None:
                # A second Ctrl-C broke a py4j call on this thread: the user asked to stop
                # now, which is an interrupt (130), not a failure of Spark (2).
                leave_running = True
                raise KeyboardInterrupt from None
            if type(e).__module__.startswith(("py4j", "pyspark")):
                where = f" (master {self.master})" if self.master else ""
                raise EngineError(f"Spark failed{where}: {_one_line(e)}") from None
            raise
        finally:
            self._sc = None
            self._current = None
            if owned and not leave_running:
                sc.stop()

    def _status(self, message):
        if self.on_status is not None:
            self.on_status(message)

    def cancel(self, reason="interrupted"):
        """Stop as soon as possible: abort the level being computed (it is dropped).

        Safe to call from a signal handler: the job is cancelled from another thread,
        because PySpark gives each thread its own py4j connection and the handler may
        have interrupted a call on this thread's.
        """
        self.stop_requested = reason
        sc = self._sc
        if sc is not None and self._canceller is None:
            self._canceller = threading.Thread(target=_cancel_group, args=(sc, self._group),
                                               name="kmc-spark-cancel", daemon=True)
            self._canceller.start()

    def _explore(self, sc, started) -> CheckResult:
        model, stats = self.model, self.stats
        n = self._partitions_used = self.partitions or _default_partitions(sc)
        self._status(f"Spark session ready (master {sc.master}, {n} partitions); running the first job")
        sc.setJobGroup(self._group, "kmc breadth-first search", interruptOnCancel=False)
        if self.checkpoint_dir:
            sc.setCheckpointDir(self.checkpoint_dir)
        merge = partial(_merge_partition, model, self.invariants)
        grow = partial(_expand_partition, model, self.step_props, n, self._fail_first_attempt)

        if self._restored is not None:
            current = self._load(sc, n)
            if current is None:  # cancelled while loading: nothing has changed
                return self._result(self.stop_requested, self._frontier, started)
            frontier = self._frontier
        else:
            # Level 1: the initial states, deduplicated on the driver (they are few).
            inits = model.init_states()
            buckets: dict[int, list] = {}
            where = set()
            for i, state in enumerate(inits):
                fp = fingerprint(model, state)
                if fp not in where:
                    where.add(fp)
                    buckets.setdefault(fp % n, []).append((fp, (i,), None, None, state))
            blobs = [(owner, dumps(items)) for owner, items in buckets.items()]
            start = sc.parallelize(blobs, max(1, min(n, len(blobs)))).partitionBy(n, _owner)
            current = start.mapPartitionsWithIndex(merge, preservesPartitioning=True)
            summaries = self._materialize(current)
            if summaries is None:
                return self._result(self.stop_requested, 0, started)
            stats.generated = len(inits)
            level_new = self._absorb(summaries)
            stats.depth = 1 if level_new else 0
            stats.levels = [level_new]
            frontier = level_new
        self._current, self._frontier = current, frontier
        stopped = self._stop_reason_after_level(frontier)

        while frontier and stopped is None:
            if self.stop_requested is not None:
                stopped = self.stop_requested
                break
            if self._at_max_depth():
                stopped = "max-depth"
                break
            routed = current.mapPartitionsWithIndex(grow).partitionBy(n, _owner)
            both = _union(sc, current, routed)
            following = both.mapPartitionsWithIndex(merge, preservesPartitioning=True)
            summaries = self._materialize(following)
            if summaries is None:  # cancelled: the level is dropped, the last one stands
                stopped = self.stop_requested
                break
            current.unpersist()
            current = following
            frontier = self._absorb(summaries)
            if frontier:
                stats.depth += 1
                stats.levels.append(frontier)
            self._current, self._frontier = current, frontier
            self._tick(started, frontier)
            if self.on_level is not None:
                stats.queue = frontier
                self.on_level(self)
            stopped = self._stop_reason_after_level(frontier)
        if self.data_root is not None and frontier:
            # The last level must be on disk before the context goes: the final
            # checkpoint is written after run() returns.
            self._save_level()
        current.unpersist()
        return self._result(stopped, frontier, started)

    def _materialize(self, rdd):
        """Persist and checkpoint ``rdd``, and collect its summary records.

        Returns ``None`` when the job was cancelled by a stop request.
        """
        from pyspark import StorageLevel

        rdd.persist(StorageLevel.MEMORY_AND_DISK)
        if self.checkpoint_dir:
            rdd.checkpoint()
        else:
            rdd.localCheckpoint()
        try:
            return rdd.filter(_is_summary).map(_payload).collect()
        except Exception as e:
            try:
                rdd.unpersist()
            except Exception:  # the context is gone (e.g. the master never answered)
                pass
            if self.stop_requested is not None:
                return None
            where = f" (master {self.master})" if self.master else ""
            raise EngineError(f"a Spark job failed at depth {self.stats.depth + 1}{where}: "
                              f"{_one_line(e)}") from None

    def _at_max_depth(self):
        return self.options.max_depth is not None and self.stats.depth >= self.options.max_depth

    def _absorb(self, summaries):
        """Add a level's summaries to the stats and its violations to ``found``.

        Returns the number of new states. A property that already failed keeps its
        first (shallower) violation; one that fails for the first time gets the violation
        with the least path of this level, which is the one the local engine meets first.
        """
        stats = self.stats
        new_states = 0
        candidates: dict[str, tuple] = {}  # property -> (path, kind, explanation, fp)
        for _index, count, new_by_action, state_bad, metas in summaries:
            new_states += count
            for name, k in new_by_action.items():
                stats.new[name] = stats.new.get(name, 0) + k
            for prop, (path, why, fp) in state_bad.items():
                keep_least(candidates, prop, (path, "always", why, fp))
            for terminal, generated, fired, step_bad in metas:
                stats.terminal += terminal
                stats.generated += generated
                for name, k in fired.items():
                    stats.fired[name] = stats.fired.get(name, 0) + k
                for prop, (path, why) in step_bad.items():
                    keep_least(candidates, prop, (path, "step", why, None))
        stats.distinct += new_states
        for prop, (path, kind, why, fp) in candidates.items():
            if prop not in self.found:
                self.found[prop] = (kind, why, path, fp)
        return new_states

    def _stop_reason_after_level(self, frontier):
        return stop_after_level(self.found, self.properties, self.options, self.stats.distinct,
                                bool(frontier))

    def _tick(self, started, queue):
        if self.progress is None:
            return
        self.stats.queue = queue
        self.progress(attrs.evolve(self.stats, seconds=self.stats.seconds + time.perf_counter() - started,
                                   levels=list(self.stats.levels), fired=dict(self.stats.fired),
                                   new=dict(self.stats.new)))

    # -- checkpoints --------------------------------------------------------------

    def snapshot(self) -> dict:
        """The search at its last complete level, for ``checker.checkpoint``.

        Valid from ``on_level`` and after ``run()`` returned (a level that was cancelled is
        dropped: the snapshot is the level before it). Inside ``run()`` it first saves the
        level's partitions (seen blocks and frontier chunks) under
        ``data_dir(data_root, depth)``, once per level; ``run()`` saves the last level
        before it returns whenever ``data_root`` is set.

        Returns:
            ``{"engine", "stats", "found", "frontier"`` (the number of states of the
            level), ``"data"`` (the level directory's name in ``data_root``, ``None`` when
            the frontier is empty and nothing remains to expand), ``"files"`` (size and
            SHA-256 of every part file, checked on resume), ``"partitions"}``.

        Raises:
            EngineError: the level's data is needed but was never saved (no
                ``data_root`` during ``run()``).
            CheckpointError: the level's data cannot be written.
        """
        data, files = None, {}
        if self._frontier:
            self._save_level()
            key, where, files = self._saved
            root = Path(self.data_root).resolve()
            if where.parent != root:
                # Resumed from another directory and stopped before a new level: the
                # checkpoint written here must not depend on the old directory.
                target = claim_data_dir(root, self.stats.depth)
                shutil.copytree(where, target)
                self._saved = key, target, files
                where = target
            data = where.name
        return {
            "engine": self.name,
            "stats": attrs.asdict(self.stats),
            "found": dict(self.found),
            "frontier": self._frontier,
            "data": data,
            "files": files,
            "partitions": self._partitions_used,
        }

    def restore(self, snapshot: dict) -> None:
        """Continue from a ``snapshot()`` (of this model, properties and options) whose
        checkpoint directory is ``data_root``: the next ``run()`` loads the level saved
        there, re-routed to this run's partitions (their number may differ), and goes on.

        Raises:
            CheckpointError: the level directory is missing or its files differ from
                those the snapshot lists (damaged, cut short, a file added or removed).
        """
        stats = Stats(**snapshot["stats"])
        self.stats = stats
        self.found = dict(snapshot["found"])
        self._frontier = snapshot["frontier"]
        if stats.depth == 0 and not self.found:
            self.stats, self._restored, self._saved = Stats(), None, None  # nothing was explored
            return
        self._restored = True
        self._saved = None
        if self._frontier:
            if self.data_root is None:
                raise EngineError("restore: set data_root to the checkpoint directory first")
            where = Path(self.data_root).resolve() / snapshot["data"]
            verify_level(where, snapshot["files"])
            self._restored = where
            self._saved = (self._level_key(), where, snapshot["files"])

    def _level_key(self):
        return self.stats.depth, self.stats.distinct, self.stats.generated

    def _save_level(self):
        """Save the last complete level under ``data_dir(data_root, depth)``, unless done."""
        key = self._level_key()
        if self._saved is not None and self._saved[0] == key:
            return
        sc, current = self._sc, self._current
        if sc is None or current is None or self.data_root is None:
            raise EngineError("snapshot: the level's states were not saved (set data_root before run())")
        # A directory of this depth that is not the saved one was left by a run killed
        # between saving it and writing its checkpoint file: no checkpoint names it. It
        # is replaced only if the directory's manifest says kmc created it.
        target = claim_data_dir(Path(self.data_root).resolve(), self.stats.depth)
        if self._canceller is not None:
            self._canceller.join(10)
        # Another job group: a Ctrl-C during the save cancels the search, not the save.
        sc.setJobGroup(f"{self._group}-save", "kmc checkpoint", interruptOnCancel=False)
        try:
            for attempt in (1, 2):
                try:
                    current.filter(_is_level_data).saveAsPickleFile(target.as_uri(), batchSize=1)
                    files = manifest(target)
                    break
                except Exception as e:
                    shutil.rmtree(target, ignore_errors=True)
                    # Ctrl-C in a terminal also reaches Spark's Python workers (one
                    # process group), failing the tasks it hits: a stopping run retries.
                    if attempt == 1 and self.stop_requested is not None:
                        continue
                    raise CheckpointError(f"{target}: cannot save the level's states ({_one_line(e)})") from None
        finally:
            sc.setJobGroup(self._group, "kmc breadth-first search", interruptOnCancel=False)
        self._saved = (key, target, files)

    def _load(self, sc, n):
        """The RDD of the restored level, re-routed to ``n`` partitions by ``fp % n``.

        Returns ``None`` when cancelled.

        Raises:
            CheckpointError: the level does not hold the states its checkpoint counts.
        """
        where = self._restored
        saved = sc.pickleFile(where.as_uri())
        routed = saved.mapPartitions(partial(_route_saved, n)).partitionBy(n, _owner)
        current = routed.mapPartitionsWithIndex(_assemble_partition, preservesPartitioning=True)
        try:
            summaries = self._materialize(current)
        except EngineError as e:
            raise CheckpointError(f"{where}: cannot load the saved level ({e})") from None
        if summaries is None:
            return None
        seen = sum(s[0] for s in summaries)
        front = sum(s[1] for s in summaries)
        if (seen, front) != (self.stats.distinct, self._frontier):
            current.unpersist()
            raise CheckpointError(f"{where}: holds {seen} states and a frontier of {front}, its checkpoint "
                                  f"counts {self.stats.distinct} and {self._frontier}; it cannot be resumed")
        self._saved = (self._level_key(), where, self._saved[2])
        return current

    # -- results ------------------------------------------------------------------

    def _result(self, stopped, frontier, started) -> CheckResult:
        stats = self.stats
        stats.seconds += time.perf_counter() - started
        stats.queue = frontier
        violations = {}
        for prop in (p.name for p in self.properties):
            if prop not in self.found:
                continue
            kind, why, path, fp = self.found[prop]
            trace = replay_choices(self.model, path[0], path[1:])
            if fp is not None and fingerprint(self.model, trace.steps[-1].state) != fp:
                raise EngineError(f"trace replay for {prop} does not reach the violating state")
            violations[prop] = Violation(prop, kind, why, trace)
        return result_of(self, violations, stopped, frontier, stats)

