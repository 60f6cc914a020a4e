"""The batch engine: the local breadth-first search over arrays of fixed-width rows.

It explores exactly what ``LocalEngine`` explores, in the same order, and reports the
same counts and the same counterexamples, but a frontier chunk at a time: the model's
batch kernel (``model.batch_kernel()``, see ``checker.protocol.BatchKernel``) computes every
successor of a chunk with array operations, the rows are fingerprinted together
(``checker.fingerprint.fingerprint_rows``), duplicates are dropped with one sort, and the
seen-set (``checker.seen.CompactSeenSet``) keeps 13 bytes a state. The frontier is kept
as rows, never as Python objects.

Order, and so the counterexamples, match the per-state engine: within a chunk the
successors are sorted by (parent, choice), the order in which ``LocalEngine`` meets
them, and chunks are taken in frontier order, so the first state of every fingerprint
to be stored is the one the per-state search would store, with the same parent.

The kernel's contract is ``checker.protocol.BatchKernel``.
"""

from __future__ import annotations

import numpy as np

from .driver import LevelDriver, Search
from .errors import EngineError
from .fingerprint import kernel_fingerprints
from .options import Options
from .protocol import successors
from .seen import CompactSeenSet
from .trace import replay_choices

CHUNK_ROWS = 1 << 15  # frontier states expanded per kernel call
_CHOICES = 256  # a state has fewer enabled actions than this (choices are stored as uint8)
_INDEX_BITS = 32
_INDEX_MASK = (1 << _INDEX_BITS) - 1
ROWS_FORMAT = "rows-1"  # the snapshot format of this engine


class RowsSearch(Search):
    """The rows search object of ``checker.driver.LevelDriver``: a chunk of frontier rows a
    piece, expanded by the model's batch kernel, stored in a ``CompactSeenSet``."""

    every = 1
    possibly: list = []  # (property, EdgeLog) of the always-possibly properties (the driver's)

    def __init__(self, model, kernel, invariants, step_props, symmetry=False):
        self.model, self.kernel = model, kernel
        self.invariants, self.step_props = invariants, step_props
        self.symmetry = symmetry
        self.seen = CompactSeenSet()
        self.frontier: list[np.ndarray] = []  # the level being expanded, as row chunks
        self.next: list[np.ndarray] = []
        self._numbered: list[np.ndarray] = []  # fingerprints in number order (always-possibly only)

    def fingerprints(self, rows):
        return kernel_fingerprints(self.kernel, rows, self.symmetry)

    def start(self, stats, found):
        states = list(self.model.init_states())
        if not states:
            return
        rows = self.kernel.init_rows(states)
        stats.generated += len(rows)
        fps = self.fingerprints(rows)
        _, first = np.unique(fps, return_index=True)
        keep = np.sort(first)
        self.seen.add(fps[keep], np.full(len(keep), -1), keep)  # choice: the initial state's index
        self.seen.end_level()
        self.frontier = [rows[keep]]
        self._log_states(0, rows[keep], fps[keep])
        stats.coverage.add_initial_rows(self.kernel, self.model, rows[keep])
        level_found: dict[str, tuple] = {}
        self._check_new(rows[keep], 0, level_found, found)
        for prop, value in level_found.items():
            found.setdefault(prop, value)

    def size(self) -> int:
        return sum(len(c) for c in self.frontier)

    def pieces(self):
        return _chunks(self.frontier, CHUNK_ROWS)

    @staticmethod
    def piece_len(piece) -> int:
        return len(piece)

    def begin_level(self):
        self.next = []

    def next_size(self) -> int:
        return sum(len(c) for c in self.next)

    def end_level(self):
        self.seen.end_level()
        self.frontier, self.next = self.next, []

    def rollback(self):
        self.seen.rollback()
        self.next = []
        if self._numbered:
            kept = np.concatenate(self._numbered)[: len(self.seen)]
            self._numbered = [kept]

    def expand(self, chunk, first, stats, level_found, found):
        """Expand one chunk whose first state is number ``first``; store its new
        successors and keep their rows, in discovery order."""
        kernel = self.kernel
        parents, choices, codes, succ = kernel.expand(chunk)
        stats.generated += len(succ)
        stats.terminal += int(np.count_nonzero(np.bincount(parents, minlength=len(chunk)) == 0))
        names = kernel.action_names
        add_counts(stats.fired, names, np.bincount(codes, minlength=len(names)))
        if not len(succ):
            return
        # A successor's place in the model's order is (parent, choice): `key`. Of the
        # successors with one fingerprint, the one with the least key is the one the
        # per-state search meets first; `tagged` carries the key with the successor's
        # index in its low bits, so one minimum gives both.
        key = parents * _CHOICES + choices
        if self.step_props:
            self._check_steps(chunk, first, parents, choices, succ, key, level_found, found)
        tagged = (key << _INDEX_BITS) | np.arange(len(succ), dtype=np.int64)
        fps = all_fps = self.fingerprints(succ)
        by_fp = np.argsort(fps)
        fps = fps[by_fp]
        starts = np.flatnonzero(np.concatenate(([True], fps[1:] != fps[:-1])))
        uniq = fps[starts]
        least = np.minimum.reduceat(tagged[by_fp], starts)
        fresh = ~self.seen.contains_sorted(uniq)
        uniq, least = uniq[fresh], np.sort(least[fresh])  # discovery order
        src = least & _INDEX_MASK
        self.seen.add_sorted(uniq, first + parents[src], choices[src])
        add_counts(stats.new, names, np.bincount(codes[src], minlength=len(names)))
        rows = succ[src]
        stats.coverage.add_rows(kernel, self.model, chunk, (parents, choices, codes, succ), rows)
        self._check_new(rows, len(self.seen) - len(rows), level_found, found)
        if len(rows):
            self.next.append(rows)
        if self.possibly:
            self._log_states(len(self.seen) - len(rows), rows, all_fps[src])
            for _prop, log in self.possibly:
                log.add_edges(first + parents, all_fps)

    def _log_states(self, first, rows, fps):
        if not self.possibly:
            return
        self._numbered.append(fps)
        goal_mask = getattr(self.kernel, "goal_mask", None)
        for prop, log in self.possibly:
            goal = goal_mask(prop.name, rows) if goal_mask is not None else None
            if goal is None:
                goal = np.array([bool(prop.check(self.model, self.kernel.decode(r))) for r in rows], dtype=bool)
            log.add_states(first, goal)

    def memory_reserve(self) -> int:
        return self.seen.merge_reserve()

    def numbers_of(self, fps):
        numbered = np.concatenate(self._numbered) if self._numbered else np.zeros(0, np.uint64)
        order = np.argsort(numbered)
        return order[np.searchsorted(numbered[order], fps)].astype(np.int64)

    def _check_new(self, rows, first, level_found, found):
        """Check the state invariants on new rows numbered from ``first``."""
        for prop in self.invariants:
            if prop.name in found or prop.name in level_found:
                continue
            mask = self.kernel.invariant_mask(prop.name, rows)
            if mask is None:  # no batch form: decode and ask the property
                mask = np.array([prop.check(self.model, self.kernel.decode(r)) is not None for r in rows], dtype=bool)
            if mask.any():
                j = int(np.argmax(mask))
                why = prop.check(self.model, self.kernel.decode(rows[j]))
                if why is None:
                    raise EngineError(f"the batch kernel and the model disagree on {prop.name}")
                level_found[prop.name] = ("always", why, first + j)

    def _check_steps(self, chunk, first, parents, choices, succ, key, level_found, found):
        for prop in self.step_props:
            if prop.name in found or prop.name in level_found:
                continue
            mask = self.kernel.step_mask(prop.name, chunk, parents, succ)
            if mask is None:
                mask = np.array(
                    [self._step_why(prop, chunk[p], c) is not None for p, c in zip(parents.tolist(), choices.tolist())],
                    dtype=bool,
                )
            hits = np.flatnonzero(mask)
            if len(hits):
                i = int(hits[np.argmin(key[hits])])
                why = self._step_why(prop, chunk[parents[i]], int(choices[i]))
                if why is None:
                    raise EngineError(f"the batch kernel and the model disagree on {prop.name}")
                level_found[prop.name] = ("step", why, (first + int(parents[i]), int(choices[i])))

    def _step_why(self, prop, row, choice):
        state = self.kernel.decode(row)
        action, nxt = successors(self.model, state)[choice]
        return prop.check(self.model, state, action, nxt)

    def path(self, number):
        init, choices = self.seen.path_to(number)
        return replay_choices(self.model, init, choices)

    # -- checkpoints --------------------------------------------------------------

    def snapshot_parts(self) -> dict:
        parts = {"head": {"format": ROWS_FORMAT}, "frontier": self.frontier, "seen": self.seen}
        if self._numbered:
            parts["numbered"] = self._numbered
        return parts

    def restore_parts(self, snapshot, directory=None):
        if snapshot.get("format") != ROWS_FORMAT:
            raise EngineError("the checkpoint was written by the per-state engine; resume it with --per-state")
        self.frontier = list(snapshot["frontier"])
        self.seen = snapshot["seen"]
        self._numbered = list(snapshot.get("numbered", []))


class BatchEngine(LevelDriver):
    """Breadth-first exploration of a model that has a batch kernel (see
    ``checker.driver.LevelDriver`` for the arguments); ``kernel`` replaces the model's own
    (``checker.states_kernel.StatesKernel`` runs a per-state model on rows)."""

    name = "local"
    path = "batch"

    def __init__(self, model, properties=None, options=None, progress=None, *, on_level=None, kernel=None):
        options = options or Options()
        super().__init__(model, None, properties, options, progress, on_level=on_level)
        self.kernel = model.batch_kernel() if kernel is None else kernel
        self.search = RowsSearch(model, self.kernel, self.invariants, self.step_props, options.symmetry)


def add_counts(counter, names, counts):
    """Add per-action-code ``counts`` to ``counter`` (action name -> count)."""
    for code, k in enumerate(np.asarray(counts).tolist()):
        if k:
            counter[names[code]] = counter.get(names[code], 0) + k


def _chunks(arrays, size):
    """Consecutive chunks of about ``size`` rows from a list of row arrays, in order."""
    buf, count = [], 0
    for a in arrays:
        start = 0
        while start < len(a):
            take = min(size - count, len(a) - start)
            buf.append(a[start : start + take])
            count += take
            start += take
            if count >= size:
                yield buf[0] if len(buf) == 1 else np.concatenate(buf)
                buf, count = [], 0
    if buf:
        yield buf[0] if len(buf) == 1 else np.concatenate(buf)
