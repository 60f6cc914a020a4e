"""What an operator's step did, in words: ControlledShutdown and ShutdownComplete,
ChangeMinIsr and ApplyMinIsr, and DiskFailure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .actions import Action
from .describe_words import dropped_note, plural, replica_set, request_words
from .state import State, leader_min_isr, min_isr

if TYPE_CHECKING:
    from .views import ModelView


def shutdown_complete(model: ModelView, before: State, action: Action, after: State) -> str:
    """ShutdownComplete: a clean stop, nothing lost, the controller not told."""
    return (
        f"{model.name(action.replica)} stops cleanly at the end of its controlled shutdown: its log is "
        f"flushed, nothing is lost, and its restart will not be an unclean one; the controller is not "
        f"told, no crash is counted"
    )


def apply_min_isr(model: ModelView, before: State, action: Action, after: State) -> str:
    """ApplyMinIsr: the leader's broker takes the controller's min ISR."""
    old, new = leader_min_isr(model.config, before), leader_min_isr(model.config, after)
    return (
        f"the leader's broker applies the controller's change of min ISR: {old} → {new} "
        f"(its produce and high-watermark checks read it from now on)"
    )


def change_min_isr(model: ModelView, before: State, action: Action, after: State) -> str:
    """ChangeMinIsr: the value the controller takes, what it did to the ELR (cleared since
    the fix of KAFKA-16540, kept with the bug), and, with ``min_isr_lag``, the leader's
    broker still on its old value."""
    cfg = model.config
    old, new = min_isr(cfg, before), min_isr(cfg, after)
    verb = "lowers" if new < old else "raises" if new > old else "sets again"
    text = f"the operator {verb} min ISR {old} → {new}" if new != old else f"the operator sets min ISR to {new} again"
    qb, qa = before.quorum, after.quorum
    if cfg.eligible_leader_replicas:
        if qa.elr != qb.elr:
            text += f"; the controller clears the ELR {replica_set(model, qb.elr)}"
        elif cfg.has_bug("KAFKA-16540") and qb.elr:
            text += (
                f"; the controller keeps the ELR {replica_set(model, qb.elr)} (KAFKA-16540): "
                f"replicas that left the ISR under min ISR {old} stay electable"
            )
        elif not cfg.has_bug("KAFKA-16540"):
            text += " (the controller clears the ELR, empty anyway)"
    if cfg.min_isr_lag:
        text += f"; the leader's broker still uses {leader_min_isr(cfg, after)} until it applies the change"
    if qb.alter is not None and qa.alter is None:
        text += f"; {request_words(model, qb.alter)} is dropped: the partition changed"
    return text


def disk_failure(model: ModelView, before: State, action: Action, after: State) -> str:
    """DiskFailure(r): the log gone, the controller's removal of ``r`` (into the ELR below
    min ISR), then either the partition offline on ``r`` (fixed) or re-created empty and
    serving (KAFKA-16234), and the quorum leader's HW step."""
    r = action.replica
    cfg = model.config
    name = model.name
    who = name(r)
    b, a = before.replicas[r], after.replicas[r]
    qb, qa = before.quorum, after.quorum
    gone = "its log was empty" if not b.log else f"its log of {plural(len(b.log), 'record')} is gone"
    text = f"{who}'s log directory fails: {gone}"
    if qa.isr != qb.isr:
        isr = f"{replica_set(model, qb.isr)} → {replica_set(model, qa.isr)}"
        text += f"; the controller removes {who} from the ISR {isr}"
    elif r in qb.isr:
        text += f"; the controller keeps {who} in the ISR {replica_set(model, qa.isr)} (it never empties it)"
    if cfg.eligible_leader_replicas and qa.elr != qb.elr:
        text += f", the ELR {replica_set(model, qb.elr)} → {replica_set(model, qa.elr)}"
        if r in qa.elr and r not in qb.elr:
            text += f" ({who} enters it: a fenced broker's log is presumed intact)"
    if a.alive:
        text += f"; {who} re-creates the partition empty and keeps serving it (KAFKA-16234)"
        if b.leader == r:
            text += ", with no leader and epoch -1"
    else:
        text += f"; the partition stays offline on {who} until its broker restarts"
        if a.lossy:
            text += " (an unclean restart: it will leave the ISR and the ELR)"
    ql = qa.leader
    if ql is not None and ql != r and after.replicas[ql].hw > before.replicas[ql].hw:
        text += f"; {name(ql)}'s high watermark advances to {after.replicas[ql].hw}"
    if qb.alter is not None and qa.alter is None:
        text += f"; {request_words(model, qb.alter)} is dropped: the partition changed"
    return text


def controlled_shutdown(model: ModelView, before: State, action: Action, after: State) -> str:
    """ControlledShutdown: the operator's request and the controller's answer in one step
    (the ISR without the replica, a new leader in its place, or none)."""
    name = model.name
    r = action.replica
    who = name(r)
    qb, qa = before.quorum, after.quorum
    text = f"the operator asks {who} to shut down: {who} is in controlled shutdown"
    if qb.leader != r:
        if r not in qb.isr:
            text += f"; it is not in the ISR {replica_set(model, qb.isr)}, so the controller changes nothing else"
        else:
            text += (
                f"; the controller removes it from the ISR {replica_set(model, qb.isr)} → "
                f"{replica_set(model, qa.isr)} in the same leader epoch {qa.epoch}"
            )
            if model.config.eligible_leader_replicas and qa.elr != qb.elr:
                text += f", ELR {replica_set(model, qb.elr)} → {replica_set(model, qa.elr)}"
            ql = qa.leader
            if ql is not None and after.replicas[ql].hw > before.replicas[ql].hw:
                text += f"; {name(ql)}'s high watermark advances to {after.replicas[ql].hw}"
        return text + dropped_note(model, before, after, r)
    n = action.to
    if n is None:
        text += (
            f"; {who} is the partition's leader and no other replica may lead: the controller "
            f"leaves it without a leader in epoch {qa.epoch}, ISR {replica_set(model, qa.isr)}"
        )
        if r in qa.isr:
            text += f" (the ISR keeps {who}: without eligible leader replicas it is never empty)"
        if model.config.eligible_leader_replicas:
            text += f", ELR {replica_set(model, qa.elr)}"
    else:
        text += (
            f"; {who} is the partition's leader, so the controller moves its leadership: it elects "
            f"{name(n)} in epoch {qa.epoch}, ISR {replica_set(model, qa.isr)}, its high watermark "
            f"{after.replicas[n].hw}"
        )
        if n in qb.isr:
            if model.config.eligible_leader_replicas and qa.elr != qb.elr:
                text += f", ELR {replica_set(model, qa.elr)}"
        elif n in qb.elr:
            text += f" (from the ELR: no other ISR member is alive; ELR now {replica_set(model, qa.elr)})"
        else:
            text += f" (unclean: {name(n)} was not in the ISR)"
        text += f"; {who} keeps its log and acts on its old epoch until it follows {name(n)}"
    return text + dropped_note(model, before, after, r)
