"""The Spark port of the partitioned level (``checker.partitioned.Cluster``): one Spark job
of two stages a level — the rank partitions (``mapPartitionsWithIndex`` of the expansion),
Spark's shuffle to the owners (``partitionBy`` on the record's owner), the owners — and the
job group that ``cancel`` cancels. Each task runs wrapped (``checker.spark.tasks``:
``in_spark``, ``expanding``). The session itself is ``checker.spark.start.Session``'s."""

from __future__ import annotations

from functools import partial
from typing import Any

from ..partitioned.cluster import Expand, Own
from .session import Context, cancel_group
from .tasks import expanding, in_spark, shuffle_owner


class SparkCluster:
    """Runs a level's tasks as one job on the SparkContext ``sc`` (job group ``group``);
    ``fault``: the test hook planted in the first attempt of one expansion task
    (``checker.spark.tasks.planted_fault``), or None."""

    in_process = False

    def __init__(self, sc: Context, group: str | None = None, fault: str | None = None) -> None:
        self.sc, self.group, self.fault = sc, group, fault

    def run_level(self, n: int, expand: Expand, own: Own) -> list[Any]:
        # Expand the rank partitions (their share of the frontier, read from the store),
        # then, after the shuffle to the owners, merge with the seen runs, check, write.
        grow = partial(expanding, self.fault, expand)
        job = self.sc.parallelize(range(n), n).mapPartitionsWithIndex(grow).partitionBy(n, shuffle_owner)
        summaries: list[Any] = job.mapPartitionsWithIndex(partial(in_spark, own)).collect()
        return summaries

    def cancel(self) -> None:
        if self.group is not None:
            cancel_group(self.sc, self.group)

    def close(self) -> None:
        pass  # the session is the run's (checker.spark.start.Session closes it)
