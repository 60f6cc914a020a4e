"""The local engine against an independent oracle (tests/oracle.py) and a toy model.

The oracle is a naive breadth-first search written from docs/model.md over whole states, with
no fingerprints, no kernel and none of the engine's or the reference model's code. On
every shipped spec small enough — the classic ones, the "Kafka 2.1 and later" ones (eligible
leader replicas, the HW gate), the availability ones (last-known-leader election,
PartitionRecoverable) and the acks ones — it must give the engine's distinct and generated
counts, depth, levels, shortest trace lengths and trap counts, which are also the pinned
numbers (tests/pins.py).
The toy model (tests/toy.py, two counters) tests the engine without the Kafka model,
with counts worked out by hand.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import oracle
from kmc.checker.base.errors import PropertyError
from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.contract.protocol import ALWAYS, Property
from kmc.app.specs import load_spec
from pins import (ACKS_PINS, AVAIL_PINS, CNL, HW_DATA_LOSS_KEEP_GOING, MODERN_FAST_ROWS, MODERN_SLOW_ROWS, PINS,
                  PR)
from toy import NeverDown, SumBelow, TwoCounters

ORACLE_LIMIT = 60_000  # distinct states: above this the oracle is too slow to be useful
# The oracle runs at some 5,000 states/s: the eleven specs of about 50,000 states (100,000 to
# 200,000 generated) would take minutes together, which the suite's 6-minute budget on a
# 2-core machine cannot afford. They run with KMC_ORACLE_ALL=1 (and are marked slow); every
# other spec runs in every suite.
SUITE_LIMIT = 20_000
SPECS = Path(__file__).resolve().parent.parent / "specs"
ALL_SPECS = os.environ.get("KMC_ORACLE_ALL") == "1"
SMALL = sorted(n for n, p in PINS.items() if p.distinct <= ORACLE_LIMIT)


def _param(name):
    marks = []
    if PINS[name].distinct > SUITE_LIMIT:
        marks = [pytest.mark.slow,
                 pytest.mark.skipif(not ALL_SPECS, reason="set KMC_ORACLE_ALL=1 to compare the ~50k-state specs")]
    return pytest.param(name, marks=marks, id=name)


def test_the_oracle_covers_most_specs():
    assert len(SMALL) >= 13
    assert {"hw-data-loss", "le-unflushed", "kip279-isr-expansion"} <= set(SMALL)


@pytest.mark.parametrize("name", [_param(n) for n in SMALL])
def test_engine_agrees_with_the_oracle(explorations, name):
    spec, model, result = explorations[name]
    want = oracle.explore(model.config, list(result.checked), keep_going=spec.keep_going)
    got = result.stats
    assert (got.distinct, got.generated, got.depth) == (want.distinct, want.generated, want.depth)
    assert got.levels == want.levels
    assert {p: len(v.path) for p, v in result.violations.items()} == want.traces
    pin = PINS[name]
    assert (pin.distinct, pin.generated, pin.depth, pin.traces) == (
        want.distinct, want.generated, want.depth, want.traces)


# The specs added with eligible leader replicas, the last-known-leader election and acks, each
# with its pin: (distinct, generated, depth, {property: trace length}, traps). All explore
# every reachable state (keep-going), so specs of the same configuration share one oracle
# run that checks the union of their properties (v21-unflushed and avail-c2, for instance).
LATER = {
    **{n: (d, g, depth, {p: v for p, v in row.items() if v != "holds"}, 0)
       for n, (d, depth, g, row) in {**MODERN_FAST_ROWS, **MODERN_SLOW_ROWS}.items() if d <= ORACLE_LIMIT},
    **{n: (p.distinct, p.generated, p.depth, {**p.traces, **({PR: p.trap_trace} if p.traps else {})}, p.traps)
       for n, p in AVAIL_PINS.items() if p.distinct <= ORACLE_LIMIT},
    **{n: (p.distinct, p.generated, p.depth, p.traces, 0) for n, p in ACKS_PINS.items() if p.distinct <= ORACLE_LIMIT},
}
_ORACLE_RUNS = {}


def _spec(name):
    return load_spec(SPECS / f"{name}.toml")


def _oracle_for(name):
    """The oracle's run for ``name``'s configuration, checking every property any spec of
    LATER (of the same tier) with that configuration checks; each is explored once."""
    key = repr(_spec(name).config)
    if key not in _ORACLE_RUNS:
        checked = []
        for other in LATER:
            spec = _spec(other)
            if (LATER[other][0] > SUITE_LIMIT) == (LATER[name][0] > SUITE_LIMIT) and repr(spec.config) == key:
                assert spec.keep_going, other
                checked += [p.name for p in spec.properties() if p.name not in checked]
        _ORACLE_RUNS[key] = oracle.explore(_spec(name).config, checked, keep_going=True)
    return _ORACLE_RUNS[key]


def test_the_oracle_covers_the_later_specs():
    assert {"v21-elr-unflushed", "avail-c2-elr", "avail-c2-elr-lkl", "avail-c2m2-elr-lkl",
            "acks1-data-loss", "acks-all-data-loss", "acks-all-two-replicas-min-isr"} <= set(LATER)
    assert len([n for n, pin in LATER.items() if pin[0] <= SUITE_LIMIT]) == 16


def _later_param(name):
    marks = []
    if LATER[name][0] > SUITE_LIMIT:
        marks = [pytest.mark.slow,
                 pytest.mark.skipif(not ALL_SPECS, reason="set KMC_ORACLE_ALL=1 to compare the ~50k-state specs")]
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_later_param(n) for n in sorted(LATER)])
def test_the_oracle_gives_the_pins_of_the_later_specs(explorations, name):
    """The oracle's counts, shortest traces and traps are the pins, which the default suite
    checks against the engines in tests/test_modern.py, tests/test_availability.py and
    tests/test_acks.py. With KMC_ORACLE_ALL=1 the local engine's run is also compared here,
    levels included (the default suite leaves it out: it would double the cost)."""
    spec = _spec(name)
    checked = [p.name for p in spec.properties()]
    want = _oracle_for(name)
    traces = {p: n for p, n in want.traces.items() if p in checked}
    traps = want.traps if PR in checked else 0
    assert LATER[name] == (want.distinct, want.generated, want.depth, traces, traps)
    if ALL_SPECS:
        _, _, result = explorations[name]
        got = result.stats
        assert result.complete and list(result.checked) == checked
        assert (got.distinct, got.generated, got.depth, got.levels) == (
            want.distinct, want.generated, want.depth, want.levels)
        assert {p: len(v.path) for p, v in result.violations.items()} == traces
        assert (result.violations[PR].traps if PR in result.violations else 0) == traps


def test_keep_going_explores_everything_after_every_property_failed(explorations):
    """hw-data-loss checks one property, which fails at depth 10: with keep-going the run
    no longer stops there (1,834 states) but explores all 4,913 reachable states, which
    the oracle confirms independently."""
    spec, model, _ = explorations["hw-data-loss"]
    result = LocalEngine(model, spec.properties(), Options(keep_going=True)).run()
    want = oracle.explore(model.config, [CNL], keep_going=True)
    pin = HW_DATA_LOSS_KEEP_GOING
    got = result.stats
    assert (got.distinct, got.generated, got.depth) == (want.distinct, want.generated, want.depth) == (
        pin.distinct, pin.generated, pin.depth)
    assert result.complete and result.stopped is None
    assert {p: len(v.path) for p, v in result.violations.items()} == want.traces == pin.traces


def test_oracle_finds_the_seed_scenario_by_its_own_search():
    """A deque BFS of the oracle finds the first committed-record loss at 10 states."""
    from kmc.model import Config

    cfg = Config(replicas=("A", "B"), max_messages=2, max_crashes=2, max_leader_epoch=2)
    assert oracle.shortest_path_length(cfg, lambda s: not oracle.committed_never_lost(s)) == 10


# -- the toy model: two counters, N = 3, invariant x + y < 5 -----------------------------
#
# Reachable: every (x, y) with 0 <= x, y <= 3: 4 * 4 = 16 states. The longest shortest
# path goes (0,0) -> (3,3) in 6 steps: depth 7 states. IncX is enabled in the 3 * 4 = 12
# states with x < 3, IncY in 12 too: 24 successors, so generated = 1 + 24 = 25. One
# terminal state, (3,3). Levels by x + y = 0..6: 1, 2, 3, 4, 3, 2, 1.
# SumBelow fails first where x + y = 5, at depth 6; the shortest trace has 6 states.
# Without keep-going the run stops after that level: stored = 16 - 1 ((3,3) is never
# generated) = 15; generated = 1 + successors of the states with x + y <= 4, which is
# 24 minus those of (2,3) and (3,2) (one each) = 22, so 23; depth 6.

def test_toy_model_whole_space_with_keep_going():
    result = LocalEngine(TwoCounters(), [SumBelow, NeverDown], Options(keep_going=True)).run()
    s = result.stats
    assert (s.distinct, s.generated, s.depth, s.terminal) == (16, 25, 7, 1)
    assert s.levels == [1, 2, 3, 4, 3, 2, 1]
    assert s.fired == {"IncX": 12, "IncY": 12}
    assert result.complete and result.stopped is None
    assert {p: len(v.path) for p, v in result.violations.items()} == {"SumBelow": 6}
    assert result.verdict("NeverDown") == "holds"
    # BFS in action order: the least path is IncX, IncX, IncX, IncY, IncY.
    assert [a.name for a in result.violations["SumBelow"].path.actions] == ["IncX"] * 3 + ["IncY"] * 2


def test_toy_model_stops_after_the_violating_level():
    result = LocalEngine(TwoCounters(), [SumBelow, NeverDown], Options()).run()
    s = result.stats
    assert (s.distinct, s.generated, s.depth) == (15, 23, 6)
    assert result.stopped == "violation" and not result.complete
    assert result.verdict("NeverDown") == "unknown"


def test_toy_model_max_depth():
    # depth 3: the states with x + y <= 2 (1 + 2 + 3 = 6), generated 1 + successors of
    # the 3 states with x + y <= 1 (2 each) = 7.
    result = LocalEngine(TwoCounters(), [NeverDown], Options(max_depth=3)).run()
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (6, 7, 3)
    assert result.stopped == "max-depth"


def _returns_true(model, state):
    return True


def test_a_property_returning_a_non_string_is_a_programming_error():
    bad = Property("ReturnsTrue", ALWAYS, _returns_true)
    with pytest.raises(PropertyError, match=r"property ReturnsTrue returned True \(bool\)"):
        LocalEngine(TwoCounters(), [bad]).run()
