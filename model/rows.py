"""Fixed-width rows: the Kafka model's states as rows of small integers.

The batch kernel (``model.batch``) works on a numpy array of rows, one state a row, so
that every action is a handful of array operations over a whole frontier chunk. Every
field is bounded by the spec's constants, so one signed byte holds each, and a row has
the same width for every state of a configuration. ``RowCodec.encode`` and
``RowCodec.decode`` convert between rows and the readable attrs ``State``; the attrs
model stays the reference that the rows are tested against.

Layout (one column per field, ``int8`` when every value fits, else ``int16``; ``-1`` is
"none" and pads unused slots). A record ``(epoch, id)`` is one column, its *code*
``epoch * m + id`` where ``m`` is the number of record slots (``max_messages``, at least
1): ids are below ``m``, so the code is unambiguous, and two records are equal exactly
when their codes are.

- global: ``produced``, ``crashes``, ``quorum.leader``, ``quorum.epoch``, ``quorum.isr``
  and ``quorum.elr`` as bit masks (bit ``r`` = replica ``r``), then the committed set as
  two columns per record id ``i``: the offset and epoch at which record ``i`` is
  committed (``-1`` when it is not);
- per replica, one block each: ``alive``, ``hw``, ``epoch``, ``leader``, ``lossy``,
  ``remote_leo[0..n)``, the log's length, its records (``m`` slots of codes), and the
  in-flight response: leader, epoch, start offset, leader HW, number of records, their
  codes.

With ``acks`` set, two more columns per record id follow the last replica block: the
offset and epoch at which record ``i`` was acknowledged (``-1`` when it was not). Without
``acks`` they are absent, so rows and their fingerprints are what they were before.

The committed set (and the acknowledged one) fits one slot per record id because a record keeps one offset and one
epoch forever: the leader writes record ``i`` once, at its log end, in its epoch, and
followers copy records to the same offsets. A row is padded with zero bytes to a
multiple of 8 bytes, so that it can be hashed as 64-bit words.
"""

from __future__ import annotations

import numpy as np

from .state import Fetch, Quorum, Replica, State

NONE = -1


class RowCodec:
    """The row layout of one configuration, and conversions between rows and states.

    Args:
        config: a ``model.Config``.

    Column indices are plain int attributes (``PROD``, ``QL``, ...) and, per replica
    ``r``, ``block(r) + ALIVE`` and so on.
    """

    # offsets inside a replica block
    ALIVE, HW, EP, LDR, LOSSY, REM = range(6)

    def __init__(self, config):
        # at least one record slot, so that no array of slots is empty
        n, m = config.n, max(config.max_messages, 1)
        largest = max((config.max_leader_epoch + 1) * m, config.max_crashes, n + 1, (1 << n) - 1)
        self.dtype = np.dtype(np.int8 if largest <= 127 else np.int16)
        self.n, self.m = n, m
        self.PROD, self.CRASH, self.QL, self.QE, self.ISR, self.ELR = range(6)
        self.COFF = 6
        self.CEP = 6 + m
        self.GLOBAL = 6 + 2 * m
        # inside a block, after REM[0..n)
        self.LEN = self.REM + n
        self.LOG = self.LEN + 1
        self.IL = self.LOG + m
        self.IE, self.IS, self.IH, self.IN = self.IL + 1, self.IL + 2, self.IL + 3, self.IL + 4
        self.IREC = self.IL + 5
        self.BLOCK = self.IREC + m
        self.used = self.GLOBAL + n * self.BLOCK
        # the acknowledged set, after the blocks, only when acknowledgements are tracked
        self.acks = getattr(config, "acks", None)
        self.AOFF = self.AEP = None
        if self.acks is not None:
            self.AOFF, self.AEP = self.used, self.used + m
            self.used += 2 * m
        per_word = 8 // self.dtype.itemsize
        self.width = -(-self.used // per_word) * per_word  # columns; a multiple of 8 bytes

    def block(self, r: int) -> int:
        """The first column of replica ``r``'s block."""
        return self.GLOBAL + r * self.BLOCK

    # -- states <-> rows ----------------------------------------------------------------

    def empty(self, count: int) -> np.ndarray:
        """``count`` rows with every field "none" and the padding zero."""
        rows = np.full((count, self.width), NONE, dtype=self.dtype)
        rows[:, self.used:] = 0
        return rows

    def encode(self, state: State) -> np.ndarray:
        """The row of ``state`` (a 1-d ``int8`` array of ``width`` bytes)."""
        row = self.empty(1)[0]
        q = state.quorum
        row[self.PROD] = state.produced
        row[self.CRASH] = state.crashes
        row[self.QL] = NONE if q.leader is None else q.leader
        row[self.QE] = q.epoch
        row[self.ISR] = _mask(q.isr)
        row[self.ELR] = _mask(getattr(q, "elr", ()))
        for offset, epoch, rid in state.committed:
            if row[self.COFF + rid] != NONE:
                raise ValueError(f"record {rid} is committed at two offsets")
            row[self.COFF + rid] = offset
            row[self.CEP + rid] = epoch
        if state.acked:
            if self.acks is None:
                raise ValueError("an acknowledged record in a configuration without acks")
            for offset, epoch, rid in state.acked:
                row[self.AOFF + rid] = offset
                row[self.AEP + rid] = epoch
        for r, rep in enumerate(state.replicas):
            b = self.block(r)
            row[b + self.ALIVE] = rep.alive
            row[b + self.HW] = rep.hw
            row[b + self.EP] = rep.epoch
            row[b + self.LDR] = NONE if rep.leader is None else rep.leader
            row[b + self.LOSSY] = getattr(rep, "lossy", False)
            row[b + self.REM:b + self.REM + self.n] = rep.remote_leo
            row[b + self.LEN] = len(rep.log)
            for k, (e, i) in enumerate(rep.log):
                row[b + self.LOG + k] = e * self.m + i
            f = rep.inflight
            if f is not None:
                row[b + self.IL] = f.leader
                row[b + self.IE] = f.epoch
                row[b + self.IS] = f.start
                row[b + self.IH] = f.leader_hw
                row[b + self.IN] = len(f.records)
                for k, (e, i) in enumerate(f.records):
                    row[b + self.IREC + k] = e * self.m + i
        return row

    def decode(self, row) -> State:
        """The ``State`` of a row (the inverse of ``encode``)."""
        v = [int(x) for x in row]
        n, m = self.n, self.m
        committed = tuple(sorted(
            (v[self.COFF + i], v[self.CEP + i], i) for i in range(m) if v[self.COFF + i] != NONE))
        reps = []
        for r in range(n):
            b = self.block(r)
            length = v[b + self.LEN]
            log = tuple(divmod(v[b + self.LOG + k], m) for k in range(length))
            inflight = None
            if v[b + self.IL] != NONE:
                count = v[b + self.IN]
                inflight = Fetch(
                    v[b + self.IL], v[b + self.IE], v[b + self.IS],
                    tuple(divmod(v[b + self.IREC + k], m) for k in range(count)),
                    v[b + self.IH])
            leader = v[b + self.LDR]
            reps.append(Replica(
                bool(v[b + self.ALIVE]), log, v[b + self.HW], v[b + self.EP],
                None if leader == NONE else leader,
                tuple(v[b + self.REM:b + self.REM + n]), inflight, bool(v[b + self.LOSSY])))
        ql = v[self.QL]
        quorum = Quorum(None if ql == NONE else ql, v[self.QE], _ids(v[self.ISR], n),
                        _ids(v[self.ELR], n))
        acked = ()
        if self.acks is not None:
            acked = tuple(sorted(
                (v[self.AOFF + i], v[self.AEP + i], i) for i in range(m) if v[self.AOFF + i] != NONE))
        return State(tuple(reps), quorum, v[self.PROD], v[self.CRASH], committed, acked)

    # -- symmetry -----------------------------------------------------------------------

    def permuter(self, perm):
        """A function mapping an array of rows to the rows with replica ``r`` renamed
        ``perm[r]``: blocks move, ``remote_leo`` entries move, and every replica id
        (leaders, in-flight leader, quorum leader, ISR and ELR bits) is renamed."""
        n = self.n
        src = np.arange(self.width)
        for r in range(n):
            new_b, old_b = self.block(perm[r]), self.block(r)
            src[new_b:new_b + self.BLOCK] = np.arange(old_b, old_b + self.BLOCK)
        # remote_leo[f] of the old block lands at remote_leo[perm[f]] of the new one
        for r in range(n):
            new_b, old_b = self.block(perm[r]), self.block(r)
            for f in range(n):
                src[new_b + self.REM + perm[f]] = old_b + self.REM + f
        id_cols = [self.QL] + [self.block(r) + c for r in range(n) for c in (self.LDR, self.IL)]
        id_lut = np.array([NONE] + list(perm), dtype=self.dtype)  # index value + 1
        mask_lut = np.array([_mask(perm[r] for r in range(n) if x >> r & 1) for x in range(1 << n)],
                            dtype=self.dtype)
        mask_cols = [self.ISR, self.ELR]

        def apply(rows):
            out = np.ascontiguousarray(rows[:, src])
            for c in id_cols:
                out[:, c] = id_lut[out[:, c].astype(np.intp) + 1]
            for c in mask_cols:
                out[:, c] = mask_lut[out[:, c].astype(np.intp) & ((1 << n) - 1)]
            return out

        return apply


def _mask(ids) -> int:
    out = 0
    for r in ids:
        out |= 1 << r
    return out


def _ids(mask: int, n: int) -> tuple:
    return tuple(r for r in range(n) if mask >> r & 1)


def lexicographic_min(candidates):
    """The least row, byte by byte, among several arrays of rows (same shape): a list
    of arrays, one per permutation; returns one array of rows."""
    best = candidates[0].copy()
    # Compare rows as big-endian 64-bit words: the same order as their bytes.
    bw = best.view(">u8")
    for cand in candidates[1:]:
        cw = cand.view(">u8")
        less = np.zeros(len(best), dtype=bool)
        equal = np.ones(len(best), dtype=bool)
        for j in range(bw.shape[1]):
            a, b = cw[:, j], bw[:, j]
            less |= equal & (a < b)
            equal &= a == b
        best[less] = cand[less]
    return best
