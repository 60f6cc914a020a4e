"""The batch kernel: the Kafka model's nine actions over arrays of rows.

``KafkaBatchKernel.expand(rows)`` computes every successor of every row of a frontier
chunk with array operations: an action's enabledness is a boolean mask over the chunk,
its effect a few column updates on a copy of the enabled rows. It returns the
successors with, for each, the index of its parent row, its *choice* (its position among
the parent's enabled actions, exactly as ``KafkaModel.successors`` orders them: actions
1–9, then replica, then cut point) and its action code. The attrs model in
``model.kafka`` is the reference: differential tests check that both give the same
successors in the same order, state by state.

Everything here follows docs/model.md action by action; the comments name the rule where
the array form hides it.
"""

from __future__ import annotations

import numpy as np

from kmc.checker.protocol import ALWAYS, POSSIBLY, STEP

from .actions import (
    ACTION_NAMES,
    BECOME_FOLLOWER_CODE as BECOME_FOLLOWER,
    CRASH_CODE as CRASH,
    ELECT_LEADER_CODE as ELECT_LEADER,
    EXPAND_ISR_CODE as EXPAND_ISR,
    FETCH_REQUEST_CODE as FETCH_REQUEST,
    FETCH_RESPONSE_CODE as FETCH_RESPONSE,
    PRODUCE_CODE as PRODUCE,
    RESTART_CODE as RESTART,
    SHRINK_ISR_CODE as SHRINK_ISR,
    Action,
)
from .config import ACKS_ALL, ACKS_ONE, HIGH_WATERMARK, LEADER_EPOCH, LEADER_EPOCH_21
from .rows import NONE, RowCodec, lexicographic_min
from .symmetry import symmetries

_POPCOUNT = np.array([bin(x).count("1") for x in range(256)], dtype=np.int8)


class KafkaBatchKernel:
    """The batch form of ``KafkaModel(config)``.

    Args:
        config: a ``model.Config``.
    """

    action_names = ACTION_NAMES

    def __init__(self, config):
        self.config = config
        self.codec = c = RowCodec(config)
        self.width = c.width
        self.n, self.m = c.n, c.m
        self._perms = None

    # -- the protocol the batch engine uses --------------------------------------------

    def encode(self, state):
        return self.codec.encode(state)

    def decode(self, row):
        return self.codec.decode(row)

    def init_rows(self, states):
        """The rows of ``states`` (the model's initial states), in order."""
        return np.stack([self.codec.encode(s) for s in states])

    def action(self, code, replica, cut=None):
        return Action(ACTION_NAMES[code], replica, cut)

    def canonical(self, rows):
        """The least row over the allowed replica permutations of each row (symmetry)."""
        if self._perms is None:
            self._perms = [self.codec.permuter(p) for p in symmetries(self.config)]
        if len(self._perms) == 1:
            return rows
        return lexicographic_min([p(rows) for p in self._perms])

    # -- successors ---------------------------------------------------------------------

    def expand(self, rows):
        """Every successor of every row.

        Returns ``(parents, choices, codes, successors)``: ``parents`` (``int64``) the
        index of each successor's parent in ``rows``, ``choices`` (``int16``) its position
        among the parent's enabled actions, ``codes`` (``int8``) its action (an index of
        ``ACTION_NAMES``), and ``successors`` the rows. Successors come grouped by
        action, replica and cut point, each group in parent order; sort by
        ``(parents, choices)`` for the model's order.
        """
        g = _Gen(self, rows)
        cfg = self.config
        c = self.codec
        n = self.n
        lead = g.lead
        # 1. Produce
        if cfg.max_messages and cfg.acks == ACKS_ONE:
            # acks=1: any replica that believes it leads, min ISR not applied
            room = rows[:, c.PRODUCED] < cfg.max_messages
            for l in range(n):
                b = c.block(l)
                ok = room & (rows[:, b + c.ALIVE] == 1) & (rows[:, b + c.LEADER] == l)
                g.emit(PRODUCE, ok, self._produce_acks_one, l)
        elif cfg.max_messages:
            ok = (lead >= 0) & (rows[:, c.PRODUCED] < cfg.max_messages) & (g.isr_size >= cfg.min_insync_replicas)
            for l in range(n):
                g.emit(PRODUCE, ok & (lead == l), self._produce, l)
        # 2. FetchRequest(f) from the leader l
        for f in range(n):
            bf = c.block(f)
            base = (rows[:, bf + c.ALIVE] == 1) & (rows[:, bf + c.INFLIGHT_LEADER] == NONE)
            for l in range(n):
                if l == f:
                    continue
                bl = c.block(l)
                ok = (base & (lead == l) & (rows[:, bf + c.LEADER] == l)
                      & (rows[:, bf + c.EPOCH] == rows[:, bl + c.EPOCH]))
                g.emit(FETCH_REQUEST, ok, self._fetch_request, f, l)
        # 3. FetchResponse(f)
        for f in range(n):
            g.emit(FETCH_RESPONSE, rows[:, c.block(f) + c.INFLIGHT_LEADER] != NONE, self._fetch_response, f)
        # 4. Crash(r), one successor per cut point with unflushed loss
        can_crash = rows[:, c.CRASHES] < cfg.max_crashes
        for r in range(n):
            b = c.block(r)
            ok = can_crash & (rows[:, b + c.ALIVE] == 1)
            if cfg.unflushed_loss:
                length = rows[:, b + c.LEO]
                for cut in range(self.m + 1):
                    g.emit(CRASH, ok & (cut <= length), self._crash, r, cut)
            else:
                g.emit(CRASH, ok, self._crash, r, None)
        # 5. Restart(r)
        for r in range(n):
            g.emit(RESTART, rows[:, c.block(r) + c.ALIVE] == 0, self._restart, r)
        # 6. ElectLeader(n)
        self._elections(g, rows)
        # 7. BecomeFollower(r), truncating against the quorum leader ql
        ql = rows[:, c.Q_LEADER]
        qe = rows[:, c.Q_EPOCH]
        for r in range(n):
            b = c.block(r)
            base = (rows[:, b + c.ALIVE] == 1) & (rows[:, b + c.EPOCH] < qe)
            for l in range(n):
                if l == r:
                    continue
                ok = base & (ql == l)
                if cfg.truncation != HIGH_WATERMARK:
                    ok &= lead == l  # it answers OffsetsForLeaderEpoch
                g.emit(BECOME_FOLLOWER, ok, self._become_follower, r, l)
        # 8. ShrinkIsr(r) and 9. ExpandIsr(r), by the leader l
        isr = rows[:, c.Q_ISR].astype(np.int64)
        for r in range(n):
            b = c.block(r)
            in_isr = (isr >> r & 1) == 1
            for l in range(n):
                if l == r:
                    continue
                bl = c.block(l)
                lagging = (rows[:, b + c.ALIVE] == 0) | (rows[:, bl + c.REMOTE_LEO + r] < rows[:, bl + c.LEO])
                g.emit(SHRINK_ISR, (lead == l) & in_isr & lagging, self._shrink, r, l)
        for r in range(n):
            b = c.block(r)
            out_isr = (isr >> r & 1) == 0
            for l in range(n):
                if l == r:
                    continue
                bl = c.block(l)
                remote = rows[:, bl + c.REMOTE_LEO + r]
                ok = ((lead == l) & out_isr & (rows[:, b + c.ALIVE] == 1) & (rows[:, b + c.LEADER] == l)
                      & (rows[:, b + c.EPOCH] == qe) & (remote >= rows[:, bl + c.HW]))
                if cfg.truncation == LEADER_EPOCH_21:
                    ok &= remote >= self._leso(rows, l)  # KAFKA-7128
                g.emit(EXPAND_ISR, ok, self._expand, r, l)
        return g.result()

    # -- helpers over arrays of rows ------------------------------------------------------

    def leads(self, rows):
        """The replica that leads each row, or -1."""
        c = self.codec
        lead = np.full(len(rows), -1, dtype=np.int64)
        ql, qe = rows[:, c.Q_LEADER], rows[:, c.Q_EPOCH]
        for r in range(self.n):
            b = c.block(r)
            ok = (ql == r) & (rows[:, b + c.ALIVE] == 1) & (rows[:, b + c.LEADER] == r) & (rows[:, b + c.EPOCH] == qe)
            lead[ok] = r
        return lead

    def _isr_size(self, rows):
        return _POPCOUNT[rows[:, self.codec.Q_ISR].astype(np.uint8)]

    def alive_mask(self, rows):
        c = self.codec
        out = np.zeros(len(rows), dtype=np.int64)
        for r in range(self.n):
            out |= (rows[:, c.block(r) + c.ALIVE].astype(np.int64) & 1) << r
        return out

    def _leso(self, rows, l):
        """The leader's epoch start offset: the first offset of its log whose record has
        its epoch, or its log end."""
        c = self.codec
        b = c.block(l)
        length = rows[:, b + c.LEO].astype(np.int64)
        out = length.copy()
        epochs = rows[:, b + c.LOG:b + c.LOG + self.m] // self.m  # -1 (none) stays -1
        match = (epochs == rows[:, b + c.EPOCH:b + c.EPOCH + 1]) & (np.arange(self.m) < length[:, None])
        has = match.any(axis=1)
        out[has] = match[has].argmax(axis=1)
        return out

    def _advance_hw(self, s, l):
        """HW(l) on rows ``s`` (in place): the leader's HW rises to the least log end in the
        ISR, and the records it passes become committed."""
        c, cfg = self.codec, self.config
        b = c.block(l)
        m = s[:, b + c.LEO].astype(np.int64)
        isr = s[:, c.Q_ISR].astype(np.int64)
        for f in range(self.n):
            if f != l:
                inside = (isr >> f & 1) == 1
                np.minimum(m, np.where(inside, s[:, b + c.REMOTE_LEO + f], m), out=m)
        hw = s[:, b + c.HW].astype(np.int64)
        moves = m > hw
        if cfg.hw_requires_min_isr:
            moves &= _POPCOUNT[s[:, c.Q_ISR].astype(np.uint8)] >= cfg.min_insync_replicas
        if not moves.any():
            return
        idx = np.nonzero(moves)[0]
        lo, hi = hw[idx], m[idx]
        acks_all = cfg.acks == ACKS_ALL
        if acks_all:  # acks=all: acknowledged only with the ISR (after the step) at min ISR
            enough = _POPCOUNT[s[idx, c.Q_ISR].astype(np.uint8)] >= cfg.min_insync_replicas
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

    def _elr_after(self, s, old_isr, new_isr):
        """``elr_after(I, I')`` of docs/model.md as bit masks (int64 arrays)."""
        cfg = self.config
        if not cfg.eligible_leader_replicas:
            return np.zeros(len(s), dtype=np.int64)
        elr = s[:, self.codec.Q_ELR].astype(np.int64)
        out = (elr | old_isr) & ~new_isr
        out[_POPCOUNT[new_isr.astype(np.uint8)] >= cfg.min_insync_replicas] = 0
        return out

    def _cut_log(self, s, b, t):
        """Truncate the log of the block at ``b`` to ``t`` (an array) in rows ``s``."""
        c = self.codec
        gone = np.arange(self.m) >= t[:, None]
        s[:, b + c.LOG:b + c.LOG + self.m][gone] = NONE
        s[:, b + c.LEO] = t

    def _clear_inflight(self, s, b):
        c = self.codec
        s[:, b + c.INFLIGHT_LEADER:b + c.INFLIGHT_RECORDS + self.m] = NONE

    # -- the actions (each takes a copy of the enabled rows and changes it in place) ----

    def _produce(self, s, l):
        c = self.codec
        b = c.block(l)
        ri = np.arange(len(s))
        at = s[:, b + c.LEO].astype(np.int64)
        s[ri, b + c.LOG + at] = s[:, b + c.EPOCH].astype(np.int64) * self.m + s[:, c.PRODUCED]
        s[:, b + c.LEO] += 1
        s[:, c.PRODUCED] += 1
        self._advance_hw(s, l)

    def _produce_acks_one(self, s, l):
        """Produce under acks=1 by ``l``, which believes it leads: the record is
        acknowledged on append; HW(l) only in the rows where ``l`` really leads."""
        c = self.codec
        b = c.block(l)
        leading = self.leads(s) == l
        ri = np.arange(len(s))
        at = s[:, b + c.LEO].astype(np.int64)
        rid = s[:, c.PRODUCED].astype(np.int64)
        s[ri, b + c.LOG + at] = s[:, b + c.EPOCH].astype(np.int64) * self.m + rid
        s[ri, c.ACKED_OFFSET + rid] = at
        s[ri, c.ACKED_EPOCH + rid] = s[:, b + c.EPOCH]
        s[:, b + c.LEO] += 1
        s[:, c.PRODUCED] += 1
        if leading.any():
            t = s[leading]
            self._advance_hw(t, l)
            s[leading] = t

    def _fetch_request(self, s, f, l):
        c = self.codec
        bf, bl = c.block(f), c.block(l)
        o = np.minimum(s[:, bf + c.LEO], s[:, bl + c.LEO]).astype(np.int64)
        s[:, bl + c.REMOTE_LEO + f] = o
        self._advance_hw(s, l)
        s[:, bf + c.INFLIGHT_LEADER] = l
        s[:, bf + c.INFLIGHT_EPOCH] = s[:, bl + c.EPOCH]
        s[:, bf + c.INFLIGHT_START] = o
        s[:, bf + c.INFLIGHT_HW] = s[:, bl + c.HW]
        length = s[:, bl + c.LEO].astype(np.int64)
        s[:, bf + c.INFLIGHT_COUNT] = length - o
        ri = np.arange(len(s))
        for k in range(self.m):
            src = o + k
            ok = src < length
            if not ok.any():
                break
            r, at = ri[ok], src[ok]
            s[r, bf + c.INFLIGHT_RECORDS + k] = s[r, bl + c.LOG + at]

    def _fetch_response(self, s, f):
        c = self.codec
        b = c.block(f)
        fresh = ((s[:, b + c.ALIVE] == 1) & (s[:, b + c.LEADER] == s[:, b + c.INFLIGHT_LEADER])
                 & (s[:, b + c.EPOCH] == s[:, b + c.INFLIGHT_EPOCH]))
        if fresh.any():
            t = s[fresh]
            start = t[:, b + c.INFLIGHT_START].astype(np.int64)
            count = t[:, b + c.INFLIGHT_COUNT].astype(np.int64)
            end = start + count
            pos = np.arange(self.m)
            src = np.clip(pos[None, :] - start[:, None], 0, self.m - 1)
            from_resp = (pos >= start[:, None]) & (pos < end[:, None])
            log = t[:, b + c.LOG:b + c.LOG + self.m]
            resp = np.take_along_axis(t[:, b + c.INFLIGHT_RECORDS:b + c.INFLIGHT_RECORDS + self.m], src, axis=1)
            log = np.where(from_resp, resp, log)
            log[pos >= end[:, None]] = NONE
            t[:, b + c.LOG:b + c.LOG + self.m] = log
            t[:, b + c.LEO] = end
            t[:, b + c.HW] = np.minimum(t[:, b + c.INFLIGHT_HW], end)
            s[fresh] = t
        self._clear_inflight(s, b)

    def _crash(self, s, r, cut):
        c, cfg = self.codec, self.config
        b = c.block(r)
        s[:, b + c.ALIVE] = 0
        self._clear_inflight(s, b)
        s[:, c.CRASHES] += 1
        if cut is not None:
            if cfg.eligible_leader_replicas:
                s[:, b + c.LOSSY] = s[:, b + c.LEO] > cut
            self._cut_log(s, b, np.full(len(s), cut, dtype=np.int64))
            np.minimum(s[:, b + c.HW], cut, out=s[:, b + c.HW])

    def _restart(self, s, r):
        c, cfg = self.codec, self.config
        b = c.block(r)
        s[:, b + c.ALIVE] = 1
        s[:, b + c.EPOCH] = NONE
        s[:, b + c.LEADER] = NONE
        s[:, b + c.REMOTE_LEO:b + c.REMOTE_LEO + self.n] = 0
        if not cfg.eligible_leader_replicas:
            return
        lossy = s[:, b + c.LOSSY] == 1
        if not lossy.any():
            return
        t = s[lossy]
        # KIP-966's unclean-shutdown rule: out of the ISR and the ELR, fetch state fenced.
        old = t[:, c.Q_ISR].astype(np.int64)
        new = old & ~(1 << r)
        elr = self._elr_after(t, old, new) & ~(1 << r)
        t[:, c.Q_ISR] = new
        t[:, c.Q_ELR] = elr
        for l in range(self.n):
            t[:, c.block(l) + c.REMOTE_LEO + r] = 0
        lead = self.leads(t)
        for q in range(self.n):
            sel = lead == q
            if sel.any():
                u = t[sel]
                self._advance_hw(u, q)
                t[sel] = u
        t[:, b + c.LOSSY] = 0
        s[lossy] = t

    def _elections(self, g, rows):
        can = rows[:, self.codec.Q_EPOCH] < self.config.max_leader_epoch
        for cand, kind, ok in self.election_kinds(rows, g.alive, g.lead):
            g.emit(ELECT_LEADER, can & ok, self._elect, cand, kind)

    def election_kinds(self, rows, alive, lead):
        """``(candidate, kind, mask)`` for every kind of ElectLeader(candidate), in the
        model's order (replica, then kind; the kinds exclude each other): ``mask`` says in
        which rows it is enabled, the epoch bound aside."""
        c, cfg = self.codec, self.config
        n = self.n
        ql = rows[:, c.Q_LEADER].astype(np.int64)
        qe = rows[:, c.Q_EPOCH]
        isr = rows[:, c.Q_ISR].astype(np.int64)
        elr = rows[:, c.Q_ELR].astype(np.int64)
        # the quorum leader q is none, dead, or restarted since its election
        replaceable = ql == NONE
        for q in range(n):
            b = c.block(q)
            replaceable |= (ql == q) & ((rows[:, b + c.ALIVE] == 0) | (rows[:, b + c.EPOCH] != qe))
        preferred = np.zeros(len(rows), dtype=bool)
        if cfg.preferred_election:
            preferred = lead >= 0
        live_isr = (isr & alive) != 0
        live_elr = (elr & alive) != 0
        # The last-known-leader election: ISR and ELR empty, the quorum leader alive.
        last_known = np.zeros(len(rows), dtype=bool)
        if cfg.last_known_leader:
            ql_alive = (ql >= 0) & ((alive >> np.maximum(ql, 0) & 1) == 1)
            last_known = (isr == 0) & (elr == 0) & ql_alive
        out = []
        for cand in range(n):
            is_alive = (alive >> cand & 1) == 1
            trigger = is_alive & (replaceable | (preferred & (ql != cand)))
            in_isr = (isr >> cand & 1) == 1
            out.append((cand, "clean", trigger & in_isr))
            if cfg.eligible_leader_replicas:
                in_elr = (elr >> cand & 1) == 1
                out.append((cand, "elr", trigger & ~live_isr & in_elr))
            if cfg.last_known_leader:
                out.append((cand, "last-known-leader", trigger & last_known & (ql == cand)))
            if cfg.unclean_leader_election:
                out.append((cand, "unclean",
                            trigger & ~live_isr & ~live_elr & ~in_isr & ~last_known))
        return out

    def _elect(self, s, cand, kind):
        c = self.codec
        b = c.block(cand)
        old = s[:, c.Q_ISR].astype(np.int64)
        if kind == "clean":
            new = old & self.alive_mask(s)
            elr = self._elr_after(s, old, new)
        elif kind == "elr":
            new = np.full(len(s), 1 << cand, dtype=np.int64)
            elr = (s[:, c.Q_ELR].astype(np.int64) | old) & ~(1 << cand)
        else:  # unclean, or the last known leader: the ISR is {cand}, the ELR cleared
            new = np.full(len(s), 1 << cand, dtype=np.int64)
            elr = np.zeros(len(s), dtype=np.int64)
        s[:, c.Q_ISR] = new
        s[:, c.Q_ELR] = elr
        s[:, c.Q_LEADER] = cand
        s[:, c.Q_EPOCH] += 1
        s[:, b + c.LEADER] = cand
        s[:, b + c.EPOCH] = s[:, c.Q_EPOCH]
        s[:, b + c.REMOTE_LEO:b + c.REMOTE_LEO + self.n] = 0
        self._clear_inflight(s, b)
        self._advance_hw(s, cand)

    def _become_follower(self, s, r, l):
        c, cfg = self.codec, self.config
        b, bl = c.block(r), c.block(l)
        hw = s[:, b + c.HW].astype(np.int64)
        if cfg.truncation == HIGH_WATERMARK:
            t = hw
        elif cfg.truncation == LEADER_EPOCH:
            t = self._offsets_for_leader_epoch(s, b, bl, hw)
        else:  # leader-epoch-kip279 and leader-epoch-2.1: the longest common prefix
            t = self._common_prefix(s, b, bl)
        self._cut_log(s, b, t)
        s[:, b + c.HW] = np.minimum(hw, t)
        s[:, b + c.LEADER] = l
        s[:, b + c.EPOCH] = s[:, c.Q_EPOCH]
        self._clear_inflight(s, b)

    def _common_prefix(self, s, b, bl):
        c = self.codec
        m = self.m
        n_r = s[:, b + c.LEO].astype(np.int64)
        n_l = s[:, bl + c.LEO].astype(np.int64)
        pos = np.arange(m)
        same = ((s[:, b + c.LOG:b + c.LOG + m] == s[:, bl + c.LOG:bl + c.LOG + m])
                & (pos < np.minimum(n_r, n_l)[:, None]))
        return np.cumprod(same, axis=1).sum(axis=1).astype(np.int64)

    def _offsets_for_leader_epoch(self, s, b, bl, hw):
        """KIP-101's truncation offset (``model.truncation.truncate_leader_epoch``)."""
        c = self.codec
        m = self.m
        rows = np.arange(len(s))
        n_r = s[:, b + c.LEO].astype(np.int64)
        n_l = s[:, bl + c.LEO].astype(np.int64)
        le_l = s[:, bl + c.LOG:bl + c.LOG + m].astype(np.int64) // m  # epochs; none stays -1
        e = s[rows, b + c.LOG + np.maximum(n_r - 1, 0)].astype(np.int64) // m  # the follower's last epoch
        last_l = le_l[rows, np.maximum(n_l - 1, 0)]
        valid = np.arange(m) < n_l[:, None]
        later = valid & (le_l > e[:, None])
        has_later = later.any(axis=1)
        answer = np.where(has_later, later.argmax(axis=1), n_l)  # end_offset(l.log, e)
        undefined = (n_l == 0) | (((e < le_l[:, 0]) | ~has_later) & (last_l != e))
        answer = np.where((n_l > 0) & (last_l == e), n_l, answer)
        t = np.where(undefined, hw, np.minimum(answer, n_r))
        return np.where(n_r == 0, 0, t)

    def _shrink(self, s, r, l):
        c = self.codec
        old = s[:, c.Q_ISR].astype(np.int64)
        new = old & ~(1 << r)
        s[:, c.Q_ELR] = self._elr_after(s, old, new)
        s[:, c.Q_ISR] = new
        self._advance_hw(s, l)

    def _expand(self, s, r, l):
        c = self.codec
        old = s[:, c.Q_ISR].astype(np.int64)
        new = old | (1 << r)
        s[:, c.Q_ELR] = self._elr_after(s, old, new)
        s[:, c.Q_ISR] = new
        self._advance_hw(s, l)

    # -- properties ---------------------------------------------------------------------
    # Each property's array form (its mask) is defined beside its per-state check in
    # ``invariants/``; these look it up by name.

    def invariant_mask(self, name, rows):
        """A boolean array: which rows violate the state invariant ``name``, or ``None``
        when this kernel has no batch form of it."""
        return self._mask(name, ALWAYS, rows)

    def goal_mask(self, name, rows):
        """A boolean array: which rows are goal states of the always-possibly property
        ``name``, or ``None`` when this kernel has no batch form of it."""
        return self._mask(name, POSSIBLY, rows)

    def step_mask(self, name, rows, parents, after):
        """Which transitions ``rows[parents[i]] -> after[i]`` violate the step property
        ``name``, or ``None`` when this kernel has no batch form of it."""
        return self._mask(name, STEP, rows, parents, after)

    def _mask(self, name, kind, *args):
        from kmc.invariants import BY_NAME

        prop = BY_NAME.get(name)
        if prop is None or prop.kind != kind or prop.mask is None:
            return None
        return prop.mask(self, *args)


class _Gen:
    """Collects the successor groups of one ``expand`` call."""

    def __init__(self, kernel, rows):
        self.kernel = kernel
        self.rows = rows
        self.lead = kernel.leads(rows)
        self.isr_size = kernel._isr_size(rows)
        self.alive = kernel.alive_mask(rows)
        self.count = np.zeros(len(rows), dtype=np.int16)  # enabled actions so far, per row
        self.parts = []

    def emit(self, code, mask, effect, *args):
        """Record a group: the rows where ``mask`` holds take action ``code``, whose
        effect ``effect(rows, *args)`` is applied later, in ``result``, to their copies
        in place (so every successor is copied once, straight into the output)."""
        idx = np.nonzero(mask)[0]
        if not len(idx):
            return
        choice = self.count[idx]
        self.count[idx] += 1
        self.parts.append((idx, choice, code, effect, args))

    def result(self):
        total = sum(len(p[0]) for p in self.parts)
        succ = np.empty((total, self.kernel.width), dtype=self.rows.dtype)
        parents = np.empty(total, dtype=np.int64)
        choices = np.empty(total, dtype=np.int16)
        codes = np.empty(total, dtype=np.int8)
        at = 0
        for idx, choice, code, effect, args in self.parts:
            end = at + len(idx)
            view = succ[at:end]
            np.take(self.rows, idx, axis=0, out=view)
            effect(view, *args)
            parents[at:end] = idx
            choices[at:end] = choice
            codes[at:end] = code
            at = end
        return parents, choices, codes, succ
