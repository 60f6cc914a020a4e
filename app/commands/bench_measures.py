"""What ``kmc bench`` measures of a run's parts: the local engine's seen-set, the edge logs of
the always-possibly properties, the liveness logs, and the Spark rows engine's metrics."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

from kmc.checker.core.parts import Store

if TYPE_CHECKING:  # for the annotations only
    from collections.abc import Iterable, Sized

    from kmc.checker.graph.liveness import LivenessLog
    from kmc.checker.graph.possibly import EdgeLog


def seen_set_bytes(seen: Sized) -> int:
    """Bytes held by a local engine's seen-set: a store counts its own arrays; for a
    dict, the dict and its fingerprint ints (a parent pointer is the same int object as
    another entry's key, so it is not counted twice)."""
    if isinstance(seen, dict):
        return sys.getsizeof(seen) + sum(sys.getsizeof(k) for k in seen)
    return cast(Store, seen).nbytes()


def edge_log_measures(possibly: Iterable[tuple[str, object]] | None) -> dict[str, Any]:
    """What the edge logs of the always-possibly properties hold (``checker.graph.possibly``):
    the edges kept (those leaving non-goal states), their bytes, and the bytes per edge;
    ``{}`` when no such property was checked."""
    logs = [cast("EdgeLog", log) for _, log in possibly or ()]
    if not logs:
        return {}
    edges = sum(log.edges for log in logs)
    nbytes = sum(log.nbytes() for log in logs)
    return {
        "edges_stored": edges,
        "edge_log_bytes": nbytes,
        "bytes_per_stored_edge": round(nbytes / edges, 1) if edges else None,
    }


def liveness_log_measures(liveness: Iterable[tuple[str, object]] | None) -> dict[str, Any]:
    """What the liveness logs hold (``checker.graph.liveness``): the waiting states and the edges
    leaving them that were kept, their bytes (in their temporary files and in memory), the
    bytes per kept edge, and the bytes they kept in memory at the end of the search; ``{}``
    when no liveness property was checked."""
    logs = [cast("LivenessLog", log) for _, log in liveness or ()]
    if not logs:
        return {}
    edges = sum(log.edges for log in logs)
    nbytes = sum(log.nbytes() for log in logs)
    return {
        "liveness_states_kept": sum(log.kept_states for log in logs),
        "liveness_edges_kept": edges,
        "liveness_log_bytes": nbytes,
        "bytes_per_kept_edge": round(nbytes / edges, 1) if edges else None,
        "liveness_memory_bytes": sum(log.memory_bytes() for log in logs),
    }


def spark_measures(metrics: dict[str, Any] | None) -> dict[str, Any]:
    """What the Spark rows engine measured (``SparkRowsEngine.metrics``): the session's
    start time, the levels run on the driver and on Spark, the per-level overhead (the
    least wall time of a Spark level, which is at least its fixed cost), Spark's own
    states per second, and the bytes its two shuffles shipped per new state."""
    if not metrics:
        return {}
    levels = metrics["spark_levels"]
    doc: dict[str, Any] = {
        "spark_session_start_seconds": metrics["session_start_seconds"],
        "driver_levels": metrics["driver_levels"],
        "spark_levels": len(levels),
        "small_levels_in_process": metrics.get("in_process_levels", 0),
    }
    if metrics.get("master") is not None:  # the master the session ran on (None: Spark was not used)
        doc["spark_master"] = metrics["master"]
    if levels:
        states = sum(lv[0] for lv in levels)
        seconds = sum(lv[1] for lv in levels)
        doc["spark_level_overhead_seconds"] = min(lv[1] for lv in levels)
        doc["spark_level_seconds_median"] = sorted(lv[1] for lv in levels)[len(levels) // 2]
        doc["spark_states_per_second"] = round(states / seconds, 1) if seconds else None
        # The time the tasks spent in kmc's own code (expanding, merging, checking),
        # summed over tasks: the rest of a level's wall time is Spark's.
        doc["spark_task_seconds"] = round(sum(lv[3] for lv in levels), 3)
        doc["spark_level_seconds"] = round(seconds, 3)
        doc["shuffle_bytes"] = metrics["shuffle_bytes"]
        doc["shuffle_bytes_per_state"] = round(metrics["shuffle_bytes"] / max(states, 1), 1)
        doc["store_peak_bytes"] = metrics["store_peak_bytes"]
        doc["spark_packed_levels"] = metrics["packed_levels"]
    if metrics.get("close_seconds") is not None:  # stopping the session, removing the store
        doc["spark_close_seconds"] = metrics["close_seconds"]
    return doc
