"""Truncation in the fetch path (docs/model.md, "Kafka 2.8+: truncation in the fetch path") on
the batch kernel and on every engine: ``truncate_on_fetch`` with each set of ``fetch_bugs``.

The kernel is a second writing of the attrs model's fetch path in arrays (the diverging check
and ``EO`` over a chunk's logs, the diverging answer, the truncation on it, KAFKA-13141's log
end and KAFKA-14704's two-step response); these tests compare it with the model successor by
successor, mask by mask and count by count, every engine against the others, and the verdicts
and shortest-trace lengths against docs/model.md's table (TLC's, on an independent TLA+
rendering). With the option off the rows are those of before (the pins of tests/pins.py hold on
every engine: tests/test_batch.py, tests/test_engines.py).

Replicas are numbered A=0, B=1, C=2; records are (epoch, id).
"""

from __future__ import annotations

import itertools
import os
import json
import pickle
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import oracle
import pytest
from helpers import assert_same_successors, assert_traces_replay, random_walk, reachable
from kmc.checker.local.rows import BatchEngine
from kmc.checker.local.states import LocalEngine, Options
from kmc.invariants.kafka import (
    MODERN,
    CommittedNeverLost,
    HighWatermarkBelowLogEnd,
    LeaderCandidateCompleteness,
    LogsNeverDiverge,
    UncommittedNeverExposed,
    uncommitted_never_exposed_mask,
)
from kmc.model import Config, KafkaModel, encode
from kmc.model.config import KAFKA_13141, KAFKA_14704
from kmc.model.rows import RowCodec
from kmc.app.specs import load_spec
from kmc.model.symmetry import permute, symmetries
from pins import FETCH_PINS

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
H = "holds"
BOTH = (KAFKA_13141, KAFKA_14704)
BUGS = {"fixed": (), "14704": (KAFKA_14704,), "13141": (KAFKA_13141,), "both": BOTH}
CNL, LND, LCC, UNE = "CommittedNeverLost", "LogsNeverDiverge", "LeaderCandidateCompleteness", "UncommittedNeverExposed"
CHECKED = (HighWatermarkBelowLogEnd, CommittedNeverLost, LogsNeverDiverge, LeaderCandidateCompleteness,
           UncommittedNeverExposed)

V21 = dict(truncation="leader-epoch-2.1", truncate_on_fetch=True)
C1 = dict(max_messages=2, max_crashes=2, max_leader_epoch=2)
C2 = dict(C1, unflushed_loss=True)
C4 = dict(max_messages=4, max_crashes=1, max_leader_epoch=2, preferred_election=True)
C5 = dict(replicas=("A", "B", "C"), min_insync_replicas=2, max_messages=2, max_crashes=1, max_leader_epoch=2)
CONFIGS = {"C1": C1, "C2": C2, "C4": C4, "C5": C5}

# docs/model.md's known verdicts (TLC's), the rows without other options: config, bugs ->
# {property: "holds" or the shortest trace's length in states}
TABLE = {
    ("C1", "fixed"): {CNL: H, LND: H, LCC: H, UNE: H},
    ("C1", "14704"): {CNL: H, LND: 9, LCC: H, UNE: 9},
    ("C1", "13141"): {CNL: 10, LND: 12, LCC: 8, UNE: H},
    ("C1", "both"): {CNL: 10, LND: 9, LCC: 8, UNE: 9},
    ("C2", "fixed"): {CNL: 6, LND: 10, LCC: 5, UNE: H},
    ("C2", "14704"): {CNL: 6, LND: 9, LCC: 5, UNE: 9},
    ("C2", "13141"): {CNL: 6, LND: 10, LCC: 5, UNE: H},
    ("C2", "both"): {CNL: 6, LND: 9, LCC: 5, UNE: 9},
    ("C4", "fixed"): {CNL: H, LND: H, LCC: H, UNE: H},
    ("C4", "14704"): {CNL: H, LND: 8, LCC: H, UNE: 8},
    ("C4", "13141"): {CNL: 7, LND: 9, LCC: 6, UNE: H},
    ("C4", "both"): {CNL: 7, LND: 7, LCC: 6, UNE: 7},
    ("C5", "fixed"): {CNL: H, LND: H, LCC: H, UNE: H},
    ("C5", "14704"): {CNL: H, LND: 10, LCC: H, UNE: 10},
    ("C5", "13141"): {CNL: H, LND: H, LCC: 9, UNE: H},
    ("C5", "both"): {CNL: H, LND: 10, LCC: 9, UNE: 10},
}
# The shipped spec of each row: its counts are pinned in tests/pins.py (FETCH_PINS), which the
# naive oracle gives (tests/test_fetch_path.py) and the per-state engine too.
SPEC_OF = {
    ("C1", "fixed"): "fetch-c1",
    ("C1", "14704"): "fetch-c1-kafka-14704",
    ("C1", "13141"): "fetch-c1-kafka-13141",
    ("C1", "both"): "fetch-c1-both-bugs",
    ("C2", "fixed"): "fetch-c2",
    ("C2", "14704"): "fetch-c2-kafka-14704",
    ("C2", "13141"): "fetch-c2-kafka-13141",
    ("C2", "both"): "fetch-c2-both-bugs",
    ("C4", "fixed"): "fetch-c4",
    ("C4", "14704"): "kafka-14704-exposure",
    ("C4", "13141"): "kafka-13141-data-loss",
    ("C4", "both"): "fetch-c4-both-bugs",
    ("C5", "fixed"): "fetch-c5",
    ("C5", "14704"): "fetch-c5-kafka-14704",
    ("C5", "13141"): "fetch-c5-kafka-13141",
    ("C5", "both"): "fetch-c5-both-bugs",
}


def counts(key):
    pin = FETCH_PINS[SPEC_OF[key]]
    return pin.distinct, pin.generated


def model_of(config, bugs, **extra):
    return KafkaModel(Config(**V21, **CONFIGS[config], fetch_bugs=BUGS[bugs], **extra))


def verdicts(result):
    return {p.name: len(result.violations[p.name].path.states) if p.name in result.violations else H
            for p in CHECKED}


def expected(key):
    """The table's row, and HighWatermarkBelowLogEnd, which holds in every row."""
    return {"HighWatermarkBelowLogEnd": H, **TABLE[key]}


_RUNS: dict = {}


def batch_run(config, bugs):
    if (config, bugs) not in _RUNS:
        model = model_of(config, bugs)
        _RUNS[config, bugs] = model, BatchEngine(model, CHECKED, Options(keep_going=True)).run()
    return _RUNS[config, bugs]


# -- the option off adds nothing to a row --------------------------------------------------------

def test_the_option_off_adds_no_column():
    off = RowCodec(Config(truncation="leader-epoch-2.1"))
    on = RowCodec(Config(**V21))
    bug = RowCodec(Config(**V21, fetch_bugs=(KAFKA_14704,)))
    assert not any("diverging" in name or "applied" in name for name in off.column_names())
    assert (on.INFLIGHT_DIVERGING, on.INFLIGHT_APPLIED) == (off.BLOCK, None)
    assert (on.BLOCK, bug.BLOCK) == (off.BLOCK + 1, off.BLOCK + 2)  # the in-flight fields end a block
    for r in range(off.n):
        names = off.column_names()[off.block(r) : off.block(r) + off.BLOCK]
        assert bug.column_names()[bug.block(r) : bug.block(r) + bug.BLOCK] == names + [
            f"r{r}.inflight.diverging", f"r{r}.inflight.applied"]
    # KAFKA-13141 changes what the leader does, not what a state holds
    assert RowCodec(Config(**V21, fetch_bugs=(KAFKA_13141,))).column_names() == on.column_names()


def test_a_diverging_response_cannot_be_written_without_the_option():
    model = model_of("C4", "14704")
    state = next(s for s in reachable(model, 20000) if any(r.inflight and r.inflight.applied for r in s.replicas))
    with pytest.raises(ValueError, match="truncate_on_fetch"):
        RowCodec(Config(truncation="leader-epoch-2.1", **C4)).encode(state)
    with pytest.raises(ValueError, match="KAFKA-14704"):
        RowCodec(Config(**V21, **C4)).encode(state)


# -- the kernel against the model ------------------------------------------------------------------

@pytest.mark.parametrize("bugs", BUGS)
@pytest.mark.parametrize("config", ["C1", pytest.param("C2", marks=pytest.mark.slow)])
def test_every_parent_s_successors_and_masks_are_the_model_s(config, bugs):
    if config == "C2" and bugs != "both" and os.environ.get("KMC_SLOW") != "1":
        pytest.skip("C2 without both bugs (C1 has every bug set): set KMC_SLOW=1")
    """``verify_kernel``: every parent of the whole run compared with the model (successors,
    their rows and fingerprints, every property's mask), then the table's numbers."""
    model = model_of(config, bugs)
    result = BatchEngine(model, CHECKED, Options(keep_going=True, verify_kernel=True)).run()
    assert (result.stats.distinct, result.stats.generated) == counts((config, bugs))
    assert verdicts(result) == expected((config, bugs))


@pytest.mark.parametrize("bugs", BUGS)
@pytest.mark.parametrize("config", ["C4", "C5"])
def test_the_kernel_equals_the_model_on_larger_configurations(config, bugs):
    model = model_of(config, bugs)
    states = reachable(model, 6000)[::3]
    assert_same_successors(model, states)
    # and deep into the space: random walks (with the diverging responses they meet)
    rng = np.random.default_rng(32)
    walks = [s for _ in range(30) for s in random_walk(model, model.init_states()[0], rng.integers(0, 50, 40))]
    assert any(r.inflight is not None and r.inflight.diverging is not None for s in walks for r in s.replicas)
    assert_same_successors(model, walks)


@pytest.mark.parametrize("key", [("C1", b) for b in BUGS] + [("C2", b) for b in BUGS]
                         + [pytest.param(("C4", "both"), marks=[pytest.mark.slow, pytest.mark.skipif(
                             os.environ.get("KMC_SLOW") != "1", reason="C4 with both bugs (C1 and C2 with each "
                             "bug stay): set KMC_SLOW=1")])],
                         ids=lambda k: f"{k[0]}-{k[1]}")
def test_the_per_state_path_gives_the_batch_path_s_result(key):
    model, want = batch_run(*key)
    got = LocalEngine(model, CHECKED, Options(keep_going=True)).run()
    assert (got.stats.distinct, got.stats.generated, got.stats.depth) == (
        want.stats.distinct, want.stats.generated, want.stats.depth)
    assert {p: (v.path.init_index, v.path.choices) for p, v in got.violations.items()} == {
        p: (v.path.init_index, v.path.choices) for p, v in want.violations.items()}
    assert {p: v.explanation for p, v in got.violations.items()} == {
        p: v.explanation for p, v in want.violations.items()}


def test_each_row_is_its_shipped_spec():
    for (config, bugs), name in SPEC_OF.items():
        spec = load_spec(SPECS / f"{name}.toml").config
        assert spec == model_of(config, bugs).config, name


@pytest.mark.parametrize("name", sorted(FETCH_PINS))
def test_the_batch_engine_gives_the_pins(name):
    """Every pinned spec of the fetch path on the batch engine (the pins are the oracle's)."""
    spec = load_spec(SPECS / f"{name}.toml")
    pin = FETCH_PINS[name]
    result = BatchEngine(spec.model(), spec.properties(), Options(keep_going=spec.keep_going)).run()
    assert tuple(result.checked) == pin.checked
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (
        pin.distinct, pin.generated, pin.depth)
    assert {p: len(v.path) for p, v in result.violations.items()} == pin.traces
    row = {n: key for key, n in SPEC_OF.items()}.get(name)
    if row is not None:  # docs/model.md's table, TLC's verdicts
        assert {p: pin.traces.get(p, H) for p in TABLE[row]} == TABLE[row]
    assert_traces_replay(spec.model(), result)


@pytest.mark.parametrize("bugs", BUGS)
def test_the_oracle_gives_the_batch_engine_s_numbers(bugs):
    """The naive oracle (tests/oracle.py), straight against the batch engine: counts, depth and
    every shortest trace's length, C1 and C2 with each set of bugs."""
    for config in ("C1", "C2"):
        model, result = batch_run(config, bugs)
        want = oracle.explore(model.config, [p.name for p in CHECKED], keep_going=True)
        assert (want.distinct, want.generated, want.depth) == (
            result.stats.distinct, result.stats.generated, result.stats.depth)
        assert want.traces == {p: len(v.path.states) for p, v in result.violations.items()}


def test_every_shipped_spec_with_the_option_runs_the_kernel_as_the_model():
    names = [p.stem for p in sorted(SPECS.glob("*.toml")) if load_spec(p).model().config.truncate_on_fetch]
    for name in names:
        model = load_spec(SPECS / f"{name}.toml").model()
        assert_same_successors(model, reachable(model, 1500)[::2])


# -- UncommittedNeverExposed's mask ----------------------------------------------------------------

@pytest.mark.parametrize("rule", ["high-watermark", "leader-epoch", "leader-epoch-kip279", "leader-epoch-2.1"])
def test_uncommitted_never_exposed_without_the_fetch_path(rule):
    """docs/model.md: without truncate_on_fetch the property holds in C1, C2 and C4 under all
    four rules, except C4 under leader-epoch (violated, 9 states). The batch run reads the
    mask; the per-state check agrees with it on every state of C1."""
    for name in ("C1", "C2", "C4"):
        model = KafkaModel(Config(truncation=rule, **CONFIGS[name]))
        result = BatchEngine(model, [UncommittedNeverExposed], Options()).run()
        want = 9 if (name, rule) == ("C4", "leader-epoch") else H
        got = len(result.violations[UNE].path.states) if UNE in result.violations else H
        assert got == want, name
    model = KafkaModel(Config(truncation=rule, **C1))
    states = reachable(model, 10**6)
    kernel = model.batch_kernel()
    mask = uncommitted_never_exposed_mask(kernel, np.stack([kernel.encode(s) for s in states]))
    assert mask.tolist() == [UncommittedNeverExposed.check(model, s) is not None for s in states]


def test_the_mask_equals_the_check_on_every_state_with_both_bugs():
    model = model_of("C1", "both")
    states = reachable(model, 10**6)
    kernel = model.batch_kernel()
    mask = uncommitted_never_exposed_mask(kernel, np.stack([kernel.encode(s) for s in states]))
    flags = [UncommittedNeverExposed.check(model, s) is not None for s in states]
    assert mask.tolist() == flags and any(flags) and not all(flags)


# -- coverage ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bugs", BUGS)
def test_coverage_counts_the_fetch_kinds_alike_on_both_paths(bugs):
    model = model_of("C1", bugs)
    per_state = LocalEngine(model, [], Options()).run().stats.coverage
    batch = BatchEngine(model, [], Options()).run().stats.coverage
    assert per_state.kinds == batch.kinds and per_state.enabled == batch.enabled
    kinds = batch.kinds
    assert set(kinds["FetchRequest"]) == {"records", "diverging"}
    assert set(kinds["FetchResponse"]) == {"append", "truncate", "hw-first"}
    assert all(kinds["FetchRequest"].values())
    assert kinds["FetchResponse"]["append"] and kinds["FetchResponse"]["truncate"]
    assert bool(kinds["FetchResponse"]["hw-first"]) == (KAFKA_14704 in BUGS[bugs])  # KAFKA-14704's first half
    # each diverging answer is taken once: truncated, or (KAFKA-14704) its HW first, then truncated
    assert batch.enabled["FetchResponse"] == sum(kinds["FetchResponse"].values())


def test_the_option_off_counts_no_fetch_kind():
    model = KafkaModel(Config(truncation="leader-epoch-2.1", **C1))
    kinds = BatchEngine(model, [], Options()).run().stats.coverage.kinds
    assert "FetchRequest" not in kinds and "FetchResponse" not in kinds


# -- symmetry: nothing more is permuted ------------------------------------------------------------

ANY2 = Config(**V21, **C1, fetch_bugs=BOTH, initial_leader="any")
ANY3 = Config(**V21, replicas=("A", "B", "C"), max_messages=1, max_crashes=1, max_leader_epoch=2,
              unflushed_loss=True, fetch_bugs=BOTH, initial_leader="any")


@pytest.mark.parametrize("config", [
    ANY2,
    # (three replicas' diverging fields move with their replica: the row permutation's test below)
    pytest.param(ANY3, marks=[pytest.mark.slow, pytest.mark.skipif(
        os.environ.get("KMC_SLOW") != "1", reason="24,834 states by brute force (~15 s): set KMC_SLOW=1")]),
], ids=["two", "three"])
def test_symmetry_counts_the_orbits_found_by_brute_force(config):
    model = KafkaModel(config)
    everything = reachable(model, 10**6)
    assert any(r.inflight is not None and r.inflight.diverging is not None for s in everything for r in s.replicas)
    orbits = len({min(encode(permute(s, p)) for p in symmetries(config)) for s in everything})
    assert orbits < len(everything)
    for engine in (LocalEngine, BatchEngine):
        assert engine(model, [], Options(symmetry=True)).run().stats.distinct == orbits
    assert BatchEngine(model, [], Options()).run().stats.distinct == len(everything)


def test_the_row_permutation_moves_the_diverging_fields_with_their_replica():
    model = KafkaModel(ANY3)
    kernel = model.batch_kernel()
    states = [s for s in reachable(model, 30000) if any(r.inflight and r.inflight.diverging is not None
                                                         for r in s.replicas)][:300]
    assert states
    rows = np.stack([kernel.encode(s) for s in states])
    for perm in itertools.permutations(range(3)):
        moved = kernel.codec.permuter(perm)(rows)
        assert [kernel.decode(r) for r in moved] == [permute(s, perm) for s in states]


# -- every engine with the option --------------------------------------------------------------------

def _summary(result):
    s = result.stats
    return ((s.distinct, s.generated, s.depth), {p: (v.path.init_index, v.path.choices, v.explanation)
                                                 for p, v in result.violations.items()})


@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
def test_every_local_engine_gives_one_result(symmetry):
    """Per-state and batch, keep-going and stop-at-first, and a batch run resumed from each of
    its level boundaries: one result (two replicas, both bugs, one initial state a replica)."""
    model = KafkaModel(ANY2)
    props = list(MODERN) + [UncommittedNeverExposed]
    opts = Options(keep_going=True, symmetry=symmetry)
    want = BatchEngine(model, props, opts).run()
    assert set(want.violations) == {CNL, LND, LCC, UNE}
    assert _summary(LocalEngine(model, props, opts).run()) == _summary(want)
    first = attrs.evolve(opts, keep_going=False)
    stop_batch, stop_local = BatchEngine(model, props, first).run(), LocalEngine(model, props, first).run()
    assert _summary(stop_batch) == _summary(stop_local)
    (name, v), = stop_batch.violations.items()
    assert v.path.choices == want.violations[name].path.choices  # the first one found is the keep-going one
    snaps = []
    engine = BatchEngine(model, props, opts)
    engine.on_level = lambda e: snaps.append(pickle.dumps(e.snapshot()))
    assert _summary(engine.run()) == _summary(want)
    assert len(snaps) > 5
    for blob in snaps[1::3]:
        resumed = BatchEngine(model, props, opts)
        resumed.restore(pickle.loads(blob))
        assert _summary(resumed.run()) == _summary(want)


SPEC = """title = "fetch path, both bugs, any initial leader"
[model]
replicas = 2
max_messages = 2
max_crashes = 2
max_leader_epoch = 2
truncation = "leader-epoch-2.1"
truncate_on_fetch = true
fetch_bugs = ["KAFKA-13141", "KAFKA-14704"]
initial_leader = "any"
[check]
keep_going = true
"""


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], capture_output=True, text=True)


def test_a_checkpoint_resumes_to_the_same_result(tmp_path):
    spec = tmp_path / "fetch.toml"
    spec.write_text(SPEC)
    whole = _cli("check", spec, "--no-progress", "--no-trace", "--json", tmp_path / "whole.json")
    assert whole.returncode == 1, whole.stderr  # the bugs violate properties
    ck = tmp_path / "ck"
    part = _cli("check", spec, "--checkpoint", ck, "--checkpoint-every", "0", "--max-states", "1500",
                "--no-progress", "--no-trace")
    assert part.returncode in (0, 1), part.stderr
    resumed = _cli("check", spec, "--resume", ck, "--no-progress", "--no-trace", "--json", tmp_path / "resumed.json")
    assert resumed.returncode == 1, resumed.stderr
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("whole", "resumed"))
    assert a["stats"]["distinct_states"] == b["stats"]["distinct_states"] == 7166
    for key in ("states_generated", "depth"):
        assert a["stats"][key] == b["stats"][key]
    assert a["violations"] == b["violations"]


@pytest.mark.spark
@pytest.mark.parametrize("symmetry", [False, pytest.param(True, marks=pytest.mark.skipif(
    os.environ.get("KMC_SLOW") != "1", reason="symmetry on Spark (the fetch path's rows travel in [plain]; symmetry on "
    "Spark in test_alter_partition.py): set KMC_SLOW=1"))], ids=["plain", "symmetry"])
def test_spark_gives_the_batch_engine_s_result_with_the_option(spark_sc, symmetry):
    """Both bugs on Spark from the second level on, two partitions: the rows' new columns travel."""
    from conftest import assert_same_spark_result
    from kmc.checker.spark.engine import SparkRowsEngine

    model = KafkaModel(ANY2)
    props = list(MODERN) + [UncommittedNeverExposed]
    options = Options(keep_going=True, symmetry=symmetry)
    want = BatchEngine(model, props, options).run()
    got = SparkRowsEngine(model, props, options, partitions=2, driver_level_limit=0).run()
    assert_same_spark_result(got, want)


@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="a Spark checkpoint resumed on other partitions "
                    "(tests/test_spark_checkpoint.py; the option's rows travel in test_spark_gives_the_batch_engine_s_"
                    "result_with_the_option[plain]): set KMC_SLOW=1")
def test_a_spark_checkpoint_with_the_option_resumes_on_other_partitions(spark_sc, tmp_path):
    """A Spark run on the batch path stopped at a level boundary, saved and resumed on other
    partitions: the levels it saved hold the new columns, and the result is the batch engine's."""
    from conftest import assert_same_spark_result
    from kmc.checker.engines import make_engine

    model = KafkaModel(ANY2)
    props = list(MODERN) + [UncommittedNeverExposed]
    options = Options(keep_going=True)
    want = BatchEngine(model, props, options).run()

    def stop(engine):
        if engine.stats.depth >= 8:
            engine.stop_requested = "interrupted"

    first = make_engine(model, props, options, engine="spark", partitions=3, driver_level_limit=0, on_level=stop,
                        data_root=tmp_path)
    assert first.run().stopped == "interrupted"
    snap = first.snapshot()
    again = make_engine(model, props, options, engine="spark", partitions=2, driver_level_limit=0)
    again.restore(snap, tmp_path)
    assert_same_spark_result(again.run(), want)
