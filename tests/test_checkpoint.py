"""Checkpoints: a run killed at any point resumes to exactly the result of a run never stopped.

The end-to-end tests run ``kmc check`` in a subprocess, kill it with SIGKILL once a
checkpoint past the first levels exists, resume it, and compare the resumed result with
pinned numbers and with an uninterrupted run. The in-process tests cover the snapshot
format, the rate limit, the lock and every way a checkpoint file can be damaged.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kmc import checker
from kmc.checker import LocalEngine, Options
from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.checkpoints import writer as checkpointer
from kmc.checker.base import memory
from kmc.checker.checkpoints.file import CheckpointError
from kmc.app.specs import load_spec

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"


# -- helpers (test_signals.py imports these) ----------------------------------------------

def kmc(*args, **kw) -> subprocess.Popen:
    """``kmc`` in a subprocess (``python -m kmc.app.cli``: independent of how kmc is installed)."""
    return subprocess.Popen([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def kmc_run(*args, timeout=120):
    p = kmc(*args)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


# Runs `kmc` with Checkpointer.save wrapped: right after the checkpoint of level DEPTH is
# written, the process sends itself the listed signals. The stop happens at that level on
# every run, whatever the machine's speed (a poller racing the run could miss it).
_AT_LEVEL = r"""
import os, signal, sys
from kmc.checker.checkpoints import writer as checkpointer
from kmc.app.cli import main

depth = int(os.environ["KMC_TEST_DEPTH"])
signals = [getattr(signal, "SIG" + name) for name in os.environ["KMC_TEST_SIGNALS"].split(",")]
save = checkpointer.Checkpointer.save
fired = []


def save_then_signal(self, engine):
    path = save(self, engine)
    if engine.stats.depth == depth and not fired:
        fired.append(depth)
        for signum in signals:
            os.kill(os.getpid(), signum)
    return path


checkpointer.Checkpointer.save = save_then_signal
sys.exit(main(sys.argv[1:]))
"""


def kmc_at_level(*args, depth, signals=("INT",)) -> subprocess.Popen:
    """``kmc`` in a subprocess that signals itself (``signals``: names such as "INT",
    "TERM", "KILL") right after its checkpoint at level ``depth`` is written; needs
    ``--checkpoint DIR --checkpoint-every 0``."""
    env = dict(os.environ, KMC_TEST_DEPTH=str(depth), KMC_TEST_SIGNALS=",".join(signals))
    return subprocess.Popen([sys.executable, "-c", _AT_LEVEL, *map(str, args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def comparable(doc) -> dict:
    """The parts of a JSON result that must not depend on interruptions (not timings)."""
    # (nor the path: the reference runs the per-state one, which has no kernel to cross-check)
    stats = {k: v for k, v in doc["stats"].items() if k not in ("seconds", "states_per_second", "kernel_cross_checked")}
    return {"stats": stats, "verdicts": doc["verdicts"], "violations": doc["violations"],
            "complete": doc["complete"], "stopped": doc["stopped"], "checked": doc["checked"]}


def reference(spec_path) -> dict:
    """The JSON result of an uninterrupted in-process run of a shipped spec, with the
    spec's own options (the session's shared exploration, tests/conftest.py)."""
    from conftest import EXPLORATIONS
    from kmc.app.render import result_to_dict

    spec, model, result = EXPLORATIONS[Path(spec_path).stem]
    return result_to_dict(spec, model, result)


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


LE3 = SPECS / "le-three-replicas.toml"
HW_FAST = SPECS / "hw-fast-leader-change.toml"


def assert_le3_counts(doc):
    stats = doc["stats"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (50294, 168775, 24)
    assert len(stats["levels"]) == 24 and sum(stats["levels"]) == 50294
    assert doc["complete"] is True and doc["stopped"] is None
    assert set(doc["verdicts"].values()) == {"holds"} and len(doc["verdicts"]) == 4


# -- end to end: SIGKILL, then --resume -----------------------------------------------------

@pytest.mark.slow
def test_sigkill_mid_run_then_resume_gives_the_pinned_counts(tmp_path):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", LE3, "--checkpoint", ck, "--checkpoint-every", "0", "--no-progress",
                        depth=8, signals=("KILL",))
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    header = checkpoint.read_header(ck)  # the last complete checkpoint survives the kill
    assert header["depth"] == 8 and header["distinct"] < 50294

    code, out, err = kmc_run("check", "--resume", ck, "--no-progress", "--json", tmp_path / "r.json")
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert_le3_counts(doc)
    assert "50,294 distinct states" in out
    final = checkpoint.read_header(ck)  # the finished run leaves its final checkpoint
    assert (final["depth"], final["distinct"], final["generated"]) == (24, 50294, 168775)


@pytest.fixture(scope="module")
def hw_fast_reference():
    return reference(HW_FAST)


@pytest.mark.slow
def test_sigkill_then_resume_reproduces_the_counterexamples(tmp_path, hw_fast_reference):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", HW_FAST, "--checkpoint", ck, "--checkpoint-every", "0", "--no-progress",
                        depth=10, signals=("KILL",))  # past the depth of the first counterexample
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    header = checkpoint.read_header(ck)
    assert header["depth"] == 10 and "CommittedNeverLost" in header["violated"]

    code, out, err = kmc_run("check", HW_FAST, "--resume", ck, "--no-progress", "--json", tmp_path / "r.json")
    assert code == 1, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert comparable(doc) == comparable(hw_fast_reference)
    stats = doc["stats"]
    assert (stats["distinct_states"], stats["depth"]) == (76116, 28)
    lengths = {v["property"]: len(v["trace"]["steps"]) for v in doc["violations"]}
    assert lengths == {"CommittedNeverLost": 9, "LogsNeverDiverge": 12}


# -- refusals: damaged files, other runs ----------------------------------------------------

def small_checkpoint(directory, spec_path=SPECS / "hw-data-loss.toml", depth=5, **run):
    """A checkpoint of ``spec_path`` explored to ``depth``, written in-process."""
    spec = load_spec(spec_path)
    engine = LocalEngine(spec.model(), spec.properties(), Options(max_depth=depth))
    engine.run()
    ident = {"kmc_version": checker.__version__, "spec_sha256": spec.sha256,
             "spec_path": os.path.abspath(spec.path), "properties": list(spec.invariants),
             "options": {"max_depth": depth, "keep_going": False}, "limits": {}}
    ident.update(run)
    Path(directory).mkdir(parents=True, exist_ok=True)
    return checkpoint.write(directory, ident, engine.snapshot())


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_checkpoint_is_refused_in_one_line(tmp_path, damage):
    f = small_checkpoint(tmp_path / "ck")
    data = bytearray(f.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) * 2 // 3] ^= 0x40
    f.write_bytes(bytes(data))
    code, out, err = kmc_run("check", "--resume", tmp_path / "ck", "--max-depth", "5", "--no-progress")
    assert code == 2
    line = one_line_error(err)
    assert str(f) in line and "truncated or corrupted" in line


@pytest.mark.parametrize("content, words", [
    (b"", "truncated or corrupted"),
    (checkpoint.MAGIC[:5], "truncated or corrupted"),
    (b"hello, world\n" * 10, "not a kmc checkpoint"),
    (checkpoint.MAGIC + b"\x00" * 10, "too short"),
])
def test_files_that_are_not_checkpoints_are_refused(tmp_path, content, words):
    (tmp_path / checkpoint.FILE_NAME).write_bytes(content)
    with pytest.raises(CheckpointError, match=words):
        checkpoint.read(tmp_path)


def test_every_truncation_and_every_bit_is_covered(tmp_path):
    f = small_checkpoint(tmp_path, depth=3)
    good = f.read_bytes()
    header, snap = checkpoint.read(tmp_path)
    assert header["depth"] == 3 and snap["stats"]["depth"] == 3
    step = max(1, len(good) // 97)
    for cut in range(0, len(good), step):
        f.write_bytes(good[:cut])
        with pytest.raises(CheckpointError):
            checkpoint.read(tmp_path)
    for pos in range(0, len(good), step):
        bad = bytearray(good)
        bad[pos] ^= 0x01
        f.write_bytes(bytes(bad))
        with pytest.raises(CheckpointError):
            checkpoint.read(tmp_path)


def test_missing_checkpoint_is_refused(tmp_path):
    code, out, err = kmc_run("check", "--resume", tmp_path, "--no-progress")
    assert code == 2
    assert "no checkpoint here" in one_line_error(err)


def test_resume_with_another_spec_is_refused(tmp_path):
    small_checkpoint(tmp_path / "ck")
    code, out, err = kmc_run("check", SPECS / "hw-divergence.toml", "--resume", tmp_path / "ck", "--no-progress")
    assert code == 2
    line = one_line_error(err)
    assert "spec differs" in line and "hw-data-loss.toml" in line


@pytest.mark.parametrize("change, args, words", [
    ({"kmc_version": "0.0.1"}, [], "kmc version differs"),
    ({"properties": ["CommittedNeverLost"]}, ["--invariant", "LogsNeverDiverge"], "invariants differ"),
])
def test_resume_of_another_run_is_refused(tmp_path, change, args, words):
    small_checkpoint(tmp_path / "ck", **change)
    code, out, err = kmc_run("check", "--resume", tmp_path / "ck", "--no-progress", *args)
    assert code == 2
    assert words in one_line_error(err)


def test_changed_options_on_resume_are_refused_and_missing_ones_are_taken_over(tmp_path):
    small_checkpoint(tmp_path / "ck")  # written with max_depth 5
    code, out, err = kmc_run("check", "--resume", tmp_path / "ck", "--max-depth", "6", "--no-progress")
    assert code == 2 and "options differ" in one_line_error(err)
    code, out, err = kmc_run("check", "--resume", tmp_path / "ck", "--no-progress", "--json", tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and doc["stopped"] == "max-depth" and doc["stats"]["depth"] == 5


def test_a_checkpoint_with_symmetry_resumes_and_one_without_is_refused_for_it(tmp_path):
    ck = tmp_path / "ck"
    assert kmc_run("check", SPECS / "hw-data-loss.toml", "--symmetry", "--max-depth", "4", "--checkpoint", ck,
                   "--no-progress")[0] == 0
    assert checkpoint.read_header(ck)["options"]["symmetry"] is True
    code, out, err = kmc_run("check", "--resume", ck, "--no-progress")
    assert code == 0 and one_line_error(err).startswith(f"kmc: resuming {ck} at depth 4 ")  # (nothing else)
    assert "its search had ended there: the result again" in err  # (at --max-depth 4)
    small_checkpoint(tmp_path / "plain", depth=4)
    code, out, err = kmc_run("check", "--resume", tmp_path / "plain", "--symmetry", "--no-progress")
    assert code == 2 and "options differ" in one_line_error(err)


def test_a_new_run_does_not_overwrite_a_checkpoint(tmp_path):
    small_checkpoint(tmp_path / "ck")
    before = (tmp_path / "ck" / checkpoint.FILE_NAME).read_bytes()
    code, out, err = kmc_run("check", SPECS / "hw-data-loss.toml", "--checkpoint", tmp_path / "ck", "--no-progress")
    assert code == 2 and "already holds a checkpoint" in one_line_error(err)
    assert (tmp_path / "ck" / checkpoint.FILE_NAME).read_bytes() == before


# -- the memory ceiling ------------------------------------------------------------------------

def test_max_memory_stops_cleanly_and_the_checkpoint_resumes(tmp_path, monkeypatch, capsys):
    from kmc.checker.core import driver
    from kmc.app.cli import main

    spec = SPECS / "hw-unclean.toml"
    ck = tmp_path / "ck"
    monkeypatch.setattr(driver, "resident_bytes", lambda: 1 << 40)  # past any ceiling at once
    code = main(["check", str(spec), "--max-memory", "128M", "--checkpoint", str(ck), "--no-progress",
                 "--json", str(tmp_path / "a.json")])
    out, err = capsys.readouterr()
    monkeypatch.undo()
    assert code == 4, err
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["stopped"] == "max-memory" and doc["complete"] is False
    assert "distinct states" in out
    assert "--max-memory" in err and "--resume" in err and "--engine spark" in err
    code, out, err = kmc_run("check", "--resume", ck, "--max-memory", "1T", "--no-progress", "--json", tmp_path / "b.json")
    assert code == 1, err
    assert comparable(json.loads((tmp_path / "b.json").read_text())) == comparable(reference(spec))


def test_max_memory_in_a_spec(tmp_path):
    from kmc.app.specs import parse_spec

    text = (SPECS / "hw-data-loss.toml").read_text().replace("[check]", '[check]\nmax_memory = "1.5G"')
    assert parse_spec(text.encode()).max_memory == 3 << 29
    for bad in ('"lots"', "1", '"1T0"', "true", '"9999999T"'):
        with pytest.raises(checker.SpecError, match="check.max_memory"):
            parse_spec(text.replace('"1.5G"', bad).encode())


def test_without_max_memory_a_run_stops_at_the_default_ceiling(monkeypatch, capsys, tmp_path):
    from kmc.app.cli import main

    monkeypatch.setattr(memory, "machine_bytes", lambda: 40 << 20)  # a 40 MiB machine: a 32 MiB ceiling
    code = main(["check", str(SPECS / "hw-unclean.toml"), "--no-progress", "--json", str(tmp_path / "a.json")])
    err = capsys.readouterr().err
    assert code == 4, err
    assert json.loads((tmp_path / "a.json").read_text())["stopped"] == "max-memory"
    assert [line for line in err.splitlines() if "resident memory" in line] == [
        "kmc: stopped: resident memory passed 32M, the default ceiling (80% of the memory this process may use; "
        "--max-memory SIZE sets another) before the search was complete."
    ]
    monkeypatch.setattr(memory, "machine_bytes", lambda: None)  # unknown: no ceiling
    assert main(["check", str(SPECS / "hw-unclean.toml"), "--no-progress"]) == 1


def test_the_machine_s_memory_is_read():
    total = memory.machine_bytes()
    assert total is not None and total > 256 << 20
    assert memory.default_ceiling() == int(total * 0.8)


def test_the_ceiling_counts_what_the_seen_set_may_still_allocate(monkeypatch, explorations):
    """The compact seen-set may merge all its runs at a level's end (a new array and the
    sort's buffer: 12 bytes a state): the ceiling is passed when resident memory plus that
    passes it, before the merge could push the process past it."""
    from kmc.checker.local.rows import BatchEngine, RowsSearch

    spec, model, want = explorations["hw-unflushed"]
    assert want.stats.distinct > 2048
    # Resident memory stays 24 KiB under the ceiling: only the reserve of more than 2,048
    # stored states passes it.
    monkeypatch.setattr(checker.core.driver, "resident_bytes", lambda: (1 << 30) - 24 * 1024)
    engine = BatchEngine(model, spec.properties(), Options(keep_going=True, max_memory=1 << 30))
    partial = engine.run()
    assert partial.stopped == "max-memory" and not partial.complete
    assert partial.stats.distinct > 2048 and engine.search.memory_reserve() == 12 * len(engine.search.seen)
    monkeypatch.setattr(RowsSearch, "memory_reserve", lambda self: 0)
    whole = BatchEngine(model, spec.properties(), Options(keep_going=True, max_memory=1 << 30)).run()
    assert whole.complete and whole.stats.distinct == want.stats.distinct


def test_memory_stop_inside_a_level_rolls_back_to_the_boundary(monkeypatch, explorations):
    import kmc.checker.core.driver
    import kmc.checker.local.rows

    spec, model, want = explorations["hw-unflushed"]  # keep_going = true, as here
    props = spec.properties()
    engine = LocalEngine(model, props, Options(keep_going=True, max_memory=1 << 30))
    # "Memory" grows with the seen-set; looked at every 64 states, it first passes the
    # ceiling inside a level.
    monkeypatch.setattr(checker.core.driver, "resident_bytes", lambda: (1 << 40) * (len(engine.seen) > 2000))
    monkeypatch.setattr(checker.local.rows, "CHUNK_ROWS", 64)
    partial = engine.run()
    assert partial.stopped == "max-memory" and not partial.complete
    snap = engine.snapshot()
    assert snap["stats"]["distinct"] == len(snap["seen"]) <= 2000 < partial.stats.distinct
    assert snap["stats"]["levels"] == want.stats.levels[: snap["stats"]["depth"]]
    monkeypatch.setattr(checker.core.driver, "resident_bytes", lambda: 0)
    resumed = LocalEngine(model, props, Options(keep_going=True))
    resumed.restore(pickle.loads(pickle.dumps(snap)))
    assert summary(resumed.run()) == summary(want)


# -- the engine's snapshot, in-process ---------------------------------------------------------

def summary(result):
    st = result.stats
    return (st.distinct, st.generated, st.depth, st.terminal, list(st.levels), dict(st.fired), dict(st.new),
            result.stopped, result.complete,
            {k: (v.kind, v.explanation, v.path.init_index, v.path.choices) for k, v in result.violations.items()})


@pytest.mark.parametrize("name, keep_going, every", [
    ("hw-data-loss", False, 1), ("hw-divergence", False, 1), ("hw-unclean", True, 4),
])
def test_resuming_from_level_boundaries_gives_the_same_result(name, keep_going, every):
    spec = load_spec(SPECS / f"{name}.toml")
    model, props = spec.model(), spec.properties()
    opts = Options(keep_going=keep_going)
    snaps = []
    engine = LocalEngine(model, props, opts)
    engine.on_level = lambda e: snaps.append(pickle.dumps(e.snapshot()))
    want = summary(engine.run())
    snaps.append(pickle.dumps(engine.snapshot()))  # the finished run resumes to itself
    assert len(snaps) >= 3
    for blob in snaps[::every] + snaps[-1:]:
        resumed = LocalEngine(model, props, opts)
        resumed.restore(pickle.loads(blob))
        assert summary(resumed.run()) == want


def test_a_stop_inside_a_level_resumes_to_the_same_result(explorations):
    spec, model, whole = explorations["hw-unclean"]  # keep_going = true, as here
    props = spec.properties()
    opts = Options(keep_going=True, progress_seconds=0)
    want = summary(whole)
    for stop_at in (2, 4, 7):
        engine = LocalEngine(model, props, opts)
        ticks = []

        def progress(stats, engine=engine, ticks=ticks, stop_at=stop_at):
            ticks.append(stats.distinct)
            if len(ticks) == stop_at:
                engine.stop_requested = "interrupted"

        engine.progress = progress
        partial = engine.run()
        assert partial.stopped == "interrupted" and not partial.complete
        assert partial.stats.distinct >= engine.stats.distinct == len(engine.seen)
        resumed = LocalEngine(model, props, opts)
        resumed.restore(pickle.loads(pickle.dumps(engine.snapshot())))
        assert summary(resumed.run()) == want


# -- the writer: rate limit, lock, leftovers -----------------------------------------------------

class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_checkpointer_writes_at_most_once_every_interval(tmp_path):
    spec = load_spec(SPECS / "hw-data-loss.toml")
    clock = _Clock()
    written = []
    engine = LocalEngine(spec.model(), spec.properties())
    with checkpointer.Checkpointer(tmp_path, {"kmc_version": "x"}, every=10, clock=clock) as writer:
        def on_level(e):
            clock.now += 4  # each level "takes" 4 s: a checkpoint every third level
            before = writer.written
            writer.on_level(e)
            if writer.written != before:
                written.append(e.stats.depth)

        engine.on_level = on_level
        engine.run()
        writer.save(engine)
    # Levels 2..10 end at 4, 8, ..., 36 s; a checkpoint is due 10 s after the last one.
    assert written == [4, 7, 10]
    assert checkpoint.read_header(tmp_path)["depth"] == engine.stats.depth


def test_checkpoint_directory_is_locked_and_leftovers_are_removed(tmp_path):
    stale = tmp_path / ".checkpoint-123-456.tmp"
    tmp_path.mkdir(exist_ok=True)
    stale.write_bytes(b"half a checkpoint")
    with checkpointer.Checkpointer(tmp_path, {}):
        assert not stale.exists()
        with pytest.raises(CheckpointError, match="in use by another kmc run"):
            with checkpointer.Checkpointer(tmp_path, {}):
                pass
    with checkpointer.Checkpointer(tmp_path, {}):  # released on exit
        pass


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path):
    f = small_checkpoint(tmp_path, depth=3)
    good = f.read_bytes()
    spec = load_spec(SPECS / "hw-data-loss.toml")
    engine = LocalEngine(spec.model(), spec.properties(), Options(max_depth=4))
    engine.run()
    snap = engine.snapshot()
    snap["frontier"] = [lambda: None]  # cannot be pickled
    with pytest.raises(Exception):
        checkpoint.write(tmp_path, {}, snap)
    assert f.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == [checkpoint.FILE_NAME]


def test_sizes():
    assert memory.parse_size("8G") == 8 << 30
    assert memory.parse_size("512m") == 512 << 20
    assert memory.parse_size("1.5GiB") == 3 << 29
    assert memory.parse_size("1000") == 1000
    for bad in ("", "G", "-1G", "1e9", "8 X", "9" * 40):
        with pytest.raises(ValueError):
            memory.parse_size(bad)
    assert memory.format_size(3 << 29) == "1.5G"
    rss = memory.resident_bytes()
    assert rss is None or rss > 1 << 20
