"""The batch kernel: the Kafka model's actions over arrays of rows.

``KafkaBatchKernel.expand(rows)`` computes every successor of every row of a frontier
chunk with array operations: an action's enabledness is a boolean mask over the chunk,
its effect a few column updates on a copy of the enabled rows. It returns the
successors with, for each, the index of its parent row, its *choice* (its position among
the parent's enabled actions, exactly as ``KafkaModel.successors`` orders them: actions
1–15, then replica, then cut point or candidate) and its action code. The attrs model in
``model.kafka`` is the reference: differential tests check that both give the same
successors in the same order, state by state.

Everything here follows docs/model.md action by action; the comments name the rule where
the array form hides it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from kmc.checker.contract.protocol import KernelBase, columns

from .actions import (
    ACTION_NAMES,
    Action,
    action_names,
)
from .actions import (
    ALTER_PARTITION_CODE as ALTER_PARTITION,
)
from .actions import (
    BECOME_FOLLOWER_CODE as BECOME_FOLLOWER,
)
from .actions import (
    CRASH_CODE as CRASH,
)
from .actions import (
    EXPAND_ISR_CODE as EXPAND_ISR,
)
from .actions import (
    FETCH_REQUEST_CODE as FETCH_REQUEST,
)
from .actions import (
    FETCH_RESPONSE_CODE as FETCH_RESPONSE,
)
from .actions import (
    PRODUCE_CODE as PRODUCE,
)
from .actions import (
    RESTART_CODE as RESTART,
)
from .actions import (
    SHRINK_ISR_CODE as SHRINK_ISR,
)
from .batch_actions import ActionEffects, Elections
from .batch_operators import OperatorActions
from .batch_rules import RowRules
from .config import ACKS_ONE, HIGH_WATERMARK, KAFKA_13916, LEADER_EPOCH_21, Config
from .rows import NONE, RowCodec, lexicographic_min
from .state import State
from .symmetry import symmetries


class KafkaBatchKernel(KernelBase):
    """The batch form of ``KafkaModel(config)``: which actions are enabled in which rows
    (``expand``), over the actions' effects (``model.batch_actions``, elections
    among them) and the rules they share (``model.batch_rules``), three
    objects it holds.

    Args:
        config: a ``model.Config``.
    """

    by_columns = True  # the properties' array forms compare whole columns (invariants.kafka)
    # compared with the model on a sample of each level: the suite compares it on every state
    # of many configurations (tests/test_fetch_kernel.py and the engines' differential tests);
    # on every state it would cost what docs/writing-a-model.md measures
    sampled_comparison = True

    def __init__(self, config: Config) -> None:
        self.config = config
        self.action_names = action_names(config)
        self.codec = c = RowCodec(config)
        self.width = c.width
        self.n, self.m = c.n, c.m
        self.rules = RowRules(c, config)
        self.effects = ActionEffects(self.rules)
        self.elections = Elections(self.rules)
        # the operators' actions take the codes after the protocol's (their positions in
        # action_names, which lists only those the configuration can fire)
        codes = {name: k for k, name in enumerate(self.action_names) if name not in ACTION_NAMES}
        self.operators = OperatorActions(self.rules, codes)
        self._perms: list[Callable[[np.ndarray], np.ndarray]] | None = None  # made at the first canonical()

    def kind_mask(
        self, action: str, kind: str, rows: np.ndarray, parents: np.ndarray, codes: np.ndarray, after: np.ndarray
    ) -> np.ndarray:
        """Per step of the arrays: whether it is a step of ``action`` of ``kind`` (one of the
        kinds coverage names, ``coverage_names.row_kinds``; the model's ``kind_of`` per state)."""
        from .coverage_kinds import KINDS_OF, row_kinds

        number = KINDS_OF[action].index(kind)
        out = np.zeros(len(parents), dtype=bool)
        where, kinds = row_kinds(self, rows, parents, codes, after).get(action, ((), ()))
        if len(where):
            out[np.asarray(where)[np.asarray(kinds) == number]] = True
        return out

    # -- the protocol the batch engine uses --------------------------------------------

    def encode(self, state: State) -> np.ndarray:
        return self.codec.encode(state)

    def decode(self, row: np.ndarray) -> State:
        return self.codec.decode(row)

    def init_rows(self, states: Sequence[State]) -> np.ndarray:
        """The rows of ``states`` (the model's initial states), in order."""
        return np.stack([self.codec.encode(s) for s in states])

    def action(self, code: int, replica: int, cut: int | None = None) -> Action:
        return Action(self.action_names[code], replica, cut)

    def canonical(self, rows: np.ndarray) -> np.ndarray:
        """The least row over the allowed replica permutations of each row (symmetry)."""
        if self._perms is None:
            self._perms = [self.codec.permuter(p) for p in symmetries(self.config)]
        if len(self._perms) == 1:
            return rows
        return lexicographic_min([p(rows) for p in self._perms])

    # -- successors ---------------------------------------------------------------------

    def expand(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every successor of every row.

        Returns ``(parents, choices, codes, successors)``: ``parents`` (``int64``) the
        index of each successor's parent in ``rows``, ``choices`` (``int16``) its position
        among the parent's enabled actions, ``codes`` (``int8``) its action (an index of
        ``ACTION_NAMES``), and ``successors`` the rows. Successors come grouped by
        action, replica and cut point, each group in parent order; sort by
        ``(parents, choices)`` for the model's order.
        """
        g = SuccessorGroups(self, rows)
        # the enabling conditions read columns (g.cols); the successors copy g.rows
        self._emit_data_path(g)  # 1.-3.
        self._emit_failures(g)  # 4.-5.
        self.elections.emit(g, g.cols)  # 6. ElectLeader(n)
        self._emit_followers(g)  # 7.
        self._emit_isr_changes(g)  # 8.-10.
        # 11.-15. the operators' actions (ControlledShutdown, ShutdownComplete, ChangeMinIsr,
        # DiskFailure, ApplyMinIsr), each only with its option
        self.operators.emit(g, g.cols)
        return g.result()

    def _emit_data_path(self, g: SuccessorGroups) -> None:
        """Produce(l), FetchRequest(f) from the leader l, and FetchResponse(f)."""
        rows = g.cols
        fx = self.effects
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
                g.emit(PRODUCE, ok, fx.produce_acks_one, l)
        elif cfg.max_messages:
            min_isr = self.rules.leader_min_isr(rows)  # the leader's broker's
            ok = (lead >= 0) & (rows[:, c.PRODUCED] < cfg.max_messages) & (g.isr_size >= min_isr)
            for l in range(n):
                g.emit(PRODUCE, ok & (lead == l), fx.produce, l)
        # 2. FetchRequest(f) from the leader l
        for f in range(n):
            bf = c.block(f)
            base = (rows[:, bf + c.ALIVE] == 1) & (rows[:, bf + c.INFLIGHT_LEADER] == NONE)
            for l in range(n):
                if l == f:
                    continue
                bl = c.block(l)
                ok = (
                    base
                    & (lead == l)
                    & (rows[:, bf + c.LEADER] == l)
                    & (rows[:, bf + c.EPOCH] == rows[:, bl + c.EPOCH])
                )
                g.emit(FETCH_REQUEST, ok, fx.fetch_request, f, l)
        # 3. FetchResponse(f)
        for f in range(n):
            g.emit(FETCH_RESPONSE, rows[:, c.block(f) + c.INFLIGHT_LEADER] != NONE, fx.fetch_response, f)

    def _emit_failures(self, g: SuccessorGroups) -> None:
        """Crash(r), one successor per cut point with unflushed loss, and Restart(r)."""
        rows = g.cols
        fx = self.effects
        cfg = self.config
        c = self.codec
        n = self.n
        can_crash = rows[:, c.CRASHES] < cfg.max_crashes
        for r in range(n):
            b = c.block(r)
            ok = can_crash & (rows[:, b + c.ALIVE] == 1)
            if cfg.unflushed_loss:
                length = rows[:, b + c.LEO]
                for cut in range(self.m + 1):
                    g.emit(CRASH, ok & (cut <= length), fx.crash, r, cut)
            else:
                g.emit(CRASH, ok, fx.crash, r, None)
        # 5. Restart(r)
        for r in range(n):
            g.emit(RESTART, rows[:, c.block(r) + c.ALIVE] == 0, fx.restart, r)

    def _emit_followers(self, g: SuccessorGroups) -> None:
        """BecomeFollower(r), truncating against the quorum leader ql."""
        rows = g.cols
        fx = self.effects
        cfg = self.config
        c = self.codec
        n = self.n
        lead = g.lead
        ql = rows[:, c.Q_LEADER]
        qe = rows[:, c.Q_EPOCH]
        for r in range(n):
            b = c.block(r)
            base = (rows[:, b + c.ALIVE] == 1) & (rows[:, b + c.EPOCH] < qe)
            for l in range(n):
                if l == r:
                    continue
                ok = base & (ql == l)
                if cfg.truncation != HIGH_WATERMARK and not c.fetch:
                    ok &= lead == l  # it answers OffsetsForLeaderEpoch (not asked when truncating on fetch)
                g.emit(BECOME_FOLLOWER, ok, fx.become_follower, r, l)

    def _emit_isr_changes(self, g: SuccessorGroups) -> None:
        """ShrinkIsr(r) and ExpandIsr(r) by the leader l (with ``alter_partition``, the
        leader's request), then AlterPartition: the controller answers the request in flight."""
        rows = g.cols
        c = self.codec
        isr = rows[:, c.Q_ISR].astype(np.int64)
        ask = self.config.alter_partition
        # with alter_partition a leader asks only while no request of its is in flight
        free = rows[:, c.ALTER_LEADER] == NONE if ask else None
        self._emit_shrinks(g, isr, free)
        self._emit_expansions(g, isr, free)
        # 10. AlterPartition: the controller answers the request in flight (one per row)
        if ask:
            for r in range(self.n):
                g.emit(ALTER_PARTITION, rows[:, c.ALTER_REPLICA] == r, self.effects.alter_partition, r)

    def _emit_shrinks(self, g: SuccessorGroups, isr: np.ndarray, free: np.ndarray | None) -> None:
        """ShrinkIsr(r) by the leader l: ``r`` down, or behind the leader's log end."""
        rows = g.cols
        fx = self.effects
        c = self.codec
        n = self.n
        lead = g.lead
        for r in range(n):
            b = c.block(r)
            in_isr = (isr >> r & 1) == 1
            for l in range(n):
                if l == r:
                    continue
                bl = c.block(l)
                lagging = (rows[:, b + c.ALIVE] == 0) | (rows[:, bl + c.REMOTE_LEO + r] < rows[:, bl + c.LEO])
                ok = (lead == l) & in_isr & lagging
                if free is not None:  # alter_partition: the leader asks
                    g.emit(SHRINK_ISR, ok & free, fx.ask, r, l, 0)
                else:
                    g.emit(SHRINK_ISR, ok, fx.shrink, r, l)

    def _emit_expansions(self, g: SuccessorGroups, isr: np.ndarray, free: np.ndarray | None) -> None:
        """ExpandIsr(r) by the leader l: ``r`` follows it in the quorum's epoch and has fetched up
        to its HW (and, under the 2.1 rule, its epoch start offset; KIP-841: not shutting)."""
        rows = g.cols
        fx = self.effects
        cfg = self.config
        c = self.codec
        n = self.n
        lead = g.lead
        qe = rows[:, c.Q_EPOCH]
        # KAFKA-7128 (2.1): each leader's epoch start offset, once per leader, where it leads
        leso = {}
        if cfg.truncation == LEADER_EPOCH_21:
            for l in range(n):
                where = np.nonzero(lead == l)[0]
                if len(where):
                    full = np.zeros(len(rows), dtype=np.int64)
                    full[where] = self.rules.leso(np.take(g.rows, where, axis=0), l)
                    leso[l] = full
        for r in range(n):
            b = c.block(r)
            out_isr = (isr >> r & 1) == 0
            for l in range(n):
                if l == r:
                    continue
                bl = c.block(l)
                remote = rows[:, bl + c.REMOTE_LEO + r]
                ok = (
                    (lead == l)
                    & out_isr
                    & (rows[:, b + c.ALIVE] == 1)
                    & (rows[:, b + c.LEADER] == l)
                    & (rows[:, b + c.EPOCH] == qe)
                    & (remote >= rows[:, bl + c.HW])
                )
                if cfg.truncation == LEADER_EPOCH_21:
                    if l not in leso:
                        continue  # l leads in no row: nothing to expand
                    ok &= remote >= leso[l]  # KAFKA-7128
                if c.SHUTTING is not None and not cfg.has_bug(KAFKA_13916):
                    ok &= (rows[:, c.SHUTTING] >> r & 1) == 0  # KIP-841: not in controlled shutdown
                if free is not None:  # alter_partition: the leader asks
                    g.emit(EXPAND_ISR, ok & free, fx.ask, r, l, 1)
                else:
                    g.emit(EXPAND_ISR, ok, fx.expand, r, l)

    def fair_codes(
        self, rows: np.ndarray, parents: np.ndarray, choices: np.ndarray, codes: np.ndarray, succ: np.ndarray
    ) -> np.ndarray:
        """The code of each successor's fair instance, -1 where the step is not fair
        (``model.fairness.fair_codes``)."""
        from .fairness import fair_codes

        return fair_codes(self, rows, parents, choices, codes, succ)

    # -- the rules the properties' masks read -------------------------------------------

    def leads(self, rows: np.ndarray) -> np.ndarray:
        """The replica that leads each row, or -1 (``RowRules.leads``)."""
        return self.rules.leads(rows)

    def alive_mask(self, rows: np.ndarray) -> np.ndarray:
        """Each row's live replicas as a bit mask (``RowRules.alive_mask``)."""
        return self.rules.alive_mask(rows)

    def election_kinds(
        self, rows: np.ndarray, alive: np.ndarray, lead: np.ndarray
    ) -> list[tuple[int, str, np.ndarray]]:
        """``(candidate, kind, mask)`` of every ElectLeader (``Elections.election_kinds``)."""
        return self.elections.election_kinds(rows, alive, lead)


class SuccessorGroups:
    """Collects the successor groups of one ``expand`` call."""

    def __init__(self, kernel: KafkaBatchKernel, rows: np.ndarray) -> None:
        self.kernel = kernel
        self.rows = rows
        self.cols = cols = columns(rows)  # the same rows a column at a time: what the conditions read
        self.lead = kernel.leads(cols)
        self.isr_size = kernel.rules.isr_size(cols)
        self.alive = kernel.alive_mask(cols)
        self.count = np.zeros(len(rows), dtype=np.int16)  # enabled actions so far, per row
        self.parts: list[tuple[np.ndarray, np.ndarray, int, Callable[..., None], tuple[object, ...]]] = []

    def emit(self, code: int, mask: np.ndarray, effect: Callable[..., None], *args: object) -> None:
        """Record a group: the rows where ``mask`` holds take action ``code``, whose
        effect ``effect(rows, *args)`` is applied later, in ``result``, to their copies
        in place (so every successor is copied once, straight into the output)."""
        idx = np.nonzero(mask)[0]
        if not len(idx):
            return
        choice = self.count[idx]
        self.count[idx] += 1
        self.parts.append((idx, choice, code, effect, args))

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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
