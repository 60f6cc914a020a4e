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

The columns are named after these fields (``RowCodec.PRODUCED``, ``RowCodec.Q_EPOCH``, per
replica ``RowCodec.HW``, ``RowCodec.LOG``, ...; ``RowCodec.column_names()`` lists them all):

- global: ``produced``, ``crashes``, ``quorum.leader``, ``quorum.epoch``, ``quorum.isr``
  and ``quorum.elr`` as bit masks (bit ``r`` = replica ``r``), then the committed set as
  two columns per record id ``i``: the offset and epoch at which record ``i`` is
  committed (``-1`` when it is not);
- per replica, one block each: ``alive``, ``hw``, ``epoch``, ``leader``, ``lossy``,
  ``remote_leo[0..n)``, the log's length, its records (``m`` slots of codes), and the
  in-flight response: leader, epoch, start offset, leader HW, number of records, their
  codes; with ``truncate_on_fetch`` one more, its diverging epoch ``E'`` (``-1`` for a
  response with records; a diverging response has no records and its start offset is
  ``O'``), and with ``KAFKA-14704`` in ``fetch_bugs`` one more, its applied mark (``1``
  once the follower took its high watermark, else ``-1``). Without the option the block
  ends at the records, so rows are what they were before it.

With ``acks`` set, two more columns per record id follow the last replica block: the
offset and epoch at which record ``i`` was acknowledged (``-1`` when it was not). Without
``acks`` they are absent, so rows and their fingerprints are what they were before. With
``alter_partition``, three last columns hold the AlterPartition request in flight: the
leader that sent it, its change (0 shrink, 1 expand) and the replica it names (all ``-1``
when none is in flight); without the option they are absent too. The operators' variables
come last, each only with its option: with ``max_controlled_shutdowns`` the replicas in
controlled shutdown (a bit mask) and the count of ControlledShutdown steps, with
``min_isr_changes`` the controller's min ISR step (and with ``min_isr_lag`` the leader's
broker's), with ``max_disk_failures`` the count of DiskFailure steps.

The committed set (and the acknowledged one) fits one slot per record id because a record keeps one offset and one
epoch forever: the leader writes record ``i`` once, at its log end, in its epoch, and
followers copy records to the same offsets. A row is padded with zero bytes to a
multiple of 8 bytes, so that it can be hashed as 64-bit words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .config import KAFKA_14704, Config
from .state import EXPAND, SHRINK, Fetch, Quorum, Replica, State

NONE = -1


class RowCodec:
    """The row layout of one configuration, and conversions between rows and states.

    Args:
        config: a ``model.Config``.

    Column indices are named int attributes, spelled after the fields of docs/model.md
    ("State"): the global ones (``PRODUCED``, ``Q_LEADER``, ...) are columns; the per-replica
    ones (``ALIVE``, ``LOG``, ...) are offsets inside a replica's block, so replica ``r``'s
    high watermark is column ``block(r) + HW``. A field of several columns (``REMOTE_LEO``,
    ``LOG``, ``COMMITTED_OFFSET``, ...) names its first; ``column_names()`` names them all.
    """

    # A replica block, in order: alive, hw, epoch, leader, lossy, remote_leo[0..n), ...
    ALIVE, HW, EPOCH, LEADER, LOSSY, REMOTE_LEO = range(6)

    NONE = NONE  # a column's "no value" (the properties' array forms read it here)

    def __init__(self, config: Config) -> None:
        # at least one record slot, so that no array of slots is empty
        n, m = config.n, max(config.max_messages, 1)
        largest = max(
            (config.max_leader_epoch + 1) * m,
            config.max_crashes,
            n + 1,
            (1 << n) - 1,
            config.max_controlled_shutdowns,
            config.max_disk_failures,
            len(config.min_isr_changes),
        )
        self.dtype = np.dtype(np.int8 if largest <= 127 else np.int16)
        self.n, self.m = n, m
        # the global columns: the history counters, the controller's quorum (ISR and ELR as
        # bit masks), then the committed set, one offset and one epoch per record id
        self.PRODUCED, self.CRASHES, self.Q_LEADER, self.Q_EPOCH, self.Q_ISR, self.Q_ELR = range(6)
        self.COMMITTED_OFFSET = 6  # m columns
        self.COMMITTED_EPOCH = 6 + m  # m columns
        self.GLOBAL = 6 + 2 * m  # the first replica block
        # ... the rest of a replica block, after REMOTE_LEO[0..n)
        self.LEO = self.REMOTE_LEO + n  # the log's length: its log end offset
        self.LOG = self.LEO + 1  # m columns: the records' codes
        self.INFLIGHT_LEADER = self.LOG + m  # the in-flight fetch response (none: -1)
        self.INFLIGHT_EPOCH = self.INFLIGHT_LEADER + 1
        self.INFLIGHT_START = self.INFLIGHT_LEADER + 2
        self.INFLIGHT_HW = self.INFLIGHT_LEADER + 3
        self.INFLIGHT_COUNT = self.INFLIGHT_LEADER + 4
        self.INFLIGHT_RECORDS = self.INFLIGHT_LEADER + 5  # m columns
        self.BLOCK = self.INFLIGHT_RECORDS + m  # the width of a block
        self._lay_out_fetch(config)
        self.used = self.GLOBAL + n * self.BLOCK
        self._lay_out_acks_and_alter(config)
        self._lay_out_operators(config)
        per_word = 8 // self.dtype.itemsize
        self.width = -(-self.used // per_word) * per_word  # columns; a multiple of 8 bytes

    def _lay_out_fetch(self, config: Config) -> None:
        """The columns of the fetch path at the end of a replica block (``truncate_on_fetch``)."""
        # truncation in the fetch path: a response's diverging epoch (-1: none, a response
        # with records; a diverging one's start is its diverging offset), and with
        # KAFKA-14704 its applied mark (1: its high watermark is taken, the truncation still
        # to come; -1 otherwise), at the end of the block, only with truncate_on_fetch
        self.fetch = bool(config.truncate_on_fetch)
        self.fetch_applied = self.fetch and KAFKA_14704 in config.fetch_bugs
        self.INFLIGHT_DIVERGING: int | None = None
        self.INFLIGHT_APPLIED: int | None = None
        if self.fetch:
            self.INFLIGHT_DIVERGING = self.BLOCK
            self.BLOCK += 1
            if self.fetch_applied:
                self.INFLIGHT_APPLIED = self.BLOCK
                self.BLOCK += 1

    def _lay_out_acks_and_alter(self, config: Config) -> None:
        """The acknowledged set and the AlterPartition request in flight, after the blocks."""
        m = self.m
        # the acknowledged set, after the blocks, only when acknowledgements are tracked
        self.acks = config.acks
        self.ACKED_OFFSET: int | None = None
        self.ACKED_EPOCH: int | None = None
        if self.acks is not None:
            self.ACKED_OFFSET, self.ACKED_EPOCH = self.used, self.used + m  # m columns each
            self.used += 2 * m
        # the AlterPartition request in flight, last, only with alter_partition: its leader,
        # its change (0 shrink, 1 expand) and its replica, all -1 when there is none
        self.alter = bool(config.alter_partition)
        self.ALTER_LEADER: int | None = None
        self.ALTER_CHANGE: int | None = None
        self.ALTER_REPLICA: int | None = None
        if self.alter:
            self.ALTER_LEADER, self.ALTER_CHANGE, self.ALTER_REPLICA = range(self.used, self.used + 3)
            self.used += 3

    def _lay_out_operators(self, config: Config) -> None:
        """The operators' columns, after everything else."""
        # the operators' variables (docs/model.md, "Operator actions"), after everything else,
        # each only with its option: with max_controlled_shutdowns the replicas in controlled
        # shutdown as a bit mask and the count of ControlledShutdown steps; with min_isr_changes
        # the controller's min ISR step (and with min_isr_lag the leader's broker's); with
        # max_disk_failures the count of DiskFailure steps
        self.SHUTTING: int | None = None
        self.CONTROLLED_SHUTDOWNS: int | None = None
        self.MIN_ISR_STEP: int | None = None
        self.LEADER_MIN_ISR_STEP: int | None = None
        self.DISK_FAILURES: int | None = None
        if config.max_controlled_shutdowns:
            self.SHUTTING, self.CONTROLLED_SHUTDOWNS = self.used, self.used + 1
            self.used += 2
        if config.min_isr_changes:
            self.MIN_ISR_STEP = self.used
            self.used += 1
            if config.min_isr_lag:
                self.LEADER_MIN_ISR_STEP = self.used
                self.used += 1
        if config.max_disk_failures:
            self.DISK_FAILURES = self.used
            self.used += 1

    def column_names(self) -> list[str]:
        """Every column's name, in order, as docs/model.md names the field it holds
        (``quorum.epoch``, ``r1.log[0]``, ``committed[0].offset``; ``padding`` after the
        last field): the layout, for a reviewer and for debugging a row."""
        n, m = self.n, self.m
        names = ["produced", "crashes", "quorum.leader", "quorum.epoch", "quorum.isr", "quorum.elr"]
        names += [f"committed[{i}].offset" for i in range(m)] + [f"committed[{i}].epoch" for i in range(m)]
        for r in range(n):
            fields = ["alive", "hw", "epoch", "leader", "lossy"]
            fields += [f"remote_leo[{f}]" for f in range(n)] + ["leo"] + [f"log[{k}]" for k in range(m)]
            fields += [
                "inflight.leader",
                "inflight.epoch",
                "inflight.start",
                "inflight.leader_hw",
                "inflight.count",
            ] + [f"inflight.records[{k}]" for k in range(m)]
            if self.fetch:
                fields += ["inflight.diverging"]
            if self.fetch_applied:
                fields += ["inflight.applied"]
            names += [f"r{r}.{f}" for f in fields]
        if self.acks is not None:
            names += [f"acked[{i}].offset" for i in range(m)] + [f"acked[{i}].epoch" for i in range(m)]
        if self.alter:
            names += ["quorum.alter.leader", "quorum.alter.change", "quorum.alter.replica"]
        if self.SHUTTING is not None:
            names += ["shutting", "controlled_shutdowns"]
        if self.MIN_ISR_STEP is not None:
            names += ["quorum.min_isr_step"]
        if self.LEADER_MIN_ISR_STEP is not None:
            names += ["leader_min_isr_step"]
        if self.DISK_FAILURES is not None:
            names += ["disk_failures"]
        return names + ["padding"] * (self.width - self.used)

    def block(self, r: int) -> int:
        """The first column of replica ``r``'s block."""
        return self.GLOBAL + r * self.BLOCK

    # -- states <-> rows ----------------------------------------------------------------

    def empty(self, count: int) -> np.ndarray:
        """``count`` rows with every field "none" and the padding zero."""
        rows = np.full((count, self.width), NONE, dtype=self.dtype)
        rows[:, self.used :] = 0
        return rows

    def encode(self, state: State) -> np.ndarray:
        """The row of ``state`` (a 1-d ``int8`` array of ``width`` bytes)."""
        row: np.ndarray = self.empty(1)[0]
        q = state.quorum
        row[self.PRODUCED] = state.produced
        row[self.CRASHES] = state.crashes
        row[self.Q_LEADER] = NONE if q.leader is None else q.leader
        row[self.Q_EPOCH] = q.epoch
        row[self.Q_ISR] = _mask(q.isr)
        row[self.Q_ELR] = _mask(q.elr)
        for offset, epoch, rid in state.committed:
            if row[self.COMMITTED_OFFSET + rid] != NONE:
                raise ValueError(f"record {rid} is committed at two offsets")
            row[self.COMMITTED_OFFSET + rid] = offset
            row[self.COMMITTED_EPOCH + rid] = epoch
        if state.acked:
            # the acknowledged columns exist exactly when acks are tracked
            acked_offset, acked_epoch = self.ACKED_OFFSET, self.ACKED_EPOCH
            if acked_offset is None or acked_epoch is None:
                raise ValueError("an acknowledged record in a configuration without acks")
            for offset, epoch, rid in state.acked:
                row[acked_offset + rid] = offset
                row[acked_epoch + rid] = epoch
        alter = q.alter
        if alter is not None:
            # the request's columns exist exactly with alter_partition
            lead, change, subject = self.ALTER_LEADER, self.ALTER_CHANGE, self.ALTER_REPLICA
            if lead is None or change is None or subject is None:
                raise ValueError("an AlterPartition request in a configuration without alter_partition")
            row[lead] = alter[0]
            row[change] = 1 if alter[1] == EXPAND else 0
            row[subject] = alter[2]
        self._encode_operators(row, state)
        for r, rep in enumerate(state.replicas):
            b = self.block(r)
            row[b + self.ALIVE] = rep.alive
            row[b + self.HW] = rep.hw
            row[b + self.EPOCH] = rep.epoch
            row[b + self.LEADER] = NONE if rep.leader is None else rep.leader
            row[b + self.LOSSY] = rep.lossy
            row[b + self.REMOTE_LEO : b + self.REMOTE_LEO + self.n] = rep.remote_leo
            row[b + self.LEO] = len(rep.log)
            for k, (e, i) in enumerate(rep.log):
                row[b + self.LOG + k] = e * self.m + i
            f = rep.inflight
            if f is not None:
                row[b + self.INFLIGHT_LEADER] = f.leader
                row[b + self.INFLIGHT_EPOCH] = f.epoch
                row[b + self.INFLIGHT_START] = f.start
                row[b + self.INFLIGHT_HW] = f.leader_hw
                row[b + self.INFLIGHT_COUNT] = len(f.records)
                for k, (e, i) in enumerate(f.records):
                    row[b + self.INFLIGHT_RECORDS + k] = e * self.m + i
                self._encode_diverging(row, b, f)
        return row

    def _encode_operators(self, row: np.ndarray, state: State) -> None:
        """The operators' variables of ``state`` into ``row`` (their columns exist exactly
        with their options; a state that needs a missing one cannot be written)."""
        shutting = _mask(r for r, rep in enumerate(state.replicas) if rep.shutting)
        q = state.quorum
        for column, value, what in (
            (self.SHUTTING, shutting, "a replica in controlled shutdown"),
            (self.CONTROLLED_SHUTDOWNS, state.controlled_shutdowns, "a controlled shutdown"),
            (self.MIN_ISR_STEP, q.min_isr_step, "a min ISR change"),
            (self.LEADER_MIN_ISR_STEP, state.leader_min_isr_step, "a lagging min ISR"),
            (self.DISK_FAILURES, state.disk_failures, "a disk failure"),
        ):
            if column is not None:
                row[column] = value
            elif value:
                raise ValueError(f"{what} in a configuration without its option")

    def _encode_diverging(self, row: np.ndarray, b: int, f: Fetch) -> None:
        """The diverging epoch of the response ``f`` and its applied mark, in the block at
        ``b`` (the columns exist exactly with truncate_on_fetch)."""
        if f.diverging is None and not f.applied:
            return
        column = self.INFLIGHT_DIVERGING
        if column is None:
            raise ValueError("a diverging fetch response in a configuration without truncate_on_fetch")
        if f.diverging is not None:
            row[b + column] = f.diverging
        if f.applied:
            if self.INFLIGHT_APPLIED is None:
                raise ValueError("an applied fetch response in a configuration without KAFKA-14704")
            row[b + self.INFLIGHT_APPLIED] = 1

    def decode(self, row: np.ndarray) -> State:
        """The ``State`` of a row (the inverse of ``encode``)."""
        v: list[int] = row.tolist()  # the row's bytes as Python ints, in one call
        n, m = self.n, self.m
        committed = tuple(
            sorted(
                (v[self.COMMITTED_OFFSET + i], v[self.COMMITTED_EPOCH + i], i)
                for i in range(m)
                if v[self.COMMITTED_OFFSET + i] != NONE
            )
        )
        reps = []
        for r in range(n):
            b = self.block(r)
            length = v[b + self.LEO]
            log = tuple(divmod(v[b + self.LOG + k], m) for k in range(length))
            inflight = None
            if v[b + self.INFLIGHT_LEADER] != NONE:
                count = v[b + self.INFLIGHT_COUNT]
                inflight = Fetch(
                    v[b + self.INFLIGHT_LEADER],
                    v[b + self.INFLIGHT_EPOCH],
                    v[b + self.INFLIGHT_START],
                    tuple(divmod(v[b + self.INFLIGHT_RECORDS + k], m) for k in range(count)),
                    v[b + self.INFLIGHT_HW],
                    **self._decode_diverging(v, b),
                )
            leader = v[b + self.LEADER]
            shutting = self.SHUTTING is not None and v[self.SHUTTING] >> r & 1 == 1
            reps.append(
                Replica(
                    bool(v[b + self.ALIVE]),
                    log,
                    v[b + self.HW],
                    v[b + self.EPOCH],
                    None if leader == NONE else leader,
                    tuple(v[b + self.REMOTE_LEO : b + self.REMOTE_LEO + n]),
                    inflight,
                    bool(v[b + self.LOSSY]),
                    shutting,
                )
            )
        ql = v[self.Q_LEADER]
        alter = None
        lead, change, subject = self.ALTER_LEADER, self.ALTER_CHANGE, self.ALTER_REPLICA
        if lead is not None and change is not None and subject is not None and v[lead] != NONE:
            alter = (v[lead], EXPAND if v[change] == 1 else SHRINK, v[subject])
        step = 0 if self.MIN_ISR_STEP is None else v[self.MIN_ISR_STEP]
        quorum = Quorum(
            None if ql == NONE else ql, v[self.Q_EPOCH], _ids(v[self.Q_ISR], n), _ids(v[self.Q_ELR], n), alter, step
        )
        acked: tuple[tuple[int, int, int], ...] = ()
        acked_offset, acked_epoch = self.ACKED_OFFSET, self.ACKED_EPOCH
        if acked_offset is not None and acked_epoch is not None:
            acked = tuple(
                sorted((v[acked_offset + i], v[acked_epoch + i], i) for i in range(m) if v[acked_offset + i] != NONE)
            )
        # without min_isr_lag the leader's broker reads the controller's step: its own stays 0
        leader_step = 0 if self.LEADER_MIN_ISR_STEP is None else v[self.LEADER_MIN_ISR_STEP]
        return State(
            tuple(reps),
            quorum,
            v[self.PRODUCED],
            v[self.CRASHES],
            committed,
            acked,
            0 if self.CONTROLLED_SHUTDOWNS is None else v[self.CONTROLLED_SHUTDOWNS],
            leader_step,
            0 if self.DISK_FAILURES is None else v[self.DISK_FAILURES],
        )

    def _decode_diverging(self, v: Sequence[int], b: int) -> dict[str, Any]:
        """The diverging fields of the response in the block at ``b`` of the row values ``v``
        (none without truncate_on_fetch)."""
        column = self.INFLIGHT_DIVERGING
        if column is None:
            return {}
        out: dict[str, Any] = {}
        if v[b + column] != NONE:
            out["diverging"] = v[b + column]
        if self.INFLIGHT_APPLIED is not None and v[b + self.INFLIGHT_APPLIED] == 1:
            out["applied"] = True
        return out

    # -- symmetry -----------------------------------------------------------------------

    def permuter(self, perm: Sequence[int]) -> Callable[[np.ndarray], np.ndarray]:
        """A function mapping an array of rows to the rows with replica ``r`` renamed
        ``perm[r]``: blocks move, ``remote_leo`` entries move, and every replica id
        (leaders, in-flight leader, quorum leader, ISR and ELR bits) is renamed."""
        n = self.n
        src = np.arange(self.width)
        for r in range(n):
            new_b, old_b = self.block(perm[r]), self.block(r)
            src[new_b : new_b + self.BLOCK] = np.arange(old_b, old_b + self.BLOCK)
        # remote_leo[f] of the old block lands at remote_leo[perm[f]] of the new one
        for r in range(n):
            new_b, old_b = self.block(perm[r]), self.block(r)
            for f in range(n):
                src[new_b + self.REMOTE_LEO + perm[f]] = old_b + self.REMOTE_LEO + f
        id_cols = [self.Q_LEADER] + [self.block(r) + c for r in range(n) for c in (self.LEADER, self.INFLIGHT_LEADER)]
        if self.ALTER_LEADER is not None and self.ALTER_REPLICA is not None:
            id_cols += [self.ALTER_LEADER, self.ALTER_REPLICA]
        id_lut = np.array([NONE] + list(perm), dtype=self.dtype)  # index value + 1
        mask_lut = np.array([_mask(perm[r] for r in range(n) if x >> r & 1) for x in range(1 << n)], dtype=self.dtype)
        mask_cols = [self.Q_ISR, self.Q_ELR]
        if self.SHUTTING is not None:  # a replica's controlled shutdown moves with it
            mask_cols.append(self.SHUTTING)

        def apply(rows: np.ndarray) -> np.ndarray:
            out = np.ascontiguousarray(rows[:, src])
            for c in id_cols:
                out[:, c] = id_lut[out[:, c].astype(np.intp) + 1]
            for c in mask_cols:
                out[:, c] = mask_lut[out[:, c].astype(np.intp) & ((1 << n) - 1)]
            return out

        return apply


def _mask(ids: Iterable[int]) -> int:
    out = 0
    for r in ids:
        out |= 1 << r
    return out


def _ids(mask: int, n: int) -> tuple[int, ...]:
    return tuple(r for r in range(n) if mask >> r & 1)


def lexicographic_min(candidates: list[np.ndarray]) -> np.ndarray:
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
