"""A batch kernel compared with its model: a wrong kernel stops the run, never miscounts.

A batch kernel (``checker.contract.protocol.BatchKernel``) is a second writing of its model's
semantics, in arrays; the engines trust it for every state they count. So they compare
it with the model on the parents ``KernelCheck.pick`` chooses, everything a kernel
answers for those parents:

- the successors: as many as the model's, each choice once, each with the model's
  action name, and ``decode`` of each row equal to the model's successor;
- the fingerprints: each successor's row is the kernel's own ``encode`` of the model's
  successor (two rows are equal exactly when their states are), and under symmetry
  reduction every permutation of the successor has the same canonical fingerprint;
- every property's array form, in both directions: an invariant's (or a goal's) mask on
  the successors, and a step property's on the transitions, against the properties' own
  checks.

Which parents: every one (``full``), unless the kernel sets ``sampled_comparison``
(``KernelBase``: a kernel compared with its model on every state by tests of its own, as
the Kafka kernel is) and the run does not ask ``--verify-kernel``
(``Options.verify_kernel``): then an evenly spread sample of ``SAMPLE_PER_LEVEL`` parents of each of the first
``SAMPLE_LEVELS`` levels and ``SAMPLE_DEEPER`` of every deeper one (a kernel wrong only
deep in the search is caught as one wrong at the start is), and the
first ``WRAPS_PER_CHUNK`` parents of a chunk that hold a byte at 255, and as many at 127:
where a narrow integer column wraps on its next increment (to 0, or to -128). The sample
depends only on a parent's depth and its rank in the level, so every engine checks the
same parents, and ``sampled`` counts them (the result's ``kernel_cross_checked``).

A disagreement raises ``KernelMismatchError``: one line naming the state, the action and the
field that differ (exit code 2 on the command line).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NoReturn, Protocol, cast

import attrs
import numpy as np

from ..base.errors import EngineError
from .properties import state_mask, step_mask
from .protocol import (
    ALWAYS,
    ALWAYS_EVENTUALLY,
    COVER,
    LIVENESS,
    POSSIBLY,
    STEP,
    STEP_COVER,
    BatchKernel,
    Expander,
    Property,
    action_name,
)

SAMPLE_PER_LEVEL = 4  # the default compares this many parents of each of the first levels...
SAMPLE_LEVELS = 8  # ...(these), evenly spread over its ranks,
SAMPLE_DEEPER = 2  # and this many of every deeper level
WRAPS_PER_CHUNK = 2  # and, on every level, this many parents a chunk with a byte at 255, and at 127


class KernelMismatchError(EngineError):
    """A batch kernel and its model disagree (a programming error in the kernel)."""


@attrs.frozen
class KernelCheck:
    """What a search compares of its kernel with its model (see the module).

    Args:
        model, kernel: the model and its batch kernel.
        properties: the properties being checked (their array forms are compared).
        symmetry: whether the run stores one state per orbit.
        full: compare every parent (``--verify-kernel``), not a sample.
    """

    model: Any  # a checker.contract.protocol.Model
    kernel: BatchKernel
    properties: tuple[Property, ...]
    symmetry: bool = False
    full: bool = False

    def pick(self, depth: int, rank: int, level: int, chunk: np.ndarray) -> np.ndarray:
        """The positions in ``chunk`` of the parents to compare: ``chunk`` holds the
        frontier ranks ``rank ...`` of a level of ``level`` states at ``depth`` (the
        initial states' depth is 1)."""
        count = len(chunk)
        if self.full:
            return np.arange(count)
        picked = []
        stride = _stride(depth, level)
        start = -rank % stride
        picked.append(np.arange(start, count, stride))
        # A byte at the top of its range (255 unsigned, 127 signed) is where a narrow
        # integer column wraps on its next increment (a wider little-endian one too: its
        # low byte is 255 then); its rows are compared whatever their depth.
        top = int(chunk.max()) if chunk.size else 0
        for edge in (0xFF, 0x7F):
            if top >= edge:
                picked.append(np.flatnonzero((chunk == edge).any(axis=1))[:WRAPS_PER_CHUNK])
        if not picked:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(picked))

    def sampled(self, depth: int, level: int) -> int:
        """How many parents of a level of ``level`` states at ``depth`` ``pick`` compares
        by rank (every one with ``full``; the rows with a byte at an edge come on top)."""
        if self.full:
            return level
        return -(-level // _stride(depth, level))

    def compare(
        self,
        chunk: np.ndarray,
        parents: np.ndarray,
        choices: np.ndarray,
        codes: np.ndarray,
        succ: np.ndarray,
        which: np.ndarray,
    ) -> None:
        """Compare the kernel's expansion of ``chunk`` (``parents, choices, codes, succ``)
        with the model on the parents at positions ``which``.

        Raises:
            KernelMismatchError: they disagree.
        """
        if not len(which):
            return
        model, kernel = self.model, self.kernel
        names = kernel.action_names
        chosen = np.isin(parents, which)
        picked = np.flatnonzero(chosen)
        picked = picked[np.lexsort((choices[picked], parents[picked]))]
        by_parent: dict[int, list[int]] = {}
        for j in picked.tolist():
            by_parent.setdefault(int(parents[j]), []).append(j)
        # Every row is decoded, and every parent's successors asked of the model, once: the
        # masks below are compared on the model's states, each already found equal to its row.
        steps: dict[int, tuple[Any, Any, Any]] = {}  # successor position -> (parent state, action, state)
        for i in np.asarray(which).tolist():
            state = kernel.decode(chunk[i])
            expected = model.successors(state)
            got = by_parent.get(i, [])
            if [int(choices[j]) for j in got] != list(range(len(got))) or len(got) != len(expected):
                kinds = [int(choices[j]) for j in got]
                mine = [names[int(codes[j])] for j in got]
                theirs = [action_name(a) for a, _ in expected]
                missing = [a for a in theirs if a not in mine] or [a for a in mine if a not in theirs]
                how = "not enabled by the kernel" if len(got) < len(expected) else "differ"
                what = f" ({', '.join(missing)} {how})"
                _fail(
                    state,
                    None,
                    "successors" + (what if missing else ""),
                    f"{len(got)} (choices {kinds})",
                    f"{len(expected)} ({', '.join(model.format_action(a) for a, _ in expected)})",
                )
            for j, (action, after) in zip(got, expected):
                self._compare_step(state, action, after, names[int(codes[j])], succ[j])
                steps[j] = (state, action, after)
        self._compare_masks(chunk, parents, succ, picked, steps, codes)

    def _compare_step(self, state: Any, action: Any, after: Any, code_name: str, row: np.ndarray) -> None:
        model, kernel = self.model, self.kernel
        if code_name != action_name(action):
            _fail(state, action, "action name", code_name, action_name(action))
        mine = kernel.decode(row)
        if mine != after:
            field, k, m = _difference(mine, after)
            _fail(state, action, f"successor {field}", k, m)
        try:
            own = np.asarray(kernel.encode(after))
        except (OverflowError, ValueError) as e:
            _fail(state, action, "successor row", "cannot encode the model's successor", str(e))
        if own.tobytes() != np.asarray(row).tobytes():
            _fail(state, action, "successor row", "its row", "the kernel's encode of the same state")
        if self.symmetry and model.symmetries() is not None:
            rows = np.stack([np.asarray(kernel.encode(model.permute(after, p))) for p in model.symmetries()])
            fps = kernel.fingerprints(rows, True)
            if (fps != fps[0]).any():
                _fail(state, action, "canonical fingerprint", "differs between permutations", "one per orbit")

    def compare_initial(self, states: Sequence[Any], rows: np.ndarray) -> None:
        """Compare the kernel's rows of the initial states with the states themselves.

        Raises:
            KernelMismatchError: they disagree.
        """
        for state, row in zip(states, rows):
            mine = self.kernel.decode(row)
            if mine != state:
                field, k, m = _difference(mine, state)
                _fail(state, None, f"initial row {field}".rstrip(), k, m)
        self._compare_state_masks(rows, list(states))

    def _compare_masks(
        self,
        chunk: np.ndarray,
        parents: np.ndarray,
        succ: np.ndarray,
        picked: np.ndarray,
        steps: dict[int, tuple[Any, Any, Any]],
        codes: np.ndarray | None = None,
    ) -> None:
        """The properties' array forms on the successors at positions ``picked`` (each the
        step ``steps[j]`` of the model: its parent state, action and state)."""
        if not len(picked):
            return
        rows = succ[picked]
        taken = [steps[j] for j in picked.tolist()]
        self._compare_state_masks(rows, [after for _, _, after in taken])
        model, kernel = self.model, self.kernel
        for prop in self.properties:
            if prop.kind not in (STEP, STEP_COVER):
                continue
            picked_codes = None if codes is None else codes[picked]
            mask = step_mask(kernel, prop, chunk, parents[picked], rows, picked_codes)
            if mask is None:
                continue
            for k, (before, action, after) in enumerate(taken):
                holds = prop.check(model, before, action, after)
                flag = bool(holds) if prop.kind == STEP_COVER else holds is not None
                if bool(mask[k]) != flag:
                    _fail(before, action, f"{prop.name} mask", bool(mask[k]), flag)

    def _compare_state_masks(self, rows: np.ndarray, states: Sequence[Any]) -> None:
        """The state properties' array forms on ``rows``, whose states are ``states``."""
        model, kernel = self.model, self.kernel
        for prop in self.properties:
            if prop.kind in LIVENESS:
                self._compare_liveness_mask(prop, rows, states)
                continue
            if prop.kind not in (ALWAYS, POSSIBLY, COVER):
                continue
            mask = state_mask(kernel, prop, rows)
            if mask is None:
                continue
            for k, state in enumerate(states):
                holds = prop.check(model, state)
                flag = holds is not None if prop.kind == ALWAYS else bool(holds)
                if bool(mask[k]) != flag:
                    _fail(state, None, f"{prop.name} mask", bool(mask[k]), flag)

    def _compare_liveness_mask(self, prop: Property, rows: np.ndarray, states: Sequence[Any]) -> None:
        """A liveness property's array form (``Property.mask``) against its own check."""
        if prop.mask is None or not len(rows):
            return
        model, kernel = self.model, self.kernel
        answer = prop.mask(kernel, rows)
        single = prop.obligations is None
        obligations = (None,) if prop.obligations is None else tuple(prop.obligations(model))
        mine: Any
        theirs: Any
        for k, state in enumerate(states):
            if prop.kind == ALWAYS_EVENTUALLY:
                mine, theirs = bool(np.asarray(answer)[k]), prop.check(model, state) is not None
            else:
                p, q = (np.asarray(a, dtype=bool).reshape(len(rows), -1)[k].tolist() for a in answer)
                own = prop.check(model, state)
                if single:
                    mine, theirs = (p[0], q[0]), (bool(own[0]), bool(own[1]))
                else:
                    mine = (tuple(p), tuple(q))
                    theirs = tuple(tuple(o in set(part) for o in obligations) for part in own)
            if mine != theirs:
                _fail(state, None, f"{prop.name} mask", mine, theirs)


def _stride(depth: int, level: int) -> int:
    """The sample takes the ranks of a level that are multiples of this."""
    return max(1, level // (SAMPLE_PER_LEVEL if depth <= SAMPLE_LEVELS else SAMPLE_DEEPER))


class KernelOptions(Protocol):
    """What ``kernel_check`` reads of a run's options (``checker.core.options.Options``)."""

    @property
    def verify_kernel(self) -> bool: ...

    @property
    def symmetry(self) -> bool: ...


def kernel_check(
    model: Any, kernel: Expander, properties: Iterable[Property], options: KernelOptions
) -> KernelCheck | None:
    """The comparison a search runs for ``kernel``: ``None`` for rows of Python states
    (``checker.core.states_kernel``: the model itself, nothing to compare)."""
    if not kernel.arrays:
        return None
    batch = cast(BatchKernel, kernel)  # rows that are arrays: a model's batch kernel
    full = bool(options.verify_kernel) or not batch.sampled_comparison
    return KernelCheck(model, batch, tuple(properties), bool(options.symmetry), full)


def _difference(mine: Any, theirs: Any) -> tuple[str, Any, Any]:
    """``(field, kernel's value, model's value)`` of the first field where two states
    differ (attrs classes and tuples field by field)."""
    if attrs.has(type(mine)) and type(mine) is type(theirs):
        ours, other = attrs.asdict(mine, recurse=False), attrs.asdict(theirs, recurse=False)
        for name, a in ours.items():
            b = other[name]
            if a != b:
                inner, x, y = _difference(a, b)
                return name + ("." + inner if inner else ""), x, y
    if isinstance(mine, tuple) and isinstance(theirs, tuple) and len(mine) == len(theirs):
        for n, (a, b) in enumerate(zip(mine, theirs)):
            if a != b:
                inner, x, y = _difference(a, b)
                return f"[{n}]" + ("." + inner if inner else ""), x, y
    return "", mine, theirs


def _fail(state: Any, action: Any, field: str, kernel_value: Any, model_value: Any) -> NoReturn:
    what = "" if action is None else f", action {action_name(action)}"
    line = (
        f"the batch kernel and the model disagree at state {state!r}{what}: {field}: "
        f"kernel {kernel_value!r}, model {model_value!r} (fix the kernel, or run with --per-state)"
    )
    raise KernelMismatchError(" ".join(line.split()))
