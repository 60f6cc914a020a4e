"""Terminal states as errors, on request (``kmc check --deadlock``, a spec's
``[check] deadlock = true``): TLC's deadlock check.

A *deadlock* is a reachable state in which no action is enabled, as TLC defines it: the
model's own ``actions`` (``successors``) of the state are asked, so a state the search
did not expand because of a bound of the run (``max_depth``, ``max_states``) is judged
by its actions, not by the cut, and a state whose only way on is closed by one of the
model's own bounds (a last crash spent, the last record written) is a deadlock, as it
is in TLC. It is checked as a state invariant, ``Deadlock``, so that every engine finds
the first one of the breadth-first order and reports it with a shortest trace (exit 1),
as it does any invariant's violation. Its array form expands the rows once more with the
batch kernel (a state with no successor there); it costs about one more expansion of
every state, only when asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..contract.protocol import ALWAYS, Property

DEADLOCK = "Deadlock"


def no_enabled_action(model: Any, state: Any) -> str | None:
    """``None`` when some action is enabled in ``state``, else why it is a deadlock."""
    if model.successors(state):
        return None
    return "no action is enabled in this state (a deadlock: the behaviour cannot go on)"


def no_enabled_action_mask(kernel: Any, rows: Any) -> np.ndarray:
    """Per row: true where the batch kernel enables no action."""
    rows = np.ascontiguousarray(rows)
    parents = np.asarray(kernel.expand(rows)[0], dtype=np.int64)
    terminal: np.ndarray = np.bincount(parents, minlength=len(rows))[: len(rows)] == 0
    return terminal


Deadlock = Property(
    DEADLOCK,
    ALWAYS,
    no_enabled_action,
    "every reachable state has an enabled action (no deadlock, as TLC checks it)",
    symmetric=True,
    mask=no_enabled_action_mask,
)
