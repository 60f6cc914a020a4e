"""The Spark port of the partitioned level (``checker.partitioned.Cluster``): one Spark job
of two stages a level — the rank partitions (``mapPartitionsWithIndex`` of the expansion),
Spark's shuffle to the owners (``partitionBy`` on the record's owner), the owners — and the
job group that ``cancel`` cancels. The session itself is ``checker.spark_start.Session``'s."""

from __future__ import annotations

from typing import Any

from .partitioned import Expand, Own
from .spark_rows_tasks import shuffle_owner
from .spark_session import cancel_group


class SparkCluster:
    """Runs a level's tasks as one job on the SparkContext ``sc`` (job group ``group``)."""

    in_process = False

    def __init__(self, sc: Any, group: str | None = None) -> None:
        self.sc, self.group = sc, group

    def run_level(self, n: int, expand: Expand, own: Own) -> list:
        # Expand the rank partitions (their share of the frontier, read from the store),
        # then, after the shuffle to the owners, merge with the seen runs, check, write.
        job = self.sc.parallelize(range(n), n).mapPartitionsWithIndex(expand).partitionBy(n, shuffle_owner)
        return job.mapPartitionsWithIndex(own).collect()

    def cancel(self) -> None:
        if self.group is not None:
            cancel_group(self.sc, self.group)

    def close(self) -> None:
        pass  # the session is the run's (checker.spark_start.Session closes it)
