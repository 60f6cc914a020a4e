"""Random simulation: seeded random walks through a model, checking properties on the way.

Where the breadth-first engines prove a property over every reachable state, a walk
only samples behaviours; it can find a violation in a state space too large to explore,
but it never proves anything, and the counterexample it finds is usually not a shortest
one. Like TLC's ``-simulate`` mode, each walk starts at an initial state and takes, at
each step, one of the enabled actions chosen uniformly at random.

Every random choice comes from one ``random.Random(seed)`` owned by the run (never the
global ``random``), so a run is reproducible from its seed, and a violation is returned
as a ``checker.core.result.Violation`` whose ``Path`` holds the walk's ``init_index`` and
``choices``: ``checker.core.trace.replay_choices`` re-executes it exactly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..base.fingerprint import fingerprint
from ..contract.protocol import Model, Property, action_name, with_defaults
from ..core.assembly import split_properties
from ..core.keys import tally
from ..core.level import state_failures, step_failures
from ..core.result import Path, Step, Violation


@attrs.define
class SimulationStats:
    """What a simulation measured.

    Attributes:
        runs: walks started (the last one may have stopped at a violation).
        steps: transitions taken over all walks.
        distinct: distinct states visited (by fingerprint), initial states included.
        terminal: walks that ended in a state with no enabled action.
        longest: the most transitions any one walk took.
        seconds: wall time.
        fired: action name -> how many times a walk took it.
    """

    runs: int = 0
    steps: int = 0
    distinct: int = 0
    terminal: int = 0
    longest: int = 0
    seconds: float = 0.0
    fired: dict[str, int] = attrs.field(factory=dict)


@attrs.define
class SimulationResult:
    """The outcome of ``simulate``.

    Attributes:
        seed: the seed the walks were drawn from.
        max_runs: the run budget.
        max_steps: the most transitions a walk may take.
        checked: the names of the properties that were checked, in order.
        stats: a ``SimulationStats``.
        violation: the first violation found (the run stops there), or ``None``.
        violation_run: the number (from 1) of the walk that found it.
    """

    seed: int
    max_runs: int
    max_steps: int
    checked: list[str]
    stats: SimulationStats
    violation: Violation | None = None
    violation_run: int | None = None


def simulate(
    model: Model,
    properties: Sequence[Property] | None = None,
    *,
    runs: int = 1000,
    depth: int = 50,
    seed: int = 0,
    progress: Callable[[SimulationStats], None] | None = None,
    progress_every: int = 100,
) -> SimulationResult:
    """Walk ``runs`` times from an initial state, each walk at most ``depth`` transitions
    long, and stop at the first state or step that violates a property.

    Args:
        model: an object following ``checker.contract.protocol.Model``.
        properties: the properties to check (default: all of ``model.properties()``).
        runs: how many walks to make at most.
        depth: how many transitions a walk takes at most (it ends earlier in a state
            with no enabled action).
        seed: the seed of the run's ``random.Random``; the same seed, model and
            properties give the same walks.
        progress: called with a ``SimulationStats`` snapshot every ``progress_every`` runs.

    Returns:
        a ``SimulationResult``.
    """
    if runs < 1 or depth < 0:
        raise ValueError("simulate needs runs >= 1 and depth >= 0")
    model = with_defaults(model)
    props = list(model.properties() if properties is None else properties)
    invariants, step_props = split_properties(props)
    rng = random.Random(seed)
    stats = SimulationStats()
    seen: set[int] = set()
    inits = list(model.init_states())
    started = time.perf_counter()
    violation = None
    for run in range(1, runs + 1):
        stats.runs = run
        walk = _walk(model, rng, inits, depth, invariants, step_props, stats, seen)
        steps, choices, init_index, bad, kind = walk
        stats.steps += len(choices)
        stats.longest = max(stats.longest, len(choices))
        if bad:
            name, why = bad[0]
            path = Path(tuple(steps), init_index, tuple(choices))
            violation = Violation(name, kind, why, path)
            break
        if progress is not None and run % progress_every == 0:
            stats.distinct = len(seen)
            stats.seconds = time.perf_counter() - started
            progress(attrs.evolve(stats, fired=dict(stats.fired)))
    stats.distinct = len(seen)
    stats.seconds = time.perf_counter() - started
    return SimulationResult(
        seed=seed,
        max_runs=runs,
        max_steps=depth,
        checked=[p.name for p in props],
        stats=stats,
        violation=violation,
        violation_run=stats.runs if violation else None,
    )


def _walk(
    model: Model,
    rng: random.Random,
    inits: list[Any],
    depth: int,
    invariants: Sequence[Property],
    step_props: Sequence[Property],
    stats: SimulationStats,
    seen: set[int],
) -> tuple[list[Step], list[int], int, list[tuple[str, str]], str]:
    """One walk from a random initial state, at most ``depth`` transitions long, to its
    first violation: ``(steps, choices, initial state's index, violations, their kind)``."""
    init_index = rng.randrange(len(inits))
    state = inits[init_index]
    seen.add(fingerprint(model, state))
    steps = [Step(None, state)]
    choices: list[int] = []
    bad = state_failures(model, state, invariants)
    kind = "always"
    while not bad and len(choices) < depth:
        succ = model.successors(state)
        if not succ:
            stats.terminal += 1
            break
        choice = rng.randrange(len(succ))
        action, nxt = succ[choice]
        choices.append(choice)
        steps.append(Step(action, nxt))
        tally(stats.fired, action_name(action))
        seen.add(fingerprint(model, nxt))
        # A step property is judged on the transition, before the state it reaches,
        # the order in which the breadth-first engines find them.
        bad = step_failures(model, state, action, nxt, step_props)
        kind = "step"
        if not bad:
            bad = state_failures(model, nxt, invariants)
            kind = "always"
        state = nxt
    return steps, choices, init_index, bad, kind
