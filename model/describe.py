"""What a step of the Kafka model did, in words: the sentence a trace shows under each
action's name (``KafkaModel.describe_step``, the protocol's ``describe_step`` hook).

It says what the rules of ``model.kafka`` did in one transition, reading the two states
(which records moved, what was truncated, why a follower may not re-join the ISR), so it
lives next to them.
"""

from __future__ import annotations

from .actions import (
    ALTER_PARTITION,
    APPLY_MIN_ISR,
    BECOME_FOLLOWER,
    CHANGE_MIN_ISR,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DISK_FAILURE,
    ELECT_LEADER,
    EXPAND_ISR,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    PRODUCE,
    RESTART,
    SHRINK_ISR,
    SHUTDOWN_COMPLETE,
)
from .config import KAFKA_13916, KAFKA_15221, LEADER_EPOCH_21
from .state import EXPAND, leader_min_isr, leader_of, leads, leso, min_isr


def replica_set(model, members) -> str:
    """Replicas as a set of their names: ``{A,B}``."""
    return "{" + ",".join(model.name(r) for r in members) + "}"


def plural(n, word) -> str:
    """``1 record``, ``2 records``, ``2 crashes``."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith(("s", "sh", "ch", "x")) else f"{n} {word}s"


def describe_step(model, before, action, after) -> str:
    """One sentence saying what ``action`` did between two states (for a trace header;
    ``KafkaModel.describe_step``, the protocol's ``describe_step`` hook).

    Returns an empty string for an action this module does not know.
    """
    name = model.name
    r = action.replica
    who = name(r)
    if action.name == CHANGE_MIN_ISR:
        return _change_min_isr(model, before, after)
    if action.name == APPLY_MIN_ISR:
        old, new = leader_min_isr(model.config, before), leader_min_isr(model.config, after)
        return (
            f"the leader's broker applies the controller's change of min ISR: {old} → {new} "
            f"(its produce and high-watermark checks read it from now on)"
        )
    if action.name == DISK_FAILURE:
        return _disk_failure(model, before, after, r)
    b, a = before.replicas[r], after.replicas[r]
    if action.name == PRODUCE:
        offset = len(a.log) - 1
        return f"{who} appends {model.format_record(a.log[-1])} at offset {offset}"
    if action.name == FETCH_REQUEST:
        f = a.inflight
        if f.diverging is not None:
            return _diverging_answer(model, before, after, r) + _rejoin_note(model, after, r, f.leader)
        n = len(f.records)
        text = (
            f"{name(f.leader)} answers {who}'s fetch from offset {f.start}: "
            f"{plural(n, 'record')}, high watermark {f.leader_hw}"
        )
        return text + _rejoin_note(model, after, r, f.leader)
    if action.name == FETCH_RESPONSE:
        f = b.inflight
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
    if action.name == CRASH:
        text = f"{who} crashes; the controller is not told"
        if action.cut is not None and action.cut < len(b.log):
            lost = len(b.log) - action.cut
            text += f"; {plural(lost, 'unflushed record')} lost"
            if a.lossy:
                text += " (an unclean shutdown: its restart will be reported)"
        return text
    if action.name == RESTART:
        text = f"{who} restarts with its log and high watermark from disk, no leader, epoch -1"
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
        return text + _dropped_note(model, before, after, r)
    if action.name == ELECT_LEADER:
        q = after.quorum
        text = (
            f"the controller elects {who} in epoch {q.epoch}, ISR {replica_set(model, q.isr)}, "
            f"its high watermark {a.hw}"
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
            model.config.last_known_leader
            and not before.quorum.isr
            and not before.quorum.elr
            and before.quorum.leader == r
        ):
            text += (
                f" (the last known leader: the ISR and the ELR are empty, so the controller "
                f"re-elects its last leader {who} with the log it has left)"
            )
        elif r not in before.quorum.isr:
            text += f" (unclean: {who} was not in the ISR)"
        elif model.config.eligible_leader_replicas and q.elr != before.quorum.elr:
            text += f", ELR {replica_set(model, q.elr)}"
        return text + _dropped_note(model, before, after, r)
    if action.name == BECOME_FOLLOWER:
        leader = name(after.quorum.leader)
        text = f"{who} follows {leader} in epoch {a.epoch}"
        if len(a.log) < len(b.log):
            return text + f", truncating its log to offset {len(a.log)}"
        if model.config.truncate_on_fetch and b.log:
            return text + f", keeping its log (it truncates, if it must, on {leader}'s answer to its fetch)"
        return text + ", keeping its log"
    if action.name == ALTER_PARTITION:
        return _answer(model, before, after)
    if action.name == CONTROLLED_SHUTDOWN:
        return _controlled_shutdown(model, before, action, after)
    if action.name == SHUTDOWN_COMPLETE:
        return (
            f"{who} stops cleanly at the end of its controlled shutdown: its log is flushed, nothing "
            f"is lost, and its restart will not be an unclean one; the controller is not told, no "
            f"crash is counted"
        )
    if action.name in (SHRINK_ISR, EXPAND_ISR):
        leader = leader_of(before)
        if model.config.alter_partition:
            return _request(model, before, action, leader)
        by = "" if leader is None else f"{name(leader)} "
        if action.name == SHRINK_ISR:
            why = "down" if not b.alive else "lagging"
            text = f"{by}removes {who} ({why}) from the ISR"
            if leader is not None and after.replicas[leader].hw > before.replicas[leader].hw:
                hw = after.replicas[leader].hw
                text += f"; {name(leader)}'s high watermark advances to {hw}"
            return text
        text = f"{by}adds {who} back to the ISR"
        if leader is not None:  # the rule's test, which is where ISR expansion goes wrong
            text += _expand_test(model, before, r, leader)
        return text
    return ""


def _operator(cfg) -> bool:
    """Does ``cfg`` change min ISR or fail log directories (whose bugs, and the broker's lag,
    can put a replica without every committed record in the ELR)?"""
    return bool(cfg.min_isr_changes) or cfg.max_disk_failures > 0


def _elr_gap(model, before, r) -> str:
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


def _change_min_isr(model, before, after) -> str:
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
        text += f"; {_what(model, qb.alter)} is dropped: the partition changed"
    return text


def _disk_failure(model, before, after, r) -> str:
    """DiskFailure(r): the log gone, the controller's removal of ``r`` (into the ELR below
    min ISR), then either the partition offline on ``r`` (fixed) or re-created empty and
    serving (KAFKA-16234), and the quorum leader's HW step."""
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
        text += f"; {_what(model, qb.alter)} is dropped: the partition changed"
    return text


def _diverging_answer(model, before, after, f) -> str:
    """FetchRequest answered with a diverging epoch (``truncate_on_fetch``): where the
    follower's last epoch ends on the leader, and with KAFKA-13141 the false log end the
    leader takes and the high watermark it then reaches."""
    name = model.name
    who = name(f)
    resp = after.replicas[f].inflight
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


def _expand_test(model, state, r, leader) -> str:
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


def _what(model, alter) -> str:
    """An AlterPartition request in words: ``A's request to add B``."""
    p, change, r = alter
    verb = "add" if change == EXPAND else "remove"
    return f"{model.name(p)}'s request to {verb} {model.name(r)}"


def _request(model, before, action, leader) -> str:
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


def _answer(model, before, after) -> str:
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
            return f"{_what(model, alter)} is refused: {name(r)} is down"
        if rb.shutting and not model.config.has_bug(KAFKA_13916):
            return f"{_what(model, alter)} is refused: {name(r)} is in controlled shutdown"
        return (
            f"{_what(model, alter)} is refused: it carries the broker epoch of {name(r)}'s previous "
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


def _dropped_note(model, before, after, r) -> str:
    """Why a Restart or an ElectLeader dropped the AlterPartition request in flight (the
    controller would refuse it now); that it survived a lossy Restart that wrote no change
    (the KAFKA-14139 window); else ``""``."""
    alter = before.quorum.alter
    if alter is None:
        return ""
    if after.quorum.alter is not None:  # a Restart that wrote no change: the request survives
        if model.config.broker_epochs and model.config.has_bug(KAFKA_15221) and alter[1] == EXPAND and alter[2] == r:
            return (
                f"; {_what(model, alter)} stays in flight although it was decided on {model.name(r)}'s "
                f"previous incarnation (KAFKA-15221: once {model.name(r)} follows {model.name(alter[0])} "
                f"again, the request carries its new broker epoch)"
            )
        return f"; {_what(model, alter)} stays in flight" if before.replicas[r].lossy else ""
    text = f"; {_what(model, alter)} is dropped: "
    qb, qa = before.quorum, after.quorum
    if qa.epoch != qb.epoch:
        return text + "the request carries the old leader epoch"
    if model.config.broker_epochs and alter[1] == EXPAND and alter[2] == r:
        return text + f"{model.name(r)} restarted, its broker epoch is stale"
    return text + "the partition changed: the request is stale"


def _controlled_shutdown(model, before, action, after) -> str:
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
        return text + _dropped_note(model, before, after, r)
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
    return text + _dropped_note(model, before, after, r)


def _rejoin_note(model, state, f, l) -> str:
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


def acks_note(model, before, action, after) -> str:
    """What the producer was told in this step, when the configuration tracks
    acknowledgements (``acks``): ``""`` when it was told nothing (and always without
    ``acks``).

    Under ``acks = "1"`` a Produce is acknowledged at once, by a replica that only
    *believes* it leads too (a zombie: the note says who leads since). Under
    ``acks = "all"`` the records the leader's HW passes in its own epoch are acknowledged
    if the ISR has at least min ISR members; if not, the producer is refused
    (NOT_ENOUGH_REPLICAS_AFTER_APPEND) although the records are committed.
    """
    acks = getattr(model.config, "acks", None)
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
