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
    from kmc.reports.terminal import StateView, diff_lines

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

    from kmc.reports.json_result import state_from_dict, state_to_dict

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
