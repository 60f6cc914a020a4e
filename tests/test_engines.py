"""Every engine (local and Spark, per-state and batch paths) gives the same counts,
verdicts and traces under every option, or refuses the option in one line.

The engines are compositions of one level driver (``checker.core.driver``) with a search
object, so these tests are what keeps them from drifting apart again: a spec with
symmetry reduction used to be explored unreduced by the per-state Spark engine.

Spark runs in local mode on the session's one SparkContext, with a small
``driver_level_limit`` so that the later levels run in Spark tasks.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kmc.checker.engines import make_engine
from kmc.checker.base.errors import UsageError
from kmc.checker.core.options import Options
from kmc.app.specs import load_spec, parse_spec

REPO = Path(__file__).resolve().parent.parent
HAVE_JAVA = shutil.which("java") is not None

# Three replicas, any initial leader, one message, one crash, epochs <= 1, the KIP-279 rule.
# Without symmetry reduction 14,937 distinct states; with it, 2,556 orbits (both counted by
# a plain search over the model below, which shares no code with the engines).
SYMMETRIC = b"""
title = "three replicas, any initial leader"
[model]
replicas = 3
initial_leader = "any"
max_messages = 1
max_crashes = 1
max_leader_epoch = 1
truncation = "leader-epoch-kip279"
[check]
keep_going = true
"""

LOCAL = [("local", False), ("local", True)]
SPARK = [pytest.param("spark", False, marks=pytest.mark.spark, id="spark-batch"),
         pytest.param("spark", True, marks=pytest.mark.spark, id="spark-per-state")]


def _engine(kind, per_state, model, props, options, limit=0, **kw):
    """An engine; on Spark, the levels of more than ``limit`` states and all after them run
    in Spark tasks, on two partitions."""
    spark = {"partitions": 2, "driver_level_limit": limit} if kind == "spark" else {}
    return make_engine(model, props, options, engine=kind, per_state=per_state, **spark, **kw)


def summary(result):
    s = result.stats
    return ((s.distinct, s.generated, s.depth, s.terminal, s.levels, s.fired, s.new),
            (result.complete, result.stopped, result.checked),
            {k: (v.kind, v.explanation, v.path.init_index, v.path.choices, v.path.states)
             for k, v in result.violations.items()})


@pytest.fixture(scope="module")
def symmetric_spec():
    return parse_spec(SYMMETRIC)


@pytest.fixture
def on_spark(request):
    if request.node.get_closest_marker("spark") is None:
        return None
    if not HAVE_JAVA:
        pytest.skip("the Spark engine needs Java")
    return request.getfixturevalue("spark_sc")


def test_the_symmetric_spec_counts_by_brute_force(symmetric_spec):
    """14,937 states by a plain breadth-first search over the model (no engine), and
    2,556 orbits: the classes of states equal up to a renaming of the replicas."""
    model = symmetric_spec.model()
    seen = {model.encode(s): s for s in model.init_states()}
    level = list(seen.values())
    while level:
        nxt = []
        for state in level:
            for _action, succ in model.successors(state):
                key = model.encode(succ)
                if key not in seen:
                    seen[key] = succ
                    nxt.append(succ)
        level = nxt
    assert len(seen) == 14_937
    orbits = {min(model.encode(model.permute(s, p)) for p in model.symmetries()) for s in seen.values()}
    assert len(orbits) == 2_556


@pytest.mark.parametrize("kind,per_state", LOCAL + SPARK)
@pytest.mark.parametrize("symmetry,distinct", [(False, 14_937), (True, 2_556)])
def test_symmetry_on_every_engine(symmetric_spec, kind, per_state, symmetry, distinct, on_spark):
    if (kind, per_state, symmetry) == ("spark", True, False) and os.environ.get("KMC_SLOW") != "1":
        pytest.skip("the per-state path on Spark without symmetry (its batch path and its run with "
                    "symmetry stay): set KMC_SLOW=1")
    model = symmetric_spec.model()
    options = Options(keep_going=True, symmetry=symmetry)
    # The last 7 levels on Spark (the level sizes are asserted below).
    limit = 340 if symmetry else 2000
    result = _engine(kind, per_state, model, symmetric_spec.properties(), options, limit).run()
    if symmetry:
        assert result.stats.levels == [1, 4, 12, 31, 62, 110, 175, 240, 292, 325, 350, 324, 252, 177, 121,
                                       60, 16, 4]
    else:
        assert result.stats.levels == [3, 18, 63, 165, 351, 630, 1005, 1413, 1704, 1923, 2067, 1911, 1482,
                                       1029, 714, 339, 96, 24]
    assert (result.stats.distinct, result.stats.depth, result.complete) == (distinct, 18, True)


# -- the toy model: every engine x every option ----------------------------------------------

TOY_OPTIONS = {
    "plain": Options(),
    "keep-going": Options(keep_going=True),
    "max-depth": Options(keep_going=True, max_depth=4),
    "max-states": Options(keep_going=True, max_states=5),
}


@pytest.fixture(scope="module")
def toy_reference():
    from toy import TwoCounters

    return {name: make_engine(TwoCounters(), None, o, engine="local").run() for name, o in TOY_OPTIONS.items()}


def test_toy_reference_numbers(toy_reference):
    # Worked out by hand (tests/test_oracle.py): 16 states on 7 levels, 25 transitions;
    # SumBelow (x + y < 5) first fails at depth 6.
    full = toy_reference["keep-going"].stats
    assert (full.distinct, full.generated, full.depth, full.levels) == (16, 25, 7, [1, 2, 3, 4, 3, 2, 1])
    assert len(toy_reference["keep-going"].violations["SumBelow"].path) == 6
    assert toy_reference["plain"].stats.levels == [1, 2, 3, 4, 3, 2]
    assert toy_reference["max-depth"].stats.levels == [1, 2, 3, 4]
    assert toy_reference["max-states"].stopped == "max-states"


@pytest.mark.parametrize("option", sorted(TOY_OPTIONS))
@pytest.mark.parametrize("kind", ["local", pytest.param("spark", marks=pytest.mark.spark)])
def test_toy_every_engine_every_option(toy_reference, kind, option, on_spark):
    from toy import TwoCounters

    if on_spark is not None:
        on_spark.addPyFile(str(REPO / "tests" / "toy.py"))  # executors import it, as a user's model
    got = _engine(kind, True, TwoCounters(), None, TOY_OPTIONS[option]).run()
    assert summary(got) == summary(toy_reference[option])


@pytest.mark.parametrize("kind", ["local", "spark"])
def test_symmetry_without_symmetries_is_one_line(kind):
    from toy import TwoCounters

    with pytest.raises(UsageError, match="declares no symmetries") as e:
        _engine(kind, True, TwoCounters(), [], Options(symmetry=True))
    assert "\n" not in str(e.value)


# -- one Kafka spec: every engine x every option ----------------------------------------------

KAFKA_OPTIONS = {
    "stop-at-violation": Options(),
    "keep-going": Options(keep_going=True),
    "max-depth": Options(keep_going=True, max_depth=12),
    "max-states": Options(keep_going=True, max_states=2000),
    "symmetry": Options(keep_going=True, symmetry=True),
}
# On Spark (levels from the ninth on, of 337 states or more): keep-going is left out, its
# result is the symmetry option's on this spec (see below); the per-state path runs one.
SPARK_KAFKA = ([pytest.param("spark", False, o, marks=pytest.mark.spark, id=f"spark-batch-{o}")
                for o in ("stop-at-violation", "max-depth", "max-states", "symmetry")]
               + [pytest.param("spark", True, o, marks=pytest.mark.spark, id=f"spark-per-state-{o}")
                  for o in ("symmetry",)])


@pytest.fixture(scope="module")
def kafka():
    spec = load_spec(REPO / "specs" / "hw-data-loss.toml")
    model = spec.model()
    props = [p for p in spec.properties() if p.symmetric]
    return model, props, {name: make_engine(model, props, o, engine="local", per_state=True).run()
                          for name, o in KAFKA_OPTIONS.items()}


def test_kafka_reference_numbers(kafka):
    _model, _props, ref = kafka
    # tests/pins.py: hw-data-loss stops at its violation with 1834 distinct states, depth 10.
    assert (ref["stop-at-violation"].stats.distinct, ref["stop-at-violation"].stats.depth) == (1834, 10)
    assert ref["keep-going"].stats.levels == [1, 4, 12, 31, 68, 127, 220, 337, 454, 580, 679, 703, 642, 490,
                                              286, 164, 66, 30, 14, 5]
    assert ref["max-depth"].stats.depth == 12 and ref["max-depth"].stopped == "max-depth"
    assert ref["max-states"].stopped == "max-states"
    # Replica 0 leads initially, so no renaming maps a state to another: as many orbits as
    # states (the symmetric spec above is where the reduction shows).
    assert ref["symmetry"].stats.distinct == ref["keep-going"].stats.distinct == 4913


@pytest.mark.parametrize("kind,per_state,option", [("local", False, o) for o in sorted(KAFKA_OPTIONS)]
                         + SPARK_KAFKA)
def test_kafka_every_engine_every_option(kafka, kind, per_state, option, on_spark):
    model, props, ref = kafka
    got = _engine(kind, per_state, model, props, KAFKA_OPTIONS[option], limit=300).run()
    assert summary(got) == summary(ref[option])


@pytest.mark.parametrize("per_state", [False, True])
def test_memory_ceiling_on_both_local_paths(kafka, per_state, monkeypatch):
    """A stop at the memory ceiling inside a level goes back to the level boundary; the
    resumed run ends with the counts of a run never stopped."""
    import kmc.checker.core.driver
    import kmc.checker.local.states

    model, props, ref = kafka
    monkeypatch.setattr(kmc.checker.local.rows, "CHUNK_ROWS", 64)
    engine = _engine("local", per_state, model, props, Options(keep_going=True, max_memory=1 << 30))
    monkeypatch.setattr(kmc.checker.core.driver, "resident_bytes", lambda: (1 << 40) * (len(engine.seen) > 500))
    partial = engine.run()
    assert partial.stopped == "max-memory" and not partial.complete
    snap = engine.snapshot()
    assert snap["stats"]["distinct"] == len(snap["seen"]) <= 500 < partial.stats.distinct
    monkeypatch.setattr(kmc.checker.core.driver, "resident_bytes", lambda: 0)
    resumed = _engine("local", per_state, model, props, Options(keep_going=True))
    resumed.restore(snap)
    assert summary(resumed.run()) == summary(ref["keep-going"])


@pytest.mark.spark
@pytest.mark.parametrize("per_state", [False, True])
def test_memory_ceiling_on_spark_stops_at_a_level_boundary(kafka, per_state, monkeypatch, on_spark):
    """On Spark a level is one job: the ceiling (the driver process's memory) is looked at
    between levels, and the run stops there with the counts of the levels done."""
    import kmc.checker.core.driver

    model, props, ref = kafka
    engine = _engine("spark", per_state, model, props, Options(keep_going=True, max_memory=1 << 30), limit=300)
    monkeypatch.setattr(kmc.checker.core.driver, "resident_bytes", lambda: (1 << 40) * (engine.stats.distinct > 2500))
    got = engine.run()
    assert (got.stopped, got.complete) == ("max-memory", False)
    want = ref["keep-going"].stats.levels
    # 1 + 4 + ... + 580 = 1834 states after 10 levels, 2513 after 11: the stop follows level 11.
    assert got.stats.levels == want[:11] and got.stats.distinct == sum(want[:11]) == 2513


@pytest.mark.spark
def test_toy_checkpoint_resumes_on_another_partition_count(toy_reference, tmp_path, on_spark):
    """A run of the toy model stopped at depth 4 on two partitions, resumed from its
    snapshot on three, ends with the numbers and the trace of a run never stopped."""
    import pickle

    from toy import TwoCounters

    on_spark.addPyFile(str(REPO / "tests" / "toy.py"))
    snaps = []

    def stop_at_4(engine):
        if engine.stats.depth == 4:
            snaps.append(pickle.dumps(engine.snapshot()))
            engine.stop_requested = "interrupted"

    first = _engine("spark", True, TwoCounters(), None, Options(keep_going=True), on_level=stop_at_4,
                    data_root=tmp_path)
    assert first.run().stopped == "interrupted"
    snap = pickle.loads(snaps[-1])
    assert (snap["phase"], snap["partitions"]) == ("spark", 2)
    again = make_engine(TwoCounters(), None, Options(keep_going=True), engine="spark", per_state=True,
                        partitions=3, driver_level_limit=0)
    again.restore(snap, tmp_path)
    assert summary(again.run()) == summary(toy_reference["keep-going"])
