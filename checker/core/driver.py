"""The level driver: the one breadth-first search every engine runs.

The search is level-synchronous: all states of depth d are expanded before any of
depth d + 1. What differs between engines is only *how* a level is expanded and where
the states are kept, a **search** object (``checker.local.states.PerStateSearch``: Python states
and a fingerprint-to-parent set; ``checker.local.rows.RowsSearch``: the model's batch kernel
over rows and the 13-byte compact set). The driver owns everything else, once:

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

import time
from collections.abc import Callable, Sized
from typing import Any

import attrs

from ..base.memory import resident_bytes
from ..contract.protocol import (
    COVER,
    LEADS_TO,
    POSSIBLY,
    Model,
    Property,
    is_cover,
    obligation_text,
)
from ..graph.liveness import LivenessLog
from ..graph.possibly import EdgeLog
from .coverage import Coverage, NoCoverage
from .kernel import require_symmetric, result_of, split_properties, stop_after_level
from .level import liveness_rows, state_failures
from .options import Options
from .parts import LevelSearch, ResourceStop, Search
from .result import CheckResult, Path, Stats, Violation
from .trace import extend

__all__ = ["LevelDriver", "OnLevel", "Progress", "RESOURCE_STOPS", "Search"]

# Called with a ``Stats`` snapshot now and then, and after every level.
Progress = Callable[[Stats], Any]
# Called with the engine at every level boundary (a checkpoint writer).
OnLevel = Callable[[Any], Any]


class LevelDriver:
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
        model: Model,
        search: LevelSearch,
        properties=None,
        options: Options | None = None,
        progress: Progress | None = None,
        *,
        on_level: OnLevel | None = None,
    ):
        self.model = model
        self.properties = list(model.properties() if properties is None else properties)
        self.invariants, self.step_props = split_properties(self.properties)
        self.options = options or Options()
        if self.options.symmetry:
            require_symmetric(self.properties)
        self.progress = progress
        self.on_level = on_level
        self.stop_requested = None
        # a batch kernel's comparison with its model (``checker.contract.kernel_check.KernelCheck``),
        # set by an engine that has one: it counts the states compared
        self.kernel_check: Any = None
        self.stats = Stats(coverage=Coverage(model.coverage_names()) if self.options.coverage else NoCoverage())
        self.found: dict[str, tuple] = {}  # property -> (kind, explanation, where)
        self.search: LevelSearch = search
        self._started = False

    @property
    def possibly(self) -> list[tuple[Property, EdgeLog]]:
        """The ``(property, EdgeLog)`` of every always-possibly property (the graph
        visitor's clients, ``checker.graph.visitor``)."""
        return self.search.visitor.possibly

    @property
    def liveness(self) -> list[tuple[Property, LivenessLog, tuple]]:
        """The ``(property, LivenessLog, obligations)`` of every liveness property."""
        return self.search.visitor.liveness

    # the store and the frontier, for the engines built on this one and for the tests
    @property
    def seen(self) -> Sized:
        return self.search.seen

    @property
    def frontier(self) -> Any:
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
            self.search.end_run()

    def _run(self) -> CheckResult:
        started = time.perf_counter()
        stats, search = self.stats, self.search
        if not self._started:
            self.start()
        # After restore() the run may already be decided (a violation, an empty frontier).
        stopped = self.stop_reason_after_level()
        last_tick = time.perf_counter()
        partial = None  # the counts of a level left half-expanded by a stop
        max_depth, max_memory = self.options.max_depth, self.options.max_memory
        found = self.found
        while search.size() and stopped is None:
            if max_depth is not None and stats.depth >= max_depth:
                stopped = "max-depth"
                break
            level_found: dict[str, tuple] = {}
            boundary = (stats.generated, stats.terminal, dict(stats.fired), dict(stats.new), stats.coverage.copy())
            size = search.size()
            first = len(search.seen) - size  # the number of the frontier's first state
            done = 0
            try:
                self.next_search()  # an engine may replace its search at a level boundary
                search = self.search
                search.begin_level(stats.depth)
                for count, piece in enumerate(search.pieces()):
                    if self.stop_requested is not None:
                        stopped = self.stop_requested
                        break
                    if search.expand(piece, first + done, stats, level_found, found) is False:
                        stopped = self.stop_requested  # a stop request cancelled the piece
                        break
                    done += search.piece_len(piece)
                    every = search.every
                    if every and count % every == 0:
                        if max_memory is not None and _over(max_memory, search):
                            stopped = "max-memory"
                            break
                        if self.progress is not None:
                            now = time.perf_counter()
                            if now - last_tick >= self.options.progress_seconds:
                                last_tick = now
                                self._tick(started, size - done + search.next_size())
            except MemoryError:
                # The process could not allocate (an address-space or a control group's
                # limit, or the machine's memory, reached before the ceiling): the level is
                # dropped, as at the ceiling, and the last one stands.
                stopped = "out-of-memory"
                self.stop_detail = "the process could not allocate (MemoryError)"
            except ResourceStop as e:
                stopped, self.stop_detail = e.reason, e.detail
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
            if self.kernel_check is not None:  # the sample is a function of the level's size
                stats.cross_checked += self.kernel_check.sampled(stats.depth, size)
            found.update(level_found)
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
                    stopped, self.stop_detail = e.reason, e.detail
                    break
            stopped = self.stop_reason_after_level()
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

    # (when the search is over and the verdicts are being decided) the clock's start and
    # the counts the progress shows
    _deciding: tuple[float, Stats] | None = None

    def _deciding_progress(self, prop: Property) -> Callable[[str], None] | None:
        """A callback for a verdict's decision: each sentence shown on the progress
        display beside the counts, the clock running on."""
        if self.progress is None or self._deciding is None:
            return None
        since, base = self._deciding
        progress = self.progress

        def say(text: str) -> None:
            progress(
                attrs.evolve(
                    base, seconds=base.seconds + time.perf_counter() - since, deciding=f"deciding {prop.name}: {text}"
                )
            )

        return say

    def next_search(self) -> None:
        """Called at every level boundary, before the level is expanded: an engine may
        replace ``self.search`` there (the Spark engine hands its levels over to Spark)."""

    # One line on why a resource stop happened (``"out-of-memory"``, ``"disk-full"``), or None.
    stop_detail: str | None = None

    def cancel(self, reason="interrupted") -> None:
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

    def snapshot(self) -> dict:
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

    def committed(self, snapshot: dict) -> None:
        """A checkpoint of ``snapshot`` is written (``checker.checkpoints.writer``): an engine
        whose levels live outside the process frees what no checkpoint names now; nothing
        here."""

    def restore(self, snapshot: dict, directory=None) -> None:
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

    def result(self, stopped, stats=None) -> CheckResult:
        """The result: the counts, and a path for every violation found."""
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
        for prop, log in self.possibly:
            self._decide_possibly(result, prop, log, stopped)
        for prop, llog, obligations in self.liveness:
            self._decide_liveness(result, prop, llog, obligations, stopped)
        return result

    def _unexplored(self, result: CheckResult, prop: Property, stopped: str | None) -> bool:
        """Whether the run left states unexplored; if so ``prop`` (which needs every
        reachable state) is recorded unknown with the reason."""
        # A stop at a violation on the last level has still explored every state.
        if not self.search.size() and stopped in (None, "violation"):
            return False
        reasons = {
            "max-depth": f"the run stopped at max_depth {self.options.max_depth}",
            "max-states": f"the run stopped at max_states {self.options.max_states}",
            "violation": "the run stopped at another property's violation (--keep-going explores them all)",
        }
        why = reasons.get(stopped or "", f"the run stopped early ({stopped})")
        result.unknown[prop.name] = f"{prop.name} needs every reachable state; {why}"
        return True

    def _decide_liveness(
        self, result: CheckResult, prop: Property, log: LivenessLog, obligations: tuple, stopped: str | None
    ) -> None:
        """A liveness property's verdict (``checker.graph.liveness``): its lasso when some
        obligation is violated, else it holds; unknown when states were left unexplored."""
        if self._unexplored(result, prop, stopped):
            return
        lasso = log.decide(self.search.numbers_of, self._deciding_progress(prop))
        if lasso is None:
            return
        path = self.search.path(lasso.start)
        for _number, choice in lasso.steps:
            path = extend(self.model, path, choice)
        loop = len(path) - 1 - (len(lasso.steps) - lasso.to_loop)
        obligation = obligations[lasso.obligation]
        instances = len(self.search.visitor.instances)
        why = liveness_explanation(self.model, prop, path, loop, obligation, instances)
        result.violations[prop.name] = Violation(
            prop.name, prop.kind, why, path, loop=loop, obligation=obligation, fair_instances=instances
        )

    def _decide_possibly(self, result: CheckResult, prop: Property, log: EdgeLog, stopped: str | None) -> None:
        """An always-possibly property's verdict: from the edge log when every reachable
        state was explored, else unknown with the reason."""
        if self._unexplored(result, prop, stopped):
            return
        count, least = log.traps(self.search.numbers_of)
        if count:
            path = self.search.path(least)
            state = path.steps[-1].state
            explained = prop.explain(self.model, state) if prop.explain is not None else None
            trapped = explained or f"no state where {prop.name} holds can be reached from this state"
            result.violations[prop.name] = Violation(prop.name, POSSIBLY, trapped, path, traps=count)


def liveness_explanation(model: Any, prop: Property, path: Path, loop: int, obligation: Any, instances: int) -> str:
    """Why the lasso ``path`` (its cycle back to ``path.steps[loop]``) violates the liveness
    property ``prop``: the property's own ``explain`` when it has one and answers, else a
    generic sentence; it says so when the model declares no fair instance."""
    states = path.states
    own = prop.explain(model, states, loop, obligation) if prop.explain is not None else None
    if own is None:
        where = f"state {loop + 1}"
        if loop == len(path) - 1:
            tail = f"stops in {where}, where no fair action is enabled"
        else:
            tail = f"goes round a fair cycle from {where} back to it"
        said = f" ({prop.description})" if prop.description else ""
        if prop.kind == LEADS_TO:
            # what never holds again is the condition the property waits for, its Q
            which = "" if obligation is None else f" for {obligation_text(model, prop, obligation)}"
            own = (
                f"{prop.name}{said}{which}: what it waits for (its Q) holds in no state from state "
                f"{_waits_from(model, prop, states, loop, obligation)} on, where it began to wait (its P "
                f"held): a fair behaviour {tail}"
            )
        else:
            own = f"{prop.name}{said} never holds again: a fair behaviour {tail}"
            own += "".join(f" ({why})" for _name, why in state_failures(model, states[loop], (prop,)))
    if not instances:
        own += " (the model declares no fair actions: a behaviour may stop in any state)"
    return own


def _waits_from(model: Any, prop: Property, states, loop: int, obligation: Any) -> int:
    """The state (from 1) where the lasso's violated leads-to obligation last began to wait:
    the last state at or before the cycle's start where its ``P`` holds and its ``Q`` does
    not."""
    # (the level's rules ask the property: liveness_rows)
    family = prop.obligations
    obligations = list(family(model)) if family is not None else [None]
    opened, _ = liveness_rows(prop, model, states[: loop + 1], obligations)
    column = obligations.index(obligation) if family is not None else 0
    began = [i for i in range(loop + 1) if opened[i, column]]
    return began[-1] + 1 if began else loop + 1


# The stops that a resource ended (exit code 4: never a verdict, resumable).
RESOURCE_STOPS = ("max-memory", "out-of-memory", "disk-full")


def _over(limit, search) -> bool:
    """Whether resident memory, with what ``search`` may still allocate at the next level
    boundary, passes ``limit``."""
    rss = resident_bytes()
    return rss is not None and rss + search.memory_reserve() > limit
