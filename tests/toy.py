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
    replica: int = 0  # engines read the name only (checker.protocol.action_name); the reports read this


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


# -- the same model with the protocol's defaults only --------------------------------------
# Actions without a ``name`` attribute (counted under their class's name) and no
# ``format_action``, ``describe_step`` or ``successors``: what a model owes the engines
# and nothing more.


@attrs.frozen
class IncX:
    pass


@attrs.frozen
class IncY:
    pass


def never_down_nameless(model, before, action, after):
    if after.x < before.x or after.y < before.y:
        return f"{action} decreased a counter"
    return None


NeverDownNameless = Property("NeverDown", STEP, never_down_nameless, "no counter decreases")


@attrs.frozen
class BareCounters:
    n: int = N
    limit: int = LIMIT

    def init_states(self):
        return (Counters(0, 0),)

    def actions(self, state):
        return ([IncX()] if state.x < self.n else []) + ([IncY()] if state.y < self.n else [])

    def next_state(self, state, action):
        if isinstance(action, IncX):
            return Counters(state.x + 1, state.y)
        return Counters(state.x, state.y + 1)

    def properties(self):
        return (SumBelow, NeverDownNameless)

    def encode(self, state):
        return struct.pack("<2q", state.x, state.y)
