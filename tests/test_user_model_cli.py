"""A model of one's own gets a Kafka spec's options (``kmc check --model``): checkpoints
and resuming on both engines, ``--check-expect`` against the model's ``expect()``, and every
replay output a model's trace has. The counts the two-phase commit model expects are
checked against a naive search written here from Lamport's TLA+ actions, not by kmc."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.engines import make_engine
from kmc.checker.core.options import Options

REPO = Path(__file__).resolve().parent.parent
TWO_PHASE_FILE = REPO / "specs" / "models" / "two_phase.py"
TWO_PHASE = "specs/models/two_phase.py:two_phase"
SPARK = ["--engine", "spark", "--partitions", "2", "--driver-level-limit", "0"]


def kmc(*args, cwd=REPO):
    env = dict(os.environ, COLUMNS="200")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def one_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def two_phase_module():
    spec = importlib.util.spec_from_file_location("two_phase_under_test", TWO_PHASE_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def edited_copy(tmp_path, old, new, name="tp.py"):
    """``two_phase.py`` copied into ``tmp_path`` with ``old`` replaced by ``new``."""
    text = TWO_PHASE_FILE.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


# -- the expectations, against a search kmc did not write --------------------------------------


def naive_two_phase(rms, eager=False):
    """Lamport's TwoPhase, action by action over sets and tuples, searched breadth-first:
    ``(distinct states, depth, Consistent holds, DecisionsFinal holds)``."""
    everyone = frozenset(range(rms))
    init = (("working",) * rms, "init", frozenset(), frozenset())

    def successors(s):
        rm, tm, prepared, msgs = s

        def at(r, value):
            return tuple(value if i == r else x for i, x in enumerate(rm))

        out = []
        if tm == "init" and (prepared if eager else prepared == everyone):
            out.append((rm, "done", prepared, msgs | {"Commit"}))
        if tm == "init":
            out.append((rm, "done", prepared, msgs | {"Abort"}))
        for r in everyone:
            if tm == "init" and ("Prepared", r) in msgs:
                out.append((rm, tm, prepared | {r}, msgs))
            if rm[r] == "working":
                out.append((at(r, "prepared"), tm, prepared, msgs | {("Prepared", r)}))
                out.append((at(r, "aborted"), tm, prepared, msgs))
            if "Commit" in msgs:
                out.append((at(r, "committed"), tm, prepared, msgs))
            if "Abort" in msgs:
                out.append((at(r, "aborted"), tm, prepared, msgs))
        return out

    seen, level, depth, consistent, final = {init}, [init], 0, True, True
    while level:
        depth += 1
        following = []
        for s in level:
            consistent &= not ("committed" in s[0] and "aborted" in s[0])
            for t in successors(s):
                final &= all(a == b or a not in ("committed", "aborted") for a, b in zip(s[0], t[0]))
                if t not in seen:
                    seen.add(t)
                    following.append(t)
        level = following
    return len(seen), depth, consistent, final


def test_the_naive_search_counts_one_rm_as_by_hand_and_three_as_tlc():
    assert naive_two_phase(1) == naive_two_phase(1, eager=True) == (12, 5, True, True)
    assert naive_two_phase(3)[:2] == (288, 11)  # TLC's count for Lamport's TwoPhase with three RMs


@pytest.mark.parametrize("rms", [1, 2, 3, 4])
@pytest.mark.parametrize("eager", [False, True])
def test_two_phase_expects_what_the_naive_search_finds(rms, eager):
    model = two_phase_module().two_phase(rms=rms, eager=eager)
    distinct, depth, consistent, final = naive_two_phase(rms, eager)
    want = {"Consistent": "holds" if consistent else "violated", "DecisionsFinal": "holds" if final else "violated"}
    if rms <= 3:
        want.update(distinct_states=distinct, depth=depth)
    assert model.expect() == want


# -- checkpoints and resuming -------------------------------------------------------------------


def _result(path):
    doc = json.loads(Path(path).read_text())
    model = doc.pop("model")
    return doc, {k: model[k] for k in ("params", "sha256")}


def _stop_then_resume(tmp_path, engine_args, resume_args=()):
    """A run stopped by --max-states with a checkpoint, resumed by ``--resume DIR`` alone
    from another folder, and an uninterrupted run: the results, side by side."""
    model = ["--model", TWO_PHASE, "--param", "eager=true", "--keep-going", "--no-progress"]
    ck = tmp_path / "ck"
    first = kmc("check", *model, *engine_args, "--max-states", "60", "--checkpoint", ck, "--json", tmp_path / "a.json")
    assert first.returncode == 0, first.stderr
    stopped, _ = _result(tmp_path / "a.json")
    assert stopped["stopped"] == "max-states" and 60 <= stopped["stats"]["distinct_states"] < 498
    header = checkpoint.read_header(ck)
    assert header["model_ref"] == f"{TWO_PHASE_FILE}:two_phase" and header["model_params"] == {"eager": True}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = kmc("check", "--resume", ck, *resume_args, "--no-progress", "--json", tmp_path / "b.json", cwd=elsewhere)
    assert resumed.returncode == 1, resumed.stderr
    whole = kmc("check", *model, "--json", tmp_path / "c.json")
    assert whole.returncode == 1, whole.stderr
    return _result(tmp_path / "b.json"), _result(tmp_path / "c.json"), resumed.stdout, whole.stdout


@pytest.mark.parametrize("path", [[], ["--per-state"]], ids=["batch", "per-state"])
def test_a_model_s_run_stopped_then_resumed_ends_as_an_uninterrupted_one(tmp_path, path):
    (doc, model), (want, want_model), out, want_out = _stop_then_resume(tmp_path, path)
    # how many states the batch kernel was compared on: the path's figure (none without a kernel)
    checked, want_checked = doc["stats"].pop("kernel_cross_checked"), want["stats"].pop("kernel_cross_checked")
    assert want_checked > 0 and checked == (0 if path else want_checked)
    assert doc == want and model == want_model
    assert doc["stats"]["distinct_states"] == 498 and doc["complete"] is True
    assert doc["expectation"]["matched"] is True and doc["expectation"]["unchecked"] == []
    trace = want_out[want_out.index("Counterexample"):]
    assert trace in out


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java")
@pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",  # (a spec's Spark resume: tests/test_spark_checkpoint.py)
                    reason="a model's Spark run stopped and resumed, two JVMs: set KMC_SLOW=1")
def test_a_model_s_spark_run_stopped_then_resumed_ends_as_an_uninterrupted_one(tmp_path):
    (doc, model), (want, want_model), _, _ = _stop_then_resume(tmp_path, SPARK, ["--partitions", "2"])
    assert doc.pop("engine") == "spark" and want.pop("engine") == "local"
    assert doc == want and model == want_model
    assert checkpoint.read_header(tmp_path / "ck")["engine"] == "spark"


def _checkpoint_of(tmp_path, ref, *params):
    ck = tmp_path / "ck"
    proc = kmc("check", "--model", ref, *params, "--max-states", "30", "--checkpoint", ck, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return ck


def test_a_resume_after_the_model_s_file_was_edited_is_refused(tmp_path):
    copy = edited_copy(tmp_path, "", "")
    ck = _checkpoint_of(tmp_path, f"{copy}:two_phase")
    assert kmc("check", "--resume", ck, "--max-states", "40", "--no-progress").returncode == 0  # unedited: resumes
    copy.write_text(copy.read_text().replace("out.append(Step(\"TMAbort\"))", "pass"))
    proc = kmc("check", "--resume", ck, "--no-progress")
    assert proc.returncode == 2
    line = one_line(proc)
    assert line.startswith(f"kmc: error: {ck}: cannot resume") and "model_sha256" in line and str(copy) in line


def test_a_resume_with_other_params_or_another_factory_or_a_spec_is_refused(tmp_path):
    ck = _checkpoint_of(tmp_path, TWO_PHASE, "--param", "rms=3")
    proc = kmc("check", "--resume", ck, "--param", "rms=2", "--no-progress")
    assert proc.returncode == 2
    line = one_line(proc)
    assert str(ck) in line and "model_params" in line and "rms=3" in line and "rms=2" in line
    proc = kmc("check", "--resume", ck, "--model", "specs/models/two_phase.py:TwoPhase", "--no-progress")
    assert proc.returncode == 2 and "model_ref" in one_line(proc)
    proc = kmc("check", "specs/hw-data-loss.toml", "--resume", ck, "--no-progress")
    assert proc.returncode == 2 and "it is a checkpoint of the model" in one_line(proc)
    # The same parameters, given again or taken over: it resumes.
    assert kmc("check", "--resume", ck, "--param", "rms=3", "--no-progress").returncode == 0


def test_a_spec_s_checkpoint_is_not_resumed_as_a_model(tmp_path):
    ck = tmp_path / "ck"
    assert kmc("check", "specs/hw-data-loss.toml", "--max-depth", "3", "--checkpoint", ck,
               "--no-progress").returncode == 0
    proc = kmc("check", "--resume", ck, "--model", TWO_PHASE, "--no-progress")
    assert proc.returncode == 2 and "it is a checkpoint of the spec" in one_line(proc)


def _model_checkpoint(tmp_path, **run):
    model = two_phase_module().two_phase(rms=2)
    engine = make_engine(model, options=Options(max_depth=3))
    engine.run()
    ident = {"kmc_version": "0.1.0", "model_ref": f"{TWO_PHASE_FILE}:two_phase", "model_params": {"rms": 2},
             "model_sha256": "ab" * 32, "properties": ["Consistent"], "options": {"max_depth": 3, "keep_going": False}}
    ident.update(run)
    directory = tmp_path / "ck"
    directory.mkdir(exist_ok=True)
    checkpoint.write(directory, ident, engine.snapshot())
    return directory


@pytest.mark.parametrize("change, key", [
    ({"model_params": {"rms": [2]}}, "model_params"),
    ({"model_params": {"not a name": 2}}, "model_params"),
    ({"model_params": ["rms"]}, "model_params"),
    ({"model_ref": ""}, "model_ref"),
    ({"model_sha256": 7}, "model_sha256"),
])
def test_a_model_s_header_is_checked(tmp_path, change, key):
    assert checkpoint.read_header(_model_checkpoint(tmp_path))["model_params"] == {"rms": 2}
    with pytest.raises(checkpoint.CheckpointError, match=f"corrupted header: {key} must be"):
        checkpoint.read_header(_model_checkpoint(tmp_path, **change))


# -- --check-expect -----------------------------------------------------------------------------


@pytest.mark.parametrize("params, compared", [
    (["--param", "rms=1"], True),
    (["--param", "rms=2", "--param", "eager=true", "--keep-going"], True),
    (["--param", "eager=true"], False),  # stopped at the violation: the counts are not compared
])
def test_check_expect_passes_with_the_model_s_expectations(params, compared):
    proc = kmc("check", "--model", TWO_PHASE, *params, "--check-expect", "--no-progress")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = "This matches the model's expectation" + ("." if compared else " (not compared: distinct_states, depth).")
    assert said in proc.stdout


@pytest.mark.parametrize("old, new, params, mismatch", [
    ("(3, False): (288, 11)", "(3, False): (287, 11)", [], "distinct_states: expected 287, got 288"),
    ("(2, True): (76, 8)", "(2, True): (76, 9)", ["--param", "rms=2", "--param", "eager=true", "--keep-going"],
     "depth: expected 9, got 8"),
    ("bug = self.eager and self.rms >= 2", "bug = False", ["--param", "eager=true"],
     "Consistent: expected holds, got violated"),
])
def test_check_expect_fails_with_exit_3_when_the_result_differs(tmp_path, old, new, params, mismatch):
    copy = edited_copy(tmp_path, old, new)
    proc = kmc("check", "--model", f"{copy}:two_phase", *params, "--check-expect", "--no-progress",
               "--json", tmp_path / "r.json")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "This does NOT match the model's expectation" in proc.stdout and mismatch in proc.stdout
    assert mismatch in json.loads((tmp_path / "r.json").read_text())["expectation"]["mismatches"]
    without = kmc("check", "--model", f"{copy}:two_phase", *params, "--no-progress")
    assert without.returncode == (1 if "eager=true" in params else 0)  # the exit codes of a spec


def test_check_expect_with_a_model_without_expectations_is_refused_in_one_line():
    proc = kmc("check", "--model", "toy:TwoCounters", "--check-expect", "--no-progress", cwd=REPO / "tests")
    assert proc.returncode == 2 and not proc.stdout
    line = one_line(proc)
    assert "toy:TwoCounters declares no expectations" in line and "expect()" in line
    assert kmc("check", "--model", "toy:TwoCounters", "--no-progress", cwd=REPO / "tests").returncode == 1


@pytest.mark.parametrize("new, says", [
    ('return {"Nope": "holds"}', "'Nope' is neither a property of the model"),
    ('return {"Consistent": "fine"}', 'Consistent must be "holds" or "violated"'),
    ('return {"depth": 0}', "depth must be a positive whole number"),
    ("return 1 / 0", "expect() failed (ZeroDivisionError"),
])
def test_a_malformed_expectation_is_refused_in_one_line(tmp_path, new, says):
    copy = edited_copy(tmp_path, "bug = self.eager and self.rms >= 2", new)
    proc = kmc("check", "--model", f"{copy}:two_phase", "--no-progress")
    assert proc.returncode == 2 and says in one_line(proc)


# -- replay: every output of a spec's trace that is not Kafka's own ------------------------------


def test_a_model_s_counterexample_replays_in_every_generic_format(tmp_path):
    saved = tmp_path / "r.json"
    assert kmc("check", "--model", TWO_PHASE, "--param", "eager=true", "--no-progress", "--json", saved).returncode == 1
    diff = kmc("replay", saved, "--model", TWO_PHASE, "--diff")
    assert diff.returncode == 0, diff.stderr
    assert "tm_prepared: 0 -> 1" in diff.stdout and "commit_msg: false -> true" in diff.stdout
    assert "rm: [1, 3, 0] -> [2, 3, 0]" in diff.stdout and "TM init · RMs prepared" not in diff.stdout
    for fmt, says in (("html", '<table class="steps">'), ("mermaid", "flowchart TD")):
        shown = kmc("replay", saved, "--model", TWO_PHASE, "--format", fmt)
        assert shown.returncode == 0 and says in shown.stdout and "RMRcvCommitMsg(0)" in shown.stdout
        written = kmc("replay", saved, "--model", TWO_PHASE, "--format", fmt, "--out", tmp_path / f"r.{fmt}")
        assert written.returncode == 0 and (tmp_path / f"r.{fmt}").read_text() == shown.stdout
    for fmt in ("svg", "tla"):
        proc = kmc("replay", saved, "--model", TWO_PHASE, "--format", fmt)
        assert proc.returncode == 2 and "drawn for Kafka's specs only" in one_line(proc)
    assert "--diff: only with --format rich" in one_line(kmc("replay", saved, "--model", TWO_PHASE, "--format", "json", "--diff"))
