"""The contract between a model and the engines.

A model is any object with

- ``init_states()`` -> sequence of initial states, in a fixed order;
- ``actions(state)`` -> the enabled actions of ``state``, in a fixed order;
- ``next_state(state, action)`` -> the successor (deterministic);
- ``properties()`` -> the ``Property`` values that may be checked;
- ``encode(state)`` -> bytes, a canonical encoding (equal states, equal bytes; the
  fingerprint is a digest of it, so it must not depend on the process);

and optionally ``successors(state)`` -> list of ``(action, next_state)``, a faster way to
compute both at once. Engines know nothing else about the model; the model never imports
an engine. Models, states, actions and property functions must pickle (Spark ships them).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import attrs

ALWAYS = "always"
STEP = "step"


@attrs.frozen
class Property:
    """A property to check.

    Args:
        name: the name users select it by (``--invariant NAME``).
        kind: ``"always"`` (a state invariant: ``check(model, state)``) or ``"step"``
            (checked on every transition: ``check(model, before, action, after)``).
        check: a plain module-level function returning ``None`` when the property holds
            and a one-sentence explanation when it does not.
        description: what the property says, for help texts and reports.
        symmetric: the property's verdict does not change when replicas are renamed, so
            it may be checked on one state per orbit (symmetry reduction refuses the
            state invariants that do not say so).
    """

    name: str
    kind: str = attrs.field(validator=attrs.validators.in_((ALWAYS, STEP)))
    check: Callable[..., str | None]
    description: str = ""
    symmetric: bool = False


class Model(Protocol):
    def init_states(self) -> Sequence[Any]: ...

    def actions(self, state: Any) -> Sequence[Any]: ...

    def next_state(self, state: Any, action: Any) -> Any: ...

    def properties(self) -> Sequence[Property]: ...

    def encode(self, state: Any) -> bytes: ...


def successors(model, state):
    """The ``(action, next_state)`` pairs of ``state`` in the model's fixed order."""
    fast = getattr(model, "successors", None)
    if fast is not None:
        return fast(state)
    return [(a, model.next_state(state, a)) for a in model.actions(state)]
