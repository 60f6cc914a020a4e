"""The batch kernel's action effects: each takes a copy of the rows in which its action
is enabled and changes it in place, as docs/model.md's action of that name changes a
state; and ElectLeader's (``Elections``), which also says which kind of election (clean, from
the ELR, the last known leader, unclean) each candidate may win in which rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .actions import ELECT_LEADER_CODE as ELECT_LEADER
from .batch_rules import RowRules
from .config import KAFKA_13916, KAFKA_15221
from .rows import NONE
from .truncation import batch_form

if TYPE_CHECKING:
    from .views import Groups


class ActionEffects:
    """The effects of Produce, FetchRequest, FetchResponse, Crash, Restart, BecomeFollower,
    ShrinkIsr, ExpandIsr and AlterPartition on rows, built from the shared ``rules``
    (a ``model.batch_rules.RowRules``).
    """

    def __init__(self, rules: RowRules) -> None:
        self.rules = rules
        # the codec's optional columns are read where the configuration has them (c.fetch, c.alter)
        self.codec: Any = rules.codec
        self.config = rules.config
        self.n, self.m = rules.n, rules.m
        # KAFKA-15221: a pending expansion survives its replica's restart (see alter_partition)
        self.bug_15221 = self.config.has_bug(KAFKA_15221)
        # KAFKA-13916: the controller accepts a replica in controlled shutdown into the ISR
        self.bug_13916 = self.config.has_bug(KAFKA_13916)
        # BecomeFollower's truncation offsets: the rule's batch form (a rule without one is refused)
        self.truncate = batch_form(self.config.truncation)

    # -- the actions (each takes a copy of the enabled rows and changes it in place) ----

    def produce(self, s: np.ndarray, l: int) -> None:
        c = self.codec
        b = c.block(l)
        ri = np.arange(len(s))
        at = s[:, b + c.LEO].astype(np.int64)
        s[ri, b + c.LOG + at] = s[:, b + c.EPOCH].astype(np.int64) * self.m + s[:, c.PRODUCED]
        s[:, b + c.LEO] += 1
        s[:, c.PRODUCED] += 1
        self.rules.advance_hw(s, l)

    def produce_acks_one(self, s: np.ndarray, l: int) -> None:
        """Produce under acks=1 by ``l``, which believes it leads: the record is
        acknowledged on append; HW(l) only in the rows where ``l`` really leads."""
        c = self.codec
        b = c.block(l)
        leading = self.rules.leads(s) == l
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
            self.rules.advance_hw(t, l)
            s[leading] = t

    def fetch_request(self, s: np.ndarray, f: int, l: int) -> None:
        c = self.codec
        if c.fetch:  # truncation in the fetch path: some fetches diverge
            bf, bl = c.block(f), c.block(l)
            div, epoch, offset = self.diverging(s, bf, bl)
            if div.any():
                t = s[div]
                self._answer_diverging(t, f, l, epoch[div], offset[div])
                s[div] = t
                if div.all():
                    return
                keep = ~div
                t = s[keep]
                self._answer_records(t, f, l)
                s[keep] = t
                return
        self._answer_records(s, f, l)

    def _answer_records(self, s: np.ndarray, f: int, l: int) -> None:
        """FetchRequest(f) answered with the leader's records from the follower's offset."""
        c = self.codec
        bf, bl = c.block(f), c.block(l)
        o = np.minimum(s[:, bf + c.LEO], s[:, bl + c.LEO]).astype(np.int64)
        s[:, bl + c.REMOTE_LEO + f] = o
        self.rules.advance_hw(s, l)
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

    def diverging(self, s: np.ndarray, bf: int, bl: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Which fetches of the follower at block ``bf`` from the leader at ``bl`` diverge
        (truncation in the fetch path), with the leader's answer ``(E', O') = EO(l, E)`` for
        the follower's last record's epoch ``E``: it diverges iff ``E' < E`` or ``O'`` is
        below the follower's log end. A follower with an empty log names no epoch: never.

        ``EO`` is computed only where the follower's log is not a prefix of the leader's: a
        prefix never diverges (the leader holds the follower's last record, of epoch ``E``,
        at the same offset, so ``E`` is in its cache and ends at or after the follower's log
        end), and most fetches are of a prefix. Elsewhere the answer is ``(-1, -1)``."""
        c, m = self.codec, self.m
        length = s[:, bf + c.LEO].astype(np.int64)
        pos = np.arange(m)
        differs = (s[:, bf + c.LOG : bf + c.LOG + m] != s[:, bl + c.LOG : bl + c.LOG + m]) & (pos < length[:, None])
        check = np.flatnonzero(differs.any(axis=1) | (length > s[:, bl + c.LEO]))
        div = np.zeros(len(s), dtype=bool)
        epoch = np.full(len(s), NONE, dtype=np.int64)
        offset = np.full(len(s), NONE, dtype=np.int64)
        if not len(check):
            return div, epoch, offset
        t = s[check]
        n = length[check]
        last = t[np.arange(len(t)), bf + c.LOG + np.maximum(n - 1, 0)].astype(np.int64) // m
        own = t[:, bl + c.EPOCH].astype(np.int64)  # the leader caches its own epoch
        e2, o2, defined = self.rules.end_offset_for(t, bl, last, own)
        div[check] = (n > 0) & defined & ((e2 < last) | (o2 < n))
        epoch[check], offset[check] = e2, o2
        return div, epoch, offset

    def _answer_diverging(self, s: np.ndarray, f: int, l: int, epoch: np.ndarray, offset: np.ndarray) -> None:
        """FetchRequest(f) answered with the diverging epoch ``(epoch, offset)`` and no
        records; the leader records nothing of the follower, except under KAFKA-13141,
        where it takes the follower's log end as its fetch offset and moves its HW."""
        c = self.codec
        bf, bl = c.block(f), c.block(l)
        if self.rules.bug_13141:
            s[:, bl + c.REMOTE_LEO + f] = s[:, bf + c.LEO]
            self.rules.advance_hw(s, l)
        s[:, bf + c.INFLIGHT_LEADER] = l
        s[:, bf + c.INFLIGHT_EPOCH] = s[:, bl + c.EPOCH]
        s[:, bf + c.INFLIGHT_START] = offset  # a diverging response's start is O'
        s[:, bf + c.INFLIGHT_HW] = s[:, bl + c.HW]
        s[:, bf + c.INFLIGHT_COUNT] = 0
        s[:, bf + c.INFLIGHT_DIVERGING] = epoch

    def fetch_response(self, s: np.ndarray, f: int) -> None:
        c = self.codec
        b = c.block(f)
        fresh = (
            (s[:, b + c.ALIVE] == 1)
            & (s[:, b + c.LEADER] == s[:, b + c.INFLIGHT_LEADER])
            & (s[:, b + c.EPOCH] == s[:, b + c.INFLIGHT_EPOCH])
        )
        stay = None  # the rows whose response stays in flight (KAFKA-14704's first half)
        if c.fetch:
            div = s[:, b + c.INFLIGHT_DIVERGING] != NONE
            if c.fetch_applied:
                stay = fresh & div & (s[:, b + c.INFLIGHT_APPLIED] != 1)
                if stay.any():
                    # KAFKA-14704: the response's HW first, the truncation at the next step
                    hw = np.minimum(s[stay, b + c.INFLIGHT_HW], s[stay, b + c.LEO])
                    s[stay, b + c.HW] = hw
                    s[stay, b + c.INFLIGHT_APPLIED] = 1
                else:
                    stay = None
            cut = fresh & div if stay is None else fresh & div & ~stay
            if cut.any():
                t = s[cut]
                self._truncate_on_answer(t, b)
                s[cut] = t
            fresh &= ~div
        if fresh.any():
            t = s[fresh]
            start = t[:, b + c.INFLIGHT_START].astype(np.int64)
            count = t[:, b + c.INFLIGHT_COUNT].astype(np.int64)
            end = start + count
            pos = np.arange(self.m)
            src = np.clip(pos[None, :] - start[:, None], 0, self.m - 1)
            from_resp = (pos >= start[:, None]) & (pos < end[:, None])
            log = t[:, b + c.LOG : b + c.LOG + self.m]
            resp = np.take_along_axis(t[:, b + c.INFLIGHT_RECORDS : b + c.INFLIGHT_RECORDS + self.m], src, axis=1)
            log = np.where(from_resp, resp, log)
            log[pos >= end[:, None]] = NONE
            t[:, b + c.LOG : b + c.LOG + self.m] = log
            t[:, b + c.LEO] = end
            t[:, b + c.HW] = np.minimum(t[:, b + c.INFLIGHT_HW], end)
            s[fresh] = t
        if stay is None:
            self.rules.clear_inflight(s, b)
        else:
            gone = ~stay
            s[gone, b + c.INFLIGHT_LEADER : b + c.BLOCK] = NONE

    def _truncate_on_answer(self, s: np.ndarray, b: int) -> None:
        """The follower at block ``b`` truncates on the diverging epoch ``(E', O')`` of its
        response: with ``(F, G) = EO(f, E')``, to ``min(G, O', LEO)`` when ``F = E'``, else to
        ``min(G, LEO)``; to ``min(O', LEO)`` when ``EO(f, E')`` is undefined. Its HW follows."""
        c = self.codec
        length = s[:, b + c.LEO].astype(np.int64)
        div_epoch = s[:, b + c.INFLIGHT_DIVERGING].astype(np.int64)
        div_offset = s[:, b + c.INFLIGHT_START].astype(np.int64)
        epoch, offset, defined = self.rules.end_offset_for(s, b, div_epoch)
        t = np.minimum(offset, length)
        t = np.where(epoch == div_epoch, np.minimum(t, div_offset), t)
        t = np.where(defined, t, np.minimum(div_offset, length))
        self.rules.cut_log(s, b, t)
        np.minimum(s[:, b + c.HW], t, out=s[:, b + c.HW])

    def crash(self, s: np.ndarray, r: int, cut: int | None) -> None:
        c, cfg = self.codec, self.config
        b = c.block(r)
        s[:, b + c.ALIVE] = 0
        self.rules.clear_inflight(s, b)
        s[:, c.CRASHES] += 1
        if c.SHUTTING is not None:  # a crash ends a controlled shutdown
            s[:, c.SHUTTING] &= ~(1 << r)
        if cut is not None:
            if cfg.eligible_leader_replicas:
                s[:, b + c.LOSSY] = s[:, b + c.LEO] > cut
            self.rules.cut_log(s, b, np.full(len(s), cut, dtype=np.int64))
            np.minimum(s[:, b + c.HW], cut, out=s[:, b + c.HW])

    def restart(self, s: np.ndarray, r: int) -> None:
        c, cfg = self.codec, self.config
        b = c.block(r)
        s[:, b + c.ALIVE] = 1
        s[:, b + c.EPOCH] = NONE
        s[:, b + c.LEADER] = NONE
        s[:, b + c.REMOTE_LEO : b + c.REMOTE_LEO + self.n] = 0
        # a pending expansion of r is based on its previous incarnation: dropped, except
        # under KAFKA-15221, where it may yet carry r's new broker epoch
        if cfg.broker_epochs and not self.bug_15221:
            self.rules.drop_request(s, (s[:, c.ALTER_CHANGE] == 1) & (s[:, c.ALTER_REPLICA] == r))
        if not cfg.eligible_leader_replicas:
            return
        lossy = s[:, b + c.LOSSY] == 1
        if not lossy.any():
            return
        t = s[lossy]
        # KIP-966's unclean-shutdown rule: out of the ISR and the ELR, fetch state fenced.
        old = t[:, c.Q_ISR].astype(np.int64)
        new = old & ~(1 << r)
        elr = self.rules.elr_after(t, old, new) & ~(1 << r)
        if c.alter:  # a partition change: the request in flight is stale
            self.rules.drop_request(t, (new != old) | (elr != t[:, c.Q_ELR]))
        t[:, c.Q_ISR] = new
        t[:, c.Q_ELR] = elr
        for l in range(self.n):
            t[:, c.block(l) + c.REMOTE_LEO + r] = 0
        lead = self.rules.leads(t)
        for q in range(self.n):
            sel = lead == q
            if sel.any():
                u = t[sel]
                self.rules.advance_hw(u, q)
                t[sel] = u
        t[:, b + c.LOSSY] = 0
        s[lossy] = t

    def become_follower(self, s: np.ndarray, r: int, l: int) -> None:
        c = self.codec
        b, bl = c.block(r), c.block(l)
        if c.fetch:  # truncation in the fetch path: nothing is truncated here
            s[:, b + c.LEADER] = l
            s[:, b + c.EPOCH] = s[:, c.Q_EPOCH]
            self.rules.clear_inflight(s, b)
            return
        hw = s[:, b + c.HW].astype(np.int64)
        t = self.truncate(c, self.m, s, b, bl, hw)
        self.rules.cut_log(s, b, t)
        s[:, b + c.HW] = np.minimum(hw, t)
        s[:, b + c.LEADER] = l
        s[:, b + c.EPOCH] = s[:, c.Q_EPOCH]
        self.rules.clear_inflight(s, b)

    def ask(self, s: np.ndarray, r: int, l: int, change: int) -> None:
        """ShrinkIsr or ExpandIsr with alter_partition: only the request is sent."""
        c = self.codec
        s[:, c.ALTER_LEADER] = l
        s[:, c.ALTER_CHANGE] = change
        s[:, c.ALTER_REPLICA] = r

    def alter_partition(self, s: np.ndarray, r: int) -> None:
        """AlterPartition answering a request that names ``r``: refused (broker epochs, an
        expansion of a replica that is down) or accepted (the ISR change, the ELR after it,
        then HW of the asking leader where it still leads)."""
        c, cfg = self.codec, self.config
        expand = s[:, c.ALTER_CHANGE] == 1
        p = s[:, c.ALTER_LEADER].astype(np.int64)
        accept = np.ones(len(s), dtype=bool)
        if cfg.broker_epochs:
            b = c.block(r)
            refused = s[:, b + c.ALIVE] == 0
            if c.SHUTTING is not None and not self.bug_13916:  # KIP-841: "shutting down"
                refused |= (s[:, c.SHUTTING] >> r & 1) == 1
            if self.bug_15221:  # the request carries the broker epoch it was decided on
                refused |= (s[:, b + c.LEADER] != p) | (s[:, b + c.EPOCH] != s[:, c.Q_EPOCH])
            accept &= ~(expand & refused)
        self.rules.drop_request(s)
        if not accept.any():
            return
        t = s[accept]
        old = t[:, c.Q_ISR].astype(np.int64)
        new = np.where(expand[accept], old | (1 << r), old & ~(1 << r))
        t[:, c.Q_ELR] = self.rules.elr_after(t, old, new)
        t[:, c.Q_ISR] = new
        lead = self.rules.leads(t)
        pa = p[accept]
        for q in range(self.n):
            sel = (lead == q) & (pa == q)
            if sel.any():
                u = t[sel]
                self.rules.advance_hw(u, q)
                t[sel] = u
        s[accept] = t

    def shrink(self, s: np.ndarray, r: int, l: int) -> None:
        c = self.codec
        old = s[:, c.Q_ISR].astype(np.int64)
        new = old & ~(1 << r)
        s[:, c.Q_ELR] = self.rules.elr_after(s, old, new)
        s[:, c.Q_ISR] = new
        self.rules.advance_hw(s, l)

    def expand(self, s: np.ndarray, r: int, l: int) -> None:
        c = self.codec
        old = s[:, c.Q_ISR].astype(np.int64)
        new = old | (1 << r)
        s[:, c.Q_ELR] = self.rules.elr_after(s, old, new)
        s[:, c.Q_ISR] = new
        self.rules.advance_hw(s, l)


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
        self.rules.install_leader(s, cand, new, elr)
