"""The batch kernel's operator actions (docs/model.md, "Operator actions"): ControlledShutdown,
ShutdownComplete, ChangeMinIsr, DiskFailure and ApplyMinIsr over rows, in the model's
enumeration order, each effect changing a copy of the rows in which it is enabled in place,
as the attrs model's ``KafkaEffects`` changes a state."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .views import Groups

import numpy as np

from .batch_rules import RowRules
from .config import KAFKA_13916, KAFKA_16234, KAFKA_16540
from .rows import NONE

# How the controller elects the replica ``n`` that replaces a leader in controlled shutdown
CLEAN, ELR, UNCLEAN = "clean", "elr", "unclean"


class OperatorActions:
    """The operators' actions on rows, built from the shared ``rules`` (a
    ``model.batch_rules.RowRules``); ``codes`` maps each of their names to its code in
    the kernel's ``action_names``."""

    def __init__(self, rules: RowRules, codes: dict[str, int]) -> None:
        self.rules = rules
        self.codec, self.config = rules.codec, rules.config
        self.n, self.m = rules.n, rules.m
        self.codes = codes
        self.bug_13916 = self.config.has_bug(KAFKA_13916)
        self.bug_16540 = self.config.has_bug(KAFKA_16540)
        self.bug_16234 = self.config.has_bug(KAFKA_16234)

    def shutting(self, rows: np.ndarray, r: int) -> np.ndarray:
        """Is ``r`` in controlled shutdown, in each row (never without the option)?"""
        c = self.codec
        if c.SHUTTING is None:
            return np.zeros(len(rows), dtype=bool)
        out: np.ndarray = (rows[:, c.SHUTTING] >> r & 1) == 1
        return out

    def acceptable(self, rows: np.ndarray, r: int) -> np.ndarray:
        """May the controller make ``r`` leader: alive, and not in controlled shutdown unless
        KAFKA-13916."""
        ok: np.ndarray = rows[:, self.codec.block(r) + self.codec.ALIVE] == 1
        if not self.bug_13916:
            ok = ok & ~self.shutting(rows, r)
        return ok

    # -- enabledness, in the model's order (actions 11-15) -------------------------------

    def emit(self, g: Groups, rows: np.ndarray) -> None:
        """Every operator action of ``rows`` into the successor groups ``g``."""
        from .actions import APPLY_MIN_ISR, CHANGE_MIN_ISR, CONTROLLED_SHUTDOWN, DISK_FAILURE, SHUTDOWN_COMPLETE

        c, cfg = self.codec, self.config
        n = self.n
        if c.SHUTTING is not None:
            # 11. ControlledShutdown(r), then, for the quorum's leader r, one per candidate
            code = self.codes[CONTROLLED_SHUTDOWN]
            room = rows[:, c.CONTROLLED_SHUTDOWNS] < cfg.max_controlled_shutdowns
            ql = rows[:, c.Q_LEADER]
            isr = rows[:, c.Q_ISR].astype(np.int64)
            can_move = rows[:, c.Q_EPOCH] < cfg.max_leader_epoch
            for r in range(n):
                ok = room & (rows[:, c.block(r) + c.ALIVE] == 1) & ~self.shutting(rows, r)
                if not ok.any():
                    continue
                follower = ok & (ql != r)
                inside = (isr >> r & 1) == 1
                g.emit(code, follower & ~inside, self.mark_only, r)
                g.emit(code, follower & inside, self.leave_isr, r)
                moving = ok & (ql == r) & can_move
                if not moving.any():
                    continue
                kinds = self.candidates(rows, r, moving)
                anyone = np.zeros(len(rows), dtype=bool)
                for cand, kind, mask in kinds:
                    g.emit(code, mask, self.move_leader, r, cand, kind)
                    anyone |= mask
                g.emit(code, moving & ~anyone, self.leaderless, r)
            # 12. ShutdownComplete(r)
            code = self.codes[SHUTDOWN_COMPLETE]
            for r in range(n):
                ok = (rows[:, c.block(r) + c.ALIVE] == 1) & self.shutting(rows, r)
                g.emit(code, ok, self.shutdown_complete, r)
        if c.MIN_ISR_STEP is not None:
            # 13. ChangeMinIsr
            ok = rows[:, c.MIN_ISR_STEP] < len(cfg.min_isr_changes)
            g.emit(self.codes[CHANGE_MIN_ISR], ok, self.change_min_isr)
        if c.DISK_FAILURES is not None:
            # 14. DiskFailure(r)
            room = rows[:, c.DISK_FAILURES] < cfg.max_disk_failures
            for r in range(n):
                g.emit(self.codes[DISK_FAILURE], room & (rows[:, c.block(r) + c.ALIVE] == 1), self.disk_failure, r)
        if c.LEADER_MIN_ISR_STEP is not None:
            # 15. ApplyMinIsr
            ok = rows[:, c.LEADER_MIN_ISR_STEP] < rows[:, c.MIN_ISR_STEP]
            g.emit(self.codes[APPLY_MIN_ISR], ok, self.apply_min_isr)

    def _targets(self, rows: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(I, I1, E1)`` of docs/model.md's ControlledShutdown(r): the ISR, the target ISR
        without ``r``, and the ELR after that change (the ELR as it is when ``r`` is not in
        the ISR)."""
        c = self.codec
        isr = rows[:, c.Q_ISR].astype(np.int64)
        isr1 = isr & ~(1 << r)
        elr = rows[:, c.Q_ELR].astype(np.int64)
        inside = (isr >> r & 1) == 1
        elr1 = np.where(inside, self.rules.elr_after(rows, isr, isr1), elr)
        return isr, isr1, elr1

    def candidates(self, rows: np.ndarray, r: int, moving: np.ndarray) -> list[tuple[int, str, np.ndarray]]:
        """``(n, kind, mask)`` of every replica the controller may elect in place of the
        quorum's leader ``r`` (``cs_kind(r, n)``), in replica order, within ``moving``."""
        cfg = self.config
        _, isr1, elr1 = self._targets(rows, r)
        alive = self.rules.alive_mask(rows)
        live1 = (isr1 & alive) != 0
        elr_live = (elr1 & alive) != 0
        out = []
        for cand in range(self.n):
            if cand == r:
                continue
            ok = moving & self.acceptable(rows, cand)
            bit = 1 << cand
            clean = ok & ((isr1 & bit) != 0)
            out.append((cand, CLEAN, clean))
            rest = ok & ~clean
            if cfg.eligible_leader_replicas:
                from_elr = rest & ~live1 & ((elr1 & bit) != 0)
                out.append((cand, ELR, from_elr))
                rest &= ~from_elr
            if cfg.unclean_leader_election:
                out.append((cand, UNCLEAN, rest & ~live1 & ~elr_live))
        return out

    # -- effects --------------------------------------------------------------------------

    def _mark(self, s: np.ndarray, r: int) -> None:
        c = self.codec
        s[:, c.SHUTTING] |= 1 << r
        s[:, c.CONTROLLED_SHUTDOWNS] += 1

    def mark_only(self, s: np.ndarray, r: int) -> None:
        """ControlledShutdown of a follower outside the ISR: only the mark (no partition
        change; an ELR membership of ``r`` is kept)."""
        self._mark(s, r)

    def leave_isr(self, s: np.ndarray, r: int) -> None:
        """ControlledShutdown of a follower in the ISR: out of it (into the ELR below min
        ISR), the request in flight dropped, the leader epoch kept; then HW of the quorum's
        leader where it leads."""
        c = self.codec
        _, isr1, elr1 = self._targets(s, r)
        self._mark(s, r)
        s[:, c.Q_ISR] = isr1
        s[:, c.Q_ELR] = elr1
        if c.alter:
            self.rules.drop_request(s)
        self._leader_hw(s)

    def move_leader(self, s: np.ndarray, r: int, cand: int, kind: str) -> None:
        """ControlledShutdown of the quorum's leader ``r``: ``cand`` elected in its place by
        ``kind`` (new ISR and ELR as docs/model.md gives them), in a new leader epoch, taking
        over at once as in ElectLeader."""
        _, isr1, elr1 = self._targets(s, r)
        bit = np.int64(1 << cand)
        if kind == CLEAN:
            isr = isr1 & self.rules.alive_mask(s)
            elr = self.rules.elr_after(s, isr1, isr, elr1)
        elif kind == ELR:
            isr = np.full(len(s), bit, dtype=np.int64)
            elr = (elr1 | isr1) & ~bit
        else:
            isr = np.full(len(s), bit, dtype=np.int64)
            elr = np.zeros(len(s), dtype=np.int64)
        self._mark(s, r)
        self.rules.install_leader(s, cand, isr, elr)

    def leaderless(self, s: np.ndarray, r: int) -> None:
        """ControlledShutdown of the quorum's leader ``r`` when nobody may replace it: no
        leader, a new leader epoch, the target ISR (``r`` kept where it would be empty,
        unless eligible leader replicas) and ELR."""
        c = self.codec
        isr, isr1, elr1 = self._targets(s, r)
        if not self.config.eligible_leader_replicas:
            isr1 = np.where(isr1 == 0, isr, isr1)
        self._mark(s, r)
        s[:, c.Q_ISR] = isr1
        s[:, c.Q_ELR] = elr1
        if c.alter:
            self.rules.drop_request(s)
        s[:, c.Q_LEADER] = NONE
        s[:, c.Q_EPOCH] += 1

    def shutdown_complete(self, s: np.ndarray, r: int) -> None:
        """ShutdownComplete(r): a clean stop (log whole, not lossy, no crash counted)."""
        c = self.codec
        b = c.block(r)
        s[:, b + c.ALIVE] = 0
        self.rules.clear_inflight(s, b)
        s[:, c.SHUTTING] &= ~(1 << r)

    def change_min_isr(self, s: np.ndarray) -> None:
        """ChangeMinIsr: the next min ISR; since the fix of KAFKA-16540 the controller clears
        the ELR (dropping the request in flight when it was not empty)."""
        c, cfg = self.codec, self.config
        s[:, c.MIN_ISR_STEP] += 1
        if cfg.eligible_leader_replicas and not self.bug_16540:
            if c.alter:
                self.rules.drop_request(s, s[:, c.Q_ELR] != 0)
            s[:, c.Q_ELR] = 0

    def apply_min_isr(self, s: np.ndarray) -> None:
        """ApplyMinIsr (``min_isr_lag``): the leader's broker applies the next change."""
        s[:, self.codec.LEADER_MIN_ISR_STEP] += 1

    def disk_failure(self, s: np.ndarray, r: int) -> None:
        """DiskFailure(r): the log gone, the controller removes ``r`` as a fenced broker (an
        ISR ``{r}`` stays without eligible leader replicas), every leader forgets ``r``'s log
        end; fixed, ``r`` is offline (lossy with eligible leader replicas), with KAFKA-16234
        it stays up, empty, forgetting a leadership of its own; then HW of the quorum's
        leader where it leads."""
        c, cfg = self.codec, self.config
        b = c.block(r)
        old = s[:, c.Q_ISR].astype(np.int64)
        isr = old & ~(1 << r)
        if not cfg.eligible_leader_replicas:
            isr = np.where(isr == 0, old, isr)
        elr = self.rules.elr_after(s, old, isr)
        if c.alter:
            self.rules.drop_request(s, (isr != old) | (elr != s[:, c.Q_ELR]))
        s[:, c.Q_ISR] = isr
        s[:, c.Q_ELR] = elr
        self.rules.cut_log(s, b, np.zeros(len(s), dtype=np.int64))
        s[:, b + c.HW] = 0
        self.rules.clear_inflight(s, b)
        s[:, b + c.REMOTE_LEO : b + c.REMOTE_LEO + self.n] = 0
        if self.bug_16234:
            mine = s[:, b + c.LEADER] == r
            s[mine, b + c.LEADER] = NONE
            s[mine, b + c.EPOCH] = NONE
        else:
            s[:, b + c.ALIVE] = 0
            s[:, b + c.LOSSY] = 1 if cfg.eligible_leader_replicas else 0
            if c.SHUTTING is not None:  # offline as after a crash: a controlled shutdown ends
                s[:, c.SHUTTING] &= ~(1 << r)
        for other in range(self.n):
            if other != r:
                s[:, c.block(other) + c.REMOTE_LEO + r] = 0
        s[:, c.DISK_FAILURES] += 1
        self._leader_hw(s)

    def _leader_hw(self, s: np.ndarray) -> None:
        """HW(q) of the quorum's leader ``q`` in the rows where it leads (after the step)."""
        lead = self.rules.leads(s)
        for q in range(self.n):
            sel = lead == q
            if sel.any():
                u = s[sel]
                self.rules.advance_hw(u, q)
                s[sel] = u
