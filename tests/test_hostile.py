"""Issue 12: kmc under hostile inputs: it never deletes or overwrites what a user owns,
does bounded work on hostile files, and shows untrusted text as text.

The Spark faults of the issue are tested in ``test_spark_faults.py``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.checkpoints import writer as checkpointer
from kmc.checker.checkpoints.file import CheckpointError

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "specs" / "hw-data-loss.toml"  # a violation: exit 1
HOLDS = REPO / "specs" / "le-data-loss.toml"


def kmc(*args, env=None, preexec_fn=None, timeout=180):
    full = dict(os.environ, **(env or {}))
    full.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=REPO, env=full,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn)


def kmc_here(capsys, *args):
    """``kmc`` in this process (faster than a subprocess): an object like ``kmc``'s."""
    from types import SimpleNamespace

    from kmc.app.cli import main

    try:
        code = main([str(a) for a in args])
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    cap = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=cap.out, stderr=cap.err)


def one_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    return lines[0]


# -- data a user owns: checkpoint directories ------------------------------------------------

def test_checkpoint_never_deletes_a_level_directory_it_did_not_create(tmp_path, capsys):
    ck = tmp_path / "d"
    (ck / "level-designs").mkdir(parents=True)
    (ck / "level-designs" / "plan.txt").write_text("mine")
    proc = kmc_here(capsys, "check", SEED, "--checkpoint", ck, "--no-progress", "--no-trace")
    assert proc.returncode == 2
    assert "not a kmc checkpoint directory" in one_line(proc) and str(ck) in one_line(proc)
    assert (ck / "level-designs" / "plan.txt").read_text() == "mine"


def test_prune_removes_only_what_the_manifest_lists(tmp_path):
    with checkpointer.Checkpointer(tmp_path, {}):
        mine = checkpoint.claim_data_dir(tmp_path, 3)
        mine.mkdir()
        kept = checkpoint.claim_data_dir(tmp_path, 4)
        kept.mkdir()
        (tmp_path / "level-000005").mkdir()  # not kmc's: someone put it there
        (tmp_path / "level-designs").mkdir()
        checkpoint.prune_data(tmp_path, keep=kept.name)
    assert sorted(p.name for p in tmp_path.glob("level-*")) == ["level-000004", "level-000005", "level-designs"]
    assert checkpoint.read_manifest(tmp_path) == {"owned": ["level-000004"]}
    with pytest.raises(CheckpointError, match="not created by kmc"):
        checkpoint.claim_data_dir(tmp_path, 5)
    assert (tmp_path / "level-000005").is_dir()


def test_a_checkpoint_directory_of_kmc_is_still_accepted(tmp_path, capsys):
    ck = tmp_path / "ck"
    proc = kmc_here(capsys, "check", HOLDS, "--checkpoint", ck, "--no-progress", "--max-depth", "5")
    assert proc.returncode == 0, proc.stderr
    assert checkpoint.read_manifest(ck) == {"owned": []}
    proc = kmc_here(capsys, "check", "--resume", ck, "--no-progress")
    assert proc.returncode == 0, proc.stderr


# -- data a user owns: output files --------------------------------------------------------

def test_json_onto_the_spec_is_refused_and_the_spec_kept(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_bytes(SEED.read_bytes())
    for extra in ([], ["--force"]):
        proc = kmc_here(capsys, "check", spec, "--json", spec, "--no-progress", *extra)
        assert proc.returncode == 2
        assert "an input of this run" in one_line(proc)
        assert spec.read_bytes() == SEED.read_bytes()


def test_json_onto_a_checkpoint_file_is_refused(tmp_path, capsys):
    ck = tmp_path / "ck"
    assert kmc_here(capsys, "check", HOLDS, "--checkpoint", ck, "--no-progress", "--max-depth", "3").returncode == 0
    before = (ck / checkpoint.FILE_NAME).read_bytes()
    proc = kmc_here(capsys, "check", "--resume", ck, "--json", ck / checkpoint.FILE_NAME, "--no-progress")
    assert proc.returncode == 2 and "an input of this run" in one_line(proc)
    other = tmp_path / "copy.kmc"
    other.write_bytes(before)
    proc = kmc_here(capsys, "check", HOLDS, "--json", other, "--no-progress", "--force")
    assert proc.returncode == 2 and "is a kmc checkpoint" in one_line(proc)
    assert (ck / checkpoint.FILE_NAME).read_bytes() == before == other.read_bytes()


def test_an_existing_file_that_is_not_a_kmc_result_needs_force(tmp_path, capsys):
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}\n')
    proc = kmc_here(capsys, "check", HOLDS, "--json", notes, "--no-progress")
    assert proc.returncode == 2 and "--force" in one_line(proc)
    assert notes.read_text() == '{"mine": true}\n'
    assert kmc_here(capsys, "check", HOLDS, "--json", notes, "--no-progress", "--force").returncode == 0
    assert json.loads(notes.read_text())["schema_version"] == 1
    # a kmc result is replaced without --force
    assert kmc_here(capsys, "check", HOLDS, "--json", notes, "--no-progress").returncode == 0
    graph = tmp_path / "g.dot"
    graph.write_text("digraph mine {}\n")
    tiny = tmp_path / "tiny.toml"
    tiny.write_text('[model]\nreplicas = 1\ntruncation = "leader-epoch"\nmax_messages = 1\nmax_crashes = 0\n')
    proc = kmc_here(capsys, "graph", tiny, "--out", graph)
    assert proc.returncode == 2 and "not a kmc graph" in one_line(proc)
    assert kmc_here(capsys, "graph", tiny, "--out", graph, "--force").returncode == 0
    assert kmc_here(capsys, "graph", tiny, "--out", graph).returncode == 0  # now kmc's own graph


@pytest.mark.parametrize("command", ["check", "simulate", "graph", "replay"])
def test_a_named_pipe_is_refused_up_front(tmp_path, command):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    if command == "replay":
        args = ("replay", fifo)
    elif command == "graph":
        fifo = tmp_path / "pipe.dot"
        os.mkfifo(fifo)
        args = ("graph", SEED, "--out", fifo)
    else:
        args = (command, SEED, "--json", fifo, *(["--no-progress"] if command == "check" else []))
    proc = kmc(*args, timeout=60)  # a hang is a timeout
    assert proc.returncode == 2
    assert "named pipe" in one_line(proc) and str(fifo) in one_line(proc)


def _small_file_limit():
    # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG.
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))


@pytest.mark.parametrize("spec", [SEED, HOLDS])
def test_a_failed_json_write_after_the_search_exits_2(tmp_path, spec):
    target = tmp_path / "r.json"
    proc = kmc("check", spec, "--json", target, "--no-progress", "--no-trace", preexec_fn=_small_file_limit)
    # 2, not 1 ("a violation: see the JSON") nor 0: the output failed; the verdict is printed
    assert proc.returncode == 2
    assert one_line(proc).startswith(f"kmc: error: --json: cannot write {target} (File too large)")
    assert "CommittedNeverLost" in proc.stdout


def test_check_expect_with_a_memory_stop_exits_4(tmp_path, monkeypatch, capsys):
    from kmc.checker.core import driver

    monkeypatch.setattr(driver, "resident_bytes", lambda: 1 << 40)  # past any ceiling at once
    proc = kmc_here(capsys, "check", REPO / "specs" / "le-data-loss.toml", "--max-memory", "128M", "--check-expect",
                    "--no-progress")
    assert proc.returncode == 4, proc.stderr


# -- bounded input: names, partitions, masters ---------------------------------------------

def test_a_replica_name_with_a_trailing_newline_is_refused():
    from kmc.checker.base.errors import SpecError
    from kmc.app.specs import parse_spec

    text = '[model]\nreplicas = ["A\\n", "A"]\ntruncation = "high-watermark"\n'
    with pytest.raises(SpecError, match="model.replicas"):
        parse_spec(text.encode())


def test_replay_refuses_a_replica_name_with_control_characters(tmp_path):
    from kmc.app.commands.replay import ReplayError, config_from_dict

    for names in (["A\n", "B"], ["A\x1b[31m", "B"]):
        with pytest.raises(ReplayError, match="spec.model.replicas"):
            config_from_dict("r.json", {"replicas": names, "truncation": "high-watermark"})


@pytest.mark.parametrize("value", ["4097", "100000", "100000000000000000000"])
def test_partitions_are_bounded_on_the_command_line(value, capsys):
    proc = kmc_here(capsys, "check", SEED, "--engine", "spark", "--partitions", value, "--no-progress")
    assert proc.returncode == 2
    assert "--partitions: must be at most 4096" in one_line(proc)


def test_partitions_are_bounded_in_a_spec():
    from kmc.checker.base.errors import SpecError
    from kmc.app.specs import parse_spec, spark_table

    text = '[model]\nreplicas = 2\ntruncation = "high-watermark"\n[spark]\npartitions = {}\n'
    assert spark_table(parse_spec(text.format(4096).encode())).partitions == 4096
    with pytest.raises(SpecError, match=r"spark.partitions: must be between 1 and 4096"):
        parse_spec(text.format(4097).encode())


@pytest.mark.parametrize("master, words", [
    ("", "the Spark master URL is empty"),
    ("local[0]", "needs at least one thread"),
    ("local[x]", "'local[x]' is not a Spark master URL"),
    ("spark://host", "'host' is not HOST:PORT"),
])
def test_bad_masters_are_refused_before_spark_starts(master, words, capsys):
    proc = kmc_here(capsys, "check", SEED, "--engine", "spark", "--master", master, "--no-progress")
    assert proc.returncode == 2 and words in one_line(proc)


def test_a_bad_master_in_a_spec_is_a_spec_error():
    from kmc.checker.base.errors import SpecError
    from kmc.app.specs import parse_spec

    text = '[model]\nreplicas = 2\ntruncation = "high-watermark"\n[spark]\nmaster = "local[0]"\n'
    with pytest.raises(SpecError, match="spark.master"):
        parse_spec(text.encode())


def test_an_unreachable_master_is_one_line_naming_the_url_before_spark_starts(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"spark://127.0.0.1:{port}"
    # No Java at all: the master is refused before a JVM would be needed (so in seconds,
    # not after Spark's minute of registration retries).
    no_java = {"PATH": os.path.dirname(sys.executable), "JAVA_HOME": ""}
    proc = kmc("check", SEED, "--engine", "spark", "--master", url, "--no-progress", env=no_java, timeout=60)
    assert proc.returncode == 2
    assert one_line(proc) == f"kmc: error: cannot reach the Spark master {url} (127.0.0.1:{port}: Connection refused)"


def test_a_master_that_never_answers_is_given_up_on_in_bounded_time():
    import socket

    from kmc.checker.base.errors import EngineError
    from kmc.checker.spark.master import REACH_SECONDS, check_reachable

    asked = []

    def silent(address, timeout):
        asked.append(timeout)
        raise socket.timeout()

    with pytest.raises(EngineError, match=r"cannot reach the Spark master spark://a:1,b:2 \(b:2: no answer"):
        check_reachable("spark://a:1,b:2", connect=silent)
    assert len(asked) == 2 and sum(asked) <= REACH_SECONDS


# -- bounded work on hostile result files ---------------------------------------------------

@pytest.fixture(scope="module")
def seed_doc(tmp_path_factory):
    from kmc.app.cli import main

    path = tmp_path_factory.mktemp("seed") / "seed.json"
    assert main(["check", str(SEED), "--no-progress", "--no-trace", "--json", str(path)]) == 1
    return json.loads(path.read_text())


def _with_choices(doc, choices):
    """``doc`` whose first trace takes ``choices`` (steps recomputed, so they are legal)."""
    from kmc.checker.core.trace import replay_choices
    from kmc.app.specs import load_spec
    from kmc.app.render.json_result import trace_to_dict

    model = load_spec(SEED).model()
    doc = json.loads(json.dumps(doc))
    doc["violations"][0]["trace"] = trace_to_dict(model, replay_choices(model, 0, choices))
    return doc


def test_replay_refuses_a_legal_loop_at_its_first_repeated_state(seed_doc, tmp_path, capsys):
    from kmc.app.cli import main

    choices = seed_doc["violations"][0]["trace"]["choices"]
    # FetchRequest(B), FetchResponse(B) from the initial state lead back to it.
    looped = _with_choices(seed_doc, [1, 1] * 200 + choices)
    f = tmp_path / "loop.json"
    f.write_text(json.dumps(looped))
    assert main(["replay", str(f)]) == 2
    err = capsys.readouterr().err
    assert "visits state 1 again at state 3: a shortest counterexample never does" in err


def test_replay_caps_the_length_before_replaying_anything(seed_doc, tmp_path, capsys):
    from kmc.app.cli import main
    from kmc.app.commands import replay

    doc = json.loads(json.dumps(seed_doc))
    doc["violations"][0]["trace"]["choices"] = [1] * replay.MAX_TRACE_STATES
    f = tmp_path / "long.json"
    f.write_text(json.dumps(doc))
    assert main(["replay", str(f)]) == 2
    assert f"kmc replays at most {replay.MAX_TRACE_STATES:,}" in capsys.readouterr().err


def test_replay_compares_as_it_replays(seed_doc, monkeypatch, tmp_path, capsys):
    from kmc.app.cli import main
    from kmc.model.kafka import KafkaModel

    doc = json.loads(json.dumps(seed_doc))
    trace = doc["violations"][0]["trace"]
    trace["steps"][1]["state"]["produced"] = 7  # state 2 is wrong
    f = tmp_path / "edited.json"
    f.write_text(json.dumps(doc))
    calls = []
    real = KafkaModel.successors
    monkeypatch.setattr(KafkaModel, "successors", lambda self, *a: calls.append(1) or real(self, *a))
    assert main(["replay", str(f)]) == 2
    assert "state 2 differs from the saved one" in capsys.readouterr().err
    assert len(calls) == 1  # one step replayed, not the nine of the trace


def test_replay_shows_the_recomputed_explanation_and_says_the_files_differs(seed_doc, tmp_path, capsys):
    from kmc.app.cli import main

    doc = json.loads(json.dumps(seed_doc))
    real = doc["violations"][0]["explanation"]
    doc["violations"][0]["explanation"] = "all is well \x1b[2J\x1b]0;pwned\x07"
    f = tmp_path / "lying.json"
    f.write_text(json.dumps(doc))
    for fmt in ("rich", "json", "tla"):
        assert main(["replay", str(f), "--format", fmt]) == 0
        cap = capsys.readouterr()
        assert "all is well" not in cap.out and "\x1b" not in cap.out + cap.err
        assert "explanation of CommittedNeverLost differs from the recomputed one" in cap.err
        if fmt == "json":
            assert json.loads(cap.out)["explanation"] == real
    f.write_text(json.dumps(seed_doc))
    assert main(["replay", str(f)]) == 0
    assert "differs" not in capsys.readouterr().err


def test_escape_sequences_from_files_never_reach_the_terminal(tmp_path):
    spec = tmp_path / "evil\x1b[31m.toml"
    spec.write_text('title = "\\u001b]0;owned\\u0007\\u001b[2J title \\u009b31m"\n'
                    'description = "\\u001b[5m blink"\n' + SEED.read_text().split("[model]", 1)[1].join(["[model]", ""]))
    proc = kmc("check", spec, "--no-progress", "--no-trace")
    assert proc.returncode == 1, proc.stderr
    for raw in ("\x1b", "\x07", "\x9b"):
        assert raw not in proc.stdout + proc.stderr
    assert "\\x1b]0;owned\\x07\\x1b[2J title \\x9b31m" in proc.stdout
    doc = {"schema_version": 1, "violations": [{"property": "Evil\x1b[2J", "trace": {}}]}
    f = tmp_path / "r.json"
    f.write_text(json.dumps(doc))
    proc = kmc("replay", f, "--invariant", "CommittedNeverLost")
    assert proc.returncode == 2 and "\x1b" not in proc.stderr and "Evil\\x1b[2J" in one_line(proc)


# -- checkpoint files: sizes before hashing, every header field ------------------------------

def _checkpoint(directory):
    from test_checkpoint import small_checkpoint

    return small_checkpoint(directory, depth=3)


def test_a_huge_sparse_checkpoint_is_refused_without_hashing_it(tmp_path, monkeypatch):
    import hashlib

    f = _checkpoint(tmp_path)
    with open(f, "r+b") as out:
        out.truncate(1 << 40)  # 1 TiB, all holes past the real data
    hashed = []

    class Counting:
        def __init__(self, *a):
            self.h = hashlib.sha256(*a)

        def update(self, data):
            hashed.append(len(data))
            self.h.update(data)

        def digest(self):
            return self.h.digest()

    monkeypatch.setattr(checkpoint.hashlib, "sha256", Counting)
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        checkpoint.read_header(tmp_path)
    assert sum(hashed) < 1 << 20


def _reseal(f, edit):
    """Edit a checkpoint's header and recompute its checksum (the file stays "valid")."""
    import hashlib

    data = f.read_bytes()
    body = data[:-32]
    m = len(checkpoint.MAGIC)
    front = int.from_bytes(body[m:m + 8], "big")
    if front < 1 << 20 and body[m + 8:m + 9] == b"{":  # format 1 (header first), for comparison
        header = json.loads(body[m + 8:m + 8 + front])
        edit(header)
        head = json.dumps(header).encode()
        body = body[:m] + len(head).to_bytes(8, "big") + head + body[m + 8 + front:]
        f.write_bytes(body + hashlib.sha256(body).digest())
        return
    length = int.from_bytes(body[-8:], "big")
    header = json.loads(body[-8 - length:-8])
    edit(header)
    head = json.dumps(header).encode()
    body = body[:-8 - length] + head + len(head).to_bytes(8, "big")
    f.write_bytes(body + hashlib.sha256(body).digest())


@pytest.mark.parametrize("key, value", [
    ("options", "x"), ("options", {"max_depth": "5"}), ("engine", "quantum"), ("depth", -1),
    ("properties", [1]), ("spec_path", ["a"]), ("violated", None), ("limits", []),
])
def test_a_resealed_header_with_a_bad_field_is_one_line(tmp_path, key, value, capsys):
    f = _checkpoint(tmp_path / "ck")
    _reseal(f, lambda h: h.__setitem__(key, value))
    with pytest.raises(CheckpointError, match=f"corrupted header: {key}"):
        checkpoint.read_header(tmp_path / "ck")
    proc = kmc_here(capsys, "check", "--resume", tmp_path / "ck", "--no-progress")
    assert proc.returncode == 2 and f"corrupted header: {key}" in one_line(proc)


# -- signals from the first line of start-up ---------------------------------------------

_SIGNAL_ON_IMPORT = r"""
import os, runpy, signal, sys

target, sig = sys.argv[1], getattr(signal, sys.argv[2])


class SignalOnImport:
    # Sends the signal the moment ``target`` is first imported: an interrupt during
    # start-up, at a deterministic point.
    fired = False

    def find_spec(self, name, path=None, target_module=None):
        if name == target and not SignalOnImport.fired:
            SignalOnImport.fired = True
            os.kill(os.getpid(), sig)
        return None


sys.meta_path.insert(0, SignalOnImport())
sys.argv = ["kmc", *sys.argv[3:]]
runpy.run_module("kmc.app.cli", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("module", ["kmc.checker.core.options", "rich.console", "kmc.app.render"])
@pytest.mark.parametrize("sig, code, line", [("SIGINT", 130, "kmc: interrupted"),
                                             ("SIGTERM", 143, "kmc: stopped (SIGTERM)")])
def test_a_signal_during_start_up_is_one_line_and_130_or_143(module, sig, code, line):
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_ON_IMPORT, module, sig, "check", str(SEED),
                           "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.strip() == line


def test_a_resealed_snapshot_that_does_not_load_is_one_line(tmp_path, capsys):
    ck = tmp_path / "ck"
    _checkpoint(ck)
    header, snap = checkpoint.read(ck)
    run = {k: header[k] for k in ("kmc_version", "spec_sha256", "spec_path", "properties", "options", "limits")}
    del snap["seen"]
    checkpoint.write(ck, run, snap)  # a valid checksum over a malformed snapshot
    proc = kmc_here(capsys, "check", "--resume", ck, "--no-progress")
    assert proc.returncode == 2 and "corrupted (its states do not load: KeyError)" in one_line(proc)
