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

from kmc.checker.contract.protocol import ALWAYS, ALWAYS_EVENTUALLY, LEADS_TO, STEP, Property

N = 3
LIMIT = 5


@attrs.frozen
class Counters:
    x: int
    y: int


@attrs.frozen
class Inc:
    name: str
    replica: int = 0  # engines read the name only (checker.contract.protocol.action_name); the reports read this


def sum_below(model, state):
    if state.x + state.y >= model.limit:
        return f"x + y = {state.x + state.y} reached {model.limit}"
    return None


def never_down(model, before, action, after):
    if after.x < before.x or after.y < before.y:
        return f"{model.format_action(action)} decreased a counter"
    return None


SumBelow = Property("SumBelow", ALWAYS, sum_below, "x + y stays below the limit")
NeverDown = Property("NeverDown", STEP, never_down, "no counter decreases")


@attrs.frozen
class _Counters:
    """What both toy models share: the bounds, the initial state, the properties and the
    encoding."""

    n: int = N
    limit: int = LIMIT

    def init_states(self):
        return (Counters(0, 0),)

    def properties(self):
        return (SumBelow, NeverDown)

    def encode(self, state):
        return struct.pack("<2q", state.x, state.y)

    def action_names(self):  # what the Spark engine counts actions by (checker.contract.protocol)
        return ("IncX", "IncY")


@attrs.frozen
class TwoCounters(_Counters):
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


@attrs.frozen
class BareCounters(_Counters):
    def actions(self, state):
        return ([IncX()] if state.x < self.n else []) + ([IncY()] if state.y < self.n else [])

    def next_state(self, state, action):
        if isinstance(action, IncX):
            return Counters(state.x + 1, state.y)
        return Counters(state.x, state.y + 1)


# -- a ring, for liveness under fairness ----------------------------------------------------
# State ``Counters(x, y)``: ``x`` goes round ``0 .. n - 1`` by ``Next`` (always enabled), and
# ``Finish`` (enabled while ``x == n - 1`` and ``y == 0``) sets ``y`` to 1 for good. ``Next``
# is weakly fair when ``fair`` (``Finish`` never is). ``ReturnsToZero`` (``[]<>(x = 0)``) then
# holds: ``Next`` is enabled everywhere, so a fair behaviour goes round; without fairness a
# behaviour may stop at ``x = 1``. ``OneLeadsToFinish`` (``x = 1 ~> y = 1``) fails either
# way: a fair behaviour may go round for ever without ``Finish``.


def returns_to_zero(model, state):
    return None if state.x == 0 else f"x is {state.x}"


def one_leads_to_finish(model, state):
    return state.x == 1, state.y == 1


ReturnsToZero = Property("ReturnsToZero", ALWAYS_EVENTUALLY, returns_to_zero, "x comes back to 0 again and again")
OneLeadsToFinish = Property("OneLeadsToFinish", LEADS_TO, one_leads_to_finish, "once x is 1, y becomes 1")


@attrs.frozen
class Ring:
    n: int = 3
    fair: bool = True

    def init_states(self):
        return (Counters(0, 0),)

    def actions(self, state):
        return [Inc("Next")] + ([Inc("Finish")] if state.x == self.n - 1 and state.y == 0 else [])

    def next_state(self, state, action):
        if action.name == "Next":
            return Counters((state.x + 1) % self.n, state.y)
        return Counters(state.x, 1)

    def properties(self):
        return (ReturnsToZero, OneLeadsToFinish)

    def encode(self, state):
        return struct.pack("<2q", state.x, state.y)

    def action_names(self):
        return ("Next", "Finish")

    def fair_instances(self):
        return ("Next",) if self.fair else ()

    def fair_instance(self, state, action):
        return "Next" if self.fair and action.name == "Next" else None
