"""A toy model that is not Kafka: two counters, for testing the engines without the Kafka model.

State ``(x, y)`` with ``0 <= x, y <= N``, starting at ``(0, 0)``. Two actions, in this
order: ``IncX`` (enabled while ``x < N``) and ``IncY`` (while ``y < N``). One invariant,
``SumBelow`` (``x + y < LIMIT``), and one step property, ``NeverDown`` (no counter
decreases; it always holds). Every count is small enough to work out by hand (see
``tests/test_oracle.py``).
"""

from __future__ import annotations

import struct

import attrs

from kmc.checker.protocol import ALWAYS, STEP, Property

N = 3
LIMIT = 5


@attrs.frozen
class Counters:
    x: int
    y: int


@attrs.frozen
class Inc:
    name: str
    replica: int = 0  # engines read action.name only; kept for the shared reports' shape


def sum_below(model, state):
    if state.x + state.y >= model.limit:
        return f"x + y = {state.x + state.y} reached {model.limit}"
    return None


def never_down(model, before, action, after):
    if after.x < before.x or after.y < before.y:
        return f"{action.name} decreased a counter"
    return None


SumBelow = Property("SumBelow", ALWAYS, sum_below, "x + y stays below the limit")
NeverDown = Property("NeverDown", STEP, never_down, "no counter decreases")


@attrs.frozen
class TwoCounters:
    n: int = N
    limit: int = LIMIT

    def init_states(self):
        return (Counters(0, 0),)

    def actions(self, state):
        out = []
        if state.x < self.n:
            out.append(Inc("IncX"))
        if state.y < self.n:
            out.append(Inc("IncY"))
        return out

    def next_state(self, state, action):
        if action.name == "IncX":
            return Counters(state.x + 1, state.y)
        return Counters(state.x, state.y + 1)

    def properties(self):
        return (SumBelow, NeverDown)

    def encode(self, state):
        return struct.pack("<2q", state.x, state.y)
