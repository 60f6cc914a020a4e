"""The effects of failure and leadership (docs/model.md, "Actions"): Crash, Restart,
the controller's election (its guard too) and BecomeFollower.
"""

from __future__ import annotations

import attrs

from .effects import EffectsBase, advance_hw, new_replica, new_state, put_at
from .state import EXPAND, Quorum, State, leads
from .truncation import truncation_offset


class LeadershipEffects(EffectsBase):
    """Crash, Restart, ElectLeader with the replicas it may elect, and BecomeFollower."""

    __slots__ = ()

    def crash(self, s: State, r: int, cut: int | None) -> State:
        rep = s.replicas[r]
        # (a crash ends a controlled shutdown: the stop is a crash in every respect)
        if cut is None:
            rep = new_replica(rep, alive=False, inflight=None, shutting=False)
        elif self.config.eligible_leader_replicas:
            rep = new_replica(
                rep,
                alive=False,
                inflight=None,
                log=rep.log[:cut],
                hw=min(rep.hw, cut),
                lossy=cut < len(rep.log),
                shutting=False,
            )
        else:
            rep = new_replica(rep, alive=False, inflight=None, log=rep.log[:cut], hw=min(rep.hw, cut), shutting=False)
        return new_state(s, replicas=put_at(s.replicas, r, rep), crashes=s.crashes + 1)

    def restart(self, s: State, r: int) -> State:
        n = len(s.replicas)
        rep = new_replica(s.replicas[r], alive=True, epoch=-1, leader=None, remote_leo=(0,) * n)
        q = s.quorum
        alter = q.alter
        # broker epochs: a pending expansion of r was based on a fetch of r's previous
        # incarnation; the controller would refuse it, so it is dropped now. With KAFKA-15221
        # it survives: the request may yet carry r's new broker epoch (see alter_partition).
        if (
            alter is not None
            and self.config.broker_epochs
            and not self._bug_15221
            and alter[1] == EXPAND
            and alter[2] == r
        ):
            alter = None
        if not rep.lossy:  # always, without eligible_leader_replicas
            if alter is not q.alter:
                return new_state(s, replicas=put_at(s.replicas, r, rep), quorum=attrs.evolve(q, alter=alter))
            return new_state(s, replicas=put_at(s.replicas, r, rep))
        # KIP-966's unclean-shutdown rule: the controller removes r from the ISR and the
        # ELR, and every leader forgets r's fetch position from before the crash (the
        # fence: KIP-903 broker epochs); then the quorum leader's HW step.
        isr = tuple(x for x in q.isr if x != r)
        elr = tuple(x for x in self.elr_after(s, q.elr, q.isr, isr) if x != r)
        if isr != q.isr or elr != q.elr:  # a partition change: the request is stale
            alter = None
        fenced = []
        for i, other in enumerate(s.replicas):
            if i == r:
                fenced.append(new_replica(rep, lossy=False))
            elif other.remote_leo[r]:
                fenced.append(new_replica(other, remote_leo=put_at(other.remote_leo, r, 0)))
            else:
                fenced.append(other)
        reps = tuple(fenced)
        quorum = Quorum(q.leader, q.epoch, isr, elr, alter, q.min_isr_step)
        committed = s.committed
        out = new_state(s, replicas=reps, quorum=quorum)
        ql = q.leader
        if ql is not None and leads(out, ql):
            led, committed = advance_hw(reps[ql], ql, isr, committed, self.gate(s), alter)
            out = new_state(out, replicas=put_at(reps, ql, led), committed=committed)
        return out

    def electable(self, s: State) -> list[int]:
        """The replicas the controller may elect in ``s``, in replica order, whatever its
        epoch: the election guard without ``quorum.epoch < max_leader_epoch``."""
        cfg = self.config
        reps = s.replicas
        q = s.quorum
        ql = q.leader
        replaceable = ql is None or not reps[ql].alive or reps[ql].epoch != q.epoch
        preferred = cfg.preferred_election and ql is not None and leads(s, ql)
        if not (replaceable or preferred):
            return []
        live_isr = [r for r in q.isr if reps[r].alive]
        # With no live ISR member: an ELR member may be elected (KIP-966); only when no
        # ELR member is alive either, and only if enabled, one outside both (unclean).
        live_elr = [r for r in q.elr if reps[r].alive] if not live_isr else []
        # The last-known-leader election: with the ISR and the ELR both empty, the quorum's
        # leader, alive again, may be re-elected; it then excludes an unclean election.
        last_known = cfg.last_known_leader and not q.isr and not q.elr and ql is not None and reps[ql].alive
        unclean = cfg.unclean_leader_election and not live_isr and not live_elr and not last_known
        out = []
        for c in range(len(reps)):
            if not self.acceptable(reps[c]) or (not replaceable and c == ql):
                continue
            if c in q.isr or unclean or c in live_elr or (last_known and c == ql):
                out.append(c)
        return out

    def elect(self, s: State, c: int) -> State:
        reps = s.replicas
        q = s.quorum
        if c in q.isr:  # clean
            isr = tuple(r for r in q.isr if reps[r].alive)
            elr = self.elr_after(s, q.elr, q.isr, isr) if self.config.eligible_leader_replicas else ()
        elif c in q.elr:  # from the ELR: the dead ISR members join it
            isr = (c,)
            elr = tuple(sorted(set(q.elr).union(q.isr).difference(isr)))
        else:  # unclean, or the last known leader: the ISR is {c}, the ELR cleared
            isr = (c,)
            elr = ()
        epoch = q.epoch + 1
        rep = new_replica(reps[c], leader=c, epoch=epoch, remote_leo=(0,) * len(reps), inflight=None)
        rep, committed = advance_hw(rep, c, isr, s.committed, self.gate(s))
        return new_state(
            s,
            replicas=put_at(reps, c, rep),
            quorum=Quorum(c, epoch, isr, elr, None, q.min_isr_step),
            committed=committed,
        )

    def become_follower(self, s: State, r: int, l: int) -> State:
        rep = s.replicas[r]
        if self._on_fetch:  # the fetch path truncates, on the leader's answer
            rep = new_replica(rep, leader=l, epoch=s.quorum.epoch, inflight=None)
            return new_state(s, replicas=put_at(s.replicas, r, rep))
        t = truncation_offset(self.config.truncation, rep.log, rep.hw, s.replicas[l].log)
        rep = new_replica(rep, log=rep.log[:t], hw=min(rep.hw, t), leader=l, epoch=s.quorum.epoch, inflight=None)
        return new_state(s, replicas=put_at(s.replicas, r, rep))
