"""How the Spark engine (``checker.spark.engine``) gets its session: started in the
background while the driver still expands small levels, with a warm-up job of the levels'
shape, and waited for only when a level needs it; the back end of the partitioned level
(``checker.partitioned.ports.Backend``): the cluster each level runs on."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from ..partitioned.cluster import Cluster, InProcessCluster
from ..partitioned.rows import RowsStore
from .cluster import SparkCluster
from .probe import probe_store
from .session import Context, cancel_group, default_partitions, spark_context
from .tasks import planted_fault, shuffle_owner, warm_up_pair, warm_up_pass

# The session starts in the background once a driver level has more than
# driver_level_limit / EARLY states (levels grow by less than this factor per level).
EARLY = 8
# While that session is still starting, the driver goes on expanding levels of up to this
# many times driver_level_limit states (a level at the driver's speed rather than an idle wait).
WAIT = 40
WAIT_FROM = 10_000  # with a smaller driver_level_limit (tests, experiments) the hand-over is at the limit


def end_spark_children() -> None:
    """At exit, after a start was abandoned: end (SIGTERM) the JVM this process launched
    for it, which would otherwise go on booting until it notices that its parent is gone.
    Only this process's own descendants whose command line is Spark's launcher or driver."""
    parents, commands = {}, {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            parents[pid] = int(stat[stat.rfind(b")") + 2 :].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                commands[pid] = f.read()
        except (OSError, ValueError, IndexError):
            continue
    mine, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in mine} - mine
        mine |= more
        grew = bool(more)
    for pid in mine - {os.getpid()}:
        command = commands.get(pid, b"")
        if b"spark-submit" in command or b"spark-class" in command or b"org.apache.spark" in command:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)


class Session:
    """The Spark session of one run of the Spark engine: started in the background while
    the driver still expands small levels (``start_early``), or at the first level that
    needs it (``context``); stopped by ``close`` when this run started it.

    Args:
        master, verbose, preload, on_status: as ``spark_session.spark_context``.
        partitions: the partitions asked for (None: the session's default).
        group: the job group of the run's jobs (what ``cancel_group`` cancels).
        metrics: the engine's metrics, where the session's start time is written.
    """

    def __init__(
        self,
        *,
        master: str | None,
        verbose: bool,
        preload: tuple[str, ...],
        partitions: int | None,
        group: str,
        metrics: dict[str, Any],
        on_status: Callable[[str], None] | None = None,
    ) -> None:
        self.master, self.verbose, self.preload = master, verbose, preload
        self.partitions, self.group, self.metrics, self.on_status = partitions, group, metrics, on_status
        self.sc: Context | None = None  # the SparkContext, once started
        self.owned = False  # this run started it (and stops it)
        self.starter: threading.Thread | None = None  # the thread of start_early
        self.early: Any = None  # what start_early started (context, owned, seconds), or its error
        self.abandoned = False  # the search ended while the early start was still under way
        self._early_lock = threading.Lock()
        # Called with the context once it is up, after the warm-up (the store's probe job:
        # checker.spark.probe.probe_store); what it raises is the start's error.
        self.probe: Callable[[Any], None] | None = None
        self.probed = False  # the executors have read the store's probe

    def still_starting(self, size: int, limit: int) -> bool:
        """Whether the session started early is still coming up while a level of ``size``
        states is at most ``WAIT`` times ``limit`` (``driver_level_limit``): the driver then
        expands it itself rather than wait (the hand-over is at a level boundary, wherever
        it falls: the results do not depend on it)."""
        starter = self.starter
        if starter is None or self.sc is not None or limit < WAIT_FROM or not starter.is_alive():
            return False
        return size <= WAIT * limit

    def start_early(self) -> None:
        """Start the session in a thread of its own while the driver expands its last small
        levels (a level past ``driver_level_limit / EARLY`` states): the JVM's start, the
        Python workers' and the first job's warm-up overlap the driver's work."""
        if self.starter is not None:
            return
        self.abandoned = False

        def start() -> None:
            begin = time.perf_counter()
            early: Any = None
            try:
                sc, owned = spark_context(self.master, self.verbose, preload=self.preload)
                # A first job of the levels' shape: the JVM loads and compiles its code
                # paths and the Python workers start, before the first level needs them.
                n = self.partitions or default_partitions(sc)
                warm = sc.parallelize(range(n), n).mapPartitionsWithIndex(warm_up_pair).partitionBy(n, shuffle_owner)
                warm.mapPartitionsWithIndex(warm_up_pass).collect()
                if self.probe is not None and not self.abandoned:  # (the search over: its store is gone)
                    self.probe(sc)
                    self.probed = True
                early = (sc, owned, round(time.perf_counter() - begin, 3))
            except BaseException as e:  # reported by context(), in the search's own thread
                early = e
            with self._early_lock:
                self.early, abandoned = early, self.abandoned
            if abandoned and isinstance(early, tuple) and early[1]:
                early[0].stop()  # the search ended without it: stop what nobody will use

        self.starter = threading.Thread(target=start, name="kmc-spark-start", daemon=True)
        self.starter.start()

    def failed_early(self, kind: type[BaseException]) -> bool:
        """Whether the start in the background has ended in an error of ``kind``
        (``context`` raises it)."""
        with self._early_lock:
            return isinstance(self.early, kind)

    def abandon_early(self) -> bool:
        """Give up the session being started early, without waiting for it, when the search
        ended before it was needed: the starting thread stops it once it is up (in a
        ``kmc`` process that has exited by then, the JVM ends with it). Returns False when
        the start had already finished (the caller then stops what it started)."""
        starter = self.starter
        if starter is None:
            return False
        with self._early_lock:
            if self.early is None and starter.is_alive():
                if not self.abandoned:
                    atexit.register(end_spark_children)
                self.abandoned = True
                return True
        return False

    def _adopt_early(self, starter: threading.Thread) -> Context:
        """The session started by ``start_early``, once it is up (or its error)."""
        starter.join()
        early, self.early = self.early, None
        if isinstance(early, BaseException):
            raise early
        sc: Context
        sc, self.owned, seconds = early
        self.metrics["session_start_seconds"] = seconds
        self.metrics["session_started_early"] = True
        return sc

    def context(self, n: int | None = None) -> tuple[Context, int]:
        """The SparkContext, started (or taken from the early start) at the first call,
        and the partitions the levels run on: ``n`` (a saved level's), else those asked
        for, else the session's default."""
        sc = self.sc
        if sc is None:
            begin = time.perf_counter()
            if self.starter is not None:
                sc = self._adopt_early(self.starter)
            else:
                sc, self.owned = spark_context(self.master, self.verbose, status=self.on_status, preload=self.preload)
                self.metrics["session_start_seconds"] = round(time.perf_counter() - begin, 3)
            self.sc = sc
            self.metrics["master"] = sc.master
            sc.setJobGroup(self.group, "kmc breadth-first search (rows)", interruptOnCancel=False)
            n = n or self.partitions or default_partitions(sc)
            if self.on_status is not None:
                self.on_status(f"Spark session ready (master {sc.master}, {n} partitions); running the first level")
        return sc, n or self.partitions or default_partitions(sc)

    def width(self, n: int | None = None) -> int:
        """The partitions the levels run on (``context``'s)."""
        return self.context(n)[1]

    def cluster(self, store: RowsStore, n: int, small: bool) -> Cluster:
        """The cluster of the next level over ``store`` (``checker.partitioned.ports.Backend``):
        this process for a ``small`` level (unless a fault is planted: a first attempt's
        fault needs Spark's retries), else one Spark job, after the store's probe job
        (``probe_store``) the first time: one line if an executor cannot see the store."""
        fault = planted_fault()
        if small and fault is None:
            return InProcessCluster()
        sc = self.context(n)[0]
        if not self.probed:
            probe_store(sc, store)
            self.probed = True
        return SparkCluster(sc, fault=fault)

    def cancel(self) -> threading.Thread | None:
        """Cancel the run's running job, in a thread of its own (a call into the JVM may
        block); None when no session is up."""
        sc = self.sc
        if sc is None:
            return None
        thread = threading.Thread(target=cancel_group, args=(sc, self.group), name="kmc-spark-cancel", daemon=True)
        thread.start()
        return thread

    def close(self, leave_running: bool = False) -> None:
        """Stop the session this run started (one started early and never used too)."""
        if self.sc is None and self.starter is not None and not leave_running and not self.abandon_early():
            try:
                self.sc = self._adopt_early(self.starter)  # started early, up, then never needed
            except BaseException:
                pass  # nothing to stop: the early start failed, and no level needed Spark
        sc, owned = self.sc, self.owned
        self.sc = None
        if owned and not leave_running and sc is not None:
            sc.stop()
