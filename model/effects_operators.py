"""The operator's actions (docs/model.md, "Operator actions"): a controlled shutdown and
its completion, changing min.insync.replicas at run time, and a failed log directory.
"""

from __future__ import annotations

import attrs

from .actions import CONTROLLED_SHUTDOWN, SHUTDOWN_COMPLETE, Action
from .effects import EffectsBase, advance_hw, new_replica, new_state, put_at
from .state import Quorum, State, leads


class OperatorEffects(EffectsBase):
    """ControlledShutdown, ShutdownComplete, ChangeMinIsr, ApplyMinIsr and DiskFailure."""

    __slots__ = ()

    def controlled_shutdown(self, s: State, r: int) -> list[tuple[Action, State]]:
        """ControlledShutdown(r): the operator asks ``r`` to stop and the controller answers
        in the same step; ``r`` is marked, taken out of the ISR (into the ELR below min
        ISR) and, if it is the quorum's leader, replaced. Every successor, in candidate
        order (none when the quorum's leader ``r`` is at the last leader epoch)."""
        cfg = self.config
        reps = s.replicas
        q = s.quorum
        isr = q.isr
        isr1 = tuple(x for x in isr if x != r)
        elr1 = self.elr_after(s, q.elr, isr, isr1) if r in isr else q.elr
        marked = put_at(reps, r, new_replica(reps[r], shutting=True))
        count = s.controlled_shutdowns + 1
        ql = q.leader
        action = Action(CONTROLLED_SHUTDOWN, r)
        if ql != r:
            if r not in isr:  # no partition change: only the mark
                return [(action, new_state(s, replicas=marked, controlled_shutdowns=count))]
            alter = None if cfg.alter_partition else q.alter  # the ISR changed: a request is stale
            quorum = Quorum(ql, q.epoch, isr1, elr1, alter, q.min_isr_step)
            out = new_state(s, replicas=marked, quorum=quorum, controlled_shutdowns=count)
            if ql is not None and leads(out, ql):
                led, committed = advance_hw(marked[ql], ql, isr1, s.committed, self.gate(s), alter)
                if led is not marked[ql]:
                    out = new_state(out, replicas=put_at(marked, ql, led), committed=committed)
            return [(action, out)]
        if q.epoch >= cfg.max_leader_epoch:
            return []
        epoch = q.epoch + 1
        live1 = tuple(x for x in isr1 if reps[x].alive)
        elr_live = any(reps[x].alive for x in elr1)
        succ = []
        for n in range(len(reps)):
            if n == r or not self.acceptable(reps[n]):
                continue
            if n in isr1:  # clean
                new_isr = live1
                new_elr = self.elr_after(s, elr1, isr1, live1)
            elif cfg.eligible_leader_replicas and not live1 and n in elr1:
                new_isr = (n,)
                new_elr = tuple(sorted(set(elr1).union(isr1).difference(new_isr)))
            elif cfg.unclean_leader_election and not live1 and not elr_live:
                new_isr, new_elr = (n,), ()
            else:
                continue
            rep = new_replica(reps[n], leader=n, epoch=epoch, remote_leo=(0,) * len(reps), inflight=None)
            rep, committed = advance_hw(rep, n, new_isr, s.committed, self.gate(s))
            quorum = Quorum(n, epoch, new_isr, new_elr, None, q.min_isr_step)
            nxt = new_state(
                s, replicas=put_at(marked, n, rep), quorum=quorum, committed=committed, controlled_shutdowns=count
            )
            succ.append((Action(CONTROLLED_SHUTDOWN, r, to=n), nxt))
        if succ:
            return succ
        # Nobody may lead: the controller writes no leader, in a new leader epoch; the ISR
        # keeps r when it would be empty, unless the eligible leader replicas allow that.
        new_isr = isr1 if isr1 or cfg.eligible_leader_replicas else isr
        quorum = Quorum(None, epoch, new_isr, elr1, None, q.min_isr_step)
        return [(action, new_state(s, replicas=marked, quorum=quorum, controlled_shutdowns=count))]

    def shutdown_complete(self, s: State, r: int) -> tuple[Action, State]:
        """ShutdownComplete(r): ``r`` stops cleanly, its log flushed (nothing lost, not
        lossy); the quorum is not told and no crash is counted."""
        rep = new_replica(s.replicas[r], alive=False, inflight=None, shutting=False)
        return Action(SHUTDOWN_COMPLETE, r), new_state(s, replicas=put_at(s.replicas, r, rep))

    def change_min_isr(self, s: State) -> State:
        """ChangeMinIsr: the controller takes the next value of ``min_isr_changes`` (and,
        without ``min_isr_lag``, the leader's broker with it). Since the fix of KAFKA-16540
        the controller clears the ELR (a change of an unchanged value too), which drops
        the AlterPartition request in flight when the ELR was not empty; with the bug the
        ELR stays. No HW step: a lowered min ISR lets the HW move at the leader's next one."""
        q = s.quorum
        elr, alter = q.elr, q.alter
        if self.config.eligible_leader_replicas and not self._bug_16540:
            if elr:
                alter = None
            elr = ()
        return new_state(s, quorum=Quorum(q.leader, q.epoch, q.isr, elr, alter, q.min_isr_step + 1))

    def apply_min_isr(self, s: State) -> State:
        """ApplyMinIsr (``min_isr_lag``): the leader's broker applies the next change the
        controller has made. Nothing else, no HW step."""
        return attrs.evolve(s, leader_min_isr_step=s.leader_min_isr_step + 1)

    def disk_failure(self, s: State, r: int) -> State:
        """DiskFailure(r): ``r``'s log directory fails. Its log is gone (log, HW, response in
        flight, its own view of the others' log ends); the controller removes ``r`` from the
        ISR as it removes a fenced broker (into the ELR when the ISR falls below its min
        ISR; without eligible leader replicas an ISR ``{r}`` stays), every leader forgets
        ``r``'s log end, and a request in flight is dropped if the ISR or the ELR changed.
        Fixed: the partition stays offline on ``r`` (down, and with eligible leader
        replicas its restart is unclean). KAFKA-16234: the partition is re-created empty
        and ``r`` stays up; if it believed it led, it forgets its leadership (no leader,
        epoch -1). Then the quorum leader's HW step, if it leads."""
        cfg = self.config
        n = len(s.replicas)
        q = s.quorum
        old = q.isr
        isr = tuple(x for x in old if x != r)
        if not isr and not cfg.eligible_leader_replicas:
            isr = old  # never emptied without eligible leader replicas
        elr = self.elr_after(s, q.elr, old, isr)
        alter = q.alter if isr == old and elr == q.elr else None
        rep = s.replicas[r]
        if self._bug_16234:
            mine = rep.leader == r
            rep = new_replica(
                rep,
                log=(),
                hw=0,
                inflight=None,
                remote_leo=(0,) * n,
                leader=None if mine else rep.leader,
                epoch=-1 if mine else rep.epoch,
            )
        else:
            rep = new_replica(
                rep,
                alive=False,
                log=(),
                hw=0,
                inflight=None,
                remote_leo=(0,) * n,
                lossy=cfg.eligible_leader_replicas,
                shutting=False,  # offline as after a crash: a controlled shutdown ends with it
            )
        reps = []
        for i, other in enumerate(s.replicas):
            if i == r:
                reps.append(rep)
            elif other.remote_leo[r]:
                reps.append(new_replica(other, remote_leo=put_at(other.remote_leo, r, 0)))
            else:
                reps.append(other)
        quorum = Quorum(q.leader, q.epoch, isr, elr, alter, q.min_isr_step)
        out = attrs.evolve(s, replicas=tuple(reps), quorum=quorum, disk_failures=s.disk_failures + 1)
        ql = q.leader
        if ql is not None and leads(out, ql):
            led, committed = advance_hw(out.replicas[ql], ql, isr, s.committed, self.gate(s), alter)
            out = new_state(out, replicas=put_at(out.replicas, ql, led), committed=committed)
        return out
