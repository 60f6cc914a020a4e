"""Liveness under fairness: what a partition eventually does (docs/model.md).

- ``EventuallyLeader`` — ``[]<>(some replica leads)``: in every fair behaviour the
  partition gets a leader again, again and again.
- ``CommittedEventuallyReplicated`` — for every committed record ``(o, m)``:
  ``(o, m) ∈ committed ~> every replica's log holds m at o``; one obligation per record.

Both are decided by the engines over the weakly fair behaviours of the whole reachable
graph (the model declares its fair instances); a counterexample is a lasso. Each comes
here as its per-state check and its array mask over the batch kernel's rows, side by side,
and an explanation of a lasso: which record is missing from which replica, and whether
only the epoch bound blocks an election ("at the bound").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from kmc.checker.contract.protocol import ALWAYS_EVENTUALLY, LEADS_TO, Property


def _record(epoch: int, rid: int) -> str:
    return f"record {rid} (epoch {epoch})"


def _names(model: Any, ids: Iterable[int]) -> str:
    return "{" + ", ".join(model.name(r) for r in ids) + "}"


# -- EventuallyLeader ------------------------------------------------------------------------


def leaderless(model: Any, state: Any) -> str | None:
    """``None`` where some replica leads, else why none does (the quorum leader is none,
    down, or has restarted since its election)."""
    if state.leader() is not None:
        return None
    q = state.quorum
    if q.leader is None:
        return "the controller has no leader"
    rep = state.replicas[q.leader]
    who = model.name(q.leader)
    if not rep.alive:
        return f"the controller's leader {who} is down"
    return (
        f"the controller's leader {who} has restarted since its election (its epoch is {rep.epoch}, "
        f"the controller's {q.epoch})"
    )


def leaderless_mask(kernel: Any, rows: np.ndarray) -> np.ndarray:
    """``leaderless`` over rows: true where no replica leads."""
    lead: np.ndarray = kernel.leads(rows)
    return lead < 0


def blocked_by_bound(model: Any, state: Any) -> bool:
    """Is a Failover disabled in ``state`` only by ``quorum.epoch < max_leader_epoch``?
    Nobody leads, the epoch is at the bound, and some ElectLeader would be enabled without
    that conjunct of its guard."""
    cfg = model.config
    return state.quorum.epoch >= cfg.max_leader_epoch and state.leader() is None and bool(model.electable(state))


def _tail(states: Sequence[Any], loop: int) -> list[Any]:
    """The states a lasso stays in for ever: its cycle's, or the stuttering last one."""
    return list(states[loop:-1]) if loop < len(states) - 1 else [states[-1]]


def _where(states: Sequence[Any], loop: int) -> str:
    if loop == len(states) - 1:
        return f"in state {loop + 1}, where no fair action is enabled (it stays there for ever)"
    return f"on the cycle from state {loop + 1} back to it"


def _bound(model: Any) -> str:
    bound = model.config.max_leader_epoch
    return f"no leader can be elected because the controller's epoch reached max_leader_epoch = {bound}; raise it"


def _why_no_leader(model: Any, tail: Sequence[Any]) -> str | None:
    """Why no replica is elected on the tail: the epoch bound, or nobody electable."""
    if any(blocked_by_bound(model, s) for s in tail):
        return _bound(model)
    if all(not model.electable(s) for s in tail):
        s = tail[-1]
        q = s.quorum
        cfg = model.config
        parts = [f"no replica can be elected: ISR {_names(model, q.isr)} and ELR {_names(model, q.elr)}"]
        live = [r for r in sorted(set(q.isr) | set(q.elr)) if s.replicas[r].alive]
        if not live:
            parts.append("none of them is alive" if q.isr or q.elr else "both are empty")
        parts.append("unclean election is off" if not cfg.unclean_leader_election else "unclean election is on")
        if cfg.eligible_leader_replicas and not cfg.last_known_leader:
            parts.append("no last-known-leader election")
        return ", ".join(parts)
    return None


def explain_leaderless(model: Any, states: Sequence[Any], loop: int, obligation: Any) -> str:
    """Why the lasso ``states`` (cycle back to ``states[loop]``) violates EventuallyLeader."""
    tail = _tail(states, loop)
    text = f"no replica leads {_where(states, loop)}"
    why = _why_no_leader(model, tail)
    return f"{text}: {why}" if why else text


# -- CommittedEventuallyReplicated --------------------------------------------------------------


@lru_cache(maxsize=64)
def _obligations(max_messages: int, max_leader_epoch: int) -> tuple[tuple[int, int, int], ...]:
    """Every ``(offset, epoch, id)`` a committed record can be, sorted: record ``id`` is
    written at an offset of at most ``id`` (a log holds only records produced before it),
    in an epoch of at most ``max_leader_epoch``."""
    return tuple(
        sorted((o, e, i) for i in range(max_messages) for o in range(i + 1) for e in range(max_leader_epoch + 1))
    )


def record_obligations(model: Any) -> tuple[tuple[int, int, int], ...]:
    """The obligations of ``CommittedEventuallyReplicated``: one per ``(offset, epoch, id)``
    a committed record can be, in order."""
    cfg = model.config
    return _obligations(cfg.max_messages, cfg.max_leader_epoch)


def _missing(state: Any, record: tuple[int, int, int]) -> list[int]:
    """The replicas whose log does not hold ``record = (offset, epoch, id)`` at its offset."""
    o, e, i = record
    return [r for r, rep in enumerate(state.replicas) if o >= len(rep.log) or rep.log[o] != (e, i)]


def committed_replicated(model: Any, state: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``(p, q)``: the committed records (``P``), and the obligations whose record is
    everywhere or not committed (``Q or not P``: a record once committed stays committed,
    so the leads-to says the same, and only states where a committed record is missing
    somewhere wait)."""
    cfg = model.config
    every = _obligations(cfg.max_messages, cfg.max_leader_epoch)
    committed = state.committed
    if not committed:
        return (), every
    waiting = {c for c in committed if _missing(state, c)}
    if not waiting:
        return committed, every
    return committed, tuple(x for x in every if x not in waiting)


def committed_replicated_mask(kernel: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``committed_replicated`` over rows: two ``(len(rows), K)`` boolean arrays, column
    ``j`` for the ``j``-th obligation: where its record is committed (``P``), and where it
    is in every replica's log or not committed (``Q or not P``)."""
    c = kernel.codec
    m = kernel.m
    cfg = kernel.config
    every = _obligations(cfg.max_messages, cfg.max_leader_epoch)
    rows = np.asarray(rows)
    count, epochs = len(rows), cfg.max_leader_epoch + 1
    p = np.zeros((count, len(every)), dtype=bool)
    q = np.ones((count, len(every)), dtype=bool)
    if not count:
        return p, q
    # held[row, o]: the entry every replica's log holds at offset o, or -1
    held = np.full((count, cfg.max_messages), -1, dtype=np.int64)
    b = c.block(0)
    for o in range(cfg.max_messages):
        np.copyto(held[:, o], rows[:, b + c.LOG + o], where=rows[:, b + c.LEO] > o)
    for r in range(1, kernel.n):
        b = c.block(r)
        for o in range(cfg.max_messages):
            held[(rows[:, b + c.LEO] <= o) | (rows[:, b + c.LOG + o] != held[:, o]), o] = -1
    # obligation[i, o, e]: the position of (o, e, i) in `every`
    obligation = np.full((cfg.max_messages, cfg.max_messages, epochs), -1, dtype=np.int64)
    for j, (o, e, i) in enumerate(every):
        obligation[i, o, e] = j
    for i in range(cfg.max_messages):
        offsets = rows[:, c.COMMITTED_OFFSET + i].astype(np.int64)
        epoch = rows[:, c.COMMITTED_EPOCH + i].astype(np.int64)
        at = np.flatnonzero((offsets >= 0) & (offsets <= i) & (epoch >= 0) & (epoch < epochs))
        if not len(at):
            continue
        offsets, epoch = offsets[at], epoch[at]
        j = obligation[i, offsets, epoch]
        p[at, j] = True
        q[at, j] = held[at, offsets] == epoch * m + i
    return p, q


def record_obligation_text(model: Any, obligation: Any) -> str:
    """An obligation of ``CommittedEventuallyReplicated`` in words: the committed record
    it waits for, on every replica."""
    o, e, i = obligation
    return f"committed {_record(e, i)} at offset {o} on every replica"


def explain_unreplicated(model: Any, states: Sequence[Any], loop: int, obligation: Any) -> str:
    """Which record the lasso leaves missing from which replica, for ever, and why."""
    o, e, i = obligation
    tail = _tail(states, loop)
    always = [r for r in range(len(tail[0].replicas)) if all(r in _missing(s, obligation) for s in tail)]
    last = tail[-1]
    lacking = always or _missing(last, obligation)
    where = []
    for r in lacking:
        log = last.replicas[r].log
        there = f"its log ends at {len(log)}" if o >= len(log) else f"it holds {_record(*log[o])} there"
        where.append(f"{model.name(r)} ({there})")
    text = (
        f"committed {_record(e, i)} at offset {o} is missing from {', '.join(where)} "
        f"{'in every state ' if always and len(tail) > 1 else ''}{_where(states, loop)}"
    )
    holders = [model.name(r) for r in range(len(last.replicas)) if r not in _missing(last, obligation)]
    if not holders:
        text += "; no replica holds it any more: it is lost for good"
    if any(blocked_by_bound(model, s) for s in tail):
        text += f"; {_bound(model)}"
    return text


EventuallyLeader = Property(
    "EventuallyLeader",
    ALWAYS_EVENTUALLY,
    leaderless,
    "under weak fairness of the healing actions, the partition always gets a leader again ([]<> some replica leads)",
    symmetric=True,
    explain=explain_leaderless,
    mask=leaderless_mask,
)
CommittedEventuallyReplicated = Property(
    "CommittedEventuallyReplicated",
    LEADS_TO,
    committed_replicated,
    "under weak fairness of the healing actions, every committed record eventually reaches every replica's log "
    "at its offset",
    symmetric=True,
    explain=explain_unreplicated,
    mask=committed_replicated_mask,
    obligations=record_obligations,
    obligation_text=record_obligation_text,
)
