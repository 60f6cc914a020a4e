"""Whether a replayed trace is still the counterexample it was saved as: the last state
(or step) of a safety property's trace still violates it, and a liveness property's lasso
is real, fair and violating when re-executed (``checker.graph.lasso``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmc.checker.base.text import safe_text

from .replay_files import ReplayError

if TYPE_CHECKING:  # for the annotations only
    from kmc.checker.contract.protocol import Model, Property
    from kmc.checker.core.result import Path, Violation


def replay_lasso(path: str, model: Model, prop: Property, entry: dict[str, Any], path_: Path) -> Violation:
    """The liveness counterexample ``entry`` (its trace replayed as ``path_``), checked
    real, fair and violating by re-executing it (``checker.graph.lasso``); its explanation
    recomputed.

    Raises:
        ReplayError: the entry's lasso is malformed, or the check fails.
    """
    from kmc.app.render.counterexample import json_value
    from kmc.checker.core.result import Violation
    from kmc.checker.graph.explain import liveness_explanation
    from kmc.checker.graph.lasso import check_lasso

    name = safe_text(prop.name)
    lasso = entry["lasso"] if isinstance(entry.get("lasso"), dict) else {}
    start = lasso.get("cycle_start")
    if not isinstance(start, int) or isinstance(start, bool) or not 1 <= start <= len(path_):
        raise ReplayError(
            f"{path}: the violation of {name} needs a lasso with a cycle_start between 1 and {len(path_)}"
        )
    loop = start - 1
    if bool(lasso.get("stutters")) != (loop == len(path_) - 1):
        raise ReplayError(f"{path}: the lasso of {name}: 'stutters' disagrees with its cycle_start")
    obligation = None
    if prop.obligations is not None:
        saved = lasso.get("obligation")
        matches = [o for o in prop.obligations(model) if json_value(o) == saved]
        if not matches:
            raise ReplayError(f"{path}: the lasso of {name} names an obligation the model does not have")
        obligation = matches[0]
    wrong = check_lasso(model, prop, path_, loop, obligation)
    if wrong is not None:
        raise ReplayError(f"{path}: the lasso of {name} replays, but {wrong}")
    instances = len(tuple(model.fair_instances()))
    why = liveness_explanation(model, prop, path_, loop, obligation, instances)
    return Violation(prop.name, prop.kind, why, path_, loop=loop, obligation=obligation, fair_instances=instances)


def check_still_violated(path: str, model: Model, prop: str, kind: str, path_: Path) -> str:
    """Refuse a trace whose last state (or step) does not violate the property it is
    saved for: the states replay, but showing it as a counterexample would be a lie."""
    from kmc.invariants import BY_NAME

    p = BY_NAME.get(prop)
    if p is None:
        raise ReplayError(
            f"{path}: the violation names an unknown property {safe_text(repr(prop))} (known: {', '.join(BY_NAME)})"
        )
    if p.kind != kind:
        raise ReplayError(
            f"{path}: the violation of {prop} is saved as kind {kind!r}, but {prop} is a property of kind {p.kind!r}"
        )
    last = path_.steps[-1]
    if kind == "possibly":
        # Whether the last state is a trap needs the whole graph; what replays here is that
        # it is not a goal state (for PartitionRecoverable: no replica leads or can be elected).
        if p.check(model, last.state):
            raise ReplayError(
                f"{path}: the trace of {prop} replays, but its last state is a goal "
                f"state of {prop}, not a trap (the property changed since it was "
                "saved, or the file was edited)"
            )
        explained = p.explain(model, last.state) if p.explain is not None else f"{prop}: a trap"
        # an explain that does not answer: the engine's own sentence (checker.core.driver)
        return explained or f"no state where {prop} holds can be reached from this state"
    why: str | None
    if kind == "always":
        why = p.check(model, last.state)
    elif len(path_.steps) < 2:
        why = None
    else:
        why = p.check(model, path_.steps[-2].state, last.action, last.state)
    if why is None:
        raise ReplayError(
            f"{path}: the trace of {prop} replays, but its last "
            f"{'state' if kind == 'always' else 'step'} does not violate {prop} "
            "(the property changed since it was saved, or the file was edited)"
        )
    return why
