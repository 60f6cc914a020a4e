"""Every shipped spec, run through the local engine, against pinned numbers.

The numbers follow docs/model.md's counting (TLC's): distinct states include the initial
state, states generated = 1 + every successor computed, depth = states on the longest
shortest path, a trace's length = its number of states. The numbers live in
``tests/pins.py``; a change to any of them is a change to the transition system (or to
the engine) and must be explained, not re-pinned blindly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.contract.protocol import ALWAYS
from kmc.checker.core.result import HOLDS, VIOLATED
from kmc.checker.core.trace import replay_choices
from kmc.invariants import BY_NAME, CLASSIC
from kmc.model import HIGH_WATERMARK, LEADER_EPOCH, LEADER_EPOCH_KIP279, Config, KafkaModel
from kmc.app.specs import load_spec
from kmc.model.truncation import offsets_for_leader_epoch

from pins import ALL4, CNL, EXCLUDED, HWB, LEM, LND, PINS, spec_param

SPECS = Path(__file__).resolve().parent.parent / "specs"

PINNED = PINS


@pytest.fixture(scope="module")
def runs(explorations):
    return explorations


def actions(model, violation):
    return [model.format_action(a) for a in violation.path.actions]


# -- coverage of specs/ ----------------------------------------------------------------


def test_every_spec_is_pinned_or_excluded():
    # Specs of docs/model.md's "Kafka 2.1 and later" (the 2.1 rule, the HW gate, the ELR) are pinned by
    # tests/test_modern.py, which checks that it covers every one of them.
    # Specs that track acknowledgements (model.acks) are pinned by tests/test_acks.py.
    # The liveness specs (live-*) are pinned by tests/test_liveness_kafka.py.
    shipped = {p.stem for p in SPECS.glob("*.toml")
               if not load_spec(p).config.modern and load_spec(p).config.acks is None
               and not p.stem.startswith("live-")}
    unpinned = shipped - set(PINNED) - set(EXCLUDED)
    assert not unpinned, f"spec(s) with no pinned numbers: {sorted(unpinned)}"
    missing = set(PINNED) - shipped
    assert not missing, f"pinned spec(s) no longer shipped: {sorted(missing)}"
    assert not set(PINNED) & set(EXCLUDED)


# -- pinned numbers --------------------------------------------------------------------


@pytest.mark.parametrize("name", [spec_param(n) for n in sorted(PINNED)])
def test_spec_counts(runs, name):
    distinct, generated, depth = PINNED[name][:3]
    _, _, result = runs[name]
    assert (result.stats.distinct, result.stats.depth, result.stats.generated) == (distinct, depth, generated)
    assert result.engine == "local"


@pytest.mark.parametrize("name", [spec_param(n) for n in sorted(PINNED)])
def test_spec_verdicts_and_trace_lengths(runs, name):
    _, _, _, checked, violated, stopped = PINNED[name]
    spec, model, result = runs[name]
    assert tuple(result.checked) == checked
    for prop in checked:
        assert result.verdict(prop) == (VIOLATED if prop in violated else HOLDS), prop
    assert {p: len(v.path) for p, v in result.violations.items()} == violated
    assert result.stopped == stopped
    # A run that stops at the first violation has unexplored states left; one that ran
    # out of states is complete.
    assert result.complete == (stopped is None)


@pytest.mark.parametrize("name", [spec_param(n) for n in sorted(PINNED)])
def test_spec_expect_table_matches(runs, name):
    spec, _, result = runs[name]
    assert spec.expect, f"{name} has no [expect] table"
    for prop, want in spec.expect.items():
        assert result.verdict(prop) == want, prop
    # Every checked invariant has an expectation, so the spec documents its whole verdict.
    assert set(spec.expect) == set(result.checked)


@pytest.mark.parametrize("name", [spec_param(n) for n in sorted(PINNED)])
def test_spec_traces_replay_and_end_in_violation(runs, name):
    _, model, result = runs[name]
    for prop, v in result.violations.items():
        path = v.path
        assert replay_choices(model, path.init_index, path.choices) == path
        assert path.steps[0].action is None
        assert path.states[0] == model.init_states()[0]
        p = BY_NAME[prop]
        assert p.kind == ALWAYS
        assert p.check(model, path.states[-1]) == v.explanation
        # Shortest: no earlier state on the path violates it.
        assert all(p.check(model, s) is None for s in path.states[:-1])


# -- the two seed scenarios and the KIP-279 case -----------------------------------------


def test_seed_scenario_1_hw_data_loss(runs):
    _, model, result = runs["hw-data-loss"]
    v = result.violations[CNL]
    assert actions(model, v) == [
        "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)",
        "Crash(A)", "Crash(B)", "Restart(B)", "BecomeFollower(B)", "ElectLeader(B)"]
    assert v.explanation == "record 0 (epoch 0) at offset 0 was committed but leader B's log ends at 0"
    states = v.path.states
    # The second FetchRequest commits record 0 on A; the response that would tell B is in
    # flight when B crashes, so B's HW is still 0.
    assert states[4].replicas[0].hw == 1 and states[4].committed == ((0, 0, 0),)
    assert states[4].replicas[1].hw == 0 and states[4].replicas[1].inflight is not None
    # BecomeFollower truncates B to that stale HW.
    assert states[8].replicas[1].log == ()


def test_seed_scenario_2_hw_divergence(runs):
    _, model, result = runs["hw-divergence"]
    v = result.violations[LND]
    assert actions(model, v) == [
        "Produce(A)", "ShrinkIsr(B)", "FetchRequest(B)", "FetchResponse(B)",
        "Crash(A, keeps 0)", "Restart(A)", "ElectLeader(A)", "Produce(A)", "BecomeFollower(B)"]
    assert v.explanation == (
        "replicas A and B disagree at offset 0, below both high watermarks (A 1, B 1): "
        "A holds record 1 (epoch 1), B holds record 0 (epoch 0)")
    last = v.path.states[-1]
    assert last.replicas[1].log == ((0, 0),)     # B kept its record: its HW said so
    assert last.replicas[0].log == ((1, 1),)


@pytest.mark.slow
def test_le_fast_leader_change_is_the_kip279_story(runs):
    _, model, result = runs["le-fast-leader-change"]
    v = result.violations[LND]
    assert actions(model, v) == [
        "Produce(A)", "ElectLeader(B)", "Produce(B)", "ElectLeader(A)", "Produce(A)",
        "BecomeFollower(B)", "FetchRequest(B)", "FetchResponse(B)"]
    assert v.explanation == (
        "replicas A and B disagree at offset 0, below both high watermarks (A 1, B 1): "
        "A holds record 0 (epoch 0), B holds record 1 (epoch 1)")
    s = v.path.states
    A, B = 0, 1
    # A holds an unreplicated record when leadership moves to B (A still alive).
    assert s[1].replicas[A].log == ((0, 0),) and s[1].replicas[B].log == ()
    assert s[2].quorum.leader == B and s[2].replicas[A].alive
    # B writes its own record at that offset, in its epoch 1.
    assert s[3].replicas[B].log == ((1, 1),)
    # Straight back to A, which writes in its new epoch 2.
    assert s[4].quorum.leader == A and s[4].quorum.epoch == 2
    assert s[5].replicas[A].log == ((0, 0), (2, 2))
    # B asks for the end of its epoch 1 and gets its own log end, so keeps its record.
    assert offsets_for_leader_epoch(s[5].replicas[A].log, 1) == len(s[5].replicas[B].log) == 1
    assert s[6].replicas[B].log == ((1, 1),)
    # ... a record A never had.
    assert (1, 1) not in s[-1].replicas[A].log
    assert s[-1].replicas[B].log == ((1, 1), (2, 2))


# -- docs/model.md's table of known verdicts, all 12 cells --------------------------------------


def _row(rule, row):
    base = dict(replicas=("A", "B"), truncation=rule, min_insync_replicas=1)
    if row == "fast":
        return Config(**base, max_messages=4, max_crashes=1, max_leader_epoch=2, preferred_election=True)
    extra = {"clean": {}, "unflushed": {"unflushed_loss": True},
             "unclean": {"unclean_leader_election": True}}[row]
    return Config(**base, max_messages=2, max_crashes=2, max_leader_epoch=2, **extra)


V, H = VIOLATED, HOLDS
# (row, rule): (spec that covers the cell or None, {CNL: verdict, LND: verdict})
KNOWN = {
    ("clean", HIGH_WATERMARK): ("hw-data-loss", {CNL: V, LND: V}),  # LND: see below
    ("clean", LEADER_EPOCH): ("le-data-loss", {CNL: H, LND: H}),
    ("clean", LEADER_EPOCH_KIP279): ("kip279-data-loss", {CNL: H, LND: H}),
    ("unflushed", HIGH_WATERMARK): ("hw-unflushed", {CNL: V, LND: V}),
    ("unflushed", LEADER_EPOCH): ("le-unflushed", {CNL: V, LND: V}),
    ("unflushed", LEADER_EPOCH_KIP279): ("kip279-unflushed", {CNL: V, LND: H}),
    ("unclean", HIGH_WATERMARK): ("hw-unclean", {CNL: V, LND: V}),
    ("unclean", LEADER_EPOCH): ("le-unclean", {CNL: V, LND: V}),
    ("unclean", LEADER_EPOCH_KIP279): ("kip279-unclean", {CNL: V, LND: H}),
    ("fast", HIGH_WATERMARK): ("hw-fast-leader-change", {CNL: V, LND: V}),
    ("fast", LEADER_EPOCH): ("le-fast-leader-change", {CNL: H, LND: V}),
    ("fast", LEADER_EPOCH_KIP279): ("kip279-fast-leader-change", {CNL: H, LND: H}),
}


def test_known_verdict_table_is_complete():
    rows = {"clean", "unflushed", "unclean", "fast"}
    assert set(KNOWN) == {(r, t) for r in rows for t in (HIGH_WATERMARK, LEADER_EPOCH, LEADER_EPOCH_KIP279)}


@pytest.mark.parametrize("cell", [pytest.param(c, marks=spec_param(KNOWN[c][0]).marks, id="-".join(c))
                                  for c in sorted(KNOWN)])
def test_known_verdict(runs, cell):
    name, want = KNOWN[cell]
    spec, _, result = runs[name]
    assert spec.config == _row(cell[1], cell[0]), f"{name} is not the configuration of {cell}"
    for prop, verdict in want.items():
        if prop in result.checked:
            assert result.verdict(prop) == verdict, (cell, prop)
        else:
            # hw-data-loss checks CNL only: its LND cell is run below.
            assert cell == ("clean", HIGH_WATERMARK) and prop == LND


@pytest.fixture(scope="module")
def hw_clean_all():
    """The first row under high-watermark, every property of the pre-2.1 model, run to the end."""
    model = KafkaModel(_row(HIGH_WATERMARK, "clean"))
    return model, LocalEngine(model, list(CLASSIC), Options(keep_going=True)).run()


def test_known_verdict_hw_clean_all_properties(hw_clean_all):
    model, result = hw_clean_all
    assert (result.stats.distinct, result.stats.depth, result.stats.generated) == (4913, 20, 10749)
    assert result.complete
    assert {p: result.verdict(p) for p in ALL4} == {HWB: H, CNL: V, LND: V, LEM: H}
    assert {p: len(v.path) for p, v in result.violations.items()} == {CNL: 10, LND: 13}
    # LND: seed scenario 1, then the new leader B writes at offset 0 and the restarted A,
    # trusting its HW, keeps its own record there.
    assert actions(model, result.violations[LND]) == [
        "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)",
        "Crash(A)", "Crash(B)", "Restart(B)", "BecomeFollower(B)", "ElectLeader(B)",
        "Produce(B)", "Restart(A)", "BecomeFollower(A)"]
    assert result.violations[LND].explanation == (
        "replicas A and B disagree at offset 0, below both high watermarks (A 1, B 1): "
        "A holds record 0 (epoch 0), B holds record 1 (epoch 1)")
    # The CNL trace is seed scenario 1's, whatever else is checked.
    assert len(result.violations[CNL].path) == 10


@pytest.mark.slow
def test_isr_expansion_finding_trace(runs):
    """ExpandIsr compares the follower with a new leader's lagging HW: C, with an empty log,
    rejoins the ISR and is then cleanly elected, losing a committed record."""
    _, model, result = runs["kip279-isr-expansion"]
    v = result.violations[CNL]
    assert actions(model, v) == [
        "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)", "ShrinkIsr(C)",
        "Crash(A)", "Restart(A)", "ElectLeader(B)", "BecomeFollower(C)", "ExpandIsr(C)",
        "Crash(B)", "ElectLeader(C)",
    ]
    assert v.explanation == "record 0 (epoch 0) at offset 0 was committed but leader C's log ends at 0"
    before_expand = v.path.states[-4]
    assert before_expand.replicas[1].hw == 0 and before_expand.replicas[2].log == ()
    assert (0, 0, 0) in before_expand.committed
