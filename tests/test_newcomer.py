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

from kmc.app.cli import main

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
HW = SPECS / "hw-data-loss.toml"  # a violation: 1834 distinct states, depth 10


def kmc(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=ROOT,
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

    import kmc.app.render

    def full(path, doc, **_options):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(kmc.app.render, "write_json", full)
    target = tmp_path / "r.json"
    assert main(["check", str(HW), "--no-progress", "--no-trace", "--json", str(target)]) == 2
    out, err = capsys.readouterr()
    assert "CommittedNeverLost" in out and "1,834" in out
    assert err.strip() == f"kmc: error: --json: cannot write {target} (No space left on device)"


# -- kmc matrix --out DIR never replaces a user's files ---------------------------------------

MATRIX = ["matrix", "--versions", "--configs", "c1", "--kafka", "hw"]  # one row, 4,913 states


@pytest.mark.parametrize("name", ["RESULTS.md", "results.json", "traces/c1-hw-CommittedNeverLost.json",
                                  "traces/c1-hw-CommittedNeverLost.html"])
def test_matrix_refuses_to_replace_a_file_kmc_did_not_write(tmp_path, capsys, name):
    mine = tmp_path / "m2" / name
    mine.parent.mkdir(parents=True)
    mine.write_text("my own results\n")
    assert main([*MATRIX, "--out", str(tmp_path / "m2")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    kind = "results table" if name == "RESULTS.md" else "diagram" if name.endswith(".html") else "result"
    assert err.strip() == (f"kmc: error: --out: {mine} exists and is not a kmc {kind}; "
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


# -- a master URL that answers but is not a Spark master ----------------------------------------

@pytest.fixture
def http_port():
    """A tiny HTTP server on 127.0.0.1 (a web UI, a REST endpoint: not Spark's RPC port)."""
    import http.server
    import threading

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def silent_port():
    """A TCP port that accepts every connection and never says a word."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_an_http_server_is_not_a_spark_master(http_port):
    from kmc.checker.base.errors import EngineError
    from kmc.checker.spark.master import check_reachable

    url = f"spark://127.0.0.1:{http_port}"
    with pytest.raises(EngineError) as e:
        check_reachable(url)
    assert str(e.value) == (f"{url} is not a Spark master: 127.0.0.1:{http_port} answers HTTP, not Spark "
                            "(a web UI's port? a Spark master listens on 7077 by default)")


def test_a_port_that_says_nothing_is_given_up_on_after_the_probe_time(silent_port, monkeypatch):
    import time

    from kmc.checker.spark import master as spark_master
    from kmc.checker.base.errors import EngineError

    monkeypatch.setattr(spark_master, "PROBE_SECONDS", 0.5)
    url = f"spark://127.0.0.1:{silent_port}"
    started = time.monotonic()
    with pytest.raises(EngineError, match=rf"^{url} is not a Spark master: 127.0.0.1:{silent_port} sent no answer within 0 s$"):
        spark_master.check_reachable(url)
    assert time.monotonic() - started < 3


def test_a_spark_endpoints_answer_is_recognised():
    """The reply a Spark 4.3 master sent to the probe (recorded from a real master): an RPC
    failure (type 5) for the probe's request id, then Java's text of the exception."""
    import socket
    import struct

    from kmc.checker.spark.master import _PROBE_ID, probe_request, speaks_spark

    request = probe_request()
    assert struct.unpack(">qbqi", request[:21]) == (len(request), 3, _PROBE_ID, len(request) - 21)
    text = b"java.io.EOFException\n\tat java.base/java.io.DataInputStream.readFully"
    reply = struct.pack(">qbq", 17 + 4 + len(text), 5, _PROBE_ID) + struct.pack(">i", len(text)) + text
    for answer, verdict in ((reply, None), (b"HTTP/1.1 400 Bad Request\r\n", "answers HTTP"),
                            (b"SSH-2.0-OpenSSH_9.6\r\n", "answers in another protocol"),
                            (b"", "closed the connection without an answer")):
        a, b = socket.socketpair()
        with a, b:
            b.sendall(answer)
            if not answer:
                b.shutdown(socket.SHUT_WR)
            got = speaks_spark(a, 1.0)
            assert (got if got is None else got[:len(verdict)]) == verdict
            if answer:
                assert b.recv(100) == request


def test_the_cli_says_it_in_one_line_within_15_s(http_port):
    import time

    started = time.monotonic()
    proc = kmc("check", HW, "--engine", "spark", "--master", f"spark://127.0.0.1:{http_port}", timeout=60)
    assert time.monotonic() - started < 15
    assert proc.returncode == 2
    assert one_line(proc).startswith(f"kmc: error: spark://127.0.0.1:{http_port} is not a Spark master: ")


# -- pyspark is the spark extra ---------------------------------------------------------------

_HIDE_PYSPARK = '''
import sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _Hide())
'''


@pytest.mark.parametrize("command", ["check", "bench"])
def test_the_spark_engine_without_pyspark_names_the_extra(tmp_path, command):
    (tmp_path / "sitecustomize.py").write_text(_HIDE_PYSPARK)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    proc = kmc(command, HW, "--engine", "spark", env=env)
    assert proc.returncode == 2
    assert one_line(proc) == ("kmc: error: the spark engine needs pyspark, which is not installed (the 'spark' "
                              "extra: pip install '.[spark]' in kmc's folder, or pip install pyspark)")


def test_pyspark_is_an_extra_that_the_test_extra_and_ci_bring():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("pyspark") for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert any(d.startswith("pyspark") for d in extras["spark"])
    assert any(d.startswith("pyspark") for d in extras["test"])  # the README's 2nd command runs the Spark tests
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"pip install '.[{','.join(sorted(extras))}]'" in ci


# -- no reference to a file the repository does not have -----------------------------------------

_OUTSIDE = ("MODEL" + ".md", "../" + "shared")  # spelt in two parts so this file does not match itself
_SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist"}


def _repository_files():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            yield Path(folder) / name


def test_no_file_of_the_repository_points_outside_it():
    found = []
    for path in _repository_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{path.relative_to(ROOT)}: {word}" for word in _OUTSIDE if word in text]
    assert found == []


def test_no_help_text_points_outside_the_repository():
    from kmc.app.cli import build_parser

    parser = build_parser()
    texts = [parser.format_help()]
    for action in parser._subparsers._group_actions:
        texts += [sub.format_help() for sub in action.choices.values()]
    assert len(texts) >= 8
    for text in texts:
        assert not any(word in text for word in _OUTSIDE), text
    assert "docs/model.md" in "".join(texts)


def test_the_model_page_says_it_is_the_definition_and_has_the_verdict_tables():
    text = (ROOT / "docs" / "model.md").read_text(encoding="utf-8")
    assert "It is kmc's definition\nof the model" in text
    assert "## Known verdicts" in text and "(1 to 7, named" in text and "2 to 7" not in text
    assert "accepts them yet" not in text


def test_committed_is_not_acknowledged_is_said_next_to_both_keys():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for key in ("min_insync_replicas", "hw_requires_min_isr"):
        row = next(line for line in readme.splitlines() if line.startswith(f"| `[model] {key}`"))
        assert "NOT_ENOUGH_REPLICAS_AFTER_APPEND" in row and "AcknowledgedNeverLost" in row and "`acks`" in row
    model = (ROOT / "docs" / "model.md").read_text(encoding="utf-8")
    note = model[model.index("**Committed is not acknowledged below min ISR.**"):model.index("## State")]
    for words in ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", "`acks` key", "`AcknowledgedNeverLost`", "before 3.7"):
        assert words in note


# -- what the terminal shows --------------------------------------------------------------------

@pytest.fixture(scope="module")
def piped80():
    """``kmc check specs/hw-data-loss.toml`` piped, 80 columns wide."""
    proc = kmc("check", "specs/hw-data-loss.toml", env=dict(os.environ, COLUMNS="80"))
    assert proc.returncode == 1
    return proc.stdout.splitlines()


def test_piped_output_has_no_trailing_spaces_and_one_space_in_the_echo(piped80):
    assert piped80[0] == "kmc check specs/hw-data-loss.toml"
    assert [line for line in piped80 if line != line.rstrip()] == []


def test_at_80_columns_the_statistics_break_between_items_and_explain_terminal(piped80):
    start = next(i for i, line in enumerate(piped80) if "distinct states" in line)
    stats = piped80[start:start + 2]
    assert all(len(line) <= 80 for line in stats)
    assert stats[0] == "1,834 distinct states  ·  3,455 generated  ·  depth 10"
    assert stats[1].startswith("0 terminal (no action enabled)  ·  ") and stats[1].endswith(" states/s")


def test_at_80_columns_every_step_header_keeps_its_rule(piped80):
    headers = [i for i, line in enumerate(piped80) if line.startswith("State ")]
    assert len(headers) == 10  # the 10-state counterexample
    for i in headers:
        assert len(piped80[i]) <= 80 and piped80[i].endswith("─"), piped80[i]
    # a header too long for the width keeps the rule; its gloss follows on the next line
    i = next(i for i in headers if piped80[i].startswith("State 5: FetchRequest(B) "))
    assert piped80[i + 1] == "  A answers B's fetch from offset 1: 0 records, high watermark 1"


def test_bench_shows_sizes_in_human_units_and_its_help_the_exit_codes(capsys):
    from kmc.app.cli import build_parser
    from kmc.app.commands.bench import human_bytes

    assert [human_bytes(n) for n in (512, 1024, 58_814_464, 3 * 1024 ** 3)] == ["512 bytes", "1 KiB", "56.1 MiB", "3 GiB"]
    assert main(["bench", str(HW), "--max-depth", "3"]) == 0
    out = capsys.readouterr().out
    peak = next(line for line in out.splitlines() if line.strip().startswith("peak rss "))
    assert peak.split()[-1] in ("KiB", "MiB", "GiB") and "," not in peak.split()[-2], peak
    bench = build_parser()._subparsers._group_actions[0].choices["bench"].format_help()
    assert "Exit codes: 0 measured" in " ".join(bench.split())


def test_graph_labels_write_records_as_traces_do(tmp_path, capsys):
    import networkx as nx

    out = tmp_path / "g.graphml"
    assert main(["graph", str(HW), "--out", str(out)]) == 0
    labels = [d["label"] for _, d in nx.read_graphml(out).nodes(data=True)]
    assert len(labels) == 4913
    assert not any("@" in label for label in labels)
    assert any(label.startswith("A* 0:e0·r0 hw0 e0 | B - hw0 e0") for label in labels)
    assert any("0:e0·r0,1:e0·r1" in label for label in labels)
    capsys.readouterr()


def test_simulate_takes_no_trace_and_no_progress(capsys):
    assert main(["simulate", str(HW), "--no-trace", "--no-progress", "--runs", "5000"]) == 1
    out = capsys.readouterr().out
    head, _, verdict = out.strip().rpartition("\n\n")  # the header (spec and configuration), then one line
    assert head.startswith(f"kmc simulate {HW}") and "flags       none" in head
    assert verdict.startswith("CommittedNeverLost violated in walk ") and " of at most 5,000 (seed 0)" in verdict
    assert "State 1" not in out and len(verdict.splitlines()) == 1


def test_the_local_engine_needs_no_pyspark(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(_HIDE_PYSPARK)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    proc = kmc("check", HW, "--no-trace", "--no-progress", env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "1,834 distinct states" in proc.stdout  # tests/pins.py: hw-data-loss
