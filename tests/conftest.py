"""Shared fixtures: builders for hand-made model states, the explorations of the shipped
specs (each run once per session by the local engine, whichever modules need it), and the
one SparkContext of the session.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import types
from pathlib import Path

import pytest

from kmc.model import Config, Fetch, KafkaModel, Quorum, Replica, State

# -- the test processes' own settings (the suite's CPU; no test's meaning depends on them) -----

# The cyclic garbage collector at its default threshold (a young collection every 700
# allocations) took about a third of a per-state search's CPU here: the searches allocate
# millions of small attrs objects, and the results the modules share stay alive. A young
# collection every 50,000 allocations still collects every cycle, later; this process only
# (kmc's own processes, workers and Spark's Python keep Python's default).
gc.set_threshold(50_000, 20, 20)


def pytest_unconfigure(config):
    """As the session ends pytest collects garbage five times over (to report the exceptions
    of objects finalised late), each pass over every run the modules kept: collect once, then
    leave the survivors out of the passes that follow (``gc.freeze``)."""
    gc.collect()
    gc.freeze()
    if not hasattr(config, "workerinput") and GROUPS in os.environ:
        shutil.rmtree(os.environ.pop(GROUPS), ignore_errors=True)


def _memory_tmp(least=2 << 30):
    """A directory in memory (tmpfs) with at least ``least`` bytes free, or None."""
    where = "/dev/shm"
    try:
        if not os.path.isdir(where) or not os.access(where, os.W_OK | os.X_OK):
            return None
        return where if shutil.disk_usage(where).free >= least else None
    except OSError:
        return None


# Temporary files (pytest's tmp_path, the stores and checkpoints kmc makes in the system's
# temporary directory, Spark's local files) in memory when the machine has a tmpfs: creating a
# file on this machine's disk costs about half a millisecond of kernel CPU, and the stores write
# thousands. TMPDIR set by the caller is kept. Child processes inherit it.
if "TMPDIR" not in os.environ and _memory_tmp():
    os.environ["TMPDIR"] = _memory_tmp()
    os.environ.setdefault("SPARK_LOCAL_DIRS", os.environ["TMPDIR"])
    tempfile.tempdir = None  # (gettempdir() reads TMPDIR again)


def _replica(n, *, alive=True, log=(), hw=0, epoch=0, leader=0, remote=None, inflight=None,
             lossy=False):
    """A replica of an ``n``-replica model; ``log`` is a sequence of (epoch, id)."""
    return Replica(
        alive=alive, log=tuple(tuple(r) for r in log), hw=hw, epoch=epoch, leader=leader,
        remote_leo=tuple(remote) if remote is not None else (0,) * n, inflight=inflight,
        lossy=lossy,
    )


def _state(replicas, *, leader=0, epoch=0, isr=None, elr=(), produced=0, crashes=0, committed=()):
    """A whole state; ``isr`` defaults to every replica, ``elr`` and ``committed`` to ``()``."""
    n = len(replicas)
    isr = tuple(range(n)) if isr is None else tuple(sorted(isr))
    quorum = Quorum(leader, epoch, isr, tuple(sorted(elr)))
    return State(replicas=tuple(replicas), quorum=quorum, produced=produced,
                 crashes=crashes, committed=tuple(sorted(tuple(c) for c in committed)))


def _model(**kw):
    """A ``KafkaModel`` for ``Config(**kw)``; replicas default to ("A", "B")."""
    return KafkaModel(Config(**kw))


@pytest.fixture
def build():
    """``build.replica(n, ...)``, ``build.state(replicas, ...)``, ``build.model(**config)``,
    ``build.fetch(...)``: builders for hand-made states (see the functions above)."""
    return types.SimpleNamespace(replica=_replica, state=_state, model=_model, fetch=Fetch)


# -- three workers (pytest-xdist) --------------------------------------------------------------

# Each module runs whole on one of the three workers (-n 3 --dist loadfile, in pyproject.toml),
# except the Spark tests (marked ``spark``, or using the session's SparkContext): those run
# together on one worker, whichever modules they are in, so that the suite starts one JVM, one
# Spark context and one set of Spark's Python workers instead of one a worker (each JVM costs its
# start and its compiler's warm-up). The workers write their Spark tests' ids in a directory the
# scheduler reads (it sees test ids only, never their marks). pytest-xdist hands out the units
# largest first (by test count: the Spark unit, then the largest modules); ``FIRST`` orders the
# tests inside a unit that spans modules, and units of equal size: the slowest modules first.
FIRST = ("test_spark_checkpoint", "test_spark_submit", "test_spark_stores", "test_operators_kernel",
         "test_controlled_shutdown", "test_min_isr_disk", "test_spark_faults", "test_spark_rows", "test_stores",
         "test_user_model_cli", "test_engines", "test_liveness_kafka", "test_fetch_kernel", "test_model_errors",
         "test_liveness", "test_fetch_path")
SPARK_GROUP = "the Spark tests"
GROUPS = "KMC_TEST_GROUPS"  # the directory of the workers' lists (set by the controller)


def pytest_configure(config):
    if not hasattr(config, "workerinput") and config.getoption("dist", "no") == "loadfile":
        os.environ[GROUPS] = tempfile.mkdtemp(prefix="kmc-test-groups-")  # the workers inherit it


def pytest_collection_modifyitems(config, items):
    def rank(item):
        module = item.module.__name__.rpartition(".")[2]
        return FIRST.index(module) if module in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: the order inside a module is kept
    where = os.environ.get(GROUPS)
    if where and hasattr(config, "workerinput"):
        spark = [i.nodeid for i in items if i.get_closest_marker("spark") or "spark_sc" in i.fixturenames]
        path = Path(where) / config.workerinput["workerid"]
        path.with_suffix(".part").write_text("\n".join(spark))
        path.with_suffix(".part").replace(path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadfile``: a work unit is a module, or the Spark tests of every module."""
    where = os.environ.get(GROUPS)
    if config.getoption("dist", "no") != "loadfile" or not where:
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModulesAndSpark(LoadFileScheduling):
        spark: set[str] | None = None

        def _split_scope(self, nodeid):
            if self.spark is None:  # every worker has collected (and written) by now
                self.spark = {line for p in Path(where).iterdir() if not p.suffix
                              for line in p.read_text().splitlines()}
            return SPARK_GROUP if nodeid in self.spark else super()._split_scope(nodeid)

    return ModulesAndSpark(config, log)


# -- explorations shared by the whole session ---------------------------------------------

SPECS = Path(__file__).resolve().parent.parent / "specs"


class Explorations:
    """``explorations[name]`` -> ``(spec, model, result)``: the shipped spec ``name`` run by
    the local engine with the spec's own ``[check]`` options, at most once per session, on
    the path ``kmc check`` takes (the batch kernel; the per-state path gives the same
    results: tests/test_batch.py and tests/test_engines.py compare them).

    Results are shared: a test must not change them.
    """

    def __init__(self):
        self._done = {}

    def __getitem__(self, name):
        if name not in self._done:
            from kmc.checker.engines import make_engine
            from kmc.checker.core.options import Options
            from kmc.app.specs import load_spec

            spec = load_spec(SPECS / f"{name}.toml")
            model = spec.model()
            options = Options(keep_going=spec.keep_going, max_depth=spec.max_depth, max_states=spec.max_states)
            self._done[name] = (spec, model, make_engine(model, spec.properties(), options).run())
        return self._done[name]


EXPLORATIONS = Explorations()  # for helpers that are not fixtures; tests use the fixture


@pytest.fixture(scope="session")
def explorations():
    return EXPLORATIONS


# -- comparing two engines' results ----------------------------------------------------------

def assert_same_spark_result(got, want):
    """A Spark engine's result ``got`` has every number, verdict and counterexample of
    ``want`` (a local engine's)."""
    assert got.engine == "spark"
    for field in ("distinct", "generated", "depth", "terminal", "levels", "fired", "new"):
        assert getattr(got.stats, field) == getattr(want.stats, field), field
    assert (got.complete, got.stopped, got.checked) == (want.complete, want.stopped, want.checked)
    assert got.violations.keys() == want.violations.keys()
    for name, v in want.violations.items():
        g = got.violations[name]
        assert (g.property, g.kind, g.explanation) == (v.property, v.kind, v.explanation)
        assert (g.path.init_index, g.path.choices) == (v.path.init_index, v.path.choices)
        assert g.path == v.path  # the same states and actions, replayed on the driver


# -- the session's one SparkContext -------------------------------------------------------

SPARK_MASTER = "local[2,3]"  # two cores; a failed task is tried up to three times


@pytest.fixture(scope="session")
def spark_sc():
    """One local SparkContext for every Spark test module of the session (starting the
    JVM and a context costs tens of seconds; a process holds one context at a time)."""
    import shutil

    if shutil.which("java") is None:
        pytest.skip("the Spark engine needs Java: no 'java' on PATH")
    from kmc.checker.spark.session import spark_context

    context, created = spark_context(SPARK_MASTER)
    if not created and context.master != SPARK_MASTER:
        context.stop()
        context, created = spark_context(SPARK_MASTER)
    yield context
    if created:
        context.stop()


@pytest.fixture(scope="session")
def s3_url():
    """An S3 server in this process (moto's, on 127.0.0.1, a free port) with one empty
    bucket, for the Spark engine's object store: the URL of a prefix in it, credentials
    and endpoint in the URL (pyarrow.fs reads them there), so that Spark's Python workers,
    whatever environment their JVM started with, reach it."""
    import socket

    pytest.importorskip("pyarrow")
    moto_server = pytest.importorskip("moto.server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line a request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        from pyarrow import fs

        base = f"s3://kmc:secret@kmc-test?endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1&allow_bucket_creation=true"
        filesystem, _ = fs.FileSystem.from_uri(base)
        filesystem.create_dir("kmc-test")  # the bucket
        yield f"s3://kmc:secret@kmc-test/runs?endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
    finally:
        server.stop()
