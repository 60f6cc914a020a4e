"""A liveness counterexample checked by re-executing it, without the graph.

``check_lasso`` takes a lasso (``checker.core.result.Violation``'s ``path`` and ``loop``) as
a reader of a result file has it, and checks, from the model alone (its successors, its
fair instances and the property's own check), that it is what it claims:

- *real*: when it has a cycle, its last state is the state it goes back to (the steps
  themselves are the model's, since the path was rebuilt by re-executing its choices);
- *fair*: every fair instance enabled in every state of the cycle is taken by one of the
  cycle's steps; for a lasso that stutters, no fair instance is enabled in its last state;
- *violating*: for ``[]<>P``, ``P`` fails in every state of the cycle (or in the
  stuttering state); for ``P ~> Q`` and its obligation, some state at or before the cycle's
  first one has ``P`` and not ``Q``, and ``Q`` fails from there to the end.

It shares no code with the components' computation (``checker.graph.liveness``).
"""

from __future__ import annotations

from typing import Any

from ..contract.protocol import (
    ALWAYS_EVENTUALLY,
    LEADS_TO,
    Property,
    with_defaults,
)
from ..core.level import liveness_rows, state_failures
from ..core.result import Path


def check_lasso(model: Any, prop: Property, path: Path, loop: int, obligation: Any = None) -> str | None:
    """``None`` when the lasso ``path`` (its cycle back to ``path.steps[loop]``) is a real,
    fair counterexample of ``prop``; else one sentence saying what is wrong."""
    model = with_defaults(model)
    states = path.states
    n = len(states)
    if prop.kind not in (ALWAYS_EVENTUALLY, LEADS_TO):
        return f"{prop.name} is not a liveness property"
    if not 0 <= loop < n:
        return f"the cycle starts at state {loop + 1}, which the path of {n} states does not have"
    cycle = list(range(loop, n - 1))  # the states the cycle's steps leave
    if cycle and model.encode(states[-1]) != model.encode(states[loop]):
        return f"the last state is not state {loop + 1}: the cycle does not close"
    if not cycle:
        enabled = {model.fair_instance(states[-1], a) for a, _ in model.successors(states[-1])} - {None}
        if enabled:
            return f"the last state stutters, but the fair {', '.join(sorted(map(str, enabled)))} is enabled there"
    else:
        always: set[str] | None = None
        for i in cycle:
            here = {model.fair_instance(states[i], a) for a, _ in model.successors(states[i])} - {None}
            always = here if always is None else always & here
        taken = {model.fair_instance(states[i], path.steps[i + 1].action) for i in cycle} - {None}
        left = (always or set()) - taken
        if left:
            return (
                f"the cycle is not fair: {', '.join(sorted(map(str, left)))} is enabled in every state of it "
                "and never taken"
            )
    if prop.kind == ALWAYS_EVENTUALLY:
        holds = [i for i in range(loop, n) if not state_failures(model, states[i], (prop,))]
        if holds:
            return f"{prop.name} holds in state {holds[0] + 1}, on the cycle"
        return None
    obligations = tuple(prop.obligations(model)) if prop.obligations is not None else (None,)
    if obligation not in obligations:
        return f"{prop.name} has no obligation {obligation!r}"
    j = obligations.index(obligation)
    opened, waits = liveness_rows(prop, model, states, obligations)
    met = [i for i in range(n) if not waits[i, j]]
    start = (met[-1] + 1) if met else 0  # Q fails from `start` to the end
    if start > loop:
        return f"{prop.name}: its Q holds in state {met[-1] + 1}, on the cycle"
    if not opened[start : loop + 1, j].any():
        return f"{prop.name}: no state before the cycle has its P without its Q"
    return None
