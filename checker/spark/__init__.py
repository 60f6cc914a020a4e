"""The Spark adapter of the partitioned level (``checker.partitioned``): the Spark engine
(``engine``), its session (``session``: starting Spark, quiet logs, spark-submit's master;
``start``: started early, in the background; ``master``: master URLs), its cluster
(``cluster``: one Spark job of two stages a level), what Spark wraps around the
algorithm's tasks (``tasks``), its search object while the levels run on the driver
(``search``), and the local Python workers' daemon (``daemon``). This package is the only
place kmc imports pyspark, always inside a function: importing it does not need pyspark.
"""
