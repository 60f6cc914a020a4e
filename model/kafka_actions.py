"""The effects of the Kafka model's actions on a state (docs/model.md, "Actions"), and the
election guard: what ``model.kafka.KafkaModel`` builds successors with.

Each effect takes a state and returns the successor; ``KafkaModel.successors`` decides
which are enabled.
"""

from __future__ import annotations

import attrs

from .actions import CONTROLLED_SHUTDOWN, PRODUCE, SHUTDOWN_COMPLETE, Action
from .config import KAFKA_13141, KAFKA_13916, KAFKA_14704, KAFKA_15221, KAFKA_16234, KAFKA_16540
from .fetch_path import diverging_epoch, truncation_on_answer
from .state import (
    EXPAND,
    SHRINK,
    Fetch,
    Quorum,
    Replica,
    State,
    elr_after,
    leader_min_isr,
    leader_of,
    leads,
    min_isr,
)
from .truncation import truncation_offset


def _put(replicas, i, rep) -> tuple:
    return replicas[:i] + (rep,) + replicas[i + 1 :]


# The search loop builds millions of states: these construct them directly, which is
# about three times faster than ``attrs.evolve`` (no field introspection per call).
_KEEP = object()


def _replica(
    r,
    alive=_KEEP,
    log=_KEEP,
    hw=_KEEP,
    epoch=_KEEP,
    leader=_KEEP,
    remote_leo=_KEEP,
    inflight=_KEEP,
    lossy=_KEEP,
    shutting=_KEEP,
) -> Replica:
    return Replica(
        r.alive if alive is _KEEP else alive,
        r.log if log is _KEEP else log,
        r.hw if hw is _KEEP else hw,
        r.epoch if epoch is _KEEP else epoch,
        r.leader if leader is _KEEP else leader,
        r.remote_leo if remote_leo is _KEEP else remote_leo,
        r.inflight if inflight is _KEEP else inflight,
        r.lossy if lossy is _KEEP else lossy,
        r.shutting if shutting is _KEEP else shutting,
    )


def _state(
    s,
    replicas=_KEEP,
    quorum=_KEEP,
    produced=_KEEP,
    crashes=_KEEP,
    committed=_KEEP,
    acked=_KEEP,
    controlled_shutdowns=_KEEP,
) -> State:
    return State(
        s.replicas if replicas is _KEEP else replicas,
        s.quorum if quorum is _KEEP else quorum,
        s.produced if produced is _KEEP else produced,
        s.crashes if crashes is _KEEP else crashes,
        s.committed if committed is _KEEP else committed,
        s.acked if acked is _KEEP else acked,
        s.controlled_shutdowns if controlled_shutdowns is _KEEP else controlled_shutdowns,
        s.leader_min_isr_step,
        s.disk_failures,
    )


def _advance_hw(rep, l, isr, committed, gate=0, alter=None) -> tuple[Replica, tuple]:
    """HW(l) of docs/model.md: the leader's HW rises to the smallest log end in the ISR.

    ``isr`` is the ISR in force after the step. With ``hw_requires_min_isr`` the caller
    passes ``gate = min_insync_replicas``: the HW then does not move while the ISR is
    smaller (otherwise ``gate`` is 0 and never stops it). ``alter`` is the AlterPartition
    request in flight after the step: while it is ``l``'s own request to add a replica,
    that replica counts too (the maximal ISR); the gate still reads ``isr``.

    Returns the leader's replica and the new ``committed`` set.
    """
    if len(isr) < gate:
        return rep, committed
    m = len(rep.log)
    remote = rep.remote_leo
    for f in isr:
        if f != l and remote[f] < m:
            m = remote[f]
    if alter is not None and alter[0] == l and alter[1] == EXPAND and remote[alter[2]] < m:
        m = remote[alter[2]]
    if m <= rep.hw:
        return rep, committed
    log = rep.log
    added = {(o,) + log[o] for o in range(rep.hw, m)}
    return _replica(rep, hw=m), tuple(sorted(added.union(committed)))


class KafkaEffects:
    """The action effects of ``KafkaModel`` for one configuration, and its election guard.

    Args:
        config: the model's ``Config``.
    """

    __slots__ = (
        "config",
        "_gate",
        "_on_fetch",
        "_bug_13141",
        "_bug_14704",
        "_bug_13916",
        "_bug_15221",
        "_moves",
        "_bug_16540",
        "_bug_16234",
    )

    def __init__(self, config) -> None:
        self.config = config
        # min_insync_replicas under hw_requires_min_isr, else 0: see _advance_hw.
        self._gate = config.min_insync_replicas if config.hw_requires_min_isr else 0
        self._on_fetch = config.truncate_on_fetch
        self._bug_13141 = config.has_bug(KAFKA_13141)
        self._bug_14704 = config.has_bug(KAFKA_14704)
        self._bug_13916 = config.has_bug(KAFKA_13916)
        self._bug_15221 = config.has_bug(KAFKA_15221)
        # Can min ISR change (min_isr_changes)? If not, every min ISR is min_insync_replicas.
        self._moves = bool(config.min_isr_changes)
        self._bug_16540 = config.has_bug(KAFKA_16540)
        self._bug_16234 = config.has_bug(KAFKA_16234)

    # -- the two min ISRs (docs/model.md, "Operator actions") --------------------------

    def gate(self, s) -> int:
        """The HW gate of ``_advance_hw`` in ``s``: the leader's min ISR under
        ``hw_requires_min_isr``, else 0. No step that moves an HW changes a min ISR, so
        the state before a step gives the gate after it."""
        if not self._moves or not self._gate:
            return self._gate
        return leader_min_isr(self.config, s)

    def leader_min_isr(self, s) -> int:
        """The min ISR the leader's broker uses in ``s`` (Produce's guard, the ``acks =
        "all"`` rule)."""
        return leader_min_isr(self.config, s) if self._moves else self.config.min_insync_replicas

    def elr_after(self, s, elr, old_isr, new_isr) -> tuple:
        """``elr_after`` with the controller's min ISR in ``s``."""
        return elr_after(self.config, elr, old_isr, new_isr, min_isr(self.config, s) if self._moves else None)

    # -- actions ------------------------------------------------------------------

    def produce(self, s, l) -> State:
        rep = s.replicas[l]
        rep = _replica(rep, log=rep.log + ((rep.epoch, s.produced),))
        rep, committed = _advance_hw(rep, l, s.quorum.isr, s.committed, self.gate(s), s.quorum.alter)
        return _state(s, replicas=_put(s.replicas, l, rep), produced=s.produced + 1, committed=committed)

    def produce_acks_one(self, s) -> list[tuple[Action, State]]:
        """Produce under ``acks = "1"``: every replica that believes it leads (alive and its
        own leader, whatever the controller decided since) may append, min ISR or not, and
        the record is acknowledged at once; HW(l) follows only if ``l`` really leads."""
        if s.produced >= self.config.max_messages:
            return []
        out = []
        for l, rep in enumerate(s.replicas):
            if not (rep.alive and rep.leader == l):
                continue
            record = (rep.epoch, s.produced)
            acked = tuple(sorted(s.acked + ((len(rep.log),) + record,)))
            rep = _replica(rep, log=rep.log + (record,))
            committed = s.committed
            if leads(s, l):
                rep, committed = _advance_hw(rep, l, s.quorum.isr, committed, self.gate(s), s.quorum.alter)
            out.append(
                (
                    Action(PRODUCE, l),
                    _state(
                        s, replicas=_put(s.replicas, l, rep), produced=s.produced + 1, committed=committed, acked=acked
                    ),
                )
            )
        return out

    def acknowledge(self, before, after) -> State:
        """The acknowledgements of ``acks = "all"`` after one step (the rule of HW(l)): the
        records that the step brought below the HW of the replica leading after it, and
        that it wrote in the epoch it leads now (their produce requests are still waiting
        there), if the ISR after the step has at least ``min_insync_replicas`` members.

        Reading the two states is exact: HW(l) is the only way the HW of a leading replica
        moves (a follower's HW is set by its own fetch response, truncation or crash, and
        none of those replicas leads after the step), and ElectLeader's HW(n) passes only
        records of older epochs, which this rule never acknowledges.
        """
        l = leader_of(after)
        if l is None or len(after.quorum.isr) < self.leader_min_isr(after):
            return after
        old, rep = before.replicas[l].hw, after.replicas[l]
        if rep.hw <= old:
            return after
        new = [(o,) + rep.log[o] for o in range(old, rep.hw) if rep.log[o][0] == rep.epoch]
        if not new:
            return after
        return _state(after, acked=tuple(sorted(set(after.acked).union(new))))

    def fetch_request(self, s, f, l) -> State:
        if self._on_fetch:
            div = diverging_epoch(s, f, l)
            if div is not None:
                return self.diverging_answer(s, f, l, div)
        reps = s.replicas
        fol, led = reps[f], reps[l]
        o = min(len(fol.log), len(led.log))
        led = _replica(led, remote_leo=_put(led.remote_leo, f, o))
        led, committed = _advance_hw(led, l, s.quorum.isr, s.committed, self.gate(s), s.quorum.alter)
        fol = _replica(fol, inflight=Fetch(l, led.epoch, o, led.log[o:], led.hw))
        reps = _put(_put(reps, l, led), f, fol)
        return _state(s, replicas=reps, committed=committed)

    def diverging_answer(self, s, f, l, div) -> State:
        """FetchRequest whose last epoch diverges from the leader's cache
        (``truncate_on_fetch``): the leader answers with the diverging epoch ``div`` =
        ``(E', O')``, no records and its HW, and records nothing of the follower; with
        KAFKA-13141 it first takes the fetch offset as the follower's log end, then HW(l)."""
        reps = s.replicas
        fol, led = reps[f], reps[l]
        committed = s.committed
        if self._bug_13141:
            led = _replica(led, remote_leo=_put(led.remote_leo, f, len(fol.log)))
            led, committed = _advance_hw(led, l, s.quorum.isr, committed, self.gate(s), s.quorum.alter)
            reps = _put(reps, l, led)
        e2, o2 = div
        fol = _replica(fol, inflight=Fetch(l, led.epoch, o2, (), led.hw, e2))
        return _state(s, replicas=_put(reps, f, fol), committed=committed)

    def fetch_response(self, s, f) -> State:
        fol = s.replicas[f]
        resp = fol.inflight
        if resp.diverging is not None:
            return self.diverging_response(s, f)
        if fol.alive and fol.leader == resp.leader and fol.epoch == resp.epoch:
            log = fol.log[: resp.start] + resp.records
            fol = _replica(fol, log=log, hw=min(resp.leader_hw, len(log)), inflight=None)
        else:  # stale: dropped
            fol = _replica(fol, inflight=None)
        return _state(s, replicas=_put(s.replicas, f, fol))

    def diverging_response(self, s, f) -> State:
        """FetchResponse on a diverging answer ``(E', O')``: unless stale, the follower
        truncates to ``truncation_on_answer`` (its HW no higher) and the response is gone.
        With KAFKA-14704 this takes two steps: first the follower sets its HW to the
        answer's (no higher than its log end) and marks the response applied; the
        truncation comes with the next FetchResponse."""
        fol = s.replicas[f]
        resp = fol.inflight
        if not (fol.alive and fol.leader == resp.leader and fol.epoch == resp.epoch):  # stale: dropped
            fol = _replica(fol, inflight=None)
        elif self._bug_14704 and not resp.applied:
            applied = Fetch(resp.leader, resp.epoch, resp.start, (), resp.leader_hw, resp.diverging, True)
            fol = _replica(fol, hw=min(resp.leader_hw, len(fol.log)), inflight=applied)
        else:
            t = truncation_on_answer(fol.log, resp.diverging, resp.start)
            fol = _replica(fol, log=fol.log[:t], hw=min(fol.hw, t), inflight=None)
        return _state(s, replicas=_put(s.replicas, f, fol))

    def crash(self, s, r, cut) -> State:
        rep = s.replicas[r]
        # (a crash ends a controlled shutdown: the stop is a crash in every respect)
        if cut is None:
            rep = _replica(rep, alive=False, inflight=None, shutting=False)
        elif self.config.eligible_leader_replicas:
            rep = _replica(
                rep,
                alive=False,
                inflight=None,
                log=rep.log[:cut],
                hw=min(rep.hw, cut),
                lossy=cut < len(rep.log),
                shutting=False,
            )
        else:
            rep = _replica(rep, alive=False, inflight=None, log=rep.log[:cut], hw=min(rep.hw, cut), shutting=False)
        return _state(s, replicas=_put(s.replicas, r, rep), crashes=s.crashes + 1)

    def restart(self, s, r) -> State:
        n = len(s.replicas)
        rep = _replica(s.replicas[r], alive=True, epoch=-1, leader=None, remote_leo=(0,) * n)
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
                return _state(s, replicas=_put(s.replicas, r, rep), quorum=attrs.evolve(q, alter=alter))
            return _state(s, replicas=_put(s.replicas, r, rep))
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
                fenced.append(_replica(rep, lossy=False))
            elif other.remote_leo[r]:
                fenced.append(_replica(other, remote_leo=_put(other.remote_leo, r, 0)))
            else:
                fenced.append(other)
        reps = tuple(fenced)
        quorum = Quorum(q.leader, q.epoch, isr, elr, alter, q.min_isr_step)
        committed = s.committed
        out = _state(s, replicas=reps, quorum=quorum)
        ql = q.leader
        if ql is not None and leads(out, ql):
            led, committed = _advance_hw(reps[ql], ql, isr, committed, self.gate(s), alter)
            out = _state(out, replicas=_put(reps, ql, led), committed=committed)
        return out

    def electable(self, s) -> list[int]:
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

    def acceptable(self, rep) -> bool:
        """May the controller make this replica leader: alive, and not in controlled
        shutdown unless KAFKA-13916 (Kafka's "not fenced nor in controlled shutdown")."""
        return rep.alive and (not rep.shutting or self._bug_13916)

    def elect(self, s, c) -> State:
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
        rep = _replica(reps[c], leader=c, epoch=epoch, remote_leo=(0,) * len(reps), inflight=None)
        rep, committed = _advance_hw(rep, c, isr, s.committed, self.gate(s))
        return _state(
            s, replicas=_put(reps, c, rep), quorum=Quorum(c, epoch, isr, elr, None, q.min_isr_step), committed=committed
        )

    def become_follower(self, s, r, l) -> State:
        rep = s.replicas[r]
        if self._on_fetch:  # the fetch path truncates, on the leader's answer
            rep = _replica(rep, leader=l, epoch=s.quorum.epoch, inflight=None)
            return _state(s, replicas=_put(s.replicas, r, rep))
        t = truncation_offset(self.config.truncation, rep.log, rep.hw, s.replicas[l].log)
        rep = _replica(rep, log=rep.log[:t], hw=min(rep.hw, t), leader=l, epoch=s.quorum.epoch, inflight=None)
        return _state(s, replicas=_put(s.replicas, r, rep))

    def ask(self, s, l, change, r) -> State:
        """ShrinkIsr and ExpandIsr with ``alter_partition``: the leader only sends the
        controller its request; nothing else changes until AlterPartition answers."""
        q = s.quorum
        return _state(s, quorum=Quorum(q.leader, q.epoch, q.isr, q.elr, (l, change, r), q.min_isr_step))

    def alter_partition(self, s) -> State:
        """AlterPartition, the controller's answer to the request in flight: refused (with
        ``broker_epochs``, an expansion of a replica that is down), or accepted: the ISR
        change, the ELR after it, then HW of the asking leader if it still leads."""
        q = s.quorum
        p, change, r = q.alter
        if change == EXPAND and self.config.broker_epochs and self.refuses_expansion(s, p, r):
            return _state(s, quorum=Quorum(q.leader, q.epoch, q.isr, q.elr, None, q.min_isr_step))
        if change == SHRINK:
            isr = tuple(x for x in q.isr if x != r)
        else:
            isr = tuple(sorted(set(q.isr).union((r,))))
        elr = self.elr_after(s, q.elr, q.isr, isr)
        out = _state(s, quorum=Quorum(q.leader, q.epoch, isr, elr, None, q.min_isr_step))
        if leads(out, p):
            rep, committed = _advance_hw(s.replicas[p], p, isr, s.committed, self.gate(s))
            if rep is not s.replicas[p]:
                out = _state(out, replicas=_put(s.replicas, p, rep), committed=committed)
        return out

    def refuses_expansion(self, s, p, r) -> bool:
        """With ``broker_epochs``, does the controller refuse ``p``'s request to add ``r``:
        ``r`` is down, or in controlled shutdown (unless KAFKA-13916), or, with KAFKA-15221,
        the request still carries the broker epoch of the incarnation it was decided on
        (``r`` does not follow ``p`` in the quorum's epoch yet)?"""
        rep = s.replicas[r]
        if not rep.alive or (rep.shutting and not self._bug_13916):
            return True
        return self._bug_15221 and not (rep.leader == p and rep.epoch == s.quorum.epoch)

    # -- the operator's actions ---------------------------------------------------

    def controlled_shutdown(self, s, r) -> list[tuple[Action, State]]:
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
        marked = _put(reps, r, _replica(reps[r], shutting=True))
        count = s.controlled_shutdowns + 1
        ql = q.leader
        action = Action(CONTROLLED_SHUTDOWN, r)
        if ql != r:
            if r not in isr:  # no partition change: only the mark
                return [(action, _state(s, replicas=marked, controlled_shutdowns=count))]
            alter = None if cfg.alter_partition else q.alter  # the ISR changed: a request is stale
            quorum = Quorum(ql, q.epoch, isr1, elr1, alter, q.min_isr_step)
            out = _state(s, replicas=marked, quorum=quorum, controlled_shutdowns=count)
            if ql is not None and leads(out, ql):
                led, committed = _advance_hw(marked[ql], ql, isr1, s.committed, self.gate(s), alter)
                if led is not marked[ql]:
                    out = _state(out, replicas=_put(marked, ql, led), committed=committed)
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
            rep = _replica(reps[n], leader=n, epoch=epoch, remote_leo=(0,) * len(reps), inflight=None)
            rep, committed = _advance_hw(rep, n, new_isr, s.committed, self.gate(s))
            quorum = Quorum(n, epoch, new_isr, new_elr, None, q.min_isr_step)
            nxt = _state(
                s, replicas=_put(marked, n, rep), quorum=quorum, committed=committed, controlled_shutdowns=count
            )
            succ.append((Action(CONTROLLED_SHUTDOWN, r, to=n), nxt))
        if succ:
            return succ
        # Nobody may lead: the controller writes no leader, in a new leader epoch; the ISR
        # keeps r when it would be empty, unless the eligible leader replicas allow that.
        new_isr = isr1 if isr1 or cfg.eligible_leader_replicas else isr
        quorum = Quorum(None, epoch, new_isr, elr1, None, q.min_isr_step)
        return [(action, _state(s, replicas=marked, quorum=quorum, controlled_shutdowns=count))]

    def shutdown_complete(self, s, r) -> tuple[Action, State]:
        """ShutdownComplete(r): ``r`` stops cleanly, its log flushed (nothing lost, not
        lossy); the quorum is not told and no crash is counted."""
        rep = _replica(s.replicas[r], alive=False, inflight=None, shutting=False)
        return Action(SHUTDOWN_COMPLETE, r), _state(s, replicas=_put(s.replicas, r, rep))

    def shrink(self, s, r, l) -> State:
        q = s.quorum
        isr = tuple(x for x in q.isr if x != r)
        elr = self.elr_after(s, q.elr, q.isr, isr) if self.config.eligible_leader_replicas else ()
        rep, committed = _advance_hw(s.replicas[l], l, isr, s.committed, self.gate(s))
        return _state(
            s,
            replicas=_put(s.replicas, l, rep),
            quorum=Quorum(q.leader, q.epoch, isr, elr, None, q.min_isr_step),
            committed=committed,
        )

    def expand(self, s, r, l) -> State:
        q = s.quorum
        isr = tuple(sorted(q.isr + (r,)))
        elr = self.elr_after(s, q.elr, q.isr, isr) if self.config.eligible_leader_replicas else ()
        # Without the HW gate HW(l) never moves here (adding a member only lowers the ISR
        # minimum); with it, reaching min ISR is what lets a frozen HW move.
        rep, committed = _advance_hw(s.replicas[l], l, isr, s.committed, self.gate(s))
        if rep is s.replicas[l]:
            return _state(s, quorum=Quorum(q.leader, q.epoch, isr, elr, None, q.min_isr_step))
        return _state(
            s,
            replicas=_put(s.replicas, l, rep),
            quorum=Quorum(q.leader, q.epoch, isr, elr, None, q.min_isr_step),
            committed=committed,
        )

    # -- the operator's actions (docs/model.md, "Operator actions: changing min.insync.replicas
    # at run time and a failed log directory") ------------------------------------------------

    def change_min_isr(self, s) -> State:
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
        return _state(s, quorum=Quorum(q.leader, q.epoch, q.isr, elr, alter, q.min_isr_step + 1))

    def apply_min_isr(self, s) -> State:
        """ApplyMinIsr (``min_isr_lag``): the leader's broker applies the next change the
        controller has made. Nothing else, no HW step."""
        return attrs.evolve(s, leader_min_isr_step=s.leader_min_isr_step + 1)

    def disk_failure(self, s, r) -> State:
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
            rep = _replica(
                rep,
                log=(),
                hw=0,
                inflight=None,
                remote_leo=(0,) * n,
                leader=None if mine else rep.leader,
                epoch=-1 if mine else rep.epoch,
            )
        else:
            rep = _replica(
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
                reps.append(_replica(other, remote_leo=_put(other.remote_leo, r, 0)))
            else:
                reps.append(other)
        quorum = Quorum(q.leader, q.epoch, isr, elr, alter, q.min_isr_step)
        out = attrs.evolve(s, replicas=tuple(reps), quorum=quorum, disk_failures=s.disk_failures + 1)
        ql = q.leader
        if ql is not None and leads(out, ql):
            led, committed = _advance_hw(out.replicas[ql], ql, isr, s.committed, self.gate(s), alter)
            out = _state(out, replicas=_put(out.replicas, ql, led), committed=committed)
        return out
