"""The batch kernel's ElectLeader: which kind of election (clean, from the ELR, the last
known leader, unclean) each candidate may win in which rows, and its effect."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .views import Groups

import numpy as np

from .actions import ELECT_LEADER_CODE as ELECT_LEADER
from .batch_rules import RowRules
from .config import KAFKA_13916
from .rows import NONE


class Elections:
    """ElectLeader on rows, built from the shared ``rules`` (a ``model.batch_rules.RowRules``)."""

    def __init__(self, rules: RowRules) -> None:
        self.rules = rules
        self.codec, self.config = rules.codec, rules.config
        self.n = rules.n

    def emit(self, g: Groups, rows: np.ndarray) -> None:
        """Every ElectLeader of ``rows`` into the successor groups ``g``."""
        can = rows[:, self.codec.Q_EPOCH] < self.config.max_leader_epoch
        for cand, kind, ok in self.election_kinds(rows, g.alive, g.lead):
            g.emit(ELECT_LEADER, can & ok, self.elect, cand, kind)

    def election_kinds(
        self, rows: np.ndarray, alive: np.ndarray, lead: np.ndarray
    ) -> list[tuple[int, str, np.ndarray]]:
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
        # KIP-841: a replica in controlled shutdown is not elected, unless KAFKA-13916
        shutting = None
        if c.SHUTTING is not None and not cfg.has_bug(KAFKA_13916):
            shutting = rows[:, c.SHUTTING].astype(np.int64)
        out = []
        for cand in range(n):
            is_alive = (alive >> cand & 1) == 1
            if shutting is not None:
                is_alive &= (shutting >> cand & 1) == 0
            trigger = is_alive & (replaceable | (preferred & (ql != cand)))
            in_isr = (isr >> cand & 1) == 1
            out.append((cand, "clean", trigger & in_isr))
            if cfg.eligible_leader_replicas:
                in_elr = (elr >> cand & 1) == 1
                out.append((cand, "elr", trigger & ~live_isr & in_elr))
            if cfg.last_known_leader:
                out.append((cand, "last-known-leader", trigger & last_known & (ql == cand)))
            if cfg.unclean_leader_election:
                out.append((cand, "unclean", trigger & ~live_isr & ~live_elr & ~in_isr & ~last_known))
        return out

    def elect(self, s: np.ndarray, cand: int, kind: str) -> None:
        c = self.codec
        b = c.block(cand)
        old = s[:, c.Q_ISR].astype(np.int64)
        if kind == "clean":
            new = old & self.rules.alive_mask(s)
            elr = self.rules.elr_after(s, old, new)
        elif kind == "elr":
            new = np.full(len(s), 1 << cand, dtype=np.int64)
            elr = (s[:, c.Q_ELR].astype(np.int64) | old) & ~(1 << cand)
        else:  # unclean, or the last known leader: the ISR is {cand}, the ELR cleared
            new = np.full(len(s), 1 << cand, dtype=np.int64)
            elr = np.zeros(len(s), dtype=np.int64)
        s[:, c.Q_ISR] = new
        s[:, c.Q_ELR] = elr
        if c.alter:  # the old leader's request carries the old leader epoch
            self.rules.drop_request(s)
        s[:, c.Q_LEADER] = cand
        s[:, c.Q_EPOCH] += 1
        s[:, b + c.LEADER] = cand
        s[:, b + c.EPOCH] = s[:, c.Q_EPOCH]
        s[:, b + c.REMOTE_LEO : b + c.REMOTE_LEO + self.n] = 0
        self.rules.clear_inflight(s, b)
        self.rules.advance_hw(s, cand)
