"""Worker processes that expand frontier chunks beside the rows search (``--workers N``).

A chunk's work splits in two (``checker.batch.RowsSearch``): ``prepare_chunk`` asks the
store only about the levels before this one, which do not change while a level is
expanded (``checker.search.Store.begin_level``): the kernel's successors, their counts,
the step properties' first violations, the fingerprints, one successor per fingerprint
by least key, those already stored in an earlier level dropped, the coverage counts. The
commit (``expand``) asks which of the rest this level stored already, stores the others
and checks them, in chunk order. ``ExpandPool`` runs the first in worker processes forked
at the level's start, one chunk a worker at a time, while the search commits the chunks
before: the store, the queue and every count stay in the search's process, and the
chunks are committed in frontier order, so a run with workers stores the same states with
the same numbers, parents and counterexamples as one without.

Each worker holds at most one chunk: the search sends a worker its next chunk only
after it has received the worker's last answer, so neither side ever waits on the other
while both have something to send. A worker ignores SIGINT (the search stops the run at a
level boundary) and ends when its pipe closes; the workers are daemons, ended with the
search's process. A worker's failure (a model's exception, a kernel that disagrees with
its model) is not carried across: the search prepares that chunk again in its own
process, where the same failure is raised with its own traceback (the work is a
function of the chunk).
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import pickle
import signal
from collections import deque
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from .driver import ResourceStop

# A task: (chunk, depth, rank, level, skip) -> the prepared chunk (``RowsSearch.prepare_chunk``).
Prepare = Callable[[Any, int, int, int, frozenset], Any]

# Levels of fewer chunks than this are expanded in the search's own process: the
# workers' start and the pipes cost more than they save there.
MIN_CHUNKS = 3


def default_workers() -> int:
    """The processes the machine gives this one (its CPU affinity): the default of ``--workers``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# A pipe's buffer (Linux's default most a process may ask for): fewer switches between
# the processes while a chunk's arrays pass.
PIPE_BYTES = 1 << 20


def send(conn: Connection, obj: Any) -> None:
    """Send ``obj`` down a pipe: its pickle with the arrays left out (protocol 5's
    out-of-band buffers), then each array's bytes written straight from its memory, so
    an array is copied once on each side (by the system) rather than into a pickle and
    out of it again."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    conn.send((head, [r.nbytes for r in raws]))
    fd = conn.fileno()
    for raw in raws:
        done = 0
        while done < raw.nbytes:
            done += os.write(fd, raw[done:])


def receive(conn: Connection) -> Any:
    """What ``send`` sent: the arrays are rebuilt on buffers read straight from the pipe.

    Raises:
        EOFError: the pipe closed before the whole object came.
    """
    head, sizes = conn.recv()
    fd = conn.fileno()
    buffers = []
    for size in sizes:
        buf = np.empty(size, dtype=np.uint8)
        view = buf.data  # (a memoryview of its bytes)
        done = 0
        while done < size:
            got = os.readv(fd, [view[done:]])
            if not got:
                raise EOFError("the pipe closed")
            done += got
        buffers.append(buf)
    return pickle.loads(head, buffers=buffers)


def _widen(conn: Connection) -> None:
    try:
        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:  # a lower system limit: the default buffer works, with more switches
        pass


def _serve(prepare: Prepare, tasks: Connection, answers: Connection) -> None:
    """A worker's loop: prepare each chunk received, send back the result (or ``None``
    when preparing it raised), until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the search decides when a run stops
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            task = receive(tasks)
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            answer = prepare(*task)
        except BaseException:  # prepared again by the search, which raises it itself
            answer = None
        try:
            send(answers, answer)
        except (BrokenPipeError, OSError):
            return


class WorkerFailed(Exception):
    """A worker could not prepare a chunk (the search prepares it again itself)."""


class WorkerEnded(WorkerFailed):
    """A worker's process ended."""


class ExpandPool:
    """``workers`` processes forked from this one, each calling ``prepare`` on the chunks
    it is sent (see the module).

    Args:
        prepare: the chunk's work, a function of the task only.
        workers: how many processes.
    """

    def __init__(self, prepare: Prepare, workers: int) -> None:
        ctx = multiprocessing.get_context("fork")
        self._tasks: list[Connection] = []
        self._answers: list[Connection] = []
        self._procs = []
        for i in range(workers):
            task_out, task_in = ctx.Pipe(duplex=False)  # (receiving end, sending end)
            answer_out, answer_in = ctx.Pipe(duplex=False)
            _widen(task_in)
            _widen(answer_in)
            proc = ctx.Process(target=_serve, args=(prepare, task_out, answer_in), name=f"kmc-expand-{i}", daemon=True)
            proc.start()
            task_out.close()
            answer_in.close()
            self._tasks.append(task_in)
            self._answers.append(answer_out)
            self._procs.append(proc)
        self.workers = workers
        self._next = 0  # the worker the next task goes to
        self._busy: deque[int] = deque()  # the workers holding a task, in the order sent

    def idle(self) -> bool:
        """Whether some worker holds no task."""
        return len(self._busy) < self.workers

    def send(self, task: tuple) -> None:
        """Give the next worker a task (``idle()`` must be true)."""
        w = self._next
        self._next = (w + 1) % self.workers
        send(self._tasks[w], task)
        self._busy.append(w)

    def receive(self) -> Any:
        """The answer to the oldest task sent.

        Raises:
            WorkerFailed: the worker raised (``WorkerEnded``: it ended).
        """
        w = self._busy.popleft()
        try:
            answer = receive(self._answers[w])
        except (EOFError, OSError) as e:
            raise WorkerEnded(f"expansion worker {w} ended") from e
        if answer is None:
            raise WorkerFailed(f"expansion worker {w} failed")
        return answer

    def drain(self) -> None:
        """Drop the answers of every task still out (a level left half-way)."""
        while self._busy:
            try:
                self.receive()
            except WorkerFailed:
                pass

    def close(self) -> None:
        """End the workers."""
        for conn in self._tasks:
            try:
                send(conn, None)
            except OSError:
                pass
            conn.close()
        for conn in self._answers:
            conn.close()
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        self._tasks, self._answers, self._procs, self._busy = [], [], [], deque()


def in_order(pool: ExpandPool, tasks: Iterator[tuple], again: Prepare) -> Iterator[tuple[tuple, Any]]:
    """``(task, prepared)`` for every task, in order, prepared by the pool's workers; a
    worker's next task is sent before its last answer is handed on, so the workers work
    while the caller commits. A task a worker failed on is prepared again by ``again``,
    which raises its error.

    Raises:
        ResourceStop: a worker ended (the system's memory killer is the likely cause): the
            run stops as at its memory ceiling, at the level boundary, and can be resumed.
    """
    out: deque[tuple] = deque()
    source = iter(tasks)

    def fill() -> None:
        while pool.idle():
            task = next(source, None)
            if task is None:
                return
            pool.send(task)
            out.append(task)

    try:
        fill()
        while out:
            task = out.popleft()
            try:
                prepared = pool.receive()
            except WorkerEnded as e:
                raise ResourceStop(
                    "out-of-memory", f"{e} (the system may have stopped it for memory; resume with fewer --workers)"
                ) from e
            except WorkerFailed:
                prepared = again(*task)
            fill()
            yield task, prepared
    finally:
        pool.drain()
