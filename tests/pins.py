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


# -- producer acknowledgements (model.acks) ----------------------------------------------
#
# The specs that track acknowledgements, one per row of the acks verdict table (TLC's; plus
# acks-all-two-replicas-min-isr, the docs' worked example), run with the spec's own [check]
# options (keep-going: every reachable state). tests/test_acks.py checks them, the verdicts
# and trace lengths against that table, and the small ones against the oracle.
LCC, ANL = "LeaderCandidateCompleteness", "AcknowledgedNeverLost"
ALL6 = (HWB, CNL, LND, LEM, LCC, ANL)
ACKS_PINS = {
    "acks-all-data-loss": Pin(5589, 11568, 18, ALL6, {}, None),
    "acks1-data-loss": Pin(4355, 9341, 17, ALL6, {ANL: 4}, None),
    "acks-all-two-replicas-min-isr": Pin(2213, 4229, 20, ALL6, {CNL: 6, LCC: 5, ANL: 8}, None),
    "acks1-zombie-preferred": Pin(81506, 163456, 22, ALL6, {ANL: 3}, None),
    "acks-all-min-isr": Pin(97047, 311488, 28, ALL6, {}, None),
    "acks1-min-isr": Pin(49646, 165725, 22, ALL6, {ANL: 4}, None),
    "acks-all-lrs": Pin(175914, 583116, 28, ALL6, {CNL: 7, LCC: 6, ANL: 9}, None),
    "acks-all-lrs-gate": Pin(100230, 340572, 26, ALL6, {CNL: 9, LCC: 8, ANL: 9}, None),
    "acks-all-lrs-elr": Pin(97385, 323606, 26, ALL6, {}, None),
    "acks1-lrs-elr": Pin(91970, 312889, 24, ALL6, {ANL: 4}, None),
    "acks-all-lrs2": Pin(2683315, 9730608, 33, ALL6, {CNL: 7, LCC: 6, ANL: 9}, None),
    "acks-all-lrs2-elr": Pin(1528475, 5233966, 31, ALL6, {}, None),
    "acks-all-unclean-two-crashes": Pin(1020165, 3578586, 34, ALL6, {CNL: 6, LCC: 6, ANL: 9}, None),
    "acks-all-kip279-unclean-two-crashes": Pin(1076889, 3791710, 35, (HWB, CNL, LND, LEM, ANL),
                                               {CNL: 6, ANL: 9}, None),
}
