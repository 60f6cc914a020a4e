"""The Kafka replication model: one partition, its replicas, the controller and a producer.

The transition system of docs/model.md, action for action. ``KafkaModel`` follows
``checker.protocol.Model``; the engines know nothing else about it.
"""

from __future__ import annotations

import attrs

from .actions import (
    ACTION_NAMES, BECOME_FOLLOWER, CRASH, ELECT_LEADER, EXPAND_ISR, FETCH_REQUEST, FETCH_RESPONSE, PRODUCE,
    RESTART, SHRINK_ISR, Action,
)
from .config import ACKS_ALL, ACKS_ONE, HIGH_WATERMARK, LEADER_EPOCH_21, Config
from .state import Fetch, Quorum, Replica, State, elr_after, encode, leader_of, leads, leso
from .truncation import truncation_offset

__all__ = ["ACTION_NAMES", "Action", "KafkaModel"]  # the action names live in model.actions


def _put(replicas, i, rep):
    return replicas[:i] + (rep,) + replicas[i + 1:]


# The search loop builds millions of states: these construct them directly, which is
# about three times faster than ``attrs.evolve`` (no field introspection per call).
_KEEP = object()


def _replica(r, alive=_KEEP, log=_KEEP, hw=_KEEP, epoch=_KEEP, leader=_KEEP, remote_leo=_KEEP,
             inflight=_KEEP, lossy=_KEEP):
    return Replica(
        r.alive if alive is _KEEP else alive,
        r.log if log is _KEEP else log,
        r.hw if hw is _KEEP else hw,
        r.epoch if epoch is _KEEP else epoch,
        r.leader if leader is _KEEP else leader,
        r.remote_leo if remote_leo is _KEEP else remote_leo,
        r.inflight if inflight is _KEEP else inflight,
        r.lossy if lossy is _KEEP else lossy,
    )


def _state(s, replicas=_KEEP, quorum=_KEEP, produced=_KEEP, crashes=_KEEP, committed=_KEEP,
           acked=_KEEP):
    return State(
        s.replicas if replicas is _KEEP else replicas,
        s.quorum if quorum is _KEEP else quorum,
        s.produced if produced is _KEEP else produced,
        s.crashes if crashes is _KEEP else crashes,
        s.committed if committed is _KEEP else committed,
        s.acked if acked is _KEEP else acked,
    )


def _advance_hw(rep, l, isr, committed, gate=0):
    """HW(l) of docs/model.md: the leader's HW rises to the smallest log end in the ISR.

    ``isr`` is the ISR in force after the step. With ``hw_requires_min_isr`` the caller
    passes ``gate = min_insync_replicas``: the HW then does not move while the ISR is
    smaller (otherwise ``gate`` is 0 and never stops it).

    Returns the leader's replica and the new ``committed`` set.
    """
    if len(isr) < gate:
        return rep, committed
    m = len(rep.log)
    remote = rep.remote_leo
    for f in isr:
        if f != l and remote[f] < m:
            m = remote[f]
    if m <= rep.hw:
        return rep, committed
    log = rep.log
    added = {(o,) + log[o] for o in range(rep.hw, m)}
    return _replica(rep, hw=m), tuple(sorted(added.union(committed)))


@attrs.frozen
class KafkaModel:
    """The model for one ``Config``.

    Args:
        config: the model constants.
    """

    config: Config = Config()
    # min_insync_replicas under hw_requires_min_isr, else 0: see _advance_hw.
    _gate: int = attrs.field(init=False, repr=False, eq=False)
    # Does ExpandIsr also ask for the leader's epoch start offset (KAFKA-7128)?
    _v21: bool = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self):
        cfg = self.config
        object.__setattr__(self, "_gate", cfg.min_insync_replicas if cfg.hw_requires_min_isr else 0)
        object.__setattr__(self, "_v21", cfg.truncation == LEADER_EPOCH_21)

    # -- protocol -----------------------------------------------------------------

    def init_states(self):
        """The initial state with the first replica leading; with ``initial_leader =
        "any"``, one per replica, in replica order, each with that replica leading."""
        n = self.config.n
        zeros = (0,) * n
        leaders = range(n) if self.config.initial_leader == "any" else (0,)
        out = []
        for l in leaders:
            rep = Replica(alive=True, log=(), hw=0, epoch=0, leader=l, remote_leo=zeros)
            out.append(State(replicas=(rep,) * n, quorum=Quorum(l, 0, tuple(range(n)))))
        return tuple(out)

    def encode(self, state) -> bytes:
        return encode(state)

    def batch_kernel(self):
        """The batch form of this model (``model.batch.KafkaBatchKernel``): the fast path
        of the local and Spark engines."""
        from .batch import KafkaBatchKernel

        return KafkaBatchKernel(self.config)

    def symmetries(self):
        """The replica permutations symmetry reduction may apply: every permutation with
        ``initial_leader = any``, else those that fix the first replica."""
        from .symmetry import symmetries

        return symmetries(self.config)

    def permute(self, state, perm):
        """``state`` with replica ``r`` renamed ``perm[r]`` (``model.symmetry.permute``)."""
        from .symmetry import permute

        return permute(state, perm)

    def properties(self):
        """The properties checked by default: see ``invariants.default_properties``."""
        from kmc.invariants import default_properties

        return default_properties(self.config)

    def actions(self, state):
        return [a for a, _ in self.successors(state)]

    def next_state(self, state, action):
        for a, nxt in self.successors(state):
            if a == action:
                return nxt
        raise ValueError(f"{self.format_action(action)} is not enabled")

    def successors(self, state):
        """Every enabled action with its successor, in docs/model.md's order (actions 1–9,
        then replica order, then cut point)."""
        cfg = self.config
        reps = state.replicas
        q = state.quorum
        n = len(reps)
        lead = leader_of(state)
        out = []
        # 1. Produce
        if cfg.acks == ACKS_ONE:
            out.extend(self._produce_acks_one(state))
        elif lead is not None and state.produced < cfg.max_messages and len(q.isr) >= cfg.min_insync_replicas:
            out.append((Action(PRODUCE, lead), self._produce(state, lead)))
        # 2. FetchRequest
        if lead is not None:
            le = reps[lead].epoch
            for f in range(n):
                r = reps[f]
                if f != lead and r.alive and r.leader == lead and r.epoch == le and r.inflight is None:
                    out.append((Action(FETCH_REQUEST, f), self._fetch_request(state, f, lead)))
        # 3. FetchResponse
        for f in range(n):
            if reps[f].inflight is not None:
                out.append((Action(FETCH_RESPONSE, f), self._fetch_response(state, f)))
        # 4. Crash
        if state.crashes < cfg.max_crashes:
            for r in range(n):
                if reps[r].alive:
                    if cfg.unflushed_loss:
                        for cut in range(len(reps[r].log) + 1):
                            out.append((Action(CRASH, r, cut), self._crash(state, r, cut)))
                    else:
                        out.append((Action(CRASH, r), self._crash(state, r, None)))
        # 5. Restart
        for r in range(n):
            if not reps[r].alive:
                out.append((Action(RESTART, r), self._restart(state, r)))
        # 6. ElectLeader
        if q.epoch < cfg.max_leader_epoch:
            for cand in self._electable(state):
                out.append((Action(ELECT_LEADER, cand), self._elect(state, cand)))
        # 7. BecomeFollower
        ql = q.leader
        if ql is not None and (cfg.truncation == HIGH_WATERMARK or lead == ql):
            for r in range(n):
                if r != ql and reps[r].alive and reps[r].epoch < q.epoch:
                    out.append((Action(BECOME_FOLLOWER, r), self._become_follower(state, r, ql)))
        # 8. ShrinkIsr, 9. ExpandIsr
        if lead is not None:
            l = reps[lead]
            for r in q.isr:
                if r != lead and (not reps[r].alive or l.remote_leo[r] < len(l.log)):
                    out.append((Action(SHRINK_ISR, r), self._shrink(state, r, lead)))
            # KAFKA-7128 (2.1): a follower re-joins only once it has fetched up to the
            # leader's epoch start offset; before, only up to the (possibly lagging) HW.
            floor = leso(state, lead) if self._v21 else 0
            for r in range(n):
                f = reps[r]
                if (r not in q.isr and f.alive and f.leader == lead and f.epoch == q.epoch
                        and l.remote_leo[r] >= l.hw and l.remote_leo[r] >= floor):
                    out.append((Action(EXPAND_ISR, r), self._expand(state, r, lead)))
        if cfg.acks == ACKS_ALL:
            out = [(a, self._acknowledge(state, t)) for a, t in out]
        return out

    # -- actions ------------------------------------------------------------------

    def _produce(self, s, l):
        rep = s.replicas[l]
        rep = _replica(rep, log=rep.log + ((rep.epoch, s.produced),))
        rep, committed = _advance_hw(rep, l, s.quorum.isr, s.committed, self._gate)
        return _state(s, replicas=_put(s.replicas, l, rep), produced=s.produced + 1,
                            committed=committed)

    def _produce_acks_one(self, s):
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
                rep, committed = _advance_hw(rep, l, s.quorum.isr, committed, self._gate)
            out.append((Action(PRODUCE, l), _state(s, replicas=_put(s.replicas, l, rep),
                                                   produced=s.produced + 1, committed=committed,
                                                   acked=acked)))
        return out

    def _acknowledge(self, before, after):
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
        if l is None or len(after.quorum.isr) < self.config.min_insync_replicas:
            return after
        old, rep = before.replicas[l].hw, after.replicas[l]
        if rep.hw <= old:
            return after
        new = [(o,) + rep.log[o] for o in range(old, rep.hw) if rep.log[o][0] == rep.epoch]
        if not new:
            return after
        return _state(after, acked=tuple(sorted(set(after.acked).union(new))))

    def _fetch_request(self, s, f, l):
        reps = s.replicas
        fol, led = reps[f], reps[l]
        o = min(len(fol.log), len(led.log))
        led = _replica(led, remote_leo=_put(led.remote_leo, f, o))
        led, committed = _advance_hw(led, l, s.quorum.isr, s.committed, self._gate)
        fol = _replica(fol, inflight=Fetch(l, led.epoch, o, led.log[o:], led.hw))
        reps = _put(_put(reps, l, led), f, fol)
        return _state(s, replicas=reps, committed=committed)

    def _fetch_response(self, s, f):
        fol = s.replicas[f]
        resp = fol.inflight
        if fol.alive and fol.leader == resp.leader and fol.epoch == resp.epoch:
            log = fol.log[:resp.start] + resp.records
            fol = _replica(fol, log=log, hw=min(resp.leader_hw, len(log)), inflight=None)
        else:  # stale: dropped
            fol = _replica(fol, inflight=None)
        return _state(s, replicas=_put(s.replicas, f, fol))

    def _crash(self, s, r, cut):
        rep = s.replicas[r]
        if cut is None:
            rep = _replica(rep, alive=False, inflight=None)
        elif self.config.eligible_leader_replicas:
            rep = _replica(rep, alive=False, inflight=None, log=rep.log[:cut], hw=min(rep.hw, cut),
                           lossy=cut < len(rep.log))
        else:
            rep = _replica(rep, alive=False, inflight=None, log=rep.log[:cut], hw=min(rep.hw, cut))
        return _state(s, replicas=_put(s.replicas, r, rep), crashes=s.crashes + 1)

    def _restart(self, s, r):
        n = len(s.replicas)
        rep = _replica(s.replicas[r], alive=True, epoch=-1, leader=None, remote_leo=(0,) * n)
        if not rep.lossy:  # always, without eligible_leader_replicas
            return _state(s, replicas=_put(s.replicas, r, rep))
        # KIP-966's unclean-shutdown rule: the controller removes r from the ISR and the
        # ELR, and every leader forgets r's fetch position from before the crash (the
        # fence: KIP-903 broker epochs); then the quorum leader's HW step.
        q = s.quorum
        isr = tuple(x for x in q.isr if x != r)
        elr = tuple(x for x in elr_after(self.config, q.elr, q.isr, isr) if x != r)
        reps = []
        for i, other in enumerate(s.replicas):
            if i == r:
                reps.append(_replica(rep, lossy=False))
            elif other.remote_leo[r]:
                reps.append(_replica(other, remote_leo=_put(other.remote_leo, r, 0)))
            else:
                reps.append(other)
        reps = tuple(reps)
        quorum = Quorum(q.leader, q.epoch, isr, elr)
        committed = s.committed
        out = _state(s, replicas=reps, quorum=quorum)
        ql = q.leader
        if ql is not None and leads(out, ql):
            led, committed = _advance_hw(reps[ql], ql, isr, committed, self._gate)
            out = _state(out, replicas=_put(reps, ql, led), committed=committed)
        return out

    def _electable(self, s):
        """The replicas the controller may elect now, in replica order."""
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
        last_known = (cfg.last_known_leader and not q.isr and not q.elr and ql is not None
                      and reps[ql].alive)
        unclean = cfg.unclean_leader_election and not live_isr and not live_elr and not last_known
        out = []
        for c in range(len(reps)):
            if not reps[c].alive or (not replaceable and c == ql):
                continue
            if c in q.isr or unclean or c in live_elr or (last_known and c == ql):
                out.append(c)
        return out

    def electable(self, state):
        """The replicas ElectLeader may elect in ``state``, in replica order, whatever the
        controller's epoch: the election guard without ``quorum.epoch < max_leader_epoch``
        (what ``Available`` asks)."""
        return self._electable(state)

    def _elect(self, s, c):
        reps = s.replicas
        q = s.quorum
        if c in q.isr:  # clean
            isr = tuple(r for r in q.isr if reps[r].alive)
            elr = elr_after(self.config, q.elr, q.isr, isr) if self.config.eligible_leader_replicas else ()
        elif c in q.elr:  # from the ELR: the dead ISR members join it
            isr = (c,)
            elr = tuple(sorted(set(q.elr).union(q.isr).difference(isr)))
        else:  # unclean, or the last known leader: the ISR is {c}, the ELR cleared
            isr = (c,)
            elr = ()
        epoch = q.epoch + 1
        rep = _replica(reps[c], leader=c, epoch=epoch, remote_leo=(0,) * len(reps), inflight=None)
        rep, committed = _advance_hw(rep, c, isr, s.committed, self._gate)
        return _state(s, replicas=_put(reps, c, rep), quorum=Quorum(c, epoch, isr, elr),
                      committed=committed)

    def _become_follower(self, s, r, l):
        rep = s.replicas[r]
        t = truncation_offset(self.config.truncation, rep.log, rep.hw, s.replicas[l].log)
        rep = _replica(rep, log=rep.log[:t], hw=min(rep.hw, t), leader=l,
                           epoch=s.quorum.epoch, inflight=None)
        return _state(s, replicas=_put(s.replicas, r, rep))

    def _shrink(self, s, r, l):
        q = s.quorum
        isr = tuple(x for x in q.isr if x != r)
        elr = elr_after(self.config, q.elr, q.isr, isr) if self.config.eligible_leader_replicas else ()
        rep, committed = _advance_hw(s.replicas[l], l, isr, s.committed, self._gate)
        return _state(s, replicas=_put(s.replicas, l, rep),
                      quorum=Quorum(q.leader, q.epoch, isr, elr), committed=committed)

    def _expand(self, s, r, l):
        q = s.quorum
        isr = tuple(sorted(q.isr + (r,)))
        elr = elr_after(self.config, q.elr, q.isr, isr) if self.config.eligible_leader_replicas else ()
        # Without the HW gate HW(l) never moves here (adding a member only lowers the ISR
        # minimum); with it, reaching min ISR is what lets a frozen HW move.
        rep, committed = _advance_hw(s.replicas[l], l, isr, s.committed, self._gate)
        if rep is s.replicas[l]:
            return _state(s, quorum=Quorum(q.leader, q.epoch, isr, elr))
        return _state(s, replicas=_put(s.replicas, l, rep), quorum=Quorum(q.leader, q.epoch, isr, elr),
                      committed=committed)

    # -- naming -------------------------------------------------------------------

    def name(self, r) -> str:
        """The spec's name of replica number ``r`` (``"none"`` for None)."""
        return "none" if r is None else self.config.replicas[r]

    def format_action(self, action) -> str:
        """``Crash(B, keeps 1)``-style text for an action."""
        who = self.name(action.replica)
        if action.cut is not None:
            return f"{action.name}({who}, keeps {action.cut})"
        return f"{action.name}({who})"

    def describe_step(self, before, action, after) -> str:
        """What ``action`` did between two states, in one sentence (``model.describe``)."""
        from .describe import acks_note, describe_step

        return describe_step(self, before, action, after) + acks_note(self, before, action, after)

    def format_record(self, record) -> str:
        epoch, rid = record
        return f"record {rid} (epoch {epoch})"
