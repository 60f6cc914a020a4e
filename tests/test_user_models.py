"""A model of one's own from the command line (``kmc check --model``): the worked example of
docs/writing-a-model.md (``specs/models/two_phase.py``) and the toy counters, on every
engine, with the generic trace, JSON and pictures."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TWO_PHASE = "specs/models/two_phase.py:two_phase"
ENGINES = {
    "batch": [],
    "per-state": ["--per-state"],
    "spark": ["--engine", "spark", "--partitions", "2", "--driver-level-limit", "0"],
}


def kmc(*args, cwd=REPO):
    env = dict(os.environ, COLUMNS="200")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _check(tmp_path, engine, *extra):
    out = tmp_path / engine
    out.mkdir()
    proc = kmc("check", "--model", TWO_PHASE, "--param", "eager=true", "--no-progress", "--keep-going",
               "--json", out / "r.json", "--mermaid", out / "r.mmd", "--html", out / "r.html", *ENGINES[engine], *extra)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((out / "r.json").read_text())
    assert doc.pop("engine") == ("spark" if engine == "spark" else "local")
    # how many states the batch kernel was compared on: the same on both of its paths, none without it
    assert (doc["stats"].pop("kernel_cross_checked") == 0) == (engine == "per-state")
    trace = proc.stdout[proc.stdout.index("Counterexample"):]
    # (the page embeds the document: the kernel's figure is the path's, as above)
    page = re.sub(r'"kernel_cross_checked": \d+', '"kernel_cross_checked": N', (out / "r.html").read_text())
    return doc, trace, (out / "r.mmd").read_text(), page


def _same_on(tmp_path, engines):
    runs = {engine: _check(tmp_path, engine) for engine in engines}
    doc, trace, mermaid, page = runs[engines[0]]
    assert doc["stats"]["distinct_states"] == 498 and doc["verdicts"]["Consistent"] == "violated"
    steps = doc["violations"][0]["trace"]["steps"]
    assert [s["action"]["text"] for s in steps[1:]] == [
        "RMPrepare(0)", "TMRcvPrepared(0)", "TMCommit", "RMChooseToAbort(1)", "RMRcvCommitMsg(0)"]
    assert "RM 0 committed while RM 1 aborted" in trace and "flowchart TD" in mermaid and '<table class="steps">' in page
    for engine in engines[1:]:
        other = runs[engine]
        assert other[0] == doc and other[1] == trace and other[2] == mermaid, engine
        def local(text):
            return (text.replace('"engine": "spark"', '"engine": "local"').replace("engine spark", "engine local")
                    .replace("engine</dt><dd>spark</dd>", "engine</dt><dd>local</dd>"))

        assert local(other[3]) == local(page), engine


def test_the_worked_example_gives_one_answer_on_the_local_paths(tmp_path):
    _same_on(tmp_path, ["batch", "per-state"])


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java")
@pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="the worked example in a Spark subprocess: set KMC_SLOW=1")  # (the page's own Spark block runs in every suite: tests/test_writing_a_model.py)
def test_the_worked_example_gives_the_same_answer_on_spark(tmp_path):
    _same_on(tmp_path, ["batch", "spark"])


def test_the_worked_example_holds_without_the_bug():
    proc = kmc("check", "--model", TWO_PHASE, "--no-progress", "--verify-kernel")
    assert proc.returncode == 0, proc.stderr
    assert "288 distinct states" in proc.stdout  # as TLC counts Lamport's TwoPhase with three RMs


def test_a_model_without_a_kernel_from_a_module_path(tmp_path):
    proc = kmc("check", "--model", "toy:TwoCounters", "--param", "n=4", "--no-progress", "--json", tmp_path / "t.json",
               cwd=REPO / "tests")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["stats"]["distinct_states"] == 19 and doc["model"]["params"] == {"n": 4}
    assert doc["violations"][0]["trace"]["steps"][-1]["state"] == {"x": 4, "y": 1}


def test_a_wrong_kernel_stops_the_run_with_one_line_and_exit_2():
    proc = kmc("check", "--model", "tests/counter_kernels.py:wrong_successor", "--no-progress")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "state Counters(x=1, y=0), action IncY: successor y: kernel 2, model 1" in lines[0]


def test_a_kernel_wrong_on_one_state_of_a_wide_level_stops_the_run():
    # The 61 x 61 grid whose kernel never enables IncY at (20, 40): every state is still
    # reached, and sampled two parents a level, the run said "No violation in 3,721 distinct
    # states" (exit 0) where the per-state path finds OneStep violated in 62 states (61 steps
    # from (0, 0) to (20, 40) and IncY). A model's own kernel is compared on every state.
    ref = "tests/counter_kernels.py:one_wrong_state"
    per_state = kmc("check", "--model", ref, "--no-progress", "--per-state")
    assert per_state.returncode == 1 and "62 states" in per_state.stdout, per_state.stdout
    proc = kmc("check", "--model", ref, "--no-progress")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "state Counters(x=20, y=40): successors (IncY not enabled by the kernel): kernel '1 (choices [0])', " \
        "model '2 (IncX, IncY)'" in lines[0]


@pytest.mark.parametrize("ref, says", [
    ("two_phase", "is not MODULE:FACTORY"),
    ("specs/models/missing.py:two_phase", "no such file"),
    ("specs/models/two_phase.py:nothing", "has no callable nothing"),
    ("no.such.module:f", "cannot import no.such.module"),
])
def test_a_bad_model_reference_is_one_line(ref, says):
    proc = kmc("check", "--model", ref, "--no-progress")
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bench_takes_a_model(tmp_path):
    proc = kmc("bench", "--model", TWO_PHASE, "--json", tmp_path / "b.json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "b.json").read_text())["distinct_states"] == 288


def test_a_saved_counterexample_replays_and_an_edited_one_is_refused(tmp_path):
    saved = tmp_path / "r.json"
    assert kmc("check", "--model", TWO_PHASE, "--param", "eager=true", "--no-progress", "--json", saved).returncode == 1
    doc = json.loads(saved.read_text())
    again = kmc("replay", saved, "--model", TWO_PHASE, "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == doc["violations"][0]
    shown = kmc("replay", saved, "--model", TWO_PHASE)
    assert shown.returncode == 0 and "RMRcvCommitMsg(0)" in shown.stdout
    doc["violations"][0]["trace"]["steps"][2]["state"]["tm"] = 2
    saved.write_text(json.dumps(doc))
    edited = kmc("replay", saved, "--model", TWO_PHASE)
    assert edited.returncode == 2 and "step 3: the replayed state differs from the saved one" in edited.stderr
