"""Spark plumbing of the Spark engine: starting and stopping a SparkContext, keeping
Spark's, the JVM's and py4j's log output off the terminal, cancelling a job group, and
one-line error messages.

Nothing here knows the search: ``checker.spark.engine`` builds its levels on it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol

from ..base.errors import EngineError
from ..partitioned.cluster import one_line
from .master import DEFAULT_MASTER, MAX_PARTITIONS, check_reachable, validate_master


class Context(Protocol):
    """What kmc calls of a pyspark ``SparkContext`` (pyspark ships no type information; its
    RDDs stay ``Any``)."""

    @property
    def master(self) -> str | None: ...

    @property
    def defaultParallelism(self) -> int: ...  # noqa: N802 (pyspark's name)

    def parallelize(self, c: Iterable[int], numSlices: int) -> Any: ...  # noqa: N803

    def setJobGroup(self, groupId: str, description: str, interruptOnCancel: bool = False) -> None: ...  # noqa: N802, N803

    def cancelJobGroup(self, groupId: str) -> None: ...  # noqa: N802, N803

    def setLogLevel(self, logLevel: str) -> None: ...  # noqa: N802, N803

    def stop(self) -> None: ...


# Lines the JVM prints on stderr before any logging is configured.
_JVM_NOISE = ("WARNING: Using incubator modules",)


# The driver's JVM (in local mode, the executor's too) only schedules tasks and moves small
# records: the states never enter it. The client JIT compiler alone and the serial
# collector halve its CPU time (session start and per-level jobs, measured on local[2]).
# They come first on the JVM's command line: an option of the same kind the user gives
# (spark.driver.extraJavaOptions in SparkConf defaults) comes later and wins.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


PRELOAD_VARIABLE = "KMC_SPARK_PRELOAD"  # read by checker.spark.daemon
# Set in the environment of every Spark executor's Python: no Spark engine starts there.
TASK_VARIABLE = "KMC_SPARK_TASK"


def submitted() -> bool:
    """Whether this process was started by ``spark-submit`` (or another Spark launcher
    that runs Python beside a JVM of its own, such as the ``pyspark`` shell): that JVM is
    already up, with the master and the settings the launcher gave it, and it tells
    its Python where to reach it (``PYSPARK_GATEWAY_PORT``)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def submit_master() -> str | None:
    """The master ``spark-submit`` gave this process (its JVM's ``spark.master``), or
    None when kmc was not started by spark-submit."""
    if not submitted():
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # reaches spark-submit's JVM, whose settings SparkConf() reads
    master: str | None = SparkConf().get("spark.master", None)
    return master


def check_submit_master(master: str | None) -> str | None:
    """Under spark-submit: the submit's master, after refusing a ``master`` (``--master``,
    or a spec's ``[spark] master``) that contradicts it; else None.

    Raises:
        EngineError: one line naming both masters.
    """
    given = submit_master()
    if given is not None and master is not None and master != given:
        raise EngineError(
            f"--master {master} contradicts spark-submit's master {given}: under spark-submit, "
            "give the master to spark-submit only"
        )
    return given


def session_conf(
    conf: Any,
    master: str,
    verbose: bool,
    preload: Iterable[str] = (),
    log_config: str | Path | None = None,
    submit: bool = False,
) -> Any:
    """``conf`` (a ``SparkConf``) with kmc's settings for a session on ``master``.

    The driver's and the executors' JVMs get ``DRIVER_JAVA_OPTIONS`` and, unless
    ``verbose``, the quiet logging of ``log_config`` (a log4j2 configuration file), first
    on their command lines: an option the user gives (``spark.driver.extraJavaOptions``,
    ``spark.executor.extraJavaOptions``) comes later and wins. With ``submit`` (the
    session of a ``spark-submit``), the master and every setting spark-submit gave are
    kept: kmc only adds what it left unset, and not the driver's JVM options (that JVM
    is running already).
    """
    if not submit:
        conf.setMaster(master).setAppName("kmc")
    conf.setIfMissing("spark.ui.enabled", "false")
    options = DRIVER_JAVA_OPTIONS
    # kmc draws its own progress line: Spark's console progress bar would interleave with it
    # (even with --verbose, which keeps Spark's log messages)
    conf.setIfMissing("spark.ui.showConsoleProgress", "false")
    if not verbose:
        if submit:  # spark-submit's JVM logs as its configuration says: warnings only from the start
            conf.setIfMissing("spark.log.level", "WARN")
        if log_config is not None:
            options = f"{options} -Dlog4j2.configurationFile={Path(log_config).as_uri()}"
    kinds = ("executor",) if submit else ("driver", "executor")
    for kind in kinds:
        key = f"spark.{kind}.extraJavaOptions"
        conf.set(key, " ".join([options, conf.get(key, "")]).strip())
    conf.setExecutorEnv(TASK_VARIABLE, "1")
    if master.startswith("local"):
        # The workers fork from a daemon that has imported the tasks' modules already
        # (checker.spark.daemon); on a cluster, PySpark's own daemon.
        conf.setIfMissing("spark.python.daemon.module", "kmc.checker.spark.daemon")
        conf.setExecutorEnv(PRELOAD_VARIABLE, ",".join(preload))
    return conf


# Spark's logging for kmc's sessions, a file installed with kmc: the
# executors' JVMs read it at the same path as the driver's (kmc and its Python are
# installed at the same place on every node, as the executors' Python needs).
QUIET_LOG4J2 = Path(__file__).with_name("log4j2.properties")


def spark_context(
    master: str | None = None,
    verbose: bool = False,
    status: Callable[[str], None] | None = None,
    preload: Iterable[str] = (),
) -> tuple[Context, bool]:
    """The running SparkContext, or a new one.

    Args:
        master: the master URL of a new context (default ``DEFAULT_MASTER``,
            ``"local[*,4]"``: local mode with four attempts per task). Under spark-submit
            (``submitted``), the submit's master: a ``master`` that differs is refused.
        verbose: keep Spark's log messages.
        status: called with a short message when the JVM and the context are being
            started (they take seconds to tens of seconds).
        preload: names of modules the tasks will import (the model's, its kernel's), for
            a new local context's worker daemon to import before it forks its workers
            (``checker.spark.daemon``); the engine core names no model itself.

    Returns:
        ``(context, created)``: ``created`` is True when the caller started the context
        and should stop it.

    Raises:
        EngineError: pyspark or Java is missing, the master URL is malformed or
            unreachable, or contradicts spark-submit's, or Spark could not start.
    """
    try:
        from pyspark import SparkConf, SparkContext
    except ImportError as e:
        raise EngineError(f"the spark engine needs pyspark ({e})") from None
    if os.environ.get(TASK_VARIABLE):
        # A model's module that runs a Spark engine when it is imported, imported by a task
        # to unpickle the model: one line naming the module's line (the task's traceback),
        # not a second Spark started inside the first one's worker.
        raise EngineError(
            "a Spark engine cannot start inside a Spark task: the model's module starts one when it is "
            "imported (put that code under 'if __name__ == \"__main__\":')"
        )
    active: Context | None = SparkContext._active_spark_context
    if active is not None:
        return active, False
    master, by_submit = _session_master(master)
    # Executors must run the driver's Python (same version, same installed packages).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = session_conf(SparkConf(), master, verbose, preload, QUIET_LOG4J2, submit=by_submit)
    # PySpark replaces the SIGINT handler when a context starts; keep the caller's,
    # which is expected to set ``stop_requested`` (or call ``cancel``).
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGINT) if main else None
    gateway = relay = None
    say: Callable[[str], None] = status or (lambda message: None)
    try:
        if SparkContext._gateway is None and not by_submit:
            say("starting the JVM (Spark's driver)")
            if not verbose:
                gateway, relay = _quiet_gateway(conf)
        say(f"starting the Spark session (master {master}{', from spark-submit' if by_submit else ''})")
        sc: Context = SparkContext(conf=conf, gateway=gateway)
    except Exception as e:
        why = str(e) if isinstance(e, EngineError) else one_line(e)
        raise EngineError(f"could not start Spark (master {master!r}): {why}") from None
    finally:
        if relay is not None:
            relay.release()
        if main and handler is not None:
            signal.signal(signal.SIGINT, handler)
    if not verbose:
        # Not even ERROR: a failed or cancelled job logs a JVM stack trace per task
        # attempt, and every failure reaches the caller as an exception (one line).
        sc.setLogLevel("OFF")
    return sc, True


def _session_master(master: str | None) -> tuple[str, bool]:
    """The master of a new session (``spark_context``'s ``master``) and whether it is
    spark-submit's.

    Raises:
        EngineError: no Java, or the master URL is malformed, unreachable, or contradicts
            spark-submit's.
    """
    submit = check_submit_master(master)
    if submit is not None:
        # spark-submit's JVM is up with its master and settings: kept as they are (no
        # setMaster, no probe of a cluster spark-submit has reached already).
        return submit, True
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise EngineError("the spark engine needs Java: no 'java' on PATH and JAVA_HOME is not set")
    master = validate_master(DEFAULT_MASTER if master is None else master)
    check_reachable(master)  # seconds, not Spark's minute of registration retries
    if master.startswith("local") or master.startswith("spark://127."):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return master, False


def _quiet_gateway(conf: Any) -> tuple[Any, _Relay]:
    """Start PySpark's JVM with its stderr relayed through a filter of start-up noise.

    PySpark starts one JVM per process and reuses it for every later context, so this
    only runs for the first context of a process. Returns ``(gateway, relay)``; the
    relay holds the JVM's output until ``relay.release()``, so that a JVM that fails to
    start is reported by one line of an ``EngineError`` rather than by its stack trace.
    """
    from pyspark import java_gateway

    relay = _Relay()
    read_end, write_end = os.pipe()
    relay.start(os.fdopen(read_end, "rb"))
    try:
        # (pyspark leaves this function unannotated)
        gateway = java_gateway.launch_gateway(conf, popen_kwargs={"stderr": write_end})  # type: ignore[no-untyped-call]
    except Exception as e:
        os.close(write_end)
        relay.wait(10)  # the JVM has exited: read to the end of what it printed
        raise EngineError(relay.reason() or one_line(e)) from None
    os.close(write_end)
    return gateway, relay


class _Relay:
    """Copies a JVM's stderr to ours, without its start-up noise, once released."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.released = False
        self.lock = threading.Lock()

    def start(self, stream: IO[bytes]) -> None:
        self.thread = threading.Thread(target=self._pump, args=(stream,), name="kmc-spark-stderr", daemon=True)
        self.thread.start()

    def wait(self, seconds: float) -> None:
        self.thread.join(seconds)

    def _pump(self, stream: IO[bytes]) -> None:
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

    def release(self) -> None:
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


def partitions_bad(partitions: object) -> bool:
    """True when ``partitions`` is neither ``None`` nor an integer from 1 to ``MAX_PARTITIONS``."""
    if partitions is None:
        return False
    return isinstance(partitions, bool) or not isinstance(partitions, int) or not 1 <= partitions <= MAX_PARTITIONS


@contextlib.contextmanager
def quiet_py4j(enabled: bool) -> Iterator[None]:
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


def _not_from_py4j(record: logging.LogRecord) -> bool:
    return "py4j" not in Path(record.pathname).parts


def cancel_group(sc: Context, group: str) -> None:
    try:
        sc.cancelJobGroup(group)
    except Exception:  # the context may be stopping; the stop flag is enough then
        pass


def default_partitions(sc: Context) -> int:
    """The Spark engine's partition count when none is given: Spark's default parallelism,
    one partition per executor core (``spark.default.parallelism`` when it is set), e.g.
    2 under ``local[2]``."""
    return max(1, sc.defaultParallelism)
