"""What a new user trips on: outputs checked before the search (never overwritten unless
--force, never found unwritable after a long run), a master that is not a Spark master, the
spark extra, and the texts a user reads (help, terminal output, docs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kmc.checker.app.cli import main

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
HW = SPECS / "hw-data-loss.toml"  # a violation: 1834 distinct states, depth 10


def kmc(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "kmc.checker.app.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=timeout)


def one_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- every output path is checked before the search -------------------------------------------

def test_json_through_a_dangling_link_is_refused_before_the_search(tmp_path, capsys):
    link = tmp_path / "result.json"
    link.symlink_to(tmp_path / "missing" / "r.json")
    assert main(["check", str(HW), "--no-progress", "--json", str(link)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no counterexample printed: the search never ran
    assert err.strip() == (f"kmc: error: --json: the folder {tmp_path / 'missing'} does not exist "
                           f"({link} is a link to {tmp_path / 'missing' / 'r.json'})")


@pytest.mark.parametrize("command", [["check"], ["simulate"], ["bench", "--max-depth", "2"]])
def test_json_under_proc_is_refused_before_the_search(command, capsys):
    assert main([command[0], str(HW), *command[1:], "--json", "/proc/kmc-result.json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().startswith("kmc: error: --json: cannot write in the folder /proc (")


def test_graph_and_checkpoint_under_proc_are_refused(capsys):
    assert main(["graph", str(HW), "--out", "/proc/kmc.dot"]) == 2
    assert main(["check", str(HW), "--no-progress", "--checkpoint", "/proc/kmc-ck"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 2 and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["check", str(HW), "--json", ""],
    ["check", str(HW), "--checkpoint", ""],
    ["simulate", str(HW), "--json", " "],
    ["bench", str(HW), "--json", ""],
    ["matrix", "--versions", "--configs", "c1", "--kafka", "hw", "--out", ""],
])
def test_an_empty_output_path_is_an_error(argv, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and "the path is empty" in err and len(err.strip().splitlines()) == 1


def test_a_write_that_still_fails_after_the_search_exits_2(tmp_path, monkeypatch, capsys):
    """A violation (exit 1 would tell a script "see the JSON") whose JSON cannot be written
    after all (a disk that filled up meanwhile): the verdict is printed, the exit code is 2."""
    import errno

    import kmc.reports

    def full(path, doc):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(kmc.reports, "write_json", full)
    target = tmp_path / "r.json"
    assert main(["check", str(HW), "--no-progress", "--no-trace", "--json", str(target)]) == 2
    out, err = capsys.readouterr()
    assert "CommittedNeverLost" in out and "1,834" in out
    assert err.strip() == f"kmc: error: --json: cannot write {target} (No space left on device)"


# -- kmc matrix --out DIR never replaces a user's files ---------------------------------------

MATRIX = ["matrix", "--versions", "--configs", "c1", "--kafka", "hw"]  # one row, 4,913 states


@pytest.mark.parametrize("name", ["RESULTS.md", "results.json", "traces/c1-hw-CommittedNeverLost.json"])
def test_matrix_refuses_to_replace_a_file_kmc_did_not_write(tmp_path, capsys, name):
    mine = tmp_path / "m2" / name
    mine.parent.mkdir(parents=True)
    mine.write_text("my own results\n")
    assert main([*MATRIX, "--out", str(tmp_path / "m2")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == (f"kmc: error: --out: {mine} exists and is not a kmc "
                           f"{'results table' if name == 'RESULTS.md' else 'result'}; "
                           "choose another file, or pass --force to replace it")
    assert mine.read_text() == "my own results\n"


def test_matrix_replaces_its_own_files_and_with_force_any(tmp_path, capsys):
    out_dir = tmp_path / "m"
    assert main([*MATRIX, "--out", str(out_dir)]) == 0
    first = json.loads((out_dir / "results.json").read_text())
    assert [r["distinct_states"] for r in first["rows"]] == [4913]
    assert main([*MATRIX, "--out", str(out_dir)]) == 0  # its own files: replaced without --force
    (out_dir / "RESULTS.md").write_text("mine")
    (out_dir / "traces" / "c1-hw-notes.json").write_text('{"mine": 1}')  # a row's prefix, not kmc's
    assert main([*MATRIX, "--out", str(out_dir)]) == 2
    assert main([*MATRIX, "--out", str(out_dir), "--force"]) == 0
    assert (out_dir / "RESULTS.md").read_text().splitlines()[2].startswith("Generated by `kmc matrix")
    assert (out_dir / "traces" / "c1-hw-notes.json").read_text() == '{"mine": 1}'  # never removed
    capsys.readouterr()
