"""Checkpoints of the Spark engine: killed, interrupted or damaged, a run resumes to exactly
the result of a run never stopped, or is refused in one line.

The subprocess tests run the batch path (the default) with every level after the
initial states on Spark (``--driver-level-limit 0``); the per-state path's checkpoints
(``--per-state``) are tested in process at the end.

Every subprocess test runs ``kmc check --engine spark`` (a process holds one
SparkContext, and SIGKILL needs a process of its own), so each pays a JVM start-up of
several seconds: the specs are small and the subprocesses few. The refusals need no JVM,
since a checkpoint is verified before Spark starts.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from kmc.checker.checkpoints import file as checkpoint
from test_checkpoint import comparable, kmc_at_level, kmc_run, one_line_error, reference, small_checkpoint

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
HW_UNCLEAN = SPECS / "hw-unclean.toml"  # keep_going: 5548 distinct, depth 21, traces of 5 and 8 states
HW_DATA_LOSS = SPECS / "hw-data-loss.toml"  # stops at a violation: 1834 distinct, depth 10
SPARK = ("--engine", "spark", "--master", "local[2]", "--driver-level-limit", "0")
TIMEOUT = 150  # seconds for one Spark subprocess (a JVM start-up plus some 20 levels)

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java: no 'java' on PATH"),
]


def levels(directory) -> list[str]:
    return sorted(p.name for p in Path(directory).glob("level-*"))


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A checkpoint directory of hw-unclean on three partitions, SIGKILLed mid-way."""
    ck = tmp_path_factory.mktemp("killed") / "ck"
    store = ck.parent / "store"  # a killed run cannot remove its store: keep it out of the system's /tmp
    proc = kmc_at_level("check", HW_UNCLEAN, *SPARK, "--partitions", "3", "--checkpoint", ck, "--spark-store", store,
                        "--checkpoint-every", "0", "--no-progress", depth=8, signals=("KILL",))
    proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -signal.SIGKILL
    return ck


def copy_of(ck, tmp_path) -> Path:
    target = tmp_path / "ck"
    shutil.copytree(ck, target)
    return target


@pytest.fixture(scope="module")
def hw_unclean_reference():
    return reference(HW_UNCLEAN)


# -- SIGKILL, then --resume ---------------------------------------------------------------------

def test_sigkill_then_resume_on_other_partitions_gives_the_pinned_result(killed, tmp_path, hw_unclean_reference):
    ck = copy_of(killed, tmp_path)
    header, snap = checkpoint.read(ck)
    assert header["engine"] == "spark" and 8 <= header["depth"] < 21 and header["distinct"] < 5548
    assert snap["partitions"] == 3 and snap["data"] in levels(ck)  # and perhaps one half-written

    # --engine is taken from the checkpoint; two partitions instead of three: re-routed.
    code, out, err = kmc_run("check", "--resume", ck, "--master", "local[2]", "--partitions", "2",
                             "--no-progress", "--json", tmp_path / "r.json", timeout=TIMEOUT)
    assert code == 1, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["engine"] == "spark"
    assert comparable(doc) == comparable(hw_unclean_reference)
    stats = doc["stats"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (5548, 12276, 21)
    lengths = {v["property"]: len(v["trace"]["steps"]) for v in doc["violations"]}
    assert lengths == {"CommittedNeverLost": 5, "LogsNeverDiverge": 8}
    assert doc["complete"] is True and "5,548 distinct states" in out
    final = checkpoint.read_header(ck)
    assert (final["depth"], final["distinct"], final["generated"]) == (21, 5548, 12276)
    # Nothing left to expand: the last level's parent pointers are kept (a resumed
    # decided run prints its counterexamples again), older levels pruned.
    assert levels(ck) == [final_data(ck)] == ["level-000021"]


# -- refusals, before Spark starts ----------------------------------------------------------------

def final_data(ck):
    return checkpoint.read(ck)[1]["data"]


def _damage_part(level):
    part = max(level.iterdir(), key=lambda p: p.stat().st_size)
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x20
    part.write_bytes(bytes(data))
    return f"{part.name}: checksum mismatch"


def _drop_part(level):
    part = sorted(level.glob("front-*"))[-1]
    part.unlink()
    return f"missing {part.name}"


def _drop_level(level):
    shutil.rmtree(level)
    return "missing"


def _add_part(level):
    (level / "run-0007-000001.npy").write_bytes(b"")
    return "unexpected run-0007-000001.npy"


@pytest.mark.parametrize("damage", [_damage_part, _drop_part, _drop_level, _add_part],
                         ids=["flip", "part", "level", "extra"])
def test_a_damaged_level_directory_is_refused_in_one_line(killed, tmp_path, damage):
    ck = copy_of(killed, tmp_path)
    level = ck / checkpoint.read(ck)[1]["data"]
    words = damage(level)
    code, out, err = kmc_run("check", "--resume", ck, "--no-progress")
    assert code == 2
    line = one_line_error(err)
    assert str(level) in line and words in line and "cannot be resumed" in line


def test_a_checkpoint_of_the_other_engine_is_refused(killed, tmp_path):
    ck = copy_of(killed, tmp_path)
    code, out, err = kmc_run("check", "--resume", ck, "--engine", "local", "--no-progress")
    assert code == 2 and "the engine differs" in one_line_error(err)
    small_checkpoint(tmp_path / "local")  # written by the local engine
    code, out, err = kmc_run("check", "--resume", tmp_path / "local", "--engine", "spark", "--no-progress")
    assert code == 2
    line = one_line_error(err)
    assert "the engine differs" in line and "the local engine" in line


def test_a_resumed_level_is_copied_into_a_new_checkpoint_directory(killed, tmp_path):
    # --resume A --checkpoint B, stopped before a new level: B must not depend on A.
    from kmc.checker.spark.engine import SparkRowsEngine
    from kmc.app.specs import load_spec

    ck = copy_of(killed, tmp_path)
    snap = checkpoint.read(ck)[1]
    spec = load_spec(HW_UNCLEAN)
    engine = SparkRowsEngine(spec.model(), spec.properties(), data_root=tmp_path / "other")
    engine.restore(snap, ck)
    again = engine.snapshot()
    assert again["data"] == snap["data"] and again["files"] == snap["files"]
    assert (again["stats"], again["found"], again["frontier"]) == (snap["stats"], snap["found"], snap["frontier"])
    copied = tmp_path / "other" / again["data"]
    assert sorted(p.name for p in copied.iterdir()) == sorted(snap["files"])


# -- signals ------------------------------------------------------------------------------------

@pytest.mark.skipif(__import__("os").environ.get("KMC_SLOW") != "1", reason="another Spark run of its own (the suite's time): set KMC_SLOW=1")
def test_sigint_prints_statistics_exits_130_and_the_checkpoint_resumes(tmp_path):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", HW_DATA_LOSS, *SPARK, "--checkpoint", ck, "--checkpoint-every", "0",
                        "--no-progress", "--json", tmp_path / "partial.json", depth=4, signals=("INT",))
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "distinct states" in out and "interrupted" in out
    assert f"checkpoint saved in {ck}" in err and f"--resume {ck}" in err
    partial = json.loads((tmp_path / "partial.json").read_text())
    assert partial["stopped"] == "interrupted" and partial["complete"] is False
    header = checkpoint.read_header(ck)
    assert 4 <= header["depth"] < 10
    # Spark stops at the last complete level: the printed counts are the checkpoint's.
    assert header["distinct"] == partial["stats"]["distinct_states"] < 1834
    assert len(levels(ck)) == 1

    code, out, err = kmc_run("check", "--resume", ck, "--master", "local[2]", "--no-progress",
                             "--json", tmp_path / "r.json", timeout=TIMEOUT)
    assert code == 1, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert comparable(doc) == comparable(reference(HW_DATA_LOSS))
    stats = doc["stats"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (1834, 3455, 10)
    assert [len(v["trace"]["steps"]) for v in doc["violations"]] == [10]


# (The local engine's second SIGINT and SIGTERM: tests/test_signals.py; on Spark, with another JVM each:)
ALSO_ON_SPARK = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="a Spark run in a subprocess, as the local engine's in test_signals.py: set KMC_SLOW=1")


@ALSO_ON_SPARK
def test_a_second_sigint_exits_at_once_and_leaves_a_valid_checkpoint(tmp_path):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", HW_UNCLEAN, *SPARK, "--checkpoint", ck, "--checkpoint-every", "0",
                        "--no-progress", depth=3, signals=("INT", "INT"))
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert checkpoint.read_header(ck)["depth"] == 3  # written whole before the signals


@ALSO_ON_SPARK
def test_sigterm_exits_143_with_a_checkpoint(tmp_path):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", HW_DATA_LOSS, *SPARK, "--checkpoint", ck, "--checkpoint-every", "0",
                        "--no-progress", depth=3, signals=("TERM",))
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "distinct states" in out
    header, snap = checkpoint.read(ck)
    assert header["depth"] >= 3 and snap["data"] in levels(ck)


# -- the per-state path (--per-state), in process --------------------------------------------

def test_per_state_path_resumes_on_other_partitions(spark_sc, tmp_path):
    from conftest import EXPLORATIONS
    from kmc.checker.engines import make_engine
    from kmc.app.specs import load_spec

    spec = load_spec(HW_DATA_LOSS)

    def stop(engine):
        if engine.stats.depth >= 5:
            engine.stop_requested = "interrupted"

    first = make_engine(spec.model(), spec.properties(), engine="spark", per_state=True, partitions=3,
                        driver_level_limit=0, on_level=stop, data_root=tmp_path)
    assert first.run().stopped == "interrupted"
    snap = first.snapshot()
    assert snap["partitions"] == 3 and snap["format"] == "spark-states-1"
    assert sorted(snap["files"]) == sorted(p.name for p in (tmp_path / snap["data"]).iterdir())
    again = make_engine(spec.model(), spec.properties(), engine="spark", per_state=True, partitions=2)
    again.restore(snap, tmp_path)
    got, want = again.run(), EXPLORATIONS["hw-data-loss"][2]
    assert (got.stats.distinct, got.stats.generated, got.stats.depth) == (1834, 3455, 10)
    for field in ("distinct", "generated", "depth", "terminal", "levels", "fired", "new"):
        assert getattr(got.stats, field) == getattr(want.stats, field), field
    assert {k: v.path for k, v in got.violations.items()} == {k: v.path for k, v in want.violations.items()}


def test_a_checkpoint_of_the_retired_per_state_spark_engine_is_refused(tmp_path):
    from kmc.checker.engines import make_engine
    from kmc.app.specs import load_spec

    spec = load_spec(HW_DATA_LOSS)
    engine = make_engine(spec.model(), spec.properties(), engine="spark")
    retired = {"engine": "spark", "stats": {}, "found": {}, "data": "level-000005", "files": {}, "partitions": 3}
    with pytest.raises(checkpoint.CheckpointError, match="retired per-state Spark engine") as e:
        engine.restore(retired, tmp_path)
    assert "\n" not in str(e.value)
