"""The local breadth-first search over arrays of rows: of fixed width from a model's batch
kernel (the batch path), or of the model's own Python states
(``checker.core.states_kernel.StatesKernel``: the per-state path, ``checker.local.states``).

A frontier chunk at a time: the kernel (``model.batch_kernel()``, see
``checker.contract.protocol.BatchKernel``) computes every successor of a chunk, the rows are
fingerprinted together (``checker.base.fingerprint.fingerprint_rows``), duplicates are
dropped with one sort, and the seen-set (``checker.stores.seen.CompactSeenSet``) keeps 13
bytes a state. The frontier is kept as rows, never as Python objects, in a frontier queue
(``checker.stores.frontier``): in memory, or in files beside the disk store's.

Order, and so the counterexamples, is the model's: within a chunk the successors are sorted
by (parent, choice), the order in which a search expanding one state at a time meets them,
and chunks are taken in frontier order, so the first state of every fingerprint to be
stored is the one such a search would store, with the same parent. Both paths store the
same states in the same order.

The kernel's contract is ``checker.contract.protocol.BatchKernel``; a snapshot's, its
format and the reader of older shapes, ``checker.checkpoints.schema``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from ..base.errors import EngineError
from ..checkpoints.schema import ROWS_FORMAT, restore_snapshot
from ..contract.kernel_check import KernelCheck, kernel_check
from ..contract.protocol import (
    BatchKernel,
    Model,
    Property,
    batch_path,
    columns,
)
from ..core import keys
from ..core.assembly import assemble
from ..core.coverage import row_counts
from ..core.driver import LevelDriver, OnLevel, Progress, Search
from ..core.level import LevelStep, decided, record_first
from ..core.options import Options
from ..core.parts import Found, FrontierQueue, SavedStore, Store
from ..core.result import Path, Stats
from ..core.trace import path_by_choices
from ..core.visitor import GraphClient, GraphVisitor
from ..graph.clients import graph_clients
from ..stores.frontier import Column, new_queue
from ..stores.seen import CompactSeenSet
from .workers import MIN_CHUNKS, ExpandPool, Task, in_order

CHUNK_ROWS = 1 << 15  # frontier states expanded per kernel call
# Python states (``arrays`` false) are expanded an eighth of that at a time: a chunk's
# successors, duplicates included, are Python objects alive together, and an array
# operation gains nothing from a longer chunk of them
OBJECT_CHUNK_SHARE = 8
NUMBERS_SLICE = 1 << 20  # stored fingerprints ``RowsSearch.numbers_of`` sorts at a time


@attrs.frozen
class Prepared:
    """What ``RowsSearch.prepare_chunk`` computes of a chunk before the level's own states
    are asked about: its
    counts (successors generated, terminal states, actions fired per code), the step
    properties' first violations (by name: the transition's ``(parent, choice)`` and the
    explanation), and of each distinct successor fingerprint not stored in an earlier
    level the successor with the least key: ``fps`` in fingerprint order; in key order (the
    order the search meets them) its parent, choice, action code and row, and ``place``,
    the position of each in ``fps``; the coverage counts, and when some property needs the
    graph, every edge: ``edges``, the parents, the successors' fingerprints, the choices
    and the fair instance codes (``None`` when no property needs them)."""

    counted: tuple[int, int, np.ndarray]
    steps: dict[str, tuple[tuple[int, int], str]] = attrs.Factory(dict)
    fps: np.ndarray | None = None
    place: Any = None
    parents: Any = None
    choices: Any = None
    codes: Any = None
    rows: Any = None
    counts: Any = None
    edges: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None = None


# A piece of the rows search: a chunk of frontier rows, prepared in advance by a worker or not.
RowsPiece = tuple[np.ndarray, "Prepared | None"]


class RowsSearch(Search):
    """The rows search object of ``checker.core.driver.LevelDriver``: a chunk of frontier rows a
    piece, expanded by the model's batch kernel, stored in a ``checker.core.parts.Store``
    (in memory by default, ``checker.stores.seen.CompactSeenSet``), the levels kept in the
    ``checker.core.parts.FrontierQueue`` that goes with the store."""

    every = 1
    snapshot_format = ROWS_FORMAT  # STATES_ROWS_FORMAT over rows of Python states

    def __init__(
        self,
        model: Model,
        kernel: BatchKernel,
        invariants: Sequence[Property],
        step_props: Sequence[Property],
        symmetry: bool = False,
        check: KernelCheck | None = None,
        store: Store | None = None,
        visitor: GraphVisitor | None = None,
        workers: int = 1,
        counting: bool = True,
    ):
        self.model, self.kernel = model, kernel
        # The graph visitor (``checker.core.visitor``): every stored state and expanded edge
        # goes to it when some property needs the graph.
        self.visitor = GraphVisitor() if visitor is None else visitor
        self.invariants, self.step_props = invariants, step_props
        self.symmetry = symmetry
        # The rules of a level (checker.core.level), with the kernel's comparison with its model.
        self.level = LevelStep(model, kernel, invariants, step_props, check)
        self.check = check
        self._level_first = self._level = 0  # the number of the frontier's first state, its size
        self.seen: Store = CompactSeenSet() if store is None else store
        self.queue: FrontierQueue = new_queue(self.seen)  # the level being expanded, and the next
        # fingerprints in number order (for the visitor only), in a temporary file
        self.numbered = Column(np.uint64)
        # The coverage counts of each chunk are computed with its successors when counted.
        self.counting = counting
        self.coverage_names = model.coverage_names()
        # Worker processes that prepare chunks (checker.local.workers): forked at each level of at
        # least MIN_CHUNKS chunks; the graph visitor's edges come back with the chunks.
        self.workers = workers
        self.pool: ExpandPool | None = None
        self._depth = 0
        self._decided: set[str] = set()  # the properties decided at the last chunk committed

    def fingerprints(self, rows: np.ndarray) -> np.ndarray:
        fps: np.ndarray = self.kernel.fingerprints(rows, self.symmetry)
        return fps

    def start(self, stats: Stats, found: Found) -> None:
        states = list(self.model.init_states())
        if not states:
            return
        rows = self.kernel.init_rows(states)
        if self.check is not None:
            self.check.compare_initial(states, rows)
        stats.generated += len(rows)
        fps = self.fingerprints(rows)
        _, first = np.unique(fps, return_index=True)
        keep = np.sort(first)
        self.seen.add(fps[keep], np.full(len(keep), -1), keep)  # choice: the initial state's index
        self.seen.end_level()
        self.queue.append(rows[keep])
        self.queue.swap()
        self._log_states(0, rows[keep], fps[keep])
        stats.coverage.add_initial_rows(self.kernel, self.model, rows[keep])
        self._check_new(rows[keep], 0, found, {})  # the initial states' violations: the run's first

    @property
    def frontier(self) -> list[np.ndarray]:
        """The level being expanded, read whole as row chunks (for small runs and tests)."""
        return list(self.queue.chunks(self.chunk_rows()))

    def size(self) -> int:
        return len(self.queue)

    def chunk_rows(self) -> int:
        """The frontier states expanded together (the store's ``chunk_factor`` chunks)."""
        rows = CHUNK_ROWS if self.kernel.arrays else max(1, CHUNK_ROWS // OBJECT_CHUNK_SHARE)
        return rows * self.seen.chunk_factor

    def pieces(self) -> Iterator[RowsPiece]:
        """The level's chunks in order, each with what a worker prepared of it (``None``:
        the search prepares it itself)."""
        rows = self.chunk_rows()
        chunks = self.queue.chunks(rows)
        if self.workers < 2 or self._level < MIN_CHUNKS * rows:
            return ((chunk, None) for chunk in chunks)
        # Forked at each level's start: a worker asks the store about the levels before,
        # which stay unchanged while this one is expanded (checker.core.parts.Store).
        self.end_run()
        self.pool = ExpandPool(self.prepare_chunk, self.workers, lambda: self.stop_asked)
        return ((task[0], prepared) for task, prepared in in_order(self.pool, self._tasks(chunks), self.prepare_chunk))

    def _tasks(self, chunks: Iterator[np.ndarray]) -> Iterator[Task]:
        rank = 0
        for chunk in chunks:
            # The properties decided when the chunk is sent (more may be by its commit: the
            # search records the first of each in chunk order, checker.core.level.record_first).
            yield chunk, self._depth, rank, self._level, frozenset(self._decided)
            rank += len(chunk)

    @staticmethod
    def piece_len(piece: tuple[np.ndarray, Any]) -> int:
        return len(piece[0])

    def begin_level(self, depth: int) -> None:
        self._depth = depth
        self._level = self.size()
        self._level_first = len(self.seen) - self._level
        self.seen.begin_level()

    def end_run(self) -> None:
        """End the worker processes, if any."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def next_size(self) -> int:
        return self.queue.next_len()

    def end_level(self) -> None:
        self.end_run()  # the workers' view of the store ends with the level
        self.seen.end_level()
        self.queue.swap()

    def rollback(self) -> None:
        if self.pool is not None:
            self.pool.drain()
        self.seen.rollback()
        self.queue.rollback()
        self.numbered.truncate(len(self.seen))

    def prepare_chunk(self, chunk: np.ndarray, depth: int, rank: int, level: int, skip: frozenset[str]) -> Prepared:
        """The work on a chunk that asks the store only about earlier levels
        (``checker.local.workers``): the
        chunk holds the frontier ranks ``rank ...`` of a level of ``level`` states at
        ``depth``; ``skip`` names the properties whose first violation is known."""
        # The pipeline every rows search shares (checker.core.level): a successor's place in
        # the model's order is its key (checker.core.keys); of the successors with one
        # fingerprint, the least key is the one a state-at-a-time search meets first.
        found = self.level.chunk_successors(chunk, depth, rank, level, skip, self.fingerprints)
        exp = found.exp
        parents, choices, codes, succ = exp.parents, exp.choices, exp.codes, exp.succ
        counted = (exp.generated, exp.terminal, exp.fired)
        if found.pick is None or found.keys is None or found.fps is None:
            return Prepared(counted)
        key, all_fps = found.keys, found.fps
        steps = {name: ((int(parents[i]), int(choices[i])), why) for name, (i, why) in found.steps.items()}
        pick = found.pick  # in fingerprint order
        pick = pick[~self.seen.contains_older_sorted(all_fps[pick])]  # the levels before: unchanging
        place = keys.key_order(key[pick])  # key order: the commit gathers nothing
        met = pick[place]
        counts = (
            row_counts(self.coverage_names, self.kernel, self.model, chunk, parents, choices, codes, succ)
            if self.counting
            else None
        )
        edges = None
        visitor = self.visitor
        if visitor.active:  # every edge, with its fair instance (the graph visitor's)
            fair = self.level.fair_codes(chunk, exp, visitor.fair_code) if visitor.fairness else None
            edges = (parents, all_fps, choices, fair)
        return Prepared(
            counted,
            steps,
            fps=all_fps[pick],
            place=place,
            parents=parents[met],
            choices=choices[met],
            codes=codes[met],
            rows=np.take(succ, met, axis=0),  # (a row gather: several times faster than succ[met])
            counts=counts,
            edges=edges,
        )

    def expand(self, piece: Any, first: int, stats: Stats, level_found: Found, found: Found) -> None:
        """Store the new successors of one chunk whose first state is number ``first``
        (``piece``: the chunk, and what a worker prepared of it or ``None``), and keep
        their rows, in discovery order."""
        chunk, p = piece
        self._decided = decided(level_found, found)
        if p is None:
            rank = first - self._level_first
            p = self.prepare_chunk(chunk, stats.depth, rank, self._level, frozenset(self._decided))
        generated, terminal, fired = p.counted
        stats.generated += generated
        stats.terminal += terminal
        names = self.kernel.action_names
        keys.add_counts(stats.fired, names, fired)
        if p.fps is None:
            return
        record_first(level_found, found, "step", p.steps, lambda pc: (first + pc[0], pc[1]))
        fresh = ~self.seen.contains_level_sorted(p.fps)
        new = fresh[p.place]  # in key order: discovery order
        if new.all():
            parents, choices, codes, rows = p.parents, p.choices, p.codes, p.rows
        else:
            parents, choices, codes = p.parents[new], p.choices[new], p.codes[new]
            rows = np.compress(new, p.rows, axis=0)
        self.seen.add_sorted(p.fps[fresh], first + parents, choices)
        keys.add_counts(stats.new, names, np.bincount(codes, minlength=len(names)))
        if p.counts is not None:
            stats.coverage.add_counts(names, *p.counts)
        by_column = columns(rows) if self.kernel.by_columns else rows  # what the checks read
        stats.coverage.add_new_rows(self.kernel, self.model, by_column)
        self._check_new(by_column, len(self.seen) - len(rows), level_found, found)
        self.queue.append(rows)
        visitor = self.visitor
        if visitor.active and p.edges is not None:
            parents, all_fps, choices, fair = p.edges
            self._log_states(len(self.seen) - len(rows), rows, p.fps[p.place[new]])
            visitor.add_edges(first + parents, all_fps, choices, fair)

    def _log_states(self, first: int, rows: np.ndarray, fps: np.ndarray) -> None:
        if not self.visitor.active:
            return
        self.numbered.append(fps)
        self.visitor.add_states(first, rows, self.level)

    def memory_reserve(self) -> int:
        return self.seen.merge_reserve()

    def numbers_of(self, fps: np.ndarray) -> np.ndarray:
        """The stored number of each fingerprint (-1: not stored), in one pass over the
        fingerprints in number order, a sorted slice at a time looked up among the asked
        ones: the memory it takes is that of the answer and of a slice, never a sorted
        copy of every stored fingerprint."""
        fps = np.asarray(fps, dtype=np.uint64).ravel()
        if len(fps) < 2 or bool((fps[1:] > fps[:-1]).all()):
            asked, inverse = fps, None  # sorted and distinct: the usual question
        else:
            asked, inverse = np.unique(fps, return_inverse=True)
        found = np.full(len(asked), -1, dtype=np.int64)
        if len(asked):
            for lo, piece in self.numbered.chunks(NUMBERS_SLICE):
                order = np.argsort(piece)
                at = np.minimum(np.searchsorted(asked, piece[order]), len(asked) - 1)
                hit = asked[at] == piece[order]
                found[at[hit]] = lo + order[hit]
        return found if inverse is None else found[inverse.ravel()]

    def _check_new(self, rows: np.ndarray, first: int, level_found: Found, found: Found) -> None:
        """Check the state invariants on new rows numbered from ``first``."""
        bad = self.level.state_violations(rows, None, decided(level_found, found))
        record_first(level_found, found, "always", bad, lambda j: first + j)

    def path(self, number: int) -> Path:
        return path_by_choices(self.model, number, self.seen.parent_and_choice)

    # -- checkpoints --------------------------------------------------------------

    def snapshot_parts(self) -> dict[str, Any]:
        stored = self.seen.saved()
        parts = {"head": {"format": self.snapshot_format}, **stored, **self.queue.saved(stored)}
        if len(self.numbered):
            parts["numbered"] = [self.numbered.read()]
        return parts

    def restore_parts(self, snapshot: dict[str, Any], directory: Any = None) -> None:
        snapshot = restore_snapshot(snapshot, self.snapshot_format)  # checked, in this kmc's shape
        saved: SavedStore = snapshot["seen"]  # a CompactSeenSet, in a checkpoint of an older kmc
        self.seen = self.seen.restored(saved, directory)
        self.queue = new_queue(self.seen).restored(snapshot["queue"], directory)  # the store's queue
        self.numbered = Column(np.uint64)
        for fps in snapshot.get("numbered", []):  # arrays, or a column in a driver-phase checkpoint
            self.numbered.append(fps)


class BatchEngine(LevelDriver[RowsPiece, list[np.ndarray], int]):
    """Breadth-first exploration of a model that has a batch kernel (see
    ``checker.core.driver.LevelDriver`` for the arguments); ``kernel`` replaces the model's own
    (``checker.core.states_kernel.StatesKernel`` runs a per-state model on rows); ``store``
    replaces the in-memory store (``checker.stores.disk.DiskStore``); ``snapshot_format``
    names what its snapshots hold (``STATES_ROWS_FORMAT``: rows of Python states); ``clients``
    are graph clients given every state and edge after the properties' own."""

    name = "local"
    path = "batch"

    def __init__(
        self,
        model: Model,
        properties: Sequence[Property] | None = None,
        options: Options | None = None,
        progress: Progress | None = None,
        *,
        on_level: OnLevel | None = None,
        kernel: BatchKernel | None = None,
        store: Store | None = None,
        snapshot_format: str = ROWS_FORMAT,
        clients: Sequence[GraphClient] = (),
    ):
        a = assemble(model, properties, options, graph_clients, clients)
        if kernel is None:
            kernel, why = batch_path(a.model)
            if why is not None:  # never a silently wrong run: the kernel does not model this
                raise EngineError(f"the batch engine cannot run this model: {why} (run it with --per-state)")
            if kernel is None:
                raise EngineError(
                    "the batch engine cannot run this model: it has no batch kernel (run it with --per-state)"
                )
        self.kernel = kernel
        check = kernel_check(a.model, self.kernel, a.properties, a.options)
        search = RowsSearch(
            a.model,
            self.kernel,
            a.invariants,
            a.step_props,
            a.options.symmetry,
            check,
            CompactSeenSet() if store is None else store,
            a.visitor,
            workers=a.options.workers,
            counting=a.options.coverage,
        )
        search.snapshot_format = snapshot_format
        super().__init__(a, search, progress, on_level=on_level)
        self.kernel_check = check
