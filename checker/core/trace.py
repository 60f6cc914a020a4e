"""Rebuilding counterexample paths by re-executing the model (as TLC does).

Engines keep fingerprints and parent pointers, not whole states; a path is recovered
by replaying actions from an initial state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..base.errors import EngineError
from ..base.fingerprint import fingerprint_bytes
from ..contract.protocol import with_defaults
from .result import Path, Step

ROOT = -1  # the parent of an initial state


def parent_chain(number: Any, link: Callable[[Any], tuple[Any, Any]]) -> list[Any]:
    """The labels of the states from an initial state to state ``number``, following
    parent pointers: ``link(n)`` -> ``(n's parent, n's label)``, the parent ``ROOT`` for
    an initial state."""
    labels = []
    while True:
        parent, label = link(number)
        labels.append(label)
        if parent == ROOT:
            labels.reverse()
            return labels
        number = parent


def path_by_choices(model: Any, number: Any, link: Callable[[Any], tuple[Any, Any]], tail: Sequence[int] = ()) -> Path:
    """The path to state ``number`` (then the choices ``tail``) from parent pointers
    labelled by choice (``parent_chain``; an initial state's label is its index in
    ``init_states()``), replayed."""
    init, *choices = parent_chain(number, link)
    return replay_choices(model, init, [*choices, *tail])


def replay_choices(model: Any, init_index: int, choices: Sequence[int]) -> Path:
    """The path that starts at ``init_states()[init_index]`` and takes, at each step, the
    enabled action at position ``choices[i]``."""
    model = with_defaults(model)
    state = model.init_states()[init_index]
    steps = [Step(None, state)]
    for i, choice in enumerate(choices):
        succ = model.successors(state)
        if not 0 <= choice < len(succ):
            raise EngineError(f"trace replay failed at step {i + 2}: no action number {choice}")
        action, state = succ[choice]
        steps.append(Step(action, state))
    return Path(tuple(steps), init_index, tuple(choices))


def replay_fingerprints(model: Any, fps: Sequence[int], encode: Callable[[Any], bytes]) -> Path:
    """The path through the states with fingerprints ``fps`` (initial state first).

    At each step the first enabled action whose successor has the next fingerprint is
    taken, which is the action a breadth-first search discovers that state by.
    """
    model = with_defaults(model)
    inits = model.init_states()
    init_index = next((i for i, s in enumerate(inits) if fingerprint_bytes(encode(s)) == fps[0]), None)
    if init_index is None:
        raise EngineError("trace replay failed: no initial state has the trace's fingerprint")
    state = inits[init_index]
    steps = [Step(None, state)]
    choices: list[int] = []
    for i, want in enumerate(fps[1:]):
        for choice, (action, nxt) in enumerate(model.successors(state)):
            if fingerprint_bytes(encode(nxt)) == want:
                break
        else:
            raise EngineError(f"trace replay failed at step {i + 2}: no successor matches")
        choices.append(choice)
        steps.append(Step(action, nxt))
        state = nxt
    return Path(tuple(steps), init_index, tuple(choices))


def extend(model: Any, path: Path, choice: int) -> Path:
    """``path`` with one more step: the enabled action at position ``choice``."""
    action, nxt = with_defaults(model).successors(path.steps[-1].state)[choice]
    return Path(path.steps + (Step(action, nxt),), path.init_index, path.choices + (choice,))
