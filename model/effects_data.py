"""The effects of the data path (docs/model.md, "Actions"): Produce, its acknowledgement,
FetchRequest and FetchResponse, the diverging answers of ``truncate_on_fetch`` included.
"""

from __future__ import annotations

from .actions import PRODUCE, Action
from .effects import EffectsBase, advance_hw, new_replica, new_state, put_at
from .fetch_path import diverging_epoch, truncation_on_answer
from .state import Fetch, State, leader_of, leads


class DataEffects(EffectsBase):
    """Produce, the acknowledgements of ``acks = "all"``, and the fetch round trip."""

    __slots__ = ()

    def produce(self, s: State, l: int) -> State:
        rep = s.replicas[l]
        rep = new_replica(rep, log=rep.log + ((rep.epoch, s.produced),))
        rep, committed = advance_hw(rep, l, s.quorum.isr, s.committed, self.gate(s), s.quorum.alter)
        return new_state(s, replicas=put_at(s.replicas, l, rep), produced=s.produced + 1, committed=committed)

    def produce_acks_one(self, s: State) -> list[tuple[Action, State]]:
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
            rep = new_replica(rep, log=rep.log + (record,))
            committed = s.committed
            if leads(s, l):
                rep, committed = advance_hw(rep, l, s.quorum.isr, committed, self.gate(s), s.quorum.alter)
            out.append(
                (
                    Action(PRODUCE, l),
                    new_state(
                        s,
                        replicas=put_at(s.replicas, l, rep),
                        produced=s.produced + 1,
                        committed=committed,
                        acked=acked,
                    ),
                )
            )
        return out

    def acknowledge(self, before: State, after: State) -> State:
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
        return new_state(after, acked=tuple(sorted(set(after.acked).union(new))))

    def fetch_request(self, s: State, f: int, l: int) -> State:
        if self._on_fetch:
            div = diverging_epoch(s, f, l)
            if div is not None:
                return self.diverging_answer(s, f, l, div)
        reps = s.replicas
        fol, led = reps[f], reps[l]
        o = min(len(fol.log), len(led.log))
        led = new_replica(led, remote_leo=put_at(led.remote_leo, f, o))
        led, committed = advance_hw(led, l, s.quorum.isr, s.committed, self.gate(s), s.quorum.alter)
        fol = new_replica(fol, inflight=Fetch(l, led.epoch, o, led.log[o:], led.hw))
        reps = put_at(put_at(reps, l, led), f, fol)
        return new_state(s, replicas=reps, committed=committed)

    def diverging_answer(self, s: State, f: int, l: int, div: tuple[int, int]) -> State:
        """FetchRequest whose last epoch diverges from the leader's cache
        (``truncate_on_fetch``): the leader answers with the diverging epoch ``div`` =
        ``(E', O')``, no records and its HW, and records nothing of the follower; with
        KAFKA-13141 it first takes the fetch offset as the follower's log end, then HW(l)."""
        reps = s.replicas
        fol, led = reps[f], reps[l]
        committed = s.committed
        if self._bug_13141:
            led = new_replica(led, remote_leo=put_at(led.remote_leo, f, len(fol.log)))
            led, committed = advance_hw(led, l, s.quorum.isr, committed, self.gate(s), s.quorum.alter)
            reps = put_at(reps, l, led)
        e2, o2 = div
        fol = new_replica(fol, inflight=Fetch(l, led.epoch, o2, (), led.hw, e2))
        return new_state(s, replicas=put_at(reps, f, fol), committed=committed)

    def fetch_response(self, s: State, f: int) -> State:
        fol = s.replicas[f]
        resp = fol.inflight
        assert resp is not None  # FetchResponse is enabled only with a response in flight
        if resp.diverging is not None:
            return self.diverging_response(s, f)
        if fol.alive and fol.leader == resp.leader and fol.epoch == resp.epoch:
            log = fol.log[: resp.start] + resp.records
            fol = new_replica(fol, log=log, hw=min(resp.leader_hw, len(log)), inflight=None)
        else:  # stale: dropped
            fol = new_replica(fol, inflight=None)
        return new_state(s, replicas=put_at(s.replicas, f, fol))

    def diverging_response(self, s: State, f: int) -> State:
        """FetchResponse on a diverging answer ``(E', O')``: unless stale, the follower
        truncates to ``truncation_on_answer`` (its HW no higher) and the response is gone.
        With KAFKA-14704 this takes two steps: first the follower sets its HW to the
        answer's (no higher than its log end) and marks the response applied; the
        truncation comes with the next FetchResponse."""
        fol = s.replicas[f]
        resp = fol.inflight
        assert resp is not None and resp.diverging is not None
        if not (fol.alive and fol.leader == resp.leader and fol.epoch == resp.epoch):  # stale: dropped
            fol = new_replica(fol, inflight=None)
        elif self._bug_14704 and not resp.applied:
            applied = Fetch(resp.leader, resp.epoch, resp.start, (), resp.leader_hw, resp.diverging, True)
            fol = new_replica(fol, hw=min(resp.leader_hw, len(fol.log)), inflight=applied)
        else:
            t = truncation_on_answer(fol.log, resp.diverging, resp.start)
            fol = new_replica(fol, log=fol.log[:t], hw=min(fol.hw, t), inflight=None)
        return new_state(s, replicas=put_at(s.replicas, f, fol))
