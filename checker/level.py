"""The rules of one level, written once: every search calls them on each piece of a level.

A piece of a level is some frontier rows (or Python states) expanded together: the rows
search (``checker.batch``) expands a chunk, a Spark task (``checker.spark_rows_tasks``)
a slice of its rank partition, the per-state search (``checker.local``) one state.
``LevelStep`` holds what those pieces share:

- the expansion with its counts (``Expansion``: successors generated, terminal states,
  actions fired per code) and the kernel's comparison with its model
  (``checker.kernel_check``);
- the step properties' first violations: per property, the violating transition with the
  least key (``(parent rank, choice)``: the per-state search's order), found with the
  property's array form when it has one, else state by state;
- the state invariants' first violations on new states, likewise by least key;
- a mask that fires where the property's own check says the property holds is a
  disagreement between the kernel and its model (``KernelMismatchError``);
- the goal flags of the always-possibly properties on stored states.

Asking a property is written once too: ``state_failures`` and ``step_failures`` ask each
property of a state or a transition and refuse an answer that is neither ``None`` nor a
string. The per-state search (``transition_violations``), the state graph
(``checker.graph``) and the random walks (``checker.simulate``) ask through them.

A violation found here is a candidate: the search records it unless the property failed
earlier (``skip``), and the driver keeps the first of the level (``checker.driver``).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from .errors import PropertyError
from .kernel_check import KernelCheck, KernelMismatchError
from .masks import state_mask, step_mask
from .protocol import Expander, Property, successors
from .states_kernel import StatesKernel


@attrs.frozen
class Expansion:
    """A piece's successors (``BatchKernel.expand``'s four arrays) and what they count."""

    parents: np.ndarray
    choices: np.ndarray
    codes: np.ndarray
    succ: Any
    generated: int
    terminal: int
    fired: np.ndarray  # actions fired, per action code


@attrs.frozen
class LevelStep:
    """The per-level rules over a kernel's rows (see the module).

    Args:
        model: the model; kernel: its batch kernel (or ``checker.states_kernel``'s rows
            of Python states); invariants, step_props: the properties checked;
        check: the kernel's comparison with its model, or ``None``.
    """

    model: Any
    kernel: Expander
    invariants: Sequence[Property]
    step_props: Sequence[Property]
    check: KernelCheck | None = None
    # whether the rows are arrays (properties may have array forms), not Python states
    arrays: bool = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "arrays", not isinstance(self.kernel, StatesKernel))

    def expand(self, chunk, depth: int, rank: int, level: int) -> Expansion:
        """Expand ``chunk``, the frontier ranks ``rank ...`` of a level of ``level``
        states at ``depth``; compare the kernel with its model where ``check`` says."""
        parents, choices, codes, succ = self.kernel.expand(chunk)
        if self.check is not None:
            self.check.compare(chunk, parents, choices, codes, succ, self.check.pick(depth, rank, level, chunk))
        names = len(self.kernel.action_names)
        return Expansion(
            parents,
            choices,
            codes,
            succ,
            generated=len(succ),
            terminal=int(np.count_nonzero(np.bincount(parents, minlength=len(chunk)) == 0)),
            fired=np.bincount(codes, minlength=names),
        )

    def step_violations(self, chunk, exp: Expansion, keys, skip: Container[str] = ()) -> dict[str, tuple[int, str]]:
        """Per step property not in ``skip``: ``(i, explanation)`` of its violating
        successor ``i`` with the least ``keys[i]``."""
        out: dict[str, tuple[int, str]] = {}
        for prop in self.step_props:
            if prop.name in skip:
                continue
            mask = step_mask(self.kernel, prop, chunk, exp.parents, exp.succ)
            if mask is None:
                mask = np.array(
                    [
                        self.step_why(prop, chunk[p], c) is not None
                        for p, c in zip(exp.parents.tolist(), exp.choices.tolist())
                    ],
                    dtype=bool,
                )
            hits = np.flatnonzero(mask)
            if len(hits):
                i = int(hits[np.argmin(keys[hits])])
                why = self.step_why(prop, chunk[exp.parents[i]], int(exp.choices[i]))
                if why is None:
                    raise KernelMismatchError(f"the batch kernel and the model disagree on {prop.name}")
                out[prop.name] = (i, why)
        return out

    def step_why(self, prop: Property, row, choice: int) -> str | None:
        """The explanation of ``prop``'s violation by the transition ``choice`` of ``row``,
        or ``None`` when it holds there."""
        state = self.kernel.decode(row)
        action, nxt = successors(self.model, state)[choice]
        return _checked(prop, prop.check(self.model, state, action, nxt))

    def transition_violations(
        self, state, transitions: Sequence[tuple[Any, Any]], skip: Container[str] = ()
    ) -> dict[str, tuple[int, str]]:
        """Per step property not in ``skip``: ``(choice, explanation)`` of the first of
        ``state``'s ``transitions`` (its ``(action, successor)`` pairs in the model's
        order) that violates it: the least key when one state is expanded at a time."""
        out: dict[str, tuple[int, str]] = {}
        for prop in self.step_props:
            if prop.name in skip:
                continue
            for choice, (action, nxt) in enumerate(transitions):
                why = _checked(prop, prop.check(self.model, state, action, nxt))
                if why is not None:
                    out[prop.name] = (choice, why)
                    break
        return out

    def state_violations(self, rows, keys=None, skip: Container[str] = ()) -> dict[str, tuple[int, str]]:
        """Per state invariant not in ``skip``: ``(j, explanation)`` of its violating row
        ``j`` with the least ``keys[j]`` (the first one when ``keys`` is ``None``)."""
        out: dict[str, tuple[int, str]] = {}
        model, kernel = self.model, self.kernel
        for prop in self.invariants:
            if prop.name in skip:
                continue
            mask = state_mask(kernel, prop, rows) if self.arrays else None
            if mask is None:  # no array form: decode and ask the property, row by row
                best = None
                for j, row in enumerate(rows):
                    why = _checked(prop, prop.check(model, kernel.decode(row)))
                    if why is not None and (best is None or keys[j] < keys[best[0]]):
                        best = (j, why)
                        if keys is None:
                            break
                if best is not None:
                    out[prop.name] = best
                continue
            if not mask.any():
                continue
            hits = np.flatnonzero(mask)
            j = int(hits[0] if keys is None else hits[np.argmin(keys[hits])])
            why = _checked(prop, prop.check(model, kernel.decode(rows[j])))
            if why is None:
                raise KernelMismatchError(f"the batch kernel and the model disagree on {prop.name}")
            out[prop.name] = (j, why)
        return out

    def goal_flags(self, prop: Property, rows) -> np.ndarray:
        """Per row: whether the always-possibly property ``prop``'s goal holds there (its
        array form when it has one, else asked state by state)."""
        mask = state_mask(self.kernel, prop, rows) if self.arrays else None
        if mask is None:
            model, decode = self.model, self.kernel.decode
            mask = np.array([bool(prop.check(model, decode(row))) for row in rows], dtype=bool)
        return mask


def decided(level_found: Mapping[str, tuple], found: Mapping[str, tuple]) -> set[str]:
    """The properties whose first violation is known: none of their candidates counts."""
    return found.keys() | level_found.keys()


def record_first(
    level_found: dict[str, tuple],
    found: Mapping[str, tuple],
    kind: str,
    candidates: Mapping[str, tuple[Any, str]],
    where: Callable[[Any], Any],
) -> None:
    """Record each candidate (property -> ``(index, explanation)``, as the rules above
    give them) as ``(kind, explanation, where(index))``, the property's first violation
    of the level, unless the property failed in an earlier level (``found``) or earlier
    in this one: a search records its pieces in order, so the first is the least."""
    for prop, (i, why) in candidates.items():
        if prop not in found and prop not in level_found:
            level_found[prop] = (kind, why, where(i))


def _checked(prop: Property, why: object) -> str | None:
    """A check's answer, refused unless it is ``None`` or a ``str``.

    Raises:
        PropertyError: the check returned something else.
    """
    if why is not None and type(why) is not str:
        raise PropertyError(prop.name, why)
    return why


def state_failures(model: Any, state: Any, invariants: Sequence[Property]) -> list[tuple[str, str]]:
    """The ``(name, explanation)`` of every state invariant ``state`` violates, in order.

    Raises:
        PropertyError: a check returned neither ``None`` nor a ``str``.
    """
    out = []
    for prop in invariants:
        why = _checked(prop, prop.check(model, state))
        if why is not None:
            out.append((prop.name, why))
    return out


def step_failures(
    model: Any, before: Any, action: Any, after: Any, step_props: Sequence[Property]
) -> list[tuple[str, str]]:
    """The ``(name, explanation)`` of every step property the transition violates, in order.

    Raises:
        PropertyError: a check returned neither ``None`` nor a ``str``.
    """
    out = []
    for prop in step_props:
        why = _checked(prop, prop.check(model, before, action, after))
        if why is not None:
            out.append((prop.name, why))
    return out
