"""How the Spark engine's search (``checker.spark_search``) gets its session: started in
the background while the driver still expands small levels, with a warm-up job of the
levels' shape, and waited for only when a level needs it."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
from typing import Any

from .spark_rows_tasks import _nothing, _owner, _pair
from .spark_session import default_partitions, spark_context

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


class SessionStarter:
    """The session part of ``SparkSearch`` (which sets ``engine``, ``rows``, ``sc``,
    ``owned``, ``n``, ``starter``, ``early`` and ``waited``)."""

    engine: Any
    rows: Any
    sc: Any
    owned: bool
    n: int | None
    starter: threading.Thread | None
    early: Any
    waited: bool

    def _still_starting(self, limit) -> bool:
        """Whether the session started early is still coming up while the level is at
        most ``WAIT`` times ``driver_level_limit``: the driver then expands it itself
        rather than wait (the hand-over is at a level boundary, wherever it falls: the
        results do not depend on it)."""
        starter = self.starter
        if starter is None or self.sc is not None or limit < WAIT_FROM or not starter.is_alive():
            return False
        return self.rows.size() <= WAIT * limit

    def _start_early(self):
        """Start the session in a thread of its own while the driver expands its last small
        levels (a level past ``driver_level_limit / EARLY`` states): the JVM's start, the
        Python workers' and the first job's warm-up overlap the driver's work."""
        if self.starter is not None:
            return
        engine = self.engine
        self._early_lock = threading.Lock()
        self.abandoned = False

        def start():
            begin = time.perf_counter()
            early: Any = None
            try:
                sc, owned = spark_context(engine.master, engine.verbose, preload=engine.preload)
                # A first job of the levels' shape: the JVM loads and compiles its code
                # paths and the Python workers start, before the first level needs them.
                n = engine.partitions or self.n or default_partitions(sc)
                warm = sc.parallelize(range(n), n).mapPartitionsWithIndex(_pair).partitionBy(n, _owner)
                warm.mapPartitionsWithIndex(_nothing).collect()
                early = (sc, owned, round(time.perf_counter() - begin, 3))
            except BaseException as e:  # reported by session(), in the search's own thread
                early = e
            with self._early_lock:
                self.early, abandoned = early, self.abandoned
            if abandoned and isinstance(early, tuple) and early[1]:
                early[0].stop()  # the search ended without it: stop what nobody will use

        self.starter = threading.Thread(target=start, name="kmc-spark-start", daemon=True)
        self.starter.start()

    def _abandon_early(self) -> bool:
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

    def _adopt_early(self):
        """The session started by ``_start_early``, once it is up (or its error)."""
        self.starter.join()
        early, self.early = self.early, None
        if isinstance(early, BaseException):
            raise early
        sc, self.owned, seconds = early
        self.engine.metrics["session_start_seconds"] = seconds
        self.engine.metrics["session_started_early"] = True
        return sc

    def session(self):
        """The SparkContext, started at the first level that needs it."""
        engine = self.engine
        if self.sc is None:
            begin = time.perf_counter()
            if self.starter is not None:
                self.sc = self._adopt_early()
            else:
                self.sc, self.owned = spark_context(
                    engine.master, engine.verbose, status=engine.on_status, preload=engine.preload
                )
                engine.metrics["session_start_seconds"] = round(time.perf_counter() - begin, 3)
            self.sc.setJobGroup(engine.group, "kmc breadth-first search (rows)", interruptOnCancel=False)
            if self.n is None:
                self.n = engine.partitions or default_partitions(self.sc)
            if engine.on_status is not None:
                engine.on_status(
                    f"Spark session ready (master {self.sc.master}, {self.n} partitions); running the first level"
                )
        return self.sc
