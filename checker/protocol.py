"""The contract between a model and the engines.

A model is any object with

- ``init_states()`` -> sequence of initial states, in a fixed order;
- ``actions(state)`` -> the enabled actions of ``state``, in a fixed order;
- ``next_state(state, action)`` -> the successor (deterministic);
- ``properties()`` -> the ``Property`` values that may be checked;
- ``encode(state)`` -> bytes, a canonical encoding (equal states, equal bytes; the
  fingerprint is a digest of it, so it must not depend on the process);

and optionally

- ``successors(state)`` -> list of ``(action, next_state)``, a faster way to compute both
  at once;
- ``format_action(action)`` -> str, an action as a trace shows it (default ``str(action)``);
- ``describe_step(before, action, after)`` -> str, one sentence saying what the action did
  between two states, for a trace's step headers (default: none);
- ``action_names()`` -> every action name the model can fire, in a fixed order: the Spark
  engine counts actions by their position there when the model has no batch kernel;
- ``batch_kernel()`` -> a ``BatchKernel`` (below): the fast path over arrays of rows;
- ``coverage_names()`` -> a ``checker.coverage.CoverageNames``: the kinds of its actions
  and its variables, as coverage reports them (default: ``Model.coverage_names``, the
  top-level fields of a state and no kinds).

An action is any value. Engines count the actions that fired and the new states each
found per action *name*: an action's ``name`` attribute when it has a string one (several
actions may share a name, e.g. one per replica), else the action itself when it is a
string, else its class's name (``action_name``). Engines and reports reach these
through the functions below, never through the attributes directly.

Engines know nothing else about the model; the model never imports an engine. Models,
states, actions and property functions must pickle (Spark ships them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs

ALWAYS = "always"
STEP = "step"
POSSIBLY = "possibly"  # AG EF: from every reachable state some goal state stays reachable


@attrs.frozen
class Property:
    """A property to check.

    Args:
        name: the name users select it by (``--invariant NAME``).
        kind: ``"always"`` (a state invariant: ``check(model, state)``), ``"step"``
            (checked on every transition: ``check(model, before, action, after)``) or
            ``"possibly"`` (AG EF: ``check(model, state)`` returns True for a *goal* state,
            and the property holds when a goal state stays reachable from every reachable
            state; it needs the whole reachable graph).
        check: a plain module-level function returning ``None`` when the property holds
            and a one-sentence explanation when it does not.
        description: what the property says, for help texts and reports.
        symmetric: the property's verdict does not change when replicas are renamed, so
            it may be checked on one state per orbit (symmetry reduction refuses the
            state invariants that do not say so).
        explain: for a ``"possibly"`` property, ``explain(model, state)`` says in a sentence
            why no goal state can be reached from the trap ``state`` (default: none).
        mask: the property's array form for the model's batch kernel, a plain module-level
            function beside ``check``: ``mask(kernel, rows)`` -> a boolean per row, true where
            an ``"always"`` property is violated or where a ``"possibly"`` property's goal
            holds; ``mask(kernel, rows, parents, after)`` for a ``"step"`` property, true
            for the transitions ``rows[parents[i]] -> after[i]`` that violate it. The
            kernel's ``invariant_mask``/``step_mask``/``goal_mask`` may answer with it;
            ``None`` (the default): no array form, the engines call ``check`` state by state.
    """

    name: str
    kind: str = attrs.field(validator=attrs.validators.in_((ALWAYS, STEP, POSSIBLY)))
    check: Callable[..., Any]
    description: str = ""
    symmetric: bool = False
    explain: Callable[..., str] | None = None
    mask: Callable[..., Any] | None = None


class Model(Protocol):
    def init_states(self) -> Sequence[Any]: ...

    def actions(self, state: Any) -> Sequence[Any]: ...

    def next_state(self, state: Any, action: Any) -> Any: ...

    def properties(self) -> Sequence[Property]: ...

    def encode(self, state: Any) -> bytes: ...

    def coverage_names(self):
        """The model's action kinds and variables for coverage (``checker.coverage``):
        by default none of the first, and the top-level fields of a state."""
        from .coverage import CoverageNames

        return CoverageNames()


class BatchKernel(Protocol):
    """The fast path a model may offer with ``batch_kernel()``: its states as fixed-width
    rows of bytes (a two-dimensional ``uint8`` array, one row a state, the width a multiple
    of 8), expanded a chunk at a time with array operations.

    Determinism contract (what makes every engine store the same states in the same
    order, and so report the same counts and counterexamples):

    - ``expand(rows)`` returns ``(parents, choices, codes, successors)``: for every
      successor, its parent's position in ``rows``, its *choice* (the position of the
      action among the parent's enabled actions, as ``Model.actions`` orders them, less
      than 256), the code of its action's name in ``action_names``, and its row; every
      enabled action of every parent once, and ``decode`` of a successor's row is exactly
      ``successors(model, decode(parent row))[choice][1]``. Successor order is ``(parent,
      choice)``: the engines sort by that key (the order in which the per-state search
      meets the successors), so a kernel may return them in any order, but the pair
      must be exact.
    - ``encode``/``decode`` are inverse, and two rows are equal exactly when their states
      are: a row's bytes are its fingerprint's input.
    - ``canonical(rows)`` maps every row to one row of its orbit under the model's
      symmetries, the same for every member of the orbit.
    - ``invariant_mask``/``step_mask`` agree with the properties' own checks; ``None``
      means no array form (the engine asks the property state by state). A kernel may
      answer with the property's own ``mask`` (``Property.mask``).
    """

    width: int
    action_names: Sequence[str]

    def init_rows(self, states: Sequence[Any]) -> Any: ...

    def encode(self, state: Any) -> Any: ...

    def decode(self, row: Any) -> Any: ...

    def expand(self, rows: Any) -> tuple[Any, Any, Any, Any]: ...

    def canonical(self, rows: Any) -> Any: ...

    def invariant_mask(self, name: str, rows: Any) -> Any: ...

    def step_mask(self, name: str, rows: Any, parents: Any, after: Any) -> Any: ...


def action_name(action) -> str:
    """The name ``action`` is counted under: its ``name`` attribute when that is a string,
    else the action itself when it is a string, else its class's name."""
    name = getattr(action, "name", None)
    if name.__class__ is str:
        return name
    return action if action.__class__ is str else type(action).__name__


def format_action(model, action) -> str:
    """``action`` as a trace shows it: ``model.format_action(action)`` when the model
    defines it, else ``str(action)``."""
    fmt = getattr(model, "format_action", None)
    return fmt(action) if fmt is not None else str(action)


def describe_step(model, before, action, after) -> str:
    """What ``action`` did between ``before`` and ``after``, in one sentence:
    ``model.describe_step(...)`` when the model defines it, else ``""`` (nothing to add
    to the action's own text)."""
    describe = getattr(model, "describe_step", None)
    return describe(before, action, after) if describe is not None else ""


def coverage_names(model):
    """``model.coverage_names()``, or the protocol's default (``Model.coverage_names``)."""
    own = getattr(model, "coverage_names", None)
    return own() if own is not None else Model.coverage_names(model)


def successors(model, state):
    """The ``(action, next_state)`` pairs of ``state`` in the model's fixed order."""
    fast = getattr(model, "successors", None)
    if fast is not None:
        return fast(state)
    return [(a, model.next_state(state, a)) for a in model.actions(state)]
