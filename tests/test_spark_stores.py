"""The Spark engine's stores (``checker.blobs``): a directory, or an object store such as
S3 (here a moto server on 127.0.0.1: tests/conftest.py's ``s3_url``) that needs no shared
file system. The same results on both, a level's objects found by the names the tasks
return, about P² objects a level, checkpoints named with the writers' digests, a store
every executor can see checked first, and stores kmc cannot use refused in one line
before anything starts."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_same_spark_result as assert_same
from kmc.app.cli import main
from kmc.checker.blobs import open_blobs, store_location
from kmc.checker.base.errors import EngineError

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs"
HW = SPECS / "hw-data-loss.toml"  # 1834 distinct states, depth 10 (tests/pins.py)
HW_UNCLEAN = SPECS / "hw-unclean.toml"  # keep_going: 5548 distinct, depth 21 (tests/pins.py)

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java: no 'java' on PATH")


# -- stores refused first -----------------------------------------------------------------------


@pytest.mark.parametrize(("location", "master", "message"), [
    ("s3x://bucket/x", None, "--spark-store s3x://bucket/x: unknown scheme s3x:// (use a directory every executor "
                             "sees, or s3://, gs://, gcs://, hdfs://, viewfs://, abfs://, abfss://, file://)"),
    ("store", "spark://h:7077", "--spark-store store: a relative directory with the master spark://h:7077 would be "
                                "resolved in each executor's own working directory; give an absolute path every "
                                "executor sees, or an object store URL (s3://, gs://, hdfs://, abfs://)"),
    ("store", "yarn", "with the master yarn"),
])
def test_a_store_no_executor_could_use_is_refused_in_one_line(location, master, message):
    with pytest.raises(EngineError) as e:
        store_location(location, master)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_stores_kmc_can_use():
    for location, master in [("s3://b/x", "yarn"), ("gs://b/x", None), ("/abs", "spark://h:7077"),
                             ("rel", "local[2]"), ("rel", None), ("file:///tmp/x", "yarn")]:
        assert store_location(location, master) == location
    assert type(open_blobs("s3://b/x?endpoint_override=127.0.0.1:1&scheme=http")).__name__ == "ArrowBlobs"
    assert type(open_blobs("rel")).__name__ == "PosixBlobs" and open_blobs("rel").root == os.path.abspath("rel")


def test_the_cli_refuses_a_bad_store_before_the_search(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyspark")
    monkeypatch.chdir(tmp_path)
    code = main(["check", str(HW), "--engine", "spark", "--no-progress", "--spark-store", "s3x://bucket/x"])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith("kmc: error: --spark-store s3x://bucket/x: unknown scheme s3x://")
    assert len(err.strip().splitlines()) == 1 and "distinct states" not in out
    code = main(["check", str(HW), "--engine", "spark", "--no-progress", "--spark-store", "rel",
                 "--master", "spark://127.0.0.1:1"])
    assert code == 2 and "a relative directory with the master spark://127.0.0.1:1" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no directory made of either


@pytest.mark.spark
@needs_java
def test_an_s3_url_is_an_object_store_not_a_relative_directory(spark_sc, s3_url, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["check", str(HW), "--engine", "spark", "--no-progress", "--no-trace", "--driver-level-limit", "0",
                 "--partitions", "2", "--spark-store", s3_url])
    out, _err = capsys.readouterr()
    assert code == 1 and "1,834 distinct states" in out  # tests/pins.py: hw-data-loss
    assert list(tmp_path.iterdir()) == [] and open_blobs(s3_url).sizes() == {}


# -- the blob stores ------------------------------------------------------------------------------


@pytest.fixture(params=["posix", "s3"])
def blobs(request, tmp_path):
    if request.param == "posix":
        return open_blobs(str(tmp_path / "root")).child("run")
    return open_blobs(request.getfixturevalue("s3_url")).child(f"blobs-{os.urandom(4).hex()}")


def test_a_blob_store_keeps_whole_objects_by_name(blobs, tmp_path):
    import pickle

    assert blobs.put("a/one.bin", [b"hello ", memoryview(b"world")]) == 11
    blobs.put("a/two.bin", [b"x" * 1000])
    blobs.put("b/three.bin", [b""])
    assert blobs.get("a/one.bin") == b"hello world"
    with blobs.open("a/two.bin") as f:
        f.seek(10)
        assert f.read(3) == b"xxx"
    assert blobs.sizes() == {"a/one.bin": 11, "a/two.bin": 1000, "b/three.bin": 0}
    assert blobs.sizes("a") == {"a/one.bin": 11, "a/two.bin": 1000}
    with pytest.raises(FileNotFoundError):
        blobs.get("a/none.bin")
    blobs.copy_out("a/one.bin", str(tmp_path / "copy"))
    assert (tmp_path / "copy").read_bytes() == b"hello world"
    again = pickle.loads(pickle.dumps(blobs))  # as a Spark task gets it
    assert again.root == blobs.root and again.get("a/one.bin") == b"hello world"
    blobs.delete(["a/one.bin", "a/none.bin"])
    blobs.delete_prefix("a")
    assert blobs.sizes() == {"b/three.bin": 0}
    free = blobs.free_bytes()
    assert (free is None) == (type(blobs).__name__ == "ArrowBlobs") and (free is None or free > 0)
    blobs.delete_prefix("")
    assert blobs.sizes() == {}


def test_an_object_streamed_part_by_part_appears_whole_at_its_commit_or_never(blobs):
    """``Blobs.stream``: what a task appends slice by slice, never held whole in memory."""
    stream = blobs.stream("c/four.bin")
    assert stream.write(b"hello ") == 6 and stream.write(memoryview(b"world")) == 5
    assert "c/four.bin" not in blobs.sizes()  # not before the commit
    assert stream.commit() == 11 and blobs.get("c/four.bin") == b"hello world"
    stream.abort()  # after the commit: nothing
    dropped = blobs.stream("c/five.bin")
    dropped.write(b"x" * 100)
    dropped.abort()
    assert blobs.sizes("c") == {"c/four.bin": 11}  # and no part of the dropped one left


def test_an_s3_url_never_shows_its_keys(s3_url):
    blobs = open_blobs(s3_url)
    assert "secret" in s3_url and "secret" not in blobs.root and blobs.root == "s3://kmc-test/runs"


# -- runs on both stores ----------------------------------------------------------------------------

STORES = ["posix", "s3"]


def _store_dir(request, store):
    return None if store == "posix" else request.getfixturevalue("s3_url")


@pytest.mark.spark
@needs_java
@pytest.mark.parametrize("store", ["posix", pytest.param("s3", marks=pytest.mark.skipif(
    __import__("os").environ.get("KMC_SLOW") != "1", reason="the S3 store's objects are counted in the checkpoint test: set KMC_SLOW=1"))])
def test_a_level_is_about_p_squared_objects_found_by_name(spark_sc, request, monkeypatch, store):
    # Many slices a task (SLICE_ROWS of 64 rows): still one successors' object a task and
    # owner, at most P * P a level; the graph visitor's records (an always-possibly
    # property) come back through the names the tasks return, with the pinned verdicts.
    from kmc.app.specs import load_spec
    from kmc.checker.partitioned import tasks as spark_rows_tasks
    from kmc.checker.local.rows import BatchEngine
    from kmc.checker.local.states import Options
    from kmc.checker.spark.engine import SparkRowsEngine
    from kmc.checker.partitioned.rows import RowsStore

    monkeypatch.setattr(spark_rows_tasks, "SLICE_ROWS", 64)
    counts = []
    drop = RowsStore.drop_successors

    def counted(self, depth):
        counts.append(len(self.blobs.sizes(f"succ/{depth:06d}")))
        drop(self, depth)

    monkeypatch.setattr(RowsStore, "drop_successors", counted)
    listed = []
    real_listdir = os.listdir

    def listdir(path="."):  # a listing of a level's graph records: what a lagging NFS listing would drop
        if "kmc-rows-" in str(path) and "/graph" in str(path):
            listed.append(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    spec = load_spec(SPECS / "avail-c2-elr.toml")
    options = Options(keep_going=True)
    want = BatchEngine(spec.model(), spec.properties(), options).run()
    engine = SparkRowsEngine(spec.model(), spec.properties(), options, partitions=3, driver_level_limit=100,
                             store_dir=_store_dir(request, store))
    got = engine.run()
    assert_same(got, want)
    assert (got.violations.keys(), [v.traps for v in got.violations.values()]) == (
        want.violations.keys(), [v.traps for v in want.violations.values()])
    assert counts and max(counts) <= 9 and not listed
    assert max(engine.metrics["spark_levels"])[0] > 3 * 64  # levels of many slices a task


@pytest.mark.spark
@needs_java
@pytest.mark.parametrize("store", STORES)
def test_a_checkpoint_names_the_objects_with_their_writers_digests(spark_sc, request, tmp_path, store, monkeypatch):
    from conftest import EXPLORATIONS
    from kmc.app.specs import load_spec
    from kmc.checker.partitioned import save as spark_save
    from kmc.checker.engines import make_engine

    spec = load_spec(HW)
    where = _store_dir(request, store)
    hashed = []
    real = spark_save.digest_of
    monkeypatch.setattr(spark_save, "digest_of", lambda parts: hashed.append(1) or real(parts))

    def stop(engine):
        if engine.stats.depth >= 5:
            engine.stop_requested = "interrupted"

    first = make_engine(spec.model(), spec.properties(), engine="spark", partitions=3, driver_level_limit=0,
                        on_level=stop, data_root=tmp_path, store_dir=where)
    assert first.run().stopped == "interrupted"
    snap = first.snapshot()
    assert not hashed  # the driver read nothing back to hash it
    files = snap["files"]
    assert len(files) > 3
    if where is None:  # a directory store: the level's files linked into the checkpoint directory
        level = tmp_path / snap["data"]
        assert sorted(files) == sorted(p.name for p in level.iterdir()) and "objects" not in snap
        stored = {name: (level / name).read_bytes() for name in files}
    else:  # an object store: a manifest, the objects left in the run's prefix
        objects = snap["objects"]
        assert snap["data"] is None and not list(tmp_path.glob("level-*"))
        assert objects["root"] == f"s3://kmc-test/runs/{objects['store']}" and sorted(objects["names"]) == sorted(files)
        blobs = open_blobs(where).child(objects["store"])
        stored = {name: blobs.get(objects["names"][name]) for name in files}
    for name, (size, digest) in files.items():
        data = stored[name]
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, digest), name
    again = make_engine(spec.model(), spec.properties(), engine="spark", partitions=2, store_dir=where)
    again.restore(snap, tmp_path)
    got, want = again.run(), EXPLORATIONS["hw-data-loss"][2]
    assert (got.stats.distinct, got.stats.generated, got.stats.depth) == (1834, 3455, 10)
    for field in ("distinct", "generated", "depth", "terminal", "levels", "fired", "new"):
        assert getattr(got.stats, field) == getattr(want.stats, field), field
    assert {k: v.path for k, v in got.violations.items()} == {k: v.path for k, v in want.violations.items()}
    if where is not None:  # what the checkpoint names is kept (no checkpoint replaced it), nothing else
        left = open_blobs(where).sizes()
        assert sorted(left) == sorted([f"{objects['store']}/{n}" for n in objects["names"].values()]
                                      + [f"{objects['store']}/owner", f"{objects['store']}/kept"])
        open_blobs(where).delete_prefix(objects["store"])


def _stopped_on_s3(s3_url, tmp_path, depth=5):
    """A run of hw-data-loss on S3, stopped after the level of ``depth``: its spec, its
    engine and its snapshot."""
    from kmc.app.specs import load_spec
    from kmc.checker.engines import make_engine

    spec = load_spec(HW)

    def stop(engine):
        if engine.stats.depth >= depth:
            engine.stop_requested = "interrupted"

    first = make_engine(spec.model(), spec.properties(), engine="spark", partitions=3, driver_level_limit=0,
                        on_level=stop, data_root=tmp_path, store_dir=s3_url)
    assert first.run().stopped == "interrupted"
    return spec, first, first.snapshot()


@pytest.mark.spark
@needs_java
@pytest.mark.parametrize("damage", ["flip", "missing", "elsewhere"])
def test_a_damaged_or_missing_object_of_a_manifest_is_refused_in_one_line(spark_sc, s3_url, tmp_path, damage):
    from kmc.checker.checkpoints.file import CheckpointError
    from kmc.checker.engines import make_engine

    spec, _first, snap = _stopped_on_s3(s3_url, tmp_path)
    objects = snap["objects"]
    blobs = open_blobs(s3_url).child(objects["store"])
    name = max(objects["names"].values(), key=lambda n: len(blobs.get(n)))
    where = s3_url
    if damage == "flip":
        data = bytearray(blobs.get(name))
        data[len(data) // 2] ^= 0x20
        blobs.put(name, [bytes(data)])
        words = f"s3://kmc-test/runs/{objects['store']}: damaged ({name}: checksum mismatch)"
    elif damage == "missing":
        blobs.delete([name])
        words = f"s3://kmc-test/runs/{objects['store']}: damaged (missing {name})"
    else:  # resumed with another store location: the objects are not there
        where = s3_url.replace("/runs?", "/other?")
        words = f"the checkpoint's level is in the Spark store {objects['root']}: resume it with --spark-store s3://kmc-test/runs"
    again = make_engine(spec.model(), spec.properties(), engine="spark", partitions=2, store_dir=where)
    with pytest.raises(CheckpointError) as e:
        again.restore(snap, tmp_path)
    line = str(e.value)
    assert line.startswith(words) and "\n" not in line and "secret" not in line
    if damage != "elsewhere":
        assert line.endswith("the checkpoint cannot be resumed, start a new run")
    open_blobs(s3_url).delete_prefix(objects["store"])


@pytest.mark.spark
@needs_java
@pytest.mark.skipif(__import__("os").environ.get("KMC_SLOW") != "1", reason="another Spark run of its own (the suite's time): set KMC_SLOW=1")
def test_sigkill_on_s3_then_resume_gives_the_same_result_and_removes_the_killed_runs_objects(s3_url, tmp_path):
    # A run killed after its checkpoint of level 8: the checkpoint is a manifest of the
    # objects in the run's prefix (no level directory), which a later run's clean-up of
    # killed runs' stores leaves; resumed on two partitions instead of three, the result
    # is the uninterrupted run's, and once the resumed run's checkpoint names its own
    # objects the killed run's prefix is gone.
    import json
    import signal

    from kmc.checker.checkpoints import file as checkpoint
    from kmc.checker.partitioned.rows_stale import clean_stale
    from test_checkpoint import comparable, kmc_at_level, kmc_run, reference

    ck = tmp_path / "ck"
    spark = ("--engine", "spark", "--master", "local[2]", "--driver-level-limit", "0", "--spark-store", s3_url)
    proc = kmc_at_level("check", HW_UNCLEAN, *spark, "--partitions", "3", "--checkpoint", ck, "--checkpoint-every",
                        "0", "--no-progress", depth=8, signals=("KILL",))
    proc.communicate(timeout=150)
    assert proc.returncode == -signal.SIGKILL
    header, snap = checkpoint.read(ck)
    objects = snap["objects"]
    assert snap["data"] is None and not list(ck.glob("level-*")) and 8 <= header["depth"] < 21
    assert clean_stale(s3_url) is None  # the killed run's store is named by a checkpoint: kept
    blobs = open_blobs(s3_url).child(objects["store"])
    for name, (size, digest) in snap["files"].items():
        data = blobs.get(objects["names"][name])
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, digest), name
    code, out, err = kmc_run("check", "--resume", ck, "--master", "local[2]", "--partitions", "2", "--spark-store",
                             s3_url, "--no-progress", "--json", tmp_path / "r.json", timeout=150)
    assert code == 1, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert comparable(doc) == comparable(reference(HW_UNCLEAN))
    stats = doc["stats"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (5548, 12276, 21)  # tests/pins.py
    final = checkpoint.read(ck)[1]["objects"]
    assert final["store"] != objects["store"]
    assert {name.split("/", 1)[0] for name in open_blobs(s3_url).sizes()} == {final["store"]}
    open_blobs(s3_url).delete_prefix(final["store"])


@pytest.mark.spark
@needs_java
@pytest.mark.skipif(__import__("os").environ.get("KMC_SLOW") != "1", reason="another Spark run of its own (the suite's time): set KMC_SLOW=1")
def test_a_manifest_resumed_into_another_checkpoint_directory_keeps_its_objects(spark_sc, s3_url, tmp_path):
    # Resumed from A into a new checkpoint directory B: B's checkpoint names the resumed
    # run's own objects, and A's still names the first run's, which stay (A resumes again).
    from kmc.checker.checkpoints import file as checkpoint
    from kmc.checker.checkpoints import writer as checkpointer
    from kmc.checker.engines import make_engine

    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    spec, first, snap = _stopped_on_s3(s3_url, first_dir)
    with checkpointer.Checkpointer(first_dir, {"kmc_version": "x"}) as writer:
        assert writer.save(first) is not None
    objects = snap["objects"]
    again = make_engine(spec.model(), spec.properties(), engine="spark", partitions=2, driver_level_limit=0,
                        store_dir=s3_url, data_root=second_dir)
    again.restore(checkpoint.read(first_dir)[1], first_dir)
    assert again.run().stats.distinct == 1834
    with checkpointer.Checkpointer(second_dir, {"kmc_version": "x"}) as writer:
        writer.save(again)
    final = checkpoint.read(second_dir)[1]["objects"]
    tops = {name.split("/", 1)[0] for name in open_blobs(s3_url).sizes()}
    assert final["store"] != objects["store"] and tops == {objects["store"], final["store"]}
    third = make_engine(spec.model(), spec.properties(), engine="spark", partitions=3, store_dir=s3_url)
    third.restore(checkpoint.read(first_dir)[1], first_dir)  # verified: every object still there
    for prefix in tops:
        open_blobs(s3_url).delete_prefix(prefix)


# -- a store every executor can see, checked first --------------------------------------------------


class _Cluster:
    """What the probe job needs of a SparkContext, on a cluster whose executors run the
    task after ``hide`` (an executor that does not see the store's directory)."""

    master = "spark://127.0.0.1:7077"
    defaultParallelism = 2

    def __init__(self, hide):
        self.hide, self.tasks = hide, 0

    def parallelize(self, items, n):
        self.items = list(items)
        return self

    def mapPartitionsWithIndex(self, task):
        self.task = task
        return self

    def collect(self):
        out = []
        for i in self.items:
            self.tasks += 1
            if i == len(self.items) - 1:
                self.hide()
            out += list(self.task(i, iter(())))
        return out


def test_a_directory_some_executor_cannot_see_is_one_line_before_any_level(tmp_path):
    from kmc.checker.partitioned.rows import RowsStore
    from kmc.checker.spark.probe import probe_store

    store = RowsStore.create(tmp_path)
    seen = _Cluster(lambda: None)
    probe_store(seen, store)  # every executor reads it: nothing to say, and the probe is gone
    assert seen.tasks == 8 and sorted(store.blobs.sizes()) == ["owner"]
    hidden = Path(store.root, "probe")
    blind = _Cluster(lambda: hidden.unlink())
    with pytest.raises(EngineError) as e:
        probe_store(blind, store)
    line = str(e.value)
    assert line.startswith(f"the Spark store {store.root} is not seen by every executor (an executor on ")
    assert line.endswith("the driver and every executor must see it (a directory mounted at the same path on every "
                         "machine, or an object store URL: s3://, gs://, hdfs://, abfs://)")
    assert "FileNotFoundError" in line and "\n" not in line
    store.remove()


@pytest.mark.spark
@needs_java
@pytest.mark.skipif(__import__("os").environ.get("KMC_SLOW") != "1", reason="another Spark run of its own (the suite's time): set KMC_SLOW=1")
def test_liveness_lassos_on_the_s3_store(spark_sc, s3_url):
    # A liveness property violated: the lasso (path, loop, obligation) found through the
    # S3 store's graph records is the batch engine's.
    from test_liveness_kafka import _run, assert_lassos_are_fair_violations

    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options

    spec, model, batch = _run("live-c1-hw")
    assert batch.violations
    engine = make_engine(model, spec.properties(), Options(keep_going=spec.keep_going), engine="spark",
                         partitions=2, driver_level_limit=0, store_dir=s3_url)
    result = engine.run()
    assert engine.metrics["spark_levels"]
    assert (result.complete, result.stats.distinct) == (True, batch.stats.distinct)
    assert {p: result.verdict(p) for p in result.checked} == {p: batch.verdict(p) for p in batch.checked}
    for prop, v in batch.violations.items():
        w = result.violations[prop]
        assert (w.path, w.loop, w.obligation, w.explanation) == (v.path, v.loop, v.obligation, v.explanation), prop
    assert_lassos_are_fair_violations(spec, model, result)
    assert open_blobs(s3_url).sizes() == {}


def test_an_object_store_s_prefix_whose_run_was_killed_is_removed_by_the_next_run(s3_url):
    import socket
    import subprocess
    import sys

    from kmc.checker.partitioned.rows import OWNER, RowsStore
    from kmc.checker.partitioned.rows_stale import clean_stale

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    root = open_blobs(s3_url).child(f"stale-{os.urandom(4).hex()}")
    url = s3_url.replace("/runs?", f"/runs/{root.prefix.split('/')[-1]}?")
    mine = RowsStore.create(url)  # this process: alive
    dead = root.child("kmc-rows-dead")
    dead.put(OWNER, [f"{socket.gethostname()} {proc.pid} 12345\n".encode()])
    dead.put("seen/0000/run-000001.npy", [b"x" * (3 << 20)])
    root.child("kmc-rows-elsewhere").put(OWNER, [b"another-host 1 1\n"])  # another host's: left alone
    line = clean_stale(url)
    assert line == f"removed 1 Spark store of runs that were killed (3M freed in {root.root})"
    assert sorted(root.sizes()) == sorted([f"{mine.blobs.prefix.split('/')[-1]}/owner", "kmc-rows-elsewhere/owner"])
    assert clean_stale(url) is None
    root.delete_prefix("")


def test_an_object_store_s_runs_are_fetched_once_a_machine(s3_url, monkeypatch):
    from kmc.checker.blobs.arrow import _cache_root
    from kmc.checker.partitioned.rows_read import load_run
    from kmc.checker.partitioned.rows_write import save_arrays

    blobs = open_blobs(s3_url).child(f"cache-{os.urandom(4).hex()}")
    run = np.arange(0, 3000, 3, dtype=np.uint64)
    save_arrays((blobs, "seen/0001/run-000004.npy"), run)
    fetched = []
    copy_out = type(blobs).copy_out
    monkeypatch.setattr(type(blobs), "copy_out", lambda self, name, target: fetched.append(name) or
                        copy_out(self, name, target))
    for _ in range(3):
        got = load_run(blobs, "seen/0001/run-000004.npy")
        assert np.array_equal(got, run) and isinstance(got, np.memmap)
    assert fetched == ["seen/0001/run-000004.npy"]  # once, then this machine's copy
    path = blobs.cached("seen/0001/run-000004.npy")
    blobs.forget(["seen/0001/run-000004.npy"])
    assert not os.path.exists(path)
    stream = blobs.stream("succ/0001/o0000-p0000.bin")  # its parts in this machine's spool
    stream.write(b"x")
    assert stream.commit() == 1 and blobs.get("succ/0001/o0000-p0000.bin") == b"x"
    blobs.delete_prefix("")
    blobs.forget_all()
    assert not os.path.exists(os.path.join(_cache_root(), "spool"))  # nothing left of it


def test_a_store_unseen_by_an_executor_stops_the_run_as_the_session_starts(tmp_path, monkeypatch):
    # The session starts in the background while the driver still expands its levels; its
    # probe job finds an executor that does not see the store: the run stops at the next
    # level boundary, in one line, instead of running on (hw-data-loss's levels would all
    # have stayed on the driver with a limit of 1000).
    pytest.importorskip("pyspark")
    import functools

    from kmc.app.specs import load_spec
    from kmc.checker.spark import start as spark_start
    from kmc.checker.spark.engine import SparkRowsEngine
    from kmc.checker.spark.tasks import read_probe

    class Blind:  # a cluster whose executors do not see the driver's directory
        master, defaultParallelism, stopped = "spark://127.0.0.1:7077", 2, False

        def parallelize(self, items, n):
            self.items = list(items)
            return self

        def mapPartitionsWithIndex(self, task):
            self.task = task
            return self

        def partitionBy(self, *args):
            return self

        def collect(self):
            if isinstance(self.task, functools.partial) and self.task.func is read_probe:
                blobs, name = self.task.args[:2]
                os.unlink(blobs.local_path(name))  # not there for the executors
            return [r for i in self.items for r in self.task(i, iter(()))]

        def stop(self):
            self.stopped = True

    blind = Blind()
    monkeypatch.setattr(spark_start, "spark_context", lambda *args, **kwargs: (blind, True))
    failed_early = spark_start.Session.failed_early

    def after_the_start(session, kind):  # the start's thread has run by the next boundary, however
        if session.starter is not None:  # busy the machine (else the levels may all end before it)
            session.starter.join()
        return failed_early(session, kind)

    monkeypatch.setattr(spark_start.Session, "failed_early", after_the_start)
    spec = load_spec(HW)
    engine = SparkRowsEngine(spec.model(), spec.properties(), partitions=2, driver_level_limit=1000,
                             store_dir=tmp_path / "store")
    with pytest.raises(EngineError) as e:
        engine.run()
    line = str(e.value)
    assert line.startswith(f"the Spark store {tmp_path / 'store'}/kmc-rows-") and "\n" not in line
    assert "is not seen by every executor" in line and "the driver and every executor must see it" in line
    assert engine.stats.depth < 10 and list((tmp_path / "store").iterdir()) == []  # stopped early; store removed
