"""The state of the Kafka replication model (MODEL.md, "State").

States are frozen, slotted attrs classes holding only ints, bools, ``None`` and tuples,
so they are cheap to hash, compare and pickle. Replicas are numbered from 0 in the
spec's order; a record is the tuple ``(epoch, id)``.
"""

from __future__ import annotations

import struct

import attrs

Record = tuple  # (leader epoch it was written in, producer sequence number)
NONE = -1  # how "no replica" is written in the canonical encoding


@attrs.frozen
class Fetch:
    """A fetch response on its way to a follower."""

    leader: int
    epoch: int
    start: int
    records: tuple
    leader_hw: int


@attrs.frozen
class Replica:
    """One replica's durable and volatile state."""

    alive: bool
    log: tuple  # of Record; offset = index
    hw: int
    epoch: int  # -1 after a restart
    leader: int | None  # whom it believes leads; None after a restart
    remote_leo: tuple  # the leader's view of every replica's log end (own entry unused)
    inflight: Fetch | None = None
    lossy: bool = False

    @property
    def leo(self) -> int:
        return len(self.log)


@attrs.frozen
class Quorum:
    """The controller's view: leader, leader epoch and in-sync replicas (sorted ids)."""

    leader: int | None
    epoch: int
    isr: tuple
    elr: tuple = ()


@attrs.frozen
class State:
    """A whole model state, history (ghost) variables included.

    ``committed`` is the sorted tuple of ``(offset, epoch, id)`` of every record that was
    ever below a leader's high watermark.
    """

    replicas: tuple
    quorum: Quorum
    produced: int = 0
    crashes: int = 0
    committed: tuple = ()


def leads(state: State, r: int) -> bool:
    """Does replica ``r`` lead: alive, the quorum's leader, and on the quorum's epoch?"""
    rep = state.replicas[r]
    q = state.quorum
    return rep.alive and q.leader == r and rep.leader == r and rep.epoch == q.epoch


def leader_of(state: State) -> int | None:
    """The replica that leads, if any."""
    q = state.quorum.leader
    return q if q is not None and leads(state, q) else None


def encode(state: State) -> bytes:
    """The canonical encoding of a state: every variable, in a fixed order, as 64-bit ints.

    Variable-length parts are prefixed by their length, so the encoding is unambiguous.
    """
    q = state.quorum
    out = [state.produced, state.crashes, NONE if q.leader is None else q.leader, q.epoch, len(q.isr)]
    out.extend(q.isr)
    out.append(len(state.committed))
    for c in state.committed:
        out.extend(c)
    for r in state.replicas:
        out.append(1 if r.alive else 0)
        out.append(r.hw)
        out.append(r.epoch)
        out.append(NONE if r.leader is None else r.leader)
        out.extend(r.remote_leo)
        out.append(len(r.log))
        for e, i in r.log:
            out.append(e)
            out.append(i)
        f = r.inflight
        if f is None:
            out.append(NONE)
        else:
            out.extend((f.leader, f.epoch, f.start, f.leader_hw, len(f.records)))
            for e, i in f.records:
                out.append(e)
                out.append(i)
    return struct.pack(f"<{len(out)}q", *out)
