"""The Spark rows engine gives exactly the batch engine's results.

One SparkContext on ``local[2,3]`` (two cores; a failed task is tried up to three times,
which the retry test needs) serves the whole module. Every shipped spec runs with the
small levels on the driver (no Spark job at all); the Spark path runs, in the default
selection, on a few specs and limits chosen to cover a stop at a violation, keep_going
with two violations found on Spark, a step property, the hand-over in the middle of a
run, symmetry and a retried task. The full matrix (every spec on Spark from the second
level on, with one and three partitions) is marked ``slow``: a Spark level costs a few
seconds on a loaded two-core machine.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import time
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import assert_same_spark_result as assert_same
from kmc.checker.local.rows import BatchEngine
from kmc.checker.base.errors import EngineError, UsageError
from kmc.checker.local.states import Options
from kmc.checker.contract.protocol import STEP, Property
from kmc.checker.spark.session import spark_context
from kmc.checker.spark.engine import SparkRowsEngine
from kmc.app.specs import load_spec

REPO = Path(__file__).resolve().parent.parent
HUGE = 10 ** 12  # a driver level limit no level reaches: Spark is never used

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java: no 'java' on PATH"),
]

# Specs that are benchmarks, not tests (docs/spark.md).
# Benchmarks, and the five two-crash three-replica specs (1.2 to 7.9 million states each:
# tests/test_modern.py runs them on the batch engine), are not run here.
BENCHMARKS = {"three-replicas-large", "three-replicas-huge", "three-replicas-mid", "three-replicas-billion", "lrs2-v21", "lrs2-v21-gate", "lrs2-v21-elr",
              "lrs2-kip279-elr", "v21-preferred-two-crashes"}
# The same for the acks specs of one to three million states (tests/test_acks.py).
BENCHMARKS |= {"acks-all-lrs2", "acks-all-lrs2-elr", "acks-all-lrs2-elr-lkl", "acks-all-unclean-two-crashes",
               "acks-all-kip279-unclean-two-crashes"}
# And for the alter_partition specs of two to three million states (tests/test_alter_partition.py).
BENCHMARKS |= {"three-replicas-large-ap", "ap-lrs2", "ap-be-lrs2", "kafka-14139-three-replicas", "kip903-three-replicas", "kafka-14139-acks-all"}
# The liveness specs run on every engine, Spark included, in tests/test_liveness_kafka.py.
BENCHMARKS |= {p.stem for p in (REPO / "specs").glob("live-*.toml")}
# And for the fetch path's (tests/test_fetch_path.py, tests/test_fetch_kernel.py): its benchmark and LRS2 (1.4 million).
BENCHMARKS |= {"three-replicas-large-fetch", "fetch-lrs2"}
# The availability specs check an always-possibly property; they run on Spark in
# tests/test_availability.py (against their pinned verdicts and trap counts).
AVAILABILITY = sorted(p.stem for p in (REPO / "specs").glob("avail-*.toml"))
# (A spec whose configuration the batch kernel declined, batch_unsupported, would run per state: none is.)
SPECS = sorted(p.stem for p in (REPO / "specs").glob("*.toml")
               if p.stem not in BENCHMARKS and p.stem not in AVAILABILITY
               and load_spec(REPO / "specs" / f"{p.stem}.toml").model().batch_unsupported() is None)
# Every level on Spark costs a job (about a second on two cores): the Spark path runs on
# specs chosen to cover each rule family, a violation stop, keep_going and lossy crashes;
# every spec runs through the same engine with its levels on the driver.
ON_SPARK = ("hw-unclean", "le-unflushed", "kip279-data-loss", "v21-elr-unflushed", "kafka-14139-two-replicas")


def _spec(name):
    return load_spec(REPO / "specs" / f"{name}.toml")


def _options(spec, **kw):
    return Options(max_depth=spec.max_depth, keep_going=spec.keep_going, max_states=spec.max_states, **kw)


@lru_cache(maxsize=None)
def _batch(name, **kw):
    spec = _spec(name)
    return BatchEngine(spec.model(), spec.properties(), _options(spec, **kw)).run()


def _rows(spec, options, **kw):
    engine = SparkRowsEngine(spec.model(), spec.properties(), options, **kw)
    return engine, engine.run()


# Every exactness test runs on both stores: a directory (POSIX) and an S3 object store (a
# moto server in this process, tests/conftest.py's s3_url). The S3 variant of the less
# representative ones runs with KMC_SLOW=1 only (the suite's time: see the README).
S3_SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="this test on the S3 store: set KMC_SLOW=1")
BOTH = pytest.mark.parametrize("store", ["posix", "s3"], indirect=True)
BOTH_SLOW_S3 = pytest.mark.parametrize("store", ["posix", pytest.param("s3", marks=S3_SLOW)], indirect=True)


@pytest.fixture
def store(request):
    """The ``store_dir`` of a Spark run: None (the temporary directory) or an S3 URL; for
    S3, the run's objects are checked to be gone at the end."""
    if request.param == "posix":
        yield None
        return
    url = request.getfixturevalue("s3_url")
    yield url
    from kmc.checker.blobs import open_blobs

    assert open_blobs(url).sizes() == {}  # every run removed its prefix


@pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                    reason="every spec on Spark, on 1 and 3 partitions: 4 more minutes; set KMC_SLOW=1")
@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("name", SPECS)
def test_every_spec_on_spark(spark_sc, name, partitions):
    # Every level after the initial states on Spark (the default selection runs ON_SPARK).
    spec = _spec(name)
    _engine, result = _rows(spec, _options(spec), partitions=partitions, driver_level_limit=0)
    assert_same(result, _batch(name))


def _every_fourth(names):
    """Every fourth spec (in name order, so every truncation rule and option family is
    among them); all of them with KMC_SLOW=1."""
    slow = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="the other specs: set KMC_SLOW=1")
    return [pytest.param(n, marks=[] if i % 4 == 0 else [slow]) for i, n in enumerate(names)]


@pytest.mark.parametrize("name", _every_fourth(SPECS))
def test_every_spec_on_the_driver(name):
    # With a limit no level reaches, the whole search is BatchEngine's on the driver
    # and no Spark session is started (the partition count plays no part).
    spec = _spec(name)
    engine, result = _rows(spec, _options(spec), partitions=3, driver_level_limit=HUGE)
    assert_same(result, _batch(name))
    assert engine.metrics["session_start_seconds"] is None and not engine.metrics["spark_levels"]


def _on_spark_params():
    """Three rules of ``ON_SPARK`` (high watermark, leader epoch, 2.1 with ELR) on one
    partition count each, the counts alternating; every spec on both with KMC_SLOW=1 (as
    ``test_every_spec_on_spark`` runs every spec)."""
    params = []
    for i, name in enumerate(ON_SPARK):
        for partitions in (1, 3):
            marks = [] if partitions == (1, 3)[i % 2] and i in (0, 1) else [pytest.mark.skipif(
                os.environ.get("KMC_SLOW") != "1", reason="the other specs and partition counts: set KMC_SLOW=1")]
            params.append(pytest.param(name, partitions, marks=marks, id=f"{name}-{partitions}"))
    return params


@pytest.mark.slow
@pytest.mark.parametrize(("name", "partitions"), _on_spark_params())
@BOTH_SLOW_S3
def test_specs_on_spark(spark_sc, name, partitions, store):
    spec = _spec(name)
    engine, result = _rows(spec, _options(spec), partitions=partitions, driver_level_limit=0, store_dir=store)
    assert_same(result, _batch(name))
    assert engine.metrics["driver_levels"] == 1  # only the initial states


def test_store_directory_and_its_errors(spark_sc, tmp_path):
    spec = _spec("le-unflushed")
    engine, result = _rows(spec, _options(spec), partitions=2, driver_level_limit=500, store_dir=tmp_path / "s")
    assert_same(result, _batch("le-unflushed"))
    assert engine.metrics["spark_levels"] and list((tmp_path / "s").iterdir()) == []  # the run's store is removed
    # The store at its largest, after the last level: the seen runs of every state (8 bytes
    # each) and the parent pointers (18 bytes) of those found after the hand-over.
    st = result.stats
    found_on_spark = st.distinct - sum(st.levels[: engine.metrics["driver_levels"]])
    assert found_on_spark > 0 and engine.metrics["store_peak_bytes"] >= 8 * st.distinct + 18 * found_on_spark
    (tmp_path / "file").write_text("")
    with pytest.raises(EngineError, match="spark store: cannot create a directory in .*file"):
        _rows(spec, _options(spec), partitions=2, driver_level_limit=0, store_dir=tmp_path / "file")


@pytest.mark.parametrize("partitions", [pytest.param(1, marks=pytest.mark.slow), 3])
@BOTH_SLOW_S3
def test_stop_at_a_violation_on_spark(spark_sc, partitions, store):
    engine, result = _rows(_spec("hw-data-loss"), _options(_spec("hw-data-loss")), partitions=partitions,
                           driver_level_limit=0, store_dir=store)
    assert_same(result, _batch("hw-data-loss"))
    assert len(engine.metrics["spark_levels"]) == 9


@BOTH_SLOW_S3
def test_keep_going_two_violations_found_on_spark(spark_sc, store):
    spec = _spec("hw-unclean")
    options = Options(max_depth=8, keep_going=True)
    want = BatchEngine(spec.model(), spec.properties(), options).run()
    assert set(want.violations) == {"CommittedNeverLost", "LogsNeverDiverge"}
    _engine, result = _rows(spec, options, partitions=3, driver_level_limit=0, store_dir=store)
    assert_same(result, want)


def _no_election_after_a_crash(model, before, action, after):
    """A made-up step property with no batch form (the engine decodes and asks it).

    Executors cannot import this test module: it is pickled by value (below)."""
    if action.name == "ElectLeader" and after.crashes:
        return "a leader was elected after a crash"
    return None


@BOTH_SLOW_S3
def test_step_property_found_on_spark(spark_sc, store):
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spec = _spec("hw-data-loss")
    props = list(spec.properties()) + [Property("NoElectionAfterCrash", STEP, _no_election_after_a_crash)]
    options = Options(max_depth=4, keep_going=True)
    want = BatchEngine(spec.model(), props, options).run()
    assert want.violations["NoElectionAfterCrash"].kind == "step"
    result = SparkRowsEngine(spec.model(), props, options, partitions=3, driver_level_limit=0, store_dir=store).run()
    assert_same(result, want)


@pytest.mark.parametrize("partitions", [1, 3])
@BOTH_SLOW_S3
def test_a_shrinking_tail_runs_its_tasks_in_process(spark_sc, partitions, store):
    # Levels past the hand-over that are no larger than the limit run the same tasks on
    # the driver, without a Spark job: the counts, verdicts and traces stay the batch
    # engine's (le-unflushed: two violations with their shortest counterexamples).
    spec = _spec("le-unflushed")
    engine, result = _rows(spec, _options(spec), partitions=partitions, driver_level_limit=500, store_dir=store)
    assert_same(result, _batch("le-unflushed"))
    metrics = engine.metrics
    assert metrics["in_process_levels"] > 0 and len(metrics["spark_levels"]) > metrics["in_process_levels"]


@BOTH
def test_hand_over_in_the_middle_with_symmetry(spark_sc, store):
    # Three replicas, symmetry on: the first levels on the driver, the rest on Spark.
    spec = _spec("kip279-isr-expansion")
    options = Options(max_depth=14, keep_going=True, symmetry=True)
    want = BatchEngine(spec.model(), spec.properties(), options).run()
    assert want.violations  # CommittedNeverLost, found at depth 13
    engine, result = _rows(spec, options, partitions=2, driver_level_limit=1500, store_dir=store)
    assert_same(result, want)
    assert engine.metrics["driver_levels"] > 1 and engine.metrics["spark_levels"]


@BOTH_SLOW_S3
def test_retried_tasks_change_nothing(spark_sc, monkeypatch, tmp_path, store):
    # Every expansion task of rank partition 0 fails on its first attempt (the marker file
    # says the fault was planted); the run can only succeed because Spark retried them
    # (local[2,3] allows three attempts).
    spec = _spec("le-unclean")
    options = Options(max_depth=5, keep_going=True)
    want = BatchEngine(spec.model(), spec.properties(), options).run()
    marker = tmp_path / "raised"
    monkeypatch.setenv("KMC_TEST_SPARK_FAULT", f"raise:{marker}")
    _engine, result = _rows(spec, options, partitions=2, driver_level_limit=0, store_dir=store)
    assert_same(result, want)
    assert marker.exists()


def test_progress_and_stop_requested(spark_sc):
    spec = _spec("le-data-loss")
    calls = []

    def progress(snapshot):
        calls.append(snapshot)
        if snapshot.depth == 4:
            engine.stop_requested = "interrupted"

    held = []  # after every level the store holds that level's frontier and the live runs only

    def on_level(e):
        root = Path(e.search.store.root)
        fronts = sorted(p.name for p in (root / "front").iterdir())
        runs = sorted(str(p.relative_to(root)) for p in root.glob("seen/*/run-*.npy"))
        want = sorted(f"seen/{i:04d}/run-{d:06d}.npy" for i, r in enumerate(e.search.runs) for d, _ in r)
        held.append((fronts == [f"{e.stats.depth:06d}"], runs == want))
        stores.append(root)

    stores = []
    engine = SparkRowsEngine(spec.model(), spec.properties(), progress=progress, partitions=2,
                             driver_level_limit=0, on_level=on_level)
    result = engine.run()
    assert held == [(True, True)] * 3
    assert not any(root.exists() for root in stores)  # the store is removed at the end
    assert (result.stopped, result.complete) == ("interrupted", False)
    want = BatchEngine(spec.model(), spec.properties(), Options(max_depth=4)).run()
    for field in ("distinct", "generated", "depth", "terminal", "levels", "fired", "new"):
        assert getattr(result.stats, field) == getattr(want.stats, field), field
    assert [s.depth for s in calls] == [2, 3, 4]


def test_engine_knows_nothing_of_kafka():
    import ast

    tree = ast.parse((REPO / "checker" / "spark" / "engine.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & {"model", "invariants", "reports"}


def test_cli_uses_the_rows_engine_for_a_model_with_a_batch_kernel():
    import argparse

    from kmc.app.cli import SHARED_OPTIONS
    from kmc.app.commands.common import make_engine

    spec = _spec("hw-data-loss")
    model = spec.model()

    def engine(**kw):
        args = argparse.Namespace(**{**SHARED_OPTIONS, "engine": "spark", **kw})
        return make_engine(spec, model, spec.properties(), Options(), None, args)

    assert type(engine()) is SparkRowsEngine
    assert engine().driver_level_limit == 50_000
    assert engine(driver_level_limit=0).driver_level_limit == 0
    assert engine(per_state=True).path == "per-state" and type(engine(per_state=True)) is SparkRowsEngine
    assert type(engine(checkpoint="ck")) is SparkRowsEngine


@pytest.mark.parametrize("name", ["avail-c2-elr", "avail-c5-elr"])
def test_an_always_possibly_property_is_taken_without_starting_spark(name):
    # The graph visitor takes it (checker.core.visitor): the Spark tasks write what it keeps, so
    # the engine no longer refuses it (its verdicts on Spark: tests/test_availability.py).
    spec = _spec(name)
    assert any(p.kind == "possibly" for p in spec.properties())
    engine = SparkRowsEngine(spec.model(), spec.properties(), _options(spec), partitions=2)
    assert [name for name, _ in engine.possibly] == ["PartitionRecoverable"]
    assert engine.search.visitor.active and engine.session.sc is None


@pytest.mark.parametrize("wait", [2, 10 ** 6])
def test_the_driver_goes_on_while_the_session_starts(spark_sc, monkeypatch, wait):
    """A session started early that is not up when a level passes the limit: the driver
    expands that level itself (up to WAIT times the limit), and hands over at the first
    level boundary after the session is up; the results are the batch engine's."""
    import time

    import kmc.checker.spark.start as search

    def slow_start(*args, **kwargs):
        time.sleep(2)  # the driver's levels of this spec take milliseconds
        return spark_context(*args, **kwargs)

    monkeypatch.setattr(search, "spark_context", slow_start)
    monkeypatch.setattr(search, "WAIT_FROM", 0)
    monkeypatch.setattr(search, "WAIT", wait)
    spec = _spec("le-unflushed")  # levels of up to 1,227 states
    engine, result = _rows(spec, _options(spec), partitions=2, driver_level_limit=200)
    assert_same(result, _batch("le-unflushed"))
    levels = result.stats.levels
    past = next(d for d, size in enumerate(levels, 1) if size > 200)  # the first level past the limit
    if wait == 2:  # levels of up to 400 states go on on the driver; the first larger one waits
        beyond = next(d for d, size in enumerate(levels, 1) if size > 400)
        assert past < beyond and engine.metrics["driver_levels"] == beyond  # the levels the driver held
        assert engine.metrics["spark_levels"] and engine.not_started is None
    else:  # every level on the driver: the session came up too late to be used
        assert engine.metrics["driver_levels"] == result.stats.depth > past
        assert not engine.metrics["spark_levels"]
        assert "while the session was starting" in engine.not_started


@pytest.mark.parametrize("share", [pytest.param(None, marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="unpacked rows (every other Spark test writes them): set KMC_SLOW=1")), 0.0])
def test_rows_packed_in_the_store_change_nothing(spark_sc, monkeypatch, share):
    """A level whose files would take a large share of the disk's free space is written
    with its rows packed four bits a column, and its owners remove the successors' files
    they have read; small levels are not; the results are the batch engine's either way."""
    import kmc.checker.partitioned.room as room
    from kmc.checker.partitioned.rows import RowsStore

    if share is not None:
        monkeypatch.setattr(room, "PACK_SHARE", share)  # every level counts as large
    left = []  # the successors' files still there when the driver drops a level's
    drop = RowsStore.drop_successors

    def counted(store, depth):
        where = os.path.join(store.root, "succ", f"{depth:06d}")
        left.append(sum(len(files) for _dir, _dirs, files in os.walk(where)))
        drop(store, depth)

    monkeypatch.setattr(RowsStore, "drop_successors", counted)
    spec = _spec("kip279-data-loss")
    engine, result = _rows(spec, _options(spec), partitions=3, driver_level_limit=0)
    assert_same(result, _batch("kip279-data-loss"))
    levels = len(engine.metrics["spark_levels"])
    assert levels > 5 and engine.metrics["packed_levels"] == (levels if share == 0.0 else 0)
    assert len(left) == levels and (max(left) == 0 if share == 0.0 else min(left[:-1]) > 0)


def test_the_hand_over_replaces_the_search_with_one_that_holds_no_engine(spark_sc):
    """Past driver_level_limit the engine's search is the Spark levels' object: it was
    given what it needs (the store, the session, the settings), not the engine."""
    from kmc.checker.partitioned.levels import PartitionedLevels
    from kmc.checker.spark.search import DriverLevels

    spec = _spec("hw-unclean")
    kinds = []

    def on_level(e):
        search = e.search
        kinds.append(type(search).__name__)
        if isinstance(search, PartitionedLevels):
            assert all(value is not e for value in vars(search).values())
            assert search.store is not None and search.session is e.session

    engine = SparkRowsEngine(spec.model(), spec.properties(), _options(spec), partitions=2,
                             driver_level_limit=20, on_level=on_level)
    assert isinstance(engine.search, DriverLevels)
    result = engine.run()
    assert_same(result, _batch("hw-unclean"))
    first = kinds.index("PartitionedLevels")
    assert 0 < first and set(kinds[:first]) == {"DriverLevels"} and set(kinds[first:]) == {"PartitionedLevels"}
    assert engine.metrics["driver_levels"] == first + 1 and engine.search.store is None  # removed at the end


@pytest.mark.parametrize("pack", [False, True])
def test_files_joined_in_place_are_their_arrays_concatenated(tmp_path, pack):
    """An owner reads the successors' files routed to it straight into one array each
    (``load_joined``): the same arrays as the files' ``load_arrays`` concatenated, for
    packed and plain rows, a file of rows that do not fit four bits, empty files and rows
    of Python states."""
    import numpy as np

    from kmc.checker.partitioned.rows_read import load_arrays, load_joined
    from kmc.checker.partitioned.rows_write import save_arrays

    rng = np.random.default_rng(7)
    paths = []
    for i, n in enumerate([5, 0, 1, 300, 17]):
        rows = rng.integers(-1, 15, size=(n, 6)).astype(np.int8)
        if i == 4:
            rows[:, 0] = 40  # outside four bits: written plain even when packing
        keys = rng.integers(0, 1 << 40, size=n).astype(np.int64)
        fps = rng.integers(0, 1 << 63, size=n, dtype=np.uint64)
        paths.append(str(tmp_path / f"f{i}.bin"))
        save_arrays(paths[-1], keys, fps, rows[:, 0].astype(np.int16), rows, pack=pack)
    want = [np.concatenate(a) for a in zip(*(load_arrays(p, 4) for p in paths))]
    for got, expect in zip(load_joined(paths, 4), want, strict=True):
        assert got.dtype == expect.dtype and got.shape == expect.shape and np.array_equal(got, expect)
    assert all(np.array_equal(a, b) for a, b in zip(load_joined(paths[3:4], 4), load_arrays(paths[3], 4)))
    assert load_joined([], 4) == []
    states = [np.array([("a", i), ("b",)], dtype=object) for i in range(2)]
    objects = [str(tmp_path / f"o{i}.bin") for i in range(2)]
    for path, s in zip(objects, states):
        save_arrays(path, np.arange(2), s)
    keys, rows = load_joined(objects, 2)
    assert keys.tolist() == [0, 1, 0, 1] and list(rows) == [("a", 0), ("b",), ("a", 1), ("b",)]


def test_the_writer_saves_in_the_background_and_owners_read_in_key_order(tmp_path):
    """A task's ``Writer`` writes the files ``save_arrays`` writes, counts the bytes of
    those it tallies, and raises a write's error when closed (once: not again on the way
    out of a block that raised); an owner orders the successors' objects by rank
    partition (``succ_order``), the order of their keys, whatever their names' widths;
    ``read_ahead`` is a hint that never fails; appended records make one object."""
    import random

    import numpy as np

    from kmc.checker.partitioned.rows import succ_name, succ_order
    from kmc.checker.partitioned.rows_read import load_arrays, load_joined, load_records, read_ahead
    from kmc.checker.partitioned.rows_write import Writer, encode_arrays, save_arrays

    rng = np.random.default_rng(3)
    arrays = [(rng.integers(0, 99, 40 * i + 1), rng.integers(-1, 15, (40 * i + 1, 4)).astype(np.int8))
              for i in range(40)]
    with Writer(depth=3) as writer:
        for i, (a, b) in enumerate(arrays):
            writer.save(str(tmp_path / "w" / f"{i}.bin"), a, b, pack=True, tally=i % 2 == 0)
        written = writer.close()
    expect = 0
    for i, (a, b) in enumerate(arrays):
        plain = save_arrays(str(tmp_path / "p" / f"{i}.bin"), a, b, pack=True)
        expect += plain if i % 2 == 0 else 0
        assert (tmp_path / "w" / f"{i}.bin").read_bytes() == (tmp_path / "p" / f"{i}.bin").read_bytes()
        got = load_arrays(str(tmp_path / "w" / f"{i}.bin"), 2)
        assert np.array_equal(got[0], a) and np.array_equal(got[1], b)
    assert written == expect > 0
    (tmp_path / "file").write_text("")
    writer = Writer()
    writer.save(str(tmp_path / "file" / "x.bin"), np.arange(3))  # under a file: cannot be written
    with pytest.raises(OSError):
        writer.close()
    with pytest.raises(KeyError), Writer() as writer:
        writer.save(str(tmp_path / "file" / "y.bin"), np.arange(3))
        raise KeyError("the block's own error")
    want = [0, 2, 9999, 10000]
    names = [succ_name(7, 5, i) for i in want]
    random.Random(1).shuffle(names)
    assert [succ_order(p) for p in sorted(names, key=succ_order)] == want
    read_ahead([str(tmp_path / "missing.bin"), str(tmp_path / "w" / "0.bin")])
    # One object a task and owner: a record a slice, appended, streamed to a file of its
    # writer as it comes (never held in memory) and committed at close, read back record by
    # record, and joined in place with other objects in order.
    with Writer() as writer:
        for i, (a, b) in enumerate(arrays[:5]):
            writer.append(str(tmp_path / "joined.bin"), a, b, pack=i % 2 == 1)
        assert not (tmp_path / "joined.bin").exists()  # nothing before the task ends
        big = [rng.integers(0, 99, 1 << 17), rng.integers(-1, 15, (1 << 17, 4)).astype(np.int8)]
        writer.append(str(tmp_path / "big.bin"), *big)  # 1.5 MiB: on the disk before the end
        streamed = sum(len(part) for part in encode_arrays(*big))
        deadline = time.monotonic() + 30
        while sum(p.stat().st_size for p in tmp_path.glob("big.bin.*.tmp")) < streamed - io.DEFAULT_BUFFER_SIZE:
            assert time.monotonic() < deadline, list(tmp_path.iterdir())
            time.sleep(0.01)
    assert not list(tmp_path.glob("*.tmp")) and load_records(str(tmp_path / "big.bin"), 2)[0][0].shape == (1 << 17,)
    with pytest.raises(KeyError), Writer() as writer:  # a task that fails leaves no object
        writer.append(str(tmp_path / "failed.bin"), *arrays[0])
        raise KeyError("the task's own error")
    assert not list(tmp_path.glob("failed.bin*"))
    records = load_records(str(tmp_path / "joined.bin"), 2)
    assert len(records) == 5 and all(np.array_equal(r[0], a) and np.array_equal(r[1], b)
                                     for r, (a, b) in zip(records, arrays[:5]))
    joined = load_joined([str(tmp_path / "joined.bin"), str(tmp_path / "w" / "7.bin")], 2)
    assert np.array_equal(joined[0], np.concatenate([a for a, _ in arrays[:5]] + [arrays[7][0]]))
    assert np.array_equal(joined[1], np.concatenate([b for _, b in arrays[:5]] + [arrays[7][1]]))


def test_the_daemon_s_workers_keep_the_memory_they_free():
    """``checker.base.memory.keep_freed_memory`` (the Spark workers' daemon sets it): after it,
    the memory of a freed array of 64 MiB stays with the process, and the next array of
    that size takes it instead of new pages (which the system would clear first); without
    it, the memory goes back at once."""
    import platform
    import subprocess
    import textwrap

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's allocator only")
    code = textwrap.dedent(
        """
        import os, sys
        import numpy as np
        from kmc.checker.base.memory import keep_freed_memory

        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
        if sys.argv[1] == "keep":
            assert keep_freed_memory()
        start = rss()
        a = np.ones(1 << 23); del a
        freed = rss()
        b = np.ones(1 << 23); del b
        print(freed - start, rss() - start)
        """
    )
    kept = {}
    for how in ("keep", "default"):
        run = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        kept[how] = [int(x) for x in run.stdout.split()]
    assert kept["default"][0] < 8 and kept["default"][1] < 8  # handed back each time
    assert 60 <= kept["keep"][0] <= kept["keep"][1] < 72  # kept, and taken again


def test_the_driver_hands_back_the_memory_its_levels_freed():
    """``checker.base.memory.release_freed_memory`` (the Spark engine's driver calls it once
    its levels are handed over): under the kmc process's allocator settings
    (``reuse_freed_memory``) a freed array of 64 MiB, below one still alive, stays with the
    process; after the call the system has it back."""
    import platform
    import subprocess
    import textwrap

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's allocator only")
    code = textwrap.dedent(
        """
        import os
        import numpy as np
        from kmc.checker.base.memory import release_freed_memory, reuse_freed_memory

        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
        assert reuse_freed_memory()
        start = rss()
        a = np.ones(1 << 23)
        b = np.ones(1 << 12)  # alive above it
        del a
        freed = rss()
        released = release_freed_memory()
        print(freed - start, rss() - start, released, int(b[0]))
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    kept, after, released, _ = run.stdout.split()
    assert 60 <= int(kept) < 72 and int(after) < 8 and released == "True", run.stdout


@pytest.mark.spark
def test_the_daemon_s_workers_start_with_its_objects_frozen(spark_sc):
    """PySpark's reused worker runs a full garbage collection after every task. The daemon
    (``checker/spark/daemon.py``, under a local master) freezes what it has imported before it
    forks, so that these collections skip numpy's, PySpark's and kmc's objects."""
    frozen = spark_sc.parallelize(range(2), 2).map(lambda _: __import__("gc").get_freeze_count()).collect()
    assert min(frozen) > 20_000, frozen  # (about 42,000 with numpy and the task modules alone)
