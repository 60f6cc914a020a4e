"""The local engine: breadth-first search in one process.

The search is level-synchronous: all states of depth d are expanded before any of
depth d + 1. Within a level, states are expanded in the order they were discovered and
successors in the model's action order, so the first path found to a state is the
lexicographically least of its shortest paths. When a violation is found, the level
being generated is finished before the run stops: the counts then do not depend on where
in a level the violation sits, and the Spark engine, which works a level at a time,
reports exactly the same numbers.
"""

from __future__ import annotations

import sys
import time
from array import array
from collections.abc import Mapping

import attrs

from .memory import resident_bytes
from .fingerprint import fingerprint_bytes
from .kernel import (canonical_encoder, check_state, expand, require_symmetric,
                     result_of, split_properties, stop_after_level)
from .protocol import action_name
from .result import CheckResult, Stats, Violation
from .trace import extend, replay_fingerprints

_PROGRESS_EVERY = 2048  # states expanded between two looks at the clock


@attrs.define
class Options:
    """How a run explores.

    Attributes:
        max_depth: do not expand states at this depth (the initial state has depth 1).
        keep_going: after a property fails, keep exploring (like TLC's ``-continue``): the
            run then explores every reachable state and reports the shortest
            counterexample of every property that fails, with the full counts.
        max_states: stop cleanly once this many distinct states are stored.
        max_memory: stop cleanly once the process's resident memory passes this many
            bytes (looked at every few thousand states and at every level boundary).
        progress_seconds: how often ``progress`` is called during a level.
    """

    max_depth: int | None = None
    keep_going: bool = False
    max_states: int | None = None
    max_memory: int | None = None
    progress_seconds: float = 0.25
    symmetry: bool = False

class SeenSet(Mapping):
    """The seen-set: every stored state's fingerprint and parent, as a ``Mapping`` from
    fingerprint to parent fingerprint (``None`` for an initial state).

    A dict of Python ints costs about 90 bytes a state (a 36-byte int object per key plus
    the dict's own table), which is most of what a long run keeps. Here states are
    numbered in the order they are stored, and three flat arrays hold everything:
    ``fps[i]`` (8 bytes) and ``parents[i]`` (the parent's number + 1, 0 for none: 4
    bytes), plus an open-addressing hash table of state numbers + 1 (0 = empty slot;
    4 bytes a slot, at most half full) indexed by the fingerprint's low bits, which need
    no further mixing since a fingerprint is a uniform digest: 20 to 28 bytes a state.
    A lookup probes the table in Python, slower than a dict's, but a small part of
    expanding a state.

    Storing in numbering order is what the engine relies on: a BFS level is a run of
    consecutive numbers, so a frontier state's number (its successors' parent) is its
    position, and going back to a level boundary is ``truncate``.
    """

    __slots__ = ("fps", "parents", "_slots", "_mask")  # attribute reads in `add` are hot
    _MIN_SLOTS = 1 << 10

    def __init__(self):
        self.fps = array("Q")
        self.parents = array("I")
        self._slots = array("I", bytes(4 * self._MIN_SLOTS))
        self._mask = self._MIN_SLOTS - 1

    @classmethod
    def from_mapping(cls, mapping, last=()):
        """A seen-set holding ``mapping`` (fingerprint -> parent fingerprint or None), in
        its order, except that the fingerprints of ``last`` come last, in that order (a
        checkpoint's frontier must be the newest states)."""
        seen = cls()
        tail = set(last)
        for fp in mapping:
            if fp not in tail:
                seen.add(fp, -1)
        for fp in last:
            seen.add(fp, -1)
        parents = seen.parents
        for i, fp in enumerate(seen.fps):
            parent = mapping[fp]
            parents[i] = 0 if parent is None else seen.number(parent) + 1
        return seen

    def add(self, fp, parent) -> bool:
        """Store ``fp`` with parent number ``parent`` (-1 for none) unless it is stored
        already; return whether it was new. Its number is then ``len(self) - 1``."""
        slots, mask, fps = self._slots, self._mask, self.fps
        i = fp & mask
        while True:
            k = slots[i]
            if not k:
                break
            if fps[k - 1] == fp:
                return False
            i = (i + 1) & mask
        fps.append(fp)
        self.parents.append(parent + 1)
        slots[i] = n = len(fps)
        if 2 * n > mask:
            self._rehash(2 * (mask + 1))
        return True

    def number(self, fp) -> int:
        """The number of stored fingerprint ``fp`` (KeyError if not stored)."""
        slots, mask, fps = self._slots, self._mask, self.fps
        i = fp & mask
        while True:
            k = slots[i]
            if not k:
                raise KeyError(fp)
            if fps[k - 1] == fp:
                return k - 1
            i = (i + 1) & mask

    def parent_number(self, i) -> int:
        """The number of state ``i``'s parent, -1 for an initial state."""
        return self.parents[i] - 1

    def truncate(self, n) -> None:
        """Forget every state numbered ``n`` or more."""
        del self.fps[n:]
        del self.parents[n:]
        self._rehash(self._mask + 1)

    def _rehash(self, size):
        # Numbers above 2**32 - 1 do not fit the 4-byte arrays: widen them (a local run
        # that large is not practical, but it must not overflow silently).
        code = "I" if size <= 1 << 32 else "Q"
        if code != self.parents.typecode:
            self.parents = array(code, self.parents)
        slots = array(code, bytes(array(code).itemsize * size))
        mask = size - 1
        for k, fp in enumerate(self.fps, 1):
            i = fp & mask
            while slots[i]:
                i = (i + 1) & mask
            slots[i] = k
        self._slots, self._mask = slots, mask

    def nbytes(self) -> int:
        """The bytes held: the arrays' allocated buffers and the objects themselves."""
        return sum(sys.getsizeof(x) for x in (self, self.fps, self.parents, self._slots))

    # -- Mapping: fingerprint -> parent fingerprint -----------------------------------

    def __len__(self):
        return len(self.fps)

    def __iter__(self):
        return iter(self.fps)

    def __contains__(self, fp):
        try:
            self.number(fp)
        except (KeyError, TypeError):
            return False
        return True

    def __getitem__(self, fp):
        p = self.parents[self.number(fp)]
        return None if p == 0 else self.fps[p - 1]


class LocalEngine:
    """Breadth-first exploration of a model with a fingerprint seen-set and parent pointers.

    Args:
        model: an object following ``checker.protocol.Model``.
        properties: the properties to check (default: all of ``model.properties()``).
        options: an ``Options``.
        progress: called with a ``Stats`` snapshot now and then, and after every level.

    ``on_level``, if set, is called with the engine at every level boundary (after the
    level is counted, before the run decides whether to stop); ``snapshot()`` is valid
    there. A checkpoint writer uses it.
    """

    name = "local"

    def __init__(self, model, properties=None, options=None, progress=None):
        self.model = model
        self.properties = list(model.properties() if properties is None else properties)
        self.invariants, self.step_props = split_properties(self.properties)
        self.options = options or Options()
        self.progress = progress
        self.stop_requested = None  # set to a reason (str) to stop at the next state
        self.on_level = None  # called with the engine at every level boundary
        self.stats = Stats()
        self.seen = SeenSet()  # fingerprint -> parent fingerprint
        # The states of the level being expanded. They are the newest entries of `seen`,
        # in order, so frontier[i] is state number len(seen) - len(frontier) + i there:
        # keeping no (fingerprint, state) pair per state saves two objects a state.
        self.frontier: list = []
        self.found: dict[str, tuple] = {}  # property -> (kind, explanation, where)
        self.encode = model.encode
        if self.options.symmetry:
            require_symmetric(self.properties)
            self.encode = canonical_encoder(model)

    # -- the search ---------------------------------------------------------------

    def run(self) -> CheckResult:
        """Explore, and return the result (with full counterexample paths)."""
        started = time.perf_counter()
        stats = self.stats
        if not self.seen:
            self._start()
        # After restore() the run may already be decided (a violation, an empty frontier).
        stopped = self._stop_reason_after_level()
        last_tick = time.perf_counter()
        model, step_props, invariants = self.model, self.step_props, self.invariants
        partial = None  # the counts of a level left half-expanded by a stop
        seen, fired, new = self.seen, stats.fired, stats.new
        add = seen.add
        max_depth, max_memory = self.options.max_depth, self.options.max_memory
        while self.frontier and stopped is None:
            if max_depth is not None and stats.depth >= max_depth:
                stopped = "max-depth"
                break
            level_found: dict[str, tuple] = {}
            nxt = []
            boundary = (stats.generated, stats.terminal, dict(fired), dict(new))
            stored = len(seen)  # the level boundary, to go back to on a stop
            first = stored - len(self.frontier)  # the number of the frontier's first state
            for count, state in enumerate(self.frontier):
                if self.stop_requested is not None:
                    stopped = self.stop_requested
                    break
                edges = expand(model, state, step_props, self.encode)
                if not edges:
                    stats.terminal += 1
                parent = first + count
                for choice, action, succ, sfp, bad in edges:
                    stats.generated += 1
                    name = action_name(action)
                    fired[name] = fired.get(name, 0) + 1
                    for prop, why in bad:
                        if prop not in self.found and prop not in level_found:
                            level_found[prop] = ("step", why, (seen.fps[parent], choice))
                    if not add(sfp, parent):
                        continue
                    new[name] = new.get(name, 0) + 1
                    nxt.append(succ)
                    for prop, why in check_state(model, succ, invariants):
                        if prop not in self.found and prop not in level_found:
                            level_found[prop] = ("always", why, sfp)
                if count % _PROGRESS_EVERY == 0 and max_memory is not None and _over(max_memory):
                    stopped = "max-memory"
                    break
                if count % _PROGRESS_EVERY == 0 and self.progress is not None:
                    now = time.perf_counter()
                    if now - last_tick >= self.options.progress_seconds:
                        last_tick = now
                        self._tick(started, len(self.frontier) - count - 1 + len(nxt))
            if stopped is not None:
                # Stopped inside a level: the result reports the partial counts (a lower
                # bound), but the engine goes back to the level boundary, so snapshot()
                # and a later run() re-expand the whole level and end with the counts of
                # a run that was never stopped. The states added to `seen` in this level
                # are its newest, so undoing the level is a truncation.
                stats.distinct = len(seen)
                # States found but not expanded: the rest of this level and what it found.
                left = len(self.frontier) - count - (stopped == "max-memory") + len(nxt)
                partial = attrs.evolve(stats, levels=list(stats.levels), fired=dict(fired), new=dict(new),
                                       queue=left)
                seen.truncate(stored)
                stats.generated, stats.terminal = boundary[0], boundary[1]
                fired.clear()
                fired.update(boundary[2])
                new.clear()
                new.update(boundary[3])
                break
            self.found.update(level_found)
            self.frontier = nxt
            if nxt:
                stats.depth += 1
                stats.levels.append(len(nxt))
            stats.distinct = len(seen)
            self._tick(started, len(nxt))
            if self.on_level is not None:
                stats.queue = len(nxt)
                self.on_level(self)
            stopped = self._stop_reason_after_level()
        elapsed = time.perf_counter() - started
        stats.seconds += elapsed
        stats.distinct = len(seen)
        stats.queue = len(self.frontier)
        if partial is not None:
            partial.seconds += elapsed
            return self._result(stopped, partial)
        return self._result(stopped)

    def _start(self):
        stats = self.stats
        for state in self.model.init_states():
            fp = fingerprint_bytes(self.encode(state))
            stats.generated += 1
            if not self.seen.add(fp, -1):
                continue
            self.frontier.append(state)
            for prop, why in check_state(self.model, state, self.invariants):
                self.found.setdefault(prop, ("always", why, fp))
        stats.distinct = len(self.seen)
        stats.depth = 1 if self.frontier else 0
        stats.levels = [len(self.frontier)]

    def _stop_reason_after_level(self):
        reason = stop_after_level(self.found, self.properties, self.options, len(self.seen),
                                  bool(self.frontier))
        if reason is None and self.options.max_memory is not None and self.frontier and _over(self.options.max_memory):
            return "max-memory"
        return reason

    # -- checkpoints --------------------------------------------------------------

    def snapshot(self) -> dict:
        """The search at its last level boundary, as picklable data (see ``checker.checkpoint``).

        Valid between levels: from ``on_level`` or after ``run()`` returned (a run stopped
        inside a level has gone back to that level's start). The dict shares the engine's
        containers; write it out before running on.
        """
        fps = self.seen.fps
        first = len(fps) - len(self.frontier)
        return {
            "engine": self.name,
            "stats": attrs.asdict(self.stats),
            "found": self.found,
            "frontier": [(fps[first + i], state) for i, state in enumerate(self.frontier)],
            "seen": self.seen,  # a SeenSet: fingerprint -> parent fingerprint
        }

    def restore(self, snapshot: dict) -> None:
        """Continue from a ``snapshot()`` (of this model, properties and options): the
        next ``run()`` goes on from its level boundary."""
        self.stats = Stats(**snapshot["stats"])
        self.found = dict(snapshot["found"])
        front = snapshot["frontier"]
        seen = snapshot["seen"]
        last = [fp for fp, _ in front]
        # The frontier must be the newest states of the seen-set, in order. A checkpoint
        # of an older kmc holds a dict instead of a SeenSet.
        if not isinstance(seen, SeenSet) or list(seen.fps[len(seen) - len(last):]) != last:
            seen = SeenSet.from_mapping(seen, last)
        self.seen = seen
        self.frontier = [state for _, state in front]

    def _tick(self, started, queue):
        if self.progress is None:
            return
        self.stats.distinct = len(self.seen)
        self.stats.queue = queue
        snapshot = attrs.evolve(self.stats, seconds=self.stats.seconds + time.perf_counter() - started)
        self.progress(snapshot)

    # -- results ------------------------------------------------------------------

    def _chain(self, fp):
        seen = self.seen
        chain = []
        i = seen.number(fp)
        while i >= 0:
            chain.append(seen.fps[i])
            i = seen.parent_number(i)
        chain.reverse()
        return chain

    def _result(self, stopped, stats=None) -> CheckResult:
        violations = {}
        for prop in (p.name for p in self.properties):
            if prop not in self.found:
                continue
            kind, why, where = self.found[prop]
            if kind == "step":
                parent, choice = where
                path = extend(self.model, replay_fingerprints(self.model, self._chain(parent), self.encode), choice)
            else:
                path = replay_fingerprints(self.model, self._chain(where), self.encode)
            violations[prop] = Violation(prop, kind, why, path)
        return result_of(self, violations, stopped, self.frontier, stats)


def _over(limit) -> bool:
    rss = resident_bytes()
    return rss is not None and rss > limit


def check(model, properties=None, options=None, progress=None) -> CheckResult:
    """Run the local engine once; see ``LocalEngine``."""
    return LocalEngine(model, properties, options, progress).run()
