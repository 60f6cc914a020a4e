"""What Spark runs around the partitioned level's tasks (``checker.partitioned.tasks``):
each task wrapped so that its Python worker keeps its copies of objects in the executor's
scratch directory and pickles rows of Python states as Spark does (``in_spark``), the test
hook that fails a first attempt (``planted_fault``), the partition function of the shuffle,
the warm-up job's and the store's probe job's tasks. Plain module-level functions, bound
with ``functools.partial``."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..blobs import Blobs
from ..blobs.arrow import use_scratch
from ..partitioned.rows_write import use_pickler

Task = Callable[[int, Iterator[Any]], Iterable[Any]]


def prepare_worker() -> None:
    """Set up this process for the algorithm's tasks: rows of Python states pickled with
    Spark's cloudpickle (a model defined in a script travels by value), and, in a Spark
    task, the copies of an object store's objects kept under the executor's own scratch
    directory (removed with the executor). Without pyspark, nothing changes."""
    try:
        from pyspark import SparkFiles, TaskContext, cloudpickle
    except ImportError:
        return
    use_pickler(cloudpickle)
    if TaskContext.get() is not None:
        use_scratch(SparkFiles.getRootDirectory())


def in_spark(task: Task, index: int, records: Iterator[Any]) -> Iterator[Any]:
    """``task(index, records)`` run as a Spark task (``prepare_worker`` first)."""
    prepare_worker()
    yield from task(index, records)


def expanding(fault: str | None, task: Task, index: int, records: Iterator[Any]) -> Iterator[Any]:
    """The expansion ``task`` run as a Spark task, with the ``fault`` (``planted_fault``)
    planted in the first attempt of rank partition 0's."""
    prepare_worker()
    if fault is not None and index == 0:
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None and context.attemptNumber() == 0:
            _plant(fault)
    yield from task(index, records)


def read_probe(
    store: Blobs, name: str, digest: str, _index: int, _records: Iterator[Any]
) -> Iterator[tuple[str, str | None]]:
    """The store's probe job: read the object ``name`` the driver wrote and yield
    ``(host, None)``, or ``(host, why)`` when this executor cannot read it or reads other
    bytes (``digest``: its SHA-256)."""
    import hashlib
    import socket

    host = socket.gethostname()
    try:
        data = store.get(name)
    except OSError as e:
        yield (host, f"{type(e).__name__}: {e}")
        return
    yield (host, None if hashlib.sha256(data).hexdigest() == digest else "it holds other bytes")


def shuffle_owner(key: int) -> int:
    """The partition function of the shuffle: a record's key is its owner's partition
    number (PySpark sends key ``k`` to partition ``shuffle_owner(k) % n``)."""
    return key


FAULT_VARIABLE = "KMC_TEST_SPARK_FAULT"


def planted_fault() -> str | None:
    """A fault to plant in the first attempt of rank partition 0's expansion tasks, for
    the tests of Spark's retries and of interrupts (``_plant``): the environment
    variable ``KMC_TEST_SPARK_FAULT``, read here only, on the driver, as a level's job is
    built (``None``: no fault, the production case). A ``sigint:PATH`` fault is given the
    driver's process group, which a terminal's Ctrl-C reaches."""
    fault = os.environ.get(FAULT_VARIABLE)
    if not fault:
        return None
    if fault.startswith("sigint:"):
        return f"sigint:{os.getpgid(0)}:{fault[len('sigint:') :]}"
    return fault


def _plant(kind: str) -> None:
    """The planted faults (``planted_fault``): ``"kill"`` ends this Python worker as a
    crash would (the OOM killer, a stray signal), ``"kill:PATH"`` does so once (``PATH``
    is created to remember it); ``"sigint:GROUP:PATH"`` sends SIGINT to the driver's
    process group ``GROUP`` once, as Ctrl-C in a terminal does, and to this worker
    (``PATH`` is created to remember it was sent; PySpark's daemon gives its workers a
    process group of their own, but a worker started without it is in the terminal's
    group); ``"raise:PATH"`` raises, after creating ``PATH`` (if not there yet) to say it
    did; anything else raises."""
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind.startswith("kill:"):
        try:
            os.close(os.open(kind[len("kill:") :], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)
    if kind.startswith("sigint:"):
        group, _, marker = kind[len("sigint:") :].partition(":")
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.killpg(int(group), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # and this worker, as without PySpark's daemon
        return
    if kind.startswith("raise:"):
        os.close(os.open(kind[len("raise:") :], os.O_CREAT | os.O_WRONLY))
    raise RuntimeError("kmc test fault: the first attempt of this task fails")


def warm_up_pair(index: int, _records: Iterator[Any]) -> Iterator[tuple[int, None]]:
    """The warm-up job's first stage: one record for partition ``index``."""
    yield (index, None)


def warm_up_pass(_index: int, records: Iterable[Any]) -> Iterable[Any]:
    """The warm-up job's second stage: passes its records on."""
    return records
