"""``kmc replay``: saved counterexamples re-executed, verified, and shown (rich, TLA+, JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kmc.app.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION, main
from kmc.app.commands.replay import load_document, replay
from kmc.checker.local.states import check
from kmc.app.specs import load_spec
from kmc.app.render.json_result import state_to_dict
from kmc.app.render.tla import trace_text

REPO = Path(__file__).resolve().parent.parent
SEED = str(REPO / "specs" / "hw-data-loss.toml")

HEADERS = [
    "State 1: <Initial predicate>",
    "State 2: <Produce(A)>",
    "State 3: <FetchRequest(B)>",
    "State 4: <FetchResponse(B)>",
    "State 5: <FetchRequest(B)>",
    "State 6: <Crash(A)>",
    "State 7: <Crash(B)>",
    "State 8: <Restart(B)>",
    "State 9: <BecomeFollower(B)>",
    "State 10: <ElectLeader(B)>",
]

FIRST_TWO_STATES = r"""State 1: <Initial predicate>
/\ alive = (A :> TRUE @@ B :> TRUE)
/\ log = (A :> <<>> @@ B :> <<>>)
/\ hw = (A :> 0 @@ B :> 0)
/\ epoch = (A :> 0 @@ B :> 0)
/\ leader = (A :> A @@ B :> A)
/\ remote_leo = (A :> (A :> 0 @@ B :> 0) @@ B :> (A :> 0 @@ B :> 0))
/\ inflight = (A :> None @@ B :> None)
/\ quorum = [leader |-> A, epoch |-> 0, isr |-> {A, B}]
/\ produced = 0
/\ crashes = 0
/\ committed = {}

State 2: <Produce(A)>
/\ alive = (A :> TRUE @@ B :> TRUE)
/\ log = (A :> <<[epoch |-> 0, id |-> 0]>> @@ B :> <<>>)
/\ hw = (A :> 0 @@ B :> 0)
/\ epoch = (A :> 0 @@ B :> 0)
/\ leader = (A :> A @@ B :> A)
/\ remote_leo = (A :> (A :> 0 @@ B :> 0) @@ B :> (A :> 0 @@ B :> 0))
/\ inflight = (A :> None @@ B :> None)
/\ quorum = [leader |-> A, epoch |-> 0, isr |-> {A, B}]
/\ produced = 1
/\ crashes = 0
/\ committed = {}

"""

LAST_STATE = r"""State 10: <ElectLeader(B)>
/\ alive = (A :> FALSE @@ B :> TRUE)
/\ log = (A :> <<[epoch |-> 0, id |-> 0]>> @@ B :> <<>>)
/\ hw = (A :> 1 @@ B :> 0)
/\ epoch = (A :> 0 @@ B :> 1)
/\ leader = (A :> A @@ B :> B)
/\ remote_leo = (A :> (A :> 0 @@ B :> 1) @@ B :> (A :> 0 @@ B :> 0))
/\ inflight = (A :> None @@ B :> None)
/\ quorum = [leader |-> B, epoch |-> 1, isr |-> {B}]
/\ produced = 1
/\ crashes = 2
/\ committed = {<<0, [epoch |-> 0, id |-> 0]>>}
"""


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``kmc check specs/hw-data-loss.toml --json`` and the engine's own violation."""
    path = tmp_path_factory.mktemp("replay") / "seed.json"
    assert main(["check", SEED, "--no-progress", "--no-trace", "--json", str(path)]) == EXIT_VIOLATION
    spec = load_spec(SEED)
    result = check(spec.model(), spec.properties())
    return path, result.violations["CommittedNeverLost"]


def test_replay_reproduces_the_identical_trace(saved):
    path, original = saved
    model, violation = replay(str(path), load_document(path))
    assert violation.property == "CommittedNeverLost" and violation.kind == "always"
    assert violation.path.states == original.path.states
    assert violation.path.actions == original.path.actions
    assert violation.path.choices == original.path.choices
    assert violation.explanation == original.explanation


def test_tla_text_of_the_seed_trace_is_pinned(saved, capsys):
    path, _ = saved
    assert main(["replay", str(path), "--format", "tla"]) == EXIT_OK
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "Error: Invariant CommittedNeverLost is violated."
    assert lines[1] == "Error: The behavior up to this point is:"
    assert [x for x in lines if x.startswith("State ")] == HEADERS
    body = "\n".join(lines[2:]) + "\n"
    assert body.startswith(FIRST_TWO_STATES)
    assert LAST_STATE in body
    assert "\\* CommittedNeverLost: record 0 (epoch 0) at offset 0 was committed but leader B's log ends at 0" in lines
    st = json.loads(path.read_text())["stats"]
    assert lines[-2] == f"{st['states_generated']} states generated, {st['distinct_states']} distinct states found."
    assert lines[-1] == f"The depth of the complete state graph search is {st['depth']}."


def test_tla_text_every_state_has_every_variable(saved):
    path, original = saved
    model, _ = replay(str(path), load_document(path))
    blocks = trace_text(model, original.path).strip().split("\n\n")
    assert len(blocks) == 10
    for block in blocks:
        names = [line.split(" = ")[0][3:] for line in block.splitlines()[1:]]
        assert names == ["alive", "log", "hw", "epoch", "leader", "remote_leo", "inflight",
                         "quorum", "produced", "crashes", "committed"]


def test_json_format_is_versioned_and_replays_again(saved, capsys, tmp_path):
    path, original = saved
    assert main(["replay", str(path), "--format", "json"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1
    assert doc["property"] == "CommittedNeverLost" and doc["explanation"] == original.explanation
    saved_doc = json.loads(path.read_text())
    assert doc["trace"] == saved_doc["violations"][0]["trace"]
    assert set(doc["trace"]) == {"init_index", "choices", "length", "steps"}
    again = tmp_path / "again.json"
    again.write_text(json.dumps(doc))
    _, violation = replay(str(again), load_document(again))
    assert violation.path.states == original.path.states


def test_rich_format_and_diff(saved, capsys):
    path, _ = saved
    assert main(["replay", str(path)]) == EXIT_OK
    full = capsys.readouterr().out
    assert "the replay matches the saved trace" in full and "State 10" in full
    assert main(["replay", str(path), "--diff"]) == EXIT_OK
    diff = capsys.readouterr().out
    assert "State 10" in diff and len(diff) < len(full)


def test_a_trace_that_no_longer_replays_is_refused(saved, tmp_path, capsys):
    path, _ = saved
    doc = json.loads(path.read_text())
    edited = json.loads(json.dumps(doc))
    edited["violations"][0]["trace"]["steps"][4]["state"]["replicas"]["B"]["hw"] = 7
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    changed = json.loads(json.dumps(doc))
    changed["spec"]["model"]["truncation"] = "leader-epoch"  # as if the rules had changed
    (tmp_path / "changed.json").write_text(json.dumps(changed))
    for name, detail in (("edited.json", "state 5 differs"), ("changed.json", "no action number")):
        assert main(["replay", str(tmp_path / name)]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert "does not replay" in err and detail in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("{", "not JSON"),
    ("[1, 2]", "not a kmc result"),
    ('{"schema_version": 7, "violations": []}', "schema_version"),
    ('{"schema_version": 1, "violations": []}', "no counterexample"),
    ('{"schema_version": 1, "kind": "kmc-matrix", "rows": []}', "traces/"),
    ('{"schema_version": 1, "violations": [{"property": "X", "trace": {}}], "spec": {"model": {"replicas": "AB"}}}',
     "spec.model.replicas"),
])
def test_bad_files_are_one_line_errors(tmp_path, capsys, content, message):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    assert main(["replay", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_invariant_selection(saved, capsys):
    path, _ = saved
    assert main(["replay", str(path), "--invariant", "LogsNeverDiverge"]) == EXIT_BAD_INPUT
    assert "no counterexample of 'LogsNeverDiverge'" in capsys.readouterr().err
    assert main(["replay", str(path), "--format", "tla", "--diff"]) == EXIT_BAD_INPUT


def test_a_simulation_result_replays(tmp_path, capsys):
    out = tmp_path / "sim.json"
    code = main(["simulate", SEED, "--runs", "5000", "--depth", "30", "--seed", "0", "--json", str(out)])
    assert code == EXIT_VIOLATION
    capsys.readouterr()
    model, violation = replay(str(out), load_document(out))
    doc = json.loads(out.read_text())
    assert [state_to_dict(model, s) for s in violation.path.states] == \
        [step["state"] for step in doc["violation"]["trace"]["steps"]]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["violations"][0].update(property="NoSuchProperty"), "unknown property 'NoSuchProperty'"),
    (lambda d: d["violations"][0].update(kind="step"), "is saved as kind 'step'"),
    # the states still replay, but the last one does not violate the property named
    (lambda d: d["violations"][0].update(property="LogsNeverDiverge"), "does not violate LogsNeverDiverge"),
    (lambda d: d.update(schema_version=True), "schema_version is True"),
])
def test_a_trace_is_refused_unless_it_still_violates_its_property(saved, tmp_path, capsys, edit, message):
    path, _ = saved
    doc = json.loads(path.read_text())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["replay", str(bad), "--format", "tla"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("key, value, message", [
    ("min_insync_replicas", 0, "spec.model.min_insync_replicas: must be between 1 and 2, got 0"),
    ("min_insync_replicas", 3, "spec.model.min_insync_replicas: must be between 1 and 2, got 3"),
    ("max_crashes", 17, "spec.model.max_crashes: must be between 0 and 16, got 17"),
    ("replicas", ["A", "1b"], "spec.model.replicas: '1b' is not a replica name"),
    ("truncation", "none", "spec.model.truncation: must be one of"),
])
def test_saved_constants_pass_the_spec_loaders_validator(saved, tmp_path, capsys, key, value, message):
    """A saved result's spec.model is validated by the loader's own validator
    (model.spec.config_from_table): the same bounds and messages as a spec file's."""
    path, _ = saved
    doc = json.loads(path.read_text())
    doc["spec"]["model"][key] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["replay", str(bad)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
