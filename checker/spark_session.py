"""Spark plumbing of the Spark engine: starting and stopping a SparkContext, keeping
Spark's, the JVM's and py4j's log output off the terminal, cancelling a job group, and
one-line error messages.

Nothing here knows the search: ``checker.spark_rows`` builds its levels on it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import EngineError
from .spark_master import DEFAULT_MASTER, MAX_PARTITIONS, check_reachable, validate_master

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


# The driver's JVM (in local mode, the executor's too) only schedules tasks and moves small
# records: the states never enter it. The client JIT compiler alone and the serial
# collector halve its CPU time (session start and per-level jobs, measured on local[2]).
# They come first on the JVM's command line: an option of the same kind the user gives
# (spark.driver.extraJavaOptions in SparkConf defaults) comes later and wins.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


PRELOAD_VARIABLE = "KMC_SPARK_PRELOAD"  # read by checker.spark_daemon
# Set in the environment of every Spark executor's Python: no Spark engine starts there.
TASK_VARIABLE = "KMC_SPARK_TASK"


def spark_context(master=None, verbose=False, status=None, preload=()) -> tuple[Any, bool]:
    """The running SparkContext, or a new one.

    Args:
        master: the master URL of a new context (default ``DEFAULT_MASTER``,
            ``"local[*,4]"``: local mode with four attempts per task).
        verbose: keep Spark's log messages.
        status: called with a short message when the JVM and the context are being
            started (they take seconds to tens of seconds).
        preload: names of modules the tasks will import (the model's, its kernel's), for
            a new local context's worker daemon to import before it forks its workers
            (``checker.spark_daemon``); the engine core names no model itself.

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
    if os.environ.get(TASK_VARIABLE):
        # A model's module that runs a Spark engine when it is imported, imported by a task
        # to unpickle the model: one line naming the module's line (the task's traceback),
        # not a second Spark started inside the first one's worker.
        raise EngineError(
            "a Spark engine cannot start inside a Spark task: the model's module starts one when it is "
            "imported (put that code under 'if __name__ == \"__main__\":')"
        )
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
    conf = SparkConf().setMaster(master).setAppName("kmc").set("spark.ui.enabled", "false")
    # kmc draws its own progress line: Spark's console progress bar would interleave with it
    # (even with --verbose, which keeps Spark's log messages)
    conf.set("spark.ui.showConsoleProgress", "false")
    java_options = " ".join([DRIVER_JAVA_OPTIONS, conf.get("spark.driver.extraJavaOptions", "")]).strip()
    log_config = None
    if not verbose:
        fd, log_config = tempfile.mkstemp(prefix="kmc-log4j2-", suffix=".properties")
        # Removed below once the context is up; at exit too, should the process end while a
        # start in the background (checker.spark_start) is still under way.
        atexit.register(_remove_quietly, log_config)
        with os.fdopen(fd, "w") as f:
            f.write(_QUIET_LOG4J2)
        java_options = f"{java_options} -Dlog4j2.configurationFile=file:{log_config}"
    conf.set("spark.driver.extraJavaOptions", java_options)
    conf.setExecutorEnv(TASK_VARIABLE, "1")
    if master.startswith("local"):
        # The workers fork from a daemon that has imported the tasks' modules already
        # (checker.spark_daemon); on a cluster, PySpark's own daemon.
        conf.set("spark.python.daemon.module", "kmc.checker.spark_daemon")
        conf.setExecutorEnv(PRELOAD_VARIABLE, ",".join(preload))
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
        why = str(e) if isinstance(e, EngineError) else one_line(e)
        raise EngineError(f"could not start Spark (master {master!r}): {why}") from None
    finally:
        if relay is not None:
            relay.release()
        if main and handler is not None:
            signal.signal(signal.SIGINT, handler)
        if log_config is not None:
            _remove_quietly(log_config)
    if not verbose:
        # Not even ERROR: a failed or cancelled job logs a JVM stack trace per task
        # attempt, and every failure reaches the caller as an exception (one line).
        sc.setLogLevel("OFF")
    return sc, True


def _remove_quietly(path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _quiet_gateway(conf) -> tuple[Any, _Relay]:
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
        raise EngineError(relay.reason() or one_line(e)) from None
    os.close(write_end)
    return gateway, relay


class _Relay:
    """Copies a JVM's stderr to ours, without its start-up noise, once released."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.released = False
        self.lock = threading.Lock()

    def start(self, stream) -> None:
        self.thread = threading.Thread(target=self._pump, args=(stream,), name="kmc-spark-stderr", daemon=True)
        self.thread.start()

    def wait(self, seconds) -> None:
        self.thread.join(seconds)

    def _pump(self, stream) -> None:
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


def partitions_bad(partitions) -> bool:
    """True when ``partitions`` is neither ``None`` nor an integer from 1 to ``MAX_PARTITIONS``."""
    if partitions is None:
        return False
    return isinstance(partitions, bool) or not isinstance(partitions, int) or not 1 <= partitions <= MAX_PARTITIONS


@contextlib.contextmanager
def quiet_py4j(enabled) -> Iterator[None]:
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


def cancel_group(sc, group) -> None:
    try:
        sc.cancelJobGroup(group)
    except Exception:  # the context may be stopping; the stop flag is enough then
        pass


def default_partitions(sc) -> int:
    """The Spark engine's partition count when none is given: Spark's default parallelism,
    one partition per executor core (``spark.default.parallelism`` when it is set), e.g.
    2 under ``local[2]``."""
    return max(1, sc.defaultParallelism)


def one_line(error) -> str:
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
