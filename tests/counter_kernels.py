"""Batch kernels of the toy counters (``tests/toy.py``), right and wrong: what the engines'
comparison of a kernel with its model (``checker.contract.kernel_check``) must accept and refuse.

``CountersKernel(model, column)`` keeps ``x`` and ``y`` in columns of numpy type ``column``
(``np.uint8`` wraps past 255: the mistake ``docs/writing-a-model.md`` once made);
``WrongMask`` answers ``SumBelow`` with a mask that never fires; ``WrongSuccessor``
sends ``IncY`` of the state (1, 0) to (1, 2); ``NeverIncYAtOneState`` never enables
``IncY`` at the one state (20, 40) of a 61 x 61 grid. The factories at the bottom are what
``kmc check --model tests/counter_kernels.py:NAME`` loads.
"""

from __future__ import annotations

import attrs
import numpy as np
from kmc.checker.contract.protocol import COVER, STEP, STEP_COVER, KernelBase, Property
from toy import Counters, Inc, TwoCounters


class CountersKernel(KernelBase):
    width = 8
    action_names = ("IncX", "IncY")

    def __init__(self, model, column=np.uint16):
        self.n, self.limit, self.column = model.n, model.limit, np.dtype(column)

    def _columns(self, rows):
        return rows.view(self.column)  # x, y, then padding

    def encode(self, state):
        row = np.zeros(self.width, dtype=np.uint8)
        cols = self._columns(row[None, :])[0]
        cols[0], cols[1] = state.x, state.y
        return row

    def decode(self, row):
        cols = self._columns(np.asarray(row)[None, :])[0]
        return Counters(int(cols[0]), int(cols[1]))

    def init_rows(self, states):
        return np.stack([self.encode(s) for s in states])

    def expand(self, rows):
        cols = self._columns(rows)
        can_x, can_y = cols[:, 0] < self.n, cols[:, 1] < self.n
        px, py = np.flatnonzero(can_x), np.flatnonzero(can_y)
        parents = np.concatenate((px, py))
        choices = np.concatenate((np.zeros(len(px), np.int64), can_x[py].astype(np.int64)))
        codes = np.concatenate((np.zeros(len(px), np.int64), np.ones(len(py), np.int64)))
        succ = rows[parents].copy()
        out = self._columns(succ)
        out[: len(px), 0] += 1
        out[len(px) :, 1] += 1
        return parents.astype(np.int64), choices, codes, succ

    def invariant_mask(self, name, rows):
        if name == "SumBelow":
            cols = self._columns(rows)
            return cols[:, 0].astype(np.int64) + cols[:, 1] >= self.limit
        return None


class WrongMask(CountersKernel):
    def invariant_mask(self, name, rows):
        return np.zeros(len(rows), dtype=bool) if name == "SumBelow" else None


class WrongSuccessor(CountersKernel):
    def expand(self, rows):
        parents, choices, codes, succ = super().expand(rows)
        cols = self._columns(succ)
        bad = (cols[:, 0] == 1) & (cols[:, 1] == 1) & (codes == 1)
        cols[bad, 1] = 2
        return parents, choices, codes, succ


class NeverIncYAtOneState(CountersKernel):
    """Right at every state but (20, 40), where it never enables IncY: on the 61 x 61 grid
    (n = 60) every state is still reached (the state (20, 41) through IncX of (19, 41)), but
    the step that ``OneStep`` forbids is never taken."""

    def expand(self, rows):
        parents, choices, codes, succ = super().expand(rows)
        cols = self._columns(rows)
        keep = ~((cols[parents, 0] == 20) & (cols[parents, 1] == 40) & (codes == 1))
        return parents[keep], choices[keep], codes[keep], succ[keep]


def _one_step(model, before, action, after):
    if (before.x, before.y) == (20, 40) and action.name == "IncY":
        return "IncY taken at (20, 40)"
    return None


OneStep = Property("OneStep", STEP, _one_step, "IncY is never taken at (20, 40)")


@attrs.frozen
class KernelCounters(TwoCounters):
    """The toy counters with one of the kernels above."""

    kernel: type = CountersKernel
    column: type = np.uint16

    def batch_kernel(self):
        return self.kernel(self, self.column)

    def action_names(self):
        return ("IncX", "IncY")

    def format_action(self, action: Inc) -> str:
        return action.name


def wrapping(n=300):
    return KernelCounters(n=int(n), limit=10**6, column=np.uint8)


def widened(n=300):
    return KernelCounters(n=int(n), limit=10**6, column=np.uint16)


def wrong_mask():
    return KernelCounters(kernel=WrongMask)


def wrong_successor():
    return KernelCounters(kernel=WrongSuccessor)


@attrs.frozen
class OneStepCounters(KernelCounters):
    """The 61 x 61 grid with the step property ``OneStep``, which only the step IncY at
    (20, 40) violates (a shortest behaviour of 62 states: 61 steps to (20, 41))."""

    def properties(self):
        return (OneStep,)


def one_wrong_state():
    return OneStepCounters(n=60, limit=10**6, kernel=NeverIncYAtOneState)


def _corner(model, state):
    return state.x == model.n and state.y == model.n


def _x_two_y_one(model, state):
    return (state.x, state.y) == (2, 1)


def _x_two_y_one_mask(kernel, rows):
    cols = rows.view(kernel.column)
    return (cols[:, 0] == 2) & (cols[:, 1] == 1)


def _beyond(model, state):
    return state.x > model.n


Corner = Property("Corner", COVER, _corner, "both counters at n")
XTwoYOne = Property("XTwoYOne", COVER, _x_two_y_one, "x is 2 and y is 1", mask=_x_two_y_one_mask)
Beyond = Property("Beyond", COVER, _beyond, "x passes n")


@attrs.frozen
class CoveredCounters(KernelCounters):
    """The toy counters with covers: ``Corner`` and ``XTwoYOne`` (with an array form) are
    reached, ``Beyond`` (with ``beyond``) never is."""

    beyond: bool = False

    def properties(self):
        return (Corner, XTwoYOne, *((Beyond,) if self.beyond else ()))


def covered(n=3, beyond=False):
    return CoveredCounters(n=int(n), limit=10**6, beyond=bool(beyond))


# -- step covers: a predicate of (before, action, after) ------------------------------------


def _y_after_two_x(model, before, action, after):
    return action.name == "IncY" and before.x == 2


def _y_after_two_x_mask(kernel, rows, parents, codes, after):
    return (np.asarray(codes) == 1) & (kernel._columns(rows)[parents, 0] == 2)


def _x_into_corner(model, before, action, after):
    return action.name == "IncX" and (after.x, after.y) == (model.n, model.n)


def _x_past_n(model, before, action, after):
    return action.name == "IncX" and before.x >= model.n


YAfterTwoX = Property("YAfterTwoX", STEP_COVER, _y_after_two_x, "IncY taken where x is 2", mask=_y_after_two_x_mask)
XIntoCorner = Property("XIntoCorner", STEP_COVER, _x_into_corner, "IncX into (n, n)")
XPastN = Property("XPastN", STEP_COVER, _x_past_n, "IncX taken where x is n")


@attrs.frozen
class StepCoveredCounters(KernelCounters):
    """The toy counters with step covers: ``YAfterTwoX`` (with an array form) and
    ``XIntoCorner`` are reached, ``XPastN`` (with ``beyond``) never is (IncX is not
    enabled at x = n)."""

    beyond: bool = False

    def properties(self):
        return (YAfterTwoX, XIntoCorner, *((XPastN,) if self.beyond else ()))


def step_covered(n=3, beyond=False):
    return StepCoveredCounters(n=int(n), limit=10**6, beyond=bool(beyond))
