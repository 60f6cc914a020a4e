"""Why a lasso violates a liveness property: the property's own explanation when it has
one, else a sentence kmc writes (shown with a liveness violation and with a replayed one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..contract.protocol import LEADS_TO, Property, obligation_text
from ..core.level import liveness_rows, state_failures
from ..core.result import Path


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


def _waits_from(model: Any, prop: Property, states: Sequence[Any], loop: int, obligation: Any) -> int:
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
