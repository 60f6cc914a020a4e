"""The rules of one level, written once: every search calls them on each piece of a level.

A piece of a level is some frontier rows (or Python states) expanded together: the rows
search (``checker.local.rows``) expands a chunk, a Spark task (``checker.partitioned.tasks``)
a slice of its rank partition, the per-state search (``checker.local.states``) one state.
``LevelStep`` holds what those pieces share:

- the expansion with its counts (``Expansion``: successors generated, terminal states,
  actions fired per code) and the kernel's comparison with its model
  (``checker.contract.kernel_check``);
- the step properties' first violations: per property, the violating transition with the
  least key (``checker.core.keys``: the per-state search's order), found with the
  property's array form when it has one, else state by state;
- the state invariants' first violations on new states, likewise by least key (one rule,
  ``first_violation``, for both and for every kind of piece);
- a mask that fires where the property's own check says the property holds is a
  disagreement between the kernel and its model (``KernelMismatchError``);
- the goal flags of the always-possibly properties on stored states, the obligations'
  flags of the liveness properties (``liveness_flags``), and the fair instance of every
  successor (``fair_codes``), which the graph visitor keeps (``checker.core.visitor``).

Asking a property is written once too: ``state_failures`` and ``step_failures`` ask each
property of a state or a transition and refuse an answer that is neither ``None`` nor a
string. The state graph (``checker.graph.export``) and the random walks (``checker.local.simulate``) ask through them.

A violation found here is a candidate: the search records it unless the property failed
earlier (``skip``), and the driver keeps the first of the level (``checker.core.driver``).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from ..base.errors import PropertyError
from ..contract.kernel_check import KernelCheck, KernelMismatchError
from ..contract.properties import state_mask, step_mask
from ..contract.protocol import (
    ALWAYS_EVENTUALLY,
    COVER,
    STEP_COVER,
    Expander,
    Property,
)
from .states_kernel import successors_of


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
class Successors:
    """What ``LevelStep.chunk_successors`` finds of a chunk: its expansion, and, when it
    has successors, their keys, the step properties' least-key violators (``{name: (i,
    explanation)}``), their fingerprints, and the positions of the least key of each
    fingerprint, in fingerprint order (``pick``)."""

    exp: Expansion
    keys: np.ndarray | None = None
    steps: dict[str, tuple[int, str]] = attrs.Factory(dict)
    fps: np.ndarray | None = None
    pick: np.ndarray | None = None


@attrs.frozen
class LevelStep:
    """The per-level rules over a kernel's rows (see the module).

    Args:
        model: the model; kernel: its batch kernel (or ``checker.core.states_kernel``'s rows
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
        object.__setattr__(self, "arrays", self.kernel.arrays)

    def expand(self, chunk: Any, depth: int, rank: int, level: int) -> Expansion:
        """Expand ``chunk``, the frontier ranks ``rank ...`` of a level of ``level``
        states at ``depth``; compare the kernel with its model where ``check`` says."""
        parents, choices, codes, succ = self.kernel.expand(chunk)
        if self.check is not None:
            picked = self.check.pick(depth, rank, level, chunk)
            object.__setattr__(self, "_picked", picked)
            self.check.compare(chunk, parents, choices, codes, succ, picked)
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

    def chunk_successors(
        self,
        chunk: Any,
        depth: int,
        rank: int,
        level: int,
        skip: Container[str],
        fingerprints: Callable[[Any], np.ndarray],
        base: int = 0,
    ) -> Successors:
        """The chunk pipeline every rows search shares (the local search's chunks, the
        partitioned level's slices): expand ``chunk`` (the frontier ranks ``rank ...`` of
        a level of ``level`` states at ``depth``), key each successor by ``(base + its
        parent's position, choice)`` (``checker.core.keys``), find the least-key violator of
        each step property not in ``skip``, fingerprint the successors
        (``fingerprints``) and pick the least key of each fingerprint. What a search then
        does with them (drop the seen ones, or route them to their owners) is its own."""
        from . import keys as keying

        exp = self.expand(chunk, depth, rank, level)
        if not len(exp.succ):
            return Successors(exp)
        key = keying.key(base + exp.parents.astype(np.int64), exp.choices)
        steps = self.step_violations(chunk, exp, key, skip) if self.step_props else {}
        fps = fingerprints(exp.succ)
        return Successors(exp, key, steps, fps, keying.least_per_fingerprint(key, fps))

    def step_violations(
        self, chunk: Any, exp: Expansion, keys: np.ndarray, skip: Container[str] = ()
    ) -> dict[str, tuple[int, str]]:
        """Per step property not in ``skip``: ``(i, explanation)`` of its violating
        successor ``i`` with the least ``keys[i]``."""
        out: dict[str, tuple[int, str]] = {}
        parents, choices = exp.parents, exp.choices
        # Without an array form the transitions are asked in key order, a parent's together:
        # its successors are computed once (``_Transitions``).
        transitions = _Transitions(self.model, self.kernel, chunk)
        for prop in self.step_props:
            if prop.name in skip:
                continue
            first = first_violation(
                prop,
                len(parents),
                keys,
                step_mask(self.kernel, prop, chunk, parents, exp.succ, exp.codes),
                lambda p, i: step_answer(p, self.model, *transitions.of(int(parents[i]), int(choices[i]))),
            )
            if first is not None:
                out[prop.name] = first
        return out

    def state_violations(
        self, rows: Any, keys: np.ndarray | None = None, skip: Container[str] = ()
    ) -> dict[str, tuple[int, str]]:
        """Per state invariant not in ``skip``: ``(j, explanation)`` of its violating row
        ``j`` with the least ``keys[j]`` (the first one when ``keys`` is ``None``)."""
        out: dict[str, tuple[int, str]] = {}
        model, kernel = self.model, self.kernel
        for prop in self.invariants:
            if prop.name in skip:
                continue
            first = first_violation(
                prop,
                len(rows),
                keys,
                state_mask(kernel, prop, rows) if self.arrays else None,
                lambda p, j: state_answer(p, model, kernel.decode(rows[j])),
            )
            if first is not None:
                out[prop.name] = first
        return out

    def goal_flags(self, prop: Property, rows: Any) -> np.ndarray:
        """Per row: whether the always-possibly property ``prop``'s goal holds there (its
        array form when it has one, else asked state by state)."""
        mask = state_mask(self.kernel, prop, rows) if self.arrays else None
        if mask is None:
            model, decode = self.model, self.kernel.decode
            mask = np.array([bool(prop.check(model, decode(row))) for row in rows], dtype=bool)
        return mask

    def liveness_flags(self, prop: Property, rows: Any, obligations: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Per row and obligation (``obligations``: the property's, ``(None,)`` for one):
        ``(opened, waits)``, two boolean arrays of shape ``(len(rows), K)`` (see
        ``checker.graph.liveness``), from the property's array form when it has one."""
        n, k = len(rows), len(obligations)
        if self.arrays and prop.mask is not None:
            answer = prop.mask(self.kernel, rows)
            if prop.kind == ALWAYS_EVENTUALLY:
                fails = np.asarray(answer, dtype=bool).reshape(n, 1)
                return fails, fails
            p, q = (np.asarray(a, dtype=bool).reshape(n, k) for a in answer)
            return p & ~q, ~q
        model, decode = self.model, self.kernel.decode
        return liveness_rows(prop, model, [decode(row) for row in rows], obligations)

    def fair_codes(self, chunk: Any, exp: Expansion, code_of: Callable[[Any], int]) -> np.ndarray:
        """The fair instance code of every successor of ``exp`` (``-1``: not fair): the
        kernel's array form (``fair_codes``) when it has one, compared with the model on
        the parents the kernel's check picks; else the model asked successor by successor
        (``code_of(instance)`` numbers an instance)."""
        fair = self.kernel.fair_codes(chunk, exp.parents, exp.choices, exp.codes, exp.succ) if self.arrays else None
        if fair is not None:
            fair = np.asarray(fair, dtype=np.int64)
            if self.check is not None and self._picked is not None:
                self._compare_fair(chunk, exp, fair, self._picked, code_of)
            return fair
        return self._model_fair_codes(chunk, exp.parents, exp.choices, code_of)

    def _model_fair_codes(
        self, chunk: Any, parents: np.ndarray, choices: np.ndarray, code_of: Callable[[Any], int]
    ) -> np.ndarray:
        model, decode = self.model, self.kernel.decode
        out = np.empty(len(parents), dtype=np.int64)
        last, succ, state = -1, [], None
        for k, (p, c) in enumerate(zip(parents.tolist(), choices.tolist())):
            if p != last:
                state = decode(chunk[p])
                succ, last = successors_of(model, self.kernel, chunk, p), p
            out[k] = code_of(model.fair_instance(state, succ[c][0]))
        return out

    def _compare_fair(
        self, chunk: Any, exp: Expansion, fair: np.ndarray, which: np.ndarray, code_of: Callable[[Any], int]
    ) -> None:
        picked = np.flatnonzero(np.isin(exp.parents, which))
        if not len(picked):
            return
        want = self._model_fair_codes(chunk, exp.parents[picked], exp.choices[picked], code_of)
        wrong = np.flatnonzero(fair[picked] != want)
        if len(wrong):
            j = int(picked[wrong[0]])
            state = self.kernel.decode(chunk[exp.parents[j]])
            action = self.model.successors(state)[int(exp.choices[j])][0]
            raise KernelMismatchError(
                f"the batch kernel and the model disagree at state {state!r}, action {action!r}: "
                f"fair instance code: kernel {int(fair[j])}, model {int(want[wrong[0]])} "
                "(fix the kernel, or run with --per-state)"
            )

    # the parents the last ``expand`` compared (for the fair codes of the same piece)
    _picked: Any = attrs.field(default=None, init=False)


_PAIR = "a pair (p, q): the obligations whose P and whose Q hold (two bools for a single obligation)"


def liveness_rows(
    prop: Property, model: Any, states: Sequence[Any], obligations: Sequence[Any]
) -> tuple[np.ndarray, np.ndarray]:
    """``(opened, waits)`` of Python ``states`` from the liveness property's own check
    (``LevelStep.liveness_flags``'s per-state form).

    Raises:
        PropertyError: the check answered something of the wrong form.
    """
    n, k = len(states), len(obligations)
    if prop.kind == ALWAYS_EVENTUALLY:
        fails = np.array([_checked(prop, prop.check(model, s)) is not None for s in states], dtype=bool)
        return fails.reshape(n, 1), fails.reshape(n, 1)
    p = np.zeros((n, k), dtype=bool)
    q = np.zeros((n, k), dtype=bool)
    single = prop.obligations is None
    index = {o: j for j, o in enumerate(obligations)}
    for i, s in enumerate(states):
        answer = prop.check(model, s)
        if not (isinstance(answer, tuple) and len(answer) == 2):
            raise PropertyError(prop.name, answer, _PAIR)
        for row, part in ((p, answer[0]), (q, answer[1])):
            if single:
                row[i, 0] = bool(part)
                continue
            try:
                row[i, [index[o] for o in part]] = True
            except (KeyError, TypeError) as e:
                raise PropertyError(prop.name, answer, _PAIR) from e
    return p & ~q, ~q


def first_violation(
    prop: Property, count: int, keys: Any, mask: Any, why: Callable[[Property, int], str | None]
) -> tuple[int, str] | None:
    """A property's first violation among ``count`` candidates (states, or transitions):
    ``(i, explanation)`` of the violating candidate ``i`` with the least ``keys[i]`` (the
    first when ``keys`` is ``None``), or ``None``. ``why(prop, i)`` is the property's own answer
    on candidate ``i``. With an array form (``mask``, true where the property is
    violated), only the least hit is asked, and must be confirmed; without one the
    candidates are asked in key order until one violates it.

    Raises:
        KernelMismatchError: the array form and the property's own check disagree.
    """
    if mask is not None:
        hits = np.flatnonzero(mask)
        if not len(hits):
            return None
        i = int(hits[0] if keys is None else hits[np.argmin(keys[hits])])
        answer = why(prop, i)
        if answer is None:
            raise KernelMismatchError(f"the batch kernel and the model disagree on {prop.name}")
        return i, answer
    for i in range(count) if keys is None else np.argsort(keys).tolist():
        answer = why(prop, i)
        if answer is not None:
            return i, answer
    return None


def decided(level_found: Mapping[str, tuple[Any, ...]], found: Mapping[str, tuple[Any, ...]]) -> set[str]:
    """The properties whose first violation is known: none of their candidates counts."""
    return found.keys() | level_found.keys()


def record_first(
    level_found: dict[str, tuple[Any, ...]],
    found: Mapping[str, tuple[Any, ...]],
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


def state_answer(prop: Property, model: Any, state: Any) -> str | None:
    """A state invariant's answer on ``state`` (``None``: it holds), or a cover's: a
    sentence when ``state`` is a witness (its predicate holds), ``None`` when not."""
    if prop.kind == COVER:
        return f"reached: {prop.description or prop.name}" if prop.check(model, state) else None
    return _checked(prop, prop.check(model, state))


def step_answer(prop: Property, model: Any, before: Any, action: Any, after: Any) -> str | None:
    """A step property's answer on the transition ``before --action--> after`` (``None``: it
    holds), or a step cover's: a sentence when the step is a witness, ``None`` when not."""
    if prop.kind == STEP_COVER:
        return f"reached: {prop.description or prop.name}" if prop.check(model, before, action, after) else None
    return _checked(prop, prop.check(model, before, action, after))


class _Transitions:
    """The transitions of a chunk's rows, each parent decoded and expanded once however
    many of its transitions are asked (the last parent asked is kept)."""

    def __init__(self, model: Any, kernel: Any, chunk: Any) -> None:
        self.model, self.kernel, self.chunk = model, kernel, chunk
        self._parent = -1
        self._state: Any = None
        self._succ: list[tuple[Any, Any]] = []

    def of(self, parent: int, choice: int) -> tuple[Any, Any, Any]:
        """``(before, action, after)`` of the transition ``choice`` of row ``parent``."""
        if parent != self._parent:
            self._state = self.kernel.decode(self.chunk[parent])
            self._succ, self._parent = successors_of(self.model, self.kernel, self.chunk, parent), parent
        action, nxt = self._succ[choice]
        return self._state, action, nxt


def _checked(prop: Property, why: object) -> str | None:
    """A check's answer, refused unless it is ``None`` or a ``str``.

    Raises:
        PropertyError: the check returned something else.
    """
    if why is not None and type(why) is not str:
        raise PropertyError(prop.name, why)
    return why


def state_failures(model: Any, state: Any, invariants: Sequence[Property]) -> list[tuple[str, str]]:
    """The ``(name, explanation)`` of every state invariant ``state`` violates, in order
    (a cover among them is no invariant: a witness is no failure, and it is skipped).

    Raises:
        PropertyError: a check returned neither ``None`` nor a ``str``.
    """
    out = []
    for prop in invariants:
        if prop.kind == COVER:
            continue
        why = _checked(prop, prop.check(model, state))
        if why is not None:
            out.append((prop.name, why))
    return out


def step_failures(
    model: Any, before: Any, action: Any, after: Any, step_props: Sequence[Property]
) -> list[tuple[str, str]]:
    """The ``(name, explanation)`` of every step property the transition violates, in order
    (a step cover among them is no property: a witness is no failure, and it is skipped).

    Raises:
        PropertyError: a check returned neither ``None`` nor a ``str``.
    """
    out = []
    for prop in step_props:
        if prop.kind == STEP_COVER:
            continue
        why = _checked(prop, prop.check(model, before, action, after))
        if why is not None:
            out.append((prop.name, why))
    return out
