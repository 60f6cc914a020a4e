"""Values the engines return: statistics, counterexample paths, verdicts.

Rendering them (terminal, JSON, Markdown) is ``reports``' job, never the engine's.
"""

from __future__ import annotations

import builtins
from typing import Any

import attrs

HOLDS = "holds"
VIOLATED = "violated"
UNKNOWN = "unknown"  # the search stopped before the property could be decided
REACHED = "reached"  # a cover's predicate holds in some reachable state
NEVER_REACHED = "never reached"  # ...in none of them (every reachable state explored)


@attrs.frozen
class Step:
    """One state of a path and the action that led to it (``None`` for the initial state)."""

    action: Any
    state: Any


@attrs.frozen
class Path:
    """A behaviour from an initial state: its states and the actions between them.

    ``init_index`` and ``choices`` identify the path independently of the engine: the
    initial state's position in ``init_states()`` and, for each step, the position of the
    action taken in the enabled-action list of the state before it.
    """

    steps: tuple[Step, ...]
    init_index: int = 0
    choices: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def states(self) -> tuple[Any, ...]:
        return tuple(s.state for s in self.steps)

    @property
    def actions(self) -> tuple[Any, ...]:
        return tuple(s.action for s in self.steps[1:])


@attrs.frozen
class Violation:
    """A property that failed, the explanation of the failure, and a shortest path to it.

    For an ``always`` property the last state of ``path`` violates it; for a ``step``
    property the last step of ``path`` does; for a ``possibly`` property the last state of
    ``path`` is the first trap state of the breadth-first order, and ``traps`` is the number
    of trap states among the distinct states (orbits under symmetry reduction).

    For a liveness property (``"always-eventually"``, ``"leads-to"``) ``path`` is a *lasso*:
    a shortest path from an initial state to the state ``path.steps[loop]``, where the
    cycle starts, then the cycle's steps: ``path.steps[loop + 1:]``, every one an action
    step, the last leading back to the state of ``path.steps[loop]`` (the last state of
    ``path`` equals it; a trace shows it as "back to state ``loop + 1``"). The cycle is
    fair: every fair instance enabled in all of its states is taken on one of its steps.
    When ``loop == len(path) - 1`` there is no cycle: the behaviour stutters for ever in
    the last state, where no fair instance is enabled (``stutters``). ``loop`` is ``None``
    for the other kinds. ``obligation`` is the violated obligation of a ``"leads-to"``
    family (a member of ``Property.obligations(model)``; ``None`` for a single one): it
    holds its ``P`` at or before ``path.steps[loop]`` and its ``Q`` nowhere from there on.
    ``fair_instances`` is the number of fair instances the model declares (0: no fairness,
    which the explanation then says).
    """

    property: str
    kind: str
    explanation: str
    path: Path
    traps: int | None = None
    loop: int | None = None
    obligation: Any = None
    fair_instances: int | None = None

    @builtins.property  # (the field ``property`` hides the builtin here)
    def lasso(self) -> bool:
        """Whether the path is a lasso (a liveness property's counterexample)."""
        return self.loop is not None

    @builtins.property  # (the field ``property`` hides the builtin here)
    def stutters(self) -> bool:
        """Whether the lasso ends in a state that stutters for ever (no cycle)."""
        return self.loop is not None and self.loop == len(self.path) - 1

    @builtins.property  # (the field ``property`` hides the builtin here)
    def cycle(self) -> tuple[Any, ...]:
        """The cycle's steps (``path.steps[loop + 1:]``; empty when it stutters or is no
        lasso)."""
        return () if self.loop is None else self.path.steps[self.loop + 1 :]


@attrs.define
class Stats:
    """What a run measured. Counting follows TLC (see docs/model.md, "Counting")."""

    distinct: int = 0
    generated: int = 0
    depth: int = 0
    seconds: float = 0.0
    terminal: int = 0
    queue: int = 0
    levels: list[int] = attrs.field(factory=list)
    fired: dict[str, int] = attrs.field(factory=dict)
    new: dict[str, int] = attrs.field(factory=dict)
    # what the search reached (``checker.core.coverage.Coverage``); None when not counted
    coverage: Any = None
    # the states whose expansion by a batch kernel was compared with the model's
    # (``checker.contract.kernel_check``; 0 without a kernel)
    cross_checked: int = 0
    # what the run is doing once the search is over (a progress snapshot's, e.g.
    # "deciding EventuallyLeader: ..."; None while it explores); never saved
    deciding: str | None = attrs.field(default=None, eq=False)

    @property
    def states_per_second(self) -> float:
        return self.distinct / self.seconds if self.seconds > 0 else 0.0

    @property
    def collision_probability(self) -> float:
        """TLC's optimistic estimate of the probability that two distinct states shared a
        64-bit fingerprint (so one of them was never explored): ``distinct * (generated -
        distinct) / 2**64``. Every successor that was already stored (``generated -
        distinct`` of them) could have been a new state whose fingerprint equals one of the
        ``distinct`` stored ones, each with probability ``2**-64``."""
        return self.distinct * max(self.generated - self.distinct, 0) / 2.0**64


@attrs.define
class CheckResult:
    """The outcome of a run.

    Attributes:
        engine: ``"local"`` or ``"spark"``.
        checked: the names of the properties that were checked, in order.
        violations: the first (shortest) violation of each property that failed.
        complete: True when every reachable state (within ``max_depth``) was explored.
        stopped: why the run ended early (``"violation"``, ``"max-depth"``,
            ``"max-states"``, ``"interrupted"``, ...) or ``None`` when it ran out of states.
        unknown: properties left undecided although the run was complete in its own terms,
            with a one-line reason each (a ``possibly`` property needs every reachable
            state: a ``max_depth`` run, or a stop at another property's violation, leaves
            it unknown).
    """

    engine: str
    checked: list[str]
    stats: Stats
    violations: dict[str, Violation] = attrs.field(factory=dict)
    complete: bool = True
    stopped: str | None = None
    max_depth: int | None = None
    unknown: dict[str, str] = attrs.field(factory=dict)
    # the cover properties checked ("this can happen"), in order, and a shortest
    # behaviour to the first witness of each one reached
    covers: list[str] = attrs.field(factory=list)
    witnesses: dict[str, Path] = attrs.field(factory=dict)
    # the covers among them that are of a step (``"step-cover"``): a witness ends with the step
    step_covers: list[str] = attrs.field(factory=list)

    def witness(self, name: str) -> Violation:
        """A reached cover's witness as reports show a trace: a ``Violation`` of kind
        ``"cover"`` (its last state is the witness) or ``"step-cover"`` (its last step is)."""
        kind = "step-cover" if name in self.step_covers else "cover"
        return Violation(name, kind, "reached", self.witnesses[name])

    def cover_verdict(self, name: str) -> str:
        """``"reached"`` (``witnesses`` holds its shortest witness), ``"never reached"``
        (every reachable state was explored and none satisfies it: a failure, as a
        violation is), or ``"unknown"`` (the run stopped first)."""
        if name in self.witnesses:
            return REACHED
        return NEVER_REACHED if self.complete else UNKNOWN

    @property
    def never_reached(self) -> list[str]:
        """The covers a complete run never reached, in order."""
        return [name for name in self.covers if self.cover_verdict(name) == NEVER_REACHED]

    def verdict(self, name: str) -> str:
        if name in self.violations:
            return VIOLATED
        if name in self.unknown:
            return UNKNOWN
        return HOLDS if self.complete else UNKNOWN
