"""The partitioned level's cluster port: one level of the breadth-first search run as two
stages of tasks over a blob store (``checker.blobs``), on any ``Cluster`` that runs them.

The algorithm (``checker.partitioned.levels.PartitionedLevels``, the tasks in
``checker.partitioned.tasks``) knows nothing of where its tasks run. A level is:

1. *expand*: for each rank partition ``j`` (a contiguous range of the frontier's discovery
   order), ``expand(j)`` reads its share of the frontier from the store, expands it, and
   returns records ``(owner, payload)``: the names of the successors' objects it wrote for
   each owner, and one summary for partition ``j`` itself;
2. *route*: every record goes to its owner (a fingerprint partition);
3. *own*: for each owner ``i``, ``own(i, records)`` merges the successors routed to it
   with its seen runs, writes the next frontier and returns its summaries.

A task's output depends only on its inputs and the store's objects, and an owner's result
does not depend on the order of its records: a cluster may run the tasks in any order, on
any of its machines, and retry any of them. Two ports run it: ``InProcessCluster`` (the
driver itself, one task after the other: a level too small to pay for a job) and
``checker.spark.cluster.SparkCluster`` (one Spark job of two stages). Nothing here imports
pyspark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

Expand = Callable[[int, Iterator[Any]], Iterable[tuple[int, Any]]]
Own = Callable[[int, Iterator[tuple[int, Any]]], Iterable[Any]]


class Cluster(Protocol):
    """Runs one partitioned level's two stages (see the module)."""

    in_process: bool  # the driver runs the tasks itself (counted apart in the metrics)

    def run_level(self, n: int, expand: Expand, own: Own) -> list[Any]:
        """Run ``expand`` for each of the ``n`` rank partitions, route its records by owner,
        run ``own`` for each of the ``n`` owners; their summaries, in any order."""
        ...

    def cancel(self) -> None:
        """Abandon the level being run, from another thread (its results are dropped)."""
        ...

    def close(self) -> None:
        """Release what the cluster holds."""
        ...


class InProcessCluster:
    """The level's tasks run here, one after the other, without a cluster: for a level of
    at most ``driver_level_limit`` states (the shrinking tail of a search), whose job would
    cost more than its work. The same task functions over the same objects, so the
    summaries are those a cluster returns."""

    in_process = True

    def run_level(self, n: int, expand: Expand, own: Own) -> list[Any]:
        routed: list[list[tuple[int, Any]]] = [[] for _ in range(n)]
        for j in range(n):
            for owner, payload in expand(j, iter(())):
                routed[owner].append((owner, payload))
        return [summary for i in range(n) for summary in own(i, iter(routed[i]))]

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


_PYTHON_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)(: |$)")


def one_line(error: BaseException) -> str:
    """A one-line description of a cluster's error (a Java exception too, through its
    ``java_exception``): a failed task's own Python line when it carries one."""
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
