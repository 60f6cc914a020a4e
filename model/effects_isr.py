"""The effects that change the ISR (docs/model.md, "Actions"): ShrinkIsr and ExpandIsr,
direct or as an AlterPartition request and the controller's answer to it.
"""

from __future__ import annotations

from .effects import EffectsBase, advance_hw, new_state, put_at
from .state import EXPAND, SHRINK, Quorum, State, leads


class IsrEffects(EffectsBase):
    """ShrinkIsr, ExpandIsr, and the AlterPartition round trip."""

    __slots__ = ()

    def ask(self, s: State, l: int, change: str, r: int) -> State:
        """ShrinkIsr and ExpandIsr with ``alter_partition``: the leader only sends the
        controller its request; nothing else changes until AlterPartition answers."""
        q = s.quorum
        return new_state(s, quorum=Quorum(q.leader, q.epoch, q.isr, q.elr, (l, change, r), q.min_isr_step))

    def alter_partition(self, s: State) -> State:
        """AlterPartition, the controller's answer to the request in flight: refused (with
        ``broker_epochs``, an expansion of a replica that is down), or accepted: the ISR
        change, the ELR after it, then HW of the asking leader if it still leads."""
        q = s.quorum
        assert q.alter is not None  # AlterPartition is enabled only with a request in flight
        p, change, r = q.alter
        if change == EXPAND and self.config.broker_epochs and self.refuses_expansion(s, p, r):
            return new_state(s, quorum=Quorum(q.leader, q.epoch, q.isr, q.elr, None, q.min_isr_step))
        if change == SHRINK:
            isr = tuple(x for x in q.isr if x != r)
        else:
            isr = tuple(sorted(set(q.isr).union((r,))))
        elr = self.elr_after(s, q.elr, q.isr, isr)
        out = new_state(s, quorum=Quorum(q.leader, q.epoch, isr, elr, None, q.min_isr_step))
        if leads(out, p):
            rep, committed = advance_hw(s.replicas[p], p, isr, s.committed, self.gate(s))
            if rep is not s.replicas[p]:
                out = new_state(out, replicas=put_at(s.replicas, p, rep), committed=committed)
        return out

    def refuses_expansion(self, s: State, p: int, r: int) -> bool:
        """With ``broker_epochs``, does the controller refuse ``p``'s request to add ``r``:
        ``r`` is down, or in controlled shutdown (unless KAFKA-13916), or, with KAFKA-15221,
        the request still carries the broker epoch of the incarnation it was decided on
        (``r`` does not follow ``p`` in the quorum's epoch yet)?"""
        rep = s.replicas[r]
        if not rep.alive or (rep.shutting and not self._bug_13916):
            return True
        return self._bug_15221 and not (rep.leader == p and rep.epoch == s.quorum.epoch)

    def shrink(self, s: State, r: int, l: int) -> State:
        q = s.quorum
        isr = tuple(x for x in q.isr if x != r)
        elr = self.elr_after(s, q.elr, q.isr, isr) if self.config.eligible_leader_replicas else ()
        rep, committed = advance_hw(s.replicas[l], l, isr, s.committed, self.gate(s))
        return new_state(
            s,
            replicas=put_at(s.replicas, l, rep),
            quorum=Quorum(q.leader, q.epoch, isr, elr, None, q.min_isr_step),
            committed=committed,
        )

    def expand(self, s: State, r: int, l: int) -> State:
        q = s.quorum
        isr = tuple(sorted(q.isr + (r,)))
        elr = self.elr_after(s, q.elr, q.isr, isr) if self.config.eligible_leader_replicas else ()
        # Without the HW gate HW(l) never moves here (adding a member only lowers the ISR
        # minimum); with it, reaching min ISR is what lets a frozen HW move.
        rep, committed = advance_hw(s.replicas[l], l, isr, s.committed, self.gate(s))
        if rep is s.replicas[l]:
            return new_state(s, quorum=Quorum(q.leader, q.epoch, isr, elr, None, q.min_isr_step))
        return new_state(
            s,
            replicas=put_at(s.replicas, l, rep),
            quorum=Quorum(q.leader, q.epoch, isr, elr, None, q.min_isr_step),
            committed=committed,
        )
