"""The partitioned level: the breadth-first search's levels past the hand-over, each run as
two stages of tasks over a store of immutable objects, on any cluster that runs them. It is
an algorithm with two ports, and nothing in this package imports pyspark:

- ``cluster``: the ``Cluster`` port (run one level's two stages, cancel, close) and its
  in-process implementation, ``InProcessCluster`` (the driver runs the tasks itself); the
  Spark implementation is the adapter's (``checker.spark.cluster``);
- ``ports``: what the levels take from outside: the engine's arguments (``LevelsSetup``),
  the back end that gives each level its cluster (``Backend``), the driver's search they
  take over (``DriverSearch``);
- ``levels``: the search object of those levels (``PartitionedLevels``): its state,
  violations, traces and checkpoints; ``handover``: the driver's seen-set and frontier
  written into the store; ``stages``: one level's two stages run and their summaries
  added up; ``room``: the store's room and what a failed level's error says;
- ``tasks``: what a level's tasks run (the expansion of a rank partition, an owner's merge);
- ``rows``: the rows store, the run's objects in a blob store (``checker.blobs``, the
  other port: a directory, or an object store such as ``s3://``), written by ``rows_write``,
  read by ``rows_read``; ``rows_stale``: the stores of killed runs;
- ``save``, ``digests``: a level saved for a checkpoint, and its verification on resume.
"""

from .cluster import Cluster, Expand, InProcessCluster, Own

__all__ = ["Cluster", "Expand", "InProcessCluster", "Own"]
