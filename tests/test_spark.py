"""The Spark engine gives exactly the local engine's results.

One SparkContext on ``local[2,3]`` (two cores, a failed task is tried up to three times)
serves the whole session (``spark_sc`` in tests/conftest.py); a standalone cluster on loopback and the start-up errors run in
subprocesses, because a process holds one SparkContext at a time.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXPLORATIONS, SPARK_MASTER
from conftest import assert_same_spark_result as assert_same
from kmc.checker.local import LocalEngine, Options
from kmc.checker.spark import SparkEngine
from kmc.model.spec import load_spec
from pins import EXCLUDED, PINS

REPO = Path(__file__).resolve().parent.parent
MASTER = SPARK_MASTER

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java: no 'java' on PATH"),
]

# Specs that are benchmarks, not tests, and the pinned numbers: one table, tests/pins.py.
BENCHMARKS = dict(EXCLUDED)
# The three-replica rows of docs/model.md's second known-verdict table: 50,000-600,000 states
# each, minutes on Spark's local mode; tests/test_modern.py pins them on the local engine.
# Their two-replica rows run here.
BENCHMARKS.update({name: "a three-replica row of docs/model.md's second table: too slow for CI on Spark"
                   for name in ("v21-min-isr", "v21-gate-min-isr", "v21-elr-min-isr", "lrs-v21",
                                "lrs-v21-gate", "lrs-v21-elr", "lrs-kip279-gate", "lrs-kip279-elr",
                                "v21-preferred-two-crashes", "lrs2-v21", "lrs2-v21-gate",
                                "lrs2-v21-elr", "lrs2-kip279-elr")})
PINNED = PINS
# The spec that also runs on three partitions (a stop at a violation); the limits tests
# below (keep_going with two violations among them) run on three partitions too.
PARTITIONED = ("hw-data-loss",)


# The per-state Spark engine is the fallback (--per-state, models without a batch kernel); the
# rows engine, the default, is compared with the local engine on every spec in
# tests/test_spark_rows.py. Here: one spec of each rule family, with lossy crashes,
# unclean elections and the KIP-966 options among them.
PER_STATE_SPECS = ("hw-data-loss", "le-unflushed", "kip279-unclean", "v21-elr-unflushed")


def _spec_params():
    shipped = {p.stem for p in (REPO / "specs").glob("*.toml")}
    assert set(PER_STATE_SPECS) <= shipped
    return [pytest.param(name, id=name) for name in PER_STATE_SPECS]


@pytest.fixture(scope="module")
def sc(spark_sc):
    """The session's SparkContext (tests/conftest.py), on local[2,3]."""
    assert spark_sc.master == MASTER
    return spark_sc


def _options(spec):
    return Options(max_depth=spec.max_depth, keep_going=spec.keep_going, max_states=spec.max_states)


def _local(name):
    """The local engine's result for a shipped spec, explored once per session."""
    return EXPLORATIONS[name][2]


def _spark(name, **kwargs):
    spec = load_spec(REPO / "specs" / f"{name}.toml")
    return SparkEngine(spec.model(), spec.properties(), _options(spec), **kwargs).run()


@pytest.mark.parametrize("name", _spec_params())
def test_every_spec_same_as_local(sc, name):
    local = _local(name)
    spark = _spark(name, partitions=1)
    assert_same(spark, local)
    if name in PINNED:
        distinct, generated, depth, _, traces, _ = PINNED[name]
        assert (spark.stats.distinct, spark.stats.generated, spark.stats.depth) == (distinct, generated, depth)
        assert {p: len(v.path) for p, v in spark.violations.items()} == traces
    spec = load_spec(REPO / "specs" / f"{name}.toml")
    for prop, verdict in spec.expect.items():
        assert spark.verdict(prop) == verdict, prop


@pytest.mark.parametrize("name", PARTITIONED)
def test_three_partitions_same_as_local(sc, name):
    assert_same(_spark(name, partitions=3), _local(name))


@pytest.mark.parametrize("options", [
    Options(max_depth=5),
    Options(max_states=1000),
    Options(max_depth=7, keep_going=True),
], ids=["max-depth", "max-states", "keep-going"])
def test_limits_same_as_local(sc, options):
    spec = load_spec(REPO / "specs" / "hw-unclean.toml")
    local = LocalEngine(spec.model(), spec.properties(), options).run()
    spark = SparkEngine(spec.model(), spec.properties(), options, partitions=3).run()
    assert_same(spark, local)
    assert spark.stopped == local.stopped is not None


def test_progress_once_per_level(sc):
    seen = []
    spec = load_spec(REPO / "specs" / "le-data-loss.toml")
    result = SparkEngine(spec.model(), spec.properties(), progress=seen.append, partitions=2).run()
    levels = result.stats.levels
    # every level is expanded once; the last expansion finds nothing new
    assert len(seen) == len(levels) == 17
    for i, snap in enumerate(seen):
        depth = min(i + 2, len(levels))
        assert snap.depth == depth
        assert snap.levels == levels[:depth]
        assert snap.distinct == sum(levels[:depth])
        assert snap.queue == (levels[i + 1] if i + 1 < len(levels) else 0)
        assert snap.seconds >= 0
    assert [s.generated for s in seen] == sorted(s.generated for s in seen)
    assert seen[-1].generated == result.stats.generated


def test_stop_requested_stops_at_a_level_boundary(sc):
    spec = load_spec(REPO / "specs" / "le-data-loss.toml")
    calls = []

    def progress(snapshot):
        calls.append(snapshot)
        if len(calls) == 3:
            engine.stop_requested = "interrupted"

    engine = SparkEngine(spec.model(), spec.properties(), progress=progress, partitions=2)
    result = engine.run()
    assert (result.stopped, result.complete) == ("interrupted", False)
    # three levels expanded: the same numbers as a local run cut at depth 4
    local = LocalEngine(spec.model(), spec.properties(), Options(max_depth=4)).run()
    for field in ("distinct", "generated", "depth", "terminal", "levels", "fired", "new"):
        assert getattr(result.stats, field) == getattr(local.stats, field), field


@pytest.mark.parametrize("name", ["hw-data-loss"])
def test_retried_tasks_change_nothing(sc, name):
    # Every expansion task of partition 0 fails on its first attempt; the run can only
    # succeed because Spark retried them (local[2,3] allows three attempts).
    assert_same(_spark(name, partitions=2, _fail_first_attempt=True), _local(name))


def test_engine_knows_nothing_of_kafka():
    # Every module of the Spark engines (tests/test_packaging.py checks the whole engine core).
    imported = set()
    for path in sorted((REPO / "checker").glob("spark*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module)
    assert not {m for m in imported if m.startswith(("kmc.model", "kmc.invariants", "kmc.reports", "kmc.checker.app"))}
    assert not {m.split(".")[0] for m in imported} & {"model", "invariants", "reports"}


_START_ERRORS = r"""
import os, sys
from kmc.checker.errors import EngineError
from kmc.checker.spark import SparkEngine
from kmc.model.spec import load_spec

spec = load_spec(sys.argv[1])
saved = dict(os.environ)
os.environ["PATH"] = os.path.dirname(sys.executable)
os.environ.pop("JAVA_HOME", None)
for master in (None, "nonsense://nowhere"):
    try:
        SparkEngine(spec.model(), spec.properties(), master=master).run()
    except EngineError as e:
        print("EngineError:", e)
    os.environ.clear()
    os.environ.update(saved)
"""


def test_start_up_errors_are_one_line_engine_errors():
    out = subprocess.run([sys.executable, "-c", _START_ERRORS, str(REPO / "specs" / "hw-data-loss.toml")],
                         capture_output=True, text=True, timeout=180, cwd=REPO)
    lines = out.stdout.splitlines()
    assert len(lines) == 2, out.stdout + out.stderr
    assert lines[0].startswith("EngineError: the spark engine needs Java")
    # refused before a JVM starts (issue 12: one line, naming the URL)
    assert lines[1].startswith("EngineError: 'nonsense://nowhere' is not a Spark master URL")
    assert "Traceback" not in out.stderr


# -- a standalone cluster on loopback -------------------------------------------------

_DRIVER = r"""
import json, sys
from kmc.checker.local import Options
from kmc.checker.spark_rows import SparkRowsEngine
from kmc.model.spec import load_spec

spec = load_spec(sys.argv[1])
r = SparkRowsEngine(spec.model(), spec.properties(), Options(keep_going=spec.keep_going),
                    master=sys.argv[2], partitions=3, driver_level_limit=0).run()
print(json.dumps({"master": sys.argv[2], "distinct": r.stats.distinct, "generated": r.stats.generated,
                  "depth": r.stats.depth, "stopped": r.stopped, "levels": r.stats.levels,
                  "violations": {k: list(v.path.choices) for k, v in r.violations.items()}}))
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class():
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    return home, home / "bin" / "spark-class"


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def _wait_for(path, text, proc, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    pytest.fail(f"no {text!r} in {path.name} within {seconds} s:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.mark.slow
def test_standalone_cluster_on_loopback(tmp_path):
    home, spark_class = _spark_class()
    assert spark_class.is_file(), f"pyspark has no {spark_class}"
    # The executors import kmc from this working tree (not from an installed copy, which may
    # be missing or stale): the worker passes PYTHONPATH on to the executors' Python.
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=pythonpath,
               SPARK_WORKER_DIR=str(tmp_path / "work"),
               PYSPARK_SUBMIT_ARGS="--conf spark.executor.memory=512m --conf spark.cores.max=2 pyspark-shell")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    procs = []
    try:
        with open(master_log, "w") as log:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_free_port())],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(master_log, "I have been elected leader", procs[0], 90)
        with open(worker_log, "w") as log:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--cores", "2", "--memory", "1g", "--webui-port", str(_free_port()),
                 "--work-dir", str(tmp_path / "work")],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(worker_log, "Successfully registered with master", procs[1], 90)
        out = subprocess.run([sys.executable, "-c", _DRIVER, str(REPO / "specs" / "hw-data-loss.toml"), url],
                             capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
        assert out.returncode == 0, out.stderr[-3000:]
        got = json.loads(out.stdout.splitlines()[-1])
    finally:
        for proc in reversed(procs):
            _stop(proc)
    local = _local("hw-data-loss")
    assert (got["distinct"], got["generated"], got["depth"]) == (1834, 3455, 10)
    assert got["stopped"] == "violation" and got["levels"] == local.stats.levels
    assert got["violations"] == {"CommittedNeverLost": list(local.violations["CommittedNeverLost"].path.choices)}
    assert len(got["violations"]["CommittedNeverLost"]) == 9  # 10 states


def test_toy_model_same_counts_on_spark(sc):
    """The two-counter toy model (tests/toy.py; counts worked out in tests/test_oracle.py)
    on Spark: the engine needs nothing of Kafka."""
    from toy import NeverDown, SumBelow, TwoCounters

    sc.addPyFile(str(REPO / "tests" / "toy.py"))  # executors import it by name, as a user's model
    engine = SparkEngine(TwoCounters(), [SumBelow, NeverDown], Options(keep_going=True), partitions=2)
    said = []
    engine.on_status = said.append  # the start-up messages (the session exists already here)
    result = engine.run()
    assert said == [f"Spark session ready (master {MASTER}, 2 partitions); running the first job"]
    s = result.stats
    assert (s.distinct, s.generated, s.depth, s.terminal, s.levels) == (16, 25, 7, 1, [1, 2, 3, 4, 3, 2, 1])
    assert {p: len(v.path) for p, v in result.violations.items()} == {"SumBelow": 6}
