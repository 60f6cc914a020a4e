"""The store's probe: before any level, one small Spark job reads back an object the driver
wrote under the store, so that a store some executor cannot see stops the run in one line."""

from __future__ import annotations

import os
from functools import partial

from ..partitioned.room import StoreUnseenError, unseen_line
from ..partitioned.rows import RowsStore
from .session import Context
from .tasks import read_probe

PROBE = "probe"  # the object the store's probe job reads
PROBE_TASKS = 4  # tasks per core of the session's default parallelism in that job


def probe_store(sc: Context, store: RowsStore) -> None:
    """Write a probe object under the store and read it back in one small job on the
    executors (``PROBE_TASKS`` tasks per core, spread over them as Spark places them),
    before any level: a store that some executor cannot see stops the run here in one
    line, not at the first level's missing file. Under a local master the executors are
    the driver's process: nothing to ask.

    Raises:
        EngineError: an executor could not read the probe (naming the store).
    """
    if str(sc.master).startswith("local"):
        return
    import hashlib

    data = os.urandom(32)
    store.blobs.put(PROBE, [data])
    try:
        k = max(1, PROBE_TASKS * int(sc.defaultParallelism))
        task = partial(read_probe, store.blobs, PROBE, hashlib.sha256(data).hexdigest())
        answers = sc.parallelize(range(k), k).mapPartitionsWithIndex(task).collect()
    finally:
        store.blobs.delete([PROBE])
    bad = sorted({(host, why) for host, why in answers if why is not None})
    if bad:
        host, why = bad[0]
        raise StoreUnseenError(unseen_line(store.root, f"an executor on {host} could not read its probe: {why}"))
