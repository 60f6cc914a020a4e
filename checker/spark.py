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
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import operator
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from array import array
from functools import partial
from pathlib import Path

import attrs

from .checkpoint import CheckpointError, claim_data_dir
from .errors import EngineError
from .fingerprint import fingerprint
from .kernel import check_state, expand, split_properties, stop_after_level
from .local import Options
from .protocol import action_name
from .result import CheckResult, Stats, Violation
from .hadoop_crc import hadoop_crc_matches
from .spark_master import DEFAULT_MASTER, MAX_PARTITIONS, check_reachable, validate_master
from .trace import replay_choices

_SEEN = "seen"  # record tags of the state RDD
_FRONT = "front"
_SUMMARY = "sum"
_LEVEL_DATA = (_SEEN, _FRONT)  # what a checkpoint saves of a partition
_CHUNK = 2048  # frontier states per pickled chunk
_PYTHON_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)(: |$)")

# Spark's own start-up messages ("Using Spark's default log4j profile", native-library
# warnings) are printed before setLogLevel can run; this configuration silences them,
# and the stack trace SparkContext logs when it cannot start (the exception it raises
# is reported as one line instead). The
# root level stays at WARN until setLogLevel("ERROR") right after start-up: a PySpark
# driver whose root level is not WARN prints "Setting default log level" on stderr.
_QUIET_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.deploy.name = org.apache.spark.deploy.client
logger.deploy.level = error
logger.context.name = org.apache.spark.SparkContext
logger.context.level = off
logger.backend.name = org.apache.spark.scheduler.cluster
logger.backend.level = off
"""
# Lines the JVM prints on stderr before any logging is configured.
_JVM_NOISE = ("WARNING: Using incubator modules",)


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
            blobs = [(owner, _dumps(items)) for owner, items in buckets.items()]
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
                _keep_least(candidates, prop, (path, "always", why, fp))
            for terminal, generated, fired, step_bad in metas:
                stats.terminal += terminal
                stats.generated += generated
                for name, k in fired.items():
                    stats.fired[name] = stats.fired.get(name, 0) + k
                for prop, (path, why) in step_bad.items():
                    _keep_least(candidates, prop, (path, "step", why, None))
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
            _verify_level(where, snapshot["files"])
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
                    files = _manifest(target)
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

def spark_context(master=None, verbose=False, status=None):
    """The running SparkContext, or a new one.

    Args:
        master: the master URL of a new context (default ``DEFAULT_MASTER``,
            ``"local[*,4]"``: local mode with four attempts per task).
        verbose: keep Spark's log messages.
        status: called with a short message when the JVM and the context are being
            started (they take seconds to tens of seconds).

    Returns:
        ``(context, created)``: ``created`` is True when the caller started the context
        and should stop it.

    Raises:
        EngineError: pyspark or Java is missing, the master URL is malformed or
            unreachable, or Spark could not start.
    """
    try:
        from pyspark import SparkConf, SparkContext
    except ImportError as e:
        raise EngineError(f"the spark engine needs pyspark ({e})") from None
    active = SparkContext._active_spark_context
    if active is not None:
        return active, False
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise EngineError("the spark engine needs Java: no 'java' on PATH and JAVA_HOME is not set")
    master = validate_master(DEFAULT_MASTER if master is None else master)
    check_reachable(master)  # seconds, not Spark's minute of registration retries
    if master.startswith("local") or master.startswith("spark://127."):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Executors must run the driver's Python (same version, same installed packages).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = (SparkConf().setMaster(master).setAppName("kmc")
            .set("spark.ui.enabled", "false"))
    log_config = None
    if not verbose:
        conf.set("spark.ui.showConsoleProgress", "false")
        fd, log_config = tempfile.mkstemp(prefix="kmc-log4j2-", suffix=".properties")
        with os.fdopen(fd, "w") as f:
            f.write(_QUIET_LOG4J2)
        conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_config}")
    # PySpark replaces the SIGINT handler when a context starts; keep the caller's,
    # which is expected to set ``stop_requested`` (or call ``cancel``).
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGINT) if main else None
    gateway = relay = None
    say = status or (lambda message: None)
    try:
        if SparkContext._gateway is None:
            say("starting the JVM (Spark's driver)")
            if not verbose:
                gateway, relay = _quiet_gateway(conf)
        say(f"starting the Spark session (master {master})")
        sc = SparkContext(conf=conf, gateway=gateway)
    except Exception as e:
        why = str(e) if isinstance(e, EngineError) else _one_line(e)
        raise EngineError(f"could not start Spark (master {master!r}): {why}") from None
    finally:
        if relay is not None:
            relay.release()
        if main and handler is not None:
            signal.signal(signal.SIGINT, handler)
        if log_config is not None:
            os.unlink(log_config)
    if not verbose:
        # Not even ERROR: a failed or cancelled job logs a JVM stack trace per task
        # attempt, and every failure reaches the caller as an exception (one line).
        sc.setLogLevel("OFF")
    return sc, True


def _quiet_gateway(conf):
    """Start PySpark's JVM with its stderr relayed through a filter of start-up noise.

    PySpark starts one JVM per process and reuses it for every later context, so this
    only runs for the first context of a process. Returns ``(gateway, relay)``; the
    relay holds the JVM's output until ``relay.release()``, so that a JVM that fails to
    start is reported by one line of an ``EngineError`` rather than by its stack trace.
    """
    from pyspark.java_gateway import launch_gateway

    relay = _Relay()
    read_end, write_end = os.pipe()
    relay.start(os.fdopen(read_end, "rb"))
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
    except Exception as e:
        os.close(write_end)
        relay.wait(10)  # the JVM has exited: read to the end of what it printed
        raise EngineError(relay.reason() or _one_line(e)) from None
    os.close(write_end)
    return gateway, relay


class _Relay:
    """Copies a JVM's stderr to ours, without its start-up noise, once released."""

    def __init__(self):
        self.held: list[str] = []
        self.released = False
        self.lock = threading.Lock()

    def start(self, stream):
        self.thread = threading.Thread(target=self._pump, args=(stream,), name="kmc-spark-stderr", daemon=True)
        self.thread.start()

    def wait(self, seconds):
        self.thread.join(seconds)

    def _pump(self, stream):
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            if line.startswith(_JVM_NOISE):
                continue
            with self.lock:
                if not self.released:
                    self.held.append(line)
                    continue
            sys.stderr.write(line)
            sys.stderr.flush()
        stream.close()

    def release(self):
        with self.lock:
            self.released = True
            held, self.held = self.held, []
        sys.stderr.writelines(held)

    def reason(self) -> str | None:
        """The JVM's own one-line account of why it stopped, if it printed one."""
        with self.lock:
            lines = [line.strip() for line in self.held if line.strip()]
        for line in reversed(lines):
            if "Exception" in line or "Error" in line:
                return line.split(": ", 1)[-1] if line.startswith("Exception in thread") else line
        return None


def partitions_bad(partitions) -> bool:
    """True when ``partitions`` is neither ``None`` nor an integer from 1 to ``MAX_PARTITIONS``."""
    if partitions is None:
        return False
    return isinstance(partitions, bool) or not isinstance(partitions, int) \
        or not 1 <= partitions <= MAX_PARTITIONS


# -- what runs on the executors ---------------------------------------------------
# Plain module-level functions (bound with functools.partial), so that the tasks carry
# only the model and the properties, and hold no state between calls.


def _owner(key):
    """The partition function: PySpark sends a record with key ``k`` to partition
    ``_owner(k) % n``.

    The keys are partition numbers: an expansion task groups the successors of state
    ``fp`` under ``fp % n``, the partition that owns ``fp``, so a fingerprint's owner is a
    deterministic function of the fingerprint alone. The negative keys are free:
    expansion task ``i`` sends its counters under ``-1 - i``, to any partition.
    """
    return key


def _is_summary(record):
    return record[0] == _SUMMARY


def _payload(record):
    return record[1]


def _expand_partition(model, step_props, n, fail_first_attempt, index, records):
    """Expand the frontier states of one partition.

    Yields ``(owner, blob)``: ``blob`` is a pickled list of ``(fp, path, parent fp, action
    name, successor)`` for successors owned by partition ``owner``, keeping within a chunk
    of the frontier only the least path to each successor; then ``(-1 - index,
    (terminal, generated, fired, step violations))``, where the step violations map a
    property to the least ``(path, explanation)`` among this partition's violating edges.

    Successors that this partition owns and has already seen are dropped here rather
    than after the shuffle: most successors are old states, and shipping a state costs
    more than generating it.
    """
    if fail_first_attempt and index == 0:
        from pyspark import TaskContext

        if TaskContext.get().attemptNumber() == 0:
            _test_fault(fail_first_attempt)
    terminal = generated = 0
    fired: dict[str, int] = {}
    step_bad: dict[str, tuple] = {}
    known: set = set()
    for tag, payload in records:
        if tag == _SEEN:  # the merge writes the seen block before the frontier
            known = set(payload)
            continue
        if tag != _FRONT:
            continue
        best: dict[int, tuple] = {}
        for fp, path, state in pickle.loads(payload):
            edges = expand(model, state, step_props)
            if not edges:
                terminal += 1
            generated += len(edges)
            for choice, action, succ, sfp, bad in edges:
                name = action_name(action)
                fired[name] = fired.get(name, 0) + 1
                spath = path + (choice,)
                for prop, why in bad:
                    old = step_bad.get(prop)
                    if old is None or spath < old[0]:
                        step_bad[prop] = (spath, why)
                old = best.get(sfp)
                if old is None or spath < old[0]:
                    best[sfp] = (spath, fp, name, succ)
        buckets: dict[int, list] = {}
        for sfp, (spath, fp, name, succ) in best.items():
            owner = sfp % n
            if owner == index and sfp in known:
                continue
            buckets.setdefault(owner, []).append((sfp, spath, fp, name, succ))
        for owner, items in buckets.items():
            yield (owner, _dumps(items))
    yield (-1 - index, (terminal, generated, fired, step_bad))


def _test_fault(kind):
    """Test hooks, on the first attempt of partition 0's expansion tasks: ``True`` raises;
    ``"kill"`` ends this Python worker as a crash would (the OOM killer, a stray signal);
    ``"sigint:GROUP:PATH"`` sends SIGINT to the driver's process group ``GROUP`` once, as
    Ctrl-C in a terminal does, and to this worker (``PATH`` is created to remember it was
    sent; PySpark's daemon gives its workers a process group of their own, but a worker
    started without it is in the terminal's group)."""
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if isinstance(kind, str) and kind.startswith("sigint:"):
        group, _, marker = kind[len("sigint:"):].partition(":")
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.killpg(int(group), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # and this worker, as without PySpark's daemon
        return
    raise RuntimeError("kmc test hook: the first attempt of this task fails")


def _merge_partition(model, invariants, index, records):
    """Merge one partition's seen block with the successors routed to it.

    ``records`` is the partition's previous version (only its seen block is used)
    followed by the blobs of successors routed to it and the expansion tasks' counters
    (see ``_expand_partition``). Yields the new seen block, the new frontier in pickled
    chunks, and one summary ``(index, new states, new states per action, state
    violations, counters)``; a state violation maps a property to the least ``(path,
    explanation, fp)`` among this partition's new states.
    """
    block = None
    incoming: dict[int, tuple] = {}
    metas = []
    for key, value in records:
        if key.__class__ is str:
            if key == _SEEN:
                block = value
            continue
        if key < 0:
            metas.append(value)
            continue
        for fp, path, parent, name, state in pickle.loads(value):
            old = incoming.get(fp)
            if old is None or path < old[0]:
                incoming[fp] = (path, parent, name, state)
    fps = block if block is not None else array("Q")
    known = set(fps)
    new_by_action: dict[str, int] = {}
    state_bad: dict[str, tuple] = {}
    fresh = []
    for fp, (path, parent, name, state) in incoming.items():
        if fp in known:
            continue
        fps.append(fp)
        if parent is not None:  # not an initial state
            new_by_action[name] = new_by_action.get(name, 0) + 1
        for prop, why in check_state(model, state, invariants):
            old = state_bad.get(prop)
            if old is None or path < old[0]:
                state_bad[prop] = (path, why, fp)
        fresh.append((fp, path, state))
    del incoming, known
    yield (_SEEN, fps)
    for i in range(0, len(fresh), _CHUNK):
        yield (_FRONT, _dumps(fresh[i:i + _CHUNK]))
    yield (_SUMMARY, (index, len(fresh), new_by_action, state_bad, metas))


def _is_level_data(record):
    return record[0] in _LEVEL_DATA


def _route_saved(n, records):
    """Split a saved partition's records by their new owner (``fp % n``).

    Yields ``(owner, (tag, payload, count))``: a seen block or a pickled frontier chunk
    holding only fingerprints owned by ``owner``, and how many states it holds. Neither
    the order of a seen block nor the chunking of the frontier changes a result (every
    choice the engine makes is by least path), so any partition count can resume.
    """
    for tag, payload in records:
        if tag == _SEEN:
            if isinstance(payload, tuple):  # saved by an older kmc: (fps, parents, choices)
                payload = payload[0]
            blocks: dict[int, array] = {}
            for fp in payload:
                block = blocks.get(fp % n)
                if block is None:
                    block = blocks[fp % n] = array("Q")
                block.append(fp)
            for owner, block in blocks.items():
                yield owner, (_SEEN, block, len(block))
        elif tag == _FRONT:
            chunks: dict[int, list] = {}
            for item in pickle.loads(payload):
                chunks.setdefault(item[0] % n, []).append(item)
            for owner, items in chunks.items():
                yield owner, (_FRONT, _dumps(items), len(items))


def _assemble_partition(index, records):
    """One partition of a restored level, laid out as ``_merge_partition`` writes one:
    the seen block, the frontier chunks, a summary ``(seen states, frontier states)``."""
    fps = array("Q")
    chunks = []
    front = 0
    for _owner, (tag, payload, count) in records:
        if tag == _SEEN:
            fps.extend(payload)
        else:
            chunks.append(payload)
            front += count
    yield (_SEEN, fps)
    for chunk in chunks:
        yield (_FRONT, chunk)
    yield (_SUMMARY, (len(fps), front))


class _Pickler(pickle.Pickler):
    """A pickler that writes plain attrs instances as a call of their class.

    attrs pickles a slotted frozen instance through ``__getstate__``/``__setstate__``
    written in Python, which makes pickling the frontier and the successors cost more
    than generating them. An instance of a class whose fields are all positional
    ``__init__`` arguments without converters is rebuilt equal by calling the class
    with its field values, which pickle does in C. Anything else is pickled as usual.
    """

    def __init__(self, file):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self._getters: dict = {}

    def reducer_override(self, obj):
        cls = obj.__class__
        try:
            getter = self._getters[cls]
        except KeyError:
            getter = self._getters[cls] = _fields_getter(cls)
        if getter is None:
            return NotImplemented
        return cls, getter(obj)


def _fields_getter(cls):
    if not isinstance(cls, type) or not attrs.has(cls):
        return None
    fields = attrs.fields(cls)
    if not fields or not all(f.init and f.converter is None and not f.kw_only for f in fields):
        return None
    if len(fields) == 1:
        name = fields[0].name
        return lambda obj: (getattr(obj, name),)
    return operator.attrgetter(*(f.name for f in fields))


def _dumps(obj) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer).dump(obj)
    return buffer.getvalue()


# -- driver helpers ------------------------------------------------------------------


def _keep_least(candidates, prop, entry):
    old = candidates.get(prop)
    if old is None or entry[0] < old[0]:
        candidates[prop] = entry


@contextlib.contextmanager
def _quiet_py4j(enabled):
    """Silence py4j's Python log messages: a second Ctrl-C inside a py4j call makes it log
    the interrupt and the closing of its connection, with tracebacks, on stderr."""
    if not enabled:
        yield
        return
    logger, root = logging.getLogger("py4j"), logging.getLogger()
    if not root.handlers:
        # py4j calls the module-level ``logging.exception`` from its own threads, also after
        # this block ends (a second Ctrl-C): with no handler on the root logger that call
        # installs one printing to stderr. A do-nothing handler, left in place, prevents
        # it; a program that configured logging itself already has a handler and keeps it.
        root.addHandler(logging.NullHandler())
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    root.addFilter(_not_from_py4j)  # py4j also logs through the root logger
    try:
        yield
    finally:
        logger.setLevel(level)
        root.removeFilter(_not_from_py4j)


def _not_from_py4j(record) -> bool:
    return "py4j" not in Path(record.pathname).parts


def _cancel_group(sc, group):
    try:
        sc.cancelJobGroup(group)
    except Exception:  # the context may be stopping; the stop flag is enough then
        pass


def _manifest(directory: Path) -> dict:
    """``{file name: (size, sha256)}`` of the part files of a saved level."""
    if not (directory / "_SUCCESS").is_file():
        raise OSError(f"no _SUCCESS marker in {directory}")
    files = {}
    for path in sorted(directory.glob("part-*")):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        files[path.name] = (path.stat().st_size, digest.hexdigest())
    return files


def _verify_level(directory: Path, files: dict) -> None:
    """Refuse a saved level whose part files are not exactly those of its checkpoint."""
    damaged = f"{directory}: damaged ({{}}); the checkpoint cannot be resumed, start a new run"
    if not directory.is_dir():
        raise CheckpointError(f"{directory}: missing (the checkpoint keeps the last level's states there); "
                              "the checkpoint cannot be resumed, start a new run")
    present = {path.name for path in directory.glob("part-*")}
    if present != set(files):
        what = sorted(set(files) - present) or sorted(present - set(files))
        verb = "missing" if set(files) - present else "unexpected"
        raise CheckpointError(damaged.format(f"{verb} {what[0]}"))
    try:
        actual = _manifest(directory)
    except OSError as e:
        raise CheckpointError(damaged.format(e.strerror or str(e))) from None
    for name, (size, digest) in sorted(files.items()):
        if actual[name][0] != size:
            raise CheckpointError(damaged.format(f"{name} has {actual[name][0]} bytes, not {size}"))
        if actual[name][1] != digest:
            raise CheckpointError(damaged.format(f"{name}: checksum mismatch"))
    # Hadoop checks a part file against its ".crc" file when Spark reads it, and a bad
    # one fails the load with pages of JVM stack traces: check them here, in one line.
    for name in sorted(files):
        crc = directory / f".{name}.crc"
        if crc.exists() and not hadoop_crc_matches(directory / name, crc):
            raise CheckpointError(damaged.format(f"{crc.name} does not match {name}"))


def _union(sc, left, right):
    """The union of two RDDs with the same partitioner, partition by partition.

    Spark lays the union of RDDs that share a partitioner out partition by partition
    (``PartitionerAwareUnionRDD``), so partition ``i`` of the result is partition ``i`` of
    ``left`` followed by partition ``i`` of ``right``: no data moves. ``RDD.union`` would
    re-serialize ``right`` first (it comes out of a shuffle in a different batch format),
    an extra pass over the data; both formats are streams of pickled lists, which the
    default deserializer reads alike, so the JVM union is wrapped directly.
    """
    from pyspark import RDD

    if left.partitioner != right.partitioner or left.partitioner is None:
        raise EngineError("internal error: the seen-set and the successors are not co-partitioned")
    both = RDD(left._jrdd.union(right._jrdd), sc, sc.serializer)
    if both.getNumPartitions() != left.getNumPartitions():
        raise EngineError("internal error: Spark did not line the seen-set up with the successors")
    both.partitioner = left.partitioner
    return both


def _default_partitions(sc) -> int:
    configured = sc.getConf().get("spark.default.parallelism")
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            pass
    return max(2, 2 * sc.defaultParallelism)


def _one_line(error) -> str:
    """A one-line description of a (possibly Java) exception."""
    java = getattr(error, "java_exception", None)
    text = str(error)
    if java is not None:
        try:
            text = str(java.toString())
        except Exception:
            pass
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # A failed Python task's message ends with the Python exception's own line.
    python = [line for line in lines if _PYTHON_ERROR.match(line)]
    line = python[-1] if python else (lines[0] if lines else type(error).__name__)
    return line if len(line) <= 300 else line[:297] + "..."
