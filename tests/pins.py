"""The pinned numbers of every shipped spec: the one table the tests read them from.

The numbers follow docs/model.md's counting (TLC's): distinct states include the initial
state, states generated = 1 + every successor computed, depth = states on the longest
shortest path, a trace's length = its number of states. Each row is what the local
engine reports for the spec as shipped (its own ``[check]`` options). A change to any of
them is a change to the transition system (or to an engine) and must be explained, not
re-pinned blindly; ``tests/test_oracle.py`` recomputes them with an independent checker.
"""

from __future__ import annotations

from typing import NamedTuple

CNL, LND = "CommittedNeverLost", "LogsNeverDiverge"
HWB, LEM = "HighWatermarkBelowLogEnd", "LeaderEpochMonotonic"
ALL4 = (HWB, CNL, LND, LEM)


class Pin(NamedTuple):
    distinct: int
    generated: int
    depth: int
    checked: tuple  # the properties the spec checks, in order
    traces: dict  # violated property -> shortest counterexample length (states)
    stopped: str | None  # why the run stopped (None: it ran out of states)


PINS = {
    "hw-data-loss": Pin(1834, 3455, 10, (CNL,), {CNL: 10}, "violation"),
    "hw-divergence": Pin(3754, 7696, 10, (LND,), {LND: 10}, "violation"),
    "hw-fast-leader-change": Pin(76116, 154855, 28, ALL4, {CNL: 9, LND: 12}, None),
    "hw-unclean": Pin(5548, 12276, 21, ALL4, {CNL: 5, LND: 8}, None),
    "hw-unflushed": Pin(10717, 25566, 20, ALL4, {CNL: 6, LND: 10}, None),
    "kip279-data-loss": Pin(4267, 9202, 17, ALL4, {}, None),
    "kip279-fast-leader-change": Pin(47577, 98343, 22, ALL4, {}, None),
    "kip279-isr-expansion": Pin(51649, 181744, 23, ALL4, {CNL: 13}, None),
    "kip279-unclean": Pin(4770, 10406, 17, ALL4, {CNL: 5}, None),
    "kip279-unflushed": Pin(10652, 24480, 19, ALL4, {CNL: 6}, None),
    "le-data-loss": Pin(4274, 9213, 17, ALL4, {}, None),
    "le-fast-leader-change": Pin(48499, 100059, 22, ALL4, {LND: 9}, None),
    "le-three-replicas": Pin(50294, 168775, 24, ALL4, {}, None),
    "le-unclean": Pin(4958, 10787, 19, ALL4, {CNL: 5, LND: 8}, None),
    "le-unflushed": Pin(10960, 25087, 20, ALL4, {CNL: 6, LND: 10}, None),
}

# Specs not pinned here, each with the reason.
EXCLUDED = {
    "three-replicas-large": "a benchmark (2,843,518 states), measured by `kmc bench`, too slow for the suite",
    "three-replicas-huge": "a benchmark (tens of millions of states), measured by `kmc bench`, too slow for the suite",
}

# hw-data-loss run with keep-going (every reachable state: the run does not stop once its
# only property has failed). Recomputed by the oracle in tests/test_oracle.py.
HW_DATA_LOSS_KEEP_GOING = Pin(4913, 10749, 20, (CNL,), {CNL: 10}, None)

# Specs whose exploration takes several seconds: their tests are marked slow, so that
# `pytest -m "not slow and not spark"` never explores them.
SLOW_ABOVE = 20_000


def spec_param(name):
    """``pytest.param(name)``, marked slow when the spec has more than SLOW_ABOVE states."""
    import pytest

    pin = PINS.get(name)
    marks = [pytest.mark.slow] if pin is not None and pin.distinct > SLOW_ABOVE else []
    return pytest.param(name, marks=marks, id=name)
