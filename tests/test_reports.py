"""The reports package: terminal traces and results, JSON documents, progress line.

Everything is rendered from real runs of shipped specs and checked against the numbers
the model pins (docs/model.md; hw-data-loss: 1834 distinct states, depth 10, a 10-state trace).
"""

from __future__ import annotations

import io
import json
import os

import attrs
import pytest
from rich.console import Console
from rich.segment import Segment

from kmc import checker
from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.core.result import HOLDS, UNKNOWN, VIOLATED, Stats, Violation
from kmc.model.config import Config
from kmc.model.kafka import ACTION_NAMES, KafkaModel
from kmc.app.specs import load_spec
from kmc.app.render import (
    SCHEMA_VERSION, ProgressDisplay, ResultView, TraceView, expectation, result_to_dict,
    state_from_dict, state_to_dict, trace_to_dict, write_json,
)
from kmc.app.render.progress import progress_text
from kmc.app.render.terminal import EPOCH_STYLES, diff_lines

from pins import spec_param

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(os.path.dirname(HERE), "specs")

SEED_ACTIONS = [
    "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)", "Crash(A)",
    "Crash(B)", "Restart(B)", "BecomeFollower(B)", "ElectLeader(B)",
]


def run(name, **overrides):
    spec = load_spec(os.path.join(SPECS, name))
    if overrides:
        spec = attrs.evolve(spec, **overrides)
    model = spec.model()
    result = LocalEngine(model, spec.properties(), Options(keep_going=spec.keep_going)).run()
    return spec, model, result


@pytest.fixture(scope="module")
def data_loss(explorations):
    return explorations["hw-data-loss"]


@pytest.fixture(scope="module")
def unclean(explorations):
    return explorations["hw-unclean"]


@pytest.fixture(scope="module")
def holds(explorations):
    return explorations["le-data-loss"]


def console(colour=False):
    if colour:
        return Console(record=True, width=160, file=io.StringIO(), force_terminal=True,
                       color_system="truecolor")
    return Console(record=True, width=160, file=io.StringIO())


def text_of(renderable, colour=False) -> str:
    c = console(colour)
    c.print(renderable)
    return c.export_text()


def lines_of(renderable, colour=False) -> list[list[Segment]]:
    c = console(colour)
    return list(Segment.split_lines(c.render(renderable, c.options)))


def plain(line) -> str:
    return "".join(s.text for s in line)


def highlighted_by_state(renderable) -> dict[int, list[str]]:
    """State number -> the texts drawn in the 'changed' style in that state's block."""
    out, current = {}, None
    for line in lines_of(renderable):
        text = plain(line)
        if text.startswith("State "):
            current = int(text.split(":")[0].split()[1])
            out[current] = []
            continue
        if current is None:
            continue
        run_ = ""
        for seg in line + [Segment("")]:
            if seg.style is not None and seg.style.reverse:
                run_ += seg.text
            elif run_:
                out[current].append(run_.strip())
                run_ = ""
    return out


# -- the terminal trace -------------------------------------------------------------------

def test_data_loss_run_is_pinned(data_loss):
    from pins import PINS

    _, _, result = data_loss
    pin = PINS["hw-data-loss"]
    assert (result.stats.distinct, result.stats.depth) == (pin.distinct, pin.depth) == (1834, 10)
    assert len(result.violations["CommittedNeverLost"].path) == pin.traces["CommittedNeverLost"] == 10


def test_trace_shows_every_state_in_order(data_loss):
    _, model, result = data_loss
    out = text_of(TraceView(model, result.violations["CommittedNeverLost"]))
    headers = ["State 1: initial"] + [f"State {i}: {a}" for i, a in enumerate(SEED_ACTIONS, 2)]
    positions = [out.index(h) for h in headers]
    assert positions == sorted(positions)
    assert "State 11" not in out
    # what each step did, in words
    assert "A answers B's fetch from offset 1: 0 records, high watermark 1" in out
    assert "B follows A in epoch 0, truncating its log to offset 0" in out


def test_trace_ends_with_the_explanation(data_loss):
    _, model, result = data_loss
    v = result.violations["CommittedNeverLost"]
    out = text_of(TraceView(model, v))
    tail = out[out.index("State 10:"):]
    assert "CommittedNeverLost is violated in State 10" in tail
    assert " ".join(v.explanation.split()) in " ".join(tail.replace("│", " ").split())
    assert v.explanation == "record 0 (epoch 0) at offset 0 was committed but leader B's log ends at 0"


def test_trace_table_contents(data_loss):
    _, model, result = data_loss
    out = text_of(TraceView(model, result.violations["CommittedNeverLost"]))
    block5 = out[out.index("State 5:"):out.index("State 6:")]
    a_row = next(l for l in block5.splitlines() if l.startswith("A "))
    b_row = next(l for l in block5.splitlines() if l.startswith("B "))
    assert "leader" in a_row and "0:e0·r0" in a_row and "B=1" in a_row
    assert "follower of A" in b_row and "from A e0 @1 [] hw=1" in b_row
    assert "controller leader A  ·  epoch 0  ·  ISR {A,B}" in block5
    assert "committed {0:e0·r0}" in block5
    block6 = out[out.index("State 6:"):out.index("State 7:")]
    assert "DOWN" in next(l for l in block6.splitlines() if l.startswith("A "))
    block8 = out[out.index("State 8:"):out.index("State 9:")]
    b_row = next(l for l in block8.splitlines() if l.startswith("B "))
    assert "—" in b_row and "-1" in b_row  # restarted: no leader, epoch -1
    block10 = out[out.index("State 10:"):]
    assert "leader B" in block10 and "ISR {B}" in block10


def test_changed_cells_are_highlighted(data_loss):
    _, model, result = data_loss
    marks = highlighted_by_state(TraceView(model, result.violations["CommittedNeverLost"]))
    assert sorted(marks) == list(range(1, 11))
    assert marks[1] == []  # nothing to compare the initial state with
    assert marks[2] == ["0:e0·r0", "1", "1"]  # A's log, A's LEO, produced
    assert marks[3] == ["from A e0 @0 [e0·r0] hw=0"]
    assert marks[5] == ["1", "B=1", "from A e0 @1 [] hw=1", "{0:e0·r0}"]
    # alive, role, crashes: A's remote LEO is hidden (A no longer leads) but unchanged
    assert marks[6] == ["DOWN", "leader (down)", "1"]
    assert marks[8] == ["up", "—", "-1"]
    assert marks[9] == ["follower of A", "0", "empty", "0"]
    # row B (its remote LEO is shown now that it leads, but was 0 already), then the controller
    assert marks[10] == ["leader", "1", "B", "1", "{B}"]


def test_plain_console_marks_changes_and_colour_console_does_not(data_loss):
    _, model, result = data_loss
    view = TraceView(model, result.violations["CommittedNeverLost"])
    out = text_of(view)
    assert "* marks a value that changed" in out
    assert "ISR {B}*" in out
    coloured = console(colour=True)
    coloured.print(view)
    ansi = coloured.file.getvalue()
    assert "\x1b[1;7m" in ansi  # bold reverse
    assert "ISR {B}*" not in coloured.export_text()


def test_records_are_coloured_by_epoch(unclean):
    _, model, result = unclean
    styles = {}
    for line in lines_of(TraceView(model, result.violations["LogsNeverDiverge"])):
        for seg in line:
            if seg.text in ("0:e0·r0", "0:e1·r1") and seg.style is not None and not seg.style.reverse:
                styles.setdefault(seg.text, set()).add(seg.style.color.name)
    assert styles == {"0:e0·r0": {EPOCH_STYLES[0]}, "0:e1·r1": {EPOCH_STYLES[1]}}


def test_diff_view(data_loss):
    _, model, result = data_loss
    v = result.violations["CommittedNeverLost"]
    out = text_of(TraceView(model, v, diff=True))
    assert out.count("replica ") == 1  # only the first state is a whole table
    for header in [f"State {i}: {a}" for i, a in enumerate(SEED_ACTIONS, 2)]:
        assert header in out
    for line in ("A.log: [] → [e0·r0]", "produced: 0 → 1", "A.remote_leo[B]: 0 → 1",
                 "committed: {} → {0:e0·r0}", "A.alive: up → DOWN",
                 "B.inflight: from A e0 @1 [] hw=1 → none", "B.epoch: 0 → -1",
                 "B.leader: A → none", "B.log: [e0·r0] → []", "quorum.isr: {A,B} → {B}",
                 "quorum.leader: A → B", "quorum.epoch: 0 → 1"):
        assert line in out, line
    assert "CommittedNeverLost is violated in State 10" in out
    # State 9 changed exactly B's log, epoch and leader
    steps = v.path.steps
    assert [l.plain for l in diff_lines(model, steps[7].state, steps[8].state)] == [
        "B.log: [e0·r0] → []", "B.epoch: -1 → 0", "B.leader: none → A"]


def test_step_property_names_the_last_transition(data_loss):
    _, model, result = data_loss
    path = result.violations["CommittedNeverLost"].path
    v = Violation("LeaderEpochMonotonic", "step", "made-up explanation for the test", path)
    out = text_of(TraceView(model, v))
    assert "LeaderEpochMonotonic is violated by the last transition" in out
    assert "State 9 → State 10 (ElectLeader(B))" in out
    assert "made-up explanation for the test" in out


# -- the whole result ---------------------------------------------------------------------

def test_result_view_of_a_violated_spec(data_loss):
    spec, model, result = data_loss
    out = text_of(ResultView(spec, model, result))
    assert "specs/hw-data-loss.toml" in out
    assert spec.title in out
    assert "high-watermark" in out and "A, B" in out
    row = next(l for l in out.splitlines() if l.strip().startswith("CommittedNeverLost"))
    assert "VIOLATED" in row and "as expected" in row
    assert "1,834 distinct states" in out and "3,455 generated" in out and "depth 10" in out
    assert "stopped after the first level with a violation" in out
    for name in ACTION_NAMES[:-1]:  # AlterPartition: alter_partition only
        assert any(l.strip().startswith(name + " ") for l in out.splitlines()), name
    assert "never fired" not in out
    assert "Counterexample: CommittedNeverLost (10 states)" in out
    assert "State 10: ElectLeader(B)" in out
    assert "CommittedNeverLost violated: shortest counterexample has 10 states." in out
    assert "This matches the spec's expectation." in out


def test_result_view_of_a_holding_spec(holds):
    spec, model, result = holds
    assert result.complete and not result.violations
    out = text_of(ResultView(spec, model, result))
    for name in result.checked:
        row = next(l for l in out.splitlines() if l.strip().startswith(name))
        assert "holds" in row and "as expected" in row
    assert "incomplete" not in out and "Counterexample" not in out
    assert "All 4 properties hold over 4,274 distinct states." in out
    assert "This matches the spec's expectation." in out


def test_result_view_without_traces_and_unclean_note(unclean):
    spec, model, result = unclean
    out = text_of(ResultView(spec, model, result, show_traces=False))
    assert "State 1:" not in out
    assert "unclean_leader_election" in out
    assert "CommittedNeverLost violated: shortest counterexample has 5 states." in out
    assert "LogsNeverDiverge (8 states)" in out
    assert "by design" in out
    full = text_of(ResultView(spec, model, result))
    # shortest counterexample first
    assert full.index("Counterexample: CommittedNeverLost (5 states)") < full.index(
        "Counterexample: LogsNeverDiverge (8 states)")


def test_unexpected_verdict(data_loss):
    spec, model, result = data_loss
    wrong = attrs.evolve(spec, expect={"CommittedNeverLost": HOLDS})
    exp = expectation(wrong, result)
    assert exp == {"expected": {"CommittedNeverLost": HOLDS}, "got": {"CommittedNeverLost": VIOLATED},
                   "matched": False, "mismatches": ["CommittedNeverLost: expected holds, got violated"],
                   "unchecked": []}
    out = text_of(ResultView(wrong, model, result, show_traces=False))
    assert "UNEXPECTED (expected holds)" in out
    assert "does NOT match the spec's expectation" in out


def test_unknown_verdicts_when_the_search_stops_early():
    spec, model, result = run("hw-unclean.toml", keep_going=False)
    assert not result.complete and result.stopped == "violation"
    assert result.verdict("HighWatermarkBelowLogEnd") == UNKNOWN
    out = text_of(ResultView(spec, model, result, show_traces=False))
    row = next(l for l in out.splitlines() if l.strip().startswith("HighWatermarkBelowLogEnd"))
    # an undecided verdict is not a contradiction of [expect]: yellow "not decided", never UNEXPECTED
    assert "unknown" in row and "not decided (expected holds)" in row and "UNEXPECTED" not in row
    flat = " ".join(out.split())
    assert "LeaderEpochMonotonic are unknown (--keep-going decides them)" in flat
    assert "The spec's expectation is not confirmed yet: the search stopped before deciding" in flat
    assert "does NOT match" not in flat
    exp = expectation(spec, result)
    assert not exp["matched"]
    assert any(m.startswith("HighWatermarkBelowLogEnd: expected holds, got unknown") for m in exp["mismatches"])


def test_expectation_without_a_spec_or_expect(data_loss):
    spec, model, result = data_loss
    assert expectation(None, result) == {"expected": {}, "got": {"CommittedNeverLost": VIOLATED},
                                         "matched": True, "mismatches": [], "unchecked": []}
    assert expectation(attrs.evolve(spec, expect={}), result)["matched"] is True
    out = text_of(ResultView(None, model, result, show_traces=False))
    assert "kmc check" not in out and "expectation" not in out.split("\n\n")[-1]
    assert "CommittedNeverLost violated" in out


def test_actions_that_never_fired():
    model = KafkaModel(Config(max_crashes=0, max_messages=1))
    result = checker.check(model)
    out = text_of(ResultView(None, model, result, show_traces=False))
    crash = next(l for l in out.splitlines() if l.strip().startswith("Crash "))
    assert "never fired (max_crashes = 0)" in crash
    # an action that should fire but did not is flagged as suspicious
    stats = attrs.evolve(result.stats, fired={k: v for k, v in result.stats.fired.items() if k != "Produce"})
    fake = attrs.evolve(result, stats=stats)
    out = text_of(ResultView(None, model, fake, show_traces=False))
    produce = next(l for l in out.splitlines() if l.strip().startswith("Produce "))
    assert "a modelling bug or an unreachable action?" in produce


def test_stop_reasons(data_loss):
    _, model, result = data_loss
    for stopped, words in (("max-depth", "depth bound (max_depth = 5)"), ("max-states", "state bound"),
                           ("max-memory", "memory bound"), ("interrupted", "interrupted"),
                           ("some-new-reason", "stopped early (some-new-reason)")):
        r = attrs.evolve(result, complete=False, stopped=stopped, max_depth=5, violations={})
        out = text_of(ResultView(None, model, r, show_traces=False))
        assert words in out
        assert "incomplete: 1 invariant unknown" in out


# -- JSON ---------------------------------------------------------------------------------

def test_json_document(data_loss):
    spec, model, result = data_loss
    doc = result_to_dict(spec, model, result)
    assert json.loads(json.dumps(doc)) == doc
    assert doc["schema_version"] == SCHEMA_VERSION == 1
    assert doc["kmc_version"] == checker.__version__
    assert doc["spec"] == {"path": spec.path, "sha256": spec.sha256, "title": spec.title,
                           "model": spec.config.as_dict()}
    assert doc["engine"] == "local" and doc["checked"] == ["CommittedNeverLost"]
    assert doc["complete"] is False and doc["stopped"] == "violation" and doc["max_depth"] is None
    st = doc["stats"]
    assert (st["distinct_states"], st["states_generated"], st["depth"]) == (1834, 3455, 10)
    assert st["levels"] == [1, 4, 12, 31, 68, 127, 220, 337, 454, 580]
    assert list(st["actions"]) == list(ACTION_NAMES[:-1])  # AlterPartition: alter_partition only
    assert st["actions"]["Crash"] == {"fired": 835, "new": 476}
    assert sum(a["new"] for a in st["actions"].values()) == 1834 - 1
    assert sum(a["fired"] for a in st["actions"].values()) == 3455 - 1
    assert doc["verdicts"] == {"CommittedNeverLost": "violated"}
    assert doc["expectation"]["matched"] is True
    (v,) = doc["violations"]
    assert (v["property"], v["kind"]) == ("CommittedNeverLost", "always")
    assert v["explanation"] == result.violations["CommittedNeverLost"].explanation
    trace = v["trace"]
    assert trace["length"] == 10 and len(trace["steps"]) == 10
    assert [s["index"] for s in trace["steps"]] == list(range(1, 11))
    assert trace["steps"][0]["action"] is None
    assert [s["action"]["text"] for s in trace["steps"][1:]] == SEED_ACTIONS
    assert trace["steps"][5]["action"] == {"name": "Crash", "replica": "A", "cut": None, "text": "Crash(A)"}


def test_json_trace_replays_and_describes_every_state(data_loss):
    _, model, result = data_loss
    path = result.violations["CommittedNeverLost"].path
    trace = json.loads(json.dumps(trace_to_dict(model, path)))
    replayed = checker.replay_choices(model, trace["init_index"], trace["choices"])
    assert replayed.states == path.states
    for step, want in zip(trace["steps"], path.steps):
        assert step["state"] == state_to_dict(model, want.state)
        assert state_from_dict(model, step["state"]) == want.state


def test_json_state_shape(data_loss):
    _, model, result = data_loss
    steps = result.violations["CommittedNeverLost"].path.steps
    s5 = state_to_dict(model, steps[4].state)
    assert s5 == {
        "replicas": {
            "A": {"alive": True, "log": [[0, 0]], "leo": 1, "hw": 1, "epoch": 0, "leader": "A",
                  "remote_leo": {"A": 0, "B": 1}, "inflight": None},
            "B": {"alive": True, "log": [[0, 0]], "leo": 1, "hw": 0, "epoch": 0, "leader": "A",
                  "remote_leo": {"A": 0, "B": 0},
                  "inflight": {"leader": "A", "epoch": 0, "start": 1, "records": [], "leader_hw": 1}},
        },
        "quorum": {"leader": "A", "epoch": 0, "isr": ["A", "B"]},
        "produced": 1, "crashes": 0, "committed": [[0, 0, 0]],
    }
    s8 = state_to_dict(model, steps[7].state)
    assert s8["replicas"]["B"]["leader"] is None and s8["replicas"]["B"]["epoch"] == -1


def test_json_of_a_holding_spec_and_without_a_spec(holds):
    spec, model, result = holds
    doc = json.loads(json.dumps(result_to_dict(spec, model, result)))
    assert doc["violations"] == [] and doc["complete"] is True and doc["stopped"] is None
    assert set(doc["verdicts"].values()) == {"holds"}
    assert doc["stats"]["distinct_states"] == 4274
    bare = result_to_dict(None, model, result)
    assert bare["spec"] == {"path": None, "sha256": None, "title": None, "model": model.config.as_dict()}
    assert bare["expectation"] == {"expected": {}, "got": doc["verdicts"], "matched": True, "mismatches": [], "unchecked": []}


def test_write_json_is_atomic(tmp_path, data_loss):
    spec, model, result = data_loss
    doc = result_to_dict(spec, model, result)
    target = tmp_path / "result.json"
    target.write_text("old")
    write_json(target, doc)
    text = target.read_text(encoding="utf-8")
    assert json.loads(text) == doc
    assert text.startswith('{\n  "schema_version": 1,')  # insertion order, indent 2
    assert os.listdir(tmp_path) == ["result.json"]
    with pytest.raises(OSError):
        write_json(tmp_path / "missing" / "result.json", doc)
    with pytest.raises(TypeError):
        write_json(target, {"not json": object()})
    assert json.loads(target.read_text(encoding="utf-8")) == doc  # the old file survives
    assert os.listdir(tmp_path) == ["result.json"]


# -- narrow consoles, honest wording, write_json's destinations -----------------------------

@pytest.fixture(scope="module")
def fast_change(explorations):
    return explorations["hw-fast-leader-change"]


@pytest.mark.slow  # explores hw-fast-leader-change (76,116 states) unless the session has
@pytest.mark.parametrize("width", [40, 50, 60, 70, 80, 100, 160])
def test_traces_fit_a_narrow_console_without_cutting_values(width, fast_change):
    spec, model, result = fast_change
    c = Console(record=True, width=width, file=io.StringIO())
    c.print(ResultView(spec, model, result))
    lines = c.export_text().splitlines()
    trace = lines[next(i for i, l in enumerate(lines) if l.startswith("State 1:")):]
    assert all(len(l) <= width for l in trace), [l for l in trace if len(l) > width]
    assert not any("…" in l for l in trace)
    flat = " ".join(" ".join(trace).split())
    # every value of a changed replica is there, whole: the in-flight response and the roles
    assert "follower of A" in flat and "deposed" in flat
    assert "hw=1" in flat and "e0·r0" in flat


def test_table_layout_tiers(data_loss):
    from kmc.app.render.terminal import COLUMNS, column_widths, table_layout

    spec, model, result = data_loss
    widths = column_widths(model, result.violations["CommittedNeverLost"].path.states)
    columns, w = table_layout(widths, 160)
    assert columns == COLUMNS and w == widths
    columns, w = table_layout(widths, 80)  # remote LEO and in flight go below the table
    assert "in flight" not in columns and "log" in columns
    assert table_layout(widths, 40) == (None, None)  # stacked text blocks


def test_narrow_trace_keeps_the_left_out_columns_and_their_changes(data_loss):
    spec, model, result = data_loss
    c = Console(record=True, width=80, file=io.StringIO())
    c.print(TraceView(model, result.violations["CommittedNeverLost"]))
    out = c.export_text()
    state5 = out[out.index("State 5:"):out.index("State 6:")]
    assert "A remote LEO: B=1*" in state5 and "B in flight: from A e0 @1 [] hw=1*" in state5
    state6 = out[out.index("State 6:"):out.index("State 7:")]
    # A crashed: its remote LEO is no longer shown, and is not marked (it did not change)
    assert "A remote LEO" not in state6
    state7 = out[out.index("State 7:"):out.index("State 8:")]
    assert "B in flight: —*" in state7  # a value that was cleared is shown as changed


# The replica columns of the full view that are variables, and their names in --diff.
_DIFF_NAMES = {"alive": "alive", "log": "log", "HW": "hw", "epoch": "epoch",
               "remote LEO": "remote_leo", "in flight": "inflight"}


@pytest.mark.parametrize("name", [spec_param(n) for n in ("hw-data-loss", "hw-unclean", "hw-fast-leader-change",
                                                          "le-unflushed")])
def test_full_view_and_diff_agree_on_what_changed(explorations, name):
    """A cell of the full view is highlighted exactly when --diff lists that variable (the
    seed trace once marked A's remote LEO as changed at states 6 and 10: it was hidden or
    shown, not changed)."""
    from kmc.app.render.state_view import _replica_cells

    _, model, result = explorations[name]
    for v in result.violations.values():
        states = v.path.states
        for before, after in zip(states, states[1:]):
            diff = {line.plain.split(": ")[0] for line in diff_lines(model, before, after)}
            for r in range(len(after.replicas)):
                old, new = _replica_cells(model, before, r), _replica_cells(model, after, r)
                who = model.name(r)
                for column, var in _DIFF_NAMES.items():
                    marked = old[column][0] != new[column][0]
                    listed = any(d == f"{who}.{var}" or d.startswith(f"{who}.{var}[") for d in diff)
                    assert marked == listed, (name, v.property, who, column)


def test_verdict_table_drops_the_meaning_before_cutting_names():
    spec, model, result = run("hw-unclean.toml", keep_going=False)
    c = Console(record=True, width=60, file=io.StringIO())
    c.print(ResultView(spec, model, result, show_traces=False))
    out = c.export_text()
    assert "HighWatermarkBelowLogEnd" in out and "…" not in out
    assert "meaning" not in out


def test_stop_reason_wording(data_loss):
    from kmc.app.render.result_view import stop_reason

    _, model, result = data_loss
    # the only checked property is violated: nothing is unknown, and the text says so
    assert "every checked property is decided" in stop_reason(result)
    r = attrs.evolve(result, complete=False, stopped="max-states", violations={})
    assert "(max_states = 1,000)" in stop_reason(r, None, 1000)  # a bound from the command line


def test_bounds_and_never_fired_wording():
    model = KafkaModel(Config(max_crashes=0, max_messages=1, max_leader_epoch=1))
    result = checker.check(model)
    out = text_of(ResultView(None, model, result, show_traces=False))
    assert "≤ 1 message ·" in out and "≤ 0 crashes" in out
    elect = next(l for l in out.splitlines() if l.strip().startswith("ElectLeader "))
    assert "no crash and no preferred election" in elect and "modelling bug" not in elect


def test_isr_steps_say_why(data_loss):
    from kmc.model.describe import describe_step

    spec = load_spec(os.path.join(SPECS, "kip279-isr-expansion.toml"))
    model = spec.model()
    result = LocalEngine(model, spec.properties(), Options()).run()
    steps = result.violations["CommittedNeverLost"].path.steps
    texts = [describe_step(model, a.state, b.action, b.state) for a, b in zip(steps, steps[1:])]
    assert "A removes C (lagging) from the ISR; A's high watermark advances to 1" in texts
    assert "B adds C back to the ISR: its fetch position 0 is not below B's high watermark 0" in texts
    assert any(t.startswith("the controller elects B in epoch 1") and t.endswith("its high watermark 0")
               for t in texts)


def test_write_json_to_a_pipe_and_through_a_symlink(tmp_path, data_loss):
    import threading

    spec, model, result = data_loss
    doc = result_to_dict(spec, model, result)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()))
    reader.start()
    write_json(fifo, doc)
    reader.join(10)
    assert json.loads(got[0]) == doc
    import stat
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # not replaced by a plain file
    target = tmp_path / "real.json"
    target.write_text("mine\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_json(link, doc)  # the link is replaced by the document, never its target written through
    assert not link.is_symlink() and json.loads(link.read_text()) == doc and target.read_text() == "mine\n"
