"""The state of the Kafka replication model (docs/model.md, "State").

States are frozen, slotted attrs classes holding only ints, bools, ``None`` and tuples,
so they are cheap to hash, compare and pickle. Replicas are numbered from 0 in the
spec's order; a record is the tuple ``(epoch, id)``.
"""

from __future__ import annotations

import struct

import attrs

from .config import Config

Record = tuple[int, int]  # (leader epoch it was written in, producer sequence number)
Log = tuple[Record, ...]  # a replica's log: its records, offset = index
Ids = tuple[int, ...]  # replica ids: an ISR, an ELR, every replica's log end
Entry = tuple[int, int, int]  # (offset, epoch, id) of a committed or acknowledged record
Entries = tuple[Entry, ...]
Alter = tuple[int, str, int]  # an AlterPartition request: (leader, SHRINK | EXPAND, replica)
NONE = -1  # how "no replica" is written in the canonical encoding
# Where a response writes its record count, a diverging response writes one of these.
DIVERGING = -2
DIVERGING_APPLIED = -3


@attrs.frozen
class Fetch:
    """A fetch response on its way to a follower: from ``leader`` in its ``epoch``, the
    ``records`` from offset ``start`` and the leader's high watermark ``leader_hw``.

    A *diverging* response (``truncate_on_fetch`` only) carries no records and the
    diverging epoch ``(E', O')`` of docs/model.md: ``diverging`` is the epoch ``E'``
    (``None`` for a response with records) and ``start`` the offset ``O'``. ``applied``
    is KAFKA-14704's mark: the follower has already taken the response's high watermark
    and has still to truncate (only on a diverging response, only with that bug).
    """

    leader: int
    epoch: int
    start: int
    records: Log
    leader_hw: int
    diverging: int | None = None
    applied: bool = False


@attrs.frozen
class Replica:
    """One replica's durable and volatile state."""

    alive: bool
    log: Log  # offset = index
    hw: int
    epoch: int  # -1 after a restart
    leader: int | None  # whom it believes leads; None after a restart
    remote_leo: Ids  # the leader's view of every replica's log end (own entry unused)
    inflight: Fetch | None = None
    lossy: bool = False  # down after a crash that lost part of its log (KIP-966)
    shutting: bool = False  # alive and in controlled shutdown (max_controlled_shutdowns)

    @property
    def leo(self) -> int:
        return len(self.log)


# The two kinds of AlterPartition request (``Quorum.alter``'s middle element).
SHRINK = "shrink"
EXPAND = "expand"


@attrs.frozen
class Quorum:
    """The controller's view: leader, leader epoch, in-sync replicas and eligible leader
    replicas (both sorted ids; the ELR is always empty without KIP-966), and the
    AlterPartition request in flight: ``None`` or ``(leader, SHRINK | EXPAND, replica)``,
    the leader that sent it, what it asks, and the replica it removes or adds (always
    ``None`` without ``alter_partition``)."""

    leader: int | None
    epoch: int
    isr: Ids
    elr: Ids = ()
    alter: Alter | None = None
    min_isr_step: int = 0  # ChangeMinIsr steps taken (min_isr_changes)


@attrs.frozen
class State:
    """A whole model state, history (ghost) variables included.

    ``committed`` is the sorted tuple of ``(offset, epoch, id)`` of every record that was
    ever below a leader's high watermark. ``acked`` is the sorted tuple of ``(offset,
    epoch, id)`` of every record the producer was told is written (always ``()`` unless
    the configuration sets ``acks``).
    """

    replicas: tuple[Replica, ...]
    quorum: Quorum
    produced: int = 0
    crashes: int = 0
    committed: Entries = ()
    acked: Entries = ()
    controlled_shutdowns: int = 0  # ControlledShutdown steps so far
    leader_min_isr_step: int = 0  # min ISR changes the leader's broker has applied (min_isr_lag)
    disk_failures: int = 0  # DiskFailure steps so far

    def leader(self) -> int | None:
        """The replica that leads, if any (``leader_of``): what the properties read."""
        return leader_of(self)


def leads(state: State, r: int) -> bool:
    """Does replica ``r`` lead: alive, the quorum's leader, and on the quorum's epoch?"""
    rep = state.replicas[r]
    q = state.quorum
    return rep.alive and q.leader == r and rep.leader == r and rep.epoch == q.epoch


def leader_of(state: State) -> int | None:
    """The replica that leads, if any."""
    q = state.quorum.leader
    return q if q is not None and leads(state, q) else None


def leso(state: State, l: int) -> int:
    """The leader epoch start offset of replica ``l`` (docs/model.md, "Kafka 2.1 and
    later"): the offset of the first record of its log written in its own epoch, or its
    log end if there is none. Meaningful while ``l`` leads."""
    rep = state.replicas[l]
    epoch = rep.epoch
    for offset, (e, _) in enumerate(rep.log):
        if e == epoch:
            return offset
    return len(rep.log)


def min_isr(config: Config, state: State) -> int:
    """The controller's min ISR (``min_isr()`` of docs/model.md, "Operator actions"): the
    value of the last ChangeMinIsr step taken, ``min_insync_replicas`` before any."""
    return config.min_isr_at(state.quorum.min_isr_step)


def leader_min_isr(config: Config, state: State) -> int:
    """The min ISR the leader's broker uses (``leader_min_isr()``): with ``min_isr_lag``
    the value of the last change it applied (ApplyMinIsr), else the controller's."""
    if config.min_isr_lag:
        return config.min_isr_at(state.leader_min_isr_step)
    return config.min_isr_at(state.quorum.min_isr_step)


def elr_after(config: Config, elr: Ids, old_isr: Ids, new_isr: Ids, min_isr: int | None = None) -> Ids:
    """The eligible leader replicas after the controller changes the ISR from ``old_isr``
    to ``new_isr`` (Kafka's ``PartitionChangeBuilder.maybePopulateTargetElr``).

    Args:
        config: the model's ``Config`` (the ELR option and ``min_insync_replicas``).
        elr: the ELR before the change.
        old_isr, new_isr: the ISR before and after.
        min_isr: the controller's min ISR (``min_isr()``, which a min ISR change moves);
            ``None``: ``min_insync_replicas``.

    Returns:
        ``()`` without ``eligible_leader_replicas`` or when the new ISR has at least
        ``min_isr`` members; else ``(elr ∪ old_isr) − new_isr``, sorted.
    """
    if min_isr is None:
        min_isr = config.min_insync_replicas
    if not config.eligible_leader_replicas or len(new_isr) >= min_isr:
        return ()
    return tuple(sorted(set(elr).union(old_isr).difference(new_isr)))


def encode(state: State) -> bytes:
    """The canonical encoding of a state: every variable, in a fixed order, as 64-bit ints.

    Variable-length parts are prefixed by their length, so the encoding is unambiguous.
    The ELR and the ``lossy`` flags are appended only when one of them is not at its
    initial value (an ELR member, or a lossy replica): the part before is self-delimiting,
    so this stays unambiguous, and every state of a pre-2.1 configuration (where both are
    constant) keeps the encoding and fingerprint it always had. The acknowledged records
    come next, only when there are some, and then always after the ELR part (written even
    when it is at its initial value). The AlterPartition request in flight comes last, only
    when there is one, after both parts (each written even when at its initial value): its
    three numbers (leader, 0 shrink or 1 expand, replica) follow a count-prefixed part, so
    every shape parses one way. A diverging response (``truncate_on_fetch`` only) writes,
    where a response writes its record count, ``-2`` (``-3`` once KAFKA-14704's follower
    has applied its high watermark) and then its diverging epoch: a count is never
    negative, so every response with records keeps its encoding. The operators' variables
    (docs/model.md, "Operator actions") come last, only when one is not at its initial value,
    after every part before (each written even when at its initial value; a missing request
    as three ``-1``): the two counters, the two min ISR steps, then each replica's ``shutting``.
    """
    q = state.quorum
    out: list[int] = [state.produced, state.crashes, NONE if q.leader is None else q.leader, q.epoch, len(q.isr)]
    append, extend = out.append, out.extend
    extend(q.isr)
    append(len(state.committed))
    for c in state.committed:
        extend(c)
    lossy = shutting = False
    for r in state.replicas:
        lossy = lossy or r.lossy
        shutting = shutting or r.shutting
        leader = r.leader
        log = r.log
        extend((1 if r.alive else 0, r.hw, r.epoch, NONE if leader is None else leader))
        extend(r.remote_leo)
        append(len(log))
        for entry in log:
            extend(entry)
        f = r.inflight
        if f is None:
            append(NONE)
        elif f.diverging is not None:
            mark = DIVERGING_APPLIED if f.applied else DIVERGING
            extend((f.leader, f.epoch, f.start, f.leader_hw, mark, f.diverging))
        else:
            extend((f.leader, f.epoch, f.start, f.leader_hw, len(f.records)))
            for entry in f.records:
                extend(entry)
    alter = q.alter
    ops = state.controlled_shutdowns or q.min_isr_step or state.leader_min_isr_step or state.disk_failures or shutting
    if q.elr or lossy or state.acked or alter is not None or ops:
        append(len(q.elr))
        extend(q.elr)
        extend(1 if r.lossy else 0 for r in state.replicas)
    if state.acked or alter is not None or ops:
        append(len(state.acked))
        for c in state.acked:
            extend(c)
    if alter is not None:
        extend((alter[0], 1 if alter[1] == EXPAND else 0, alter[2]))
    elif ops:
        extend((NONE, NONE, NONE))
    if ops:
        extend((state.controlled_shutdowns, state.disk_failures, q.min_isr_step, state.leader_min_isr_step))
        extend(1 if r.shutting else 0 for r in state.replicas)
    return _packer(len(out)).pack(*out)


def _packer(count: int, cache: dict[int, struct.Struct] = {}) -> struct.Struct:  # noqa: B006 (the cache)
    """The ``struct.Struct`` of ``count`` little-endian 64-bit ints (made once per count)."""
    packer = cache.get(count)
    if packer is None:
        packer = cache[count] = struct.Struct(f"<{count}q")
    return packer
