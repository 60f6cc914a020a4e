"""Producer acknowledgements: ``acks = "all" | "1"``, zombie writes and AcknowledgedNeverLost.

Every row of the model's acks verdict table is a shipped spec (``specs/acks*.toml``); each is
run here against that table's verdicts and shortest-trace lengths (TLC's, on an independent
rendering), against its ``[expect]`` table, and against the distinct / generated / depth
counts pinned in ``tests/pins.py``. Those of at most 20,000 states are also explored by the
independent oracle (tests/oracle.py) and by both the per-state and the batch engine. The
four rows of one to three million states run only with ``KMC_SLOW=1``.

Replicas are numbered A=0, B=1; records are (epoch, id).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
from kmc.checker.local.rows import BatchEngine
from kmc.checker.base.errors import SpecError, UsageError
from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.core.result import HOLDS
from kmc.invariants import CLASSIC, MODERN, AcknowledgedNeverLost, default_properties
from kmc.model import LEADER_EPOCH_21, TRUNCATION_RULES, Config, KafkaModel, encode
from kmc.model.batch import KafkaBatchKernel
from kmc.model.kafka import Action
from kmc.model.rows import RowCodec
from kmc.app.specs import load_spec, parse_spec
from kmc.model.symmetry import permute, symmetries
from helpers import assert_same_successors, assert_traces_replay, random_walk, reachable, spec_runs
from pins import ACKS_PINS, ANL, CNL

SPECS = Path(__file__).resolve().parent.parent / "specs"
A, B = range(2)
H = HOLDS
ORACLE_LIMIT = 20_000

# The acks verdict table (TLC, independent rendering): spec -> {CNL, ANL: "holds" or shortest
# trace length}. EXAMPLE is not a row of it: the docs' worked example, checked by the oracle.
TABLE = {
    "acks-all-data-loss": {CNL: H, ANL: H},  # C1, "all"
    "acks1-data-loss": {CNL: H, ANL: 4},  # C1, "1"
    "acks1-zombie-preferred": {CNL: H, ANL: 3},  # C4, "1"
    "acks-all-min-isr": {CNL: H, ANL: H},  # C5, "all"
    "acks1-min-isr": {CNL: H, ANL: 4},  # C5, "1"
    "acks-all-lrs": {CNL: 7, ANL: 9},  # LRS, "all"
    "acks-all-lrs-gate": {CNL: 9, ANL: 9},  # LRS + hw_requires_min_isr, "all"
    "acks-all-lrs-elr": {CNL: H, ANL: H},  # LRS + ELR, "all"
    "acks1-lrs-elr": {CNL: H, ANL: 4},  # LRS + ELR, "1"
    "acks-all-lrs2": {CNL: 7, ANL: 9},  # LRS with 2 crashes, "all"
    "acks-all-lrs2-elr": {CNL: H, ANL: H},  # LRS with 2 crashes + ELR, "all"
    "acks-all-lrs2-elr-lkl": {CNL: 11, ANL: 11},  # LRS with 2 crashes + ELR + last known leader, "all"
    "acks-all-unclean-two-crashes": {CNL: 6, ANL: 9},  # S8b, "all"
    "acks-all-kip279-unclean-two-crashes": {CNL: 6, ANL: 9},  # S8b under kip279, "all"
}
EXAMPLE = {"acks-all-two-replicas-min-isr": {CNL: 6, ANL: 8}}
HUGE = {"acks-all-lrs2", "acks-all-lrs2-elr", "acks-all-lrs2-elr-lkl", "acks-all-unclean-two-crashes",
        "acks-all-kip279-unclean-two-crashes"}  # one to three million states each
SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                          reason="one to three million states (seconds each on the batch engine): set KMC_SLOW=1")


def _param(name):
    return pytest.param(name, id=name, marks=[pytest.mark.slow, SLOW] if name in HUGE else [])


SMALL = [n for n, p in ACKS_PINS.items() if p.distinct <= ORACLE_LIMIT]


@pytest.fixture(scope="module")
def runs():
    """spec name -> (spec, model, result) on the batch engine, each run at most once."""
    return spec_runs(SPECS, lambda name: BatchEngine, lambda spec: Options(keep_going=spec.keep_going))


# -- the shipped specs ---------------------------------------------------------------------

def test_every_acks_spec_is_pinned_and_a_row():
    # (those with alter_partition too are tests/test_alter_partition.py's)
    shipped = {p.stem for p in SPECS.glob("*.toml")
               if load_spec(p).config.acks is not None and not load_spec(p).config.alter_partition}
    assert shipped == set(ACKS_PINS) == set(TABLE) | set(EXAMPLE)
    assert len(SMALL) >= 3


@pytest.mark.parametrize("name", [_param(n) for n in ACKS_PINS])
def test_row(runs, name):
    spec, _, result = runs(name)
    pin = ACKS_PINS[name]
    assert spec.title and spec.expect and result.complete and result.stopped is None
    assert tuple(result.checked) == pin.checked
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (
        pin.distinct, pin.generated, pin.depth)
    lengths = {p: len(v.path) for p, v in result.violations.items()}
    assert lengths == pin.traces
    want = {**TABLE, **EXAMPLE}[name]
    assert {p: lengths.get(p, H) for p in want} == want
    assert {p: result.verdict(p) for p in result.checked} == spec.expect


@pytest.mark.parametrize("name", [_param(n) for n in ACKS_PINS])
def test_row_traces_replay_and_are_shortest(runs, name):
    _, model, result = runs(name)
    assert_traces_replay(model, result)


@pytest.mark.parametrize("name", SMALL)
def test_oracle_agrees(name):
    """The independent oracle, the per-state engine and the batch engine agree on every
    acks spec of at most 20,000 states: counts, levels, shortest traces."""
    spec = load_spec(SPECS / f"{name}.toml")
    model = spec.model()
    opts = Options(keep_going=spec.keep_going)
    local = LocalEngine(model, spec.properties(), opts).run()
    batch = BatchEngine(model, spec.properties(), opts).run()
    want = oracle.explore(model.config, list(local.checked), keep_going=spec.keep_going)
    for got in (local, batch):
        assert (got.stats.distinct, got.stats.generated, got.stats.depth) == (
            want.distinct, want.generated, want.depth)
        assert got.stats.levels == want.levels
        assert {p: len(v.path) for p, v in got.violations.items()} == want.traces
    assert (local.stats.fired, local.stats.terminal) == (batch.stats.fired, batch.stats.terminal)
    for k, v in local.violations.items():
        w = batch.violations[k]
        assert (v.path.choices, v.explanation, v.path.states) == (w.path.choices, w.explanation, w.path.states)


# The larger specs the oracle can run (under 200,000 states): seconds each, with
# KMC_ORACLE_ALL=1 as in tests/test_oracle.py.
LARGER = [n for n, p in ACKS_PINS.items() if ORACLE_LIMIT < p.distinct < 200_000]


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("KMC_ORACLE_ALL") != "1", reason="set KMC_ORACLE_ALL=1")
@pytest.mark.parametrize("name", LARGER)
def test_oracle_agrees_on_the_larger_specs(runs, name):
    spec, model, result = runs(name)
    want = oracle.explore(model.config, list(result.checked), keep_going=spec.keep_going)
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (
        want.distinct, want.generated, want.depth)
    assert {p: len(v.path) for p, v in result.violations.items()} == want.traces


# -- per-state and batch successors ----------------------------------------------------------

_CONFIGS = st.builds(
    lambda gate, elr, **kw: Config(hw_requires_min_isr=gate or elr, eligible_leader_replicas=elr, **kw),
    gate=st.booleans(),
    elr=st.booleans(),
    acks=st.sampled_from(["all", "1"]),
    replicas=st.sampled_from([("A", "B"), ("A", "B", "C")]),
    max_messages=st.integers(0, 3),
    max_crashes=st.integers(0, 2),
    max_leader_epoch=st.integers(0, 3),
    truncation=st.sampled_from(TRUNCATION_RULES),
    min_insync_replicas=st.integers(1, 2),
    unclean_leader_election=st.booleans(),
    unflushed_loss=st.booleans(),
    preferred_election=st.booleans(),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=_CONFIGS, walk=st.lists(st.integers(0, 10**6), min_size=1, max_size=30))
def test_batch_successors_equal_the_model_along_random_walks(config, walk):
    model = KafkaModel(config)
    assert_same_successors(model, random_walk(model, model.init_states()[0], walk))


def test_batch_successors_equal_the_model_with_zombies():
    """The first 1,500 states of the zombie spec, where a deposed leader still produces."""
    model = load_spec(SPECS / "acks1-zombie-preferred.toml").model()
    states = reachable(model, 1500)
    assert any(s.produced and any(r.leader == i and r.alive and s.quorum.leader != i
                                  for i, r in enumerate(s.replicas)) for s in states)
    assert_same_successors(model, states)


# -- acks = "all" is a history variable ----------------------------------------------------

def test_acks_all_only_adds_a_history_variable():
    """``acks = "all"`` changes no guard: forgetting ``acked``, the reachable states are
    exactly those without ``acks``. The counts still differ, even with min ISR 1: a record
    that a *later* leader commits (an election's HW step, or the HW of a leader elected
    since) is committed but was never acknowledged, because its produce request died with
    the leader it was sent to. So ``acked`` is not a function of ``committed`` and splits
    states that agree on everything else. Every acknowledged record is committed."""
    plain = Config(replicas=("A", "B"), max_messages=2, max_crashes=2, truncation=LEADER_EPOCH_21)
    with_acks = Config(**{**plain.as_dict(), "replicas": plain.replicas, "acks": "all"})
    a, b = (set(reachable(KafkaModel(c), 10**6)) for c in (plain, with_acks))
    assert len(a) == 4267 and len(b) == 5589  # v21-data-loss and acks-all-data-loss
    assert {s.__class__(s.replicas, s.quorum, s.produced, s.crashes, s.committed) for s in b} == a
    assert all(set(s.acked) <= set(s.committed) for s in b)
    late = [s for s in b if set(s.committed) - set(s.acked)]
    assert late and all(s.quorum.epoch > 0 for s in late)  # min ISR 1: only a later leader


@pytest.mark.parametrize("extra, equal", [
    ({"min_insync_replicas": 1}, True),
    ({"min_insync_replicas": 2, "hw_requires_min_isr": True}, True),
    ({"min_insync_replicas": 2}, False),
])
def test_acks_all_counts_equal_without_elections_when_min_isr_cannot_be_missed(extra, equal):
    """Without elections (``max_leader_epoch = 0``) every commit is by the leader of the
    records' own epoch, so ``acked`` differs from ``committed`` only by records the HW
    passed while the ISR was below min ISR. With min ISR 1 the ISR (which always holds the
    leader) is never below it, and with the HW gate the HW does not move while it is: then
    ``acked = committed`` in every state and the counts are those without ``acks``. With
    min ISR 2 and no gate, ShrinkIsr lets the HW pass records the producer is refused, and
    the counts differ."""
    base = dict(replicas=("A", "B", "C"), max_messages=2, max_crashes=1, max_leader_epoch=0,
                truncation=LEADER_EPOCH_21, unflushed_loss=True, **extra)
    counts = []
    for acks in (None, "all"):
        cfg = Config(acks=acks, **base)
        r = BatchEngine(KafkaModel(cfg), default_properties(cfg), Options(keep_going=True)).run()
        counts.append((r.stats.distinct, r.stats.generated, r.stats.depth))
    assert (counts[0] == counts[1]) is equal, counts


# -- the trace: acknowledgements, refusals and zombies -----------------------------------------

def test_a_zombie_write_is_shown_as_one():
    """ElectLeader(B) by preferred election, then Produce(A) by the deposed A: acknowledged
    (acks=1) and lost in 3 states, as fast as the ordinary failover the search prints."""
    model = load_spec(SPECS / "acks1-zombie-preferred.toml").model()
    s0 = model.init_states()[0]
    s1 = model.next_state(s0, Action("ElectLeader", B))
    assert Action("Produce", A) in model.actions(s1) and Action("Produce", B) in model.actions(s1)
    s2 = model.next_state(s1, Action("Produce", A))
    assert s2.acked == ((0, 0, 0),) and s2.committed == ()
    text = model.describe_step(s1, Action("Produce", A), s2)
    assert text == ("A appends record 0 (epoch 0) at offset 0; the producer is told record 0 (epoch 0) "
                    "at offset 0 is written (acks=1); A still believes it leads epoch 0; the controller "
                    "moved leadership to B in epoch 1")
    assert AcknowledgedNeverLost.check(model, s2) == (
        "the producer was told record 0 (epoch 0) at offset 0 is written (acks=1) but leader B's log "
        "ends at 0; only A still holds it")

    # nothing shorter exists (the oracle's own search); the failover's last state is this one
    assert oracle.shortest_path_length(model.config, lambda t: not oracle.acknowledged_never_lost(t)) == 3
    failover = model.next_state(model.next_state(s0, Action("Produce", A)), Action("ElectLeader", B))
    assert failover == s2


def test_a_record_committed_below_min_isr_is_refused_not_acknowledged(runs):
    """Last replica standing: the 7-state CNL loss is of a record the producer was refused
    (the HW passed it with the ISR at {A}); the 9-state ANL loss names the acknowledged
    record and where it was lost."""
    _, model, result = runs("acks-all-lrs")
    cnl = result.violations[CNL].path
    notes = [model.describe_step(b, a, s) for b, a, s in zip(cnl.states, cnl.actions, cnl.states[1:])]
    assert any("NOT_ENOUGH_REPLICAS_AFTER_APPEND" in n for n in notes)
    assert not cnl.states[-1].acked
    anl = result.violations[ANL]
    notes = [model.describe_step(b, a, s) for b, a, s in
             zip(anl.path.states, anl.path.actions, anl.path.states[1:])]
    assert sum("the producer is told" in n for n in notes) == 1
    assert anl.explanation.startswith("the producer was told record 0 (epoch 0) at offset 0 is written (acks=all)")


# -- spec keys, rows, encodings -----------------------------------------------------------------

BASE = b'[model]\nreplicas = 2\ntruncation = "leader-epoch-2.1"\n'


@pytest.mark.parametrize("text, key", [
    (b'acks = 1\n', "model.acks"),
    (b'acks = "0"\n', "model.acks"),
    (b'[check]\ninvariants = ["AcknowledgedNeverLost"]\n', "check.invariants"),
    (b'[expect]\nAcknowledgedNeverLost = "holds"\n', "expect.AcknowledgedNeverLost"),
])
def test_bad_acks_keys_are_one_line_errors(text, key):
    with pytest.raises(SpecError) as e:
        parse_spec(BASE + text, "s.toml")
    msg = str(e.value)
    assert msg.startswith(f"s.toml: {key}: ") and "\n" not in msg
    if key != "model.acks":
        assert "model.acks" in msg and "AcknowledgedNeverLost" in msg


def test_the_cli_refuses_acknowledged_never_lost_without_acks():
    from kmc.app.commands.common import select_properties

    spec = load_spec(SPECS / "v21-data-loss.toml")
    with pytest.raises(UsageError, match="has no model.acks"):
        select_properties(spec, ["AcknowledgedNeverLost"])


def test_default_properties_add_acknowledged_never_lost_only_with_acks():
    assert default_properties(Config()) == CLASSIC
    assert default_properties(Config(truncation=LEADER_EPOCH_21)) == MODERN
    assert default_properties(Config(acks="1")) == CLASSIC + (AcknowledgedNeverLost,)
    assert default_properties(Config(truncation=LEADER_EPOCH_21, acks="all")) == MODERN + (AcknowledgedNeverLost,)
    assert "acks" not in Config().as_dict() and Config(acks="all").as_dict()["acks"] == "all"


def test_rows_without_acks_are_unchanged_and_acked_round_trips(build):
    plain, acks = Config(replicas=("A", "B", "C")), Config(replicas=("A", "B", "C"), acks="1")
    a, b = RowCodec(plain), RowCodec(acks)
    assert b.used == a.used + 2 * a.m and b.ACKED_OFFSET == a.used and a.ACKED_OFFSET is None
    rep = build.replica(3, log=[(0, 0), (1, 1)], hw=1)
    s = build.state([rep] * 3, committed=[(0, 0, 0)])
    s = s.__class__(s.replicas, s.quorum, 2, 0, s.committed, ((0, 0, 0), (1, 1, 1)))
    assert b.decode(b.encode(s)) == s
    assert KafkaBatchKernel(acks).decode(KafkaBatchKernel(acks).encode(s)) == s
    bare = s.__class__(s.replicas, s.quorum, 2, 0, s.committed)
    assert encode(s)[:len(encode(bare))] == encode(bare)  # acked is appended, after the ELR part
    assert len(encode(s)) == len(encode(bare)) + 8 * ((1 + 3) + (1 + 2 * 3))  # ELR part, acked part


def test_json_and_tla_show_acked(build):
    from kmc.app.render.json_result import state_from_dict, state_to_dict
    from kmc.app.render.tla import state_text

    model = KafkaModel(Config(replicas=("A", "B"), acks="1"))
    s = model.next_state(model.init_states()[0], Action("Produce", A))
    doc = state_to_dict(model, s)
    assert doc["acked"] == [[0, 0, 0]] and state_from_dict(model, doc) == s
    assert "/\\ acked = {<<0, " in state_text(model, s)
    plain = KafkaModel(Config(replicas=("A", "B")))
    assert "acked" not in state_to_dict(plain, plain.init_states()[0])


# -- symmetry: acked holds no replica ids --------------------------------------------------------

@pytest.mark.parametrize("acks", ["all", "1"])
def test_symmetry_counts_the_orbits_found_by_brute_force(acks):
    # no crash: the zombie (preferred election) and the leader's acknowledgements only
    config = Config(replicas=("A", "B", "C"), max_messages=1, max_crashes=0, max_leader_epoch=1,
                    truncation=LEADER_EPOCH_21, min_insync_replicas=2, preferred_election=True,
                    initial_leader="any", acks=acks)
    model = KafkaModel(config)
    everything = reachable(model, 10**6)
    assert any(s.acked for s in everything)
    orbits = {min(encode(permute(s, p)) for p in symmetries(config)) for s in everything}
    assert len(orbits) < len(everything)
    props = [AcknowledgedNeverLost]
    for engine in (LocalEngine, BatchEngine):
        reduced = engine(model, props, Options(symmetry=True, keep_going=True)).run()
        assert reduced.stats.distinct == len(orbits)
    plain = BatchEngine(model, props, Options(keep_going=True)).run()
    assert plain.stats.distinct == len(everything)
    assert {k: len(v.path) for k, v in reduced.violations.items()} == \
        {k: len(v.path) for k, v in plain.violations.items()}
    kernel = model.batch_kernel()
    sample = everything[::11]
    rows = np.stack([kernel.encode(s) for s in sample])
    for perm in itertools.permutations(range(3)):
        moved = kernel.codec.permuter(perm)(rows)
        assert [kernel.decode(r) for r in moved] == [permute(s, perm) for s in sample]


@pytest.mark.parametrize("text, words", [
    (b'acks = "0"\n', "model.acks: must be"),
    (b'[check]\ninvariants = ["AcknowledgedNeverLost"]\n', "check.invariants: AcknowledgedNeverLost needs model.acks"),
])
def test_kmc_check_bad_acks_spec_exits_2_with_one_line(tmp_path, capsys, text, words):
    from kmc.app.cli import main

    path = tmp_path / "bad.toml"
    path.write_bytes(BASE + text)
    try:
        code = main(["check", str(path), "--no-progress"])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and str(path) in err and words in err, err
    assert "Traceback" not in err
