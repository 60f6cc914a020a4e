"""Broken models for ``kmc check --model tests/broken_models.py:NAME``: each factory below
breaks the model protocol (``kmc.checker.contract.protocol``) in one way. Every one must end in one
line naming the model's function, its file and line, and the exception (exit 2), never in
a traceback or a verdict (``tests/test_model_errors.py``).

Each broken line carries a comment ``# broken: NAME`` so that the tests find its number.
"""

from __future__ import annotations

import itertools
import struct
import sys

import attrs
import numpy as np

from kmc.checker.contract.protocol import ALWAYS, STEP, KernelBase, Property


@attrs.frozen
class Counter:
    x: int


def below(model, state):
    return None if state.x < 100 else f"x reached {state.x}"


Below = Property("Below", ALWAYS, below, "x stays below 100")


@attrs.frozen
class Good:
    """One counter from 0 to ``n``: a correct model the broken ones below change."""

    n: int = 3

    def init_states(self):
        return (Counter(0),)

    def actions(self, state):
        return ["Inc"] if state.x < self.n else []  # broken: n_is_number (an int compared with a str)

    def next_state(self, state, action):
        return Counter(state.x + 1)

    def properties(self):
        return (Below,)

    def encode(self, state):
        return struct.pack("<q", state.x)

    def action_names(self):  # for the Spark engine's counters
        return ("Inc", "Dec")


def good(n=3):
    return Good(n)


# -- the factory ----------------------------------------------------------------------------


def factory_raises(n=1):
    raise ValueError("n must be at least 2")  # broken: factory_raises


def returns_none():
    return None  # broken: returns_none


def returns_int():
    return 42  # broken: returns_int


def returns_class():
    return Good  # broken: returns_class


def returns_dict():
    return {"init_states": [0]}  # broken: returns_dict


# -- the per-state protocol -----------------------------------------------------------------


class InitRaises(Good):
    def init_states(self):
        raise RuntimeError("no initial state today")  # broken: init_raises


class InitNone(Good):
    def init_states(self):
        return None  # broken: init_none


class InitEmpty(Good):
    def init_states(self):
        return ()  # broken: init_empty


class ActionsRaise(Good):
    def actions(self, state):
        if state.x == 2:
            raise KeyError("x")  # broken: actions_raise
        return super().actions(state)


class ActionsNone(Good):
    def actions(self, state):
        return None  # broken: actions_none


class NextRaises(Good):
    def next_state(self, state, action):
        raise ZeroDivisionError("division by zero")  # broken: next_raises


class NextExits(Good):
    def next_state(self, state, action):
        if state.x == 2:
            raise SystemExit(0)  # broken: next_exits
        return super().next_state(state, action)


def factory_exits(n=3):
    sys.exit(3)  # broken: factory_exits


class NextNone(Good):
    def next_state(self, state, action):
        return None  # broken: next_none


class EncodeStr(Good):
    def encode(self, state):
        return f"x={state.x}"  # broken: encode_str


class PropertiesStrings(Good):
    def properties(self):
        return ("Below",)  # broken: properties_strings


class TwoOfOneName(Good):
    def properties(self):  # broken: two_of_one_name
        return (Below, Property("Below", ALWAYS, lambda model, state: None))


def check_raises(model, state):
    if state.x == 2:
        raise IndexError("list index out of range")  # broken: check_raises
    return None


class CheckRaises(Good):
    def properties(self):
        return (Property("Below", ALWAYS, check_raises),)


def step_raises(model, before, action, after):
    raise TypeError("bad step")  # broken: step_raises


class StepRaises(Good):
    def properties(self):
        return (Property("Steady", STEP, step_raises),)


@attrs.define
class Mutable:  # eq without hash: unhashable
    x: int


class Unhashable(Good):
    def init_states(self):
        return (Mutable(0),)  # broken: unhashable


class Nondeterministic(Good):
    """``next_state`` gives another successor each time it is asked."""

    def next_state(self, state, action):
        return Counter(state.x + next(_TICKS) % 2 + 1)  # broken: nondeterministic


_TICKS = itertools.count()


class ActionsVary(Good):
    """``actions`` lists the enabled actions in another order each time."""

    def actions(self, state):
        names = ["Inc", "Dec"] if next(_TICKS) % 2 else ["Dec", "Inc"]  # broken: actions_vary
        return names if state.x < self.n else []

    def next_state(self, state, action):
        return Counter(state.x + 1 if action == "Inc" else max(0, state.x - 1))


def n_is_number(n="3"):
    return Good(n)  # with --param n=abc, Good.actions compares an int with a str


# -- the batch kernel -----------------------------------------------------------------------


class Kernel(KernelBase):
    width = 8
    action_names = ("Inc",)

    def __init__(self, n):
        self.n = n

    def encode(self, state):
        return np.array([state.x], dtype="<i8").view(np.uint8)

    def decode(self, row):
        return Counter(int(np.asarray(row).view("<i8")[0]))

    def init_rows(self, states):
        return np.stack([self.encode(s) for s in states])

    def expand(self, rows):
        x = rows.view("<i8")[:, 0]
        parents = np.flatnonzero(x < self.n).astype(np.int64)
        succ = rows[parents].copy()
        succ.view("<i8")[:, 0] += 1
        zeros = np.zeros(len(parents), np.int64)
        return parents, zeros, zeros.copy(), succ


class WithKernel(Good):
    def batch_kernel(self):
        return Kernel(self.n)


class KernelRaises(WithKernel):
    def batch_kernel(self):
        raise NotImplementedError("the kernel is not written yet")  # broken: kernel_raises


class TwoValues(Kernel):
    def expand(self, rows):
        parents, choices, codes, succ = super().expand(rows)
        return parents, succ  # broken: two_values


class ExpandTwoValues(WithKernel):
    def batch_kernel(self):
        return TwoValues(self.n)


class ExpandRaises(Kernel):
    def expand(self, rows):
        if len(rows) and rows.view("<i8")[:, 0].max() >= 2:
            raise OverflowError("a column overflowed")  # broken: expand_raises
        return super().expand(rows)


class KernelExpandRaises(WithKernel):
    def batch_kernel(self):
        return ExpandRaises(self.n)


class DeepActionsRaise(Good):
    """Raises past the states a probe calls the model on."""

    def actions(self, state):
        if state.x == 90:
            raise KeyError("x")  # broken: deep_actions_raise
        return super().actions(state)


def deep_actions_raise(n=95):
    return DeepActionsRaise(n)


class DeepExpandRaises(Kernel):
    def expand(self, rows):
        if len(rows) and rows.view("<i8")[:, 0].max() >= 90:
            raise OverflowError("a column overflowed")  # broken: deep_expand_raises
        return super().expand(rows)


class DeepKernel(WithKernel):
    def batch_kernel(self):
        return DeepExpandRaises(self.n)


def deep_expand_raises(n=95):
    return DeepKernel(n)


def with_kernel(n=3):
    return WithKernel(n)
