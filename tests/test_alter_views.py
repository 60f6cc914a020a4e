"""What a user sees of the AlterPartition request (``alter_partition``, ``broker_epochs``):
the step sentences, the state table, the JSON and the pictures, on hand-built states.

Replicas are numbered A=0, B=1, C=2; records are (epoch, id).
"""

from __future__ import annotations

import attrs

from kmc.model import LEADER_EPOCH_21, Action, Quorum
from kmc.model.describe import describe_step
from kmc.model.state import EXPAND, SHRINK

A, B, C = range(3)


def _ap_model(build, **kw):
    return build.model(**dict(dict(truncation=LEADER_EPOCH_21, alter_partition=True), **kw))


def _with(state, **quorum):
    """``state`` with its quorum changed (``alter``, ``isr``, ``elr``, ``epoch``, ``leader``)."""
    return attrs.evolve(state, quorum=attrs.evolve(state.quorum, **quorum))


def _leading(build, **kw):
    """A leads epoch 0 with record 0 at offset 0; B has fetched nothing yet (A knows B at 0)."""
    a = build.replica(2, log=[(0, 0)], hw=0, remote=(0, 0))
    b = build.replica(2)
    return build.state([a, b], produced=1, **kw)


# -- the step sentences ------------------------------------------------------------------


def test_shrink_and_expand_are_requests_in_words(build):
    model = _ap_model(build)
    s = _leading(build)
    asked = _with(s, alter=(A, SHRINK, B))
    assert describe_step(model, s, Action("ShrinkIsr", B), asked) == (
        "A asks the controller to remove B from the ISR (B is lagging: its fetch position 0 is "
        "behind A's log end 1; until the answer A's high watermark still counts B)")
    down = attrs.evolve(s, replicas=(s.replicas[A], attrs.evolve(s.replicas[B], alive=False)))
    assert describe_step(model, down, Action("ShrinkIsr", B), _with(down, alter=(A, SHRINK, B))) == (
        "A asks the controller to remove B from the ISR (B is down)")
    out = _with(s, isr=(A,))
    assert describe_step(model, out, Action("ExpandIsr", B), _with(out, alter=(A, EXPAND, B))) == (
        "A asks the controller to add B to the ISR: its fetch position 0 is not below A's high "
        "watermark 0 nor its epoch start offset 0; until the answer A's high watermark already "
        "counts B")
    # Without the option the leader still writes the ISR itself, in the words it always had.
    atomic = build.model(truncation=LEADER_EPOCH_21)
    assert describe_step(atomic, s, Action("ShrinkIsr", B), _with(s, isr=(A,))) == (
        "A removes B (lagging) from the ISR")


def test_the_controller_answers(build):
    model = _ap_model(build)
    s = _with(_leading(build), alter=(A, SHRINK, B))
    removed = _with(s, isr=(A,), alter=None)
    assert describe_step(model, s, Action("AlterPartition", B), removed) == (
        "the controller removes B: ISR {A}")
    a = attrs.evolve(s.replicas[A], hw=1)
    moved = attrs.evolve(removed, replicas=(a, s.replicas[B]), committed=((0, 0, 0),))
    assert describe_step(model, s, Action("AlterPartition", B), moved) == (
        "the controller removes B: ISR {A}; A's high watermark advances to 1")
    out = _with(s, isr=(A,), alter=(A, EXPAND, B))
    added = _with(out, isr=(A, B), alter=None)
    assert describe_step(model, out, Action("AlterPartition", B), added) == (
        "the controller adds B: ISR {A,B}")
    # A leader that crashed is still answered: the controller is not told of crashes.
    gone = attrs.evolve(out, replicas=(attrs.evolve(out.replicas[A], alive=False), out.replicas[B]))
    assert describe_step(model, gone, Action("AlterPartition", B), _with(gone, isr=(A, B), alter=None)) == (
        "the controller adds B: ISR {A,B} (A, which asked, no longer leads)")


def test_the_elr_changes_with_an_accepted_shrink(build):
    model = _ap_model(build, hw_requires_min_isr=True, eligible_leader_replicas=True, min_insync_replicas=2)
    s = _with(_leading(build), alter=(A, SHRINK, B))
    assert describe_step(model, s, Action("AlterPartition", B), _with(s, isr=(A,), elr=(B,), alter=None)) == (
        "the controller removes B: ISR {A}, ELR {} → {B}")


def test_a_refused_expansion(build):
    model = _ap_model(build, broker_epochs=True)
    s = _with(_leading(build, isr=[A]), alter=(A, EXPAND, B))
    down = attrs.evolve(s, replicas=(s.replicas[A], attrs.evolve(s.replicas[B], alive=False)))
    assert describe_step(model, down, Action("AlterPartition", B), _with(down, alter=None)) == (
        "A's request to add B is refused: B is down")
    # Without broker epochs the controller adds a replica that is down: the KAFKA-14139 window.
    plain = _ap_model(build)
    assert describe_step(plain, down, Action("AlterPartition", B), _with(down, isr=(A, B), alter=None)) == (
        "the controller adds B: ISR {A,B}")


def test_a_restart_or_an_election_drops_the_request(build):
    epochs = _ap_model(build, broker_epochs=True)
    s = _with(_leading(build, isr=[A]), alter=(A, EXPAND, B))
    down = attrs.evolve(s, replicas=(s.replicas[A], attrs.evolve(s.replicas[B], alive=False, leader=None,
                                                                 epoch=-1)))
    back = attrs.evolve(down, replicas=(s.replicas[A], attrs.evolve(down.replicas[B], alive=True)))
    text = describe_step(epochs, down, Action("Restart", B), _with(back, alter=None))
    assert text.endswith("; A's request to add B is dropped: B restarted, its broker epoch is stale")
    # Without broker epochs a restart that changes neither the ISR nor the ELR keeps it.
    plain = _ap_model(build)
    assert "dropped" not in describe_step(plain, down, Action("Restart", B), back)
    # A lossy restart that changes the ISR makes any request stale.
    elr = _ap_model(build, unflushed_loss=True, hw_requires_min_isr=True, eligible_leader_replicas=True)
    shrink = _with(_leading(build, isr=[A, B]), alter=(A, SHRINK, B))
    lossy = attrs.evolve(shrink, replicas=(shrink.replicas[A], attrs.evolve(
        shrink.replicas[B], alive=False, lossy=True, leader=None, epoch=-1)))
    restarted = attrs.evolve(lossy, replicas=(lossy.replicas[A], attrs.evolve(
        lossy.replicas[B], alive=True, lossy=False)))
    text = describe_step(elr, lossy, Action("Restart", B), _with(restarted, isr=(A,), alter=None))
    assert text.endswith("; A's request to remove B is dropped: the partition changed: the request is stale")
    # A lossy restart of a replica in neither the ISR nor the ELR writes no change: the
    # request survives (the KAFKA-14139 window).
    elr_plain = _ap_model(build, unflushed_loss=True, hw_requires_min_isr=True, eligible_leader_replicas=True)
    crashed_b = attrs.evolve(down, replicas=(down.replicas[A], attrs.evolve(down.replicas[B], lossy=True)))
    assert describe_step(elr_plain, crashed_b, Action("Restart", B), back) == (
        "B restarts with its log and high watermark from disk, no leader, epoch -1; after its lossy "
        "crash the controller has nothing to remove: it is in neither the ISR {A} nor the ELR {}, and "
        "every leader forgets its fetch position from before the crash; A's request to add B stays in "
        "flight")
    # An election: the request carries the old leader epoch.
    crashed = attrs.evolve(shrink, replicas=(attrs.evolve(shrink.replicas[A], alive=False), shrink.replicas[B]))
    elected = attrs.evolve(crashed, quorum=Quorum(B, 1, (B,), (), None),
                           replicas=(crashed.replicas[A], attrs.evolve(crashed.replicas[B], epoch=1, leader=B)))
    text = describe_step(plain, crashed, Action("ElectLeader", B), elected)
    assert text.startswith("the controller elects B in epoch 1")
    assert text.endswith("; A's request to remove B is dropped: the request carries the old leader epoch")


# -- the state table and the terminal trace ----------------------------------------------


def _render(renderable, width=160) -> str:
    import os

    from rich.console import Console

    console = Console(width=width, no_color=True, record=True, file=open(os.devnull, "w"))
    console.print(renderable)
    return console.export_text()


def test_the_controller_line_shows_the_request(build):
    from kmc.app.render.terminal import StateView, diff_lines

    model = _ap_model(build)
    s = _leading(build)
    asked = _with(s, alter=(A, SHRINK, B))
    controller = [l for l in _render(StateView(model, asked, s)).splitlines() if l.startswith("controller")]
    assert controller == ["controller leader A  ·  epoch 0  ·  ISR {A,B}  ·  request A asks to remove B*"]
    assert "request none" in _render(StateView(model, s))
    assert [l.plain for l in diff_lines(model, s, asked)] == ["quorum.alter: none → A asks to remove B"]
    expand = _with(s, isr=(A,), alter=(A, EXPAND, B))
    assert "request A asks to add B" in _render(StateView(model, expand))
    # Without the option the controller's line is as it always was.
    atomic = build.model(truncation=LEADER_EPOCH_21)
    assert "request" not in _render(StateView(atomic, s))
    assert [l.plain for l in diff_lines(atomic, s, _with(s, isr=(A,)))] == ["quorum.isr: {A,B} → {A}"]


# -- the JSON document -------------------------------------------------------------------


def test_the_request_round_trips_through_json(build):
    import json

    import pytest

    from kmc.app.render.json_result import state_from_dict, state_to_dict

    model = _ap_model(build)
    s = _leading(build)
    for alter in (None, (A, SHRINK, B), (B, EXPAND, A)):
        state = _with(s, alter=alter)
        doc = json.loads(json.dumps(state_to_dict(model, state)))
        assert state_from_dict(model, doc) == state
    assert state_to_dict(model, _with(s, alter=(A, EXPAND, B)))["quorum"]["alter"] == {
        "leader": "A", "change": "expand", "replica": "B"}
    assert state_to_dict(model, s)["quorum"]["alter"] is None
    # Without the option the document is as it always was: no "alter" key.
    atomic = build.model(truncation=LEADER_EPOCH_21)
    assert state_to_dict(atomic, s)["quorum"] == {"leader": "A", "epoch": 0, "isr": ["A", "B"]}
    doc = state_to_dict(model, _with(s, alter=(A, SHRINK, B)))
    doc["quorum"]["alter"]["change"] = "grow"
    with pytest.raises(ValueError, match="'grow'"):
        state_from_dict(model, doc)


# -- the pictures ------------------------------------------------------------------------


def _request_path(build):
    """A hand-built path under broker epochs: A asks to remove B, the controller removes it;
    A asks to add B back, B crashes, and the controller refuses to add a replica that is down."""
    from kmc.checker.core.result import Path, Step

    s1 = _leading(build)
    s2 = _with(s1, alter=(A, SHRINK, B))
    s3 = _with(s2, isr=(A,), alter=None)
    s4 = _with(s3, alter=(A, EXPAND, B))
    s5 = attrs.evolve(s4, replicas=(s4.replicas[A], attrs.evolve(s4.replicas[B], alive=False)), crashes=1)
    s6 = _with(s5, alter=None)
    actions = [None, Action("ShrinkIsr", B), Action("AlterPartition", B), Action("ExpandIsr", B),
               Action("Crash", B), Action("AlterPartition", B)]
    return Path(tuple(Step(a, s) for a, s in zip(actions, (s1, s2, s3, s4, s5, s6))))


def _request_diagram(build):
    from kmc.checker.core.result import Violation
    from kmc.app.render import diagram

    model = _ap_model(build, broker_epochs=True)
    return model, diagram.build(model, Violation("CommittedNeverLost", "always", "hand-built", _request_path(build)))


def test_the_diagram_holds_the_request_and_the_answers(build):
    from kmc.app.render.diagram import CONTROLLER
    from kmc.app.render.headers import config_lines

    model, d = _request_diagram(build)
    assert d.options == ("alter_partition", "broker_epochs")
    assert [c.controller.request for c in d.columns] == [
        None, "A asks to remove B", None, "A asks to add B", "A asks to add B", None]
    assert [c.controller.request_lane for c in d.columns] == [None, 1, None, 1, 1, None]
    events = [[(e.kind, e.source, e.target, e.label) for e in c.events] for c in d.columns]
    assert events[1] == [("request", 1, CONTROLLER, "asks ISR −B")]
    assert events[2] == [("answer", CONTROLLER, 1, "ISR −B")]
    assert events[3] == [("request", 1, CONTROLLER, "asks ISR +B")]
    assert events[5] == [("refused", CONTROLLER, 1, "refused +B")]
    assert d.columns[5].description == "A's request to add B is refused: B is down"
    assert ("flags", "alter_partition, broker_epochs") in config_lines(model.config)
    # Without the option nothing of it: no request, ISR changes drawn from the controller.
    from kmc.checker.core.result import Violation
    from kmc.app.render import diagram

    atomic = build.model(truncation=LEADER_EPOCH_21)
    path = _request_path(build)
    s1, s2 = path.steps[0].state, _with(path.steps[0].state, isr=(A,))
    from kmc.checker.core.result import Path, Step

    plain = diagram.build(atomic, Violation("CommittedNeverLost", "always", "x",
                                            Path((Step(None, s1), Step(Action("ShrinkIsr", B), s2)))))
    assert plain.options == () and not plain.columns[0].controller.requests
    assert [(e.kind, e.source, e.target) for e in plain.columns[1].events] == [("isr", CONTROLLER, 2)]
    assert ("flags", "none") in config_lines(atomic.config)


def test_the_mermaid_text_draws_the_request_in_flight(build):
    from kmc.app.render import mermaid

    _, d = _request_diagram(build)
    lines = mermaid.render(d, title="requests").splitlines()
    assert lines[2] == "%% ISR changes through the controller: alter_partition, broker_epochs"
    body = [l.strip() for l in lines if not l.strip().startswith(("Note over ctl,r1", "%%", "participant"))]
    assert [l.split(":")[0] for l in body] == [
        "sequenceDiagram", "r0->>ctl", "activate ctl", "ctl-->>r0", "deactivate ctl", "r0->>ctl",
        "activate ctl", "Note over r1", "rect rgb(253, 228, 228)", "ctl--xr0", "deactivate ctl", "end"]
    assert "request in flight: A asks to remove B" in lines[lines.index("    activate ctl") - 1]


def test_the_svg_marks_the_request_in_flight(build):
    import xml.etree.ElementTree as ET

    from kmc.app.render import svg

    _, d = _request_diagram(build)
    text = svg.render(d)
    root = ET.fromstring(text.split("\n", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    pending = [g.get("data-step") for g in root.iter(f"{ns}g") if g.get("class") == "request-pending"]
    assert pending == ["2", "4", "5"]
    kinds = [g.get("class") for g in root.iter(f"{ns}g") if (g.get("class") or "").startswith("event")]
    assert kinds == ["event request", "event answer", "event request", "event refused"]
    shown = ["".join(t.itertext()) for t in root.iter(f"{ns}text") if t.get("class") == "request"]
    assert shown == ["A asks −B", "A asks +B", "A asks +B"]
    assert 'id="arrow-orange"' in text and "ISR changes through the controller: alter_partition, broker_epochs" in text


def test_the_tla_text_and_the_terminal_header_name_the_request(build):
    from kmc.app.render.result_view import _flags
    from kmc.app.render.tla import state_text

    model = _ap_model(build, broker_epochs=True)
    s = _leading(build)
    assert "quorum = [leader |-> A, epoch |-> 0, isr |-> {A, B}, alter |-> None]" in state_text(model, s)
    asked = _with(s, alter=(A, SHRINK, B))
    assert ('alter |-> [leader |-> A, change |-> "shrink", replica |-> B]]' in state_text(model, asked))
    assert _flags(model.config) == "alter_partition, broker_epochs"
    atomic = build.model(truncation=LEADER_EPOCH_21)
    assert "alter" not in state_text(atomic, s) and _flags(atomic.config) == "none"


# -- KAFKA-14139's trace, drawn ------------------------------------------------------------


def _kafka_14139(build):
    """KAFKA-14139's 13 states under docs/model.md's rules, built by hand (two replicas, min
    ISR 1, unflushed loss, the HW gate and the eligible leader replicas, alter_partition)."""
    from kmc.checker.core.result import Path, Step
    from kmc.model import Fetch

    model = _ap_model(build, unflushed_loss=True, hw_requires_min_isr=True, eligible_leader_replicas=True,
                      max_crashes=2)
    ev = attrs.evolve

    def put(s, r, **kw):
        reps = list(s.replicas)
        reps[r] = ev(reps[r], **kw)
        return ev(s, replicas=tuple(reps))

    r0 = (0, 0)
    s1 = build.state([build.replica(2), build.replica(2)])
    s2 = ev(put(s1, A, log=(r0,)), produced=1)
    s3 = put(s2, B, inflight=Fetch(A, 0, 0, (r0,), 0))
    s4 = put(s3, B, log=(r0,), inflight=None)
    s5 = _with(s4, alter=(A, SHRINK, B))
    s6 = ev(put(put(s5, A, remote_leo=(0, 1), hw=1), B, inflight=Fetch(A, 0, 1, (), 1)), committed=((0, 0, 0),))
    s7 = _with(s6, isr=(A,), alter=None)
    s8 = _with(s7, alter=(A, EXPAND, B))
    s9 = ev(put(s8, A, alive=False, log=(), hw=0, lossy=True), crashes=1)
    s10 = ev(put(s9, B, alive=False, log=(), hw=0, lossy=True, inflight=None), crashes=2)
    s11 = put(put(s10, B, alive=True, lossy=False, epoch=-1, leader=None), A, remote_leo=(0, 0))
    s12 = _with(s11, isr=(A, B), alter=None)
    s13 = ev(put(s12, B, leader=B, epoch=1), quorum=Quorum(B, 1, (B,), ()))
    actions = [None, Action("Produce", A), Action("FetchRequest", B), Action("FetchResponse", B),
               Action("ShrinkIsr", B), Action("FetchRequest", B), Action("AlterPartition", B),
               Action("ExpandIsr", B), Action("Crash", A, 0), Action("Crash", B, 0), Action("Restart", B),
               Action("AlterPartition", B), Action("ElectLeader", B)]
    states = (s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13)
    return model, Path(tuple(Step(a, s) for a, s in zip(actions, states)))


def test_the_kafka_14139_picture_shows_the_request_in_flight(build):
    from kmc.checker.core.result import Violation
    from kmc.app.render import diagram, mermaid

    model, path = _kafka_14139(build)
    d = diagram.build(model, Violation("CommittedNeverLost", "always", "B leads without record 0", path))
    assert [c.controller.request_short for c in d.columns] == [
        None, None, None, None, "A asks −B", "A asks −B", None, "A asks +B", "A asks +B", "A asks +B",
        "A asks +B", None, None]
    texts = [c.description for c in d.columns]
    assert texts[4].startswith("A asks the controller to remove B from the ISR (B is lagging: its fetch "
                               "position 0 is behind A's log end 1")
    assert texts[6] == "the controller removes B: ISR {A}"
    assert texts[10].endswith("it is in neither the ISR {A} nor the ELR {}, and every leader forgets its "
                              "fetch position from before the crash; A's request to add B stays in flight")
    assert texts[11] == "the controller adds B: ISR {A,B} (A, which asked, no longer leads)"
    assert d.lost == ("0:e0·r0",)
    text = mermaid.render(d)
    lines = [l.strip() for l in text.splitlines()]
    assert lines.count("activate ctl") == 2 and lines.count("deactivate ctl") == 2
    assert "r0->>ctl: 8. ExpandIsr(B)" in text and "ctl-->>r0: 12. AlterPartition(B)" in text


def _check_14139(tmp_path):
    """``kmc check specs/kafka-14139-two-replicas.toml --json``: the document (12,664 states,
    a tenth of a second)."""
    import json
    from pathlib import Path

    from kmc.app.cli import EXIT_VIOLATION, main

    spec = Path(__file__).resolve().parent.parent / "specs" / "kafka-14139-two-replicas.toml"
    out = tmp_path / "k.json"
    assert main(["check", str(spec), "--no-progress", "--no-trace", "--json", str(out)]) == EXIT_VIOLATION
    return out, json.loads(out.read_text())


def test_the_checked_kafka_14139_trace_is_the_story_and_replays(build, tmp_path, capsys):
    from kmc.app.cli import EXIT_OK, main
    from kmc.app.commands.replay import replay

    out, doc = _check_14139(tmp_path)
    model, violation = replay(str(out), doc, "CommittedNeverLost")
    hand_model, hand = _kafka_14139(build)
    assert model.config == hand_model.config
    assert [s.action for s in violation.path.steps] == [s.action for s in hand.steps]
    assert [s.state for s in violation.path.steps] == [s.state for s in hand.steps]
    (cnl,) = [v for v in doc["violations"] if v["property"] == "CommittedNeverLost"]
    alters = [s["state"]["quorum"]["alter"] for s in cnl["trace"]["steps"]]
    assert alters[7] == {"leader": "A", "change": "expand", "replica": "B"} and alters[11] is None
    capsys.readouterr()
    assert main(["replay", str(out), "--invariant", "CommittedNeverLost", "--diff"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "quorum.alter: none → A asks to add B" in text
    assert "A's request to add B stays in flight" in text
    assert main(["replay", str(out), "--invariant", "CommittedNeverLost", "--format", "json"]) == EXIT_OK
    assert '"alter": {' in capsys.readouterr().out


def test_the_checked_kafka_14139_picture_shows_the_request_in_flight(tmp_path, capsys):
    import xml.etree.ElementTree as ET

    from kmc.app.cli import EXIT_OK, main

    out, _ = _check_14139(tmp_path)
    capsys.readouterr()
    assert main(["replay", str(out), "--invariant", "CommittedNeverLost", "--format", "mermaid"]) == EXIT_OK
    mmd = capsys.readouterr().out
    assert "%% ISR changes through the controller: alter_partition" in mmd
    assert "r0->>ctl: 8. ExpandIsr(B)" in mmd and "ctl-->>r0: 12. AlterPartition(B)" in mmd
    lines = [l.strip() for l in mmd.splitlines()]
    assert lines.index("activate ctl") == lines.index(next(l for l in lines if l.startswith("r0->>ctl: 5."))) + 1
    assert main(["replay", str(out), "--invariant", "CommittedNeverLost", "--format", "svg"]) == EXIT_OK
    root = ET.fromstring(capsys.readouterr().out.split("\n", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    pending = [g.get("data-step") for g in root.iter(f"{ns}g") if g.get("class") == "request-pending"]
    assert pending == ["5", "6", "8", "9", "10", "11"]


def test_every_answer_and_drop_of_a_broker_epochs_run_is_told():
    """Over every transition of specs/kip903-two-replicas.toml (11,644 states): an
    AlterPartition says "adds" or "removes" when the ISR changed and "refused" when it did not;
    a Restart or an ElectLeader says "dropped" exactly when it dropped the request, and why."""
    from collections import deque
    from pathlib import Path

    from kmc.app.specs import load_spec

    model = load_spec(Path(__file__).resolve().parent.parent / "specs" / "kip903-two-replicas.toml").model()
    seen, todo, told = set(), deque(model.init_states()), set()
    while todo:
        s = todo.popleft()
        for a, t in model.successors(s):
            text = describe_step(model, s, a, t)
            if a.name == "AlterPartition":
                changed = t.quorum.isr != s.quorum.isr
                assert text.startswith("the controller ") != ("is refused: " in text), text
                assert changed == text.startswith("the controller "), text
                told.add("answer" if changed else "refused")
            elif a.name in ("Restart", "ElectLeader") and s.quorum.alter is not None:
                dropped = t.quorum.alter is None
                assert ("is dropped: " in text) == dropped, text
                if dropped:
                    told.add(text.rpartition("is dropped: ")[2])
            if t not in seen:
                seen.add(t)
                todo.append(t)
    assert len(seen) == 11644
    assert told == {"answer", "refused", "the request carries the old leader epoch",
                    "the partition changed: the request is stale", "A restarted, its broker epoch is stale",
                    "B restarted, its broker epoch is stale"}
