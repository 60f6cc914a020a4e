"""PySpark's Python worker daemon with the modules of kmc's tasks already imported.

Spark starts one daemon per executor (``python -m pyspark.daemon``), which forks a worker
for each task slot; each worker then imports numpy, the batch kernel and the task module
on its first task (about 0.3 s of CPU a worker). Run as the daemon
(``spark.python.daemon.module``, set by ``checker.spark.session`` for a local master),
this module imports them once, before the daemon forks, so that every worker starts with
them, and asks the C library to keep the memory the workers free
(``checker.base.memory.keep_freed_memory``). It then freezes the objects it holds
(``gc.freeze``): PySpark's reused worker runs a full garbage collection after every task, which
would otherwise walk every object of numpy, PySpark and kmc each time (about 45 ms a task,
two thirds of a worker's CPU on a small spec); frozen, they are skipped, and left unwritten
in the forked workers' copy of the daemon's memory.
Nothing else changes: the daemon is PySpark's own ``manager()``.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

import numpy  # noqa: F401  (imported before the fork: that is the point)
from pyspark import daemon

from ..base import fingerprint  # noqa: F401
from ..base.memory import keep_freed_memory
from ..partitioned import tasks  # noqa: F401
from . import tasks as spark_tasks  # noqa: F401
from .session import PRELOAD_VARIABLE

if __name__ == "__main__":
    keep_freed_memory()
    # The model's modules, named by the engine that started the session (the core knows
    # no model). One that cannot be imported here is left to the workers' first task,
    # which reports its error as every task does.
    # The daemon tells Spark its port on its standard output: what a module prints when it
    # is imported goes to the standard error meanwhile.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        for name in filter(None, os.environ.get(PRELOAD_VARIABLE, "").split(",")):
            try:
                importlib.import_module(name)
            except BaseException:  # (an exit at import too: the task reports it)
                pass
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    gc.freeze()
    daemon.manager()
