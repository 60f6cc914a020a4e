"""Worker processes that expand frontier chunks beside the rows search (``--workers N``).

A chunk's work splits in two (``checker.local.rows.RowsSearch``): ``prepare_chunk`` asks the
store only about the levels before this one, which do not change while a level is
expanded (``checker.core.parts.Store.begin_level``): the kernel's successors, their counts,
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
while both have something to send. A worker ignores SIGINT and SIGTERM (a signal to the
process group reaches the search, which stops the run at a level boundary and ends the
workers) and ends when its pipe closes. A worker dies with the search's process, however
that ends (SIGKILL, the system's memory killer): the system kills it then (Linux's
parent-death signal), it holds no end of another worker's pipes nor of its own but its
two, so the search's death closes its pipes, and a worker that finds its parent gone
exits. The search never waits on a worker without a bound: it looks at its stop request
(``ExpandPool.stopping``) every fraction of a second while it waits to write a chunk or
read an answer, so a signal stops the run, and kills the workers, even when a worker is
stopped (SIGSTOP) or hung. A worker's failure (a model's exception, a kernel that disagrees with
its model) is not carried across: the search prepares that chunk again in its own
process, where the same failure is raised with its own traceback (the work is a
function of the chunk).
"""

from __future__ import annotations

import ctypes
import fcntl
import multiprocessing
import os
import pickle
import select
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from ..core.parts import ResourceStop

# A task: (chunk, depth, rank, level, skip) -> the prepared chunk (``RowsSearch.prepare_chunk``).
Prepare = Callable[[Any, int, int, int, frozenset[str]], Any]
# A task as ``RowsSearch`` sends it: (chunk, depth, rank, level, skip).
Task = tuple[Any, int, int, int, frozenset[str]]

# Levels of fewer chunks than this are expanded in the search's own process: the
# workers' start and the pipes cost more than they save there.
MIN_CHUNKS = 3


# A pipe's buffer (Linux's default most a process may ask for): fewer switches between
# the processes while a chunk's arrays pass.
PIPE_BYTES = 1 << 20


# How long the search waits on a worker's pipe before it looks at its stop request again.
POLL_SECONDS = 0.2
_LENGTH = 8  # the bytes of a message's head length


def never() -> bool:
    return False


class Stopped(Exception):
    """The search was asked to stop while it waited on a worker."""


def _wait(fd: int, write: bool, stopping: Callable[[], bool] | None) -> None:
    """Until ``fd`` is ready (to write, or to read), looking at ``stopping`` in between.

    Raises:
        Stopped: ``stopping()`` became true meanwhile.
    """
    if stopping is None:
        return  # a blocking descriptor: the read or write itself waits
    while True:
        if stopping():
            raise Stopped
        ready = select.select([] if write else [fd], [fd] if write else [], [], POLL_SECONDS)
        if ready[0] or ready[1]:
            return


def _write_all(fd: int, data: Any, stopping: Callable[[], bool] | None) -> None:
    view = memoryview(data).cast("B")
    done = 0
    while done < view.nbytes:
        _wait(fd, True, stopping)
        try:
            done += os.write(fd, view[done:])
        except BlockingIOError:
            continue


def _read_into(fd: int, view: memoryview, stopping: Callable[[], bool] | None) -> None:
    done = 0
    while done < view.nbytes:
        _wait(fd, False, stopping)
        try:
            got = os.readv(fd, [view[done:]])
        except BlockingIOError:
            continue
        if not got:
            raise EOFError("the pipe closed")
        done += got


def send(conn: Connection, obj: Any, stopping: Callable[[], bool] | None = None) -> None:
    """Send ``obj`` down a pipe: its pickle with the arrays left out (protocol 5's
    out-of-band buffers), then each array's bytes written straight from its memory, so
    an array is copied once on each side (by the system) rather than into a pickle and
    out of it again. With ``stopping`` (the descriptor then non-blocking), every wait
    for room in the pipe is bounded and looks at it.

    Raises:
        Stopped: ``stopping()`` became true before the whole object was written.
    """
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    sizes = pickle.dumps([r.nbytes for r in raws], protocol=5)
    fd = conn.fileno()
    for part in (len(head).to_bytes(_LENGTH, "big"), head, len(sizes).to_bytes(_LENGTH, "big"), sizes, *raws):
        _write_all(fd, part, stopping)


def receive(conn: Connection, stopping: Callable[[], bool] | None = None) -> Any:
    """What ``send`` sent: the arrays are rebuilt on buffers read straight from the pipe.
    With ``stopping``, every wait for the pipe is bounded and looks at it.

    Raises:
        EOFError: the pipe closed before the whole object came.
        Stopped: ``stopping()`` became true meanwhile.
    """
    fd = conn.fileno()

    def message() -> bytes:
        length = bytearray(_LENGTH)
        _read_into(fd, memoryview(length), stopping)
        data = bytearray(int.from_bytes(length, "big"))
        _read_into(fd, memoryview(data), stopping)
        return bytes(data)

    head = message()
    sizes = pickle.loads(message())
    buffers = []
    for size in sizes:
        buf = np.empty(size, dtype=np.uint8)
        _read_into(fd, buf.data, stopping)
        buffers.append(buf)
    return pickle.loads(head, buffers=buffers)


def _widen(conn: Connection) -> None:
    try:
        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:  # a lower system limit: the default buffer works, with more switches
        pass


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def die_with_parent(parent: int) -> None:
    """Have the system kill this process when its parent ``parent`` dies (Linux), and
    exit at once if it has died already (before the request took effect)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the pipes' end and the parent's check below still end the worker
    if os.getppid() != parent:
        os._exit(0)


def _serve(prepare: Prepare, tasks: Connection, answers: Connection, parent: int, others: list[Connection]) -> None:
    """A worker's loop: prepare each chunk received, send back the result (or ``None``
    when preparing it raised), until the pipe closes or the parent is gone. ``others``:
    the pipes' ends the worker inherited and must not hold (the search's ends of every
    worker's pipes), so that the search's death closes the worker's pipes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the search decides when a run stops
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent(parent)
    for conn in others:
        conn.close()
    while True:
        if os.getppid() != parent:
            return
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

    def __init__(self, prepare: Prepare, workers: int, stopping: Callable[[], bool] = never) -> None:
        ctx = multiprocessing.get_context("fork")
        self._tasks: list[Connection] = []
        self._answers: list[Connection] = []
        self._procs = []
        self.stopping = stopping
        for i in range(workers):
            task_out, task_in = ctx.Pipe(duplex=False)  # (receiving end, sending end)
            answer_out, answer_in = ctx.Pipe(duplex=False)
            _widen(task_in)
            _widen(answer_in)
            others = [*self._tasks, *self._answers, task_in, answer_out]
            proc = ctx.Process(
                target=_serve,
                args=(prepare, task_out, answer_in, os.getpid(), others),
                name=f"kmc-expand-{i}",
                daemon=True,
            )
            proc.start()
            task_out.close()
            answer_in.close()
            os.set_blocking(task_in.fileno(), False)  # a write waits in select, with a bound
            self._tasks.append(task_in)
            self._answers.append(answer_out)
            self._procs.append(proc)
        self.workers = workers
        self._next = 0  # the worker the next task goes to
        self._busy: deque[int] = deque()  # the workers holding a task, in the order sent

    def idle(self) -> bool:
        """Whether some worker holds no task."""
        return len(self._busy) < self.workers

    def send(self, task: Task) -> None:
        """Give the next worker a task (``idle()`` must be true)."""
        w = self._next
        self._next = (w + 1) % self.workers
        self._busy.append(w)  # (busy even if the send is stopped half-way: drain kills it)
        try:
            send(self._tasks[w], task, self.stopping)
        except (BrokenPipeError, OSError) as e:
            raise WorkerEnded(f"expansion worker {w} ended") from e

    def receive(self) -> Any:
        """The answer to the oldest task sent.

        Raises:
            WorkerFailed: the worker raised (``WorkerEnded``: it ended).
            Stopped: the search was asked to stop while it waited.
        """
        w = self._busy[0]
        try:
            answer = receive(self._answers[w], self.stopping)
        except (EOFError, OSError) as e:
            self._busy.popleft()
            raise WorkerEnded(f"expansion worker {w} ended") from e
        self._busy.popleft()
        if answer is None:
            raise WorkerFailed(f"expansion worker {w} failed")
        return answer

    def drain(self) -> None:
        """Drop the answers of every task still out (a level left half-way); when the
        search is asked to stop, or a worker's pipe is broken half-way, kill the workers
        rather than wait for them."""
        while self._busy:
            try:
                self.receive()
            except WorkerFailed:
                pass
            except Stopped:
                self.kill()

    def kill(self) -> None:
        """End the workers at once (SIGKILL: also a stopped or hung one)."""
        for proc in self._procs:
            if proc.is_alive():
                proc.kill()
        for proc in self._procs:
            proc.join(timeout=30)
        self._busy = deque()

    def close(self) -> None:
        """End the workers."""
        if self._busy:
            self.kill()
        for conn in self._tasks:
            try:
                send(conn, None, never)  # a stopped worker's full pipe: not waited on
            except (OSError, Stopped):
                pass
            conn.close()
        for conn in self._answers:
            conn.close()
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=30)
        self._tasks, self._answers, self._procs, self._busy = [], [], [], deque()


def in_order(pool: ExpandPool, tasks: Iterator[Task], again: Prepare) -> Iterator[tuple[Task, Any]]:
    """``(task, prepared)`` for every task, in order, prepared by the pool's workers; a
    worker's next task is sent before its last answer is handed on, so the workers work
    while the caller commits. A task a worker failed on is prepared again by ``again``,
    which raises its error.

    Raises:
        ResourceStop: a worker ended (the system's memory killer is the likely cause): the
            run stops as at its memory ceiling, at the level boundary, and can be resumed.
    """
    out: deque[Task] = deque()
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
            except WorkerEnded:
                raise
            except WorkerFailed:
                prepared = again(*task)
            fill()
            yield task, prepared
    except WorkerEnded as e:
        pool.kill()
        if pool.stopping():  # a signal to the process group reached it too
            raise ResourceStop("interrupted", str(e)) from e
        raise ResourceStop(
            "out-of-memory", f"{e} (the system may have stopped it for memory; resume with fewer --workers)"
        ) from e
    except Stopped:
        pool.kill()
        raise ResourceStop("interrupted", "stopped while the expansion workers ran") from None
    finally:
        pool.drain()
