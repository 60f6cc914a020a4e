"""The batch kernel's shared rules over rows: who leads, HW(l) with the records it commits
and acknowledges, ``elr_after``, truncating a log, dropping an in-flight response and
dropping an AlterPartition request.

Every action of ``model.batch_actions`` is built from these;
each follows the rule of docs/model.md its name gives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .config import ACKS_ALL, KAFKA_13141
from .rows import NONE

if TYPE_CHECKING:  # for the annotations only
    from .config import Config
    from .rows import RowCodec

# The controller's or the leader's min ISR per row: an array, or one value for every row.
MinIsr = np.ndarray | int

POPCOUNT = np.array([bin(x).count("1") for x in range(256)], dtype=np.int8)


class RowRules:
    """The rules the batch actions share, over the rows of one configuration.

    Args:
        codec: the configuration's ``model.rows.RowCodec``.
        config: the ``model.Config``.
    """

    def __init__(self, codec: RowCodec, config: Config) -> None:
        self.codec = codec
        self.config = config
        self.n, self.m = codec.n, codec.m
        # KAFKA-13141: a diverging fetch still moves the follower's log end on the leader
        self.bug_13141 = codec.fetch and config.has_bug(KAFKA_13141)
        # the min ISR after each number of ChangeMinIsr steps (min_isr_changes), indexed by a
        # step column: the controller's (elr_after) and the leader's broker's (Produce's
        # guard, the HW gate, acks=all); None when min ISR never changes
        changes = config.min_isr_changes
        self.min_isr_values: np.ndarray | None = None
        if changes:
            self.min_isr_values = np.array([config.min_isr_at(k) for k in range(len(changes) + 1)], dtype=np.int64)

    # -- helpers over arrays of rows ------------------------------------------------------

    def leads(self, rows: np.ndarray) -> np.ndarray:
        """The replica that leads each row, or -1."""
        c = self.codec
        lead = np.full(len(rows), -1, dtype=np.int64)
        ql, qe = rows[:, c.Q_LEADER], rows[:, c.Q_EPOCH]
        for r in range(self.n):
            b = c.block(r)
            ok = (ql == r) & (rows[:, b + c.ALIVE] == 1) & (rows[:, b + c.LEADER] == r) & (rows[:, b + c.EPOCH] == qe)
            lead[ok] = r
        return lead

    def min_isr(self, rows: np.ndarray) -> MinIsr:
        """The controller's min ISR in each row (``min_isr()`` of docs/model.md): an array,
        or ``min_insync_replicas`` itself when min ISR never changes."""
        values = self.min_isr_values
        if values is None:
            return self.config.min_insync_replicas
        out: np.ndarray = values[rows[:, self.codec.MIN_ISR_STEP].astype(np.intp)]
        return out

    def leader_min_isr(self, rows: np.ndarray) -> MinIsr:
        """The min ISR the leader's broker uses in each row (``leader_min_isr()``): the
        controller's, or with ``min_isr_lag`` the value of the changes it has applied."""
        values, c = self.min_isr_values, self.codec
        if values is None:
            return self.config.min_insync_replicas
        column = c.MIN_ISR_STEP if c.LEADER_MIN_ISR_STEP is None else c.LEADER_MIN_ISR_STEP
        out: np.ndarray = values[rows[:, column].astype(np.intp)]
        return out

    def isr_size(self, rows: np.ndarray) -> np.ndarray:
        """The size of each row's ISR."""
        out: np.ndarray = POPCOUNT[rows[:, self.codec.Q_ISR].astype(np.uint8)]
        return out

    def alive_mask(self, rows: np.ndarray) -> np.ndarray:
        c = self.codec
        out = np.zeros(len(rows), dtype=np.int64)
        for r in range(self.n):
            out |= (rows[:, c.block(r) + c.ALIVE].astype(np.int64) & 1) << r
        return out

    def leso(self, rows: np.ndarray, l: int) -> np.ndarray:
        """The leader's epoch start offset: the first offset of its log whose record has
        its epoch, or its log end."""
        c = self.codec
        b = c.block(l)
        length = rows[:, b + c.LEO].astype(np.int64)
        out = length.copy()
        epochs = rows[:, b + c.LOG : b + c.LOG + self.m] // self.m  # -1 (none) stays -1
        match = (epochs == rows[:, b + c.EPOCH : b + c.EPOCH + 1]) & (np.arange(self.m) < length[:, None])
        has = match.any(axis=1)
        out[has] = match[has].argmax(axis=1)
        return out

    def advance_hw(self, s: np.ndarray, l: int) -> None:
        """HW(l) on rows ``s`` (in place): the leader's HW rises to the least log end in the
        ISR, and the records it passes become committed."""
        c, cfg = self.codec, self.config
        b = c.block(l)
        m = s[:, b + c.LEO].astype(np.int64)
        isr = s[:, c.Q_ISR].astype(np.int64)
        if c.alter:  # the maximal ISR: l's own pending expansion counts its replica already
            pending = (s[:, c.ALTER_LEADER] == l) & (s[:, c.ALTER_CHANGE] == 1)
            isr = isr | np.where(pending, np.left_shift(1, np.maximum(s[:, c.ALTER_REPLICA], 0).astype(np.int64)), 0)
        for f in range(self.n):
            if f != l:
                inside = (isr >> f & 1) == 1
                np.minimum(m, np.where(inside, s[:, b + c.REMOTE_LEO + f], m), out=m)
        hw = s[:, b + c.HW].astype(np.int64)
        moves = m > hw
        gate = self.leader_min_isr(s)  # no step that moves an HW changes a min ISR
        if cfg.hw_requires_min_isr:
            moves &= POPCOUNT[s[:, c.Q_ISR].astype(np.uint8)] >= gate
        if not moves.any():
            return
        idx = np.nonzero(moves)[0]
        lo, hi = hw[idx], m[idx]
        acks_all = cfg.acks == ACKS_ALL
        if acks_all:  # acks=all: acknowledged only with the ISR (after the step) at min ISR
            enough = POPCOUNT[s[idx, c.Q_ISR].astype(np.uint8)] >= (gate[idx] if isinstance(gate, np.ndarray) else gate)
        for o in range(self.m):
            sel = (lo <= o) & (o < hi)
            if not sel.any():
                continue
            ri = idx[sel]
            epoch, rid = np.divmod(s[ri, b + c.LOG + o].astype(np.int64), self.m)
            s[ri, c.COMMITTED_OFFSET + rid] = o
            s[ri, c.COMMITTED_EPOCH + rid] = epoch
            if acks_all:
                # ... and only records of the leader's own epoch (their requests wait there)
                ack = enough[sel] & (epoch == s[ri, b + c.EPOCH])
                s[ri[ack], c.ACKED_OFFSET + rid[ack]] = o
                s[ri[ack], c.ACKED_EPOCH + rid[ack]] = epoch[ack]
        s[idx, b + c.HW] = hi

    def elr_after(
        self, s: np.ndarray, old_isr: np.ndarray, new_isr: np.ndarray, elr: np.ndarray | None = None
    ) -> np.ndarray:
        """``elr_after(I, I')`` of docs/model.md as bit masks (int64 arrays), from the ELR
        ``elr`` (an array; ``None``: the rows' own), at the controller's min ISR."""
        cfg = self.config
        if not cfg.eligible_leader_replicas:
            return np.zeros(len(s), dtype=np.int64)
        if elr is None:
            elr = s[:, self.codec.Q_ELR].astype(np.int64)
        out: np.ndarray = (elr | old_isr) & ~new_isr
        out[POPCOUNT[new_isr.astype(np.uint8)] >= self.min_isr(s)] = 0
        return out

    def cut_log(self, s: np.ndarray, b: int, t: np.ndarray) -> None:
        """Truncate the log of the block at ``b`` to ``t`` (an array) in rows ``s``."""
        c = self.codec
        gone = np.arange(self.m) >= t[:, None]
        s[:, b + c.LOG : b + c.LOG + self.m][gone] = NONE
        s[:, b + c.LEO] = t

    def drop_request(self, s: np.ndarray, where: np.ndarray | None = None) -> None:
        """No AlterPartition request in flight any more (in the rows ``where``, or all)."""
        first, last = self.codec.ALTER_LEADER, self.codec.ALTER_REPLICA
        assert first is not None and last is not None  # the columns of alter_partition
        if where is None:
            s[:, first : last + 1] = NONE
        else:
            s[where, first : last + 1] = NONE

    def clear_inflight(self, s: np.ndarray, b: int) -> None:
        """No response in flight to the replica whose block is at ``b`` (the in-flight
        fields end the block)."""
        c = self.codec
        s[:, b + c.INFLIGHT_LEADER : b + c.BLOCK] = NONE

    def install_leader(self, s: np.ndarray, cand: int, isr: np.ndarray, elr: np.ndarray) -> None:
        """``cand`` leads in a new leader epoch with the ISR ``isr`` and the ELR ``elr``, and takes
        over at once (ElectLeader's effect; a controlled shutdown's leader move): the old
        leader's AlterPartition request dropped, the new leader's view of the others' log ends
        and its response in flight cleared, its high watermark advanced."""
        c = self.codec
        b = c.block(cand)
        s[:, c.Q_ISR] = isr
        s[:, c.Q_ELR] = elr
        if c.alter:  # the old leader's request carries the old leader epoch
            self.drop_request(s)
        s[:, c.Q_LEADER] = cand
        s[:, c.Q_EPOCH] += 1
        s[:, b + c.LEADER] = cand
        s[:, b + c.EPOCH] = s[:, c.Q_EPOCH]
        s[:, b + c.REMOTE_LEO : b + c.REMOTE_LEO + self.n] = 0
        self.clear_inflight(s, b)
        self.advance_hw(s, cand)

    def end_offset_for(
        self, rows: np.ndarray, b: int, epoch: np.ndarray, own: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``EO(r, E)`` of docs/model.md for the replica whose block is at ``b``, in every
        row at once: the end offset of epoch ``epoch`` (an array) by the replica's epoch
        cache, Kafka's ``endOffsetFor``.

        The cache holds each epoch of a record of the log at its first offset; ``own``
        (an array, or ``None`` for a follower) adds a leader's own epoch at its epoch start
        offset (``leso``: that epoch's first offset, or the log end when it has none).

        Returns ``(epochs, offsets, defined)``: where ``epoch`` is the largest cached epoch,
        ``(epoch, LEO)``; else with ``H`` the least cached epoch above it (none: not
        ``defined``) and ``h`` its offset, ``(F, h)`` for the largest cached epoch ``F`` at
        most ``epoch``, or ``(epoch, h)`` when there is none.
        """
        c, m = self.codec, self.m
        big = np.int64(1 << 30)
        length = rows[:, b + c.LEO].astype(np.int64)
        epochs = rows[:, b + c.LOG : b + c.LOG + m].astype(np.int64) // m  # -1 (none) stays -1
        valid = np.arange(m) < length[:, None]
        e = epoch[:, None]
        largest = np.where(valid, epochs, -1).max(axis=1)
        above = np.where(valid & (epochs > e), epochs, big).min(axis=1)
        below = np.where(valid & (epochs <= e), epochs, -1).max(axis=1)
        if own is not None:
            largest = np.maximum(largest, own)
            above = np.where(own > epoch, np.minimum(above, own), above)
            below = np.where(own <= epoch, np.maximum(below, own), below)
        # the first offset of epoch H, or the log end (a leader's own epoch with no record)
        first = valid & (epochs == above[:, None])
        h = np.where(first.any(axis=1), first.argmax(axis=1), length)
        top = epoch == largest
        out_epoch = np.where(top, epoch, np.where(below >= 0, below, epoch))
        out_offset = np.where(top, length, h)
        return out_epoch, out_offset, top | (above < big)
