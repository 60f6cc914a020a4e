"""What a newcomer to the Spark engine reads: a spec whose levels all ran on the driver
says that Spark was never started, and why; the default partition count is one number,
the same in ``--help``, docs/spark.md and the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmc.app.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "specs" / "hw-data-loss.toml"  # stops at a violation: 1834 distinct states, depth 10


def test_a_spec_whose_levels_all_stay_on_the_driver_says_spark_was_not_started(capsys):
    pytest.importorskip("pyspark")
    assert main(["check", str(HW), "--engine", "spark", "--no-progress", "--no-trace"]) == 1
    out, err = capsys.readouterr()
    assert "1,834 distinct states" in out  # tests/pins.py: hw-data-loss
    lines = [line for line in err.splitlines() if "Spark was not started" in line]
    assert lines == ["kmc: Spark was not started: every level it expanded had at most 50,000 states "
                     "(--driver-level-limit 50000), so the driver ran them all itself, as the local engine does."]
    # The local engine has nothing to say about Spark.
    assert main(["check", str(HW), "--no-progress", "--no-trace"]) == 1
    assert "Spark was not started" not in capsys.readouterr().err


def test_the_default_partition_count_is_one_per_core_everywhere():
    check = build_parser()._subparsers._group_actions[0].choices["check"].format_help()
    assert "else one per executor core: Spark's default parallelism, e.g. 2 for local[2]" in " ".join(check.split())
    doc = " ".join((ROOT / "docs" / "spark.md").read_text().split())
    assert "else one per executor core: Spark's default parallelism, e.g. 2 for `local[2]`" in doc
    assert "twice" not in check and "default parallelism" in doc


@pytest.mark.spark
def test_the_code_s_default_is_spark_s_default_parallelism(spark_sc):
    from kmc.checker.spark.session import default_partitions

    assert spark_sc.master == "local[2,3]" and default_partitions(spark_sc) == 2


@pytest.mark.spark
def test_a_session_started_in_advance_and_never_used_is_said_so(spark_sc):
    # hw-data-loss's levels grow past 1000 / 8 states but never past 1000: the session is
    # started in the background (here: the test session's own), then no level needs it.
    from kmc.checker.spark.engine import SparkRowsEngine
    from kmc.app.specs import load_spec

    spec = load_spec(str(HW))
    engine = SparkRowsEngine(spec.model(), spec.properties(), partitions=2, driver_level_limit=1000)
    result = engine.run()
    assert (result.stats.distinct, result.stats.depth) == (1834, 10)  # tests/pins.py
    assert not engine.metrics["spark_levels"]
    if engine.metrics.get("session_started_early"):  # up (its warm-up job done) before the search ended
        assert engine.not_started.startswith("Spark was started in advance, then not used: every level it "
                                             "expanded had at most 1,000 states (--driver-level-limit 1000)")
    else:  # still warming up: abandoned, not waited for
        assert engine.not_started.startswith("Spark was being started in advance; that start was abandoned, not "
                                             "waited for: every level it expanded had at most 1,000 states")
    engine.session.starter.join()
    assert spark_sc._jsc is not None  # the test session's context is not stopped: kmc did not start it


def test_a_start_in_advance_that_the_search_outruns_is_abandoned_not_waited_for(monkeypatch):
    # The session's start is held until the search is over: run() returns at once, says
    # so, and the starting thread stops the session it started once it is up.
    pytest.importorskip("pyspark")
    import threading

    from kmc.checker.spark import start as spark_start
    from kmc.checker.spark.engine import SparkRowsEngine
    from kmc.app.specs import load_spec

    release, stopped = threading.Event(), []

    class Context:  # what the warm-up job needs of a SparkContext, and stop()
        def parallelize(self, *args):
            return self

        def mapPartitionsWithIndex(self, *args):
            return self

        def partitionBy(self, *args):
            return self

        def collect(self):
            return []

        def stop(self):
            stopped.append(True)

    def held_start(*args, **kwargs):
        release.wait(60)
        return Context(), True

    monkeypatch.setattr(spark_start, "spark_context", held_start)
    spec = load_spec(str(HW))
    engine = SparkRowsEngine(spec.model(), spec.properties(), partitions=2, driver_level_limit=1000)
    result = engine.run()
    assert (result.stats.distinct, result.stats.depth) == (1834, 10)  # tests/pins.py
    starter = engine.session.starter
    assert starter.is_alive() and not stopped  # run() returned without waiting for the start
    assert engine.not_started.startswith("Spark was being started in advance; that start was abandoned, not "
                                         "waited for: every level it expanded had at most 1,000 states")
    release.set()
    starter.join(10)
    assert stopped == [True]  # the session nobody needed is stopped by the thread that started it
