"""The batch engine: the local breadth-first search over arrays of fixed-width rows.

It explores exactly what ``LocalEngine`` explores, in the same order, and reports the
same counts and the same counterexamples, but a frontier chunk at a time: the model's
batch kernel (``model.batch_kernel()``, see ``BatchKernel`` below) computes every
successor of a chunk with array operations, the rows are fingerprinted together
(``checker.fingerprint.fingerprint_rows``), duplicates are dropped with one sort, and the
seen-set (``checker.seen.CompactSeenSet``) keeps 13 bytes a state. The frontier is kept
as rows, never as Python objects.

Order, and so the counterexamples, match the per-state engine: within a chunk the
successors are sorted by (parent, choice), the order in which ``LocalEngine`` meets
them, and chunks are taken in frontier order, so the first state of every fingerprint
to be stored is the one the per-state search would store, with the same parent.

A model offers the fast path with ``batch_kernel()`` returning an object with:

- ``width`` (bytes a row), ``action_names`` (codes -> names);
- ``init_rows(states)``, ``encode(state)``, ``decode(row)``;
- ``expand(rows) -> (parents, choices, codes, successors)``;
- ``canonical(rows)`` (for symmetry reduction);
- ``invariant_mask(name, rows)`` / ``step_mask(name, rows, parents, after)``: boolean arrays of
  the rows or transitions that violate a property, or ``None`` when the kernel has no
  batch form of it (the engine then decodes and calls the property itself).
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from .memory import resident_bytes
from .errors import EngineError
from .fingerprint import fingerprint_rows
from .kernel import require_symmetric, result_of, split_properties, stop_after_level
from .local import Options
from .protocol import successors
from .result import CheckResult, Stats, Violation
from .seen import CompactSeenSet
from .trace import extend, replay_choices

CHUNK_ROWS = 1 << 15  # frontier states expanded per kernel call
_CHOICES = 256  # a state has fewer enabled actions than this (choices are stored as uint8)
_INDEX_BITS = 32
_INDEX_MASK = (1 << _INDEX_BITS) - 1
ROWS_FORMAT = "rows-1"  # the snapshot format of this engine


class BatchEngine:
    """Breadth-first exploration of a model that has a batch kernel.

    Same arguments, attributes and hooks as ``checker.local.LocalEngine``
    (``stop_requested``, ``on_level``, ``snapshot()``/``restore()``).
    """

    name = "local"
    path = "batch"

    def __init__(self, model, properties=None, options=None, progress=None):
        self.model = model
        self.kernel = model.batch_kernel()
        self.properties = list(model.properties() if properties is None else properties)
        self.invariants, self.step_props = split_properties(self.properties)
        self.options = options or Options()
        self.progress = progress
        self.stop_requested = None
        self.on_level = None
        self.stats = Stats()
        self.seen = CompactSeenSet()
        self.frontier: list[np.ndarray] = []  # the level being expanded, as row chunks
        self.found: dict[str, tuple] = {}
        if self.options.symmetry:
            require_symmetric(self.properties)

    # -- the search ---------------------------------------------------------------------

    def run(self) -> CheckResult:
        started = time.perf_counter()
        stats = self.stats
        if not len(self.seen):
            self._start()
        stopped = self._stop_reason_after_level()
        last_tick = time.perf_counter()
        partial = None
        max_depth, max_memory = self.options.max_depth, self.options.max_memory
        while self._frontier_size() and stopped is None:
            if max_depth is not None and stats.depth >= max_depth:
                stopped = "max-depth"
                break
            boundary = (stats.generated, stats.terminal, dict(stats.fired), dict(stats.new))
            level_found: dict[str, tuple] = {}
            nxt: list[np.ndarray] = []
            size = self._frontier_size()
            first = len(self.seen) - size
            done = 0
            for chunk in _chunks(self.frontier, CHUNK_ROWS):
                if self.stop_requested is not None:
                    stopped = self.stop_requested
                    break
                new_rows = self._expand_chunk(chunk, first + done, level_found)
                if len(new_rows):
                    nxt.append(new_rows)
                done += len(chunk)
                if max_memory is not None and _over(max_memory):
                    stopped = "max-memory"
                    break
                if self.progress is not None:
                    now = time.perf_counter()
                    if now - last_tick >= self.options.progress_seconds:
                        last_tick = now
                        self._tick(started, size - done + sum(map(len, nxt)))
            if stopped is not None:
                # As LocalEngine: report the partial counts, go back to the level start.
                stats.distinct = len(self.seen)
                partial = attrs.evolve(stats, levels=list(stats.levels), fired=dict(stats.fired),
                                       new=dict(stats.new))
                self.seen.rollback()
                stats.generated, stats.terminal = boundary[0], boundary[1]
                stats.fired, stats.new = boundary[2], boundary[3]
                break
            self.seen.end_level()
            self.found.update(level_found)
            self.frontier = nxt
            count = self._frontier_size()
            if count:
                stats.depth += 1
                stats.levels.append(count)
            stats.distinct = len(self.seen)
            self._tick(started, count)
            if self.on_level is not None:
                stats.queue = count
                self.on_level(self)
            stopped = self._stop_reason_after_level()
        elapsed = time.perf_counter() - started
        stats.seconds += elapsed
        stats.distinct = len(self.seen)
        stats.queue = self._frontier_size()
        if partial is not None:
            partial.seconds += elapsed
            return self._result(stopped, partial)
        return self._result(stopped)

    def _fingerprints(self, rows):
        if self.options.symmetry:
            rows = self.kernel.canonical(rows)
        return fingerprint_rows(rows)

    def _start(self):
        stats = self.stats
        states = list(self.model.init_states())
        if not states:
            stats.levels = [0]
            return
        rows = self.kernel.init_rows(states)
        stats.generated += len(rows)
        fps = self._fingerprints(rows)
        _, first = np.unique(fps, return_index=True)
        keep = np.sort(first)
        self.seen.add(fps[keep], np.full(len(keep), -1), keep)  # choice: the initial state's index
        self.seen.end_level()
        self.frontier = [rows[keep]]
        found: dict[str, tuple] = {}
        self._check_new(rows[keep], 0, found)
        for prop, value in found.items():
            self.found.setdefault(prop, value)
        stats.distinct = len(self.seen)
        stats.depth = 1
        stats.levels = [len(keep)]

    def _expand_chunk(self, chunk, first, level_found):
        """Expand one chunk whose first state is number ``first``; store its new
        successors and return their rows, in discovery order."""
        stats, kernel = self.stats, self.kernel
        parents, choices, codes, succ = kernel.expand(chunk)
        stats.generated += len(succ)
        stats.terminal += int(np.count_nonzero(np.bincount(parents, minlength=len(chunk)) == 0))
        names = kernel.action_names
        add_counts(stats.fired, names, np.bincount(codes, minlength=len(names)))
        if not len(succ):
            return succ
        # A successor's place in the model's order is (parent, choice): `key`. Of the
        # successors with one fingerprint, the one with the least key is the one the
        # per-state search meets first; `tagged` carries the key with the successor's
        # index in its low bits, so one minimum gives both.
        key = parents * _CHOICES + choices
        if self.step_props:
            self._check_steps(chunk, first, parents, choices, succ, key, level_found)
        tagged = (key << _INDEX_BITS) | np.arange(len(succ), dtype=np.int64)
        fps = self._fingerprints(succ)
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
        self._check_new(rows, len(self.seen) - len(rows), level_found)
        return rows

    def _check_new(self, rows, first, level_found):
        """Check the state invariants on new rows numbered from ``first``."""
        for prop in self.invariants:
            if prop.name in self.found or prop.name in level_found:
                continue
            mask = self.kernel.invariant_mask(prop.name, rows)
            if mask is None:  # no batch form: decode and ask the property
                mask = np.array([prop.check(self.model, self.kernel.decode(r)) is not None for r in rows],
                                dtype=bool)
            if mask.any():
                j = int(np.argmax(mask))
                why = prop.check(self.model, self.kernel.decode(rows[j]))
                if why is None:
                    raise EngineError(f"the batch kernel and the model disagree on {prop.name}")
                level_found[prop.name] = ("always", why, first + j)

    def _check_steps(self, chunk, first, parents, choices, succ, key, level_found):
        for prop in self.step_props:
            if prop.name in self.found or prop.name in level_found:
                continue
            mask = self.kernel.step_mask(prop.name, chunk, parents, succ)
            if mask is None:
                mask = np.array([self._step_why(prop, chunk[p], c) is not None
                                 for p, c in zip(parents.tolist(), choices.tolist())], dtype=bool)
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

    def _frontier_size(self) -> int:
        return sum(len(c) for c in self.frontier)

    def _stop_reason_after_level(self):
        reason = stop_after_level(self.found, self.properties, self.options, len(self.seen),
                                  bool(self._frontier_size()))
        if (reason is None and self.options.max_memory is not None and self._frontier_size()
                and _over(self.options.max_memory)):
            return "max-memory"
        return reason

    def _tick(self, started, queue):
        if self.progress is None:
            return
        self.stats.distinct = len(self.seen)
        self.stats.queue = queue
        self.progress(attrs.evolve(self.stats, seconds=self.stats.seconds + time.perf_counter() - started))

    # -- checkpoints ----------------------------------------------------------------------

    def snapshot(self) -> dict:
        """The search at its last level boundary (see ``LocalEngine.snapshot``)."""
        return {
            "engine": self.name,
            "format": ROWS_FORMAT,
            "stats": attrs.asdict(self.stats),
            "found": self.found,
            "frontier": self.frontier,
            "seen": self.seen,
        }

    def restore(self, snapshot: dict) -> None:
        if snapshot.get("format") != ROWS_FORMAT:
            raise EngineError("the checkpoint was written by the per-state engine; resume it with --per-state")
        self.stats = Stats(**snapshot["stats"])
        self.found = dict(snapshot["found"])
        self.frontier = list(snapshot["frontier"])
        self.seen = snapshot["seen"]

    # -- results --------------------------------------------------------------------------

    def _result(self, stopped, stats=None) -> CheckResult:
        violations = {}
        for prop in (p.name for p in self.properties):
            if prop not in self.found:
                continue
            kind, why, where = self.found[prop]
            if kind == "step":
                parent, choice = where
                init, choices = self.seen.path_to(parent)
                path = extend(self.model, replay_choices(self.model, init, choices), choice)
            else:
                init, choices = self.seen.path_to(where)
                path = replay_choices(self.model, init, choices)
            violations[prop] = Violation(prop, kind, why, path)
        return result_of(self, violations, stopped, self._frontier_size(), stats)


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
            buf.append(a[start:start + take])
            count += take
            start += take
            if count >= size:
                yield buf[0] if len(buf) == 1 else np.concatenate(buf)
                buf, count = [], 0
    if buf:
        yield buf[0] if len(buf) == 1 else np.concatenate(buf)


def _over(limit) -> bool:
    rss = resident_bytes()
    return rss is not None and rss > limit
