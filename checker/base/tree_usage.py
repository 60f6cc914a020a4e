"""CPU time and resident memory of a whole process tree (``kmc bench``).

The Spark engine runs in three kinds of process: the kmc process (the driver), Spark's
JVM, and the Python workers the JVM starts. ``getrusage`` of the kmc process sees only
its own CPU and, for children, only those it has reaped (the JVM is reaped when Python
exits, long after the measurement). So ``TreeUsage`` samples ``/proc`` from a background
thread: every ``interval`` seconds it finds every descendant of the root process and reads
its CPU time (user + system) and resident set size from ``/proc/PID/stat``.

- CPU seconds: the root's own (``getrusage(RUSAGE_SELF)`` when the root is this process,
  exact) plus, for every descendant ever seen, its CPU time at its last sample (a final
  sample is taken at ``stop()``). A descendant that lived less than one interval is
  missed, and one that ended loses at most its last interval: a lower bound, tight for
  the long-lived JVM and workers of a Spark run.
- Peak RSS: the largest sum of the tree's resident sets over the samples (and at least
  the root's own ``ru_maxrss``). Pages shared between processes (the workers are forked
  from one daemon) count once per process.

Without ``/proc`` (not Linux) only the root process is measured, and ``method`` says so.
"""

from __future__ import annotations

import os
import resource
import threading
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
INTERVAL = 0.2


def _kind(pid: int) -> str:
    """What a descendant is, by its program's name: ``jvm`` (Spark's JVM), ``python`` (a
    Python worker or Spark's worker daemon) or ``other``."""
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            comm = f.read().strip()
    except OSError:
        return "other"
    if comm == b"java":
        return "jvm"
    return "python" if comm.startswith(b"python") else "other"


def _stat(pid: int) -> tuple[int, float, int] | None:
    """``(parent pid, cpu seconds, rss bytes)`` of ``pid`` from ``/proc/PID/stat``, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2 :].split()  # after "pid (comm) "
    # fields[0] is field 3 of proc(5): state; ppid is 4, utime 14, stime 15, rss 24.
    try:
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS, int(fields[21]) * _PAGE
    except (IndexError, ValueError):
        return None


class TreeUsage:
    """Measure a process and all its descendants; ``start()``, then ``stop()`` returns
    ``{"cpu_seconds", "peak_rss_bytes", "processes", "method"}``.

    Args:
        pid: the root of the tree (default: this process, whose own figures then come
            from ``getrusage``).
        interval: seconds between samples.
    """

    def __init__(self, pid: int | None = None, interval: float = INTERVAL) -> None:
        self.pid = os.getpid() if pid is None else pid
        self.own = pid is None or pid == os.getpid()
        self.interval = interval
        self.available = os.path.isdir("/proc") and _stat(self.pid) is not None
        self.cpu: dict[int, float] = {}  # descendant pid -> CPU seconds at its last sample
        self.kinds: dict[int, str] = {}  # descendant pid -> _kind(pid)
        self.root_cpu = 0.0
        self.base: dict[int, float] = {}
        self.base_root = 0.0
        self.peak = 0
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._self0 = self._own_cpu()

    @staticmethod
    def _own_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def start(self) -> TreeUsage:
        if self.available:
            self.sample()
            # What the descendants had spent before (an earlier run's JVM, with --repeat).
            self.base, self.base_root = dict(self.cpu), self.root_cpu
            self._thread = threading.Thread(target=self._loop, name="kmc-tree-usage", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._halt.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        """One look at the tree: the CPU time of each process, the sum of their RSS."""
        stats: dict[int, tuple[int, float, int]] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                s = _stat(int(name))
                if s is not None:
                    stats[int(name)] = s
        if self.pid not in stats:
            return
        children: dict[int, list[int]] = {}
        for pid, (ppid, _cpu, _rss) in stats.items():
            children.setdefault(ppid, []).append(pid)
        rss, todo = 0, [self.pid]
        while todo:
            pid = todo.pop()
            _ppid, cpu, size = stats[pid]
            rss += size
            if pid == self.pid:
                self.root_cpu = cpu
            else:
                self.cpu[pid] = max(cpu, self.cpu.get(pid, 0.0))
                if self.kinds.get(pid, "other") == "other":  # a script may exec the JVM later
                    self.kinds[pid] = _kind(pid)
            todo.extend(children.get(pid, ()))
        self.peak = max(self.peak, rss)

    def stop(self) -> dict[str, Any]:
        if self._thread is not None:
            self._halt.set()
            self._thread.join()
            self.sample()
        if self.own:
            root = self._own_cpu() - self._self0
            # ru_maxrss is the process's lifetime peak, in KiB on Linux.
            self.peak = max(self.peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        else:
            root = self.root_cpu - self.base_root
        by_kind = {"kmc": root, "jvm": 0.0, "python": 0.0, "other": 0.0}
        for p, c in self.cpu.items():
            by_kind[self.kinds.get(p, "other")] += c - self.base.get(p, 0.0)
        return {
            "cpu_seconds": round(sum(by_kind.values()), 3),
            # The CPU of the kmc process, Spark's JVM, the Python workers, anything else.
            "cpu_seconds_by_kind": {k: round(v, 3) for k, v in by_kind.items()},
            "peak_rss_bytes": self.peak,
            "processes": 1 + len(self.cpu),
            "method": f"/proc sampled every {self.interval:g} s" if self.available else "this process only (no /proc)",
        }
