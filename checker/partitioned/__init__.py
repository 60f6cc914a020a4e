"""The partitioned level: the breadth-first search's levels past the hand-over, each run as
two stages of tasks over a store of immutable objects, on any cluster that runs them. It is
an algorithm with two ports, and nothing in this package imports pyspark:

- ``cluster``: the ``Cluster`` port (run one level's two stages, cancel, close) and its
  in-process implementation, ``InProcessCluster`` (the driver runs the tasks itself); the
  Spark implementation is the adapter's (``checker.spark.cluster``);
- ``levels``: the search object of those levels (``PartitionedLevels``): a level's tasks,
  their summaries, violations, traces, the store's room;
- ``tasks``: what a level's tasks run (the expansion of a rank partition, an owner's merge);
- ``rows``: the rows store, the run's objects in a blob store (``checker.blobs``, the
  other port: a directory, or an object store such as ``s3://``);
- ``save``, ``digests``: a level saved for a checkpoint, and its verification on resume.
"""

from .cluster import Cluster, Expand, InProcessCluster, Own

__all__ = ["Cluster", "Expand", "InProcessCluster", "Own"]
