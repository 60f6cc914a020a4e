"""What a step that changes the ISR did, in words: ShrinkIsr and ExpandIsr (direct, or as
an AlterPartition request) and the controller's answer to a request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .actions import SHRINK_ISR, Action
from .config import KAFKA_13916, LEADER_EPOCH_21
from .describe_words import replica_set, request_words
from .state import EXPAND, State, leader_of, leads, leso

if TYPE_CHECKING:
    from .views import ModelView


def change_isr(model: ModelView, before: State, action: Action, after: State) -> str:
    """ShrinkIsr and ExpandIsr: the leader's change of the ISR (or, under
    ``alter_partition``, its request), why, and the high watermark it moves."""
    name = model.name
    r = action.replica
    who = name(r)
    leader = leader_of(before)
    if model.config.alter_partition:
        return _request(model, before, action, leader)
    by = "" if leader is None else f"{name(leader)} "
    if action.name == SHRINK_ISR:
        why = "down" if not before.replicas[r].alive else "lagging"
        text = f"{by}removes {who} ({why}) from the ISR"
        if leader is not None and after.replicas[leader].hw > before.replicas[leader].hw:
            hw = after.replicas[leader].hw
            text += f"; {name(leader)}'s high watermark advances to {hw}"
        return text
    text = f"{by}adds {who} back to the ISR"
    if leader is not None:  # the rule's test, which is where ISR expansion goes wrong
        text += _expand_test(model, before, r, leader)
    return text


def alter_partition(model: ModelView, before: State, action: Action, after: State) -> str:
    """AlterPartition: the controller answers the request in flight, accepting it (the
    ISR and the ELR change, then the sender's high watermark if it still leads) or, with
    ``broker_epochs``, refusing to add a replica that is down."""
    name = model.name
    alter = before.quorum.alter
    if alter is None:  # not a state this action is enabled in; say nothing wrong
        return ""
    p, change, r = alter
    qb, qa = before.quorum, after.quorum
    rb = before.replicas[r]
    if model.config.broker_epochs and change == EXPAND and qa.isr == qb.isr:
        if not rb.alive:
            return f"{request_words(model, alter)} is refused: {name(r)} is down"
        if rb.shutting and not model.config.has_bug(KAFKA_13916):
            return f"{request_words(model, alter)} is refused: {name(r)} is in controlled shutdown"
        return (
            f"{request_words(model, alter)} is refused: it carries the broker epoch of {name(r)}'s previous "
            f"incarnation ({name(r)} does not follow {name(p)} in epoch {qb.epoch} yet)"
        )
    verb = "adds" if change == EXPAND else "removes"
    text = f"the controller {verb} {name(r)}: ISR {replica_set(model, qa.isr)}"
    if model.config.eligible_leader_replicas and qa.elr != qb.elr:
        text += f", ELR {replica_set(model, qb.elr)} → {replica_set(model, qa.elr)}"
    if not leads(before, p):
        text += f" ({name(p)}, which asked, no longer leads)"
    elif after.replicas[p].hw > before.replicas[p].hw:
        text += f"; {name(p)}'s high watermark advances to {after.replicas[p].hw}"
    return text


def _expand_test(model: ModelView, state: State, r: int, leader: int) -> str:
    """Why ``leader`` may add ``r`` to the ISR: the rule's test, which is where ISR
    expansion goes wrong."""
    name = model.name
    text = (
        f": its fetch position {state.replicas[leader].remote_leo[r]} is not below "
        f"{name(leader)}'s high watermark {state.replicas[leader].hw}"
    )
    if model.config.truncation == LEADER_EPOCH_21:
        text += f" nor its epoch start offset {leso(state, leader)}"
    return text


def _request(model: ModelView, before: State, action: Action, leader: int | None) -> str:
    """ShrinkIsr / ExpandIsr under ``alter_partition``: the leader only asks the
    controller; the ISR and every high watermark stay as they are until the answer."""
    name = model.name
    r = action.replica
    who = name(r)
    by = "the leader" if leader is None else name(leader)
    if action.name == SHRINK_ISR:
        text = f"{by} asks the controller to remove {who} from the ISR"
        if not before.replicas[r].alive:
            return text + f" ({who} is down)"
        if leader is None:
            return text + f" ({who} is lagging)"
        led = before.replicas[leader]
        return text + (
            f" ({who} is lagging: its fetch position {led.remote_leo[r]} is behind "
            f"{name(leader)}'s log end {len(led.log)}; until the answer "
            f"{name(leader)}'s high watermark still counts {who})"
        )
    text = f"{by} asks the controller to add {who} to the ISR"
    if leader is not None:
        text += _expand_test(model, before, r, leader)
        text += f"; until the answer {name(leader)}'s high watermark already counts {who}"
    return text
