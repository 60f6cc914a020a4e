"""What a step of the data path did, in words: Produce, FetchRequest (its diverging
answer too) and FetchResponse, and what the producer was told (``acks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .actions import PRODUCE, Action
from .config import LEADER_EPOCH_21
from .describe_words import plural, replica_set
from .state import State, leader_min_isr, leader_of, leads, leso

if TYPE_CHECKING:
    from .views import ModelView


def produce(model: ModelView, before: State, action: Action, after: State) -> str:
    """Produce: the record the leader appends, and where."""
    a = after.replicas[action.replica]
    offset = len(a.log) - 1
    return f"{model.name(action.replica)} appends {model.format_record(a.log[-1])} at offset {offset}"


def fetch_request(model: ModelView, before: State, action: Action, after: State) -> str:
    """FetchRequest: the leader's answer (records or a diverging epoch), and why the
    follower may not re-join the ISR yet."""
    name = model.name
    r = action.replica
    who = name(r)
    f = after.replicas[r].inflight
    assert f is not None  # the answer is in flight after the step
    if f.diverging is not None:
        return _diverging_answer(model, before, after, r) + _rejoin_note(model, after, r, f.leader)
    n = len(f.records)
    text = (
        f"{name(f.leader)} answers {who}'s fetch from offset {f.start}: "
        f"{plural(n, 'record')}, high watermark {f.leader_hw}"
    )
    return text + _rejoin_note(model, after, r, f.leader)


def fetch_response(model: ModelView, before: State, action: Action, after: State) -> str:
    """FetchResponse: dropped as stale, a truncation on a diverging answer (in two halves
    with KAFKA-14704), or the records appended and the leader's high watermark taken."""
    name = model.name
    r = action.replica
    who = name(r)
    b, a = before.replicas[r], after.replicas[r]
    f = b.inflight
    assert f is not None  # FetchResponse is enabled only with a response in flight
    sender = name(f.leader)
    if not (b.alive and b.leader == f.leader and b.epoch == f.epoch):
        return f"{who} drops a stale response from {sender} (epoch {f.epoch})"
    if f.diverging is not None:
        if a.inflight is not None:  # KAFKA-14704: the first half
            return f"{who} takes {sender}'s high watermark {a.hw} before truncating (KAFKA-14704)"
        text = f"{who} truncates to offset {len(a.log)} on {sender}'s answer"
        if len(a.log) == len(b.log):
            text = f"{who} truncates nothing on {sender}'s answer (its log ends at {len(a.log)})"
        if a.hw != b.hw:
            text += f", its high watermark down to {a.hw}"
        return text
    what = f"{plural(len(f.records), 'record')} at offset {f.start}" if f.records else "no new records"
    if len(b.log) > f.start:
        what = f"truncates to offset {f.start}, {what}"
    return f"{who} takes {sender}'s response: {what}, high watermark {a.hw}"


def _diverging_answer(model: ModelView, before: State, after: State, f: int) -> str:
    """FetchRequest answered with a diverging epoch (``truncate_on_fetch``): where the
    follower's last epoch ends on the leader, and with KAFKA-13141 the false log end the
    leader takes and the high watermark it then reaches."""
    name = model.name
    who = name(f)
    resp = after.replicas[f].inflight
    assert resp is not None  # the answer is in flight after the step
    l = resp.leader
    mine = before.replicas[f].log[-1][0]
    if resp.diverging == mine:
        where = f"{who}'s epoch {mine} ends at offset {resp.start} on {name(l)}"
    else:
        where = f"{name(l)} has no epoch {mine}: its epoch {resp.diverging} ends at offset {resp.start}"
    text = f"{name(l)} answers {who}'s fetch: {where} (diverging), no records, high watermark {resp.leader_hw}"
    led_b, led_a = before.replicas[l], after.replicas[l]
    if led_a.remote_leo[f] != led_b.remote_leo[f]:
        text += f"; {name(l)} takes {who}'s fetch offset {led_a.remote_leo[f]} as its log end (KAFKA-13141)"
        if led_a.hw > led_b.hw:
            text += f" and its high watermark advances to {led_a.hw}"
    return text


def _rejoin_note(model: ModelView, state: State, f: int, l: int) -> str:
    """Under the 2.1 rule, why a follower outside the ISR that the pre-2.1 test would let
    back in may not re-join yet (KAFKA-7128); else ``""``."""
    if model.config.truncation != LEADER_EPOCH_21 or f in state.quorum.isr or not leads(state, l):
        return ""
    led = state.replicas[l]
    pos, start = led.remote_leo[f], leso(state, l)
    if led.hw <= pos < start:
        return (
            f"; {model.name(f)} may not re-join the ISR: its log ends at {pos}, before the "
            f"leader's epoch start offset {start}"
        )
    return ""


def acks_note(model: ModelView, before: State, action: Action, after: State) -> str:
    """What the producer was told in this step, when the configuration tracks
    acknowledgements (``acks``): ``""`` when it was told nothing (and always without
    ``acks``).

    Under ``acks = "1"`` a Produce is acknowledged at once, by a replica that only
    *believes* it leads too (a zombie: the note says who leads since). Under
    ``acks = "all"`` the records the leader's HW passes in its own epoch are acknowledged
    if the ISR has at least min ISR members; if not, the producer is refused
    (NOT_ENOUGH_REPLICAS_AFTER_APPEND) although the records are committed.
    """
    acks = model.config.acks
    if acks is None:
        return ""
    name = model.name
    new = sorted(set(after.acked) - set(before.acked))
    told = ", ".join(f"{model.format_record((e, i))} at offset {o}" for o, e, i in new)
    text = ""
    if new:
        text = f"; the producer is told {told} is written (acks={acks})"
    if action.name == PRODUCE and acks == "1" and not leads(before, action.replica):
        r = action.replica
        q = before.quorum
        text += (
            f"; {name(r)} still believes it leads epoch {before.replicas[r].epoch}; the controller "
            f"moved leadership to {name(q.leader)} in epoch {q.epoch}"
        )
    if acks == "all":
        l = leader_of(after)
        least = leader_min_isr(model.config, after)
        if l is not None and len(after.quorum.isr) < least:
            rep = after.replicas[l]
            refused = [(o,) + rep.log[o] for o in range(before.replicas[l].hw, rep.hw) if rep.log[o][0] == rep.epoch]
            if refused:
                what = ", ".join(f"{model.format_record((e, i))} at offset {o}" for o, e, i in refused)
                text += (
                    f"; {what} committed with the ISR {replica_set(model, after.quorum.isr)} below "
                    f"min ISR {least}: the producer is refused "
                    f"(NOT_ENOUGH_REPLICAS_AFTER_APPEND), not acknowledged"
                )
    return text
