"""Truncation in the fetch path (docs/model.md, "Kafka 2.8+: truncation in the fetch path"): the
option ``truncate_on_fetch``, the bugs ``fetch_bugs`` (KAFKA-13141, KAFKA-14704) and the property
``UncommittedNeverExposed``.

Every row of that section's known-verdict table (TLC's, on an independent TLA+ rendering) is a
spec in specs/; each runs here on the per-state engine against the table's verdicts and
shortest-trace lengths and against its pinned counts (tests/pins.py), and the small ones against
the independent oracle (tests/oracle.py). The table's sentence on UncommittedNeverExposed without
the option is checked on the four older rules. The unit tests on hand-built states pin each rule:
the epoch caches and EO, the diverging check, the follower's truncation, the two bugs.

Replicas are numbered A=0, B=1, C=2; records are (epoch, id).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import attrs
import pytest

import oracle
from helpers import assert_traces_replay, spec_runs, step
from kmc.checker.engines import make_engine
from kmc.checker.local.states import LocalEngine, Options
from kmc.invariants import BY_NAME, default_properties
from kmc.model import Config, KafkaModel, encode
from kmc.model.fetch_path import cache, diverging_epoch, end_offset_for, log_cache, truncation_on_answer
from kmc.app.specs import load_spec, parse_spec
from kmc.model.spec import SpecError
from kmc.model.state import Fetch
from pins import CNL, EXCLUDED, FETCH_PINS, LCC, LND, PINS, UNE

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
A, B, C = range(3)
H = "holds"

# docs/model.md's table, row by row: spec -> {property: "holds" or the shortest trace's length}
TABLE = {
    "fetch-c1": {CNL: H, LND: H, LCC: H, UNE: H},  # C1, []
    "fetch-c1-kafka-14704": {CNL: H, LND: 9, LCC: H, UNE: 9},
    "fetch-c1-kafka-13141": {CNL: 10, LND: 12, LCC: 8, UNE: H},
    "fetch-c1-both-bugs": {CNL: 10, LND: 9, LCC: 8, UNE: 9},
    "fetch-c2": {CNL: 6, LND: 10, LCC: 5, UNE: H},  # C2, []
    "fetch-c2-kafka-14704": {CNL: 6, LND: 9, LCC: 5, UNE: 9},
    "fetch-c2-kafka-13141": {CNL: 6, LND: 10, LCC: 5, UNE: H},
    "fetch-c2-both-bugs": {CNL: 6, LND: 9, LCC: 5, UNE: 9},
    "fetch-c4": {CNL: H, LND: H, LCC: H, UNE: H},  # C4, []
    "kafka-14704-exposure": {CNL: H, LND: 8, LCC: H, UNE: 8},  # C4, KAFKA-14704
    "kafka-13141-data-loss": {CNL: 7, LND: 9, LCC: 6, UNE: H},  # C4, KAFKA-13141
    "fetch-c4-both-bugs": {CNL: 7, LND: 7, LCC: 6, UNE: 7},
    "fetch-c5": {CNL: H, LND: H, LCC: H, UNE: H},  # C5, []
    "fetch-c5-kafka-14704": {CNL: H, LND: 10, LCC: H, UNE: 10},
    "fetch-c5-kafka-13141": {CNL: H, LND: H, LCC: 9, UNE: H},
    "fetch-c5-both-bugs": {CNL: H, LND: 10, LCC: 9, UNE: 10},
    "fetch-lrs2": {CNL: 7, LND: 13, LCC: 6, UNE: H},  # LRS2, []
    "fetch-c2-elr": {CNL: H, LND: H, LCC: H, UNE: H},  # C2, ELR
    "fetch-c2-elr-ap-be": {CNL: H, LND: H, LCC: H, UNE: H},  # C2, ELR + AP + BE
    "fetch-c2-ap-be": {CNL: 7, LND: 11, LCC: 6, UNE: H},  # C2, AP + BE
}
# The table's last column: the same configuration without truncate_on_fetch is this shipped spec,
# whose pinned verdicts the other modules check (tests/test_modern.py, tests/test_alter_partition.py).
WITHOUT = {"fetch-c1": "v21-data-loss", "fetch-c2": "v21-unflushed", "fetch-c4": "v21-fast-leader-change",
           "fetch-c5": "v21-min-isr", "fetch-lrs2": "lrs2-v21", "fetch-c2-elr": "v21-elr-unflushed",
           "fetch-c2-elr-ap-be": "kip903-two-replicas", "fetch-c2-ap-be": "ap-be-c2"}

FAST_LIMIT = 20_000  # distinct states: above, a row is marked slow
SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                          reason="1.4 million states (half an hour on the per-state engine): set KMC_SLOW=1")
ORACLE_ALL = os.environ.get("KMC_ORACLE_ALL") == "1"
ORACLE_LIMIT = 100_000  # distinct states: above, the oracle would take many minutes (LRS2)


STORIES = ("kafka-13141-data-loss", "kafka-14704-exposure")  # docs/model.md's two bugs, told as stories


def _param(name):
    distinct = FETCH_PINS[name].distinct
    marks = [] if distinct <= FAST_LIMIT else [pytest.mark.slow]
    if distinct > 1_000_000:
        marks.append(SLOW)
    elif distinct > 50_000 and name not in STORIES:  # (every row's pins on the batch engine:
        marks.append(pytest.mark.skipif(  # tests/test_fetch_kernel.py; per-state = batch there on C4)
            os.environ.get("KMC_SLOW") != "1", reason="50,000-70,000 states on the per-state engine: set KMC_SLOW=1"))
    return pytest.param(name, id=name, marks=marks)


@pytest.fixture(scope="module")
def runs():
    """spec name -> (spec, model, result) on the per-state engine, each run at most once."""
    return spec_runs(SPECS, lambda name: LocalEngine, lambda spec: Options(keep_going=spec.keep_going))


# -- the shipped specs ---------------------------------------------------------------------------

def test_every_fetch_spec_is_pinned_and_a_row():
    shipped = {p.stem for p in SPECS.glob("*.toml") if load_spec(p).config.truncate_on_fetch}
    assert shipped - set(EXCLUDED) == set(TABLE)
    assert set(FETCH_PINS) == set(TABLE)


@pytest.mark.parametrize("name", [_param(n) for n in sorted(TABLE)])
def test_row(runs, name):
    spec, model, result = runs(name)
    pin = FETCH_PINS[name]
    assert spec.title and spec.description and result.complete and result.stopped is None
    assert tuple(result.checked) == pin.checked
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (
        pin.distinct, pin.generated, pin.depth)
    lengths = {p: len(v.path) for p, v in result.violations.items()}
    assert lengths == pin.traces
    assert {p: lengths.get(p, H) for p in TABLE[name]} == TABLE[name]
    assert {p: result.verdict(p) for p in spec.expect} == {
        p: ("violated" if isinstance(v, int) else v) for p, v in TABLE[name].items()}
    assert_traces_replay(model, result)


@pytest.mark.parametrize("name", [
    pytest.param(n, id=n, marks=[] if FETCH_PINS[n].distinct <= FAST_LIMIT else [
        pytest.mark.slow, pytest.mark.skipif(not ORACLE_ALL, reason="set KMC_ORACLE_ALL=1 for the C4 and C5 rows")])
    for n in sorted(FETCH_PINS) if FETCH_PINS[n].distinct <= ORACLE_LIMIT])
def test_the_oracle_gives_the_pins(name):
    spec = load_spec(SPECS / f"{name}.toml")
    pin = FETCH_PINS[name]
    want = oracle.explore(spec.config, list(pin.checked), keep_going=True)
    assert (want.distinct, want.generated, want.depth, want.traces) == (
        pin.distinct, pin.generated, pin.depth, pin.traces)


@pytest.mark.parametrize("name", sorted(WITHOUT))
def test_the_column_without_the_option(name):
    """The table's last column: the same configuration without truncate_on_fetch is the shipped
    spec named in WITHOUT, whose pinned verdicts other modules check against that column."""
    on = load_spec(SPECS / f"{name}.toml").config
    off = load_spec(SPECS / f"{WITHOUT[name]}.toml").config
    assert Config(**{**on.as_dict(), "replicas": on.replicas, "truncate_on_fetch": False,
                     "fetch_bugs": ()}) == off


# UncommittedNeverExposed without truncate_on_fetch (the sentence under the table): it holds in C1,
# C2 and C4 under all four rules, except C4 under leader-epoch (9 states). Each configuration's
# counts are those of the shipped spec of that configuration (tests/pins.py).
_C1 = dict(replicas=("A", "B"), max_messages=2, max_crashes=2, max_leader_epoch=2)
_UNE_OFF = {
    ("C1", "high-watermark"): (None, "hw-data-loss"),
    ("C1", "leader-epoch"): (None, "le-data-loss"),
    ("C1", "leader-epoch-kip279"): (None, "kip279-data-loss"),
    ("C1", "leader-epoch-2.1"): (None, "kip279-data-loss"),
    ("C2", "high-watermark"): (None, "hw-unflushed"),
    ("C2", "leader-epoch"): (None, "le-unflushed"),
    ("C2", "leader-epoch-kip279"): (None, "kip279-unflushed"),
    ("C2", "leader-epoch-2.1"): (None, "kip279-unflushed"),
    ("C4", "high-watermark"): (None, "hw-fast-leader-change"),
    ("C4", "leader-epoch"): (9, "le-fast-leader-change"),
    ("C4", "leader-epoch-kip279"): (None, "kip279-fast-leader-change"),
    ("C4", "leader-epoch-2.1"): (None, "kip279-fast-leader-change"),
}
_CONFIGS = {"C1": _C1, "C2": dict(_C1, unflushed_loss=True),
            "C4": dict(_C1, max_messages=4, max_crashes=1, preferred_election=True)}


@pytest.mark.parametrize("key", [
    pytest.param(k, id=f"{k[0]}-{k[1]}", marks=[pytest.mark.slow] if k[0] == "C4" else []) for k in _UNE_OFF])
def test_uncommitted_never_exposed_without_the_option(key):
    trace, same = _UNE_OFF[key]
    cfg = Config(truncation=key[1], **_CONFIGS[key[0]])
    model = KafkaModel(cfg)
    assert UNE not in [p.name for p in default_properties(cfg)]  # any spec may name it
    result = make_engine(model, [BY_NAME[UNE]], Options(keep_going=True)).run()
    lengths = {p: len(v.path) for p, v in result.violations.items()}
    assert lengths == ({} if trace is None else {UNE: trace})
    pin = PINS[same] if same in PINS else None
    if same == "hw-data-loss":  # pinned as shipped (it stops at the violation): its keep-going twin
        from pins import HW_DATA_LOSS_KEEP_GOING as pin
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (
        pin.distinct, pin.generated, pin.depth)
    if key[0] != "C4":
        want = oracle.explore(cfg, [UNE], keep_going=True)
        assert (want.distinct, want.traces) == (pin.distinct, lengths)
    if trace is not None:  # the case KIP-279 fixed leaves B's never-committed record below its HW
        v = result.violations[UNE]
        assert v.explanation.startswith("B exposes record ")
        assert_traces_replay(model, result)


# -- the two bugs, told as stories ----------------------------------------------------------------

def test_the_kafka_13141_story(runs):
    """C4 with KAFKA-13141: B's record is committed by A's diverging fetch, then lost."""
    _spec, model, result = runs("kafka-13141-data-loss")
    path = result.violations[CNL].path
    assert [model.format_action(a) for a in path.actions] == [
        "Produce(A)", "ElectLeader(B)", "Produce(B)", "BecomeFollower(A)", "FetchRequest(A)", "ElectLeader(A)"]
    s = path.states
    assert s[4].replicas[A].log == ((0, 0),)  # A follows B and keeps its record
    answer = s[5].replicas[A].inflight
    assert answer == Fetch(B, 1, 0, (), 1, 0)  # B: A's epoch 0 ends at offset 0 on B
    assert s[5].replicas[B].remote_leo[A] == 1  # the bug: A's fetch offset taken as its log end
    assert s[5].committed == ((0, 1, 1),)  # B's record committed, which A lacks
    assert s[6].quorum.leader == A and s[6].replicas[A].log == ((0, 0),)
    assert len(result.violations[LCC].path) == 6
    assert result.violations[LCC].path.actions[-1].name == "FetchRequest"
    # the picture: A's fetch names its last epoch, B's diverging answer is in flight to A
    from kmc.app.render import svg
    from kmc.app.render.diagram import build

    d = build(model, result.violations[CNL])
    assert d.columns[5].events[0].label == "fetch @1 e0"
    assert d.columns[5].replicas[A].inflight == "diverging answer from B: e0 ends @0, hw 1"
    assert "diverging answer" in svg.render(d)  # the cell's text, wrapped over lines
    assert d.lost == ("0:e1·r1",)


def test_the_kafka_14704_story(runs):
    """C4 with KAFKA-14704: A takes B's HW before truncating, exposing its never-committed record."""
    _spec, model, result = runs("kafka-14704-exposure")
    v = result.violations[UNE]
    assert [model.format_action(a) for a in v.path.actions] == [
        "Produce(A)", "ElectLeader(B)", "Produce(B)", "BecomeFollower(A)", "ShrinkIsr(A)", "FetchRequest(A)",
        "FetchResponse(A)"]
    s = v.path.states
    assert s[6].replicas[A].inflight == Fetch(B, 1, 0, (), 1, 0)
    assert s[7].replicas[A].hw == 1 and s[7].replicas[A].log == ((0, 0),)
    assert s[7].replicas[A].inflight == Fetch(B, 1, 0, (), 1, 0, applied=True)  # truncation to come
    assert s[7].committed == ((0, 1, 1),) and s[7].crashes == 0
    assert v.explanation == (
        "A exposes record 0 (epoch 0) at offset 0, below its high watermark 1, but it was never committed: "
        "record 1 (epoch 1) was committed there")
    # the second half truncates: A's HW comes down to 0 with its log
    after = step(model, s[7], "FetchResponse(A)")
    assert after.replicas[A].log == () and after.replicas[A].hw == 0 and after.replicas[A].inflight is None


# -- the rules, on hand-built states ----------------------------------------------------------

def _model(**kw):
    base = dict(replicas=("A", "B"), max_messages=4, max_crashes=2, max_leader_epoch=3,
                truncation="leader-epoch-2.1", truncate_on_fetch=True)
    return KafkaModel(Config(**{**base, **kw}))


def test_end_offset_for_by_hand():
    # a cache with epochs 1 (from 0), 3 (from 2) and 4 (from 5); LEO 7
    c = ((1, 0), (3, 2), (4, 5))
    assert end_offset_for(c, 4, 7) == (4, 7)  # the largest epoch: the log end
    assert end_offset_for(c, 3, 7) == (3, 5)  # the start of the next epoch
    assert end_offset_for(c, 2, 7) == (1, 2)  # not cached: the largest epoch below, next start
    assert end_offset_for(c, 0, 7) == (0, 0)  # below every cached epoch: (E, first start)
    assert end_offset_for(c, 5, 7) is None  # above every cached epoch: undefined
    assert end_offset_for((), 0, 0) is None
    assert log_cache(((0, 0), (0, 1), (2, 2), (3, 3), (3, 4))) == ((0, 0), (2, 2), (3, 3))


def test_a_leader_caches_its_own_epoch_at_its_election(build):
    # B leads epoch 2 with records of epochs 0 and 1 only: its cache has (2, 2), its LEO
    lead = build.replica(2, log=[(0, 0), (1, 1)], epoch=2, leader=B)
    fol = build.replica(2, log=[(0, 0), (0, 2), (0, 3)], epoch=2, leader=B)
    s = build.state([fol, lead], leader=B, epoch=2)
    assert cache(s, B) == ((0, 0), (1, 1), (2, 2))
    assert cache(s, A) == ((0, 0),)  # a follower: only the epochs of its records
    # A's last epoch 0 ends at offset 1 on B: diverging, and A truncates to 1
    assert diverging_epoch(s, A, B) == (0, 1)
    assert truncation_on_answer(fol.log, 0, 1) == 1


def test_the_follower_s_truncation_by_hand():
    log = ((0, 0), (0, 1), (2, 2), (2, 3))
    assert truncation_on_answer(log, 2, 3) == 3  # F = E': min(G, O', LEO) = min(4, 3, 4)
    assert truncation_on_answer(log, 1, 5) == 2  # F = 0 != 1: min(G, LEO), G = start of epoch 2
    assert truncation_on_answer(log, 0, 1) == 1  # F = E' = 0: min(2, 1, 4)
    assert truncation_on_answer(log, 3, 2) == 2  # undefined: min(O', LEO)
    assert truncation_on_answer((), 0, 0) == 0


def test_become_follower_keeps_the_log_and_needs_no_leading_leader(build):
    model = _model()
    # the quorum elected B in epoch 1, which has crashed; A, on epoch 0, still follows
    a = build.replica(2, log=[(0, 0)], hw=1, epoch=0, leader=A)
    b = build.replica(2, alive=False, epoch=1, leader=B)
    s = build.state([a, b], leader=B, epoch=1)
    after = step(model, s, "BecomeFollower(A)")
    assert after.replicas[A].log == ((0, 0),) and after.replicas[A].hw == 1
    assert (after.replicas[A].leader, after.replicas[A].epoch) == (B, 1)
    # the atomic model asks the leader, so it waits for B to lead
    atomic = _model(truncate_on_fetch=False)
    assert "BecomeFollower(A)" not in [atomic.format_action(x) for x, _ in atomic.successors(s)]


def _diverged(build, bugs=()):
    """B leads epoch 1 with its record 1 at offset 0 and HW 1 (ISR {B}); A, following in epoch 1,
    still holds its record 0 of epoch 0 there."""
    model = _model(fetch_bugs=tuple(bugs))
    a = build.replica(2, log=[(0, 0)], epoch=1, leader=B)
    b = build.replica(2, log=[(1, 1)], hw=1, epoch=1, leader=B)
    return model, build.state([a, b], leader=B, epoch=1, isr=(B,), produced=2, committed=[(0, 1, 1)])


def test_a_diverging_fetch_gets_no_records_and_moves_nothing_on_the_leader(build):
    model, s = _diverged(build)
    after = step(model, s, "FetchRequest(A)")
    assert after.replicas[A].inflight == Fetch(B, 1, 0, (), 1, 0)
    assert after.replicas[B] == s.replicas[B] and after.committed == s.committed
    (fetch,) = [a for a in model.actions(s) if a.name == "FetchRequest"]
    assert model.describe_step(s, fetch, after) == (
        "B answers A's fetch: A's epoch 0 ends at offset 0 on B (diverging), no records, high watermark 1")
    done = step(model, after, "FetchResponse(A)")
    assert done.replicas[A].log == () and done.replicas[A].hw == 0 and done.replicas[A].inflight is None
    # the next fetch does not diverge (an empty log) and gets B's record
    again = step(model, done, "FetchRequest(A)")
    assert again.replicas[A].inflight == Fetch(B, 1, 0, ((1, 1),), 1)


def test_kafka_13141_takes_the_fetch_offset_as_the_log_end(build):
    # as _diverged, but with A still in the ISR and nothing committed yet
    a = build.replica(2, log=[(0, 0)], epoch=1, leader=B)
    b = build.replica(2, log=[(1, 1)], epoch=1, leader=B)
    s = build.state([a, b], leader=B, epoch=1, produced=2)
    after = step(_model(fetch_bugs=("KAFKA-13141",)), s, "FetchRequest(A)")
    assert after.replicas[B].remote_leo[A] == 1 and after.replicas[B].hw == 1
    assert after.committed == ((0, 1, 1),)  # B's record, which A does not have
    assert after.replicas[A].inflight == Fetch(B, 1, 0, (), 1, 0)  # the answer carries the new HW
    fixed = step(_model(), s, "FetchRequest(A)")
    assert fixed.replicas[B] == s.replicas[B] and fixed.committed == ()
    assert fixed.replicas[A].inflight == Fetch(B, 1, 0, (), 0, 0)


def test_kafka_14704_takes_the_high_watermark_first(build):
    model, s = _diverged(build, ["KAFKA-14704"])
    asked = step(model, s, "FetchRequest(A)")
    first = step(model, asked, "FetchResponse(A)")
    assert first.replicas[A].hw == 1 and first.replicas[A].log == ((0, 0),)
    assert first.replicas[A].inflight.applied
    assert UNE in [p.name for p in model.properties()]
    assert BY_NAME[UNE].check(model, first).startswith("A exposes record 0 (epoch 0) at offset 0")
    # a crash in between drops the truncation; the HW set by the first half stays (durable)
    crashed = step(model, first, "Crash(A)")
    assert crashed.replicas[A].hw == 1 and crashed.replicas[A].inflight is None
    second = step(model, first, "FetchResponse(A)")
    assert second.replicas[A].log == () and second.replicas[A].hw == 0 and second.replicas[A].inflight is None


def test_the_applied_mark_is_part_of_the_state(build):
    model, s = _diverged(build, ["KAFKA-14704"])
    first = step(model, step(model, s, "FetchRequest(A)"), "FetchResponse(A)")
    rep = first.replicas[A]
    unmarked = attrs.evolve(first, replicas=(attrs.evolve(rep, inflight=attrs.evolve(rep.inflight, applied=False)),
                                             first.replicas[B]))
    assert encode(first) != encode(unmarked)
    assert encode(first)[-16 * 8:].count(struct.pack("<q", -3)) == 1


# -- the option off: every encoding as it was; the spec keys ----------------------------------

def test_a_response_with_records_encodes_as_before(build):
    fol = build.replica(2, log=[(0, 0)], inflight=Fetch(0, 0, 1, ((0, 1),), 1))
    s = build.state([build.replica(2, log=[(0, 0), (0, 1)], hw=1), fol], produced=2, committed=[(0, 0, 0)])
    # produced, crashes, quorum (leader, epoch, |isr|, isr), committed, then each replica:
    # alive, hw, epoch, leader, remote_leo, |log|, log, and the response (leader, epoch, start,
    # leader_hw, |records|, records) or -1
    want = [2, 0, 0, 0, 2, 0, 1, 1, 0, 0, 0,
            1, 1, 0, 0, 0, 0, 2, 0, 0, 0, 1, -1,
            1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1]
    assert encode(s) == struct.pack(f"<{len(want)}q", *want)
    diverging = build.state([s.replicas[0], build.replica(2, log=[(0, 0)], inflight=Fetch(0, 0, 1, (), 1, 0))],
                            produced=2, committed=[(0, 0, 0)])
    assert encode(diverging)[-6 * 8:] == struct.pack("<6q", 0, 0, 1, 1, -2, 0)


def test_the_config_without_the_option_is_as_before():
    cfg = Config(truncation="leader-epoch-2.1")
    assert "truncate_on_fetch" not in cfg.as_dict() and "fetch_bugs" not in cfg.as_dict()
    on = Config(truncation="leader-epoch-2.1", truncate_on_fetch=True, fetch_bugs=("KAFKA-14704",))
    assert on.as_dict()["truncate_on_fetch"] is True and on.as_dict()["fetch_bugs"] == ["KAFKA-14704"]
    assert [p.name for p in default_properties(on)][-1] == UNE
    assert UNE not in [p.name for p in default_properties(cfg)]


_SPEC = '[model]\nreplicas = 2\ntruncation = "{rule}"\n{extra}'


@pytest.mark.parametrize(("rule", "extra", "key", "words"), [
    ("leader-epoch-kip279", "truncate_on_fetch = true", "model.truncate_on_fetch",
     'needs model.truncation = "leader-epoch-2.1"'),
    ("leader-epoch-2.1", 'fetch_bugs = ["KAFKA-14704"]', "model.fetch_bugs", "needs model.truncate_on_fetch = true"),
    ("leader-epoch-2.1", 'truncate_on_fetch = true\nfetch_bugs = ["KAFKA-1"]', "model.fetch_bugs",
     'unknown bug \'KAFKA-1\' (allowed: "KAFKA-13141", "KAFKA-14704")'),
    ("leader-epoch-2.1", 'truncate_on_fetch = true\nfetch_bugs = "KAFKA-14704"', "model.fetch_bugs",
     "must be a list of bug ids"),
    ("leader-epoch-2.1", "truncate_on_fetch = 1", "model.truncate_on_fetch", "must be true or false"),
])
def test_spec_errors_name_the_keys_and_the_allowed_values(rule, extra, key, words):
    with pytest.raises(SpecError) as e:
        parse_spec(_SPEC.format(rule=rule, extra=extra).encode(), "x.toml")
    assert e.value.key == key and words in str(e.value) and "\n" not in str(e.value)


def test_an_empty_fetch_bugs_list_is_the_default_whatever_the_options():
    spec = parse_spec(_SPEC.format(rule="leader-epoch-2.1", extra="fetch_bugs = []").encode(), "x.toml")
    assert spec.config == parse_spec(_SPEC.format(rule="leader-epoch-2.1", extra="").encode(), "x.toml").config


def test_fetch_bugs_are_kept_in_one_order():
    spec = parse_spec(_SPEC.format(rule="leader-epoch-2.1", extra=(
        'truncate_on_fetch = true\nfetch_bugs = ["KAFKA-14704", "KAFKA-13141", "KAFKA-14704"]')).encode())
    assert spec.config.fetch_bugs == ("KAFKA-13141", "KAFKA-14704")
    assert [p.name for p in spec.properties()][-1] == UNE


# -- the engines ------------------------------------------------------------------------------

class _NoKernelYet(KafkaModel):
    def batch_unsupported(self):
        return "this configuration has no batch form"


def test_a_model_whose_kernel_cannot_run_its_configuration_runs_per_state():
    model = _NoKernelYet(Config(truncation="leader-epoch-2.1"))
    engine = make_engine(model, None, Options())
    assert engine.path == "per-state" and engine.per_state_because == "this configuration has no batch form"
    plain = make_engine(KafkaModel(Config(truncation="leader-epoch-2.1")), None, Options())
    assert plain.path != "per-state" and plain.per_state_because is None
    asked = make_engine(model, None, Options(), per_state=True)
    assert asked.per_state_because is None  # asked for: nothing to say


def test_kmc_check_says_in_one_line_why_it_runs_per_state(monkeypatch, capsys):
    from kmc.app.cli import main

    monkeypatch.setattr(KafkaModel, "batch_unsupported", lambda self: "the kernel cannot run this")
    code = main(["check", str(SPECS / "v21-data-loss.toml"), "--no-progress"])
    _out, err = capsys.readouterr()
    assert code == 0
    assert "kmc: checked on the per-state path: the kernel cannot run this\n" in err


# -- every path with the option: symmetry, checkpoints, replay, the pictures, coverage, TLA+, explorer

def _small_three(**kw):
    """Three replicas, min ISR 2, one record, one crash: a few thousand states, both bugs."""
    return KafkaModel(Config(replicas=("A", "B", "C"), max_messages=1, max_crashes=1, max_leader_epoch=2,
                             min_insync_replicas=2, truncation="leader-epoch-2.1", truncate_on_fetch=True,
                             fetch_bugs=("KAFKA-13141", "KAFKA-14704"), **kw))


def test_symmetry_stores_one_state_per_orbit():
    """Nothing of the fetch path is a replica id but the answer's leader: the distinct count with
    symmetry is the number of orbits of every reachable state, counted here by brute force."""
    from helpers import reachable
    from kmc.model.symmetry import permute, symmetries

    model = _small_three()
    every = reachable(model, 10**6)
    perms = symmetries(model.config)
    orbits = {min(encode(permute(s, p)) for p in perms) for s in every}
    assert any(r.inflight is not None and r.inflight.diverging is not None for s in every for r in s.replicas)
    plain = LocalEngine(model, model.properties(), Options(keep_going=True)).run()
    reduced = LocalEngine(model, model.properties(), Options(keep_going=True, symmetry=True)).run()
    assert plain.stats.distinct == len(every) > reduced.stats.distinct == len(orbits)
    assert plain.violations.keys() == reduced.violations.keys()
    assert {p: len(v.path) for p, v in plain.violations.items()} == {
        p: len(v.path) for p, v in reduced.violations.items()}
    assert_traces_replay(model, reduced)
    # a diverging answer keeps its epoch and offset; only its leader is renamed
    s = next(s for s in every if s.replicas[B].inflight is not None and s.replicas[B].inflight.diverging is not None)
    f = s.replicas[B].inflight
    g = permute(s, (0, 2, 1)).replicas[C].inflight
    assert (g.leader, g.epoch, g.start, g.leader_hw, g.diverging, g.applied) == (
        f.leader if f.leader == A else 3 - f.leader, f.epoch, f.start, f.leader_hw, f.diverging, f.applied)


def test_resuming_from_every_level_gives_the_same_result():
    import pickle

    spec = load_spec(SPECS / "fetch-c1-both-bugs.toml")
    model, props = spec.model(), spec.properties()
    opts = Options(keep_going=True)
    snaps = []
    engine = make_engine(model, props, opts)
    engine.on_level = lambda e: snaps.append(pickle.dumps(e.snapshot()))
    whole = engine.run()

    def summary(r):
        st = r.stats
        return (st.distinct, st.generated, st.depth, list(st.levels), dict(st.fired), dict(st.new),
                {k: (v.explanation, v.path.init_index, v.path.choices) for k, v in r.violations.items()})

    want = summary(whole)
    assert want[:3] == (4709, 10330, 20)
    for blob in snaps[::4]:
        resumed = make_engine(model, props, opts)
        resumed.restore(pickle.loads(blob))
        assert summary(resumed.run()) == want


def test_kmc_check_checkpoints_and_resumes(tmp_path, capsys):
    """A checkpoint of the fetch path (its states hold diverging answers, applied or not) is
    written and resumed by the command: a finished run resumes to itself."""
    import json

    from kmc.app.cli import main

    ck = tmp_path / "ck"
    spec = SPECS / "fetch-c1-both-bugs.toml"
    runs = []
    for args in (["check", str(spec), "--checkpoint", str(ck)], ["check", "--resume", str(ck)]):
        out_json = tmp_path / f"r{len(runs)}.json"
        assert main([*args, "--no-progress", "--no-trace", "--json", str(out_json)]) == 1  # violations
        doc = json.loads(out_json.read_text())
        runs.append((doc["stats"]["distinct_states"], doc["stats"]["depth"],
                     {v["property"]: v["trace"]["choices"] for v in doc["violations"]}))
    capsys.readouterr()
    assert runs[0] == runs[1] and runs[0][:2] == (4709, 20)


def test_a_saved_counterexample_replays_with_its_diverging_answer(tmp_path, capsys):
    import json

    from kmc.app.cli import EXIT_OK, main
    from kmc.app.commands.replay import load_document, replay
    from kmc.app.render.json_result import state_from_dict, state_to_dict

    saved = tmp_path / "r.json"
    main(["check", str(SPECS / "kafka-14704-exposure.toml"), "--invariant", UNE, "--no-progress", "--no-trace",
          "--json", str(saved)])
    capsys.readouterr()
    model, violation = replay(str(saved), load_document(saved))
    states = violation.path.states
    assert len(states) == 8 and states[-1].replicas[A].inflight.applied
    for s in states:
        assert state_from_dict(model, json.loads(json.dumps(state_to_dict(model, s)))) == s
    last = json.loads(saved.read_text())["violations"][0]["trace"]["steps"][-1]["state"]
    assert last["replicas"]["A"]["inflight"] == {"leader": "B", "epoch": 1, "start": 0, "records": [],
                                                 "leader_hw": 1, "diverging": 0, "applied": True}
    assert main(["replay", str(saved), "--format", "tla"]) == EXIT_OK
    tla = capsys.readouterr().out
    assert ("/\\ inflight = (A :> [leader |-> B, epoch |-> 1, diverging |-> [epoch |-> 0, offset |-> 0], "
            "leader_hw |-> 1, applied |-> TRUE] @@ B :> None)") in tla


def test_the_pictures_show_the_diverging_answer_the_truncation_and_the_exposed_record(runs):
    from kmc.app.render import mermaid, svg
    from kmc.app.render.diagram import build, build_path
    from kmc.checker.core.result import Path as TracePath, Step

    _spec, model, result = runs("kafka-14704-exposure")
    d = build(model, result.violations[UNE])
    kinds = [ev.kind for col in d.columns for ev in col.events]
    assert kinds.count("diverging-response") == 1 and d.lost == ("0:e0·r0",)
    assert [b.lost for b in d.columns[-1].replicas[A].boxes] == [True]  # the exposed record, marked
    picture = svg.render(d)
    assert 'class="event diverging-response"' in picture and "hw 1 first" in picture
    assert "exposed record: 0:e0·r0 (red)" in picture
    text = mermaid.render(d)
    assert "r1--)r0: 8. FetchResponse(A): A takes B's high watermark 1 before truncating (KAFKA-14704)" in text
    assert "exposed record: 0:e0·r0" in text
    # one step further the second half truncates: drawn on A's lane
    path = result.violations[UNE].path
    after = step(model, path.states[-1], "FetchResponse(A)")
    (respond,) = [a for a in model.actions(path.states[-1]) if a.name == "FetchResponse"]
    longer = TracePath(path.steps + (Step(action=respond, state=after),))
    d2 = build_path(model, longer)
    assert d2.columns[-1].replicas[A].truncated_to == 0 and d2.columns[-1].replicas[A].dropped == 1
    assert d2.columns[-1].events[0].label == "diverging e0 @0: truncate to 0"
    assert "truncated to 0 on answer" in svg.render(d2)
    assert "A: truncated to offset 0 on the answer: empty" in mermaid.render(d2)


def test_a_picture_without_the_option_is_as_before(explorations):
    from kmc.app.render import svg
    from kmc.app.render.diagram import build

    _spec, model, result = explorations["hw-data-loss"]
    picture = svg.render(build(model, result.violations[CNL]))
    assert "magenta" not in picture and "diverging" not in picture


def test_coverage_counts_the_kinds_of_the_fetch_path():
    model = _small_three()
    result = LocalEngine(model, model.properties(), Options(keep_going=True, coverage=True)).run()
    kinds = result.stats.coverage.kinds
    assert set(kinds["FetchRequest"]) == {"records", "diverging"}
    assert set(kinds["FetchResponse"]) == {"append", "truncate", "hw-first"}
    assert sum(kinds["FetchRequest"].values()) == result.stats.fired["FetchRequest"]
    assert sum(kinds["FetchResponse"].values()) == result.stats.fired["FetchResponse"]
    plain = KafkaModel(Config(truncation="leader-epoch-2.1"))
    assert "FetchRequest" not in plain.coverage_names().kinds


def test_the_explorer_walks_the_kafka_14704_story(runs):
    from kmc.app.render.explorer import Explorer
    from kmc.app.render.explorer_views import KafkaView

    spec = load_spec(SPECS / "kafka-14704-exposure.toml")
    model = spec.model()
    explorer = Explorer(model, spec.properties(), view=KafkaView(model), title=spec.title, path=spec.path)
    # the per-state engine's run with keep_going (the spec's own): test_row's, run once in the module
    _spec, _model, result = runs("kafka-14704-exposure")
    assert _spec.keep_going
    path = result.violations[UNE].path
    doc = explorer.state_doc(path.init_index, list(path.choices))
    assert [s["action"] for s in doc["steps"]][-2:] == ["FetchRequest(A)", "FetchResponse(A)"]
    status = {p["name"]: p["status"] for p in doc["properties"]}
    assert status[UNE] == "violated" and status[CNL] == "holds"
    assert "diverging-response" in doc["diagram_svg"]


def test_the_batch_engine_refuses_a_model_its_kernel_cannot_run():
    from kmc.checker.local.rows import BatchEngine
    from kmc.checker.base.errors import EngineError

    with pytest.raises(EngineError, match=r"this configuration has no batch form \(run it with --per-state\)"):
        BatchEngine(_NoKernelYet(Config(truncation="leader-epoch-2.1")))


@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="the per-state path's result on Spark: set KMC_SLOW=1")  # (the option on Spark in every suite: tests/test_fetch_kernel.py)
def test_the_spark_engine_gives_the_per_state_result(spark_sc):
    """The Spark engine on a fetch-path spec: every level after the initial state on Spark, the same
    counts, verdicts and counterexamples as the local per-state engine."""
    from conftest import SPARK_MASTER, assert_same_spark_result
    from kmc.checker.spark.engine import SparkRowsEngine

    spec = load_spec(SPECS / "fetch-c1-both-bugs.toml")
    model = spec.model()
    options = Options(keep_going=True)
    want = LocalEngine(model, spec.properties(), options).run()
    engine = SparkRowsEngine(model, spec.properties(), options, master=SPARK_MASTER, partitions=2,
                             driver_level_limit=0)
    assert engine.path == "rows"  # the batch kernel's rows, on Spark
    assert_same_spark_result(engine.run(), want)
