"""The ``kmc`` command line, run in subprocesses as a user runs it (and, for the many
one-line errors and help pages, through its ``main`` in this process).

Only stable facts of the terminal rendering are asserted (exit codes, property and
action names, the word "hold"); exact numbers come from ``--json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pins import PINS

REPO = Path(__file__).resolve().parent.parent

GOOD_MODEL = '[model]\nreplicas = 2\ntruncation = "high-watermark"\n'


def kmc(*args, cwd=REPO, columns=None):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if columns:
        env["COLUMNS"] = str(columns)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


def no_traceback(proc):
    assert "Traceback" not in proc.stdout and "Traceback" not in proc.stderr, proc.stderr


# -- verdicts and exit codes ----------------------------------------------------------------


def test_check_holding_spec_exits_0():
    proc = kmc("check", "specs/le-data-loss.toml", "--no-progress", columns=160)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "hold" in proc.stdout
    for name in ("HighWatermarkBelowLogEnd", "CommittedNeverLost", "LogsNeverDiverge",
                 "LeaderEpochMonotonic"):
        assert name in proc.stdout


def test_check_violated_spec_exits_1_and_shows_counterexample():
    proc = kmc("check", "specs/hw-data-loss.toml", "--no-progress", columns=160)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "CommittedNeverLost" in out
    # The seed scenario's actions appear, in order.
    pos = 0
    for action in ("Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)",
                   "Crash(A)", "Crash(B)", "Restart(B)", "BecomeFollower(B)", "ElectLeader(B)"):
        pos = out.find(action, pos)
        assert pos >= 0, f"{action} missing (in order) from the output"
        pos += len(action)


def test_check_expect_matching_spec_exits_0():
    assert kmc("check", "specs/hw-data-loss.toml", "--no-progress", "--check-expect").returncode == 0
    assert kmc("check", "specs/kip279-data-loss.toml", "--no-progress", "--check-expect").returncode == 0


def test_check_expect_contradicted_spec_exits_3(tmp_path):
    text = (REPO / "specs" / "hw-data-loss.toml").read_text(encoding="utf-8")
    assert 'CommittedNeverLost = "violated"' in text
    spec = tmp_path / "wrong-expect.toml"
    spec.write_text(text.replace('CommittedNeverLost = "violated"', 'CommittedNeverLost = "holds"'),
                    encoding="utf-8")
    proc = kmc("check", spec, "--no-progress", "--check-expect")
    no_traceback(proc)
    assert proc.returncode == 3
    # Without --check-expect the violation decides the exit code.
    assert kmc("check", spec, "--no-progress").returncode == 1


def test_invariant_selection(tmp_path):
    out = tmp_path / "r.json"
    proc = kmc("check", "specs/le-unflushed.toml", "--no-progress",
               "--invariant", "HighWatermarkBelowLogEnd", "--invariant", "LeaderEpochMonotonic",
               "--json", out, columns=160)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr      # the spec's violated ones are not checked
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["checked"] == ["HighWatermarkBelowLogEnd", "LeaderEpochMonotonic"]
    assert doc["violations"] == []
    assert doc["stats"]["distinct_states"] == PINS["le-unflushed"].distinct  # the whole space


def test_invariant_selection_finds_only_that_violation(tmp_path):
    out = tmp_path / "r.json"
    proc = kmc("check", "specs/le-unclean.toml", "--no-progress", "--invariant", "LogsNeverDiverge",
               "--json", out)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["checked"] == ["LogsNeverDiverge"]
    assert [v["property"] for v in doc["violations"]] == ["LogsNeverDiverge"]
    assert doc["violations"][0]["trace"]["length"] == 8


def test_unknown_invariant_option():
    proc = kmc("check", "specs/le-data-loss.toml", "--no-progress", "--invariant", "NoSuchThing")
    no_traceback(proc)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "NoSuchThing" in lines[0] and "--invariant" in lines[0]


def test_max_depth_bounds_the_search(tmp_path):
    out = tmp_path / "r.json"
    proc = kmc("check", "specs/hw-data-loss.toml", "--no-progress", "--max-depth", "5", "--json", out)
    no_traceback(proc)
    # The violation lies at depth 10, so none is found (whether an undecided run should
    # exit 0 is the CLI's choice; it must not claim a violation).
    assert proc.returncode != 1, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    st = doc["stats"]
    # The first five BFS levels of hw-data-loss hold 1, 4, 12, 31 and 68 states.
    assert st["levels"] == [1, 4, 12, 31, 68]
    assert (st["distinct_states"], st["depth"]) == (116, 5)
    assert doc["complete"] is False
    assert doc["verdicts"] == {"CommittedNeverLost": "unknown"}
    # An undecided expectation is not a match.
    assert kmc("check", "specs/hw-data-loss.toml", "--no-progress", "--max-depth", "5",
               "--check-expect").returncode == 3


@pytest.mark.parametrize("value", ["0", "-3", "x"])
def test_bad_max_depth_is_a_usage_error(value):
    proc = kmc("check", "specs/le-data-loss.toml", "--max-depth", value)
    no_traceback(proc)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--max-depth" in proc.stderr


# -- help -------------------------------------------------------------------------------


@pytest.mark.parametrize("args, words", [
    (["--help"], ["check", "bench", "invariants"]),
    (["check", "--help"], ["--invariant", "--max-depth", "--check-expect", "--json", "--no-progress"]),
    (["bench", "--help"], ["--repeat", "--json"]),
])
def test_help(args, words):
    proc = kmc(*args, columns=120)
    no_traceback(proc)
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: kmc")
    for w in words:
        assert w in proc.stdout


def test_no_command_is_a_usage_error():
    proc = kmc()
    assert proc.returncode == 2
    no_traceback(proc)


def test_invariants_command_lists_all_four():
    proc = kmc("invariants", columns=160)
    assert proc.returncode == 0
    for name in ("HighWatermarkBelowLogEnd", "CommittedNeverLost", "LogsNeverDiverge",
                 "LeaderEpochMonotonic"):
        assert name in proc.stdout


# -- bad input: exit 2, one line naming the file and the key, no traceback --------------------


BAD_SPECS = {
    # name: (file contents, the key the message must name, or a phrase when there is no key)
    "bad-toml": ("x = [\n", "TOML"),
    "unknown-top-key": ('colour = "red"\n' + GOOD_MODEL, "colour"),
    "unknown-model-key": (GOOD_MODEL + "max_mesages = 2\n", "model.max_mesages"),
    "string-for-int": (GOOD_MODEL + 'max_messages = "2"\n', "model.max_messages"),
    "bool-for-int": (GOOD_MODEL + "max_crashes = true\n", "model.max_crashes"),
    "max-messages-99": (GOOD_MODEL + "max_messages = 99\n", "model.max_messages"),
    "min-isr-above-replicas": (GOOD_MODEL + "min_insync_replicas = 3\n", "model.min_insync_replicas"),
    "replicas-0": ('[model]\nreplicas = 0\ntruncation = "high-watermark"\n', "model.replicas"),
    "replicas-8": ('[model]\nreplicas = 8\ntruncation = "high-watermark"\n', "model.replicas"),
    "unknown-truncation": ('[model]\nreplicas = 2\ntruncation = "kip-101"\n', "model.truncation"),
    "missing-truncation": ("[model]\nreplicas = 2\n", "model.truncation"),
    "missing-model": ('title = "x"\n', "model"),
    "unknown-invariant": (GOOD_MODEL + '[check]\ninvariants = ["NoSuchInvariant"]\n', "check.invariants"),
    "bad-expect-value": (GOOD_MODEL + '[expect]\nCommittedNeverLost = "maybe"\n', "expect.CommittedNeverLost"),
    "expect-unchecked": (GOOD_MODEL + '[check]\ninvariants = ["LogsNeverDiverge"]\n'
                         '[expect]\nCommittedNeverLost = "holds"\n', "expect.CommittedNeverLost"),
    "duplicate-replicas": ('[model]\nreplicas = ["A", "B", "A"]\ntruncation = "high-watermark"\n',
                           "model.replicas"),
    "bad-keep-going": (GOOD_MODEL + '[check]\nkeep_going = "yes"\n', "check.keep_going"),
    "workers-0": (GOOD_MODEL + "[check]\nworkers = 0\n", "check.workers"),
    "workers-string": (GOOD_MODEL + '[check]\nworkers = "2"\n', "check.workers"),
    # docs/model.md's "Kafka 2.1 and later"
    "unknown-truncation-lists-four": ('[model]\nreplicas = 2\ntruncation = "leader-epoch-2.2"\n',
                                      "high-watermark, leader-epoch, leader-epoch-kip279, leader-epoch-2.1"),
    "elr-without-gate": (GOOD_MODEL + "eligible_leader_replicas = true\n",
                         "model.eligible_leader_replicas: needs model.hw_requires_min_isr = true"),
    "string-for-gate": (GOOD_MODEL + 'hw_requires_min_isr = "yes"\n', "model.hw_requires_min_isr"),
    "bad-initial-leader": (GOOD_MODEL + 'initial_leader = "last"\n',
                           "model.initial_leader: must be one of first, any"),
    "int-initial-leader": (GOOD_MODEL + "initial_leader = 1\n", "model.initial_leader"),
}


def assert_one_line_error(proc, path, word):
    no_traceback(proc)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0], lines[0]
    assert word in lines[0], lines[0]
    assert proc.stdout == ""


def kmc_here(capsys, *args):
    """``kmc`` run in this process (its ``main``), answered as ``kmc`` answers: the exit
    code and what it wrote. The messages are the same; the subprocess runs above and below
    show the program's own exit and streams."""
    from types import SimpleNamespace

    code, out, err = _main(capsys, *args)
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


@pytest.mark.parametrize("name", sorted(BAD_SPECS))
def test_bad_spec(tmp_path, capsys, name):
    text, word = BAD_SPECS[name]
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    assert_one_line_error(kmc_here(capsys, "check", path, "--no-progress"), path, word)


@pytest.mark.parametrize("name", ["bad-toml", "elr-without-gate"])
def test_bad_spec_in_the_program(tmp_path, name):
    text, word = BAD_SPECS[name]
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    assert_one_line_error(kmc("check", path, "--no-progress"), path, word)


def test_missing_spec_file(tmp_path):
    path = tmp_path / "nope.toml"
    assert_one_line_error(kmc("check", path, "--no-progress"), path, "no such")


def test_spec_is_a_directory(tmp_path, capsys):
    path = tmp_path / "dir.toml"
    path.mkdir()
    assert_one_line_error(kmc_here(capsys, "check", path, "--no-progress"), path, "not a file")


def test_non_utf8_spec(tmp_path, capsys):
    path = tmp_path / "latin1.toml"
    path.write_bytes('title = "caf\u00e9"\n'.encode("latin-1") + GOOD_MODEL.encode())
    assert_one_line_error(kmc_here(capsys, "check", path, "--no-progress"), path, "UTF-8")


def test_bench_reports_bad_spec_the_same_way(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD_MODEL + "max_messages = 99\n", encoding="utf-8")
    assert_one_line_error(kmc_here(capsys, "bench", path), path, "model.max_messages")


@pytest.mark.parametrize("command", ["check", "bench"])
def test_json_into_missing_directory_is_bad_input(tmp_path, command):
    target = tmp_path / "no-such-dir" / "out.json"
    proc = kmc(command, "specs/hw-data-loss.toml", "--json", target,
               *(["--no-progress"] if command == "check" else []))
    no_traceback(proc)
    assert proc.returncode == 2
    assert str(target.parent) in proc.stderr.strip().splitlines()[-1]


def test_json_onto_a_device_is_refused_up_front_and_leaves_the_device(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    proc = kmc("check", "specs/hw-data-loss.toml", "--no-progress", "--no-trace", "--json", "/dev/full")
    no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "kmc: error: --json: /dev/full is a device, not a regular file; kmc writes its output to regular files only"]
    assert proc.stdout == ""  # refused before the run
    import stat
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # never renamed over


def test_simulate_refuses_an_unwritable_json_before_walking_and_bounds_depth(tmp_path):
    proc = kmc("simulate", "specs/hw-data-loss.toml", "--json", tmp_path / "none" / "s.json")
    no_traceback(proc)
    assert proc.returncode == 2 and proc.stdout == ""  # no walk was made
    assert proc.stderr.startswith("kmc: error: --json:")
    proc = kmc("simulate", "specs/hw-data-loss.toml", "--depth", "100001")
    assert proc.returncode == 2 and "at most 100,000" in proc.stderr


@pytest.mark.parametrize("command, words", [
    (["check", "--help"], ["Exit codes", "--check-expect", "--max-memory"]),
    (["replay", "--help"], ["Exit codes", "no longer replays"]),
    (["simulate", "--help"], ["Exit codes", "1 a violation"]),
    (["graph", "--help"], ["Exit codes", "unwritable"]),
])
def test_subcommand_help_states_exit_codes(command, words, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    proc = kmc_here(capsys, *command)
    assert proc.returncode == 0
    for w in words:
        assert w in " ".join(proc.stdout.split())


def test_check_output_through_a_pipe_has_no_control_codes():
    proc = kmc("check", "specs/hw-data-loss.toml")
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout and "\x1b" not in proc.stderr and "\r" not in proc.stderr


# -- keep-going, expectations of unchecked properties, option typos (in-process) ----------

def _main(capsys, *argv):
    from kmc.app.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_keep_going_explores_everything_and_says_so(tmp_path, capsys):
    out_json = tmp_path / "r.json"
    code, out, err = _main(capsys, "check", REPO / "specs" / "hw-data-loss.toml", "--keep-going",
                           "--no-progress", "--no-trace", "--json", out_json)
    assert code == 1
    doc = json.loads(out_json.read_text())
    # every reachable state, not the 1,834 of the level with the first violation
    assert (doc["stats"]["distinct_states"], doc["stats"]["depth"]) == (4913, 20)
    assert doc["complete"] is True and doc["stopped"] is None
    assert "keep_going is off" not in out and "incomplete" not in out
    assert "4,913 distinct states" in out


def test_check_expect_compares_only_the_checked_properties(capsys):
    # le-unclean expects all four; only LogsNeverDiverge is checked, and it is violated as expected
    code, out, _ = _main(capsys, "check", REPO / "specs" / "le-unclean.toml", "--invariant", "LogsNeverDiverge",
                         "--check-expect", "--no-progress", "--no-trace")
    assert code == 0
    flat = " ".join(out.split())
    assert "This matches the spec's expectation (not checked: " in flat
    # a checked property that contradicts its expectation still exits 3
    code, _, _ = _main(capsys, "check", REPO / "specs" / "le-unclean.toml", "--invariant", "LogsNeverDiverge",
                       "--max-depth", "3", "--check-expect", "--no-progress", "--no-trace")
    assert code == 3  # LogsNeverDiverge is unknown at depth 3


@pytest.mark.parametrize("argv, want", [
    (["check", "specs/hw-data-loss.toml", "--kep-going"],
     "kmc check: error: unrecognized arguments: --kep-going (did you mean --keep-going?) (see 'kmc check --help')"),
    (["replay", "r.json", "--frmat", "tla"],
     "kmc replay: error: unrecognized arguments: --frmat tla (did you mean --format?) (see 'kmc replay --help')"),
    (["check", "specs/hw-data-loss.toml", "extra"],
     "kmc check: error: unrecognized arguments: extra (see 'kmc check --help')"),
])
def test_unknown_option_points_to_the_subcommands_help(capsys, argv, want):
    code, _, err = _main(capsys, *argv)
    assert code == 2 and err.strip() == want


def test_check_help_points_to_the_model_doc():
    proc = kmc("check", "--help", columns=200)
    assert "docs/model.md" in proc.stdout
    assert "--progress-every" in proc.stdout
