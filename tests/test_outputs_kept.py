"""No user file is lost: a graph is written whole (a full disk leaves the old file, never
half a new one), ``kmc matrix`` asks before replacing a trace diagram it did not write, a
file that appears at an output's path while kmc searches is left as it is (the write
fails, atomically), and a user's JSON document is not taken for a kmc result because it
starts with ``schema_version``.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kmc.app.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION, main

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"
TINY = '[model]\nreplicas = 1\ntruncation = "leader-epoch"\nmax_messages = 1\nmax_crashes = 0\n'
MINE = b'{"schema_version": 1, "mine": "my notes"}\n'


def kmc(*args, cwd, preexec_fn=None):
    env = dict(os.environ, COLUMNS="200")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, preexec_fn=preexec_fn)


def one_line(text) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def _small_disk(limit):
    """In the child: files larger than ``limit`` bytes cannot be written (EFBIG, as a full
    disk's ENOSPC: the write fails part-way)."""
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow
def test_a_graph_that_cannot_be_written_leaves_the_old_file_whole(tmp_path):
    (tmp_path / "tiny.toml").write_text(TINY)
    assert kmc("graph", "tiny.toml", "--out", "g.dot", cwd=tmp_path).returncode == 0
    before = (tmp_path / "g.dot").read_bytes()
    assert 0 < len(before) < 4096
    proc = kmc("graph", SPECS / "le-data-loss.toml", "--out", "g.dot", cwd=tmp_path, preexec_fn=_small_disk(4096))
    assert proc.returncode == EXIT_BAD_INPUT
    assert "--out: cannot write the graph to g.dot" in one_line(proc.stderr)
    assert (tmp_path / "g.dot").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.dot", "tiny.toml"]  # no temporary file left


@pytest.mark.slow
def test_matrix_does_not_replace_a_users_trace_diagram_without_force(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "seed.toml").write_bytes((SPECS / "hw-data-loss.toml").read_bytes())
    assert kmc("matrix", specs, "--out", "mx", cwd=tmp_path).returncode == EXIT_OK
    pages = sorted((tmp_path / "mx" / "traces").glob("*.html"))
    assert pages, "the run wrote no trace diagram"
    pages[0].write_text("<p>my annotated copy</p>\n")
    proc = kmc("matrix", specs, "--out", "mx", cwd=tmp_path)
    assert proc.returncode == EXIT_BAD_INPUT
    assert f"{pages[0].relative_to(tmp_path)} exists and is not a kmc diagram" in one_line(proc.stderr)
    assert pages[0].read_text() == "<p>my annotated copy</p>\n"
    assert kmc("matrix", specs, "--out", "mx", "--force", cwd=tmp_path).returncode == EXIT_OK
    assert "my annotated copy" not in pages[0].read_text()


@pytest.fixture
def during_the_search(monkeypatch):
    """Run ``action()`` once the search has finished, before the outputs are written."""
    from kmc.app.commands import check

    actions = []
    search = check._search

    def searching(*args, **kwargs):
        found = search(*args, **kwargs)
        for action in actions:
            action()
        return found

    monkeypatch.setattr(check, "_search", searching)
    return actions


def test_a_file_created_at_an_output_path_during_the_search_is_left_as_it_is(tmp_path, capsys, monkeypatch,
                                                                             during_the_search):
    monkeypatch.chdir(tmp_path)
    mine = {"r.json": MINE, "r.html": b"<p>mine</p>\n", "r.mmd": b"graph TD\n  mine\n"}
    during_the_search.append(lambda: [Path(name).write_bytes(data) for name, data in mine.items()])
    code = main(["check", str(SPECS / "hw-data-loss.toml"), "--no-progress", "--no-trace", "--json", "r.json",
                 "--html", "r.html", "--mermaid", "r.mmd"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT  # the verdict is printed, an output failed
    for name, data in mine.items():
        assert Path(name).read_bytes() == data
        assert f"cannot write {name} (a file of that name appeared meanwhile; it is left as it is)" in err
    assert sorted(os.listdir(tmp_path)) == sorted(mine)  # no temporary file left


def test_a_kmc_result_a_user_replaced_during_the_search_is_left_as_it_is(tmp_path, capsys, monkeypatch,
                                                                         during_the_search):
    monkeypatch.chdir(tmp_path)
    args = ["check", str(SPECS / "hw-data-loss.toml"), "--no-progress", "--no-trace", "--json", "r.json"]
    assert main(args) == EXIT_VIOLATION
    capsys.readouterr()
    during_the_search.append(lambda: Path("r.json").write_bytes(MINE))
    assert main(args) == EXIT_BAD_INPUT
    assert "is no longer a kmc result; it is left as it is" in capsys.readouterr().err
    assert Path("r.json").read_bytes() == MINE
    # with --force the user said it may be replaced
    assert main([*args, "--force"]) == EXIT_VIOLATION
    assert json.loads(Path("r.json").read_text())["schema_version"] == 1


NOTES = b"my notes, not kmc's\n"


@pytest.mark.parametrize("option, name", [("--json", "late.json"), ("--html", "late.html"), ("--mermaid", "late.mmd")])
def test_a_link_that_appears_at_an_output_path_during_the_search_is_not_followed(tmp_path, capsys, monkeypatch,
                                                                                 during_the_search, option, name):
    """``ln -s notes.txt late.html`` while ``kmc check ... --html late.html`` runs: the
    user's notes are never replaced by kmc's page; the write is refused (nothing was at the
    path when it was checked), and with --force the link is replaced, not its target."""
    monkeypatch.chdir(tmp_path)
    Path("notes.txt").write_bytes(NOTES)
    during_the_search.append(lambda: Path(name).symlink_to("notes.txt"))
    args = ["check", str(SPECS / "hw-data-loss.toml"), "--no-progress", "--no-trace", option, name]
    assert main(args) == EXIT_BAD_INPUT
    assert f"cannot write {name} (a file of that name appeared meanwhile; it is left as it is)" in capsys.readouterr().err
    assert Path("notes.txt").read_bytes() == NOTES and Path(name).is_symlink()
    during_the_search.clear()
    assert main([*args, "--force"]) == EXIT_VIOLATION  # checked as a link to a file, replaced as a link
    assert Path("notes.txt").read_bytes() == NOTES
    assert not Path(name).is_symlink() and b"kmc" in Path(name).read_bytes()
    assert sorted(os.listdir(tmp_path)) == sorted(["notes.txt", name])  # no temporary file left


def test_a_kmc_result_replaced_by_a_link_during_the_search_is_left_as_it_is(tmp_path, capsys, monkeypatch,
                                                                            during_the_search):
    """A result kmc wrote before, replaced during the search by a link to another of its
    results (which kmc would otherwise take for its own): neither is written."""
    monkeypatch.chdir(tmp_path)
    args = ["check", str(SPECS / "hw-data-loss.toml"), "--no-progress", "--no-trace", "--json"]
    assert main([*args, "other.json"]) == EXIT_VIOLATION
    assert main([*args, "r.json"]) == EXIT_VIOLATION
    other = Path("other.json").read_bytes()
    capsys.readouterr()

    def swap():
        Path("r.json").unlink()
        Path("r.json").symlink_to("other.json")

    during_the_search.append(swap)
    assert main([*args, "r.json"]) == EXIT_BAD_INPUT
    assert "a symbolic link took the place of what was checked during the run; it is left as it is" in capsys.readouterr().err
    assert Path("other.json").read_bytes() == other and Path("r.json").is_symlink()


def test_a_link_at_the_path_is_replaced_never_its_target(tmp_path):
    from kmc.checker.base.files import write_file

    Path(tmp_path / "notes.txt").write_bytes(NOTES)
    link = tmp_path / "out.txt"
    link.symlink_to("notes.txt")
    with pytest.raises(FileExistsError):
        write_file(link, b"kmc's", exclusive=True)
    assert (tmp_path / "notes.txt").read_bytes() == NOTES and link.is_symlink()
    write_file(link, b"kmc's")
    assert (tmp_path / "notes.txt").read_bytes() == NOTES
    assert not link.is_symlink() and link.read_bytes() == b"kmc's"


def test_an_exclusive_write_never_replaces_a_file(tmp_path):
    from kmc.checker.base.files import write_file

    target = tmp_path / "out.txt"
    write_file(target, b"first", exclusive=True)
    with pytest.raises(FileExistsError):
        write_file(target, b"second", exclusive=True)
    assert target.read_bytes() == b"first" and os.listdir(tmp_path) == ["out.txt"]
    write_file(target, b"second")
    assert target.read_bytes() == b"second"


def test_a_users_document_that_starts_with_schema_version_is_not_a_kmc_result(tmp_path, capsys, monkeypatch):
    from kmc.app.outputs import is_kmc_output

    monkeypatch.chdir(tmp_path)
    for text in (MINE, b'{\n  "schema_version": 1,\n  "mine": true\n}\n', b'{"schema_version": 1, "kind": "kmc-x"}'):
        Path("notes.json").write_bytes(text)
        assert not is_kmc_output("notes.json", "json"), text
        assert main(["check", str(SPECS / "hw-data-loss.toml"), "--no-progress", "--no-trace", "--json",
                     "notes.json"]) == EXIT_BAD_INPUT
        assert "notes.json exists and is not a kmc result" in capsys.readouterr().err
        assert Path("notes.json").read_bytes() == text
    # what kmc writes is still its own: a check's result and a simulation's
    assert main(["check", str(SPECS / "hw-data-loss.toml"), "--no-progress", "--no-trace", "--json", "c.json"]) == 1
    assert main(["simulate", str(SPECS / "hw-data-loss.toml"), "--runs", "5", "--no-progress", "--no-trace",
                 "--json", "s.json"]) in (EXIT_OK, EXIT_VIOLATION)
    assert is_kmc_output("c.json", "json") and is_kmc_output("s.json", "json")


def test_bench_replaces_its_own_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["bench", str(SPECS / "hw-data-loss.toml"), "--max-depth", "3", "--json", "b.json"]
    assert main(args) == EXIT_OK and main(args) == EXIT_OK
    out = capsys.readouterr().out
    assert json.loads(Path("b.json").read_text())["kind"] == "kmc-bench"
    assert " kind " not in out  # the document's kind is not a measure
