"""One partitioned level's two stages (``checker.partitioned.levels``): the tasks bound to
the level (``level_tasks``), run on a cluster with a failed task's error said in the run's
own words (``run_stages``), and their summaries added up (``absorb``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial

import attrs
import numpy as np

from ..base.errors import EngineError
from ..blobs.posix import PosixBlobs
from ..contract.kernel_check import KernelMismatchError
from ..contract.model_errors import task_failure
from ..core.kernel import keep_least
from ..core.keys import add_counts
from ..core.level import LevelStep, record_first
from ..core.parts import Found, ResourceStop
from ..core.result import Stats
from ..core.visitor import GraphTask
from .cluster import Cluster, Expand, Own, one_line
from .room import StoreUnseenError, disk_full, full_line, out_of_memory, unseen_line
from .rows import RowsStore
from .tasks import OwnSummary, expand_partition, own_partition

# A partition's seen runs: (depth that wrote it, length), oldest first.
Runs = list[tuple[int, int]]


@attrs.frozen
class LevelPlan:
    """What a level's tasks are bound to, besides the store: the rules of a level, the
    properties already decided, the partitions and the frontier's shares."""

    step: LevelStep
    found: frozenset[str]
    symmetry: bool
    n: int
    depth: int  # the frontier's
    counts: Sequence[int]  # the frontier's count per rank partition
    sources: Sequence[Sequence[int]]  # per rank partition: the owners that wrote its share
    runs: Sequence[Runs]  # per fingerprint partition
    pack: bool  # the level's rows are packed (``checker.partitioned.room.pack_rows``)
    coverage: bool
    graph: GraphTask | None  # what the tasks record for the graph visitor, if it is active


def level_tasks(plan: LevelPlan, store: RowsStore, ranges: dict[str, tuple[int, int]] | None) -> tuple[Expand, Own]:
    """The level's two stages over ``store``: each rank partition's expansion, each owner's
    merge (``ranges``: what the run has seen of each variable, with coverage, so that an
    owner looks only at the columns and rows that may hold a value not seen yet). On a short
    disk (packed rows) the owners remove the successors' objects they have read."""
    level = sum(plan.counts)
    offsets = np.concatenate(([0], np.cumsum(plan.counts))).tolist()
    grow = partial(
        expand_partition,
        plan.step,
        plan.found,
        plan.symmetry,
        plan.n,
        offsets,
        store.blobs,
        plan.depth,
        plan.sources,
        plan.pack,
        plan.coverage,
        plan.graph,
    )
    own = partial(
        own_partition,
        plan.step,
        plan.found,
        plan.n,
        level,
        store.blobs,
        plan.depth + 1,
        plan.runs,
        plan.pack,
        plan.pack,
        ranges,
        store.digest,
    )
    return grow, own


def run_stages(
    cluster: Cluster,
    n: int,
    tasks: tuple[Expand, Own],
    store: RowsStore,
    stopping: Callable[[], bool],
    where: str,
) -> list[OwnSummary] | None:
    """The owners' summaries of the level that ``cluster`` runs; None when a stop request
    cancelled it. A failed level raises what its error says: a full disk or a task out of
    memory stops the run (``ResourceStop``, resumable: the level is dropped, the last one
    stands); a store an executor cannot see, a kernel that disagrees with its model, the
    model's own code raising, or else the job's failure. ``where``: the level, for the
    messages (``"at depth D (master M)"``)."""
    grow, own = tasks
    try:
        summaries: list[OwnSummary] = cluster.run_level(n, grow, own)
        return summaries
    except (KernelMismatchError, MemoryError):
        # a kernel disagreement found by a level run here says it all in its own line; a
        # MemoryError of the driver's own: the level driver stops the run (exit 4, resumable)
        raise
    except Exception as e:
        if stopping():
            return None  # cancelled: the level is dropped, the last one stands
        raise _failure(e, store, where) from None


def _failure(e: Exception, store: RowsStore, where: str) -> Exception:
    """What a level's failed job ``e`` says, as the error the run stops with."""
    if disk_full(e):  # the level is dropped, the last one stands: resumable
        return ResourceStop("disk-full", full_line(store, e))
    if out_of_memory(e):  # a task's MemoryError: the same stop as the driver's own
        return ResourceStop("out-of-memory", f"a Spark task could not allocate: {one_line(e)}")
    line = one_line(e)
    if line.startswith("FileNotFoundError") and isinstance(store.blobs, PosixBlobs):
        # an executor that does not see the directory (one the probe's job missed)
        return StoreUnseenError(unseen_line(store.root, line))
    _head, found_it, tail = line.partition(KernelMismatchError.__name__ + ": ")
    if found_it:  # a task's comparison of the kernel with the model
        return KernelMismatchError(tail)
    blamed = task_failure(e, f"in a Spark task {where}")
    if blamed is not None:  # the model's own code raised: its function, file and line
        return blamed
    return EngineError(f"a Spark job failed {where}: {one_line(e)}")


@attrs.frozen
class Absorbed:
    """What the driver keeps of a level's summaries (``absorb``)."""

    counts: list[int]  # the next frontier's count per rank partition
    sources: list[list[int]]  # per rank partition: the owners that wrote its share
    shipped: int  # bytes read and written by the tasks
    busy: float  # seconds the tasks computed
    graph_objects: list[str]  # the expanding tasks' graph records, in rank order


def absorb(
    summaries: Iterable[OwnSummary],
    store: RowsStore,
    runs: list[Runs],
    step: LevelStep,
    depth: int,
    stats: Stats,
    level_found: Found,
    found: Found,
) -> Absorbed:
    """Add a level's summaries (its new states at ``depth``) to the stats and its first
    violations to ``level_found``; take the owners' new seen runs into ``runs`` (dropping
    from the store the runs they merged)."""
    names, n = step.kernel.action_names, len(runs)
    counts = np.zeros(n, dtype=np.int64)
    sources: list[list[int]] = [[] for _ in range(n)]
    shipped, busy = 0, 0.0
    candidates: dict[str, tuple[int, str, str, object]] = {}  # property -> (key, kind, explanation, where)
    graph_objects: list[str] = []
    for index, per_target, new_codes, state_bad, metas, out_bytes, own_busy, own_runs, cov, digests in sorted(
        summaries, key=lambda s: s[0]
    ):
        store.digests.update(digests)
        counts += per_target
        for t in np.flatnonzero(per_target).tolist():
            sources[t].append(index)
        shipped += out_bytes
        busy += own_busy
        add_counts(stats.new, names, new_codes)
        if cov is not None:
            stats.coverage.add_task(names, cov)
        for prop, (key, why, fp) in state_bad.items():
            keep_least(candidates, prop, (key, "always", why, (depth, fp)))
        for terminal, generated, fired, step_bad, in_bytes, expand_busy, expand_cov, graph in metas:
            if graph is not None:
                graph_objects.append(graph)
            if expand_cov is not None:
                stats.coverage.add_task(names, expand_cov)
            shipped += in_bytes
            busy += expand_busy
            stats.terminal += terminal
            stats.generated += generated
            add_counts(stats.fired, names, fired)
            for prop, (key, why, pfp, choice) in step_bad.items():
                keep_least(candidates, prop, (key, "step", why, ((depth - 1, pfp), choice)))
        for d in {d for d, _ in runs[index]} - {d for d, _ in own_runs}:
            store.drop_run(index, d)
        runs[index] = own_runs
    # The local engine checks step properties while expanding a level and state
    # invariants on its new states; either way a property's first violation is the
    # least key of this level.
    for kind in ("step", "always"):
        mine = {prop: (where, why) for prop, (_key, k, why, where) in candidates.items() if k == kind}
        record_first(level_found, found, kind, mine, lambda where: where)
    return Absorbed(counts.tolist(), sources, shipped, busy, graph_objects)
