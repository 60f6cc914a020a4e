"""What a step of failure or leadership did, in words: Crash, Restart, ElectLeader and
BecomeFollower."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .actions import Action
from .describe_words import dropped_note, plural, replica_set
from .state import State

if TYPE_CHECKING:
    from .config import Config
    from .views import ModelView


def crash(model: ModelView, before: State, action: Action, after: State) -> str:
    """Crash: the controller is not told; the unflushed records a cut loses."""
    r = action.replica
    b, a = before.replicas[r], after.replicas[r]
    text = f"{model.name(r)} crashes; the controller is not told"
    if action.cut is not None and action.cut < len(b.log):
        lost = len(b.log) - action.cut
        text += f"; {plural(lost, 'unflushed record')} lost"
        if a.lossy:
            text += " (an unclean shutdown: its restart will be reported)"
    return text


def restart(model: ModelView, before: State, action: Action, after: State) -> str:
    """Restart: the replica's log from disk, and after a lossy crash or a failed log
    directory the controller's removal of it (KIP-966's unclean shutdown)."""
    name = model.name
    r = action.replica
    b = before.replicas[r]
    text = f"{name(r)} restarts with its log and high watermark from disk, no leader, epoch -1"
    if b.lossy:
        qb, qa = before.quorum, after.quorum
        # the unclean restart of a failed log directory (whose log is then empty) is told as such
        loss = "failed log directory" if before.disk_failures and not b.log else "lossy crash"
        if r not in qb.isr and r not in qb.elr and qa.isr == qb.isr and qa.elr == qb.elr:
            text += (
                f"; after its {loss} the controller has nothing to remove: it is in "
                f"neither the ISR {replica_set(model, qb.isr)} nor the ELR "
                f"{replica_set(model, qb.elr)}"
            )
        else:
            text += (
                f"; after its {loss} the controller removes it from the ISR "
                f"{replica_set(model, qb.isr)} → {replica_set(model, qa.isr)}"
            )
            if model.config.eligible_leader_replicas:
                text += f" and the ELR {replica_set(model, qb.elr)} → {replica_set(model, qa.elr)}"
        when = "the crash" if loss == "lossy crash" else "its directory failed"
        text += f", and every leader forgets its fetch position from before {when}"
        ql = qa.leader
        if ql is not None and after.replicas[ql].hw > before.replicas[ql].hw:
            text += f"; {name(ql)}'s high watermark advances to {after.replicas[ql].hw}"
    return text + dropped_note(model, before, after, r)


def elect_leader(model: ModelView, before: State, action: Action, after: State) -> str:
    """ElectLeader: whom the controller elects, and from where (the ISR, the ELR, the last
    known leader, or unclean)."""
    r = action.replica
    who = model.name(r)
    q = after.quorum
    text = (
        f"the controller elects {who} in epoch {q.epoch}, ISR {replica_set(model, q.isr)}, "
        f"its high watermark {after.replicas[r].hw}"
    )
    gap = _elr_gap(model, before, r) if r in before.quorum.elr and _operator(model.config) else ""
    if gap:
        text += f" (from the ELR: no ISR member is alive; ELR now {replica_set(model, q.elr)})" + gap
    elif r in before.quorum.elr:
        text += (
            f" (from the ELR: no ISR member is alive, and {who} left the ISR while it "
            f"was below min ISR, so it holds every committed record; ELR now "
            f"{replica_set(model, q.elr)})"
        )
    elif (
        model.config.last_known_leader and not before.quorum.isr and not before.quorum.elr and before.quorum.leader == r
    ):
        text += (
            f" (the last known leader: the ISR and the ELR are empty, so the controller "
            f"re-elects its last leader {who} with the log it has left)"
        )
    elif r not in before.quorum.isr:
        text += f" (unclean: {who} was not in the ISR)"
    elif model.config.eligible_leader_replicas and q.elr != before.quorum.elr:
        text += f", ELR {replica_set(model, q.elr)}"
    return text + dropped_note(model, before, after, r)


def become_follower(model: ModelView, before: State, action: Action, after: State) -> str:
    """BecomeFollower: whom the replica follows, and whether it truncates now, keeps its
    log, or truncates on the leader's answer (``truncate_on_fetch``)."""
    r = action.replica
    b, a = before.replicas[r], after.replicas[r]
    leader = model.name(after.quorum.leader)
    text = f"{model.name(r)} follows {leader} in epoch {a.epoch}"
    if len(a.log) < len(b.log):
        return text + f", truncating its log to offset {len(a.log)}"
    if model.config.truncate_on_fetch and b.log:
        return text + f", keeping its log (it truncates, if it must, on {leader}'s answer to its fetch)"
    return text + ", keeping its log"


def _operator(cfg: Config) -> bool:
    """Does ``cfg`` change min ISR or fail log directories (whose bugs, and the broker's lag,
    can put a replica without every committed record in the ELR)?"""
    return bool(cfg.min_isr_changes) or cfg.max_disk_failures > 0


def _elr_gap(model: ModelView, before: State, r: int) -> str:
    """With min ISR changes or disk failures, what an ELR member elected lacks, and why it
    was electable anyway (KAFKA-16234, KAFKA-16540, the leader's broker's lag); ``""`` when
    it holds every committed record."""
    log = before.replicas[r].log
    missing = [(o, e, i) for o, e, i in before.committed if o >= len(log) or log[o] != (e, i)]
    if not missing:
        return ""
    what = ", ".join(f"{model.format_record((e, i))} at offset {o}" for o, e, i in missing)
    text = f"; but {model.name(r)} lacks committed {what}"
    cfg = model.config
    if cfg.has_bug("KAFKA-16234") and before.disk_failures:
        return text + ": its log directory failed and it re-created the partition empty (KAFKA-16234)"
    if cfg.has_bug("KAFKA-16540"):
        return text + (
            ": it entered the ELR under a higher min ISR, and the controller kept it there "
            "when min ISR was lowered and the high watermark moved on (KAFKA-16540)"
        )
    if cfg.min_isr_lag:
        return text + (
            ": it entered the ELR when the controller's min ISR was already raised, while the leader's "
            "broker, still on the old value, let the high watermark pass (min_isr_lag)"
        )
    return text
