"""ISR changes through the controller (docs/model.md, "Kafka 2.7 and later: AlterPartition and
broker epochs"): the options ``alter_partition`` and ``broker_epochs``.

Every row of that section's known-verdict table (TLC's, on an independent TLA+ rendering) is a
spec in specs/; each runs once here on the batch engine against the table's verdicts and
shortest-trace lengths and against its pinned counts (tests/pins.py), the small ones also against
the independent oracle (tests/oracle.py). The unit tests on hand-built states pin each rule of the
section: the request in flight, the maximal ISR, the controller's answer, the drops.

Replicas are numbered A=0, B=1, C=2; records are (epoch, id).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest

import oracle
from helpers import assert_same_successors, assert_traces_replay, reachable, spec_runs
from kmc.checker.local.rows import BatchEngine
from kmc.checker.local.states import LocalEngine, Options
from kmc.model import Config, KafkaModel, encode
from kmc.app.specs import load_spec, parse_spec
from kmc.model.spec import SpecError
from kmc.model.state import EXPAND, SHRINK, Quorum
from kmc.model.symmetry import permute, symmetries
from pins import ANL, AP_PINS, CNL, EXCLUDED, LCC, LND

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
A, B, C = range(3)
H = "holds"

# docs/model.md's table, row by row: spec -> {property: "holds" or the shortest trace's length}
TABLE = {
    "ap-c1": {CNL: H, LND: H, LCC: H},  # C1, AP
    "ap-be-c1": {CNL: H, LND: H, LCC: H},  # C1, AP + BE
    "ap-elr-c1": {CNL: H, LND: H, LCC: H},  # C1, ELR + AP
    "ap-c2": {CNL: 7, LND: H, LCC: 6},  # C2, AP
    "ap-be-c2": {CNL: 7, LND: H, LCC: 6},  # C2, AP + BE
    "kafka-14139-two-replicas": {CNL: 13, LND: H, LCC: 11},  # C2, ELR + AP
    "kip903-two-replicas": {CNL: H, LND: H, LCC: H},  # C2, ELR + AP + BE
    "ap-c4": {CNL: H, LND: H, LCC: H},  # C4, AP
    "ap-c5": {CNL: H, LND: H, LCC: H},  # C5, AP
    "ap-be-c5": {CNL: H, LND: H, LCC: H},  # C5, AP + BE
    "ap-elr-c5": {CNL: H, LND: H, LCC: H},  # C5, ELR + AP
    "ap-elr-be-c5": {CNL: H, LND: H, LCC: H},  # C5, ELR + AP + BE
    "ap-lrs2": {CNL: 9, LND: H, LCC: 8},  # LRS2, AP
    "ap-be-lrs2": {CNL: 9, LND: H, LCC: 8},  # LRS2, AP + BE
    "kafka-14139-three-replicas": {CNL: 16, LND: H, LCC: 14},  # LRS2, ELR + AP
    "kip903-three-replicas": {CNL: H, LND: H, LCC: H},  # LRS2, ELR + AP + BE
    "kafka-14139-acks-all": {CNL: 16, LND: H, LCC: 14, ANL: 16},  # LRS2 acks=all, ELR + AP
}
# The atomic model's spec of the same configuration (the table's last column), where one ships.
ATOMIC = {"kafka-14139-two-replicas": "v21-elr-unflushed", "ap-c2": "v21-unflushed", "ap-c1": "v21-data-loss",
          "ap-c5": "v21-min-isr", "ap-lrs2": "lrs2-v21", "kafka-14139-three-replicas": "lrs2-v21-elr"}

FAST_LIMIT = 20_000  # distinct states: above, a row is marked slow
SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                          reason="two to three million states (seconds each on the batch engine): set KMC_SLOW=1")
ORACLE_ALL = os.environ.get("KMC_ORACLE_ALL") == "1"
# The oracle runs at some 5,000 states a second: in every suite on the two KAFKA-14139 specs and
# C1 (about 32,000 states together), on the other two-replica rows with KMC_ORACLE_ALL=1.
ORACLE_ALWAYS = ("kafka-14139-two-replicas", "kip903-two-replicas", "ap-be-c1")


def _param(name):
    distinct = AP_PINS[name].distinct
    marks = [] if distinct <= FAST_LIMIT else [pytest.mark.slow]
    if distinct > 1_000_000:
        marks.append(SLOW)
    return pytest.param(name, id=name, marks=marks)


@pytest.fixture(scope="module")
def runs():
    """spec name -> (spec, model, result) on the batch engine, each run at most once."""
    return spec_runs(SPECS, lambda name: BatchEngine, lambda spec: Options(keep_going=spec.keep_going))


# -- the shipped specs ---------------------------------------------------------------------------

def test_every_alter_partition_spec_is_pinned_and_a_row():
    # (the liveness specs with alter_partition are tests/test_liveness_kafka.py's rows; those with
    # truncate_on_fetch too are tests/test_fetch_path.py's; those with a controlled shutdown or
    # KAFKA-15221, tests/test_controlled_shutdown.py's)
    shipped = {p.stem for p in SPECS.glob("*.toml")
               if load_spec(p).config.alter_partition and not p.stem.startswith("live-")
               and not load_spec(p).config.truncate_on_fetch
               and not load_spec(p).config.max_controlled_shutdowns and not load_spec(p).config.bugs}
    assert shipped - set(EXCLUDED) == set(AP_PINS) == set(TABLE)  # benchmarks are measured, not tested


@pytest.mark.parametrize("name", [_param(n) for n in sorted(AP_PINS)])
def test_row(runs, name):
    spec, model, result = runs(name)
    pin = AP_PINS[name]
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


@pytest.mark.parametrize("name", [pytest.param(n, id=n, marks=[] if n in ORACLE_ALWAYS else [
    pytest.mark.slow, pytest.mark.skipif(not ORACLE_ALL, reason="set KMC_ORACLE_ALL=1 for every two-replica row")])
    for n in sorted(AP_PINS) if AP_PINS[n].distinct <= FAST_LIMIT])
def test_the_oracle_gives_the_pins(name):
    spec = load_spec(SPECS / f"{name}.toml")
    pin = AP_PINS[name]
    want = oracle.explore(spec.config, list(pin.checked), keep_going=True)
    assert (want.distinct, want.generated, want.depth, want.traces) == (
        pin.distinct, pin.generated, pin.depth, pin.traces)


def test_the_per_state_engine_gives_the_batch_engine_s_result(runs):
    spec, model, batch = runs("kafka-14139-two-replicas")
    local = LocalEngine(model, spec.properties(), Options(keep_going=True)).run()
    assert (local.stats.distinct, local.stats.generated, local.stats.depth, local.stats.levels) == (
        batch.stats.distinct, batch.stats.generated, batch.stats.depth, batch.stats.levels)
    assert local.stats.fired == batch.stats.fired and local.stats.new == batch.stats.new
    for prop, v in batch.violations.items():
        assert local.violations[prop].path.choices == v.path.choices


@pytest.mark.parametrize("name", sorted(ATOMIC))
def test_the_atomic_column(name):
    """The table's last column: the same configuration without alter_partition is the shipped
    spec named in ATOMIC, whose pinned verdicts tests/test_modern.py checks."""
    ap = load_spec(SPECS / f"{name}.toml").config
    atomic = load_spec(SPECS / f"{ATOMIC[name]}.toml").config
    assert Config(**{**ap.as_dict(), "replicas": ap.replicas, "alter_partition": False,
                     "broker_epochs": False}) == atomic


def test_the_kafka_14139_story(runs):
    """The 13-state trace is the story docs/model.md tells, step for step."""
    _spec, model, result = runs("kafka-14139-two-replicas")
    path = result.violations[CNL].path
    assert [model.format_action(a) for a in path.actions] == [
        "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "ShrinkIsr(B)", "FetchRequest(B)",
        "AlterPartition(B)", "ExpandIsr(B)", "Crash(A, keeps 0)", "Crash(B, keeps 0)", "Restart(B)",
        "AlterPartition(B)", "ElectLeader(B)"]
    s = path.states
    assert s[4].quorum.alter == (A, SHRINK, B) and s[4].quorum.isr == (A, B)
    assert s[5].committed == ((0, 0, 0),)  # B's fetch commits record 0: the maximal ISR still counts B
    assert s[6].quorum.isr == (A,) and s[6].quorum.alter is None
    assert s[7].quorum.alter == (A, EXPAND, B)
    assert s[10].quorum.alter == (A, EXPAND, B) and s[10].quorum.isr == (A,)  # B's restart keeps it
    assert s[11].quorum.isr == (A, B) and s[11].replicas[B].log == ()  # the controller adds B, empty
    assert s[12].quorum.leader == B and s[12].replicas[B].log == ()
    # LeaderCandidateCompleteness fails first, at the accepting AlterPartition
    assert len(result.violations[LCC].path) == 11
    assert result.violations[LCC].path.actions[-1].name == "AlterPartition"


# -- the rules, on hand-built states ----------------------------------------------------------

def _model(**kw):
    base = dict(replicas=("A", "B"), max_messages=2, max_crashes=2, max_leader_epoch=2,
                truncation="leader-epoch-2.1", alter_partition=True)
    return KafkaModel(Config(**{**base, **kw}))


def _successors(model, state):
    return {model.format_action(a): t for a, t in model.successors(state)}


def test_shrink_and_expand_only_ask(build):
    model = _model()
    lagging = build.state([build.replica(2, log=[(0, 0)]), build.replica(2)])
    after = _successors(model, lagging)["ShrinkIsr(B)"]
    assert after.quorum.isr == (A, B) and after.quorum.alter == (A, SHRINK, B)
    assert after.replicas == lagging.replicas and after.committed == ()
    # one request at a time: no other ShrinkIsr or ExpandIsr while it is in flight
    assert [k for k in _successors(model, after) if k.startswith(("ShrinkIsr", "ExpandIsr"))] == []
    out = build.state([build.replica(2, remote=(0, 0)), build.replica(2)], isr=(A,))
    asked = _successors(model, out)["ExpandIsr(B)"]
    assert asked.quorum.isr == (A,) and asked.quorum.alter == (A, EXPAND, B)


def test_the_maximal_isr_counts_a_pending_expansion(build):
    """A's HW counts B once A asked to add it: with B at offset 0, A's record is not committed
    by a Produce while the expansion is pending; without the request it would be (ISR {A})."""
    model = _model()
    base = build.state([build.replica(2, remote=(0, 0)), build.replica(2)], isr=(A,))
    pending = base.__class__(base.replicas, Quorum(A, 0, (A,), (), (A, EXPAND, B)))
    assert _successors(model, base)["Produce(A)"].committed == ((0, 0, 0),)
    assert _successors(model, pending)["Produce(A)"].committed == ()
    # a pending shrink keeps counting B: it is still in quorum.isr
    shrinking = base.__class__(base.replicas, Quorum(A, 0, (A, B), (), (A, SHRINK, B)))
    assert _successors(model, shrinking)["Produce(A)"].committed == ()


def test_the_controller_s_answer(build):
    model = _model(broker_epochs=True)
    reps = [build.replica(2, log=[(0, 0)], hw=0, remote=(0, 1)), build.replica(2, log=[(0, 0)])]
    s = build.state(reps, isr=(A,))
    ask = s.__class__(s.replicas, Quorum(A, 0, (A,), (), (A, EXPAND, B)))
    accepted = _successors(model, ask)["AlterPartition(B)"]
    assert accepted.quorum.isr == (A, B) and accepted.quorum.alter is None
    shrink = s.__class__(s.replicas, Quorum(A, 0, (A, B), (), (A, SHRINK, B)))
    removed = _successors(model, shrink)["AlterPartition(B)"]
    assert removed.quorum.isr == (A,) and removed.replicas[A].hw == 1  # the confirmed shrink lets the HW move
    assert removed.committed == ((0, 0, 0),)
    # broker epochs: an expansion of a replica that is down is refused
    dead = build.state([reps[0], build.replica(2, alive=False, log=[(0, 0)])], isr=(A,))
    dead = dead.__class__(dead.replicas, Quorum(A, 0, (A,), (), (A, EXPAND, B)))
    refused = _successors(model, dead)["AlterPartition(B)"]
    assert refused.quorum == Quorum(A, 0, (A,), ()) and refused.replicas == dead.replicas
    # without broker epochs the controller adds it all the same (the KAFKA-14139 window)
    assert _successors(_model(), dead)["AlterPartition(B)"].quorum.isr == (A, B)


def test_what_restart_and_elect_leader_drop(build):
    reps = [build.replica(2, log=[(0, 0)], remote=(0, 1)), build.replica(2, alive=False, log=[(0, 0)])]
    s = build.state(reps, isr=(A,))
    s = s.__class__(s.replicas, Quorum(A, 0, (A,), (), (A, EXPAND, B)))
    assert _successors(_model(), s)["Restart(B)"].quorum.alter == (A, EXPAND, B)  # survives
    assert _successors(_model(broker_epochs=True), s)["Restart(B)"].quorum.alter is None  # stale broker epoch
    # ElectLeader: the request carries the old leader epoch
    dead_leader = build.state([build.replica(2, alive=False), build.replica(2)], isr=(A, B))
    dead_leader = dead_leader.__class__(dead_leader.replicas, Quorum(A, 0, (A, B), (), (A, SHRINK, B)))
    assert _successors(_model(), dead_leader)["ElectLeader(B)"].quorum.alter is None
    # the request of a leader that crashed is still answered, with no HW step
    assert _successors(_model(), dead_leader)["AlterPartition(B)"].quorum.isr == (A,)


def test_an_unclean_restart_that_changes_the_isr_drops_the_request(build):
    model = _model(unflushed_loss=True, hw_requires_min_isr=True, eligible_leader_replicas=True)
    reps = [build.replica(2, remote=(0, 0)), build.replica(2, alive=False, lossy=True)]
    s = build.state(reps, isr=(A, B))
    s = s.__class__(s.replicas, Quorum(A, 0, (A, B), (), (A, SHRINK, B)))
    after = _successors(model, s)["Restart(B)"]
    assert after.quorum.isr == (A,) and after.quorum.alter is None


# -- nothing moves with the options off; encodings and rows ------------------------------------

def test_options_off_add_nothing():
    cfg = Config(truncation="leader-epoch-2.1")
    assert "alter_partition" not in cfg.as_dict() and "broker_epochs" not in cfg.as_dict()
    kernel = KafkaModel(cfg).batch_kernel()
    with_ap = KafkaModel(Config(truncation="leader-epoch-2.1", alter_partition=True)).batch_kernel()
    used = kernel.codec.used
    assert with_ap.codec.used == used + 3  # three columns, only with the option
    assert with_ap.codec.column_names()[:used] == kernel.codec.column_names()[:used]
    assert "AlterPartition" not in KafkaModel(cfg).action_names()


def test_encodings_tell_every_state_apart():
    spec = load_spec(SPECS / "kafka-14139-acks-all.toml")
    model = spec.model()
    states = reachable(model, 20_000)
    assert len({encode(s) for s in states}) == len(states)
    assert any(s.quorum.alter is not None and s.acked for s in states)
    kernel = model.batch_kernel()
    rows = np.stack([kernel.encode(s) for s in states[::7]])
    assert [kernel.decode(r) for r in rows] == states[::7]


@pytest.mark.parametrize("name", ["kafka-14139-two-replicas", "kip903-three-replicas", "kafka-14139-acks-all"])
def test_the_kernel_equals_the_model(name):
    model = load_spec(SPECS / f"{name}.toml").model()
    assert_same_successors(model, reachable(model, 4000)[1000:])


# -- symmetry: the request names replicas ---------------------------------------------------

SYMMETRIC = Config(replicas=("A", "B", "C"), max_messages=1, max_crashes=1, max_leader_epoch=1,
                   truncation="leader-epoch-2.1", min_insync_replicas=2, unflushed_loss=True,
                   hw_requires_min_isr=True, eligible_leader_replicas=True, alter_partition=True,
                   initial_leader="any")


@pytest.mark.parametrize("crashes", [
    0,  # 2,793 states, 1,722 of them with a request in flight
    pytest.param(1, marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                                             reason="51,849 states by brute force (~20 s): set KMC_SLOW=1")),
])
def test_symmetry_counts_the_orbits_found_by_brute_force(crashes):
    config = attrs.evolve(SYMMETRIC, max_crashes=crashes)
    model = KafkaModel(config)
    everything = reachable(model, 10**6)
    assert any(s.quorum.alter is not None for s in everything)
    perms = symmetries(config)
    orbits = len({min(encode(permute(s, p)) for p in perms) for s in everything})
    assert orbits < len(everything)
    for engine in (LocalEngine, BatchEngine):
        assert engine(model, [], Options(symmetry=True)).run().stats.distinct == orbits
    assert BatchEngine(model, [], Options()).run().stats.distinct == len(everything)


def test_the_row_permutation_renames_the_request():
    model = KafkaModel(SYMMETRIC)
    kernel = model.batch_kernel()
    states = [s for s in reachable(model, 5000) if s.quorum.alter is not None][:300]
    assert states
    rows = np.stack([kernel.encode(s) for s in states])
    for perm in itertools.permutations(range(3)):
        moved = kernel.codec.permuter(perm)(rows)
        assert [kernel.decode(r) for r in moved] == [permute(s, perm) for s in states]


# -- the spec keys ----------------------------------------------------------------------------

def test_broker_epochs_needs_alter_partition(tmp_path):
    text = b'[model]\nreplicas = 2\ntruncation = "leader-epoch-2.1"\nbroker_epochs = true\n'
    with pytest.raises(SpecError) as e:
        parse_spec(text)
    assert "model.broker_epochs" in str(e.value) and "model.alter_partition" in str(e.value)
    path = tmp_path / "bad.toml"
    path.write_bytes(text)
    run = subprocess.run([sys.executable, "-m", "kmc.app.cli", "check", str(path)],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "broker_epochs" in run.stderr


@pytest.mark.parametrize("value", ['"yes"', "1"])
def test_alter_partition_is_a_bool(value):
    with pytest.raises(SpecError, match="model.alter_partition"):
        parse_spec(f'[model]\nreplicas = 2\ntruncation = "leader-epoch-2.1"\nalter_partition = {value}\n'.encode())


# -- checkpoints ------------------------------------------------------------------------------

def test_a_checkpoint_written_before_the_options_existed_still_resumes(tmp_path):
    """tests/golden/checkpoint-le-unflushed was written by kmc before alter_partition existed
    (``kmc check specs/le-unflushed.toml --checkpoint DIR --checkpoint-every 0 --max-states 600``);
    it resumes to the spec's pinned numbers (tests/pins.py: 10,960 distinct, 25,087 generated,
    depth 20)."""
    import shutil

    from pins import PINS

    directory = tmp_path / "ck"
    shutil.copytree(ROOT / "tests" / "golden" / "checkpoint-le-unflushed", directory)
    run = subprocess.run([sys.executable, "-m", "kmc.app.cli", "check", str(SPECS / "le-unflushed.toml"),
                          "--resume", str(directory), "--max-states", "1000000", "--no-progress", "--no-trace",
                          "--json", str(tmp_path / "out.json")], capture_output=True, text=True)
    assert run.returncode == 1, run.stderr  # violations found, as the spec expects
    import json

    stats = json.loads((tmp_path / "out.json").read_text())["stats"]
    pin = PINS["le-unflushed"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (
        pin.distinct, pin.generated, pin.depth)


def test_an_alter_partition_run_resumes_from_every_level_boundary():
    import pickle

    spec = load_spec(SPECS / "kafka-14139-two-replicas.toml")
    model, props = spec.model(), spec.properties()
    opts = Options(keep_going=True)
    snaps = []
    engine = BatchEngine(model, props, opts)
    engine.on_level = lambda e: snaps.append(pickle.dumps(e.snapshot()))
    want = engine.run()
    assert len(snaps) > 10
    for blob in snaps[::5]:
        resumed = BatchEngine(model, props, opts)
        resumed.restore(pickle.loads(blob))
        got = resumed.run()
        assert (got.stats.distinct, got.stats.generated, got.stats.depth, got.stats.levels) == (
            want.stats.distinct, want.stats.generated, want.stats.depth, want.stats.levels)
        assert {p: v.path.choices for p, v in got.violations.items()} == {
            p: v.path.choices for p, v in want.violations.items()}


# -- Spark --------------------------------------------------------------------------------------

@pytest.mark.spark
@pytest.mark.parametrize("symmetry", [pytest.param(False, marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="the run without symmetry (the rows travel in both): set KMC_SLOW=1")), True], ids=["plain", "symmetry"])
def test_spark_gives_the_batch_engine_s_result_with_the_options(spark_sc, symmetry):
    """The symmetric configuration (every option of the section but broker epochs, and
    initial_leader = any) on Spark from the second level on, two partitions, with and
    without symmetry reduction. (tests/test_spark_rows.py runs the KAFKA-14139 spec there.)"""
    from conftest import assert_same_spark_result
    from kmc.checker.spark.engine import SparkRowsEngine

    model = KafkaModel(attrs_evolve(SYMMETRIC, broker_epochs=True))
    props = [p for p in load_spec(SPECS / "kip903-two-replicas.toml").properties() if p.symmetric]
    options = Options(keep_going=True, symmetry=symmetry)
    want = BatchEngine(model, props, options).run()
    got = SparkRowsEngine(model, props, options, partitions=2, driver_level_limit=0).run()
    assert_same_spark_result(got, want)


def attrs_evolve(config, **changes):
    import attrs

    return attrs.evolve(config, **changes)


# -- availability ---------------------------------------------------------------------------------

@pytest.mark.parametrize("broker_epochs, traps, generated", [(False, 1891, 31695), (True, 1894, 29117)],
                         ids=["ap", "ap-be"])
def test_partition_recoverable_with_the_options(broker_epochs, traps, generated):
    """C2 with the eligible leader replicas (specs/avail-c2-elr.toml's configuration: 1,296 traps
    in the atomic model) with alter_partition: the engine's trap count and shortest path into a
    trap (5 states) are the oracle's. No reference numbers of TLC's exist for these yet."""
    spec = load_spec(SPECS / "avail-c2-elr.toml")
    config = attrs_evolve(spec.config, alter_partition=True, broker_epochs=broker_epochs)
    names = [p.name for p in spec.properties()]
    want = oracle.explore(config, names, keep_going=True)
    assert (want.traps, want.trap_trace, want.generated) == (traps, 5, generated)
    got = LocalEngine(KafkaModel(config), spec.properties(), Options(keep_going=True)).run()
    violation = got.violations["PartitionRecoverable"]
    assert (violation.traps, len(violation.path), got.stats.generated) == (traps, 5, generated)
