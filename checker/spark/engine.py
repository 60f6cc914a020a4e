"""The Spark engine on rows: the batch engine's search, distributed with Apache Spark.

Used for every model that has a batch kernel (``model.batch_kernel()``, see
``checker.local.rows``); it reports exactly what ``checker.local.rows.BatchEngine`` reports (counts,
per-action counters, verdicts, counterexample paths, choices and explanations).

No Python object per state goes through Spark: states are rows, always moved as whole
numpy arrays, and what outlives a level is kept as immutable objects (the *store*,
``checker.partitioned.rows.RowsStore``, in a blob store, ``checker.blobs``: a directory or an
object store such as ``s3://``); the executors run ``checker.partitioned.tasks``.

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
position. One level is the partitioned level (``checker.partitioned``): two stages of
tasks, run by a ``Cluster`` (one Spark job, ``checker.spark.cluster``):

1. Rank partition ``j`` reads its share of the frontier from the store (one object per
   owner that found some of it), sorts it by key, runs the chunk pipeline every rows
   search shares on each slice (``LevelStep.chunk_successors``: ``kernel.expand``, the
   step properties' least-key violators, the least key of each fingerprint), and writes
   the successors (key, fingerprint, parent fingerprint, action code, row) for each owner
   into the store, one object per owner; one small record per object goes through the
   shuffle.
2. Owner ``i`` reads the successors for it, keeps the least key per fingerprint, drops
   those in its seen runs, writes the new fingerprints as a run (merged with the newest
   runs as ``checker.stores.seen.CompactSeenSet`` merges) and the level's parent pointers,
   checks the invariants on the new rows (``checker.core.level``; only a violating row is
   decoded), and writes the new rows for their next rank partition ``g * P //
   L_d``, which grows with ``g``: the next level's order is (rank partition, key order
   inside it). It returns one summary, which gives the driver the counts, the
   violations, its runs and the next level's per-rank-partition counts.

After the hand-over, a level no larger than ``driver_level_limit`` (the shrinking tail)
runs the same two task functions on the driver, without a job
(``checker.partitioned.InProcessCluster``); and the session is started in the background,
with a warm-up job, once a driver level passes an eighth of the limit.

Counts come from the summaries (no accumulators), every object is written whole by a
task whose output depends only on its inputs, and a level's job reads only objects named
by the driver or by the tasks' records: a retried task cannot change anything, and no
RDD outlives its level.

Counterexamples: the parent pointers (fingerprint, parent fingerprint, choice) of every
depth are kept per owner; the driver follows fp -> parent fp down to a state it handed
over, whose path its own seen-set gives, and replays the choices
(``checker.core.trace.replay_choices``, and ``extend`` for a step property).

Checkpoints (``checker.partitioned.save``): ``snapshot()`` names the store's objects of the
last complete level with the digests their writers computed: linked (or copied) under
``data_dir(data_root, depth)`` for a directory store, a manifest of the objects left in
place for an object store (kept while a checkpoint names them); ``restore()`` checks every
one and ``run()`` re-splits them for its own partition count.

The engine is the level driver (``checker.core.driver``) over two search objects:
``checker.spark.search.DriverLevels`` (the rows search) while the levels are small,
replaced at the hand-over (``next_search``, at a level boundary) by the partitioned
level's ``checker.partitioned.levels.PartitionedLevels``, which holds the store and is
given the session (``checker.spark.start.Session``, its back end) and the settings it needs. The
stop rules, progress, hooks, violation records and result are the local engines' own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, cast

from ..base.errors import EngineError, UsageError
from ..checkpoints.file import CheckpointError
from ..checkpoints.schema import SNAPSHOT_FORMAT, STATES_FORMAT, check_format
from ..contract.kernel_check import kernel_check
from ..contract.model_errors import task_failure
from ..contract.protocol import batch_path
from ..core.assembly import assemble
from ..core.driver import LevelDriver
from ..core.kernel import canonical_encoder
from ..core.options import Options
from ..core.result import CheckResult
from ..core.states_kernel import StatesKernel
from ..graph.clients import graph_clients
from ..partitioned.cluster import one_line
from ..partitioned.levels import PartitionedLevels
from ..partitioned.ports import LevelsSetup
from ..partitioned.rows import RowsStore
from .search import DriverLevels
from .session import partitions_bad, quiet_py4j
from .start import Session
from .tasks import prepare_worker

__all__ = ["DRIVER_LEVEL_LIMIT", "SNAPSHOT_FORMAT", "STATES_FORMAT", "SparkRowsEngine"]

DRIVER_LEVEL_LIMIT = 50_000  # levels up to this many states are expanded on the driver


# Its search is replaced at the hand-over (the rows search on the driver, then the partitioned
# levels, whose pieces and locations differ): the driver holds either.
class SparkRowsEngine(LevelDriver[Any, Any, Any]):
    """Breadth-first exploration of a model on Apache Spark.

    Same hooks as ``checker.core.driver.LevelDriver`` (``run()``, ``stop_requested``,
    ``on_level``, ``snapshot()``/``restore()``) and ``cancel()``; gives exactly the
    results of ``checker.local.rows.BatchEngine`` (and so of ``checker.local.states.LocalEngine``).

    Args:
        model, properties, options, progress: as ``checker.local.states.LocalEngine``.
        master: the Spark master URL (default ``local[*]``); partitions: the number of
            partitions (default: one per executor core,
            ``checker.spark.session.default_partitions``); verbose: Spark's own log lines.
        per_state: run the model's own successor function over rows of Python states
            (``checker.core.states_kernel.StatesKernel``) instead of its batch kernel; a model
            without a batch kernel always runs so.
        driver_level_limit: leading levels of at most this many states are expanded on
            the driver; 0 hands over to Spark right after the initial states.
        store_dir: where the run's store is made (default: the temporary directory; or
            an object store URL, ``checker.blobs``).
        cluster: a ``checker.partitioned.Cluster`` that runs every level past the
            hand-over instead of Spark (``partitions`` of them, default 2): the same
            algorithm on another back end; no Spark session is started then.
        on_level, on_status, data_root: the level hook, the start-up messages, and the
            checkpoint directory where a level's files are saved.

    After ``run()``, ``not_started`` says in one line why Spark was never started (every
    level had at most ``driver_level_limit`` states), or is None; ``metrics`` holds what
    ``kmc bench`` reports: the session's start time, every Spark level's states and
    seconds, and the bytes routed through both shuffles.
    """

    name = "spark"
    path = "rows"

    def __init__(
        self,
        model: Any,
        properties: Any = None,
        options: Options | None = None,
        progress: Any = None,
        *,
        master: str | None = None,
        partitions: int | None = None,
        verbose: bool = False,
        driver_level_limit: int = DRIVER_LEVEL_LIMIT,
        store_dir: str | None = None,
        per_state: bool = False,
        on_level: Any = None,
        on_status: Callable[[str], None] | None = None,
        data_root: str | None = None,
        cluster: Any = None,
    ) -> None:
        a = assemble(model, properties, options, graph_clients)
        model, options = a.model, a.options
        kernel = self.kernel = self._kernel(model, per_state, options.symmetry)
        self.master, self.partitions, self.verbose = master, partitions, verbose
        self.driver_level_limit = driver_level_limit
        self.store_dir = store_dir
        self.data_root = data_root  # the checkpoint directory snapshot() saves levels under
        self.on_status = on_status  # called with a short message while Spark starts
        self.metrics: dict[str, Any] = {
            "session_start_seconds": None,
            "master": None,  # the master the session ran on, once it is up
            "spark_levels": [],
            "shuffle_bytes": 0,
            "driver_levels": 0,
            "in_process_levels": 0,
            "store_peak_bytes": 0,  # the store's size on disk at its largest (a level's end)
            "packed_levels": 0,  # levels whose rows were written four bits a column
        }
        self.group = f"kmc-rows-{id(self):x}"
        # What the tasks import, for a local session's worker daemon to import once.
        preload = (type(model).__module__, type(kernel).__module__)
        self.session = Session(
            master=master,
            verbose=verbose,
            preload=preload,
            partitions=partitions,
            group=self.group,
            metrics=self.metrics,
            on_status=on_status,
        )
        self.setup = LevelsSetup(
            master=master,
            partitions=partitions,
            store_dir=store_dir,
            driver_level_limit=driver_level_limit,
            data_root=data_root,
            snapshot_format=self.snapshot_format,
            coverage=bool(options.coverage),
            cluster=cluster,
        )
        check = kernel_check(model, kernel, a.properties, options)
        search = DriverLevels(
            model,
            kernel,
            a.invariants,
            a.step_props,
            bool(options.symmetry),
            check,
            setup=self.setup,
            session=self.session,
            visitor=a.visitor,
        )
        super().__init__(a, search, progress, on_level=on_level)
        self.kernel_check = check
        # After run(): why no Spark session was started (every level stayed on the driver), or None.
        self.not_started: str | None = None
        # After run() starts: what it removed of the stores of killed runs, in one line, or None.
        self.cleaned: str | None = None
        self._canceller: threading.Thread | None = None

    def _kernel(self, model: Any, per_state: bool, symmetry: bool) -> Any:
        """The kernel the levels run: the model's batch kernel, else (no kernel, one that
        cannot run this model, or ``per_state``) the per-state model as rows of Python states:
        the same search, for models with no batch kernel and for comparing a batch kernel with
        its model. Sets the engine's path and the format of its snapshots."""
        batch = None if per_state else batch_path(model)[0]
        if batch is not None:
            self.snapshot_format = SNAPSHOT_FORMAT
            return batch
        self.path, self.snapshot_format = "per-state", STATES_FORMAT
        if symmetry:
            canonical_encoder(model)  # refuses a model that declares no symmetries
        return StatesKernel(model)

    def _stopping(self) -> bool:
        return self.stop_requested is not None

    @property
    def levels(self) -> DriverLevels | PartitionedLevels:
        """The search object, in either phase (each answers the engine's same calls)."""
        return cast("DriverLevels | PartitionedLevels", self.search)

    def next_search(self) -> None:
        """At a level boundary: hand the levels over to Spark once a level outgrows
        ``driver_level_limit`` (``checker.partitioned.levels``)."""
        self.search = self.levels.following(self.stats.depth, self.metrics, self._stopping)

    def run(self) -> CheckResult:
        """Explore, and return the result (with full counterexample paths).

        Raises:
            EngineError: Spark could not start, or a Spark job failed.
            CheckpointError: ``data_root`` is set and the last level cannot be saved.
        """
        if partitions_bad(self.partitions):
            raise EngineError(f"spark partitions must be a positive integer, got {self.partitions!r}")
        from ..blobs import store_location
        from ..partitioned.rows_stale import clean_stale

        spark = self.setup.cluster is None
        if self.store_dir is not None:  # first: a store no executor could use, before the master's probe
            master = self.master if self.master is not None or not spark else _submit_master()
            store_location(str(self.store_dir), master)
        if spark:
            _check_master(self.master)  # at once, even when every level stays on the driver
        prepare_worker()  # rows of Python states pickled as Spark's tasks pickle them (with pyspark)
        self.cleaned = clean_stale(self.store_dir)  # the stores of runs that were killed
        if self.store_dir is not None:
            RowsStore.create(self.store_dir).remove()  # likewise: not after hours on the driver
        leave_running = False
        try:
            self.levels.prepare()
            with quiet_py4j(not self.verbose):
                result = super().run()
            self.not_started = self.levels.finish(result.stopped, self.metrics, self.stats.depth, self.data_root)
            return result
        except KeyboardInterrupt:
            leave_running = True  # SparkContext.stop() inside a signal's unwinding can hang
            raise
        except (EngineError, CheckpointError, UsageError):
            raise
        except Exception as e:
            if type(e).__module__.startswith(("py4j", "pyspark")):
                where = f" (master {self.master})" if self.master else ""
                blamed = task_failure(e, f"in a Spark task{where}")
                if blamed is not None:  # the model's own code raised: its function, file and line
                    raise blamed from None
                raise EngineError(f"Spark failed{where}: {one_line(e)}") from None
            raise
        finally:
            begin = time.perf_counter()
            self.session.close(leave_running)
            self.levels.close()
            self.metrics["close_seconds"] = round(time.perf_counter() - begin, 3)

    def cancel(self, reason: str = "interrupted") -> None:
        """Stop as soon as possible: abort the level being computed (it is dropped)."""
        self.stop_requested = reason
        self.search.stop_asked = True
        if self.setup.cluster is not None:
            self.setup.cluster.cancel()
        elif self._canceller is None:
            self._canceller = self.session.cancel()

    def snapshot(self) -> dict[str, Any]:
        """The search at its last complete level, for ``checker.checkpoints.file``.

        Valid from ``on_level`` and after ``run()`` returned. While the levels run on the
        driver it holds the rows search's seen-set and frontier; once they run on Spark,
        the store's objects of the level (every partition's seen runs and parent pointers,
        and the frontier) are saved first, once per level (``run()`` saves the last level
        before it returns whenever ``data_root`` is set): linked, or copied, under
        ``data_dir(data_root, depth)`` for a directory store, left in an object store
        (a manifest: ``"objects"``); the snapshot names them with their sizes and SHA-256.

        Raises:
            EngineError: the level's files are needed but were never saved (no
                ``data_root`` during ``run()``).
            CheckpointError: the level's files cannot be written.
        """
        return super().snapshot()

    def committed(self, snapshot: dict[str, Any]) -> None:
        """A checkpoint of ``snapshot`` is written (``checker.checkpoints.writer``): the objects
        of an object store that no checkpoint names any longer are deleted now
        (``PartitionedLevels.committed``)."""
        self.levels.committed(snapshot)

    def restore(self, snapshot: dict[str, Any], directory: Any = None) -> None:
        """Continue from a ``snapshot()`` (of this model, properties and options) whose
        checkpoint directory is ``directory`` (default ``data_root``): the next ``run()``
        re-splits the saved level for this run's partitions (their number may differ) and
        goes on.

        Raises:
            EngineError: the snapshot is of the other path of this engine.
            CheckpointError: the snapshot is of the retired per-state Spark engine, or
                the level directory is missing or its files differ from those the
                snapshot lists (damaged, cut short, a file added or removed).
        """
        check_format(snapshot, self.snapshot_format)
        self.search = self.levels.resumed(snapshot, self.metrics, self._stopping)
        super().restore(snapshot, directory)  # the search takes its parts back


def _submit_master() -> str | None:
    try:
        from .session import submit_master
    except ImportError:
        return None
    return submit_master()


def _check_master(master: str | None) -> str:
    """Refuse a malformed or unreachable master, or one that contradicts spark-submit's,
    before any work, as the Spark session would (``checker.spark.master``), unless a
    session is already running. Returns the master the run's session is to have."""
    try:
        from pyspark import SparkContext
    except ImportError as e:
        raise EngineError(f"the spark engine needs pyspark ({e})") from None
    active = SparkContext._active_spark_context
    if active is not None:
        return str(active.master)
    from .master import DEFAULT_MASTER, check_reachable, validate_master
    from .session import check_submit_master

    submit = check_submit_master(master)
    if submit is not None:  # under spark-submit: its master, reached already
        return submit
    master = validate_master(DEFAULT_MASTER if master is None else master)
    check_reachable(master)
    return master
