"""The properties of the Kafka replication model (docs/model.md, "Invariants").

Each check is a plain module-level function (so it pickles to Spark executors) that
returns ``None`` when the property holds and a one-sentence explanation when it does not.
Beside each check sits its array form, its *mask*: the same rule over a chunk of rows of
the batch kernel (``model.batch``, columns as ``model.rows`` lays them out), one boolean a
row, true where the property is violated. A property value carries both
(``Property(..., mask=...)``); the engine reads the mask itself (``checker.contract.properties``),
and differential tests check it against the check, state by state.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kmc.checker.contract.protocol import ALWAYS, STEP, Property, columns

from .availability import PartitionRecoverable
from .liveness import CommittedEventuallyReplicated, EventuallyLeader

# The one step that may drop a live replica's epoch to -1 besides a restart: DiskFailure(r)
# under KAFKA-16234 (names as ``model.actions`` and ``model.config`` spell them).
DISK_FAILURE = "DiskFailure"
KAFKA_16234 = "KAFKA-16234"


def _record(epoch: int, rid: int) -> str:
    return f"record {rid} (epoch {epoch})"


def high_watermark_below_log_end(model: Any, state: Any) -> str | None:
    """Every replica: ``hw <= LEO``."""
    for r, rep in enumerate(state.replicas):
        if rep.hw > len(rep.log):
            return f"replica {model.name(r)}'s high watermark {rep.hw} is past its log end {len(rep.log)}"
    return None


def high_watermark_below_log_end_mask(kernel: Any, rows: np.ndarray) -> np.ndarray:
    """``high_watermark_below_log_end`` over rows: which rows violate it."""
    c = kernel.codec
    bad = np.zeros(len(rows), dtype=bool)
    for r in range(kernel.n):
        b = c.block(r)
        bad |= rows[:, b + c.HW] > rows[:, b + c.LEO]
    return bad


def committed_never_lost(model: Any, state: Any) -> str | None:
    """When some replica leads, every committed record is in its log at its offset."""
    l = state.leader()
    if l is None:
        return None
    log = state.replicas[l].log
    for offset, epoch, rid in state.committed:
        if offset >= len(log):
            return (
                f"{_record(epoch, rid)} at offset {offset} was committed but leader "
                f"{model.name(l)}'s log ends at {len(log)}"
            )
        if log[offset] != (epoch, rid):
            return (
                f"{_record(epoch, rid)} at offset {offset} was committed but leader "
                f"{model.name(l)} holds {_record(*log[offset])} there"
            )
    return None


def _led_without(kernel: Any, rows: np.ndarray, acked: bool = False) -> np.ndarray:
    """Which rows have a leader whose log lacks a committed record (with ``acked``, an
    acknowledged one) at its offset."""
    lead = kernel.leads(rows)
    bad = np.zeros(len(rows), dtype=bool)
    records = None
    for l in range(kernel.n):
        led = lead == l
        if not led.any():
            continue
        if records is None:
            records = _committed_at(kernel, rows, acked)
        bad |= led & ~_holds_at(kernel, rows, l, *records)
    return bad


def committed_never_lost_mask(kernel: Any, rows: np.ndarray) -> np.ndarray:
    """``committed_never_lost`` over rows: which rows violate it."""
    return _led_without(kernel, rows)


def acknowledged_never_lost(model: Any, state: Any) -> str | None:
    """When some replica leads, every record the producer was told is written is in its
    log at its offset (meaningful with ``acks`` set; ``acked`` is empty otherwise)."""
    l = state.leader()
    if l is None or not state.acked:
        return None
    log = state.replicas[l].log
    for offset, epoch, rid in state.acked:
        if offset < len(log) and log[offset] == (epoch, rid):
            continue
        where = (
            f"leader {model.name(l)}'s log ends at {len(log)}"
            if offset >= len(log)
            else f"leader {model.name(l)} holds {_record(*log[offset])} there"
        )
        holders = [
            model.name(r)
            for r, rep in enumerate(state.replicas)
            if offset < len(rep.log) and rep.log[offset] == (epoch, rid)
        ]
        left = f"only {', '.join(holders)} still holds it" if holders else "no replica holds it any more"
        return (
            f"the producer was told {_record(epoch, rid)} at offset {offset} is written "
            f"(acks={model.config.acks}) but {where}; {left}"
        )
    return None


def acknowledged_never_lost_mask(kernel: Any, rows: np.ndarray) -> np.ndarray:
    """``acknowledged_never_lost`` over rows: which rows violate it."""
    if kernel.codec.ACKED_OFFSET is None:  # acks not set: nothing is ever acknowledged
        return np.zeros(len(rows), dtype=bool)
    return _led_without(kernel, rows, acked=True)


def logs_never_diverge(model: Any, state: Any) -> str | None:
    """Live replicas on the current epoch agree below the smaller of their HWs."""
    q = state.quorum
    current = [r for r, rep in enumerate(state.replicas) if rep.alive and rep.epoch == q.epoch]
    for i, a in enumerate(current):
        ra = state.replicas[a]
        for b in current[i + 1 :]:
            rb = state.replicas[b]
            n = min(ra.hw, rb.hw, len(ra.log), len(rb.log))
            # Checked on every new state: compare the prefixes in C first, and look for
            # the offset only when they differ.
            if ra.log[:n] == rb.log[:n]:
                continue
            for offset in range(n):
                if ra.log[offset] != rb.log[offset]:
                    return (
                        f"replicas {model.name(a)} and {model.name(b)} disagree at offset "
                        f"{offset}, below both high watermarks ({model.name(a)} "
                        f"{ra.hw}, {model.name(b)} {rb.hw}): {model.name(a)} holds "
                        f"{_record(*ra.log[offset])}, {model.name(b)} holds "
                        f"{_record(*rb.log[offset])}"
                    )
    return None


def logs_never_diverge_mask(kernel: Any, rows: np.ndarray) -> np.ndarray:
    """``logs_never_diverge`` over rows: which rows violate it (an offset at a time: the
    logs have ``m`` columns, and a comparison of whole columns is cheaper than a
    reduction across a row's few)."""
    c, m = kernel.codec, kernel.m
    bad = np.zeros(len(rows), dtype=bool)
    qe = rows[:, c.Q_EPOCH]
    for a in range(kernel.n):
        ba = c.block(a)
        cur_a = (rows[:, ba + c.ALIVE] == 1) & (rows[:, ba + c.EPOCH] == qe)
        for b_ in range(a + 1, kernel.n):
            bb = c.block(b_)
            both = cur_a & (rows[:, bb + c.ALIVE] == 1) & (rows[:, bb + c.EPOCH] == qe)
            if not both.any():
                continue
            k = np.minimum(
                np.minimum(rows[:, ba + c.HW], rows[:, bb + c.HW]), np.minimum(rows[:, ba + c.LEO], rows[:, bb + c.LEO])
            )
            differ = np.zeros(len(rows), dtype=bool)
            for j in range(m):  # below both HWs and log ends, the records at offset j differ
                differ |= (rows[:, ba + c.LOG + j] != rows[:, bb + c.LOG + j]) & (k > j)
            bad |= both & differ
    return bad


def leader_candidate_completeness(model: Any, state: Any) -> str | None:
    """Every live member of the ISR or the ELR holds every committed record at its offset
    (every replica the controller may elect cleanly, or from the ELR, is complete)."""
    committed = state.committed
    if not committed:
        return None
    q = state.quorum
    candidates = q.isr if not q.elr else sorted(set(q.isr).union(q.elr))
    for r in candidates:
        rep = state.replicas[r]
        if not rep.alive:
            continue
        log = rep.log
        where = "ELR" if r in q.elr else "ISR"
        for offset, epoch, rid in committed:
            if offset >= len(log):
                return (
                    f"{_record(epoch, rid)} at offset {offset} was committed but {model.name(r)}, "
                    f"alive and in the {where}, has a log ending at {len(log)}"
                )
            if log[offset] != (epoch, rid):
                return (
                    f"{_record(epoch, rid)} at offset {offset} was committed but {model.name(r)}, "
                    f"alive and in the {where}, holds {_record(*log[offset])} there"
                )
    return None


def _committed_at(kernel: Any, rows: np.ndarray, acked: bool = False) -> tuple[list[np.ndarray], np.ndarray]:
    """Per row, the committed records (with ``acked``, the acknowledged ones) by offset:
    for each offset ``j`` the code of the record there (``NONE``: none), and whether two
    records are at one offset (then no log holds both). The arrays forms' layout: a column
    of the rows at a time, each compared whole (cheap when the rows are laid out by
    column, ``checker.contract.protocol.columns``)."""
    c, m = kernel.codec, kernel.m
    coff, cep = (c.ACKED_OFFSET, c.ACKED_EPOCH) if acked else (c.COMMITTED_OFFSET, c.COMMITTED_EPOCH)
    none = np.int16(c.NONE)
    at = [np.full(len(rows), none, dtype=np.int16) for _ in range(m)]
    clash = np.zeros(len(rows), dtype=bool)
    for i in range(m):
        off = rows[:, coff + i]
        if not (off != c.NONE).any():
            continue
        code = rows[:, cep + i].astype(np.int16) * m + i
        for j in range(m):
            here = off == j
            clash |= here & (at[j] != none)
            np.copyto(at[j], code, where=here)
    return at, clash


def leader_candidate_completeness_mask(kernel: Any, rows: np.ndarray) -> np.ndarray:
    """``leader_candidate_completeness`` over rows: which rows violate it (the committed
    records laid out by offset once, then each candidate's log compared with them)."""
    c = kernel.codec
    bad = np.zeros(len(rows), dtype=bool)
    members = rows[:, c.Q_ISR].astype(np.int64) | rows[:, c.Q_ELR].astype(np.int64)
    committed = None
    for r in range(kernel.n):
        b = c.block(r)
        live_member = ((members >> r & 1) == 1) & (rows[:, b + c.ALIVE] == 1)
        if not live_member.any():
            continue
        if committed is None:
            committed = _committed_at(kernel, rows)
        bad |= live_member & ~_holds_at(kernel, rows, r, *committed)
    return bad


def _holds_at(kernel: Any, rows: np.ndarray, r: int, at: list[np.ndarray], clash: np.ndarray) -> np.ndarray:
    """Which rows have every record of ``at`` (``_committed_at``) in replica ``r``'s log
    at its offset."""
    c = kernel.codec
    b = c.block(r)
    length = rows[:, b + c.LEO]
    holds = ~clash
    for j in range(kernel.m):
        holds &= (at[j] == c.NONE) | ((rows[:, b + c.LOG + j] == at[j]) & (length > j))
    return holds


def uncommitted_never_exposed(model: Any, state: Any) -> str | None:
    """Every live replica: every record below its high watermark (and its log end) is
    committed at that offset, so a consumer reading from any replica, the leader or a
    follower (KIP-392), reads only committed records."""
    committed: set[tuple[int, int, int]] | None = None  # made at the first record below a HW
    for r, rep in enumerate(state.replicas):
        if not rep.alive:
            continue
        log = rep.log
        for offset in range(min(rep.hw, len(log))):
            if committed is None:
                committed = set(state.committed)
            epoch, rid = log[offset]
            if (offset, epoch, rid) in committed:
                continue
            there = [(e, i) for o, e, i in state.committed if o == offset]
            was = f"{_record(*there[0])} was committed there" if there else "nothing was ever committed there"
            return (
                f"{model.name(r)} exposes {_record(epoch, rid)} at offset {offset}, below its high "
                f"watermark {rep.hw}, but it was never committed: {was}"
            )
    return None


def uncommitted_never_exposed_mask(kernel: Any, rows: np.ndarray) -> np.ndarray:
    """``uncommitted_never_exposed`` over rows: which rows violate it (a live replica holds,
    below its high watermark, a record that is not committed at that offset)."""
    c, m = kernel.codec, kernel.m
    bad = np.zeros(len(rows), dtype=bool)
    # the committed slot of each log slot's record (its id: code % m), flat: row * m + id
    committed_offset = rows[:, c.COMMITTED_OFFSET : c.COMMITTED_OFFSET + m].ravel()
    committed_epoch = rows[:, c.COMMITTED_EPOCH : c.COMMITTED_EPOCH + m].ravel()
    base = np.arange(len(rows)) * m
    for r in range(kernel.n):
        b = c.block(r)
        below = np.minimum(rows[:, b + c.HW], rows[:, b + c.LEO])
        below[rows[:, b + c.ALIVE] != 1] = 0
        for o in range(m):
            exposed = below > o
            if not exposed.any():
                break
            epoch, rid = np.divmod(rows[:, b + c.LOG + o].astype(np.int64), m)
            at = base + rid
            bad |= exposed & ((committed_offset[at] != o) | (committed_epoch[at] != epoch))
    return bad


def leader_epoch_monotonic(model: Any, before: Any, action: Any, after: Any) -> str | None:
    """The controller's epoch never decreases; a live replica's epoch never decreases
    except to -1 on restart, or at a failure of its log directory under KAFKA-16234 (the
    partition re-created empty has no leader epoch)."""
    if after.quorum.epoch < before.quorum.epoch:
        return (
            f"the controller's leader epoch went down from {before.quorum.epoch} to "
            f"{after.quorum.epoch} by {model.format_action(action)}"
        )
    for r, (b, a) in enumerate(zip(before.replicas, after.replicas)):
        # An action rebuilds only the replicas it changes and shares the others with the
        # state before, so most pairs are one object: skip them without reading fields.
        if a is b or not a.alive or a.epoch >= b.epoch:
            continue
        if a.epoch == -1 and not b.alive:
            continue  # a restart forgets the epoch
        if a.epoch == -1 and _recreated_empty(model, action, r):
            continue  # a partition re-created after its log directory failed has no epoch
        return (
            f"replica {model.name(r)}'s leader epoch went down from {b.epoch} to "
            f"{a.epoch} by {model.format_action(action)}"
        )
    return None


def _recreated_empty(model: Any, action: Any, r: int) -> bool:
    """Is the step DiskFailure(r) under KAFKA-16234 (the partition re-created empty, alive,
    with no leader epoch)?"""
    return bool(action.name == DISK_FAILURE and action.replica == r and model.config.has_bug(KAFKA_16234))


def leader_epoch_monotonic_mask(kernel: Any, rows: np.ndarray, parents: np.ndarray, after: np.ndarray) -> np.ndarray:
    """``leader_epoch_monotonic`` over transitions: which ``rows[parents[i]] -> after[i]``
    violate it."""
    c = kernel.codec
    cols = [c.Q_EPOCH] + [c.block(r) + k for r in range(kernel.n) for k in (c.EPOCH, c.ALIVE)]
    # Only the columns the property reads, before and after (one pass over each array).
    before = columns(np.take(np.take(rows, cols, axis=1), parents, axis=0))
    now = columns(np.take(after, cols, axis=1))
    bad: np.ndarray = now[:, 0] < before[:, 0]
    # KAFKA-16234: a DiskFailure (the count of them rises) re-creates the partition alive
    # with no leader epoch; no other step takes a live replica's epoch to -1
    recreated = None
    if c.DISK_FAILURES is not None and kernel.config.has_bug(KAFKA_16234):
        recreated = rows[parents, c.DISK_FAILURES] < after[:, c.DISK_FAILURES]
    for r in range(kernel.n):
        epoch, alive = 1 + 2 * r, 2 + 2 * r
        went_down = (now[:, alive] == 1) & (now[:, epoch] < before[:, epoch])
        restart = (now[:, epoch] == c.NONE) & (before[:, alive] == 0)
        if recreated is not None:
            restart |= (now[:, epoch] == c.NONE) & recreated
        bad |= went_down & ~restart
    return bad


HighWatermarkBelowLogEnd = Property(
    "HighWatermarkBelowLogEnd",
    ALWAYS,
    high_watermark_below_log_end,
    "every replica's high watermark is at most its log end offset",
    symmetric=True,
    mask=high_watermark_below_log_end_mask,
)
CommittedNeverLost = Property(
    "CommittedNeverLost",
    ALWAYS,
    committed_never_lost,
    "when a replica leads, every committed record is in its log at its offset",
    symmetric=True,
    mask=committed_never_lost_mask,
)
LogsNeverDiverge = Property(
    "LogsNeverDiverge",
    ALWAYS,
    logs_never_diverge,
    "live replicas on the current leader epoch agree below the smaller of their high watermarks",
    symmetric=True,
    mask=logs_never_diverge_mask,
)
LeaderEpochMonotonic = Property(
    "LeaderEpochMonotonic",
    STEP,
    leader_epoch_monotonic,
    "leader epochs never go down (except a replica's to -1 on restart)",
    symmetric=True,
    mask=leader_epoch_monotonic_mask,
)

LeaderCandidateCompleteness = Property(
    "LeaderCandidateCompleteness",
    ALWAYS,
    leader_candidate_completeness,
    "every live replica in the ISR or the ELR holds every committed record",
    symmetric=True,
    mask=leader_candidate_completeness_mask,
)

AcknowledgedNeverLost = Property(
    "AcknowledgedNeverLost",
    ALWAYS,
    acknowledged_never_lost,
    "when a replica leads, every record acknowledged to the producer is in its log at its offset (needs model.acks)",
    symmetric=True,
    mask=acknowledged_never_lost_mask,
)

UncommittedNeverExposed = Property(
    "UncommittedNeverExposed",
    ALWAYS,
    uncommitted_never_exposed,
    "every record below a live replica's high watermark was committed at that offset "
    "(a consumer reading from any replica reads only committed records)",
    symmetric=True,
    mask=uncommitted_never_exposed_mask,
)

# Every property kmc can check. PartitionRecoverable (availability) is checked only when a
# run asks for it: it needs the whole reachable graph, so it is never a default.
ALL = (
    HighWatermarkBelowLogEnd,
    CommittedNeverLost,
    LogsNeverDiverge,
    LeaderEpochMonotonic,
    LeaderCandidateCompleteness,
    AcknowledgedNeverLost,
    UncommittedNeverExposed,
    PartitionRecoverable,
)
# The liveness properties (docs/model.md, "Liveness under fairness"): checked only when a
# run names them (they need the whole reachable graph), and kept out of ``ALL`` so that
# what the grids of ``kmc matrix`` check stays as it was.
LIVENESS = (EventuallyLeader, CommittedEventuallyReplicated)
EVERY = ALL + LIVENESS  # every property a spec or --invariant may name
BY_NAME = {p.name: p for p in EVERY}
# The four properties of the model before docs/model.md's "Kafka 2.1 and later": what a configuration
# that uses none of it (an older rule, both options off) checks by default, so that its
# runs, published results and pinned numbers are what they always were.
CLASSIC = ALL[:4]
# The five properties of a configuration that uses the 2.1 rule, the HW gate or the ELR.
MODERN = ALL[:5]


def default_properties(config: Any) -> tuple[Property, ...]:
    """The properties a run of ``config`` checks unless told otherwise: ``MODERN`` for a
    configuration that uses the 2.1 rule, the HW gate or the ELR; ``CLASSIC`` (without
    ``LeaderCandidateCompleteness``) for the pre-2.1 model; either followed by
    ``AcknowledgedNeverLost`` when the configuration tracks acknowledgements (``acks``),
    then by ``UncommittedNeverExposed`` when followers truncate in the fetch path
    (``truncate_on_fetch``). ``PartitionRecoverable`` is never a default."""
    base: tuple[Property, ...] = MODERN if config.modern else CLASSIC
    if config.acks:
        base += (AcknowledgedNeverLost,)
    if config.truncate_on_fetch:
        base += (UncommittedNeverExposed,)
    return base
