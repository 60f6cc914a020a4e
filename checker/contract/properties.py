"""The properties a model offers to check: their kinds, their declaration (``Property``), as
the engines and reports read them, and a property's array form read the one way every search
reads it (``state_mask``, ``step_mask``).

A property may carry its array form itself (``Property.mask``, a function of the kernel
and the rows); a kernel may also answer ``invariant_mask``/``step_mask``/``goal_mask``
by name. The property's own form comes first: it sits beside the per-state check, where
a reviewer reads one against the other. ``None`` means no array form: the search asks
the property state by state. Rows of Python states (``checker.core.states_kernel``) have no
array form at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

if TYPE_CHECKING:  # for the annotations only (the kernel's protocol reads this module)
    from .batch_kernel import Expander

ALWAYS = "always"
STEP = "step"
POSSIBLY = "possibly"  # AG EF: from every reachable state some goal state stays reachable
ALWAYS_EVENTUALLY = "always-eventually"  # []<>P under weak fairness
LEADS_TO = "leads-to"  # P ~> Q under weak fairness, for every obligation
LIVENESS = (ALWAYS_EVENTUALLY, LEADS_TO)  # the kinds decided on fair behaviours (lassos)
COVER = "cover"  # "this can happen": some reachable state satisfies the predicate
STEP_COVER = "step-cover"  # "this step can happen": some reachable transition satisfies the predicate
COVER_KINDS = (COVER, STEP_COVER)  # the kinds answered "reached" (with a witness) or "never reached"
KINDS = (ALWAYS, STEP, POSSIBLY, ALWAYS_EVENTUALLY, LEADS_TO, COVER, STEP_COVER)


@attrs.frozen
class Property:
    """A property to check.

    Args:
        name: the name users select it by (``--invariant NAME``).
        kind: ``"always"`` (a state invariant: ``check(model, state)``), ``"step"``
            (checked on every transition: ``check(model, before, action, after)``),
            ``"possibly"`` (AG EF: ``check(model, state)`` returns True for a *goal* state,
            and the property holds when a goal state stays reachable from every reachable
            state; it needs the whole reachable graph), or one of the two liveness kinds,
            decided over the fair behaviours of the whole reachable graph (see
            "Liveness" below): ``"always-eventually"`` (``[]<>P``) and ``"leads-to"``
            (``P ~> Q``); or ``"cover"`` ("this can happen", a vacuity check:
            ``check(model, state)`` returns True for a *witness* state, and the cover is
            answered with a shortest behaviour to the first witness of the breadth-first
            order, or "never reached" when the whole reachable graph holds none, which a
            run reports as a failure); or ``"step-cover"`` ("this step can happen"): a
            cover of a transition, ``check(model, before, action, after)`` returns True
            for a *witness* step, answered with a shortest behaviour whose last step is
            the first witness of the breadth-first order (the per-state search's order
            of a level's transitions), or "never reached".
        check: a plain module-level function returning ``None`` when the property holds
            and a one-sentence explanation when it does not (for ``"always"`` and
            ``"step"``; the other kinds' answers are below).
        description: what the property says, for help texts and reports.
        symmetric: the property's verdict does not change when replicas are renamed, so
            it may be checked on one state per orbit (symmetry reduction refuses the
            state invariants that do not say so).
        explain: for a ``"possibly"`` property, ``explain(model, state)`` says in a sentence
            why no goal state can be reached from the trap ``state`` (default: none); for
            a liveness property, ``explain(model, states, loop, obligation)`` says in a
            sentence why the lasso violates it (``states``: the lasso's states, as
            ``Violation.path`` holds them; ``loop``: ``Violation.loop``; ``obligation``:
            the violated obligation of a ``"leads-to"`` property, ``None`` for the other
            kind) or ``None`` for the engine's generic sentence.
        mask: the property's array form for the model's batch kernel, a plain module-level
            function beside ``check``: ``mask(kernel, rows)`` -> a boolean per row, true where
            an ``"always"`` property is violated or where a ``"possibly"`` property's goal
            (a ``"cover"``'s predicate) holds; ``mask(kernel, rows, parents, after)`` for a
            ``"step"`` property, true for the transitions ``rows[parents[i]] -> after[i]``
            that violate it; ``mask(kernel, rows, parents, codes, after)`` for a
            ``"step-cover"``, true for the witness transitions (``codes``: each step's
            action code, as the kernel's ``expand`` gives it); for the liveness kinds,
            below. The kernel's ``invariant_mask``/``step_mask``/``goal_mask`` may answer
            with it; ``None`` (the default): no array form, the engines call ``check``
            state by state (a step cover's: a transition at a time, a parent's together).
        obligations: for a ``"leads-to"`` property that is a family of ``P_i ~> Q_i`` (one
            per index ``i``), ``obligations(model)`` -> every index, a sequence of distinct
            hashable values in a fixed order; ``None`` (the default): one obligation.
        obligation_text: for such a family, ``obligation_text(model, obligation)`` -> the
            obligation in the user's words (Kafka's: ``committed record 0 (epoch 0) at
            offset 0``), for the explorer and the explanations; ``None`` (the default): its
            ``str``.

    Liveness
    --------

    Both kinds are decided over the weakly fair behaviours (the model's
    ``fair_instances``, see ``checker.contract.protocol``) of the whole reachable graph;
    a run that did not explore every reachable state leaves them ``unknown``. A violation is a *lasso*
    (``checker.core.result.Violation.loop``).

    ``"always-eventually"`` (``[]<>P``: at every point of every fair behaviour, ``P`` holds
    again later): ``check(model, state)`` -> ``None`` where ``P`` holds, else a sentence
    saying why it does not; ``mask(kernel, rows)`` -> a boolean per row, true where ``P``
    does *not* hold (where ``check`` answers a sentence). It is violated by a fair
    behaviour that, from some point on, stays in states where ``P`` fails.

    ``"leads-to"`` (``P ~> Q``: whenever ``P`` holds, ``Q`` holds then or later) is a family
    of obligations ``P_i ~> Q_i``, each checked on its own (Kafka's "every committed record
    ``(o, m)`` eventually reaches every replica at ``o``" is one obligation per ``(o, m)``):

    - ``check(model, state)`` -> ``(p, q)``: the obligations whose ``P_i`` holds in
      ``state`` and those whose ``Q_i`` holds, each a collection of members of
      ``obligations(model)``; with ``obligations`` ``None``, ``p`` and ``q`` are two bools
      (``P`` and ``Q`` of ``state``).
    - ``mask(kernel, rows)`` -> ``(p, q)``: two boolean arrays of shape ``(len(rows), K)``,
      ``K = len(obligations(model))``, column ``j`` for the ``j``-th obligation (shape
      ``(len(rows),)`` with one obligation), true where ``P_j`` (``Q_j``) holds.

    Obligation ``i`` is violated by a fair behaviour that reaches a state where ``P_i``
    holds and ``Q_i`` does not, and never afterwards a state where ``Q_i`` holds. The
    engines check the obligations in the order of ``obligations(model)`` and report the
    first violated one (``Violation.obligation``).

    What the engines keep: the states where some obligation *waits* (its ``Q_i`` fails),
    with two bits an obligation and the fair instances enabled there, and the edges that
    leave them (about 15 bytes an edge). A ``P_i`` that, once true, stays true for ever
    (a history variable: a record once committed stays committed) may be written so that
    few states wait: answer ``Q_i or not P_i`` as ``q`` (``P_i ~> Q_i`` and ``P_i ~> (Q_i
    or not P_i)`` then say the same). ``[]<>P`` is ``true ~> P``: its states wait where ``P``
    fails.
    """

    name: str
    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    check: Callable[..., Any]
    description: str = ""
    symmetric: bool = False
    explain: Callable[..., str | None] | None = None
    mask: Callable[..., Any] | None = None
    obligations: Callable[[Any], Sequence[Any]] | None = None
    obligation_text: Callable[[Any, Any], str] | None = None


def is_cover(prop: Property) -> bool:
    """Whether ``prop`` is a cover of a state or of a step (answered "reached" with a
    witness, or "never reached"), not a property that holds or fails."""
    return prop.kind in COVER_KINDS


def obligation_text(model: Any, prop: Property, obligation: Any) -> str:
    """A leads-to family's ``obligation`` in words (``Property.obligation_text``, else its
    ``str``)."""
    if prop.obligation_text is not None:
        return prop.obligation_text(model, obligation)
    return str(obligation)


# -- a property's array form


def state_mask(kernel: Expander, prop: Property, rows: Any) -> np.ndarray | None:
    """Per row: true where the ``"always"`` property ``prop`` is violated, or where the
    ``"possibly"`` property ``prop``'s goal holds; ``None`` when there is no array form."""
    if not kernel.arrays:
        return None
    if prop.mask is not None:
        return np.asarray(prop.mask(kernel, rows), dtype=bool)
    if prop.kind == ALWAYS:
        mask = kernel.invariant_mask(prop.name, rows)
    else:
        mask = kernel.goal_mask(prop.name, rows)
    return None if mask is None else np.asarray(mask, dtype=bool)


def step_mask(
    kernel: Expander, prop: Property, rows: Any, parents: np.ndarray, after: Any, codes: np.ndarray | None = None
) -> np.ndarray | None:
    """Per transition ``rows[parents[i]] -> after[i]`` (of action code ``codes[i]``): true
    where the step property ``prop`` is violated, or where the step cover ``prop``'s
    predicate holds; ``None`` when there is no array form."""
    if not kernel.arrays:
        return None
    if prop.kind == STEP_COVER:
        if prop.mask is None or codes is None:
            return None
        return np.asarray(prop.mask(kernel, rows, parents, codes, after), dtype=bool)
    if prop.mask is not None:
        return np.asarray(prop.mask(kernel, rows, parents, after), dtype=bool)
    mask = kernel.step_mask(prop.name, rows, parents, after)
    return None if mask is None else np.asarray(mask, dtype=bool)
