"""The level driver: the one breadth-first search every engine runs.

The search is level-synchronous: all states of depth d are expanded before any of
depth d + 1. What differs between engines is only *how* a level is expanded and where
the states are kept, a **search** object (``checker.local.rows.RowsSearch``: rows of the
model's batch kernel, or of its Python states on the per-state path, and a store;
``checker.partitioned.levels.PartitionedLevels``: a cluster's tasks over immutable
objects). The driver owns everything else, once:

- the start (initial states) and the restore from a checkpoint's snapshot;
- every stop rule: ``max_depth``, ``max_states``, ``max_memory``, a stop request (a
  signal), and a property's violation (the level is finished first, so the counts do
  not depend on where in a level the violation sits);
- the rollback of a level left half-expanded by a stop (the result reports the partial
  counts, a lower bound; the engine goes back to the level boundary, so that a snapshot
  and a later ``run()`` re-expand the whole level);
- progress, the ``on_level`` hook, the violation records (a property's first violation
  is the first one of the breadth-first order), the result and its paths.

A search's states are numbered in the order they are stored; a level is a run of
consecutive numbers, so a frontier state's number is known from its position, and a
violation is recorded by a number (``("always", why, number)``) or, for a step
property, a parent's number and a choice (``("step", why, (number, choice))``).

The search object's interface, its parts (an expander and a store) and their
determinism contract are declared in ``checker.core.parts`` (``LevelSearch``).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Sized
from typing import Any, Generic, TypeVar

import attrs

from ..base.memory import resident_bytes
from ..contract.protocol import COVER, STEP_COVER, Model, is_cover
from .assembly import Assembly
from .coverage import Coverage, NoCoverage
from .options import Options
from .parts import Found, LevelSearch, ResourceStop, Search
from .result import CheckResult, Stats, Violation
from .trace import extend
from .visitor import Explored

__all__ = ["Engine", "LevelDriver", "OnLevel", "Progress", "RESOURCE_STOPS", "Search"]

# Called with a ``Stats`` snapshot now and then, and after every level.
Progress = Callable[[Stats], Any]
# Called with the engine at every level boundary (a checkpoint writer).
OnLevel = Callable[[Any], Any]


# What the driver runs: a search of pieces ``P``, a frontier ``F`` and locations ``W`` of its
# stored states (``checker.core.parts.LevelSearch``); each engine binds its own.
P = TypeVar("P")
F = TypeVar("F")
W = TypeVar("W")


class LevelDriver(Generic[P, F, W]):
    """Breadth-first exploration of ``model`` with a search object (see the module).

    Args:
        model: an object following ``checker.contract.protocol.Model``.
        search: the search object (built by the engine from the model).
        properties: the properties to check (default: all of ``model.properties()``).
        options: an ``Options``.
        progress: called with a ``Stats`` snapshot now and then, and after every level.
        on_level: called with the engine at every level boundary (after the level is
            counted, before the run decides whether to stop); ``snapshot()`` is valid
            there. A checkpoint writer uses it.

    ``stop_requested``, set to a reason (a string), stops the run at the next piece.
    """

    name = "local"
    path = "per-state"
    not_started: str | None = None  # the Spark engine's: why it never started a session
    cleaned: str | None = None  # the Spark engine's: the stores of killed runs it removed
    # why a model with a batch kernel runs on the per-state path (its batch_unsupported())
    per_state_because: str | None = None

    def __init__(
        self,
        assembly: Assembly,
        search: LevelSearch[P, F, W],
        progress: Progress | None = None,
        *,
        on_level: OnLevel | None = None,
    ):
        # What the engine built its search from (``checker.core.assembly``): the model with its
        # defaults, the properties split, symmetry checked, the graph clients in the visitor.
        self.model: Model = assembly.model
        self.properties = assembly.properties
        self.invariants, self.step_props = assembly.invariants, assembly.step_props
        self.options = assembly.options
        self.progress = progress
        self.on_level = on_level
        self.stop_requested: str | None = None
        # a batch kernel's comparison with its model (``checker.contract.kernel_check.KernelCheck``),
        # set by an engine that has one: it counts the states compared
        self.kernel_check: Any = None
        self.stats = Stats(coverage=Coverage(self.model.coverage_names()) if self.options.coverage else NoCoverage())
        self.found: Found = {}  # property -> (kind, explanation, where)
        self.search: LevelSearch[P, F, W] = search
        self._started = False

    @property
    def possibly(self) -> list[tuple[str, object]]:
        """``(property name, EdgeLog)`` of every always-possibly property (its graph
        client's log, ``checker.graph.properties``; ``kmc bench`` measures them)."""
        saved: list[tuple[str, object]] = self.search.visitor.saved("possibly")
        return saved

    @property
    def liveness(self) -> list[tuple[str, object]]:
        """``(property name, LivenessLog)`` of every liveness property."""
        saved: list[tuple[str, object]] = self.search.visitor.saved("liveness")
        return saved

    # the store and the frontier, for the engines built on this one and for the tests
    @property
    def seen(self) -> Sized:
        return self.search.seen

    @property
    def frontier(self) -> F:
        return self.search.frontier

    def frontier_size(self) -> int:
        return self.search.size()

    # -- the search ---------------------------------------------------------------

    def start(self) -> None:
        """Store the initial states (``run()`` does it unless the search was restored)."""
        stats = self.stats
        self.search.start(stats, self.found)
        size = self.search.size()
        stats.distinct = len(self.search.seen)
        stats.depth = 1 if size else 0
        stats.levels = [size]
        self._started = True

    def run(self) -> CheckResult:
        """Explore, and return the result (with full counterexample paths)."""
        try:
            return self._run()
        finally:
            gc.unfreeze()  # what the run froze is the collector's again
            self.search.end_run()

    def _run(self) -> CheckResult:
        started = time.perf_counter()
        stats = self.stats
        if not self._started:
            self.start()
        # After restore() the run may already be decided (a violation, an empty frontier).
        stopped = self.stop_reason_after_level()
        self._last_tick = time.perf_counter()
        partial = None  # the counts of a level left half-expanded by a stop
        while self.search.size() and stopped is None:
            if self.options.max_depth is not None and stats.depth >= self.options.max_depth:
                stopped = "max-depth"
                break
            level_found: Found = {}
            boundary = (stats.generated, stats.terminal, dict(stats.fired), dict(stats.new), stats.coverage.copy())
            size = self.search.size()
            stopped, done = self._expand_level(started, size, level_found)
            search = self.search
            if stopped is not None:
                # Stopped inside a level: report the partial counts, go back to the
                # level boundary (the level's states are the newest: a truncation).
                stats.distinct = len(search.seen)
                partial = attrs.evolve(
                    stats,
                    levels=list(stats.levels),
                    fired=dict(stats.fired),
                    new=dict(stats.new),
                    coverage=stats.coverage.copy(),
                    queue=size - done + search.next_size(),
                )
                search.rollback()
                search.visitor.rollback(len(search.seen))
                stats.generated, stats.terminal = boundary[0], boundary[1]
                stats.fired, stats.new, stats.coverage = boundary[2], boundary[3], boundary[4]
                break
            search.end_level()
            # What a level leaves alive mostly lives as long as the run (the stored states): moved
            # out of the collector's generations, so that its full collections scan only what the
            # next level makes (on the per-state path they were a third of the run's time); a
            # cycle among them is collected once the run gives them back.
            gc.freeze()
            if self.kernel_check is not None:  # the sample is a function of the level's size
                stats.cross_checked += self.kernel_check.sampled(stats.depth, size)
            self.found.update(level_found)
            stopped = self._end_level(started)
        return self._finish(started, stopped, partial)

    def _expand_level(self, started: float, size: int, level_found: Found) -> tuple[str | None, int]:
        """Expand the frontier's level piece by piece: why it stopped inside the level
        (None: it did not) and how many states it expanded."""
        stats, stopped, done = self.stats, None, 0
        first = len(self.search.seen) - size  # the number of the frontier's first state
        max_memory = self.options.max_memory
        try:
            self.next_search()  # an engine may replace its search at a level boundary
            search = self.search
            search.begin_level(stats.depth)
            for count, piece in enumerate(search.pieces()):
                if self.stop_requested is not None:
                    return self.stop_requested, done
                if search.expand(piece, first + done, stats, level_found, self.found) is False:
                    return self.stop_requested, done  # a stop request cancelled the piece
                done += search.piece_len(piece)
                every = search.every
                if every and count % every == 0:
                    if max_memory is not None and _over(max_memory, search):
                        return "max-memory", done
                    if self.progress is not None:
                        now = time.perf_counter()
                        if now - self._last_tick >= self.options.progress_seconds:
                            self._last_tick = now
                            self._tick(started, size - done + search.next_size())
        except MemoryError:
            # The process could not allocate (an address-space or a control group's
            # limit, or the machine's memory, reached before the ceiling): the level is
            # dropped, as at the ceiling, and the last one stands.
            stopped = "out-of-memory"
            self.stop_detail = "the process could not allocate (MemoryError)"
        except ResourceStop as e:
            stopped, self.stop_detail = e.reason, e.detail
        return stopped, done

    def _end_level(self, started: float) -> str | None:
        """Count the level just expanded, hand the boundary to ``on_level``, and say why
        the run stops here (None: it goes on)."""
        stats, search = self.stats, self.search
        count = search.size()
        if count:
            stats.depth += 1
            stats.levels.append(count)
        stats.distinct = len(search.seen)
        self._tick(started, count)
        if self.on_level is not None:
            stats.queue = count
            try:
                self.on_level(self)
            except ResourceStop as e:  # the checkpoint's disk is full: the run stops at this boundary
                self.stop_detail = e.detail
                return str(e.reason)
        return self.stop_reason_after_level()

    def _finish(self, started: float, stopped: str | None, partial: Stats | None) -> CheckResult:
        """The run's result, its verdicts that need the whole graph decided now."""
        stats, search = self.stats, self.search
        elapsed = time.perf_counter() - started
        stats.seconds += elapsed
        stats.distinct = len(search.seen)
        stats.queue = search.size()
        if partial is not None:
            partial.seconds += elapsed
        # The verdicts that need the whole graph (always-possibly, liveness) are decided
        # now, and their time counts in the run's: the result's and every progress line's.
        self._deciding = (time.perf_counter(), partial if partial is not None else stats)
        result = self.result(stopped, partial)
        result.stats.seconds += time.perf_counter() - self._deciding[0]
        self._deciding = None
        return result

    _last_tick = 0.0  # when the progress was last shown

    # (when the search is over and the verdicts are being decided) the clock's start and
    # the counts the progress shows
    _deciding: tuple[float, Stats] | None = None

    def _deciding_progress(self, name: str) -> Callable[[str], None] | None:
        """A callback for a verdict's decision: each sentence shown on the progress
        display beside the counts, the clock running on."""
        if self.progress is None or self._deciding is None:
            return None
        since, base = self._deciding
        progress = self.progress

        def say(text: str) -> None:
            progress(
                attrs.evolve(
                    base, seconds=base.seconds + time.perf_counter() - since, deciding=f"deciding {name}: {text}"
                )
            )

        return say

    def next_search(self) -> None:
        """Called at every level boundary, before the level is expanded: an engine may
        replace ``self.search`` there (the Spark engine hands its levels over to Spark)."""

    # One line on why a resource stop happened (``"out-of-memory"``, ``"disk-full"``), or None.
    stop_detail: str | None = None

    def cancel(self, reason: str = "interrupted") -> None:
        """Stop at the next piece (a signal handler calls this); the run goes back to the
        level boundary and reports ``reason``."""
        self.stop_requested = reason
        self.search.stop_asked = True  # (a search waiting on its workers stops waiting)

    def stop_reason_after_level(self) -> str | None:
        """Why the run stops at this level boundary, or ``None`` to go on."""
        left = bool(self.search.size())
        reason = stop_after_level(self.found, self.properties, self.options, len(self.search.seen), left)
        if (
            reason is None
            and self.options.max_memory is not None
            and left
            and _over(self.options.max_memory, self.search)
        ):
            return "max-memory"
        return reason

    def _tick(self, started: float, queue: int) -> None:
        if self.progress is None:
            return
        self.stats.distinct = len(self.search.seen)
        self.stats.queue = queue
        self.progress(attrs.evolve(self.stats, seconds=self.stats.seconds + time.perf_counter() - started))

    # -- checkpoints --------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The search at its last level boundary, as picklable data (see ``checker.checkpoints.file``).

        Valid between levels: from ``on_level`` or after ``run()`` returned (a run stopped
        inside a level has gone back to that level's start). The dict shares the engine's
        containers; write it out before running on.
        """
        parts = self.search.snapshot_parts()
        head = {"engine": self.name, **parts.pop("head", {})}
        stats = attrs.asdict(self.stats, filter=lambda a, _v: a.name != "deciding")  # a progress note only
        snap = {**head, "stats": stats, "found": self.search.found_out(self.found), **parts}
        snap.update(self.search.visitor.snapshot())  # only the logs present: old forms stay
        return snap

    def committed(self, snapshot: dict[str, Any]) -> None:
        """A checkpoint of ``snapshot`` is written (``checker.checkpoints.writer``): an engine
        whose levels live outside the process frees what no checkpoint names now; nothing
        here."""

    def restore(self, snapshot: dict[str, Any], directory: Any = None) -> None:
        """Continue from a ``snapshot()`` (of this model, properties and options): the
        next ``run()`` goes on from its level boundary. (``directory``, the checkpoint's,
        is for engines that keep files beside the snapshot.)"""
        self.search.restore_parts(snapshot, directory)
        self.stats = Stats(**snapshot["stats"])
        if not self.options.coverage:
            self.stats.coverage = NoCoverage()
        elif self.stats.coverage is None:  # a checkpoint of an older kmc: counted from here
            self.stats.coverage = Coverage(self.model.coverage_names())
        else:
            self.stats.coverage.restore_names(self.model.coverage_names())
        self.found = self.search.found_in(dict(snapshot["found"]))
        self.search.visitor.restore(snapshot)
        self._started = True

    # -- results ------------------------------------------------------------------

    def result(self, stopped: str | None, stats: Stats | None = None) -> CheckResult:
        """The result: the counts, a path for every violation found, and the verdicts of the
        graph clients (``checker.core.visitor.GraphClient.decide``)."""
        violations = {}
        for p in self.properties:
            prop = p.name
            if prop not in self.found:
                continue
            kind, why, where = self.found[prop]
            if kind == "step":
                parent, choice = where
                path = extend(self.model, self.search.path(parent), choice)
            else:
                path = self.search.path(where)
            # a cover's first witness is found as an invariant's first violation is (a step
            # cover's as a step property's, its path ending with the step); result_of keeps
            # it apart (``CheckResult.witnesses``)
            violations[prop] = Violation(prop, COVER if is_cover(p) else kind, why, path)
        result = result_of(self, violations, stopped, self.search.size(), stats)
        explored = Explored(
            self.model, self._unexplored(stopped), self.search.numbers_of, self.search.path, self._deciding_progress
        )
        for client in self.search.visitor.clients:
            decision = client.decide(explored)
            if decision is None:
                continue
            if decision.unknown is not None:
                result.unknown[decision.name] = decision.unknown
            elif decision.violation is not None:
                result.violations[decision.name] = decision.violation
        return result

    def _unexplored(self, stopped: str | None) -> str | None:
        """Why the run left states unexplored (None: it explored every reachable state)."""
        # A stop at a violation on the last level has still explored every state.
        if not self.search.size() and stopped in (None, "violation"):
            return None
        reasons = {
            "max-depth": f"the run stopped at max_depth {self.options.max_depth}",
            "max-states": f"the run stopped at max_states {self.options.max_states}",
            "violation": "the run stopped at another property's violation (--keep-going explores them all)",
        }
        return reasons.get(stopped or "", f"the run stopped early ({stopped})")


# The stops that a resource ended (exit code 4: never a verdict, resumable).
RESOURCE_STOPS = ("max-memory", "out-of-memory", "disk-full")


def _over(limit: int, search: LevelSearch[Any, Any, Any]) -> bool:
    """Whether resident memory, with what ``search`` may still allocate at the next level
    boundary, passes ``limit``."""
    rss = resident_bytes()
    return rss is not None and rss + search.memory_reserve() > limit


# An engine, whatever search it runs: what the registry of engines, the checkpoint writer and
# the application hold.
Engine = LevelDriver[Any, Any, Any]


def result_of(
    engine: Any, violations: dict[str, Violation], stopped: str | None, frontier_left: int, stats: Stats | None = None
) -> CheckResult:
    """The ``CheckResult`` an engine returns: its ``name``, ``properties``, ``options`` and
    ``stats`` (unless ``stats`` is given), the counterexamples found, and why it stopped.
    A run is complete when it was not stopped, or stopped at a violation with nothing
    left to expand."""
    return CheckResult(
        engine=engine.name,
        checked=[p.name for p in engine.properties if not is_cover(p)],
        stats=engine.stats if stats is None else stats,
        violations={name: v for name, v in violations.items() if v.kind != COVER},
        complete=stopped is None or (stopped == "violation" and not frontier_left),
        stopped=stopped,
        max_depth=engine.options.max_depth,
        covers=[p.name for p in engine.properties if is_cover(p)],
        witnesses={name: v.path for name, v in violations.items() if v.kind == COVER},
        step_covers=[p.name for p in engine.properties if p.kind == STEP_COVER],
    )


def stop_after_level(
    found: Iterable[str], properties: Any, options: Options, distinct: int, frontier_left: bool
) -> str | None:
    """Why a run stops at a level boundary, or ``None`` to go on: the policy every engine
    shares, so that they stop at the same level.

    Args:
        found: the names of the properties that have failed so far.
        properties: the properties being checked (a cover's witness stops nothing).
        options: ``checker.local.states.Options`` (``keep_going``, ``max_states``).
        distinct: the distinct states stored so far.
        frontier_left: whether the next level has any state to expand.
    """
    # With keep_going the whole state space is explored even once every property has
    # failed (as TLC's -continue does): the counts are then the full ones. A cover's witness
    # (recorded in ``found`` as a violation is) is no failure: the run goes on.
    covers = {p.name for p in properties if is_cover(p)} if properties else set()
    if not options.keep_going and any(name not in covers for name in found):
        return "violation"
    if options.max_states is not None and distinct >= options.max_states and frontier_left:
        return "max-states"
    return None
