"""What the partitioned level's tasks run (``checker.partitioned.levels``), on whatever
cluster runs them: plain module-level functions, bound with ``functools.partial``. On its
way through the shuffle a record is ``(owner, ("f", name))`` (successors written into the
store for ``owner``: one object a task and owner) or ``(owner, ("m", meta))``. The store
is a blob store (``checker.blobs``), reached by the names below only."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..blobs import Blobs
from ..contract.protocol import columns
from ..core.coverage import task_part
from ..core.keys import first_per_fingerprint, key_choice, key_order, key_parent
from ..core.level import Expansion, LevelStep, Successors
from ..core.visitor import GraphTask
from ..stores.seen import merge_runs, merges, runs_contain
from .rows import front_name, graph_name, meta_name, owners, run_name, succ_name, succ_order
from .rows_read import load_joined, load_records, load_run, read_ahead
from .rows_write import Digests, Writer

SLICE_ROWS = 1 << 16  # frontier rows expanded (one kernel call) and deduplicated together in a task

# A task's coverage part (``checker.core.coverage.task_part``).
CoveragePart = tuple[Any, ...]
# A step property's least violation in a task: (key, explanation, parent fp, choice).
StepBad = dict[str, tuple[int, str, int, int]]
# A state invariant's least violation in a task: (key, explanation, fp).
StateBad = dict[str, tuple[int, str, int]]
# What an expanding task says of its rank partition: (terminal, generated, fired per code,
# step violations, bytes read, seconds, coverage part, its graph object's name or None).
ExpandMeta = tuple[int, int, np.ndarray, StepBad, int, float, CoveragePart | None, str | None]
# A record on its way through the shuffle: successors written for an owner ("f", name), or
# an expanding task's summary ("m", meta).
Payload = tuple[str, Any]
# What an owner says of its fingerprint partition (``own_partition``).
# (index, new per rank partition, new per code, state violations, expansion summaries,
# bytes written, seconds, seen runs, coverage part, digests).
OwnSummary = tuple[
    int,
    np.ndarray,
    np.ndarray,
    StateBad,
    list[ExpandMeta],
    int,
    float,
    list[tuple[int, int]],
    CoveragePart | None,
    Digests,
]
# The records of one slice for the graph visitor: (parent fps, flags, (src, dst, choices, fair)).
GraphRecord = tuple[np.ndarray, list[Any], tuple[np.ndarray, ...]]


def _fingerprints(kernel: Any, rows: Any, symmetry: bool) -> np.ndarray:
    fps: np.ndarray = kernel.fingerprints(rows, symmetry)
    return fps


def _profiled(task: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """``task`` run under cProfile when ``KMC_PROFILE_TASKS`` names a directory (a profile
    of where the executors' CPU goes, ``DIR/<task>-<pid>-<n>.prof``, read with ``pstats``);
    otherwise ``task`` itself."""

    @functools.wraps(task)  # its name, so that pickle finds the module's function
    def run(*args: Any) -> Iterator[Any]:
        where = os.environ.get("KMC_PROFILE_TASKS")
        if not where:
            yield from task(*args)
            return
        import cProfile

        profile = cProfile.Profile()
        out = profile.runcall(lambda: list(task(*args)))
        os.makedirs(where, exist_ok=True)
        profile.dump_stats(os.path.join(where, f"{task.__name__}-{os.getpid()}-{time.perf_counter_ns()}.prof"))
        yield from out

    return run


@_profiled
def expand_partition(
    step: LevelStep,
    found: frozenset[str],
    symmetry: bool,
    n: int,
    offsets: Sequence[int],
    store: Blobs,
    depth: int,
    sources: Sequence[Sequence[int]],
    pack: bool,
    coverage: bool,
    graph: GraphTask | None,
    index: int,
    _records: Iterator[Any],
) -> Iterator[tuple[int, Payload]]:
    """Stage 1: expand rank partition ``index`` of the frontier of ``depth`` (its first
    rank is ``offsets[index]``), read from the blob ``store``.

    Writes the successors owned by each owner (per slice of the frontier, the successor
    with the least key of each fingerprint: keys, fps, parent fps, codes, rows) into the
    store, one object per owner with a record a slice, and yields ``(owner, ("f", name))``
    for each object, then ``(index, ("m", (terminal, generated, fired per code, step
    violations, bytes, seconds, coverage part, graph object)))`` where (the coverage part:
    ``checker.core.coverage.task_part``) a step violation maps a property to its least ``(key,
    explanation, parent fp, choice)`` in this partition. With a ``graph``
    (``checker.core.visitor.GraphTask``), each slice's records for the graph visitor are added
    to one object (``graph_records``), whose name the summary gives (else None).
    """
    clock = time.perf_counter()
    kernel = step.kernel
    names = kernel.action_names
    terminal = generated = shipped = 0
    fired = np.zeros(len(names), dtype=np.int64)
    cov: CoveragePart | None = None
    step_bad: StepBad = {}
    base = offsets[index]
    fronts: list[tuple[Blobs, str]] = [(store, front_name(depth, index, i)) for i in sources[index]]
    routed: set[int] = set()
    graph_object = None
    fingerprints = functools.partial(_fingerprints, kernel, symmetry=symmetry)
    with Writer() as writer:  # the successors are encoded while the next slice is expanded
        if fronts:
            keys, fps, rows = load_joined(fronts, 3)
            order = key_order(keys)  # the rank order: this partition's frontier
            fps, rows = fps[order], np.take(rows, order, axis=0)  # (a row gather: faster than rows[order])
            del keys, order
            for s in range(0, len(rows), SLICE_ROWS):
                chunk = rows[s : s + SLICE_ROWS]  # one kernel call a slice
                # the pipeline every rows search shares (checker.core.level); an earlier slice's
                # violation has a smaller key
                got = step.chunk_successors(
                    chunk, depth, base + s, offsets[-1], found | step_bad.keys(), fingerprints, base=base + s
                )
                exp = got.exp
                generated += exp.generated
                terminal += exp.terminal
                fired += exp.fired
                if coverage:
                    expanded = [(chunk, (exp.parents, exp.choices, exp.codes, exp.succ))]
                    cov = _add_part(cov, names, task_part(step.model, kernel, expanded))
                if graph is not None:
                    graph_object = graph_name(depth, index)
                    graph_records(
                        graph, step, chunk, exp, fps[s : s + len(chunk)], symmetry, writer, store, depth, index
                    )
                parent_fps = fps[s : s + len(chunk)]
                routed |= _route_slice(got, parent_fps, n, pack, step_bad, writer, (store, depth, index))
        shipped += writer.close()
    for o in sorted(routed):
        yield (o, ("f", succ_name(depth, o, index)))  # read in the next stage, once this task has ended
    busy = time.perf_counter() - clock
    yield (index, ("m", (terminal, generated, fired, step_bad, shipped, busy, cov, graph_object)))


def _route_slice(
    got: Successors,
    parent_fps: np.ndarray,
    n: int,
    pack: bool,
    step_bad: StepBad,
    writer: Writer,
    where: tuple[Blobs, int, int],
) -> set[int]:
    """Route one slice's successors (``got``; its states' fingerprints ``parent_fps``): the
    least key of each fingerprint, appended to the object of its owner; the slice's step
    violations into ``step_bad``. Returns the owners routed to. ``where``: the store, the
    depth and the rank partition."""
    if got.pick is None or got.keys is None or got.fps is None:
        return set()
    store, depth, index = where
    parents, choices = got.exp.parents, got.exp.choices
    keys, sfps, pick = got.keys, got.fps, got.pick  # pick: in fingerprint order, so by owner
    for name, (i, why) in got.steps.items():
        step_bad[name] = (int(keys[i]), why, int(parent_fps[parents[i]]), int(choices[i]))
    keys, sfps, pfps, codes = keys[pick], sfps[pick], parent_fps[parents[pick]], got.exp.codes[pick]
    succ = np.take(got.exp.succ, pick, axis=0)
    cuts = np.searchsorted(owners(sfps, n), np.arange(n + 1))
    routed = set()
    for o in range(n):
        a, b = int(cuts[o]), int(cuts[o + 1])
        if b > a:
            target = (store, succ_name(depth, o, index))
            writer.append(target, keys[a:b], sfps[a:b], pfps[a:b], codes[a:b], succ[a:b], pack=pack)
            routed.add(o)
    return routed


def graph_records(
    graph: GraphTask,
    step: LevelStep,
    chunk: Any,
    exp: Expansion,
    parent_fps: np.ndarray,
    symmetry: bool,
    writer: Writer,
    store: Blobs,
    depth: int,
    index: int,
) -> None:
    """Add what the graph visitor records of one slice of a level (``chunk``, its
    expansion ``exp``, its states' fingerprints ``parent_fps``) to the task's
    ``graph_name`` object (a record a slice): the parents' fingerprints, every client's
    flags of them (``GraphTask.flags``), and the edges leaving the parents some client
    keeps (the parent's position in the slice, the successor's fingerprint, the choice,
    the fair instance code)."""
    flags = graph.flags(chunk, step)
    parents = exp.parents
    keep = graph.kept(flags, len(chunk))[parents]
    fair = step.fair_codes(chunk, exp, graph.fair_code) if graph.fairness else np.full(len(parents), -1)
    dst = _fingerprints(step.kernel, exp.succ[keep], symmetry) if keep.any() else np.zeros(0, np.uint64)
    arrays = [np.asarray(parent_fps, dtype=np.uint64)]
    for f in flags:
        arrays += [np.asarray(a, dtype=np.bool_) for a in (f if isinstance(f, tuple) else (f,))]
    arrays += [parents[keep].astype(np.int64), dst, exp.choices[keep].astype(np.int64), fair[keep].astype(np.int64)]
    writer.append((store, graph_name(depth, index)), *arrays)


def read_graph_records(graph: GraphTask, store: Blobs, name: str) -> list[GraphRecord]:
    """``graph_records``' object, a record a slice: ``(parent fps, flags, (src positions,
    dst fps, choices, fair codes))``."""
    count = 1 + len(graph.possibly) + 2 * len(graph.liveness) + 4
    out: list[GraphRecord] = []
    for arrays in load_records((store, name), count):
        k = len(graph.possibly)
        flags: list[Any] = list(arrays[1 : 1 + k])
        rest = arrays[1 + k : 1 + k + 2 * len(graph.liveness)]
        flags += [(rest[2 * i], rest[2 * i + 1]) for i in range(len(graph.liveness))]
        out.append((arrays[0], flags, tuple(arrays[-4:])))
    return out


@_profiled
def own_partition(
    step: LevelStep,
    found: frozenset[str],
    n: int,
    level: int,
    store: Blobs,
    depth: int,
    runs: Sequence[Sequence[tuple[int, int]]],
    pack: bool,
    release: bool,
    coverage: dict[str, tuple[int, int]] | None,
    digest: bool,
    index: int,
    records: Iterable[tuple[int, Payload]],
) -> Iterator[OwnSummary]:
    """Stage 2: fingerprint partition ``index`` takes the successors routed to it, keeps
    the least key of each fingerprint, drops those in its seen runs, writes the new ones
    to the blob ``store`` (a seen run, merged with older ones as
    ``checker.stores.seen.CompactSeenSet`` merges, the level's parent pointers, and their rows
    routed to their next rank partition ``g * n // level``) and checks the invariants on
    them. With ``release`` (the store's disk is short), the successors' objects it read
    are deleted once all that is written: the next frontier then takes the place of this
    level's successors on disk rather than joining them. With ``digest``, the size and
    SHA-256 of every object it writes are computed as it writes them (a checkpoint names
    them: the driver never reads a level back to hash it).

    Yields one summary ``(index, new per rank partition, new per code, state violations,
    expansion summaries, bytes written, seconds, runs, coverage part, digests)``
    (``coverage``: None, or the variables' full ranges the run has seen,
    ``checker.core.coverage.task_part``); a state violation maps a property to its least
    ``(key, explanation, fp)``; ``runs`` lists the ``(depth, length)`` of the
    partition's seen runs from now on; ``digests`` maps the names of the objects written
    to their ``(size, sha256)`` (empty without ``digest``).
    """
    names = step.kernel.action_names
    metas: list[ExpandMeta] = []
    objects: list[str] = []
    clock = time.perf_counter()
    for _key, value in records:
        if value[0] == "f":
            objects.append(value[1])
        else:
            metas.append(value[1])
    owned = _Owned(np.zeros(len(names), dtype=np.int64), np.zeros(n, dtype=np.int64), list(runs[index]))
    digests: Digests = {}
    with Writer(digests=digests) as writer:  # the objects below are written while the checks run
        if objects:
            # Every object's arrays read straight into one array each (no copy of the
            # rows), the objects in the order of their keys (by rank partition; inside one,
            # by slice), so that the keys grow with the position from record to record;
            # within a record each fingerprint is there once. So the first of each
            # fingerprint has its least key.
            objects.sort(key=succ_order)
            keys, fps, pfps, codes, rows = load_joined([(store, name) for name in objects], 5)
            read_ahead([(store, run_name(index, d)) for d, _ in owned.runs])  # searched below: read while sorting
            sel = first_per_fingerprint(fps)  # sorted by fingerprint
            old = [load_run(store, run_name(index, d)) for d, _ in owned.runs]
            sel = sel[~runs_contain(old, fps[sel])]
            del old
            if len(sel):
                new = [keys, fps, pfps, codes, rows, sel]  # handed over: freed as soon as they are used
                del keys, fps, pfps, codes, rows, sel
                _own_new(step, found, n, level, store, depth, runs, pack, coverage, digest, index, new, owned, writer)
        shipped = writer.close()
    if release:
        store.delete(objects)
    busy = time.perf_counter() - clock
    summary = (owned.per_target, owned.new_codes, owned.state_bad, metas, shipped, busy, owned.runs, owned.cov, digests)
    yield (index, *summary)


class _Owned:
    """What an owner finds of its new states (``own_partition``): their count per action
    code and per next rank partition, its seen runs from now on, the invariants' least
    violations and the coverage part."""

    def __init__(self, new_codes: np.ndarray, per_target: np.ndarray, runs: list[tuple[int, int]]) -> None:
        self.new_codes, self.per_target, self.runs = new_codes, per_target, runs
        self.state_bad: StateBad = {}
        self.cov: CoveragePart | None = None


def _own_new(
    step: LevelStep,
    found: frozenset[str],
    n: int,
    level: int,
    store: Blobs,
    depth: int,
    runs: Sequence[Sequence[tuple[int, int]]],
    pack: bool,
    coverage: dict[str, tuple[int, int]] | None,
    digest: bool,
    index: int,
    successors: list[np.ndarray],
    owned: _Owned,
    writer: Writer,
) -> None:
    """Write an owner's new states: ``successors`` holds the keys, fps, parent fps, codes
    and rows routed to it, and the new states' positions among them, in fingerprint order
    (emptied here, so that each array is freed once used). Writes their parent pointers,
    the partition's new seen run (merged with the newest runs while it is at least half as
    large), their rows routed to their next rank partition; then checks the invariants on
    them."""
    keys, fps, pfps, codes, rows, sel = successors
    successors.clear()
    kernel, names = step.kernel, step.kernel.action_names
    # The new states in fingerprint order (the run, the parent pointers), then in
    # key order (the next frontier); the rows are gathered once, in key order.
    by_key = sel[key_order(keys[sel])]
    new_fps = fps[sel]
    meta = (new_fps, pfps[sel], key_choice(keys[sel]).astype(np.int16))
    writer.save((store, meta_name(index, depth)), *meta, tally=False, digest=digest)
    owned.new_codes += np.bincount(codes[sel], minlength=len(names))
    keys, fps, rows = keys[by_key], fps[by_key], np.take(rows, by_key, axis=0)
    del pfps, codes, sel, by_key, meta
    # The new run, merged with the newest runs while it is at least half as large.
    mine = owned.runs
    run, mine = new_fps, mine + [(depth, len(new_fps))]
    while len(mine) > 1 and merges(mine[-1][1], mine[-2][1]):
        d, _ = mine[-2]
        run = merge_runs(load_run(store, run_name(index, d)), run)
        mine[-2:] = [(depth, len(run))]
    writer.save((store, run_name(index, depth)), run, tally=False, digest=digest)
    del run, new_fps
    owned.runs = mine
    merged = {d for d, _ in runs[index]} - {d for d, _ in mine}
    store.forget([run_name(index, d) for d in merged])  # this machine's copies of the merged runs
    target = key_parent(keys) * n // level  # grows with the key
    owned.per_target += np.bincount(target, minlength=n)
    cuts = np.searchsorted(target, np.arange(n + 1))
    for t in range(n):
        a, b = int(cuts[t]), int(cuts[t + 1])
        if b > a:
            target_name = (store, front_name(depth, t, index))
            writer.save(target_name, keys[a:b], fps[a:b], rows[a:b], pack=pack, digest=digest)
    # what the checks read: the rows a column at a time when the kernel asks so
    by_column = columns(rows) if kernel.by_columns else rows
    for name, (j, why) in step.state_violations(by_column, keys, found).items():  # checker.core.level
        owned.state_bad[name] = (int(keys[j]), why, int(fps[j]))
    if coverage is not None:  # the variables' full ranges seen so far (or {})
        owned.cov = task_part(step.model, kernel, new_rows=by_column, ranges=coverage)


def _add_part(cov: CoveragePart | None, names: Sequence[str], part: CoveragePart) -> CoveragePart:
    """Two coverage parts of one task as one (``checker.core.coverage.task_part``)."""
    if cov is None:
        return part
    enabled, kinds, _ = part
    return (cov[0] + enabled, {a: cov[1][a] + k for a, k in kinds.items()}, cov[2])
