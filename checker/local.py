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

import time

import attrs

from .fingerprint import fingerprint
from .kernel import check_state, expand, split_properties
from .result import CheckResult, Stats, Violation
from .trace import extend, replay_fingerprints

_PROGRESS_EVERY = 2048  # states expanded between two looks at the clock


@attrs.define
class Options:
    """How a run explores.

    Attributes:
        max_depth: do not expand states at this depth (the initial state has depth 1).
        keep_going: after a property fails, keep exploring to decide the others; the run
            then ends when every checked property has failed or no state is left.
        max_states: stop cleanly once this many distinct states are stored.
        progress_seconds: how often ``progress`` is called during a level.
    """

    max_depth: int | None = None
    keep_going: bool = False
    max_states: int | None = None
    progress_seconds: float = 0.25


class LocalEngine:
    """Breadth-first exploration of a model with a fingerprint seen-set and parent pointers.

    Args:
        model: an object following ``checker.protocol.Model``.
        properties: the properties to check (default: all of ``model.properties()``).
        options: an ``Options``.
        progress: called with a ``Stats`` snapshot now and then, and after every level.
    """

    name = "local"

    def __init__(self, model, properties=None, options=None, progress=None):
        self.model = model
        self.properties = list(model.properties() if properties is None else properties)
        self.invariants, self.step_props = split_properties(self.properties)
        self.options = options or Options()
        self.progress = progress
        self.stop_requested = None  # set to a reason (str) to stop at the next state
        self.stats = Stats()
        self.seen: dict[int, int | None] = {}  # fingerprint -> parent fingerprint
        self.frontier: list = []  # (fingerprint, state) of the level being expanded
        self.found: dict[str, tuple] = {}  # property -> (kind, explanation, where)

    # -- the search ---------------------------------------------------------------

    def run(self) -> CheckResult:
        """Explore, and return the result (with full counterexample paths)."""
        started = time.perf_counter()
        stats = self.stats
        if not self.seen:
            self._start()
        stopped = self._stop_reason_after_level() if self.frontier else None
        last_tick = time.perf_counter()
        model, step_props, invariants = self.model, self.step_props, self.invariants
        seen, fired, new = self.seen, stats.fired, stats.new
        max_depth = self.options.max_depth
        while self.frontier and stopped is None:
            if max_depth is not None and stats.depth >= max_depth:
                stopped = "max-depth"
                break
            level_found: dict[str, tuple] = {}
            nxt = []
            for count, (fp, state) in enumerate(self.frontier):
                if self.stop_requested is not None:
                    stopped = self.stop_requested
                    break
                edges = expand(model, state, step_props)
                if not edges:
                    stats.terminal += 1
                for choice, action, succ, sfp, bad in edges:
                    stats.generated += 1
                    name = action.name
                    fired[name] = fired.get(name, 0) + 1
                    for prop, why in bad:
                        if prop not in self.found and prop not in level_found:
                            level_found[prop] = ("step", why, (fp, choice))
                    if sfp in seen:
                        continue
                    seen[sfp] = fp
                    new[name] = new.get(name, 0) + 1
                    nxt.append((sfp, succ))
                    for prop, why in check_state(model, succ, invariants):
                        if prop not in self.found and prop not in level_found:
                            level_found[prop] = ("always", why, sfp)
                if count % _PROGRESS_EVERY == 0 and self.progress is not None:
                    now = time.perf_counter()
                    if now - last_tick >= self.options.progress_seconds:
                        last_tick = now
                        self._tick(started, len(self.frontier) - count - 1 + len(nxt))
            if stopped is not None:
                # Interrupted inside a level: the level is incomplete, so the numbers
                # are a lower bound; the frontier still holds the unexpanded states.
                stats.distinct = len(seen)
                break
            self.found.update(level_found)
            self.frontier = nxt
            if nxt:
                stats.depth += 1
                stats.levels.append(len(nxt))
            stats.distinct = len(seen)
            self._tick(started, len(nxt))
            stopped = self._stop_reason_after_level()
        stats.seconds += time.perf_counter() - started
        stats.distinct = len(seen)
        stats.queue = len(self.frontier)
        return self._result(stopped)

    def _start(self):
        stats = self.stats
        for state in self.model.init_states():
            fp = fingerprint(self.model, state)
            stats.generated += 1
            if fp in self.seen:
                continue
            self.seen[fp] = None
            self.frontier.append((fp, state))
            for prop, why in check_state(self.model, state, self.invariants):
                self.found.setdefault(prop, ("always", why, fp))
        stats.distinct = len(self.seen)
        stats.depth = 1 if self.frontier else 0
        stats.levels = [len(self.frontier)]

    def _stop_reason_after_level(self):
        if self.found:
            if not self.options.keep_going:
                return "violation"
            if all(p.name in self.found for p in self.properties):
                return "violation"
        limit = self.options.max_states
        if limit is not None and len(self.seen) >= limit and self.frontier:
            return "max-states"
        return None

    def _tick(self, started, queue):
        if self.progress is None:
            return
        self.stats.distinct = len(self.seen)
        self.stats.queue = queue
        snapshot = attrs.evolve(self.stats, seconds=self.stats.seconds + time.perf_counter() - started)
        self.progress(snapshot)

    # -- results ------------------------------------------------------------------

    def _chain(self, fp):
        chain = []
        while fp is not None:
            chain.append(fp)
            fp = self.seen[fp]
        chain.reverse()
        return chain

    def _result(self, stopped) -> CheckResult:
        violations = {}
        for prop in (p.name for p in self.properties):
            if prop not in self.found:
                continue
            kind, why, where = self.found[prop]
            if kind == "step":
                parent, choice = where
                path = extend(self.model, replay_fingerprints(self.model, self._chain(parent)), choice)
            else:
                path = replay_fingerprints(self.model, self._chain(where))
            violations[prop] = Violation(prop, kind, why, path)
        complete = stopped is None or (stopped == "violation" and not self.frontier)
        return CheckResult(
            engine=self.name,
            checked=[p.name for p in self.properties],
            stats=self.stats,
            violations=violations,
            complete=complete,
            stopped=stopped,
            max_depth=self.options.max_depth,
        )


def check(model, properties=None, options=None, progress=None) -> CheckResult:
    """Run the local engine once; see ``LocalEngine``."""
    return LocalEngine(model, properties, options, progress).run()
